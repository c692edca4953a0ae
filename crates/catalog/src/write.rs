//! Writing a catalog back out as FBC, as `opm render`/`opm migrate` print it
//! (catalog-formats.md §A.6).
use super::json::{canonical, newline, reindent, write_string};
use super::types::*;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::io::{self, Write};

mod yaml;

/// Writes `dc` as a JSON stream: each document indented by four spaces and followed by a
/// newline, keys in upstream's struct order, no HTML escaping.
pub fn write_json(dc: &DeclarativeConfig, out: &mut impl Write) -> io::Result<()> {
    let mut text = String::new();
    for blob in output_order(dc) {
        text.clear();
        write_pretty(&blob, 0, &mut text);
        text.push('\n');
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}

/// Writes `dc` as YAML: each document is a `---` line followed by the document with its keys
/// sorted.
pub fn write_yaml(dc: &DeclarativeConfig, out: &mut impl Write) -> io::Result<()> {
    let mut text = String::new();
    for blob in output_order(dc) {
        let serde_json::Value::Object(map) = to_value(&blob)? else {
            return Err(io::Error::other("a catalog document is not a JSON object"));
        };
        text.clear();
        text.push_str("---\n");
        yaml::write_document(&map, &mut text);
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}

/// `map` as one block-style YAML document (no `---` line), laid out as upstream's writer
/// lays out any generic value: keys in the map's (sorted) order.
pub fn yaml_document(map: &serde_json::Map<String, serde_json::Value>) -> String {
    let mut text = String::new();
    yaml::write_document(map, &mut text);
    text
}

/// A document ready to print: objects keep their key order, `Raw` is JSON text.
enum Json<'a> {
    Str(&'a str),
    Raw(Cow<'a, str>),
    Object(Vec<(&'static str, Json<'a>)>),
    Array(Vec<Json<'a>>),
}

/// Documents in output order: for each package name (sorted), its `olm.package` documents,
/// channels and bundles sorted by name, custom documents stably sorted by schema, and
/// deprecations; then the custom documents of no package. Channels, bundles and deprecations
/// that name no package are not written, as upstream does.
fn output_order(dc: &DeclarativeConfig) -> Vec<Json<'_>> {
    let names: BTreeSet<&str> = dc
        .packages
        .iter()
        .map(|p| p.name.as_str())
        .chain(dc.channels.iter().map(|c| c.package.as_str()))
        .chain(dc.bundles.iter().map(|b| b.package.as_str()))
        .chain(dc.others.iter().map(|m| m.package.as_str()))
        .chain(dc.deprecations.iter().map(|d| d.package.as_str()))
        .filter(|n| !n.is_empty())
        .collect();
    let mut out = Vec::new();
    for name in names {
        out.extend(dc.packages.iter().filter(|p| p.name == name).map(package));
        let mut channels: Vec<&Channel> =
            dc.channels.iter().filter(|c| c.package == name).collect();
        channels.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(channels.into_iter().map(channel));
        let mut bundles: Vec<&Bundle> = dc.bundles.iter().filter(|b| b.package == name).collect();
        bundles.sort_by(|a, b| a.name.cmp(&b.name));
        out.extend(bundles.into_iter().map(bundle));
        let mut others: Vec<&Meta> = dc.others.iter().filter(|m| m.package == name).collect();
        others.sort_by(|a, b| a.schema.cmp(&b.schema));
        out.extend(others.into_iter().map(meta));
        out.extend(
            dc.deprecations
                .iter()
                .filter(|d| d.package == name)
                .map(deprecations),
        );
    }
    out.extend(dc.others.iter().filter(|m| m.package.is_empty()).map(meta));
    out
}

/// Adds `key` unless `value` is empty (Go's `omitempty`).
fn omit_empty<'a>(fields: &mut Vec<(&'static str, Json<'a>)>, key: &'static str, value: &'a str) {
    if !value.is_empty() {
        fields.push((key, Json::Str(value)));
    }
}

fn properties(props: &[Property]) -> Json<'_> {
    Json::Array(
        props
            .iter()
            .map(|p| {
                // A property without a value holds a nil raw message, which Go prints as null.
                let value = if p.value.is_empty() {
                    "null"
                } else {
                    p.value.as_str()
                };
                Json::Object(vec![
                    ("type", Json::Str(&p.kind)),
                    ("value", Json::Raw(Cow::Borrowed(value))),
                ])
            })
            .collect(),
    )
}

fn package(p: &Package) -> Json<'_> {
    let mut f = vec![
        ("schema", Json::Str(SCHEMA_PACKAGE)),
        ("name", Json::Str(&p.name)),
        ("defaultChannel", Json::Str(&p.default_channel)),
    ];
    if let Some(icon) = &p.icon {
        f.push((
            "icon",
            Json::Object(vec![
                ("base64data", Json::Str(&icon.base64data)),
                ("mediatype", Json::Str(&icon.mediatype)),
            ]),
        ));
    }
    omit_empty(&mut f, "description", &p.description);
    if !p.properties.is_empty() {
        f.push(("properties", properties(&p.properties)));
    }
    Json::Object(f)
}

fn channel(c: &Channel) -> Json<'_> {
    let entries = c
        .entries
        .iter()
        .map(|e| {
            let mut f = vec![("name", Json::Str(&e.name))];
            omit_empty(&mut f, "replaces", &e.replaces);
            if !e.skips.is_empty() {
                f.push((
                    "skips",
                    Json::Array(e.skips.iter().map(|s| Json::Str(s)).collect()),
                ));
            }
            omit_empty(&mut f, "skipRange", &e.skip_range);
            Json::Object(f)
        })
        .collect();
    let mut f = vec![
        ("schema", Json::Str(SCHEMA_CHANNEL)),
        ("name", Json::Str(&c.name)),
        ("package", Json::Str(&c.package)),
        ("entries", Json::Array(entries)),
    ];
    if !c.properties.is_empty() {
        f.push(("properties", properties(&c.properties)));
    }
    Json::Object(f)
}

fn bundle(b: &Bundle) -> Json<'_> {
    let mut f = vec![("schema", Json::Str(SCHEMA_BUNDLE))];
    omit_empty(&mut f, "name", &b.name);
    omit_empty(&mut f, "package", &b.package);
    f.push(("image", Json::Str(&b.image)));
    if !b.properties.is_empty() {
        f.push(("properties", properties(&b.properties)));
    }
    if !b.related_images.is_empty() {
        let images = b
            .related_images
            .iter()
            .map(|r| {
                Json::Object(vec![
                    ("name", Json::Str(&r.name)),
                    ("image", Json::Str(&r.image)),
                ])
            })
            .collect();
        f.push(("relatedImages", Json::Array(images)));
    }
    Json::Object(f)
}

fn deprecations(d: &Deprecations) -> Json<'_> {
    let entries = d
        .entries
        .iter()
        .map(|e| {
            let mut reference = vec![("schema", Json::Str(&e.reference.schema))];
            omit_empty(&mut reference, "name", &e.reference.name);
            Json::Object(vec![
                ("reference", Json::Object(reference)),
                ("message", Json::Str(&e.message)),
            ])
        })
        .collect();
    Json::Object(vec![
        ("schema", Json::Str(SCHEMA_DEPRECATIONS)),
        ("package", Json::Str(&d.package)),
        ("entries", Json::Array(entries)),
    ])
}

fn meta(m: &Meta) -> Json<'_> {
    Json::Raw(Cow::Owned(canonical(&m.blob)))
}

fn write_pretty(j: &Json, level: usize, out: &mut String) {
    match j {
        Json::Str(s) => write_string(s, out),
        Json::Raw(text) => reindent(text, level, out),
        Json::Object(fields) if fields.is_empty() => out.push_str("{}"),
        Json::Array(items) if items.is_empty() => out.push_str("[]"),
        Json::Object(fields) => {
            out.push('{');
            for (i, (key, value)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(level + 1, out);
                write_string(key, out);
                out.push_str(": ");
                write_pretty(value, level + 1, out);
            }
            newline(level, out);
            out.push('}');
        }
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(level + 1, out);
                write_pretty(item, level + 1, out);
            }
            newline(level, out);
            out.push(']');
        }
    }
}

/// The document as a JSON value, for YAML output.
fn to_value(j: &Json) -> io::Result<serde_json::Value> {
    use serde_json::Value;
    Ok(match j {
        Json::Str(s) => Value::String((*s).to_owned()),
        Json::Raw(text) => serde_json::from_str(text).map_err(io::Error::other)?,
        Json::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| Ok(((*k).to_owned(), to_value(v)?)))
                .collect::<io::Result<_>>()?,
        ),
        Json::Array(items) => Value::Array(items.iter().map(to_value).collect::<io::Result<_>>()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::parse_documents;
    use crate::file::ReadLimits;
    use crate::walk::load_dir;

    fn load(text: &str) -> DeclarativeConfig {
        let mut dc = DeclarativeConfig::default();
        parse_documents("c.yaml", text.as_bytes())
            .expect("parses")
            .into_iter()
            .for_each(|d| dc.push(d));
        dc
    }

    fn json(dc: &DeclarativeConfig) -> String {
        let mut out = Vec::new();
        write_json(dc, &mut out).expect("writes");
        String::from_utf8(out).expect("UTF-8")
    }

    const MIXED: &str = r#"
schema: custom.z
package: b
---
schema: olm.bundle
name: b.v2
package: b
image: ""
properties:
- type: olm.bundle.object
  value: {data: e30=}
- type: olm.maxOpenShiftVersion
  value: 4.10
- type: empty.things
  value: {a: [], b: {}, c: [1, {d: "<&>"}]}
---
schema: olm.channel
name: z
package: b
entries:
- name: b.v2
  replaces: b.v1
  skips: [b.v0]
  skipRange: "<2.0.0"
---
schema: olm.package
name: b
defaultChannel: z
description: ""
icon: {base64data: PHN2Zz4=, mediatype: image/svg+xml}
---
schema: custom.a
package: b
---
schema: custom.global
name: g
---
schema: olm.deprecations
package: b
entries:
- reference: {schema: olm.package}
  message: gone
---
schema: olm.bundle
name: a.v1
package: a
image: quay.io/a:v1
relatedImages:
- {image: quay.io/x}
---
schema: olm.channel
name: orphan
entries: []
"#;

    #[test]
    fn json_output_follows_upstream_order_and_format() {
        assert_eq!(
            json(&load(MIXED)),
            r#"{
    "schema": "olm.bundle",
    "name": "a.v1",
    "package": "a",
    "image": "quay.io/a:v1",
    "relatedImages": [
        {
            "name": "",
            "image": "quay.io/x"
        }
    ]
}
{
    "schema": "olm.package",
    "name": "b",
    "defaultChannel": "z",
    "icon": {
        "base64data": "PHN2Zz4=",
        "mediatype": "image/svg+xml"
    }
}
{
    "schema": "olm.channel",
    "name": "z",
    "package": "b",
    "entries": [
        {
            "name": "b.v2",
            "replaces": "b.v1",
            "skips": [
                "b.v0"
            ],
            "skipRange": "<2.0.0"
        }
    ]
}
{
    "schema": "olm.bundle",
    "name": "b.v2",
    "package": "b",
    "image": "",
    "properties": [
        {
            "type": "olm.bundle.object",
            "value": {
                "data": "e30="
            }
        },
        {
            "type": "olm.maxOpenShiftVersion",
            "value": 4.1
        },
        {
            "type": "empty.things",
            "value": {
                "a": [],
                "b": {},
                "c": [
                    1,
                    {
                        "d": "<&>"
                    }
                ]
            }
        }
    ]
}
{
    "package": "b",
    "schema": "custom.a"
}
{
    "package": "b",
    "schema": "custom.z"
}
{
    "schema": "olm.deprecations",
    "package": "b",
    "entries": [
        {
            "reference": {
                "schema": "olm.package"
            },
            "message": "gone"
        }
    ]
}
{
    "name": "g",
    "schema": "custom.global"
}
"#
        );
    }

    #[test]
    fn yaml_output_is_separated_and_sorted() {
        let dc = load(
            "schema: olm.channel\nname: z\npackage: b\nentries: [{name: b.v2, skips: [b.v0]}]\n---\nschema: olm.package\nname: b\ndefaultChannel: z\n",
        );
        let mut out = Vec::new();
        write_yaml(&dc, &mut out).expect("writes");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "---\ndefaultChannel: z\nname: b\nschema: olm.package\n---\nentries:\n- name: b.v2\n  skips:\n  - b.v0\nname: z\npackage: b\nschema: olm.channel\n"
        );
        // What is written reads back as the same catalog.
        let mut out = Vec::new();
        write_yaml(&load(MIXED), &mut out).expect("writes");
        let again = load(std::str::from_utf8(&out).expect("UTF-8"));
        assert_eq!(json(&again), json(&load(MIXED)));
    }

    #[test]
    fn real_catalogs_read_back_the_same_from_json_and_yaml() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/testdata/real/community-catalog-v4.20"
        );
        if !std::path::Path::new(dir).is_dir() {
            eprintln!(
                "SKIPPED real_catalogs_read_back_the_same_from_json_and_yaml: {dir} is absent"
            );
            return;
        }
        let dc = load_dir(std::path::Path::new(dir), ReadLimits::default()).expect("loads");
        let expected = json(&dc);
        let mut yaml = Vec::new();
        write_yaml(&dc, &mut yaml).expect("writes");
        let from_yaml = parse_documents("out.yaml", &yaml).expect("YAML output parses");
        let from_json =
            parse_documents("out.json", expected.as_bytes()).expect("JSON output parses");
        for docs in [from_yaml, from_json] {
            let mut again = DeclarativeConfig::default();
            docs.into_iter().for_each(|d| again.push(d));
            assert!(json(&again) == expected, "round trip changed the catalog");
        }
    }

    #[test]
    fn upstream_rendered_catalogs_are_reproduced_byte_for_byte() {
        let base = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/testdata/upstream");
        if !std::path::Path::new(base).is_dir() {
            eprintln!(
                "SKIPPED upstream_rendered_catalogs_are_reproduced_byte_for_byte: {base} is absent"
            );
            return;
        }
        for pkg in ["etcd", "prometheus", "strimzi-kafka-operator"] {
            for tree in ["manifests-fbc", "bundlepath-fbc"] {
                let dir = std::path::Path::new(base).join(tree).join(pkg);
                let expected = std::fs::read_to_string(dir.join("catalog.json")).expect("read");
                let dc = load_dir(&dir, ReadLimits::default()).expect("loads");
                assert!(json(&dc) == expected, "{tree}/{pkg} differs");
            }
        }
    }
}
