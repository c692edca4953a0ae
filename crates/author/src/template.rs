//! Catalog templates (catalog-templates.md §1–2): choosing the template by its schema, the
//! basic template, and turning an FBC back into a basic template.
use super::error::Error;
use super::semver_template;
use catalog::decode::parse_documents;
use catalog::json::canonical;
use catalog::{Bundle, DeclarativeConfig, Document, SCHEMA_BUNDLE};
use serde::Serialize;
use serde::de::Deserialize;
use serde_json::Value;

pub(crate) const BASIC_SCHEMA: &str = "olm.template.basic";

/// Renders one bundle reference into the bundles it holds.
pub(crate) type RenderBundle<'a> = dyn FnMut(&str) -> Result<Vec<Bundle>, String> + 'a;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Basic,
    Semver,
}

impl Kind {
    pub const NAMES: [&str; 2] = ["basic", "semver"];

    /// A template type as the command line names it: the last dot-separated part of its schema.
    pub fn from_type(name: &str) -> Option<Kind> {
        match name {
            "basic" => Some(Kind::Basic),
            "semver" => Some(Kind::Semver),
            _ => None,
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
fn first_document(input: &[u8]) -> Result<Value, String> {
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
    for entry in entries {
        if entry
            .get("schema")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(invalid(format!(
                "object '{}\n' is missing root schema field",
                canonical(entry)
            )));
        }
        let text = canonical(entry);
        let docs = parse_documents("template entry", text.as_bytes()).map_err(|errors| {
            invalid(
                errors
                    .into_iter()
                    .map(|e| e.message)
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })?;
        for doc in docs {
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
    }
    Ok(dc)
}

/// A bundle reduced to what a basic template lists of it, in upstream's field order.
#[derive(Serialize)]
struct BundleStub<'a> {
    schema: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    image: &'a str,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Bundle(BundleStub<'a>),
    Other(&'a Value),
}

#[derive(Serialize)]
struct BasicTemplate<'a> {
    schema: &'a str,
    entries: Vec<Entry<'a>>,
}

/// An FBC stream (JSON or YAML documents) as a basic template: every document kept as it
/// is, bundles reduced to their image. `yaml` picks the output form.
pub fn convert_to_basic(input: &[u8], yaml: bool) -> Result<String, Error> {
    let docs = fbc_stream(input).map_err(Error::Invalid)?;
    let entries = docs
        .iter()
        .map(|d| match d.get("schema").and_then(Value::as_str) {
            Some(SCHEMA_BUNDLE) => Entry::Bundle(BundleStub {
                schema: SCHEMA_BUNDLE,
                image: d.get("image").and_then(Value::as_str).unwrap_or_default(),
            }),
            _ => Entry::Other(d),
        })
        .collect();
    let template = BasicTemplate {
        schema: BASIC_SCHEMA,
        entries,
    };
    if yaml {
        let text = serde_yaml::to_string(&template).map_err(|e| Error::Encode(e.to_string()))?;
        return Ok(format!("---\n{text}\n"));
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        serde_json::ser::PrettyFormatter::with_indent(b"    "),
    );
    template
        .serialize(&mut ser)
        .map_err(|e| Error::Encode(e.to_string()))?;
    out.push(b'\n');
    String::from_utf8(out).map_err(|e| Error::Encode(e.to_string()))
}

/// The documents of a JSON stream (input starting with `{`) or a YAML stream, each checked
/// to have a schema.
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
        if d.get("schema")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!(
                "object '{}' is missing root schema field",
                canonical(d)
            ));
        }
    }
    Ok(docs)
}
