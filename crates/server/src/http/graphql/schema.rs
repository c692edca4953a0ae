//! The GraphQL schema of one catalog, derived from its documents as catalogd derives it
//! (catalogd-graphql.md §2): one root list field and one object type per `schema` value,
//! fields from the documents' keys, typed by their first sighting, element types for arrays
//! of objects; plus the fixed `summary` types, the scalars and the introspection types.
//! Only names, kinds and counts are kept: a few KB however large the catalog.
mod build;

use build::Builder;
use serde_json::Value;
use std::collections::HashMap;

pub(super) type TypeId = usize;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TypeRef {
    Named(TypeId),
    List(Box<TypeRef>),
    NonNull(Box<TypeRef>),
}

impl TypeRef {
    pub(super) fn named(&self) -> TypeId {
        match self {
            TypeRef::Named(id) => *id,
            TypeRef::List(inner) | TypeRef::NonNull(inner) => inner.named(),
        }
    }

    fn non_null(inner: TypeRef) -> TypeRef {
        TypeRef::NonNull(Box::new(inner))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TypeKind {
    Scalar,
    Object,
    Enum,
}

#[derive(Debug)]
pub(super) struct Type {
    pub(super) name: String,
    pub(super) kind: TypeKind,
    /// Sorted by name (as introspection lists them).
    pub(super) fields: Vec<FieldDef>,
    pub(super) enum_values: &'static [&'static str],
}

impl Type {
    pub(super) fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields
            .binary_search_by(|f| f.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.fields[i])
    }

    pub(super) fn is_leaf(&self) -> bool {
        self.kind != TypeKind::Object
    }
}

#[derive(Debug)]
pub(super) struct FieldDef {
    pub(super) name: String,
    pub(super) ty: TypeRef,
    pub(super) args: Vec<ArgDef>,
    /// For a root list field: the schema whose documents it lists.
    pub(super) schema: Option<usize>,
    /// For a document's field: whether a key spelled as the field's name is its key (the
    /// name maps to itself); otherwise only keys whose mapped name is the field's are.
    pub(super) exact_key: bool,
    pub(super) description: Option<&'static str>,
}

#[derive(Debug)]
pub(super) struct ArgDef {
    pub(super) name: &'static str,
    pub(super) ty: TypeRef,
    pub(super) default: Option<&'static str>,
    pub(super) description: Option<&'static str>,
}

#[derive(Debug)]
pub(super) struct Directive {
    pub(super) name: &'static str,
    pub(super) locations: &'static [&'static str],
    pub(super) args: Vec<ArgDef>,
}

/// One `schema` value of the catalog.
#[derive(Debug)]
pub(super) struct SchemaInfo {
    pub(super) schema: String,
    pub(super) objects: u64,
    pub(super) fields: usize,
}

#[derive(Debug)]
pub(crate) struct Schema {
    /// Sorted by name; ids index this.
    pub(super) types: Vec<Type>,
    by_name: HashMap<String, TypeId>,
    pub(super) query: TypeId,
    pub(super) schemas: Vec<SchemaInfo>,
    pub(super) directives: Vec<Directive>,
    /// The arguments of `__type`.
    pub(super) type_args: Vec<ArgDef>,
    pub(super) string: TypeId,
    pub(super) int: TypeId,
    pub(super) float: Option<TypeId>,
    pub(super) boolean: TypeId,
}

impl Schema {
    pub(super) fn type_named(&self, name: &str) -> Option<TypeId> {
        self.by_name.get(name).copied()
    }

    /// A type as GraphQL writes it: `[OlmBundle]`, `String!`.
    pub(super) fn print(&self, ty: &TypeRef) -> String {
        match ty {
            TypeRef::Named(id) => self.types[*id].name.clone(),
            TypeRef::List(inner) => format!("[{}]", self.print(inner)),
            TypeRef::NonNull(inner) => format!("{}!", self.print(inner)),
        }
    }

    /// The scalar a leaf type is, for the coercion of values (`None` for enums).
    pub(super) fn scalar(&self, id: TypeId) -> Option<Scalar> {
        if id == self.string {
            Some(Scalar::String)
        } else if id == self.int {
            Some(Scalar::Int)
        } else if Some(id) == self.float {
            Some(Scalar::Float)
        } else if id == self.boolean {
            Some(Scalar::Boolean)
        } else {
            None
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scalar {
    String,
    Int,
    Float,
    Boolean,
}

impl Scalar {
    fn name(self) -> &'static str {
        match self {
            Scalar::String => "String",
            Scalar::Int => "Int",
            Scalar::Float => "Float",
            Scalar::Boolean => "Boolean",
        }
    }
}

/// A field's type as its first sighting gives it (§2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Scalar(Scalar),
    List(Scalar),
}

/// The fields of one `schema` value, or of the elements of one of its array fields, in
/// first-sighting order.
#[derive(Debug, Default)]
struct FieldShapes {
    names: Vec<String>,
    shapes: Vec<Shape>,
    index: HashMap<String, usize>,
}

impl FieldShapes {
    /// The field of key `key`, added with `shape` (computed only then) if new.
    fn sight(&mut self, key: &str, shape: impl FnOnce() -> Shape) -> usize {
        let name = field_name(key);
        if let Some(&i) = self.index.get(&name) {
            return i;
        }
        let i = self.names.len();
        self.index.insert(name.clone(), i);
        self.names.push(name);
        self.shapes.push(shape());
        i
    }
}

#[derive(Debug, Default)]
struct SchemaShape {
    objects: u64,
    fields: FieldShapes,
    /// Element fields, by index in `fields`.
    elements: HashMap<usize, FieldShapes>,
}

/// Collects the shapes of a catalog's documents, given one at a time in catalog order.
#[derive(Debug, Default)]
pub(super) struct Deriver {
    schemas: Vec<(String, SchemaShape)>,
    index: HashMap<String, usize>,
}

/// Array elements looked at for types (§2.4).
const SAMPLE: usize = 10;

impl Deriver {
    /// Adds a document whose `schema` is `schema` (documents without one are not GraphQL's).
    pub(super) fn add(&mut self, schema: &str, doc: &Value) {
        if schema.is_empty() {
            return;
        }
        let i = match self.index.get(schema) {
            Some(&i) => i,
            None => {
                self.index.insert(schema.to_owned(), self.schemas.len());
                self.schemas
                    .push((schema.to_owned(), SchemaShape::default()));
                self.schemas.len() - 1
            }
        };
        let shape = &mut self.schemas[i].1;
        shape.objects += 1;
        let Value::Object(members) = doc else { return };
        for (key, value) in members {
            let field = shape.fields.sight(key, || top_level_shape(value));
            let Value::Array(items) = value else { continue };
            for item in items.iter().take(SAMPLE) {
                if let Value::Object(item) = item {
                    let elements = shape.elements.entry(field).or_default();
                    for (key, value) in item {
                        elements.sight(key, || element_shape(value));
                    }
                }
            }
        }
    }

    /// The schema, or why catalogd could not build it (§2.8).
    pub(super) fn build(self) -> Result<Schema, String> {
        let mut by_type: HashMap<String, &str> = HashMap::new();
        for (schema, _) in &self.schemas {
            let name = type_name(schema);
            if let Some(other) = by_type.insert(name.clone(), schema) {
                return Err(format!(
                    "type name collision: schemas {other:?} and {schema:?} both sanitize to GraphQL type {name:?}"
                ));
            }
        }
        let mut by_field: HashMap<String, &str> = HashMap::new();
        for (schema, _) in &self.schemas {
            let field = root_field_name(schema);
            if let Some(other) = by_field.insert(field.clone(), schema) {
                return Err(format!(
                    "query field collision: schemas {other:?} and {schema:?} both map to field {field:?}"
                ));
            }
        }
        for (schema, _) in &self.schemas {
            let field = root_field_name(schema);
            if field.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(format!(
                    "Names must match /^[_a-zA-Z][_a-zA-Z0-9]*$/ but {field:?} does not."
                ));
            }
        }
        Builder::default().build(self)
    }
}

fn number_scalar(n: &serde_json::Number) -> Scalar {
    match n.as_f64() {
        Some(f) if f.fract() != 0.0 => Scalar::Float,
        _ => Scalar::Int,
    }
}

/// The kind of a value that is not an array, as a field's type.
fn scalar_of(value: &Value) -> Scalar {
    match value {
        Value::Bool(_) => Scalar::Boolean,
        Value::Number(n) => number_scalar(n),
        _ => Scalar::String,
    }
}

fn top_level_shape(value: &Value) -> Shape {
    let Value::Array(items) = value else {
        return Shape::Scalar(scalar_of(value));
    };
    let sampled: Vec<&Value> = items.iter().take(SAMPLE).filter(|v| !v.is_null()).collect();
    let Some(first) = sampled.first() else {
        return Shape::List(Scalar::String);
    };
    let kind = |v: &Value| std::mem::discriminant(v);
    // Arrays of objects become element types; mixed kinds and nested arrays are strings.
    if sampled
        .iter()
        .any(|v| v.is_object() || v.is_array() || kind(v) != kind(first))
    {
        return Shape::List(Scalar::String);
    }
    Shape::List(scalar_of(first))
}

fn element_shape(value: &Value) -> Shape {
    match value {
        Value::Array(items) => match items.first() {
            Some(first @ (Value::Bool(_) | Value::Number(_) | Value::String(_))) => {
                Shape::List(scalar_of(first))
            }
            _ => Shape::List(Scalar::String),
        },
        other => Shape::Scalar(scalar_of(other)),
    }
}

/// R1: the root field of a schema.
pub(super) fn root_field_name(schema: &str) -> String {
    let mut name: String = schema
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    name.push('s');
    name
}

/// R2: a type's name.
pub(super) fn type_name(text: &str) -> String {
    let replaced: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let name: String = replaced
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .split('_')
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let mut chars = piece.chars();
            let first = chars.next().map(|c| c.to_ascii_uppercase());
            first
                .into_iter()
                .chain(chars.map(|c| c.to_ascii_lowercase()))
                .collect::<String>()
        })
        .collect();
    if name.is_empty() {
        "Unknown".to_owned()
    } else {
        name
    }
}

/// R4: the field of a JSON key.
pub(super) fn field_name(key: &str) -> String {
    if key.is_empty() {
        return "value".to_owned();
    }
    let mut replaced = String::with_capacity(key.len());
    for c in key.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        };
        if !(c == '_' && (replaced.is_empty() || replaced.ends_with('_'))) {
            replaced.push(c);
        }
    }
    let mut name = String::with_capacity(replaced.len());
    for (i, piece) in replaced.split('_').filter(|p| !p.is_empty()).enumerate() {
        if i == 0 {
            if piece.chars().any(|c| c.is_ascii_lowercase()) {
                let mut chars = piece.chars();
                name.extend(chars.next().map(|c| c.to_ascii_lowercase()));
                name.push_str(chars.as_str());
            } else {
                name.push_str(&piece.to_ascii_lowercase());
            }
        } else {
            let mut chars = piece.chars();
            name.extend(chars.next().map(|c| c.to_ascii_uppercase()));
            name.push_str(&chars.as_str().to_ascii_lowercase());
        }
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert_str(0, "field_");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_catalogds_rules() {
        for (schema, field) in [
            ("olm.bundle", "olmbundles"),
            ("olm.deprecations", "olmdeprecationss"),
            ("OLM.Bundle", "olmbundles"),
            ("acme.support-tier", "acmesupporttiers"),
            ("3scale.api", "3scaleapis"),
        ] {
            assert_eq!(root_field_name(schema), field);
        }
        for (text, ty) in [
            ("olm.package", "OlmPackage"),
            (
                "operators.operatorframework.io/bundle.channels.v1",
                "OperatorsOperatorframeworkIoBundleChannelsV1",
            ),
            ("123invalid", "Invalid"),
            ("", "Unknown"),
            ("@#$%", "Unknown"),
            ("_____", "Unknown"),
            ("complex.type-name_here", "ComplexTypeNameHere"),
            ("ABC", "Abc"),
            ("relatedImages", "Relatedimages"),
            ("é", "Unknown"),
        ] {
            assert_eq!(type_name(text), ty, "{text}");
        }
        for (key, field) in [
            ("name", "name"),
            ("defaultChannel", "defaultChannel"),
            ("package-name", "packageName"),
            ("default_channel", "defaultChannel"),
            ("sla_hours", "slaHours"),
            ("my.field.name", "myFieldName"),
            ("mixed_case-field.name", "mixedCaseFieldName"),
            (
                "spec.template.spec.containers",
                "specTemplateSpecContainers",
            ),
            ("123invalid", "field_123invalid"),
            ("123", "field_123"),
            ("---", "field_"),
            ("field@#$%", "field"),
            ("CamelCase", "camelCase"),
            ("UPPERCASE", "uppercase"),
            ("URLPath", "uRLPath"),
            ("my.fieldName", "myFieldname"),
            ("tier-level", "tierLevel"),
            ("_private", "private"),
            ("", "value"),
            (
                "operators.operatorframework.io/bundle.channels.v1",
                "operatorsOperatorframeworkIoBundleChannelsV1",
            ),
        ] {
            assert_eq!(field_name(key), field, "{key}");
        }
    }

    fn derive(docs: &[Value]) -> Result<Schema, String> {
        let mut deriver = Deriver::default();
        for doc in docs {
            deriver.add(doc["schema"].as_str().unwrap_or(""), doc);
        }
        deriver.build()
    }

    fn fields(schema: &Schema, ty: &str) -> Vec<String> {
        let ty = &schema.types[schema.type_named(ty).unwrap()];
        ty.fields
            .iter()
            .map(|f| format!("{}: {}", f.name, schema.print(&f.ty)))
            .collect()
    }

    #[test]
    fn types_come_from_first_sightings_and_element_fields_merge() {
        let schema = derive(&[
            json!({"schema": "s.x", "n": 1, "f": 1.5, "b": true, "o": {"a": 1}, "e": [], "l": [null, 2, 3.5], "m": [1, "a"], "z": null}),
            json!({"schema": "s.x", "n": 2.5, "e": [{"k": 1, "k2": [true]}], "l": [{"x": "y"}], "later": [[1]]}),
            json!({"schema": "s.x", "e": [{"k3": {"a": 1}, "k4": [], "k5": [{"a": 1}]}]}),
            json!({"no": "schema"}),
        ])
        .unwrap();
        assert_eq!(
            fields(&schema, "SX"),
            [
                "b: Boolean",
                "e: [SXE]",
                "f: Float",
                "l: [SXL]",
                "later: [String]",
                "m: [String]",
                "n: Int",
                "o: String",
                "schema: String",
                "z: String"
            ]
        );
        assert_eq!(
            fields(&schema, "SXE"),
            [
                "k: Int",
                "k2: [Boolean]",
                "k3: String",
                "k4: [String]",
                "k5: [String]"
            ]
        );
        assert_eq!(schema.schemas.len(), 1);
        assert_eq!(
            (schema.schemas[0].objects, schema.schemas[0].fields),
            (3, 10)
        );
        assert_eq!(
            fields(&schema, "Query"),
            ["summary: CatalogSummary", "sxs: [SX]"]
        );
        assert!(schema.float.is_some());
    }

    #[test]
    fn schemas_catalogd_cannot_build_are_refused_as_it_words_it() {
        let refused = |schemas: &[&str]| {
            let docs: Vec<Value> = schemas.iter().map(|s| json!({"schema": s})).collect();
            derive(&docs).unwrap_err()
        };
        assert_eq!(
            refused(&["olm.bundle", "olm-bundle"]),
            "type name collision: schemas \"olm.bundle\" and \"olm-bundle\" both sanitize to GraphQL type \"OlmBundle\""
        );
        assert_eq!(
            refused(&["olm.bundle", "olmbundle"]),
            "query field collision: schemas \"olm.bundle\" and \"olmbundle\" both map to field \"olmbundles\""
        );
        assert_eq!(
            refused(&["3scale.api"]),
            "Names must match /^[_a-zA-Z][_a-zA-Z0-9]*$/ but \"3scaleapis\" does not."
        );
        for clash in ["query", "catalog.summary", "string"] {
            assert!(
                refused(&[clash]).starts_with(
                    "Schema must contain unique named types but contains multiple types named"
                ),
                "{clash}"
            );
        }
    }
}
