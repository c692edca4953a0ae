//! Validation of a query against a catalog's schema: the standard GraphQL rules a query over
//! these schemas can break (there are no interfaces, unions or input objects), with
//! graphql-go's messages and positions (catalogd-graphql.md §1.7). Errors come in document
//! order: operations, then fragment definitions (a fragment's fields are checked once, in
//! its definition, wherever it is spread).
use super::response::GraphqlError;
use super::schema::{ArgDef, Scalar, Schema, TypeId, TypeKind, TypeRef};
use super::syntax::{
    Argument, Directive, Document, Fragment, Literal, OperationKind, Selection, SelectionSet,
    TypeName, Value,
};
use std::collections::{HashMap, HashSet};

pub(super) fn validate(schema: &Schema, doc: &Document) -> Vec<GraphqlError> {
    let fragments: HashMap<&str, &Fragment> =
        doc.fragments.iter().map(|f| (f.name.as_str(), f)).collect();
    let mut v = Validator {
        schema,
        fragments: &fragments,
        errors: Vec::new(),
        variables: HashMap::new(),
        used: Vec::new(),
    };
    let anonymous_alone = doc.operations.len() <= 1;
    for op in &doc.operations {
        if !anonymous_alone && op.name.is_none() {
            v.error(
                "This anonymous operation must be the only defined operation.",
                op.pos,
            );
        }
        v.variables.clear();
        v.used.clear();
        for var in &op.variables {
            if v.variables.contains_key(var.name.as_str()) {
                v.error(
                    format!("There can be only one variable named \"{}\".", var.name),
                    var.pos,
                );
            }
            let ty = v.input_type(&var.ty);
            if let (Some(ty), Some(default)) = (&ty, &var.default)
                && !v.valid_literal(default, ty)
            {
                v.error(
                    format!(
                        "Variable \"${}\" of type \"{}\" has invalid default value: {default}.\nExpected type \"{}\", found {default}.",
                        var.name,
                        var.ty,
                        var.ty
                    ),
                    default.pos,
                );
            }
            // A variable with a default is effectively non-null where it is used.
            let effective = match ty {
                Some(ty) if var.default.is_some() && !matches!(ty, TypeRef::NonNull(_)) => {
                    Some(TypeRef::NonNull(Box::new(ty)))
                }
                ty => ty,
            };
            v.variables.insert(&var.name, effective);
        }
        let root = match op.kind {
            OperationKind::Query => Some(schema.query),
            // No mutation or subscription type: the executor says so.
            OperationKind::Mutation | OperationKind::Subscription => None,
        };
        v.directives(&op.directives, op_location(op.kind));
        if let Some(root) = root {
            v.selection_set(&op.selection, root);
        }
        // Variables used through fragments count as used by the operation.
        let mut spread = HashSet::new();
        v.fragment_variables(&op.selection, false, &mut spread);
        let used: HashSet<&str> = v.used.iter().map(|(name, _)| *name).collect();
        for (name, pos) in std::mem::take(&mut v.used) {
            if !v.variables.contains_key(name) {
                v.error(format!("Variable \"${name}\" is not defined."), pos);
            }
        }
        for var in &op.variables {
            if !used.contains(var.name.as_str()) {
                v.error(
                    format!("Variable \"${}\" is never used.", var.name),
                    var.pos,
                );
            }
        }
    }
    let mut seen = HashSet::new();
    let mut spread_anywhere = HashSet::new();
    for op in &doc.operations {
        v.spread_names(&op.selection, &mut spread_anywhere);
    }
    for fragment in &doc.fragments {
        if !seen.insert(fragment.name.as_str()) {
            v.error(
                format!(
                    "There can only be one fragment named \"{}\".",
                    fragment.name
                ),
                fragment.pos,
            );
        }
        let (condition, pos) = &fragment.condition;
        match schema.type_named(condition) {
            None => v.error(format!("Unknown type \"{condition}\"."), *pos),
            Some(ty) if schema.types[ty].is_leaf() => v.error(
                format!(
                    "Fragment \"{}\" cannot condition on non composite type \"{condition}\".",
                    fragment.name
                ),
                *pos,
            ),
            Some(ty) => {
                v.variables.clear();
                v.directives(&fragment.directives, "FRAGMENT_DEFINITION");
                v.selection_set(&fragment.selection, ty);
            }
        }
        if v.cycles(fragment) {
            v.error(
                format!(
                    "Cannot spread fragment \"{}\" within itself.",
                    fragment.name
                ),
                fragment.pos,
            );
        }
        if !spread_anywhere.contains(fragment.name.as_str()) {
            v.error(
                format!("Fragment \"{}\" is never used.", fragment.name),
                fragment.pos,
            );
        }
    }
    v.errors
}

fn op_location(kind: OperationKind) -> &'static str {
    match kind {
        OperationKind::Query => "QUERY",
        OperationKind::Mutation => "MUTATION",
        OperationKind::Subscription => "SUBSCRIPTION",
    }
}

struct Validator<'a> {
    schema: &'a Schema,
    fragments: &'a HashMap<&'a str, &'a Fragment>,
    errors: Vec<GraphqlError>,
    /// The operation's variables and their types (`None`: not an input type).
    variables: HashMap<&'a str, Option<TypeRef>>,
    /// Variables used in the operation itself, where.
    used: Vec<(&'a str, super::syntax::Pos)>,
}

impl<'a> Validator<'a> {
    fn error(&mut self, message: impl Into<String>, pos: super::syntax::Pos) {
        self.errors.push(GraphqlError::at(message, pos));
    }

    /// The type of a variable, if it is a known input type.
    fn input_type(&mut self, ty: &TypeName) -> Option<TypeRef> {
        match ty {
            TypeName::Named(name, pos) => match self.schema.type_named(name) {
                None => {
                    self.error(format!("Unknown type \"{name}\"."), *pos);
                    None
                }
                Some(id) if self.schema.types[id].is_leaf() => Some(TypeRef::Named(id)),
                Some(_) => {
                    self.error(
                        format!("Variable cannot be non-input type \"{name}\"."),
                        *pos,
                    );
                    None
                }
            },
            TypeName::List(inner) => self.input_type(inner).map(|t| TypeRef::List(Box::new(t))),
            TypeName::NonNull(inner) => self
                .input_type(inner)
                .map(|t| TypeRef::NonNull(Box::new(t))),
        }
    }

    fn selection_set(&mut self, set: &'a SelectionSet, parent: TypeId) {
        for selection in &set.items {
            match selection {
                Selection::Field(field) => {
                    self.directives(&field.directives, "FIELD");
                    let Some((ty, args)) = self.field_type(parent, &field.name) else {
                        let on = &self.schema.types[parent].name;
                        let message = format!(
                            "Cannot query field \"{}\" on type \"{on}\".{}",
                            field.name,
                            did_you_mean(
                                &field.name,
                                self.schema.types[parent]
                                    .fields
                                    .iter()
                                    .map(|f| f.name.as_str())
                            )
                        );
                        self.error(message, field.pos);
                        continue;
                    };
                    let field_label = format!(
                        "field \"{}\" of type \"{}\"",
                        field.name, self.schema.types[parent].name
                    );
                    self.arguments(&field.arguments, args, &field_label, field.pos, || {
                        format!("Field \"{}\"", field.name)
                    });
                    let named = ty.named();
                    match (&field.selection, self.schema.types[named].is_leaf()) {
                        (Some(sub), true) => self.error(
                            format!(
                                "Field \"{}\" of type \"{}\" must not have a sub selection.",
                                field.name,
                                self.schema.print(&ty)
                            ),
                            sub.pos,
                        ),
                        (None, false) => self.error(
                            format!(
                                "Field \"{}\" of type \"{}\" must have a sub selection.",
                                field.name,
                                self.schema.print(&ty)
                            ),
                            field.pos,
                        ),
                        (Some(sub), false) => self.selection_set(sub, named),
                        (None, true) => {}
                    }
                }
                Selection::Spread(spread) => {
                    self.directives(&spread.directives, "FRAGMENT_SPREAD");
                    match self.fragments.get(spread.name.as_str()) {
                        None => {
                            self.error(format!("Unknown fragment \"{}\".", spread.name), spread.pos)
                        }
                        Some(fragment) => {
                            if let Some(ty) = self.schema.type_named(&fragment.condition.0)
                                && ty != parent
                                && !self.schema.types[ty].is_leaf()
                            {
                                self.error(
                                    format!(
                                        "Fragment \"{}\" cannot be spread here as objects of type \"{}\" can never be of type \"{}\".",
                                        spread.name,
                                        self.schema.types[parent].name,
                                        self.schema.types[ty].name
                                    ),
                                    spread.pos,
                                );
                            }
                        }
                    }
                }
                Selection::Inline(inline) => {
                    self.directives(&inline.directives, "INLINE_FRAGMENT");
                    let ty = match &inline.condition {
                        None => parent,
                        Some((name, pos)) => match self.schema.type_named(name) {
                            None => {
                                self.error(format!("Unknown type \"{name}\"."), *pos);
                                continue;
                            }
                            Some(ty) if self.schema.types[ty].is_leaf() => {
                                self.error(
                                    format!(
                                        "Fragment cannot condition on non composite type \"{name}\"."
                                    ),
                                    *pos,
                                );
                                continue;
                            }
                            Some(ty) => ty,
                        },
                    };
                    if ty != parent {
                        self.error(
                            format!(
                                "Fragment cannot be spread here as objects of type \"{}\" can never be of type \"{}\".",
                                self.schema.types[parent].name, self.schema.types[ty].name
                            ),
                            inline.pos,
                        );
                        continue;
                    }
                    self.selection_set(&inline.selection, ty);
                }
            }
        }
    }

    /// A field's type and arguments, meta fields included.
    fn field_type(&self, parent: TypeId, name: &str) -> Option<(TypeRef, &'a [ArgDef])> {
        let schema = self.schema;
        match name {
            "__typename" => {
                return Some((
                    TypeRef::NonNull(Box::new(TypeRef::Named(schema.string))),
                    &[],
                ));
            }
            "__schema" if parent == schema.query => {
                let id = schema.type_named("__Schema")?;
                return Some((TypeRef::NonNull(Box::new(TypeRef::Named(id))), &[]));
            }
            "__type" if parent == schema.query => {
                let id = schema.type_named("__Type")?;
                return Some((TypeRef::Named(id), schema.type_args.as_slice()));
            }
            _ => {}
        }
        let ty = &schema.types[parent];
        if ty.kind != TypeKind::Object {
            return None;
        }
        ty.field(name).map(|f| (f.ty.clone(), f.args.as_slice()))
    }

    fn directives(&mut self, directives: &'a [Directive], location: &str) {
        for directive in directives {
            let Some(def) = self
                .schema
                .directives
                .iter()
                .find(|d| d.name == directive.name)
            else {
                self.error(
                    format!("Unknown directive \"{}\".", directive.name),
                    directive.pos,
                );
                continue;
            };
            if !def.locations.contains(&location) {
                self.error(
                    format!(
                        "Directive \"{}\" may not be used on {location}.",
                        directive.name
                    ),
                    directive.pos,
                );
            }
            let label = format!("directive \"@{}\"", directive.name);
            self.arguments(
                &directive.arguments,
                &def.args,
                &label,
                directive.pos,
                || format!("Directive \"@{}\"", directive.name),
            );
        }
    }

    /// Known names, values of the right type, required ones given.
    fn arguments(
        &mut self,
        given: &'a [Argument],
        defs: &[ArgDef],
        label: &str,
        at: super::syntax::Pos,
        owner: impl Fn() -> String,
    ) {
        let mut names = HashSet::new();
        for arg in given {
            if !names.insert(arg.name.as_str()) {
                self.error(
                    format!("There can be only one argument named \"{}\".", arg.name),
                    arg.pos,
                );
            }
            let Some(def) = defs.iter().find(|d| d.name == arg.name) else {
                self.error(
                    format!(
                        "Unknown argument \"{}\" on {label}.{}",
                        arg.name,
                        did_you_mean(&arg.name, defs.iter().map(|d| d.name))
                    ),
                    arg.pos,
                );
                continue;
            };
            self.note_variables(&arg.value, &def.ty);
            if !self.valid_literal(&arg.value, &def.ty) {
                let expected = self.schema.print(&def.ty);
                self.error(
                    format!(
                        "Argument \"{}\" has invalid value {}.\nExpected type \"{expected}\", found {}.",
                        arg.name, arg.value, arg.value
                    ),
                    arg.value.pos,
                );
            }
        }
        for def in defs {
            if matches!(def.ty, TypeRef::NonNull(_)) && !names.contains(def.name) {
                self.error(
                    format!(
                        "{} argument \"{}\" of type \"{}\" is required but not provided.",
                        owner(),
                        def.name,
                        self.schema.print(&def.ty)
                    ),
                    at,
                );
            }
        }
    }

    /// Records the variables a value uses, and checks each against the position's type.
    fn note_variables(&mut self, value: &'a Value, expected: &TypeRef) {
        match &value.literal {
            Literal::Variable(name) => {
                self.used.push((name, value.pos));
                if let Some(Some(var_ty)) = self.variables.get(name.as_str())
                    && !fits(var_ty, expected)
                {
                    let message = format!(
                        "Variable \"${name}\" of type \"{}\" used in position expecting type \"{}\".",
                        self.schema.print(var_ty),
                        self.schema.print(expected)
                    );
                    self.error(message, value.pos);
                }
            }
            Literal::List(items) => {
                let inner = match expected {
                    TypeRef::NonNull(inner) => inner.as_ref(),
                    other => other,
                };
                let item_ty = match inner {
                    TypeRef::List(item) => item.as_ref().clone(),
                    other => other.clone(),
                };
                for item in items {
                    self.note_variables(item, &item_ty);
                }
            }
            _ => {}
        }
    }

    /// Whether a literal can be the value of an input of type `ty` (a variable can; its own
    /// type is checked where it is used).
    fn valid_literal(&self, value: &Value, ty: &TypeRef) -> bool {
        match (ty, &value.literal) {
            (_, Literal::Variable(_)) => true,
            (TypeRef::NonNull(inner), _) => self.valid_literal(value, inner),
            (TypeRef::List(item), Literal::List(items)) => {
                items.iter().all(|v| self.valid_literal(v, item))
            }
            (TypeRef::List(item), _) => self.valid_literal(value, item),
            (TypeRef::Named(id), literal) => {
                let ty = &self.schema.types[*id];
                if ty.kind == TypeKind::Enum {
                    return matches!(literal, Literal::Enum(name) if ty.enum_values.contains(&name.as_str()));
                }
                match self.schema.scalar(*id) {
                    Some(Scalar::Int) => matches!(literal,
                        Literal::Int(text) if text.parse::<i32>().is_ok()),
                    Some(Scalar::Float) => {
                        matches!(literal, Literal::Int(_) | Literal::Float(_))
                    }
                    Some(Scalar::String) => matches!(literal, Literal::String(_)),
                    Some(Scalar::Boolean) => {
                        matches!(literal, Literal::Boolean(_))
                    }
                    None => false,
                }
            }
        }
    }

    /// Notes the variables used inside the fragments an operation spreads (each once); those
    /// of the operation's own fields were noted when they were checked.
    fn fragment_variables(
        &mut self,
        set: &'a SelectionSet,
        inside: bool,
        visited: &mut HashSet<&'a str>,
    ) {
        for selection in &set.items {
            match selection {
                Selection::Field(f) => {
                    if inside {
                        let values = f
                            .arguments
                            .iter()
                            .chain(f.directives.iter().flat_map(|d| &d.arguments));
                        for arg in values {
                            self.collect_uses(&arg.value);
                        }
                    }
                    if let Some(sub) = &f.selection {
                        self.fragment_variables(sub, inside, visited);
                    }
                }
                Selection::Inline(inline) => {
                    self.fragment_variables(&inline.selection, inside, visited)
                }
                Selection::Spread(spread) => {
                    if let Some(fragment) = self.fragments.get(spread.name.as_str())
                        && visited.insert(&fragment.name)
                    {
                        for d in &fragment.directives {
                            for arg in &d.arguments {
                                self.collect_uses(&arg.value);
                            }
                        }
                        self.fragment_variables(&fragment.selection, true, visited);
                    }
                }
            }
        }
    }

    fn collect_uses(&mut self, value: &'a Value) {
        match &value.literal {
            Literal::Variable(name) => self.used.push((name, value.pos)),
            Literal::List(items) => items.iter().for_each(|v| self.collect_uses(v)),
            Literal::Object(fields) => fields.iter().for_each(|(_, v)| self.collect_uses(v)),
            _ => {}
        }
    }

    fn spread_names(&self, set: &'a SelectionSet, names: &mut HashSet<&'a str>) {
        for selection in &set.items {
            match selection {
                Selection::Field(f) => {
                    if let Some(sub) = &f.selection {
                        self.spread_names(sub, names);
                    }
                }
                Selection::Inline(inline) => self.spread_names(&inline.selection, names),
                Selection::Spread(spread) => {
                    if names.insert(&spread.name)
                        && let Some(fragment) = self.fragments.get(spread.name.as_str())
                    {
                        self.spread_names(&fragment.selection, names);
                    }
                }
            }
        }
    }

    /// Whether `fragment` reaches a spread of itself.
    fn cycles(&self, fragment: &'a Fragment) -> bool {
        let mut reached = HashSet::new();
        self.spread_names(&fragment.selection, &mut reached);
        reached.contains(fragment.name.as_str())
    }
}

/// Whether a variable of type `var` may stand where `expected` is wanted.
fn fits(var: &TypeRef, expected: &TypeRef) -> bool {
    match (var, expected) {
        (TypeRef::NonNull(v), TypeRef::NonNull(e)) => fits(v, e),
        (TypeRef::NonNull(v), e) => fits(v, e),
        (_, TypeRef::NonNull(_)) => false,
        (TypeRef::List(v), TypeRef::List(e)) => fits(v, e),
        (TypeRef::Named(v), TypeRef::Named(e)) => v == e,
        _ => false,
    }
}

/// ` Did you mean "A"?` for the names close to `input`, or nothing.
pub(super) fn did_you_mean<'n>(input: &str, candidates: impl Iterator<Item = &'n str>) -> String {
    let mut close: Vec<(usize, &str)> = candidates
        .filter_map(|candidate| {
            let threshold = (input.len() / 2).max(candidate.len() / 2).max(1);
            let distance = levenshtein(input, candidate);
            (distance <= threshold).then_some((distance, candidate))
        })
        .collect();
    close.sort();
    let names: Vec<String> = close
        .iter()
        .take(5)
        .map(|(_, name)| format!("\"{name}\""))
        .collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => format!(" Did you mean {one}?"),
        [a, b] => format!(" Did you mean {a} or {b}?"),
        [init @ .., last] => format!(" Did you mean {}, or {last}?", init.join(", ")),
    }
}

fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}
