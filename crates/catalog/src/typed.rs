//! Turning one decoded document (a generic JSON value) into a [`Document`] (catalog-formats.md
//! §A.2, §A.3): the case-insensitive `schema`/`package`/`name` keys, then Go-style struct
//! decoding of the four known schemas. Everything else is kept whole as [`Meta`].
use super::fields::{At, check_std_base64, fold_eq, for_each_field, kind_name};
use super::json::{canonical, write_canonical};
use super::types::*;
use serde_json::{Map, Value};

/// Longest document text quoted in a "missing schema" message; documents can be megabytes.
const QUOTE_LIMIT: usize = 256;

/// Decodes one document. The error is the message only; the caller adds file and line.
pub(crate) fn decode_document(value: Value, origin: Origin) -> Result<Document, String> {
    let map = match value {
        Value::Object(map) => map,
        // A document that is only blank lines or comments decodes to null; upstream reads it
        // as an empty object, which then has no schema.
        Value::Null => Map::new(),
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                kind_name(&other)
            ));
        }
    };
    let schema = special_key(&map, "schema")?;
    let package = special_key(&map, "package")?;
    let name = special_key(&map, "name")?;
    if schema.is_empty() {
        return Err(format!(
            "object '{}' is missing root schema field",
            quote(&map)
        ));
    }
    match schema.as_str() {
        SCHEMA_PACKAGE => package_doc(map, origin)
            .map(Document::Package)
            .map_err(|e| format!("parse package: {e}")),
        SCHEMA_CHANNEL => channel_doc(map, origin)
            .map(Document::Channel)
            .map_err(|e| format!("parse channel: {e}")),
        SCHEMA_BUNDLE => bundle_doc(map, origin)
            .map(Document::Bundle)
            .map_err(|e| format!("parse bundle: {e}")),
        SCHEMA_DEPRECATIONS => deprecations_doc(map, origin)
            .map(Document::Deprecations)
            .map_err(|e| format!("parse deprecations: {e}")),
        _ => Ok(Document::Meta(Meta {
            schema,
            package,
            name,
            blob: Value::Object(map),
            origin,
        })),
    }
}

/// The value of `schema`, `package` or `name`, found case-insensitively; two spellings of the
/// same key are ambiguous and rejected.
/// The `schema`, `package` or `name` of a document, found as the decoder finds it (Go's
/// case folding); empty when absent or unusable (the decoder refuses such a document).
pub fn special_field(doc: &Value, key: &str) -> String {
    doc.as_object()
        .and_then(|map| special_key(map, key).ok())
        .unwrap_or_default()
}

fn special_key(map: &Map<String, Value>, key: &str) -> Result<String, String> {
    let mut found = map.iter().filter(|(k, _)| fold_eq(k, key));
    let Some((first_key, value)) = found.next() else {
        return Ok(String::new());
    };
    let others: Vec<&str> = found.map(|(k, _)| k.as_str()).collect();
    if !others.is_empty() {
        // The map is sorted, so the list is too, as upstream prints it.
        let all: Vec<&str> = std::iter::once(first_key.as_str()).chain(others).collect();
        return Err(format!(
            "duplicate keys for key {key:?}: [{}]",
            all.join(" ")
        ));
    }
    match value {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!(
            "expected value for key {key:?} to be a string, got {}",
            canonical(other)
        )),
    }
}

fn quote(map: &Map<String, Value>) -> String {
    let mut text = String::new();
    write_canonical(&Value::Object(map.clone()), &mut text);
    if text.len() > QUOTE_LIMIT {
        let mut end = QUOTE_LIMIT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

fn package_doc(map: Map<String, Value>, origin: Origin) -> Result<Package, String> {
    let mut p = Package {
        origin,
        ..Package::default()
    };
    let fields = [
        "name",
        "defaultChannel",
        "icon",
        "description",
        "properties",
    ];
    for_each_field(map, &fields, |i, v| {
        let at = At {
            strukt: "Package",
            path: fields[i],
        };
        match i {
            0 => p.name = at.string(v)?,
            1 => p.default_channel = at.string(v)?,
            2 => p.icon = icon(at, v)?,
            3 => p.description = at.string(v)?,
            _ => p.properties = properties(at, v)?,
        }
        Ok(())
    })?;
    Ok(p)
}

fn icon(at: At, v: Value) -> Result<Option<Icon>, String> {
    let Some(map) = at.object(v, "declcfg.Icon")? else {
        return Ok(None);
    };
    let mut icon = Icon::default();
    let fields = ["base64data", "mediatype"];
    for_each_field(map, &fields, |i, v| {
        let at = At {
            strukt: "Icon",
            path: if i == 0 {
                "icon.base64data"
            } else {
                "icon.mediatype"
            },
        };
        if i == 0 {
            // Go decodes this field into bytes, so it must be valid base64; line breaks are
            // dropped as Go's decoder ignores them.
            let mut data = at.string(v)?;
            check_std_base64(&data)?;
            data.retain(|c| c != '\r' && c != '\n');
            icon.base64data = data;
        } else {
            icon.mediatype = at.string(v)?;
        }
        Ok(())
    })?;
    Ok(Some(icon))
}

/// A `properties` array. Values become canonical JSON text; a property without a `value`
/// keeps an empty text, which property parsing reports.
fn properties(at: At, v: Value) -> Result<Vec<Property>, String> {
    let path = at.path;
    at.array(v, "[]property.Property")?
        .into_iter()
        .map(|item| {
            let mut p = Property {
                kind: String::new(),
                value: String::new(),
            };
            let Some(map) = At {
                strukt: at.strukt,
                path,
            }
            .object(item, "property.Property")?
            else {
                return Ok(p);
            };
            for_each_field(map, &["type", "value"], |i, v| {
                if i == 0 {
                    p.kind = At {
                        strukt: "Property",
                        path: &format!("{path}.type"),
                    }
                    .string(v)?;
                } else {
                    p.value.clear();
                    write_canonical(&v, &mut p.value);
                }
                Ok(())
            })?;
            Ok(p)
        })
        .collect()
}

fn channel_doc(map: Map<String, Value>, origin: Origin) -> Result<Channel, String> {
    let mut c = Channel {
        origin,
        ..Channel::default()
    };
    let fields = ["package", "name", "entries", "properties"];
    for_each_field(map, &fields, |i, v| {
        let at = At {
            strukt: "Channel",
            path: fields[i],
        };
        match i {
            0 => c.package = at.string(v)?,
            1 => c.name = at.string(v)?,
            2 => {
                c.entries = at
                    .array(v, "[]declcfg.ChannelEntry")?
                    .into_iter()
                    .map(|item| channel_entry(at, item))
                    .collect::<Result<_, _>>()?
            }
            _ => c.properties = properties(at, v)?,
        }
        Ok(())
    })?;
    Ok(c)
}

fn channel_entry(at: At, v: Value) -> Result<ChannelEntry, String> {
    let mut e = ChannelEntry::default();
    let Some(map) = at.object(v, "declcfg.ChannelEntry")? else {
        return Ok(e);
    };
    let fields = ["name", "replaces", "skips", "skipRange"];
    let paths = [
        "entries.name",
        "entries.replaces",
        "entries.skips",
        "entries.skipRange",
    ];
    for_each_field(map, &fields, |i, v| {
        let at = At {
            strukt: "ChannelEntry",
            path: paths[i],
        };
        match i {
            0 => e.name = at.string(v)?,
            1 => e.replaces = at.string(v)?,
            2 => e.skips = at.strings(v)?,
            _ => e.skip_range = at.string(v)?,
        }
        Ok(())
    })?;
    Ok(e)
}

fn bundle_doc(map: Map<String, Value>, origin: Origin) -> Result<Bundle, String> {
    let mut b = Bundle {
        origin,
        ..Bundle::default()
    };
    let fields = ["package", "name", "image", "properties", "relatedImages"];
    for_each_field(map, &fields, |i, v| {
        let at = At {
            strukt: "Bundle",
            path: fields[i],
        };
        match i {
            0 => b.package = at.string(v)?,
            1 => b.name = at.string(v)?,
            2 => b.image = at.string(v)?,
            3 => b.properties = properties(at, v)?,
            _ => {
                b.related_images = at
                    .array(v, "[]declcfg.RelatedImage")?
                    .into_iter()
                    .map(|item| related_image(at, item))
                    .collect::<Result<_, _>>()?
            }
        }
        Ok(())
    })?;
    Ok(b)
}

fn related_image(at: At, v: Value) -> Result<RelatedImage, String> {
    let mut r = RelatedImage::default();
    let Some(map) = at.object(v, "declcfg.RelatedImage")? else {
        return Ok(r);
    };
    for_each_field(map, &["name", "image"], |i, v| {
        let path = if i == 0 {
            "relatedImages.name"
        } else {
            "relatedImages.image"
        };
        let s = At {
            strukt: "RelatedImage",
            path,
        }
        .string(v)?;
        if i == 0 {
            r.name = s;
        } else {
            r.image = s;
        }
        Ok(())
    })?;
    Ok(r)
}

fn deprecations_doc(map: Map<String, Value>, origin: Origin) -> Result<Deprecations, String> {
    let mut d = Deprecations {
        origin,
        ..Deprecations::default()
    };
    let fields = ["package", "entries"];
    for_each_field(map, &fields, |i, v| {
        let at = At {
            strukt: "Deprecation",
            path: fields[i],
        };
        if i == 0 {
            d.package = at.string(v)?;
        } else {
            d.entries = at
                .array(v, "[]declcfg.DeprecationEntry")?
                .into_iter()
                .map(|item| deprecation_entry(at, item))
                .collect::<Result<_, _>>()?;
        }
        Ok(())
    })?;
    Ok(d)
}

fn deprecation_entry(at: At, v: Value) -> Result<DeprecationEntry, String> {
    let mut e = DeprecationEntry::default();
    let Some(map) = at.object(v, "declcfg.DeprecationEntry")? else {
        return Ok(e);
    };
    for_each_field(map, &["reference", "message"], |i, v| {
        if i == 1 {
            e.message = At {
                strukt: "DeprecationEntry",
                path: "entries.message",
            }
            .string(v)?;
            return Ok(());
        }
        let at = At {
            strukt: "DeprecationEntry",
            path: "entries.reference",
        };
        let Some(map) = at.object(v, "declcfg.PackageScopedReference")? else {
            return Ok(());
        };
        for_each_field(map, &["schema", "name"], |j, v| {
            let path = if j == 0 {
                "entries.reference.schema"
            } else {
                "entries.reference.name"
            };
            let s = At {
                strukt: "PackageScopedReference",
                path,
            }
            .string(v)?;
            if j == 0 {
                e.reference.schema = s;
            } else {
                e.reference.name = s;
            }
            Ok(())
        })
    })?;
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode(v: Value) -> Result<Document, String> {
        decode_document(v, Origin::default())
    }

    #[test]
    fn special_keys_are_case_insensitive_and_unique() {
        let doc =
            decode(json!({"Schema": "olm.package", "NAME": "foo", "DefaultChannel": "alpha"}));
        match doc {
            Ok(Document::Package(p)) => {
                assert_eq!(p.name, "foo");
                assert_eq!(p.default_channel, "alpha");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            decode(json!({"schema": "olm.package", "Schema": "olm.bundle"})),
            Err(r#"duplicate keys for key "schema": [Schema schema]"#.into())
        );
        assert_eq!(
            decode(json!({"schema": "olm.package", "name": 1})),
            Err(r#"expected value for key "name" to be a string, got 1"#.into())
        );
        assert_eq!(
            decode(json!({"schema": "x", "package": {"a": true}})),
            Err(r#"expected value for key "package" to be a string, got {"a":true}"#.into())
        );
    }

    #[test]
    fn missing_or_empty_schema_and_non_objects_are_rejected() {
        assert_eq!(
            decode(json!({"name": "foo", "b": "<x>"})),
            Err(r#"object '{"b":"<x>","name":"foo"}' is missing root schema field"#.into())
        );
        assert_eq!(
            decode(json!({"schema": ""})),
            Err(r#"object '{"schema":""}' is missing root schema field"#.into())
        );
        assert_eq!(
            decode(Value::Null),
            Err("object '{}' is missing root schema field".into())
        );
        assert_eq!(
            decode(json!([1, 2])),
            Err(
                "json: cannot unmarshal array into Go value of type map[string]interface {}".into()
            )
        );
        assert_eq!(
            decode(json!("olm.package")),
            Err(
                "json: cannot unmarshal string into Go value of type map[string]interface {}"
                    .into()
            )
        );
        let long = "x".repeat(1000);
        let err = decode(json!({ "name": long })).expect_err("no schema");
        assert!(
            err.len() < 400 && err.ends_with("...' is missing root schema field"),
            "{err}"
        );
    }

    #[test]
    fn typed_fields_decode_with_go_semantics() {
        let doc = decode(json!({
            "schema": "olm.bundle", "package": "foo", "name": "foo.v1", "IMAGE": "quay.io/foo:v1",
            "unknown": [1, 2],
            "properties": [
                {"type": "olm.package", "value": {"version": "1.0.0", "packageName": "foo"}},
                {"type": "olm.maxOpenShiftVersion", "value": 4.10},
                {"type": "no.value"},
                null
            ],
            "relatedImages": [{"name": "op", "image": "quay.io/op"}, {"image": "quay.io/x", "name": null}]
        }))
        .expect("valid bundle");
        let Document::Bundle(b) = doc else {
            panic!("not a bundle")
        };
        assert_eq!(b.image, "quay.io/foo:v1");
        assert_eq!(
            b.properties,
            vec![
                Property {
                    kind: "olm.package".into(),
                    value: r#"{"packageName":"foo","version":"1.0.0"}"#.into()
                },
                Property {
                    kind: "olm.maxOpenShiftVersion".into(),
                    value: "4.1".into()
                },
                Property {
                    kind: "no.value".into(),
                    value: String::new()
                },
                Property {
                    kind: String::new(),
                    value: String::new()
                },
            ]
        );
        assert_eq!(
            b.related_images,
            vec![
                RelatedImage {
                    name: "op".into(),
                    image: "quay.io/op".into()
                },
                RelatedImage {
                    name: String::new(),
                    image: "quay.io/x".into()
                },
            ]
        );
    }

    #[test]
    fn wrong_json_types_are_errors_naming_the_field() {
        assert_eq!(
            decode(json!({"schema": "olm.bundle", "image": 5})),
            Err("parse bundle: json: cannot unmarshal number into Go struct field Bundle.image of type string".into())
        );
        assert_eq!(
            decode(json!({"schema": "olm.bundle", "properties": {}})),
            Err("parse bundle: json: cannot unmarshal object into Go struct field Bundle.properties of type []property.Property".into())
        );
        assert_eq!(
            decode(json!({"schema": "olm.bundle", "properties": [{"type": 1}]})),
            Err("parse bundle: json: cannot unmarshal number into Go struct field Property.properties.type of type string".into())
        );
        assert_eq!(
            decode(json!({"schema": "olm.channel", "entries": [{"name": "a", "skips": "b"}]})),
            Err("parse channel: json: cannot unmarshal string into Go struct field ChannelEntry.entries.skips of type []string".into())
        );
        assert_eq!(
            decode(json!({"schema": "olm.channel", "entries": ["a"]})),
            Err("parse channel: json: cannot unmarshal string into Go struct field Channel.entries of type declcfg.ChannelEntry".into())
        );
        assert_eq!(
            decode(json!({"schema": "olm.package", "icon": {"base64data": "abc"}})),
            Err("parse package: illegal base64 data at input byte 3".into())
        );
        assert_eq!(
            decode(json!({"schema": "olm.deprecations", "entries": [{"reference": "x"}]})),
            Err("parse deprecations: json: cannot unmarshal string into Go struct field DeprecationEntry.entries.reference of type declcfg.PackageScopedReference".into())
        );
    }

    #[test]
    fn channels_deprecations_and_custom_documents() {
        let Ok(Document::Channel(c)) = decode(json!({
            "schema": "olm.channel", "package": "foo", "name": "alpha",
            "entries": [{"name": "b", "replaces": "a", "skips": ["x", null], "SkipRange": "<1.0.0"}, null]
        })) else {
            panic!("not a channel")
        };
        assert_eq!(
            c.entries,
            vec![
                ChannelEntry {
                    name: "b".into(),
                    replaces: "a".into(),
                    skips: vec!["x".into(), String::new()],
                    skip_range: "<1.0.0".into()
                },
                ChannelEntry::default()
            ]
        );
        let Ok(Document::Deprecations(d)) = decode(json!({
            "schema": "olm.deprecations", "package": "foo",
            "entries": [{"reference": {"schema": "olm.bundle", "name": "b"}, "message": "gone"}]
        })) else {
            panic!("not deprecations")
        };
        assert_eq!(
            d.entries[0].reference,
            DeprecationReference {
                schema: "olm.bundle".into(),
                name: "b".into()
            }
        );
        assert_eq!(d.entries[0].message, "gone");
        let Ok(Document::Meta(m)) =
            decode(json!({"schema": "custom.x", "Package": "foo", "data": {"n": 1.0}}))
        else {
            panic!("not meta")
        };
        assert_eq!(
            (m.schema.as_str(), m.package.as_str(), m.name.as_str()),
            ("custom.x", "foo", "")
        );
        assert_eq!(
            canonical(&m.blob),
            r#"{"Package":"foo","data":{"n":1},"schema":"custom.x"}"#
        );
    }
}
