//! The ClusterServiceVersion that stands in for a bundle that carries `olm.csv.metadata`
//! instead of its CSV manifest (registry-api.md §4.2). OLM's package server reads it for
//! display, so it needs the CSV's shape, not its byte-exact text.
use super::fields::fold_eq;
use super::json::{write_canonical, write_string};
use super::model::ModelPackage;
use super::types::Bundle;
use serde_json::Value;

/// The CSV JSON for `bundle` at `version`, built from its `olm.csv.metadata` value and its
/// package (icon, and description when the metadata has none). Keys are in upstream's struct
/// order.
pub fn synthesize_csv(
    bundle: &Bundle,
    version: &str,
    csv_metadata: &Value,
    pkg: &ModelPackage,
) -> String {
    let meta = |key: &str| -> Option<&Value> {
        let map = csv_metadata.as_object()?;
        map.get(key)
            .or_else(|| map.iter().find(|(k, _)| fold_eq(k, key)).map(|(_, v)| v))
            .filter(|v| !is_empty(v))
    };
    let mut out = String::with_capacity(1024);
    out.push_str(r#"{"kind":"ClusterServiceVersion","apiVersion":"operators.coreos.com/v1alpha1","metadata":{"name":"#);
    write_string(&bundle.name, &mut out);
    out.push_str(r#","creationTimestamp":null"#);
    optional(&mut out, "labels", meta("labels"));
    optional(&mut out, "annotations", meta("annotations"));
    out.push_str(r#"},"spec":{"install":{"strategy":"deployment","spec":{"deployments":null}}"#);
    if !version.is_empty() {
        out.push_str(r#","version":"#);
        write_string(version, &mut out);
    }
    optional(&mut out, "maturity", meta("maturity"));
    always(
        &mut out,
        "customresourcedefinitions",
        meta("crdDescriptions"),
        "{}",
    );
    always(
        &mut out,
        "apiservicedefinitions",
        meta("apiServiceDefinitions"),
        "{}",
    );
    optional(&mut out, "nativeAPIs", meta("nativeAPIs"));
    optional(&mut out, "minKubeVersion", meta("minKubeVersion"));
    always(&mut out, "displayName", meta("displayName"), r#""""#);
    match meta("description") {
        Some(d) => optional(&mut out, "description", Some(d)),
        None if !pkg.description.is_empty() => {
            out.push_str(r#","description":"#);
            write_string(&pkg.description, &mut out);
        }
        None => {}
    }
    optional(&mut out, "keywords", meta("keywords"));
    optional(&mut out, "maintainers", meta("maintainers"));
    always(&mut out, "provider", meta("provider"), "{}");
    optional(&mut out, "links", meta("links"));
    if let Some(icon) = &pkg.icon {
        out.push_str(r#","icon":[{"base64data":"#);
        write_string(&icon.base64data, &mut out);
        out.push_str(r#","mediatype":"#);
        write_string(&icon.mediatype, &mut out);
        out.push_str("}]");
    }
    optional(&mut out, "installModes", meta("installModes"));
    out.push_str(r#","cleanup":{"enabled":false}"#);
    if !bundle.related_images.is_empty() {
        out.push_str(r#","relatedImages":["#);
        for (i, r) in bundle.related_images.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(r#"{"name":"#);
            write_string(&r.name, &mut out);
            out.push_str(r#","image":"#);
            write_string(&r.image, &mut out);
            out.push('}');
        }
        out.push(']');
    }
    out.push_str(r#"},"status":{"cleanup":{}}}"#);
    out
}

/// Go's `omitempty` notion of empty, for the values the metadata can hold.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

fn optional(out: &mut String, key: &str, value: Option<&Value>) {
    if let Some(v) = value {
        out.push_str(",\"");
        out.push_str(key);
        out.push_str("\":");
        write_canonical(v, out);
    }
}

fn always(out: &mut String, key: &str, value: Option<&Value>, empty: &str) {
    match value {
        Some(_) => optional(out, key, value),
        None => {
            out.push_str(",\"");
            out.push_str(key);
            out.push_str("\":");
            out.push_str(empty);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Icon, RelatedImage};
    use serde_json::json;

    fn bundle() -> Bundle {
        Bundle {
            name: "foo.v1.0.0".into(),
            package: "foo".into(),
            related_images: vec![RelatedImage {
                name: "op".into(),
                image: "quay.io/foo:v1".into(),
            }],
            ..Bundle::default()
        }
    }

    #[test]
    fn full_metadata_becomes_a_csv() {
        let meta = json!({
            "annotations": {"capabilities": "Basic Install", "createdAt": "2025-06-24T14:07:09"},
            "apiServiceDefinitions": {"owned": [{"name": "a"}]},
            "crdDescriptions": {"owned": [{"name": "foos.example.com", "version": "v1", "kind": "Foo"}]},
            "description": "Foo operator",
            "displayName": "Foo",
            "installModes": [{"type": "OwnNamespace", "supported": true}],
            "keywords": ["foo"],
            "labels": {"l": "v"},
            "links": [{"name": "docs", "url": "https://example.com"}],
            "maintainers": [{"name": "me", "email": "me@example.com"}],
            "maturity": "stable",
            "minKubeVersion": "1.25.0",
            "nativeAPIs": [{"group": "", "version": "v1", "kind": "Pod"}],
            "provider": {"name": "Example"}
        });
        let pkg = ModelPackage {
            description: "package description".into(),
            icon: Some(Icon {
                base64data: "PHN2Zz4=".into(),
                mediatype: "image/svg+xml".into(),
            }),
            ..ModelPackage::default()
        };
        let csv = synthesize_csv(&bundle(), "1.0.0", &meta, &pkg);
        let parsed: Value = serde_json::from_str(&csv).expect("valid JSON");
        assert_eq!(
            parsed,
            json!({
                "kind": "ClusterServiceVersion",
                "apiVersion": "operators.coreos.com/v1alpha1",
                "metadata": {
                    "name": "foo.v1.0.0",
                    "creationTimestamp": null,
                    "labels": {"l": "v"},
                    "annotations": {"capabilities": "Basic Install", "createdAt": "2025-06-24T14:07:09"}
                },
                "spec": {
                    "install": {"strategy": "deployment", "spec": {"deployments": null}},
                    "version": "1.0.0",
                    "maturity": "stable",
                    "customresourcedefinitions": {"owned": [{"name": "foos.example.com", "version": "v1", "kind": "Foo"}]},
                    "apiservicedefinitions": {"owned": [{"name": "a"}]},
                    "nativeAPIs": [{"group": "", "version": "v1", "kind": "Pod"}],
                    "minKubeVersion": "1.25.0",
                    "displayName": "Foo",
                    "description": "Foo operator",
                    "keywords": ["foo"],
                    "maintainers": [{"name": "me", "email": "me@example.com"}],
                    "provider": {"name": "Example"},
                    "links": [{"name": "docs", "url": "https://example.com"}],
                    "icon": [{"base64data": "PHN2Zz4=", "mediatype": "image/svg+xml"}],
                    "installModes": [{"type": "OwnNamespace", "supported": true}],
                    "cleanup": {"enabled": false},
                    "relatedImages": [{"name": "op", "image": "quay.io/foo:v1"}]
                },
                "status": {"cleanup": {}}
            })
        );
        // Upstream's struct order, which clients do not rely on but people read.
        let order = [
            "\"install\"",
            "\"version\"",
            "\"maturity\"",
            "\"customresourcedefinitions\"",
            "\"apiservicedefinitions\"",
            "\"nativeAPIs\"",
            "\"minKubeVersion\"",
            "\"displayName\"",
            "\"description\"",
            "\"keywords\"",
            "\"maintainers\"",
            "\"provider\"",
            "\"links\"",
            "\"icon\"",
            "\"installModes\"",
            "\"cleanup\"",
            "\"relatedImages\"",
        ];
        let positions: Vec<usize> = order.iter().map(|k| csv.find(k).expect(k)).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{csv}");
        assert!(csv.starts_with(r#"{"kind":"ClusterServiceVersion","apiVersion":"operators.coreos.com/v1alpha1","metadata":{"name":"foo.v1.0.0","creationTimestamp":null,"labels""#));
    }

    #[test]
    fn empty_metadata_keeps_the_required_fields_and_falls_back_to_the_package() {
        let pkg = ModelPackage {
            description: "from the package".into(),
            ..ModelPackage::default()
        };
        let mut b = bundle();
        b.related_images.clear();
        let csv = synthesize_csv(
            &b,
            "1.0.0",
            &json!({"keywords": [], "DisplayName": "Shown"}),
            &pkg,
        );
        assert_eq!(
            csv,
            r#"{"kind":"ClusterServiceVersion","apiVersion":"operators.coreos.com/v1alpha1","metadata":{"name":"foo.v1.0.0","creationTimestamp":null},"spec":{"install":{"strategy":"deployment","spec":{"deployments":null}},"version":"1.0.0","customresourcedefinitions":{},"apiservicedefinitions":{},"displayName":"Shown","description":"from the package","provider":{},"cleanup":{"enabled":false}},"status":{"cleanup":{}}}"#
        );
    }
}
