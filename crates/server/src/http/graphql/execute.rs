//! Execution of a validated query over the index: root list fields read one page of
//! documents (at most 100, one at a time, each parsed, answered and dropped before the
//! next), `summary` and introspection are answered from the schema. Values are resolved and
//! coerced as catalogd resolves them (catalogd-graphql.md §2.5), except that a list of plain
//! values is answered as the list (catalogd answers `null` with an `expected iterable`
//! error). The response is bounded in size and the execution in time.
use super::response::{GraphqlError, Out, PathStep};
use super::schema::{Scalar, Schema, TypeId, TypeKind, TypeRef, field_name};
use super::syntax::{
    Directive, Document, Field, Fragment, Literal, Operation, OperationKind, Selection,
    SelectionSet, Value,
};
use catalog::json::{canonical, escape_html};
use rusqlite::Connection;
use serde_json::Value as Json;
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use store::QueryError;
use store::content::{MetasFilter, documents};

/// Objects a root list field answers at most, and when not told otherwise (catalogd's clamp).
const PAGE: i64 = 100;

/// Bytes a response may hold; a query asking for more is refused, to be asked again in pages.
pub(super) const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// What ends an execution with no data.
#[derive(Debug)]
enum Abort {
    Deadline,
    TooLarge,
}

impl Abort {
    fn message(&self) -> String {
        match self {
            Abort::Deadline => "context deadline exceeded".to_owned(),
            Abort::TooLarge => format!(
                "response exceeds maximum size of {MAX_RESPONSE_BYTES} bytes; ask for fewer objects or fields (limit, offset)"
            ),
        }
    }
}

/// The operation to run (the document's only one), or the errors that prevent running.
pub(super) fn operation(doc: &Document) -> Result<&Operation, GraphqlError> {
    match doc.operations.as_slice() {
        [] => Err(GraphqlError::general("Must provide an operation.")),
        [op] => match op.kind {
            OperationKind::Query => Ok(op),
            OperationKind::Mutation => Err(GraphqlError::at(
                "Schema is not configured for mutations",
                op.pos,
            )),
            OperationKind::Subscription => Err(GraphqlError::at(
                "Schema is not configured for subscriptions",
                op.pos,
            )),
        },
        _ => Err(GraphqlError::general(
            "Must provide operation name if query contains multiple operations.",
        )),
    }
}

/// Whether running `op` reads documents (so needs one of the index's connections).
pub(super) fn reads_documents(schema: &Schema, doc: &Document, op: &Operation) -> bool {
    let fragments: HashMap<&str, &Fragment> =
        doc.fragments.iter().map(|f| (f.name.as_str(), f)).collect();
    let query = &schema.types[schema.query];
    let mut sets = vec![&op.selection];
    let mut seen = HashSet::new();
    while let Some(set) = sets.pop() {
        for selection in &set.items {
            match selection {
                Selection::Field(f) => {
                    if query.field(&f.name).is_some_and(|d| d.schema.is_some()) {
                        return true;
                    }
                }
                Selection::Inline(inline) => sets.push(&inline.selection),
                Selection::Spread(spread) => {
                    if let Some(fragment) = fragments.get(spread.name.as_str())
                        && seen.insert(spread.name.as_str())
                    {
                        sets.push(&fragment.selection);
                    }
                }
            }
        }
    }
    false
}

/// Runs `op` (validated) and returns `data` and the errors. `conn` is needed when
/// [`reads_documents`] says so.
pub(super) fn execute(
    schema: &Schema,
    doc: &Document,
    op: &Operation,
    conn: Option<&Connection>,
    deadline: Instant,
) -> (Option<Out>, Vec<GraphqlError>) {
    let mut variables = HashMap::new();
    for var in &op.variables {
        if var.default.is_none() && matches!(var.ty, super::syntax::TypeName::NonNull(_)) {
            // The request's `variables` are not read (as catalogd does not).
            let error = GraphqlError::at(
                format!(
                    "Variable \"${}\" of required type \"{}\" was not provided.",
                    var.name, var.ty
                ),
                var.pos,
            );
            return (None, vec![error]);
        }
        variables.insert(var.name.as_str(), var.default.as_ref());
    }
    let mut run = Executor {
        schema,
        fragments: doc.fragments.iter().map(|f| (f.name.as_str(), f)).collect(),
        variables,
        conn,
        deadline,
        budget: MAX_RESPONSE_BYTES,
        errors: Vec::new(),
    };
    let mut path = Vec::new();
    match run.object(&Obj::Query, schema.query, &[&op.selection], &mut path) {
        Ok(data) => (Some(data), run.errors),
        Err(abort) => (None, vec![GraphqlError::general(abort.message())]),
    }
}

/// An object being answered.
#[derive(Clone)]
enum Obj<'v> {
    Query,
    /// A document or an element of one of its arrays (any JSON value: a non-object has no
    /// fields, all of them answer `null`).
    Json(&'v Json),
    Summary,
    SchemaSummary(usize),
    Schema,
    Type(TypeRef),
    /// A field of a type, by index.
    Field(TypeId, usize),
    Arg(ArgOf, usize),
    EnumValue(TypeId, usize),
    Directive(usize),
}

/// Whose arguments.
#[derive(Clone, Copy)]
enum ArgOf {
    Field(TypeId, usize),
    Directive(usize),
}

struct Executor<'a> {
    schema: &'a Schema,
    fragments: HashMap<&'a str, &'a Fragment>,
    /// The operation's variables: their defaults (the request's values are not read).
    variables: HashMap<&'a str, Option<&'a Value>>,
    conn: Option<&'a Connection>,
    deadline: Instant,
    /// Response bytes left.
    budget: usize,
    errors: Vec<GraphqlError>,
}

/// The fields of a selection, grouped by response key, in order.
type Grouped<'a> = Vec<(&'a str, Vec<&'a Field>)>;

impl<'a> Executor<'a> {
    fn charge(&mut self, bytes: usize) -> Result<(), Abort> {
        self.budget = self.budget.checked_sub(bytes).ok_or(Abort::TooLarge)?;
        Ok(())
    }

    fn leaf(&mut self, out: Out) -> Result<Out, Abort> {
        let bytes = match &out {
            Out::Str(s) => s.len() + 2,
            _ => 8,
        };
        self.charge(bytes)?;
        Ok(out)
    }

    /// The literal an argument has, a variable read through its default.
    fn argument(
        &self,
        field_args: &'a [super::syntax::Argument],
        name: &str,
    ) -> Option<&'a Literal> {
        let arg = field_args.iter().find(|a| a.name == name)?;
        match &arg.value.literal {
            Literal::Variable(var) => self
                .variables
                .get(var.as_str())
                .copied()
                .flatten()
                .map(|v| &v.literal),
            literal => Some(literal),
        }
    }

    fn included(&self, directives: &'a [Directive]) -> bool {
        directives.iter().all(|d| {
            let condition = matches!(
                self.argument(&d.arguments, "if"),
                Some(Literal::Boolean(true))
            );
            match d.name.as_str() {
                "skip" => !condition,
                "include" => condition,
                _ => true,
            }
        })
    }

    fn collect(
        &self,
        ty: TypeId,
        set: &'a SelectionSet,
        grouped: &mut Grouped<'a>,
        visited: &mut HashSet<&'a str>,
    ) {
        for selection in &set.items {
            match selection {
                Selection::Field(f) => {
                    if !self.included(&f.directives) {
                        continue;
                    }
                    match grouped.iter_mut().find(|(key, _)| *key == f.key()) {
                        Some((_, fields)) => fields.push(f),
                        None => grouped.push((f.key(), vec![f])),
                    }
                }
                Selection::Spread(spread) => {
                    if !self.included(&spread.directives) || !visited.insert(&spread.name) {
                        continue;
                    }
                    if let Some(fragment) = self.fragments.get(spread.name.as_str())
                        && self.schema.type_named(&fragment.condition.0) == Some(ty)
                    {
                        self.collect(ty, &fragment.selection, grouped, visited);
                    }
                }
                Selection::Inline(inline) => {
                    let applies = inline
                        .condition
                        .as_ref()
                        .is_none_or(|(name, _)| self.schema.type_named(name) == Some(ty));
                    if applies && self.included(&inline.directives) {
                        self.collect(ty, &inline.selection, grouped, visited);
                    }
                }
            }
        }
    }

    fn object(
        &mut self,
        obj: &Obj<'_>,
        ty: TypeId,
        sets: &[&'a SelectionSet],
        path: &mut Vec<PathStep>,
    ) -> Result<Out, Abort> {
        if Instant::now() >= self.deadline {
            return Err(Abort::Deadline);
        }
        let mut grouped = Vec::new();
        let mut visited = HashSet::new();
        for set in sets {
            self.collect(ty, set, &mut grouped, &mut visited);
        }
        let mut members = Vec::with_capacity(grouped.len());
        for (key, fields) in grouped {
            self.charge(key.len() + 4)?;
            path.push(PathStep::Key(key.to_owned()));
            let value = self.field(obj, ty, &fields, path);
            path.pop();
            members.push((key.to_owned(), value?));
        }
        Ok(Out::Object(members))
    }

    fn field(
        &mut self,
        obj: &Obj<'_>,
        ty: TypeId,
        fields: &[&'a Field],
        path: &mut Vec<PathStep>,
    ) -> Result<Out, Abort> {
        let field = fields[0];
        let subsets: Vec<&'a SelectionSet> =
            fields.iter().filter_map(|f| f.selection.as_ref()).collect();
        let schema = self.schema;
        if field.name == "__typename" {
            return self.leaf(Out::Str(schema.types[ty].name.clone()));
        }
        let type_id = |name: &str| schema.type_named(name).unwrap_or(schema.string);
        match obj {
            Obj::Query => match field.name.as_str() {
                "__schema" => self.object(&Obj::Schema, type_id("__Schema"), &subsets, path),
                "__type" => {
                    let named = match self.argument(&field.arguments, "name") {
                        Some(Literal::String(name)) => schema.type_named(name),
                        _ => None,
                    };
                    match named {
                        Some(id) => self.object(
                            &Obj::Type(TypeRef::Named(id)),
                            type_id("__Type"),
                            &subsets,
                            path,
                        ),
                        None => self.leaf(Out::Null),
                    }
                }
                "summary" => self.object(&Obj::Summary, type_id("CatalogSummary"), &subsets, path),
                name => match schema.types[ty].field(name) {
                    Some(def) => match def.schema {
                        Some(index) => self.page(field, index, def.ty.named(), &subsets, path),
                        None => self.leaf(Out::Null),
                    },
                    None => self.leaf(Out::Null),
                },
            },
            Obj::Json(value) => {
                let Some(def) = schema.types[ty].field(&field.name) else {
                    return self.leaf(Out::Null);
                };
                let found = lookup(value, &def.name, def.exact_key);
                self.json(found, &def.ty, ty, field, &subsets, path)
            }
            Obj::Summary => match field.name.as_str() {
                "totalSchemas" => self.leaf(Out::Int(schema.schemas.len() as i64)),
                _ => {
                    let items = (0..schema.schemas.len()).map(Obj::SchemaSummary).collect();
                    self.list(items, type_id("SchemaSummary"), &subsets, path)
                }
            },
            Obj::SchemaSummary(i) => {
                let info = &schema.schemas[*i];
                self.leaf(match field.name.as_str() {
                    "name" => Out::Str(info.schema.clone()),
                    "totalObjects" => Out::Int(info.objects as i64),
                    "totalFields" => Out::Int(info.fields as i64),
                    _ => Out::Null,
                })
            }
            _ => self.introspect(obj, &field.name, &subsets, path),
        }
    }

    fn list(
        &mut self,
        items: Vec<Obj<'_>>,
        ty: TypeId,
        subsets: &[&'a SelectionSet],
        path: &mut Vec<PathStep>,
    ) -> Result<Out, Abort> {
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            path.push(PathStep::Index(i));
            let value = self.object(item, ty, subsets, path);
            path.pop();
            out.push(value?);
        }
        Ok(Out::List(out))
    }

    /// One page of a schema's documents.
    fn page(
        &mut self,
        field: &'a Field,
        index: usize,
        ty: TypeId,
        subsets: &[&'a SelectionSet],
        path: &mut Vec<PathStep>,
    ) -> Result<Out, Abort> {
        let int = |literal: Option<&Literal>| match literal {
            Some(Literal::Int(text)) => text.parse::<i64>().ok(),
            _ => None,
        };
        let limit = match int(self.argument(&field.arguments, "limit")) {
            Some(limit) if (1..=PAGE).contains(&limit) => limit,
            _ => PAGE,
        };
        let offset = int(self.argument(&field.arguments, "offset"))
            .unwrap_or(0)
            .max(0);
        let schema_name = &self.schema.schemas[index].schema;
        let filter = MetasFilter {
            schema: Some(schema_name.clone()),
            ..MetasFilter::default()
        };
        let Some(conn) = self.conn else {
            return self.load_error(field, schema_name, "no connection to the index", path);
        };
        let mut items = Vec::new();
        let mut stopped = None;
        let read = documents(
            conn,
            &filter,
            offset as u64,
            limit as u64,
            &mut |_, text| {
                let doc: Json = serde_json::from_slice(text)
                    .map_err(|e| QueryError::Storage(format!("a stored document: {e}")))?;
                path.push(PathStep::Index(items.len()));
                let value = self.object(&Obj::Json(&doc), ty, subsets, path);
                path.pop();
                match value {
                    Ok(value) => {
                        items.push(value);
                        Ok(true)
                    }
                    Err(abort) => {
                        stopped = Some(abort);
                        Ok(false)
                    }
                }
            },
        );
        if let Some(abort) = stopped {
            return Err(abort);
        }
        match read {
            Ok(()) => Ok(Out::List(items)),
            Err(e) => {
                let message = match e {
                    QueryError::NotFound(m) | QueryError::Storage(m) => m,
                };
                self.load_error(field, schema_name, &message, path)
            }
        }
    }

    fn load_error(
        &mut self,
        field: &Field,
        schema_name: &str,
        message: &str,
        path: &[PathStep],
    ) -> Result<Out, Abort> {
        tracing::error!("GraphQL: reading the documents of schema {schema_name:?}: {message}");
        self.errors.push(GraphqlError {
            message: format!("error loading objects for schema {schema_name}: {message}"),
            locations: vec![field.pos],
            path: Some(path.to_vec()),
        });
        self.leaf(Out::Null)
    }

    /// A document's value for a field of type `ty` (of object type `parent`).
    fn json(
        &mut self,
        value: Option<&Json>,
        ty: &TypeRef,
        parent: TypeId,
        field: &'a Field,
        subsets: &[&'a SelectionSet],
        path: &mut Vec<PathStep>,
    ) -> Result<Out, Abort> {
        let value = value.unwrap_or(&Json::Null);
        match ty {
            TypeRef::Named(id) => {
                let out = self
                    .schema
                    .scalar(*id)
                    .map_or(Out::Null, |s| coerce(value, s));
                self.leaf(out)
            }
            TypeRef::List(item) => match value {
                Json::Null => self.leaf(Out::Null),
                Json::Array(items) => {
                    let item_type = item.named();
                    let mut out = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        path.push(PathStep::Index(i));
                        let element = match self.schema.scalar(item_type) {
                            Some(scalar) => self.leaf(coerce(item, scalar)),
                            None if item.is_null() => self.leaf(Out::Null),
                            None => self.object(&Obj::Json(item), item_type, subsets, path),
                        };
                        path.pop();
                        out.push(element?);
                    }
                    Ok(Out::List(out))
                }
                _ => {
                    self.errors.push(GraphqlError {
                        message: format!(
                            "User Error: expected iterable, but did not find one for field {}.{}.",
                            self.schema.types[parent].name, field.name
                        ),
                        locations: vec![field.pos],
                        path: Some(path.clone()),
                    });
                    self.leaf(Out::Null)
                }
            },
            TypeRef::NonNull(inner) => self.json(Some(value), inner, parent, field, subsets, path),
        }
    }

    fn introspect(
        &mut self,
        obj: &Obj<'_>,
        name: &str,
        subsets: &[&'a SelectionSet],
        path: &mut Vec<PathStep>,
    ) -> Result<Out, Abort> {
        let schema = self.schema;
        let id = |name: &str| schema.type_named(name).unwrap_or(schema.string);
        let text = |s: &str| Out::Str(s.to_owned());
        let one = |this: &mut Self, obj: Obj<'_>, ty: &str, path: &mut Vec<PathStep>| {
            this.object(&obj, id(ty), subsets, path)
        };
        let many = |this: &mut Self, items: Vec<Obj<'_>>, ty: &str, path: &mut Vec<PathStep>| {
            this.list(items, id(ty), subsets, path)
        };
        match (obj, name) {
            (Obj::Schema, "types") => {
                let types = (0..schema.types.len())
                    .map(|i| Obj::Type(TypeRef::Named(i)))
                    .collect();
                many(self, types, "__Type", path)
            }
            (Obj::Schema, "queryType") => one(
                self,
                Obj::Type(TypeRef::Named(schema.query)),
                "__Type",
                path,
            ),
            (Obj::Schema, "directives") => {
                let all = (0..schema.directives.len()).map(Obj::Directive).collect();
                many(self, all, "__Directive", path)
            }
            (Obj::Type(ty), _) => self.type_field(ty, name, subsets, path),
            (Obj::Field(owner, i), _) => {
                let def = &schema.types[*owner].fields[*i];
                match name {
                    "name" => self.leaf(text(&def.name)),
                    "description" => self.leaf(text(def.description.unwrap_or(""))),
                    "args" => {
                        let args = (0..def.args.len())
                            .map(|j| Obj::Arg(ArgOf::Field(*owner, *i), j))
                            .collect();
                        many(self, args, "__InputValue", path)
                    }
                    "type" => one(self, Obj::Type(def.ty.clone()), "__Type", path),
                    "isDeprecated" => self.leaf(Out::Bool(false)),
                    _ => self.leaf(Out::Null),
                }
            }
            (Obj::Arg(of, j), _) => {
                let def = match of {
                    ArgOf::Field(owner, i) => &schema.types[*owner].fields[*i].args[*j],
                    ArgOf::Directive(d) => &schema.directives[*d].args[*j],
                };
                match name {
                    "name" => self.leaf(text(def.name)),
                    "description" => self.leaf(text(def.description.unwrap_or(""))),
                    "type" => one(self, Obj::Type(def.ty.clone()), "__Type", path),
                    "defaultValue" => self.leaf(def.default.map_or(Out::Null, text)),
                    _ => self.leaf(Out::Null),
                }
            }
            (Obj::EnumValue(owner, i), _) => match name {
                "name" => self.leaf(text(schema.types[*owner].enum_values[*i])),
                "description" => self.leaf(text("")),
                "isDeprecated" => self.leaf(Out::Bool(false)),
                _ => self.leaf(Out::Null),
            },
            (Obj::Directive(d), _) => {
                let def = &schema.directives[*d];
                match name {
                    "name" => self.leaf(text(def.name)),
                    "description" => self.leaf(text("")),
                    "locations" => {
                        let locations = def.locations.iter().map(|l| text(l)).collect();
                        self.charge(def.locations.len() * 24)?;
                        Ok(Out::List(locations))
                    }
                    "args" => {
                        let args = (0..def.args.len())
                            .map(|j| Obj::Arg(ArgOf::Directive(*d), j))
                            .collect();
                        many(self, args, "__InputValue", path)
                    }
                    _ => self.leaf(Out::Null),
                }
            }
            _ => self.leaf(Out::Null),
        }
    }

    fn type_field(
        &mut self,
        ty: &TypeRef,
        name: &str,
        subsets: &[&'a SelectionSet],
        path: &mut Vec<PathStep>,
    ) -> Result<Out, Abort> {
        let schema = self.schema;
        let type_type = schema.type_named("__Type").unwrap_or(schema.string);
        let named = match ty {
            TypeRef::Named(id) => Some(&schema.types[*id]),
            _ => None,
        };
        match name {
            "kind" => self.leaf(Out::Str(
                match (ty, named.map(|t| t.kind)) {
                    (TypeRef::List(_), _) => "LIST",
                    (TypeRef::NonNull(_), _) => "NON_NULL",
                    (_, Some(TypeKind::Object)) => "OBJECT",
                    (_, Some(TypeKind::Enum)) => "ENUM",
                    _ => "SCALAR",
                }
                .to_owned(),
            )),
            "name" => self.leaf(named.map_or(Out::Null, |t| Out::Str(t.name.clone()))),
            "description" => self.leaf(named.map_or(Out::Null, |_| Out::Str(String::new()))),
            "fields" => match (ty, named) {
                (TypeRef::Named(id), Some(t)) if t.kind == TypeKind::Object => {
                    let fields = (0..t.fields.len()).map(|i| Obj::Field(*id, i)).collect();
                    let field_type = schema.type_named("__Field").unwrap_or(schema.string);
                    self.list(fields, field_type, subsets, path)
                }
                _ => self.leaf(Out::Null),
            },
            "interfaces" => match named {
                Some(t) if t.kind == TypeKind::Object => self.leaf(Out::List(Vec::new())),
                _ => self.leaf(Out::Null),
            },
            "enumValues" => match (ty, named) {
                (TypeRef::Named(id), Some(t)) if t.kind == TypeKind::Enum => {
                    let values = (0..t.enum_values.len())
                        .map(|i| Obj::EnumValue(*id, i))
                        .collect();
                    let value_type = schema.type_named("__EnumValue").unwrap_or(schema.string);
                    self.list(values, value_type, subsets, path)
                }
                _ => self.leaf(Out::Null),
            },
            "ofType" => match ty {
                TypeRef::List(inner) | TypeRef::NonNull(inner) => {
                    self.object(&Obj::Type(inner.as_ref().clone()), type_type, subsets, path)
                }
                TypeRef::Named(_) => self.leaf(Out::Null),
            },
            _ => self.leaf(Out::Null),
        }
    }
}

/// The value of the key a field reads: the key spelled as the field (when that spelling
/// maps to the field), else a key whose mapped name is the field's.
fn lookup<'v>(value: &'v Json, field: &str, exact: bool) -> Option<&'v Json> {
    let Json::Object(members) = value else {
        return None;
    };
    if exact && let Some(found) = members.get(field) {
        return Some(found);
    }
    members
        .iter()
        .find(|(key, _)| field_name(key) == field)
        .map(|(_, v)| v)
}

/// A JSON value as a leaf of type `scalar`, converted as catalogd's engine converts it.
fn coerce(value: &Json, scalar: Scalar) -> Out {
    let number = |f: f64| -> Option<f64> { f.is_finite().then_some(f) };
    let as_float = |value: &Json| -> Option<f64> {
        match value {
            Json::Number(n) => n.as_f64(),
            Json::String(s) => s.trim().parse::<f64>().ok().and_then(number),
            Json::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    };
    match (scalar, value) {
        (_, Json::Null) => Out::Null,
        (Scalar::String, Json::String(s)) => Out::Str(s.clone()),
        (Scalar::String, Json::Bool(b)) => Out::Str(b.to_string()),
        (Scalar::String, Json::Number(n)) => Out::Str(go_general(n.as_f64().unwrap_or(0.0))),
        (Scalar::String, other) => Out::Str(json_text(other)),
        (Scalar::Int, other) => as_float(other)
            .map(f64::trunc)
            .filter(|f| (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(f))
            .map_or(Out::Null, |f| Out::Int(f as i64)),
        (Scalar::Float, other) => as_float(other).map_or(Out::Null, Out::Float),
        (Scalar::Boolean, Json::Bool(b)) => Out::Bool(*b),
        (Scalar::Boolean, Json::Number(n)) => Out::Bool(n.as_f64() != Some(0.0)),
        (Scalar::Boolean, Json::String(s)) => Out::Bool(!(s.is_empty() || s == "false")),
        (Scalar::Boolean, _) => Out::Bool(true),
    }
}

/// Objects and arrays under a plain field are answered as their JSON text, as catalogd's
/// encoder writes it (keys sorted, `<`, `>`, `&` escaped).
fn json_text(value: &Json) -> String {
    escape_html(&canonical(value)).into_owned()
}

/// A number as Go's `%v` prints a float64: the shortest digits, in exponent form (at least
/// two exponent digits) when the exponent is below -4 or 6 and above: `3`, `4.5`, `1e+06`.
fn go_general(f: f64) -> String {
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return format!("{f}");
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_coerced_as_catalogds_engine_does() {
        let s = |v: Json| coerce(&v, Scalar::String);
        assert_eq!(s(json!(3)), Out::Str("3".into()));
        assert_eq!(s(json!(4.5)), Out::Str("4.5".into()));
        assert_eq!(s(json!(1000000)), Out::Str("1e+06".into()));
        assert_eq!(s(json!(123456)), Out::Str("123456".into()));
        assert_eq!(s(json!(0.00001)), Out::Str("1e-05".into()));
        assert_eq!(s(json!(true)), Out::Str("true".into()));
        assert_eq!(
            s(json!({"b": ">=1", "a": [1.5, null]})),
            Out::Str("{\"a\":[1.5,null],\"b\":\"\\u003e=1\"}".into())
        );
        let i = |v: Json| coerce(&v, Scalar::Int);
        assert_eq!(i(json!(3.9)), Out::Int(3));
        assert_eq!(i(json!(-3.9)), Out::Int(-3));
        assert_eq!(i(json!(3_000_000_000u64)), Out::Null);
        assert_eq!(i(json!("42")), Out::Int(42));
        assert_eq!(i(json!("x")), Out::Null);
        assert_eq!(i(json!(true)), Out::Int(1));
        assert_eq!(i(json!({"a": 1})), Out::Null);
        assert_eq!(coerce(&json!("2.5"), Scalar::Float), Out::Float(2.5));
        assert_eq!(coerce(&json!(false), Scalar::Float), Out::Float(0.0));
        let b = |v: Json| coerce(&v, Scalar::Boolean);
        assert_eq!(b(json!(0)), Out::Bool(false));
        assert_eq!(b(json!(2)), Out::Bool(true));
        assert_eq!(b(json!("")), Out::Bool(false));
        assert_eq!(b(json!("false")), Out::Bool(false));
        assert_eq!(b(json!("no")), Out::Bool(true));
        assert_eq!(b(json!(null)), Out::Null);
    }

    #[test]
    fn keys_are_found_by_their_mapped_names() {
        let doc = json!({"tier-level": 3, "name": "n", "Name": "N"});
        assert_eq!(lookup(&doc, "tierLevel", true), Some(&json!(3)));
        assert_eq!(lookup(&doc, "name", true), Some(&json!("n")));
        assert_eq!(
            lookup(&json!({"Name": "N"}), "name", true),
            Some(&json!("N"))
        );
        assert_eq!(lookup(&json!({"field_123": 1}), "field_123", false), None);
        assert_eq!(lookup(&json!("text"), "name", true), None);
    }
}
