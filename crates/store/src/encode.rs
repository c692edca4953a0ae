//! How responses are laid out in the index, and put back together.
//!
//! An `api.Bundle` is stored in pieces, each a valid protobuf encoding of some of its fields:
//! protobuf lets encodings of disjoint fields be concatenated into one message, so a response
//! is assembled by appending byte slices — nothing is decoded or re-encoded while serving.
//! The pieces are split so that nothing large is stored twice: the manifests once per bundle
//! (not per channel), the CSV text once (csvJson points into the `object` list).
//!
//! What is served whole (a package, a custom document) is encoded here too, at ingest.
use bytes::{BufMut, Bytes, BytesMut};
use catalog::model::ModelPackage;
use catalog::property::{self, Typed};
use catalog::{Bundle, Gvk};
use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};

/// api.Bundle field numbers used when assembling by hand.
const CSV_JSON: u32 = 4;
const OBJECT: u32 = 5;

/// The stored pieces of one per-channel bundle, borrowed from a result row.
pub(crate) struct BundleParts<'a> {
    /// Every field that is the same in all channels: names, image, APIs, properties,
    /// dependencies, version, deprecation.
    pub(crate) common: &'a [u8],
    /// The encoded `object` fields (empty when not fetched).
    pub(crate) objects: &'a [u8],
    /// Where the CSV's text sits inside `objects`, when the CSV is one of them.
    pub(crate) csv_range: Option<(usize, usize)>,
    /// A CSV synthesised from `olm.csv.metadata`, when the bundle ships no CSV object.
    pub(crate) csv_synth: Option<&'a [u8]>,
    /// channelName and skipRange.
    pub(crate) tail: &'a [u8],
    /// replaces and skips.
    pub(crate) edges: &'a [u8],
}

/// Puts a bundle back together. Point lookups leave out `edges` (upstream trims replaces and
/// skips there); ListBundles leaves out manifests of bundles that have an image.
pub(crate) fn assemble_bundle(
    p: &BundleParts<'_>,
    with_edges: bool,
    with_manifests: bool,
) -> Bytes {
    let csv = match (with_manifests, p.csv_range, p.csv_synth) {
        (false, _, _) => None,
        (true, Some((start, len)), _) => p.objects.get(start..start + len),
        (true, None, Some(synth)) => Some(synth),
        (true, None, None) => None,
    };
    // A bundle known only through olm.csv.metadata serves its CSV as its one object.
    let csv_as_object = csv.filter(|_| p.objects.is_empty());
    let objects: &[u8] = if with_manifests { p.objects } else { &[] };
    let edges: &[u8] = if with_edges { p.edges } else { &[] };
    // The exact size: an answer is allocated once, and no larger than it is (twice its size
    // would put a 64 KiB bundle past the allocator's threshold for mapping and unmapping
    // memory on every call).
    let field_len = |data: &[u8]| 1 + encoded_len_varint(data.len() as u64) + data.len();
    let len = p.common.len()
        + csv.map_or(0, field_len)
        + csv_as_object.map_or(0, field_len)
        + objects.len()
        + p.tail.len()
        + edges.len();
    let mut out = BytesMut::with_capacity(len);
    out.put_slice(p.common);
    if let Some(csv) = csv {
        put_bytes_field(&mut out, CSV_JSON, csv);
    }
    if let Some(csv) = csv_as_object {
        put_bytes_field(&mut out, OBJECT, csv);
    }
    out.put_slice(objects);
    out.put_slice(p.tail);
    out.put_slice(edges);
    debug_assert_eq!(out.len(), len);
    out.freeze()
}

fn put_bytes_field(out: &mut BytesMut, field: u32, data: &[u8]) {
    encode_key(field, WireType::LengthDelimited, out);
    encode_varint(data.len() as u64, out);
    out.put_slice(data);
}

/// Encodes the `object` fields and returns where the object at `csv_index` has its text.
pub(crate) fn encode_objects(
    objects: &[String],
    csv_index: Option<usize>,
) -> (Vec<u8>, Option<(usize, usize)>) {
    let total: usize = objects
        .iter()
        .map(|o| 1 + encoded_len_varint(o.len() as u64) + o.len())
        .sum();
    let mut out = Vec::with_capacity(total);
    let mut csv_range = None;
    for (i, object) in objects.iter().enumerate() {
        encode_key(OBJECT, WireType::LengthDelimited, &mut out);
        encode_varint(object.len() as u64, &mut out);
        if Some(i) == csv_index {
            csv_range = Some((out.len(), object.len()));
        }
        out.extend_from_slice(object.as_bytes());
    }
    (out, csv_range)
}

pub(crate) fn encode_tail(channel: &str, skip_range: &str) -> Vec<u8> {
    api::Bundle {
        channel_name: channel.to_owned(),
        skip_range: skip_range.to_owned(),
        ..Default::default()
    }
    .encode_to_vec()
}

pub(crate) fn encode_edges(replaces: &str, skips: &[String]) -> Vec<u8> {
    api::Bundle {
        replaces: replaces.to_owned(),
        skips: skips.to_vec(),
        ..Default::default()
    }
    .encode_to_vec()
}

/// A custom document as the experimental API serves it: a `google.protobuf.Struct`.
pub(crate) fn to_struct(v: &serde_json::Value) -> prost_types::Struct {
    let fields = match v {
        serde_json::Value::Object(map) => {
            map.iter().map(|(k, v)| (k.clone(), to_value(v))).collect()
        }
        _ => Default::default(),
    };
    prost_types::Struct { fields }
}

fn to_value(v: &serde_json::Value) -> prost_types::Value {
    use prost_types::value::Kind;
    use serde_json::Value as J;
    let kind = match v {
        J::Null => Kind::NullValue(0),
        J::Bool(b) => Kind::BoolValue(*b),
        J::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(f64::NAN)),
        J::String(s) => Kind::StringValue(s.clone()),
        J::Array(a) => Kind::ListValue(prost_types::ListValue {
            values: a.iter().map(to_value).collect(),
        }),
        J::Object(_) => Kind::StructValue(to_struct(v)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// A package as GetPackage serves it, whole.
pub(crate) fn encode_package(pkg: &ModelPackage) -> api::Package {
    api::Package {
        name: pkg.name.clone(),
        default_channel_name: pkg.default_channel.clone(),
        channels: pkg
            .channels
            .values()
            .map(|ch| api::Channel {
                name: ch.name.clone(),
                csv_name: ch.head.clone(),
                deprecation: ch
                    .deprecation
                    .clone()
                    .map(|message| api::Deprecation { message }),
            })
            .collect(),
        deprecation: pkg
            .deprecation
            .clone()
            .map(|message| api::Deprecation { message }),
    }
}

/// What the served fields of a bundle derive from its properties (registry-api.md §4.1).
pub(crate) struct BundleFacts {
    pub(crate) version: String,
    pub(crate) provided: Vec<api::GroupVersionKind>,
    required: Vec<api::GroupVersionKind>,
    dependencies: Vec<api::Dependency>,
    properties: Vec<api::Property>,
    pub(crate) csv_metadata: Option<serde_json::Value>,
}

impl BundleFacts {
    /// The model has validated every property already; one that still fails to parse is
    /// served as an opaque property.
    pub(crate) fn of(b: &Bundle) -> BundleFacts {
        let mut facts = BundleFacts {
            version: String::new(),
            provided: Vec::new(),
            required: Vec::new(),
            dependencies: Vec::new(),
            properties: Vec::new(),
            csv_metadata: None,
        };
        let gvk = |g: Gvk| api::GroupVersionKind {
            group: g.group,
            version: g.version,
            kind: g.kind,
            plural: String::new(),
        };
        for p in &b.properties {
            match property::parse(p) {
                Ok(Typed::CsvMetadata(v)) => {
                    facts.csv_metadata = Some(v);
                    continue;
                }
                Ok(Typed::BundleObject { .. }) => continue,
                Ok(Typed::Package { version, .. }) => facts.version = version,
                Ok(Typed::Gvk(g)) => facts.provided.push(gvk(g)),
                Ok(Typed::GvkRequired(g)) => {
                    facts.required.push(gvk(g));
                    facts.dependencies.push(api::Dependency {
                        r#type: "olm.gvk".to_owned(),
                        value: p.value.clone(),
                    });
                }
                Ok(Typed::PackageRequired {
                    package_name,
                    version_range,
                }) => {
                    let value =
                        serde_json::json!({"packageName": package_name, "version": version_range});
                    facts.dependencies.push(api::Dependency {
                        r#type: "olm.package".to_owned(),
                        value: catalog::json::canonical(&value),
                    });
                }
                _ => {}
            }
            facts.properties.push(api::Property {
                r#type: p.kind.clone(),
                value: p.value.clone(),
            });
        }
        facts
    }

    /// The bundle's `common` piece (see [`BundleParts`]).
    pub(crate) fn encode_common(self, b: &Bundle, deprecation: Option<&str>) -> Vec<u8> {
        api::Bundle {
            csv_name: b.name.clone(),
            package_name: b.package.clone(),
            bundle_path: b.image.clone(),
            version: self.version,
            provided_apis: self.provided,
            required_apis: self.required,
            dependencies: self.dependencies,
            properties: self.properties,
            deprecation: deprecation.map(|m| api::Deprecation {
                message: m.to_owned(),
            }),
            ..Default::default()
        }
        .encode_to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(b: &[u8]) -> api::Bundle {
        api::Bundle::decode(b).unwrap()
    }

    #[test]
    fn assembled_pieces_decode_as_one_bundle() {
        let common = api::Bundle {
            csv_name: "foo.v1".into(),
            package_name: "foo".into(),
            version: "1.0.0".into(),
            ..Default::default()
        }
        .encode_to_vec();
        let objects = vec![
            "{\"kind\":\"CustomResourceDefinition\"}".to_string(),
            "{\"kind\":\"ClusterServiceVersion\"}".to_string(),
        ];
        let (encoded, csv_range) = encode_objects(&objects, Some(1));
        let tail = encode_tail("stable", ">=0.1.0 <1.0.0");
        let edges = encode_edges("foo.v0", &["foo.v0.5".to_string()]);
        let parts = BundleParts {
            common: &common,
            objects: &encoded,
            csv_range,
            csv_synth: None,
            tail: &tail,
            edges: &edges,
        };

        let point = decode(&assemble_bundle(&parts, false, true));
        assert_eq!(point.csv_name, "foo.v1");
        assert_eq!(point.channel_name, "stable");
        assert_eq!(point.skip_range, ">=0.1.0 <1.0.0");
        assert_eq!(point.csv_json, objects[1]);
        assert_eq!(point.object, objects);
        assert_eq!(point.replaces, "");
        assert!(point.skips.is_empty());

        let listed = decode(&assemble_bundle(&parts, true, false));
        assert_eq!(listed.csv_json, "");
        assert!(listed.object.is_empty());
        assert_eq!(listed.replaces, "foo.v0");
        assert_eq!(listed.skips, ["foo.v0.5"]);
    }

    #[test]
    fn synthesised_csv_becomes_the_only_object_when_there_are_none() {
        let parts = BundleParts {
            common: &[],
            objects: &[],
            csv_range: None,
            csv_synth: Some(b"{\"kind\":\"ClusterServiceVersion\"}"),
            tail: &[],
            edges: &[],
        };
        let b = decode(&assemble_bundle(&parts, false, true));
        assert_eq!(b.csv_json, "{\"kind\":\"ClusterServiceVersion\"}");
        assert_eq!(b.object, std::slice::from_ref(&b.csv_json));
    }
}
