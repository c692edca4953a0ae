//! Catalog templates (catalog-templates.md §1–2): choosing the template by its schema, the
//! basic template, and turning an FBC back into a basic or substitutes template.
use super::error::Error;
use super::{semver_template, substitutes_template};
use catalog::decode::parse_documents;
use catalog::json::{canonical, escape_html, indent, write_string};
use catalog::{Bundle, DeclarativeConfig, Document, SCHEMA_BUNDLE};
use serde::de::Deserialize;
use serde_json::Value;

pub(crate) const BASIC_SCHEMA: &str = "olm.template.basic";

/// Renders one bundle reference into the bundles it holds.
pub(crate) type RenderBundle<'a> = dyn FnMut(&str) -> Result<Vec<Bundle>, String> + 'a;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Basic,
    Semver,
    Substitutes,
}

impl Kind {
    pub const NAMES: [&str; 3] = ["basic", "semver", "substitutes"];

    /// A template type as the command line names it: the last dot-separated part of its schema.
    pub fn from_type(name: &str) -> Option<Kind> {
        match name {
            "basic" => Some(Kind::Basic),
            "semver" => Some(Kind::Semver),
            "substitutes" => Some(Kind::Substitutes),
            _ => None,
        }
    }

    /// The `schema` of templates of this type.
    fn schema(self) -> &'static str {
        match self {
            Kind::Basic => BASIC_SCHEMA,
            Kind::Semver => semver_template::SCHEMA,
            Kind::Substitutes => substitutes_template::SCHEMA,
        }
    }

    /// The type named by the `schema` of the input's first document.
    pub(crate) fn detect(input: &[u8]) -> Result<Kind, Error> {
        let first = first_document(input)
            .map_err(|e| Error::Invalid(format!("decoding template input: {e}")))?;
        let schema = first
            .as_object()
            .and_then(|m| m.iter().find(|(k, _)| k.eq_ignore_ascii_case("schema")))
            .and_then(|(_, v)| v.as_str())
            .unwrap_or_default();
        match schema {
            "" => Err(Error::Invalid(
                "template input missing required 'schema' field".into(),
            )),
            BASIC_SCHEMA => Ok(Kind::Basic),
            semver_template::SCHEMA => Ok(Kind::Semver),
            substitutes_template::SCHEMA => Ok(Kind::Substitutes),
            other => Err(Error::Invalid(format!("unknown template schema: {other}"))),
        }
    }

    pub(crate) fn render(
        self,
        input: &[u8],
        render_bundle: &mut RenderBundle,
    ) -> Result<DeclarativeConfig, Error> {
        match self {
            Kind::Basic => render_basic(input, render_bundle),
            Kind::Semver => semver_template::render(input, render_bundle),
            Kind::Substitutes => substitutes_template::render(input, render_bundle),
        }
    }
}

/// Go's struct-field matching for JSON keys: the exact name, else one equal ignoring case;
/// anything else is an unknown field, which strict decoding rejects.
pub(crate) fn decode_strict_field<'f>(fields: &[&'f str], key: &str) -> Result<&'f str, String> {
    (fields.iter().find(|f| **f == key))
        .or_else(|| fields.iter().find(|f| f.eq_ignore_ascii_case(key)))
        .copied()
        .ok_or_else(|| format!("unknown field {key:?}"))
}

/// The first YAML or JSON document of `input`.
pub(crate) fn first_document(input: &[u8]) -> Result<Value, String> {
    let first = serde_yaml::Deserializer::from_slice(input)
        .next()
        .ok_or("the input is empty")?;
    Value::deserialize(first).map_err(|e| e.to_string())
}

fn render_basic(
    input: &[u8],
    render_bundle: &mut RenderBundle,
) -> Result<DeclarativeConfig, Error> {
    let invalid = |message: String| Error::Invalid(message);
    let template =
        first_document(input).map_err(|e| invalid(format!("decoding template schema: {e}")))?;
    let map = template
        .as_object()
        .ok_or_else(|| invalid("unmarshalling template: the template is not an object".into()))?;
    let field = |name: &str| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    };
    let schema = field("schema").and_then(Value::as_str).unwrap_or_default();
    if schema != BASIC_SCHEMA {
        return Err(invalid(format!(
            "template has unknown schema ({schema:?}), should be {BASIC_SCHEMA:?}"
        )));
    }
    let entries = match field("entries") {
        None | Some(Value::Null) => &Vec::new(),
        Some(Value::Array(entries)) => entries,
        Some(_) => {
            return Err(invalid(
                "unmarshalling template: json: cannot unmarshal entries: not an array".into(),
            ));
        }
    };
    let mut dc = DeclarativeConfig::default();
    for doc in load_entries(entries).map_err(invalid)? {
        match doc {
            Document::Bundle(b) => {
                // Only stubs: a fully rendered bundle would hide what its image now holds.
                let stub = !b.image.is_empty()
                    && b.package.is_empty()
                    && b.properties.is_empty()
                    && b.related_images.is_empty();
                if !stub {
                    return Err(invalid(
                        "unexpected fields present in basic template bundle".into(),
                    ));
                }
                dc.bundles
                    .extend(render_bundle(&b.image).map_err(Error::Bundle)?);
            }
            other => dc.push(other),
        }
    }
    Ok(dc)
}

/// A template's `entries` as FBC documents, each read as opm reads one FBC object (its
/// canonical text, so keys match as they would in a file). No model validation.
pub(crate) fn load_entries(entries: &[Value]) -> Result<Vec<Document>, String> {
    let mut docs = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let text = canonical(entry);
        if entry
            .get("schema")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            // opm prints the object as its encoder wrote it, newline included.
            return Err(format!("object '{text}\n' is missing root schema field"));
        }
        // Named by its place, so that a validation problem points at the entry.
        let parsed =
            parse_documents(&format!("entries[{i}]"), text.as_bytes()).map_err(|errors| {
                errors
                    .into_iter()
                    .map(|e| e.message)
                    .collect::<Vec<_>>()
                    .join("\n")
            })?;
        docs.extend(parsed);
    }
    Ok(docs)
}

/// An FBC stream (JSON or YAML documents) as a template of `kind`, printed as opm's
/// `convert-template` prints it: every document kept as it is (keys sorted, as opm's reader
/// re-encodes them); for `basic`, bundles reduced to their image; for `substitutes`, no
/// substitutions yet. `yaml` picks the output form.
pub fn convert(kind: Kind, input: &[u8], yaml: bool) -> Result<String, Error> {
    let converting = |e: String| Error::Invalid(format!("converting: {e}"));
    let docs = fbc_stream(input).map_err(converting)?;
    // The template as compact JSON with opm's field order (schema, entries[, substitutions]).
    let mut text = String::from(r#"{"schema":"#);
    write_string(kind.schema(), &mut text);
    text.push_str(r#","entries":"#);
    if docs.is_empty() {
        // opm's entries are a nil list then, which its encoder prints as null.
        text.push_str("null");
    } else {
        text.push('[');
        for (i, doc) in docs.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            match (kind, doc.get("schema").and_then(Value::as_str)) {
                (Kind::Basic, Some(SCHEMA_BUNDLE)) => {
                    bundle_stub(doc, &mut text).map_err(converting)?
                }
                _ => text.push_str(&canonical(doc)),
            }
        }
        text.push(']');
    }
    match kind {
        Kind::Basic => {}
        Kind::Substitutes => text.push_str(r#","substitutions":[]"#),
        Kind::Semver => {
            return Err(Error::Invalid(
                "a catalog cannot be converted to a semver template".into(),
            ));
        }
    }
    text.push('}');
    if yaml {
        // opm turns its JSON into YAML through a generic map: keys sorted at every level.
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text) else {
            return Err(Error::Encode("the template is not a JSON object".into()));
        };
        return Ok(format!("---\n{}\n", catalog::write::yaml_document(&map)));
    }
    // opm marshals the template with Go's default encoder, which escapes <, > and & (also
    // inside the documents it had kept unescaped), then indents it by four spaces.
    Ok(format!("{}\n", indent(&escape_html(&text))))
}

/// A bundle as a basic template lists it: `{"schema":"olm.bundle","image":…}`, the fields
/// opm keeps (the image even when empty: its field has no omitempty).
fn bundle_stub(doc: &Value, out: &mut String) -> Result<(), String> {
    let field = |name: &str| -> Option<&Value> {
        let map = doc.as_object()?;
        map.get(name).or_else(|| {
            map.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        })
    };
    let image = match field("image") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(format!(
                "parse bundle: json: cannot unmarshal {} into Go struct field Bundle.image of type string",
                catalog::kind_name(other)
            ));
        }
    };
    out.push_str(r#"{"schema":"olm.bundle","image":"#);
    write_string(image, out);
    out.push('}');
    Ok(())
}

/// The documents of a JSON stream (input starting with `{`) or a YAML stream. Each must be
/// an object; opm's reader asks nothing more of it (not even a schema).
fn fbc_stream(input: &[u8]) -> Result<Vec<Value>, String> {
    let docs: Vec<Value> = if input.trim_ascii_start().starts_with(b"{") {
        serde_json::Deserializer::from_slice(input)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?
    } else {
        serde_yaml::Deserializer::from_slice(input)
            .map(Value::deserialize)
            .filter(|d| !matches!(d, Ok(Value::Null)))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?
    };
    for d in &docs {
        if !d.is_object() {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                catalog::kind_name(d)
            ));
        }
    }
    Ok(docs)
}
