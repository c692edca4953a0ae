//! The schema's types built from the derived shapes: drafts named by string, then given ids
//! in name order, with the fixed `summary`, scalar and introspection types beside them.
use super::{
    ArgDef, Deriver, Directive, FieldDef, Scalar, Schema, SchemaInfo, Shape, Type, TypeId,
    TypeKind, TypeRef, field_name, root_field_name, type_name,
};
use std::collections::HashMap;

/// A type before ids are given (ids are positions in name order).
struct Draft {
    name: String,
    kind: TypeKind,
    fields: Vec<DraftField>,
    enum_values: &'static [&'static str],
}

struct DraftField {
    name: String,
    ty: DraftRef,
    args: Vec<(
        &'static str,
        DraftRef,
        Option<&'static str>,
        Option<&'static str>,
    )>,
    schema: Option<usize>,
    description: Option<&'static str>,
}

#[derive(Clone)]
enum DraftRef {
    Named(String),
    List(Box<DraftRef>),
    NonNull(Box<DraftRef>),
}

fn named(name: &str) -> DraftRef {
    DraftRef::Named(name.to_owned())
}

fn list(inner: DraftRef) -> DraftRef {
    DraftRef::List(Box::new(inner))
}

fn non_null(inner: DraftRef) -> DraftRef {
    DraftRef::NonNull(Box::new(inner))
}

fn plain(name: &str, ty: DraftRef) -> DraftField {
    DraftField {
        name: name.to_owned(),
        ty,
        args: Vec::new(),
        schema: None,
        description: None,
    }
}

const LIMIT_DESCRIPTION: &str = "Maximum number of items to return";
const OFFSET_DESCRIPTION: &str = "Number of items to skip";

const TYPE_KINDS: &[&str] = &[
    "SCALAR",
    "OBJECT",
    "INTERFACE",
    "UNION",
    "ENUM",
    "INPUT_OBJECT",
    "LIST",
    "NON_NULL",
];

const DIRECTIVE_LOCATIONS: &[&str] = &[
    "QUERY",
    "MUTATION",
    "SUBSCRIPTION",
    "FIELD",
    "FRAGMENT_DEFINITION",
    "FRAGMENT_SPREAD",
    "INLINE_FRAGMENT",
    "SCHEMA",
    "SCALAR",
    "OBJECT",
    "FIELD_DEFINITION",
    "ARGUMENT_DEFINITION",
    "INTERFACE",
    "UNION",
    "ENUM",
    "ENUM_VALUE",
    "INPUT_OBJECT",
    "INPUT_FIELD_DEFINITION",
];

#[derive(Default)]
pub(super) struct Builder {
    drafts: Vec<Draft>,
}

impl Builder {
    fn object(&mut self, name: &str, fields: Vec<DraftField>) {
        self.drafts.push(Draft {
            name: name.to_owned(),
            kind: TypeKind::Object,
            fields,
            enum_values: &[],
        });
    }

    fn leaf(&mut self, name: &str, kind: TypeKind, enum_values: &'static [&'static str]) {
        self.drafts.push(Draft {
            name: name.to_owned(),
            kind,
            fields: Vec::new(),
            enum_values,
        });
    }

    pub(super) fn build(mut self, derived: Deriver) -> Result<Schema, String> {
        let mut root = Vec::new();
        let mut uses_float = false;
        let mut scalar_ref = |shape: Shape| {
            let scalar = match shape {
                Shape::Scalar(s) | Shape::List(s) => s,
            };
            uses_float |= scalar == Scalar::Float;
            match shape {
                Shape::Scalar(s) => named(s.name()),
                Shape::List(s) => list(named(s.name())),
            }
        };
        let mut generated = Vec::new();
        for (index, (schema, shape)) in derived.schemas.iter().enumerate() {
            let object = type_name(schema);
            let mut fields = Vec::new();
            for (i, name) in shape.fields.names.iter().enumerate() {
                let ty = match shape.elements.get(&i) {
                    Some(elements) if !elements.names.is_empty() => {
                        let element = format!("{object}{}", type_name(name));
                        let element_fields = elements
                            .names
                            .iter()
                            .zip(&elements.shapes)
                            .map(|(name, shape)| plain(name, scalar_ref(*shape)))
                            .collect();
                        generated.push((element.clone(), element_fields));
                        list(named(&element))
                    }
                    _ => scalar_ref(shape.fields.shapes[i]),
                };
                fields.push(plain(name, ty));
            }
            generated.push((object.clone(), fields));
            root.push(DraftField {
                name: root_field_name(schema),
                ty: list(named(&object)),
                args: vec![
                    ("limit", named("Int"), Some("100"), Some(LIMIT_DESCRIPTION)),
                    ("offset", named("Int"), Some("0"), Some(OFFSET_DESCRIPTION)),
                ],
                schema: Some(index),
                description: None,
            });
        }
        for (name, fields) in generated {
            self.object(&name, fields);
        }
        root.push(plain("summary", named("CatalogSummary")));
        self.object("Query", root);
        self.object(
            "CatalogSummary",
            vec![
                plain("schemas", list(named("SchemaSummary"))),
                plain("totalSchemas", named("Int")),
            ],
        );
        self.object(
            "SchemaSummary",
            vec![
                plain("name", named("String")),
                plain("totalFields", named("Int")),
                plain("totalObjects", named("Int")),
            ],
        );
        for scalar in [Scalar::String, Scalar::Int, Scalar::Boolean] {
            self.leaf(scalar.name(), TypeKind::Scalar, &[]);
        }
        if uses_float {
            self.leaf("Float", TypeKind::Scalar, &[]);
        }
        self.introspection_types();
        self.finish(&derived)
    }

    fn introspection_types(&mut self) {
        let string = || named("String");
        let boolean_nn = || non_null(named("Boolean"));
        let string_nn = || non_null(named("String"));
        let list_nn = |name: &str| non_null(list(non_null(named(name))));
        let nullable_list = |name: &str| list(non_null(named(name)));
        let include_deprecated = |mut field: DraftField| {
            field
                .args
                .push(("includeDeprecated", named("Boolean"), Some("false"), None));
            field
        };
        self.object(
            "__Schema",
            vec![
                plain("directives", list_nn("__Directive")),
                plain("mutationType", named("__Type")),
                plain("queryType", non_null(named("__Type"))),
                plain("subscriptionType", named("__Type")),
                plain("types", list_nn("__Type")),
            ],
        );
        self.object(
            "__Type",
            vec![
                plain("description", string()),
                include_deprecated(plain("enumValues", nullable_list("__EnumValue"))),
                include_deprecated(plain("fields", nullable_list("__Field"))),
                plain("inputFields", nullable_list("__InputValue")),
                plain("interfaces", nullable_list("__Type")),
                plain("kind", non_null(named("__TypeKind"))),
                plain("name", string()),
                plain("ofType", named("__Type")),
                plain("possibleTypes", nullable_list("__Type")),
            ],
        );
        self.object(
            "__Field",
            vec![
                plain("args", list_nn("__InputValue")),
                plain("deprecationReason", string()),
                plain("description", string()),
                plain("isDeprecated", boolean_nn()),
                plain("name", string_nn()),
                plain("type", non_null(named("__Type"))),
            ],
        );
        self.object(
            "__InputValue",
            vec![
                plain("defaultValue", string()),
                plain("description", string()),
                plain("name", string_nn()),
                plain("type", non_null(named("__Type"))),
            ],
        );
        self.object(
            "__EnumValue",
            vec![
                plain("deprecationReason", string()),
                plain("description", string()),
                plain("isDeprecated", boolean_nn()),
                plain("name", string_nn()),
            ],
        );
        self.object(
            "__Directive",
            vec![
                plain("args", list_nn("__InputValue")),
                plain("description", string()),
                plain("locations", list_nn("__DirectiveLocation")),
                plain("name", string_nn()),
            ],
        );
        self.leaf("__TypeKind", TypeKind::Enum, TYPE_KINDS);
        self.leaf("__DirectiveLocation", TypeKind::Enum, DIRECTIVE_LOCATIONS);
    }

    /// Gives ids in name order and resolves references; two types of one name are
    /// catalogd's last schema failure.
    fn finish(mut self, derived: &Deriver) -> Result<Schema, String> {
        self.drafts.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(pair) = self.drafts.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(format!(
                "Schema must contain unique named types but contains multiple types named {:?}.",
                pair[0].name
            ));
        }
        let by_name: HashMap<String, TypeId> = self
            .drafts
            .iter()
            .enumerate()
            .map(|(i, d)| (d.name.clone(), i))
            .collect();
        fn resolve(by_name: &HashMap<String, TypeId>, draft: &DraftRef) -> TypeRef {
            match draft {
                DraftRef::Named(name) => TypeRef::Named(by_name[name]),
                DraftRef::List(inner) => TypeRef::List(Box::new(resolve(by_name, inner))),
                DraftRef::NonNull(inner) => TypeRef::non_null(resolve(by_name, inner)),
            }
        }
        let arg = |by_name: &HashMap<String, TypeId>,
                   (name, ty, default, description): &(
            &'static str,
            DraftRef,
            Option<&'static str>,
            Option<&'static str>,
        )| ArgDef {
            name,
            ty: resolve(by_name, ty),
            default: *default,
            description: *description,
        };
        let types = self
            .drafts
            .into_iter()
            .map(|draft| {
                let mut fields: Vec<FieldDef> = draft
                    .fields
                    .iter()
                    .map(|f| FieldDef {
                        exact_key: field_name(&f.name) == f.name,
                        name: f.name.clone(),
                        ty: resolve(&by_name, &f.ty),
                        args: f.args.iter().map(|a| arg(&by_name, a)).collect(),
                        schema: f.schema,
                        description: f.description,
                    })
                    .collect();
                fields.sort_by(|a, b| a.name.cmp(&b.name));
                Type {
                    name: draft.name,
                    kind: draft.kind,
                    fields,
                    enum_values: draft.enum_values,
                }
            })
            .collect();
        let if_arg = || ArgDef {
            name: "if",
            ty: TypeRef::non_null(TypeRef::Named(by_name["Boolean"])),
            default: None,
            description: None,
        };
        let condition_locations: &'static [&'static str] =
            &["FIELD", "FRAGMENT_SPREAD", "INLINE_FRAGMENT"];
        let directives = vec![
            Directive {
                name: "include",
                locations: condition_locations,
                args: vec![if_arg()],
            },
            Directive {
                name: "skip",
                locations: condition_locations,
                args: vec![if_arg()],
            },
            Directive {
                name: "deprecated",
                locations: &["FIELD_DEFINITION", "ENUM_VALUE"],
                args: vec![ArgDef {
                    name: "reason",
                    ty: TypeRef::Named(by_name["String"]),
                    default: Some("\"No longer supported\""),
                    description: None,
                }],
            },
        ];
        let schemas = derived
            .schemas
            .iter()
            .map(|(schema, shape)| SchemaInfo {
                schema: schema.clone(),
                objects: shape.objects,
                fields: shape.fields.names.len(),
            })
            .collect();
        let type_args = vec![ArgDef {
            name: "name",
            ty: TypeRef::non_null(TypeRef::Named(by_name["String"])),
            default: None,
            description: None,
        }];
        Ok(Schema {
            types,
            type_args,
            query: by_name["Query"],
            string: by_name["String"],
            int: by_name["Int"],
            float: by_name.get("Float").copied(),
            boolean: by_name["Boolean"],
            by_name,
            schemas,
            directives,
        })
    }
}
