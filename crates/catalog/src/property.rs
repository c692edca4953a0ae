//! Typed properties (catalog-formats.md §B): decoding the value of each known property type
//! with upstream's struct shapes and errors, and decoding `olm.bundle.object` manifests.
use super::decode::{LoadError, yaml_to_json};
use super::fields::{At, check_std_base64, for_each_field, value_type_error};
use super::json::canonical;
use super::types::{Bundle, Gvk, Property};
use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value};

pub const PACKAGE: &str = "olm.package";
pub const PACKAGE_REQUIRED: &str = "olm.package.required";
pub const GVK: &str = "olm.gvk";
pub const GVK_REQUIRED: &str = "olm.gvk.required";
pub(crate) const CHANNEL: &str = "olm.channel";
pub(crate) const SKIPS: &str = "olm.skips";
pub(crate) const SKIP_RANGE: &str = "olm.skipRange";
pub const BUNDLE_OBJECT: &str = "olm.bundle.object";
pub const CSV_METADATA: &str = "olm.csv.metadata";

/// A property value decoded according to its type.
#[derive(Clone, Debug, PartialEq)]
pub enum Typed {
    Package {
        package_name: String,
        version: String,
        release: String,
    },
    PackageRequired {
        package_name: String,
        version_range: String,
    },
    Gvk(Gvk),
    GvkRequired(Gvk),
    /// Channel-scoped internal property.
    Channel {
        channel_name: String,
    },
    /// Legacy graph properties, plain strings.
    Skips(String),
    SkipRange(String),
    /// A manifest, standard base64 of JSON or YAML (see [`decode_bundle_object`]).
    BundleObject {
        data: String,
    },
    /// The CSV fields of §B as a JSON object with upstream's key names; members that are
    /// absent, null or unknown are left out.
    CsvMetadata(Value),
    /// Any other type: kept verbatim, never interpreted.
    Other,
}

/// Decodes `p.value` according to `p.kind`. Errors are upstream's message without the
/// `parse property[i] of type "t": ` prefix, which the caller adds with the index.
pub fn parse(p: &Property) -> Result<Typed, String> {
    if p.value.is_empty() {
        // A property without a value: Go's decoder reports the empty input like this.
        return Err("unexpected end of JSON input".to_owned());
    }
    let decode = |go_type: &str| -> Result<Option<Map<String, Value>>, String> {
        match serde_json::from_str::<Value>(&p.value).map_err(|e| e.to_string())? {
            Value::Object(map) => Ok(Some(map)),
            Value::Null => Ok(None),
            other => Err(value_type_error(&other, go_type)),
        }
    };
    Ok(match p.kind.as_str() {
        PACKAGE => {
            let [package_name, version, release] = strings(
                decode("property.Package")?,
                "Package",
                ["packageName", "version", "release"],
            )?;
            Typed::Package {
                package_name,
                version,
                release,
            }
        }
        PACKAGE_REQUIRED => {
            let [package_name, version_range] = strings(
                decode("property.PackageRequired")?,
                "PackageRequired",
                ["packageName", "versionRange"],
            )?;
            Typed::PackageRequired {
                package_name,
                version_range,
            }
        }
        GVK => Typed::Gvk(gvk(decode("property.GVK")?, "GVK")?),
        GVK_REQUIRED => Typed::GvkRequired(gvk(decode("property.GVKRequired")?, "GVKRequired")?),
        CHANNEL => {
            let [channel_name] = strings(decode("property.Channel")?, "Channel", ["channelName"])?;
            Typed::Channel { channel_name }
        }
        SKIPS => Typed::Skips(plain_string(&p.value, "property.Skips")?),
        SKIP_RANGE => Typed::SkipRange(plain_string(&p.value, "property.SkipRange")?),
        BUNDLE_OBJECT => {
            // The canonical text of the usual value: valid base64 never needs escaping, so
            // it can be taken as it is, without parsing megabytes of JSON string.
            let fast = p
                .value
                .strip_prefix(r#"{"data":""#)
                .and_then(|v| v.strip_suffix(r#""}"#));
            if let Some(data) = fast
                && check_std_base64(data).is_ok()
            {
                return Ok(Typed::BundleObject {
                    data: data.to_owned(),
                });
            }
            let [data] = strings(decode("property.BundleObject")?, "BundleObject", ["data"])?;
            // Go decodes `data` into bytes, so it has to be valid base64 already here.
            check_std_base64(&data)?;
            Typed::BundleObject { data }
        }
        CSV_METADATA => Typed::CsvMetadata(csv_metadata(decode("property.CSVMetadata")?)?),
        _ => Typed::Other,
    })
}

/// Decodes a struct whose fields are all strings.
/// The value of `olm.gvk` (Go's `GVK`) or `olm.gvk.required` (`GVKRequired`).
fn gvk(map: Option<Map<String, Value>>, strukt: &str) -> Result<Gvk, String> {
    let [group, kind, version] = strings(map, strukt, ["group", "kind", "version"])?;
    Ok(Gvk {
        group,
        version,
        kind,
    })
}

fn strings<const N: usize>(
    map: Option<Map<String, Value>>,
    strukt: &str,
    fields: [&str; N],
) -> Result<[String; N], String> {
    let mut out: [String; N] = std::array::from_fn(|_| String::new());
    if let Some(map) = map {
        for_each_field(map, &fields, |i, v| {
            out[i] = At {
                strukt,
                path: fields[i],
            }
            .string(v)?;
            Ok(())
        })?;
    }
    Ok(out)
}

fn plain_string(text: &str, go_type: &str) -> Result<String, String> {
    match serde_json::from_str::<Value>(text).map_err(|e| e.to_string())? {
        Value::String(s) => Ok(s),
        Value::Null => Ok(String::new()),
        other => Err(value_type_error(&other, go_type)),
    }
}

/// The members of `olm.csv.metadata` and the shape each must have.
const CSV_FIELDS: [(&str, Shape); 14] = [
    ("annotations", Shape::StringMap),
    (
        "apiServiceDefinitions",
        Shape::Object("v1alpha1.APIServiceDefinitions"),
    ),
    (
        "crdDescriptions",
        Shape::Object("v1alpha1.CustomResourceDefinitions"),
    ),
    ("description", Shape::String),
    ("displayName", Shape::String),
    (
        "installModes",
        Shape::Objects("[]v1alpha1.InstallMode", "v1alpha1.InstallMode"),
    ),
    ("keywords", Shape::Strings),
    ("labels", Shape::StringMap),
    (
        "links",
        Shape::Objects("[]v1alpha1.AppLink", "v1alpha1.AppLink"),
    ),
    (
        "maintainers",
        Shape::Objects("[]v1alpha1.Maintainer", "v1alpha1.Maintainer"),
    ),
    ("maturity", Shape::String),
    ("minKubeVersion", Shape::String),
    (
        "nativeAPIs",
        Shape::Objects("[]v1.GroupVersionKind", "v1.GroupVersionKind"),
    ),
    ("provider", Shape::Object("v1alpha1.AppLink")),
];

#[derive(Clone, Copy)]
enum Shape {
    String,
    Strings,
    StringMap,
    Object(&'static str),
    Objects(&'static str, &'static str),
}

fn csv_metadata(map: Option<Map<String, Value>>) -> Result<Value, String> {
    let mut out = Map::new();
    let names: Vec<&str> = CSV_FIELDS.iter().map(|(name, _)| *name).collect();
    for_each_field(map.unwrap_or_default(), &names, |i, v| {
        let (name, shape) = CSV_FIELDS[i];
        let at = At {
            strukt: "CSVMetadata",
            path: name,
        };
        let value = match shape {
            Shape::String => Value::String(at.string(v)?),
            Shape::Strings => Value::Array(at.strings(v)?.into_iter().map(Value::String).collect()),
            Shape::StringMap => at.string_map(v)?.map(Value::Object).unwrap_or(Value::Null),
            Shape::Object(go_type) => at
                .object(v, go_type)?
                .map(Value::Object)
                .unwrap_or(Value::Null),
            Shape::Objects(go_type, item_type) => {
                let items = at.array(v, go_type)?;
                items
                    .iter()
                    .try_for_each(|item| at.check_object(item, item_type))?;
                Value::Array(items)
            }
        };
        if value.is_null() {
            out.remove(name);
        } else {
            out.insert(name.to_owned(), value);
        }
        Ok(())
    })?;
    Ok(Value::Object(out))
}

/// Go's `base64.StdEncoding` decoder: padding required, unused trailing bits accepted.
const GO_STD_BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// The manifest text of an `olm.bundle.object` (registry-api.md §4.1 `object`): JSON data is
/// returned byte-for-byte; anything else is read as YAML and returned as compact JSON with
/// sorted keys.
pub fn decode_bundle_object(data_b64: &str) -> Result<String, String> {
    let bytes = if check_std_base64(data_b64)? {
        let clean: String = data_b64
            .chars()
            .filter(|c| *c != '\r' && *c != '\n')
            .collect();
        GO_STD_BASE64.decode(clean)
    } else {
        GO_STD_BASE64.decode(data_b64)
    }
    .map_err(|e| format!("illegal base64 data: {e}"))?;
    if bytes.trim_ascii_start().starts_with(b"{") {
        return String::from_utf8(bytes).map_err(|e| format!("manifest is not valid UTF-8: {e}"));
    }
    let value =
        yaml_to_json(&bytes).map_err(|e| format!("manifest is neither JSON nor YAML: {e}"))?;
    Ok(canonical(&value))
}

/// The manifests of a bundle's `olm.bundle.object` properties, decoded, in property order.
pub(crate) fn bundle_objects(bundle: &Bundle) -> Result<Vec<String>, LoadError> {
    bundle
        .properties
        .iter()
        .filter(|p| p.kind == BUNDLE_OBJECT)
        .map(|p| {
            parse(p)
                .and_then(|typed| match typed {
                    Typed::BundleObject { data } => decode_bundle_object(&data),
                    _ => Err("not a bundle object".to_owned()),
                })
                .map_err(|e| LoadError {
                    file: bundle.origin.file.to_string(),
                    line: bundle.origin.line,
                    message: format!(
                        "package {:?} bundle {:?}: property {BUNDLE_OBJECT:?}: {e}",
                        bundle.package, bundle.name
                    ),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prop(kind: &str, value: &str) -> Property {
        Property {
            kind: kind.into(),
            value: value.into(),
        }
    }

    #[test]
    fn known_types_decode_case_insensitively_and_ignore_unknown_fields() {
        assert_eq!(
            parse(&prop(
                PACKAGE,
                r#"{"PackageName":"foo","version":"1.0.0","extra":1}"#
            )),
            Ok(Typed::Package {
                package_name: "foo".into(),
                version: "1.0.0".into(),
                release: String::new()
            })
        );
        assert_eq!(
            parse(&prop(
                PACKAGE,
                r#"{"packageName":"foo","release":"2","version":"1.0.0"}"#
            )),
            Ok(Typed::Package {
                package_name: "foo".into(),
                version: "1.0.0".into(),
                release: "2".into()
            })
        );
        assert_eq!(
            parse(&prop(GVK, r#"{"group":"g","kind":"K","version":"v1"}"#)),
            Ok(Typed::Gvk(Gvk {
                group: "g".into(),
                version: "v1".into(),
                kind: "K".into(),
            }))
        );
        assert_eq!(
            parse(&prop(
                GVK_REQUIRED,
                r#"{"group":"g","kind":"K","version":"v1"}"#
            )),
            Ok(Typed::GvkRequired(Gvk {
                group: "g".into(),
                version: "v1".into(),
                kind: "K".into(),
            }))
        );
        assert_eq!(
            parse(&prop(
                PACKAGE_REQUIRED,
                r#"{"packageName":"bar","versionRange":"<1.0.0"}"#
            )),
            Ok(Typed::PackageRequired {
                package_name: "bar".into(),
                version_range: "<1.0.0".into()
            })
        );
        assert_eq!(
            parse(&prop(CHANNEL, r#"{"channelName":"alpha","priority":1}"#)),
            Ok(Typed::Channel {
                channel_name: "alpha".into()
            })
        );
        assert_eq!(
            parse(&prop(SKIPS, r#""foo.v1""#)),
            Ok(Typed::Skips("foo.v1".into()))
        );
        assert_eq!(
            parse(&prop(SKIP_RANGE, r#""<1.0.0""#)),
            Ok(Typed::SkipRange("<1.0.0".into()))
        );
        assert_eq!(
            parse(&prop("olm.maxOpenShiftVersion", "4.1")),
            Ok(Typed::Other)
        );
        assert_eq!(parse(&prop(GVK, "null")), Ok(Typed::Gvk(Gvk::default())));
    }

    #[test]
    fn wrong_shapes_are_errors() {
        assert_eq!(
            parse(&prop(GVK, r#""foo""#)),
            Err("json: cannot unmarshal string into Go value of type property.GVK".into())
        );
        assert_eq!(
            parse(&prop(GVK, r#"{"group":1}"#)),
            Err(
                "json: cannot unmarshal number into Go struct field GVK.group of type string"
                    .into()
            )
        );
        assert_eq!(
            parse(&prop(PACKAGE, "[]")),
            Err("json: cannot unmarshal array into Go value of type property.Package".into())
        );
        assert_eq!(
            parse(&prop(SKIPS, "{}")),
            Err("json: cannot unmarshal object into Go value of type property.Skips".into())
        );
        assert_eq!(
            parse(&prop(PACKAGE, "")),
            Err("unexpected end of JSON input".into())
        );
        assert_eq!(
            parse(&prop("custom", "")),
            Err("unexpected end of JSON input".into())
        );
        assert_eq!(
            parse(&prop(BUNDLE_OBJECT, r#"{"data":"not base64!"}"#)),
            Err("illegal base64 data at input byte 3".into())
        );
        assert_eq!(
            parse(&prop(CSV_METADATA, r#"{"annotations":{"a":true}}"#)),
            Err("json: cannot unmarshal bool into Go struct field CSVMetadata.annotations of type string".into())
        );
        assert_eq!(
            parse(&prop(CSV_METADATA, r#"{"keywords":"a"}"#)),
            Err("json: cannot unmarshal string into Go struct field CSVMetadata.keywords of type []string".into())
        );
        assert_eq!(
            parse(&prop(CSV_METADATA, r#"{"links":["x"]}"#)),
            Err("json: cannot unmarshal string into Go struct field CSVMetadata.links of type v1alpha1.AppLink".into())
        );
    }

    #[test]
    fn csv_metadata_is_normalised() {
        let typed = parse(&prop(
            CSV_METADATA,
            r#"{"DisplayName":"Foo","annotations":{"a":"b"},"keywords":["k"],"provider":{"name":"p"},"unknown":1,"labels":null}"#,
        ));
        assert_eq!(
            typed,
            Ok(Typed::CsvMetadata(
                json!({"annotations":{"a":"b"},"displayName":"Foo","keywords":["k"],"provider":{"name":"p"}})
            ))
        );
    }

    #[test]
    fn bundle_objects_decode_json_verbatim_and_yaml_to_sorted_json() {
        use base64::engine::general_purpose::STANDARD;
        let json_text = " {\"kind\": \"ClusterServiceVersion\",  \"a\":\"\\u003c\"}";
        assert_eq!(
            decode_bundle_object(&STANDARD.encode(json_text)),
            Ok(json_text.to_owned())
        );
        let yaml = "kind: CustomResourceDefinition\napiVersion: v1\nspec:\n  b: 1.0\n  a: '<x>'\n";
        assert_eq!(
            decode_bundle_object(&STANDARD.encode(yaml)),
            Ok(
                r#"{"apiVersion":"v1","kind":"CustomResourceDefinition","spec":{"a":"<x>","b":1}}"#
                    .to_owned()
            )
        );
        let wrapped = STANDARD.encode(json_text);
        let wrapped = format!("{}\n{}", &wrapped[..8], &wrapped[8..]);
        assert_eq!(decode_bundle_object(&wrapped), Ok(json_text.to_owned()));
        // Unused trailing bits are accepted, as Go's non-strict decoder does.
        assert_eq!(decode_bundle_object("e30="), Ok("{}".to_owned()));
        assert_eq!(decode_bundle_object("e31="), Ok("{}".to_owned()));
        assert!(decode_bundle_object("e30").is_err());
        assert!(decode_bundle_object(&STANDARD.encode("a: [")).is_err());
    }
}
