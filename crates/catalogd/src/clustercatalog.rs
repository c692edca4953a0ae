//! What the controller reads of a ClusterCatalog (`olm.operatorframework.io/v1`). The CRD's
//! own validation has checked the fields already; what it cannot rule out (a source type this
//! version does not know) is kept as the problem catalogd reports for it.
use kube::api::DynamicObject;
use serde_json::Value;
use std::time::Duration;

/// The finalizer catalogd puts on every available ClusterCatalog, so that its served content
/// is removed before the object goes.
pub(crate) const FINALIZER: &str = "olm.operatorframework.io/delete-server-cache";

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ClusterCatalog {
    pub(crate) name: String,
    pub(crate) generation: i64,
    pub(crate) resource_version: String,
    pub(crate) deleting: bool,
    pub(crate) finalizers: Vec<String>,
    /// `spec.availabilityMode: Unavailable`.
    pub(crate) unavailable: bool,
    /// The image to serve, or why there is none (in catalogd's words).
    pub(crate) source: Result<ImageSource, String>,
    /// `status` as stored (null when there is none).
    pub(crate) status: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ImageSource {
    /// `spec.source.image.ref`: by tag or by digest.
    pub(crate) reference: String,
    /// `pollIntervalMinutes`: how often a tag is resolved again.
    pub(crate) poll: Option<Duration>,
}

impl ClusterCatalog {
    /// The object as the controller needs it; None for one without a name.
    pub(crate) fn read(object: &DynamicObject) -> Option<ClusterCatalog> {
        let meta = &object.metadata;
        let name = meta.name.clone()?;
        let spec = &object.data["spec"];
        Some(ClusterCatalog {
            generation: meta.generation.unwrap_or_default(),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
            deleting: meta.deletion_timestamp.is_some(),
            finalizers: meta.finalizers.clone().unwrap_or_default(),
            unavailable: spec["availabilityMode"] == "Unavailable",
            source: image_source(&name, &spec["source"]),
            status: object.data["status"].clone(),
            name,
        })
    }

    pub(crate) fn has_finalizer(&self) -> bool {
        self.finalizers.iter().any(|f| f == FINALIZER)
    }
}

fn image_source(name: &str, source: &Value) -> Result<ImageSource, String> {
    let kind = source["type"].as_str().unwrap_or_default();
    if kind != "Image" {
        return Err(format!("unknown source type {kind:?}"));
    }
    let image = &source["image"];
    let Some(reference) = image["ref"].as_str() else {
        return Err(format!(
            "error parsing ClusterCatalog {name:?}, image source is nil"
        ));
    };
    Ok(ImageSource {
        reference: reference.to_owned(),
        poll: image["pollIntervalMinutes"]
            .as_u64()
            .map(|minutes| Duration::from_secs(minutes.saturating_mul(60))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn reads_what_the_controller_needs() {
        let read = ClusterCatalog::read(&object(json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": "community", "generation": 3, "resourceVersion": "42",
                         "finalizers": [FINALIZER]},
            "spec": {"source": {"type": "Image",
                                "image": {"ref": "quay.io/o/c:latest", "pollIntervalMinutes": 5}}},
        })))
        .unwrap();
        assert_eq!(
            read,
            ClusterCatalog {
                name: "community".into(),
                generation: 3,
                resource_version: "42".into(),
                deleting: false,
                finalizers: vec![FINALIZER.into()],
                unavailable: false,
                source: Ok(ImageSource {
                    reference: "quay.io/o/c:latest".into(),
                    poll: Some(Duration::from_secs(300)),
                }),
                status: Value::Null,
            }
        );
        assert!(read.has_finalizer());
    }

    #[test]
    fn sources_it_cannot_serve_say_why() {
        let read = |spec: Value| {
            ClusterCatalog::read(&object(json!({
                "metadata": {"name": "c"}, "spec": spec,
            })))
            .unwrap()
        };
        let unavailable = read(json!({"availabilityMode": "Unavailable",
                                      "source": {"type": "Git"}}));
        assert!(unavailable.unavailable);
        assert_eq!(
            unavailable.source,
            Err("unknown source type \"Git\"".into())
        );
        assert_eq!(
            read(json!({"source": {"type": "Image"}})).source,
            Err("error parsing ClusterCatalog \"c\", image source is nil".into())
        );
    }
}
