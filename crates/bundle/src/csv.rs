//! Reading the fields of a ClusterServiceVersion that rendering needs. A CSV is kept as the
//! JSON value it was decoded to: only a handful of fields matter, and the object itself is
//! emitted as an `olm.bundle.object` byte-for-byte as decoded.
use base64::Engine;
use catalog::json::canonical;
use catalog::{Gvk, Icon, Property, RelatedImage};
use serde_json::Value;

pub(crate) const KIND: &str = "ClusterServiceVersion";

/// Annotation carrying extra bundle properties as a JSON array text.
const PROPERTIES_ANNOTATION: &str = "olm.properties";
const SKIP_RANGE_ANNOTATION: &str = "olm.skipRange";

/// A string field, or `""` when it is absent or not a string.
pub(crate) fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn items<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(crate) fn name(csv: &Value) -> &str {
    str_at(csv, "/metadata/name")
}

/// `spec.version`: a string, though a YAML author may have written a bare number.
pub fn version(csv: &Value) -> String {
    scalar_text(csv.pointer("/spec/version"))
}

/// `spec.release` (HEAD): a string, or a number printed as Go prints it.
pub(crate) fn release(csv: &Value) -> String {
    scalar_text(csv.pointer("/spec/release"))
}

fn scalar_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(n @ Value::Number(_)) => canonical(n),
        _ => String::new(),
    }
}

pub fn replaces(csv: &Value) -> &str {
    str_at(csv, "/spec/replaces")
}

pub fn skips(csv: &Value) -> Vec<String> {
    items(csv, "/spec/skips")
        .iter()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

pub(crate) fn annotation<'a>(csv: &'a Value, key: &str) -> &'a str {
    csv.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub fn skip_range(csv: &Value) -> &str {
    annotation(csv, SKIP_RANGE_ANNOTATION)
}

/// The owned CRDs as `{name, version, kind}`; the group is what follows the plural in `name`.
pub(crate) fn owned_crds(csv: &Value) -> Vec<CrdDescription> {
    crd_descriptions(csv, "/spec/customresourcedefinitions/owned")
}

pub(crate) fn required_crds(csv: &Value) -> Vec<CrdDescription> {
    crd_descriptions(csv, "/spec/customresourcedefinitions/required")
}

/// A CSV's description of a CRD it owns or requires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CrdDescription {
    /// `<plural>.<group>`
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) kind: String,
}

impl CrdDescription {
    pub(crate) fn gvk(&self) -> Gvk {
        let group = self.name.split_once('.').map_or("", |(_, g)| g);
        Gvk {
            group: group.to_owned(),
            version: self.version.clone(),
            kind: self.kind.clone(),
        }
    }
}

fn crd_descriptions(csv: &Value, pointer: &str) -> Vec<CrdDescription> {
    items(csv, pointer)
        .iter()
        .map(|d| CrdDescription {
            name: str_at(d, "/name").to_owned(),
            version: str_at(d, "/version").to_owned(),
            kind: str_at(d, "/kind").to_owned(),
        })
        .collect()
}

pub(crate) fn owned_api_services(csv: &Value) -> Vec<Gvk> {
    api_services(csv, "/spec/apiservicedefinitions/owned")
}

pub(crate) fn required_api_services(csv: &Value) -> Vec<Gvk> {
    api_services(csv, "/spec/apiservicedefinitions/required")
}

fn api_services(csv: &Value, pointer: &str) -> Vec<Gvk> {
    items(csv, pointer)
        .iter()
        .map(|d| Gvk {
            group: str_at(d, "/group").to_owned(),
            version: str_at(d, "/version").to_owned(),
            kind: str_at(d, "/kind").to_owned(),
        })
        .collect()
}

/// `spec.relatedImages` as written.
pub(crate) fn related_images(csv: &Value) -> Vec<RelatedImage> {
    items(csv, "/spec/relatedImages")
        .iter()
        .map(|r| RelatedImage {
            name: str_at(r, "/name").to_owned(),
            image: str_at(r, "/image").to_owned(),
        })
        .collect()
}

/// The images of every container and init container of the install strategy's deployments;
/// only the `deployment` strategy has any.
pub(crate) fn deployment_images(csv: &Value) -> Vec<String> {
    if str_at(csv, "/spec/install/strategy") != "deployment" {
        return Vec::new();
    }
    let mut images = Vec::new();
    for deployment in items(csv, "/spec/install/spec/deployments") {
        for list in ["initContainers", "containers"] {
            let pointer = format!("/spec/template/spec/{list}");
            for container in items(deployment, &pointer) {
                let image = str_at(container, "/image");
                if !image.is_empty() {
                    images.push(image.to_owned());
                }
            }
        }
    }
    images
}

/// The properties listed in the `olm.properties` annotation. Upstream only warns about a
/// value that is not a JSON array of properties, so this does too.
pub(crate) fn annotation_properties(csv: &Value) -> Vec<Property> {
    let text = annotation(csv, PROPERTIES_ANNOTATION);
    if text.is_empty() {
        return Vec::new();
    }
    let parsed: Result<Vec<Value>, _> = serde_json::from_str(text);
    let Ok(entries) = parsed else {
        tracing::warn!(
            csv = name(csv),
            "ignoring annotation {PROPERTIES_ANNOTATION}: not a JSON array"
        );
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| match (e.get("type").and_then(Value::as_str), e.get("value")) {
            (Some(kind), Some(value)) => Some(Property {
                kind: kind.to_owned(),
                value: canonical(value),
            }),
            _ => {
                tracing::warn!(
                    csv = name(csv),
                    "ignoring an entry of annotation {PROPERTIES_ANNOTATION} without type and value"
                );
                None
            }
        })
        .collect()
}

/// The package icon a legacy catalog takes from the CSV at the head of its default channel:
/// the first `spec.icon`. Upstream stored the decoded bytes (retrying without spaces), so the
/// data is decoded and re-encoded; undecodable data means no icon.
pub(crate) fn package_icon(csv: &Value) -> Option<Icon> {
    let first = items(csv, "/spec/icon").first()?;
    let data = str_at(first, "/base64data");
    let engine = &base64::engine::general_purpose::STANDARD;
    let bytes = engine
        .decode(data)
        .or_else(|_| engine.decode(data.replace(' ', "")))
        .map_err(|e| tracing::warn!(csv = name(csv), "ignoring an undecodable icon: {e}"))
        .ok()?;
    Some(Icon {
        base64data: engine.encode(bytes),
        mediatype: str_at(first, "/mediatype").to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn olm_properties_annotation_that_is_not_a_list_is_ignored() {
        let csv = |text: &str| json!({"metadata": {"annotations": {"olm.properties": text}}});
        assert_eq!(annotation_properties(&csv("{not json")), []);
        assert_eq!(
            annotation_properties(&csv(
                r#"[{"type":"olm.maxOpenShiftVersion","value":"4.8"},{"type":"x"}]"#
            )),
            [Property {
                kind: "olm.maxOpenShiftVersion".into(),
                value: r#""4.8""#.into()
            }]
        );
    }

    #[test]
    fn versions_written_as_numbers_read_as_go_prints_them() {
        let csv = json!({"spec": {"version": "1.2.3", "release": 2}});
        assert_eq!((version(&csv), release(&csv)), ("1.2.3".into(), "2".into()));
    }

    #[test]
    fn icons_are_decoded_retrying_without_spaces() {
        let csv = |data: &str| json!({"spec": {"icon": [{"base64data": data, "mediatype": "image/png"}]}});
        let icon = package_icon(&csv("iVBO Rw0K Ggo=")).unwrap();
        assert_eq!(
            (icon.base64data.as_str(), icon.mediatype.as_str()),
            ("iVBORw0KGgo=", "image/png")
        );
        assert_eq!(package_icon(&csv("!!!")), None);
    }
}
