//! The status catalogd writes on a ClusterCatalog (catalogd-http.md §8): conditions
//! `Progressing` and `Serving` with catalogd's reasons and messages, `resolvedSource` (the
//! image by digest), `urls.base` and `lastUnpacked`. Computed whole from what this replica
//! serves; written only when it differs from what is stored.
use serde_json::{Map, Value, json};

/// What this replica serves for a catalog.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Served {
    /// The image by digest (`REGISTRY/REPOSITORY@sha256:…`): the CRD refuses anything else.
    pub(crate) reference: String,
    /// When it was unpacked, RFC 3339 to the second.
    pub(crate) unpacked: String,
}

/// How the last attempt to serve the wanted content went.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Progress {
    Succeeded,
    /// A failure that may go away by itself (a pull): tried again later.
    Retrying(String),
    /// A failure only a change of the object can mend.
    Blocked(String),
}

/// What the status is to say.
pub(crate) enum Wanted<'a> {
    /// Available: how the last attempt went, and what is served (when nothing is, the
    /// `Serving` condition and the fields about the content stay as they are, as catalogd
    /// leaves them).
    Available {
        progress: &'a Progress,
        served: Option<&'a Served>,
    },
    /// `availabilityMode: Unavailable`.
    Unavailable,
}

const SUCCEEDED: &str = "Successfully unpacked and stored content from resolved source";
const SERVING: &str = "Serving desired content from resolved source";
const UNAVAILABLE: &str = "Catalog availability mode is set to Unavailable";

/// The status to store, from the stored one (`current`, null when none): every field this
/// controller owns, null where it is to be cleared. `base` is `urls.base` for this catalog,
/// `now` the time of a condition that changes status.
pub(crate) fn desired(
    current: &Value,
    wanted: Wanted<'_>,
    generation: i64,
    base: &str,
    now: &str,
) -> Value {
    let mut conditions: Vec<Value> = current["conditions"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|c| c["type"] == "Progressing" || c["type"] == "Serving")
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let mut set = |kind: &str, status: bool, reason: &str, message: &str| {
        set_condition(
            &mut conditions,
            kind,
            status,
            reason,
            message,
            generation,
            now,
        )
    };
    let mut fields = Map::new();
    for key in ["resolvedSource", "urls", "lastUnpacked"] {
        fields.insert(key.to_owned(), current[key].clone());
    }
    match wanted {
        Wanted::Unavailable => {
            set("Progressing", true, "Succeeded", UNAVAILABLE);
            set("Serving", false, "UserSpecifiedUnavailable", UNAVAILABLE);
            for value in fields.values_mut() {
                *value = Value::Null;
            }
        }
        Wanted::Available { progress, served } => {
            match progress {
                Progress::Succeeded => set("Progressing", true, "Succeeded", SUCCEEDED),
                Progress::Retrying(message) => set("Progressing", true, "Retrying", message),
                Progress::Blocked(message) => set("Progressing", false, "Blocked", message),
            }
            if let Some(served) = served {
                set("Serving", true, "Available", SERVING);
                fields.insert(
                    "resolvedSource".into(),
                    json!({"type": "Image", "image": {"ref": served.reference}}),
                );
                fields.insert("urls".into(), json!({ "base": base }));
                fields.insert("lastUnpacked".into(), json!(served.unpacked));
            }
        }
    }
    fields.insert("conditions".into(), Value::Array(conditions));
    Value::Object(fields)
}

/// True when storing `desired` would change `current`.
pub(crate) fn differs(current: &Value, desired: &Value) -> bool {
    desired
        .as_object()
        .into_iter()
        .flatten()
        .any(|(key, value)| current.get(key).unwrap_or(&Value::Null) != value)
}

/// Kubernetes' `meta.SetStatusCondition`: the transition time changes only with the status.
fn set_condition(
    conditions: &mut Vec<Value>,
    kind: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: i64,
    now: &str,
) {
    let status = if status { "True" } else { "False" };
    let existing = conditions.iter().position(|c| c["type"] == kind);
    let since = existing
        .map(|i| &conditions[i])
        .filter(|c| c["status"] == status)
        .and_then(|c| c["lastTransitionTime"].as_str())
        .unwrap_or(now)
        .to_owned();
    let condition = json!({
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    });
    match existing {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "https://catalogd-service.olmv1-system.svc/catalogs/community";

    fn served() -> Served {
        Served {
            reference: format!("quay.io/o/c@sha256:{}", "a".repeat(64)),
            unpacked: "2026-08-20T10:00:00Z".into(),
        }
    }

    /// The status for an available catalog at `BASE`: most steps of these tests differ only
    /// in the progress, what is served, the generation and the time.
    fn available(
        current: &Value,
        progress: &Progress,
        served: Option<&Served>,
        generation: i64,
        now: &str,
    ) -> Value {
        desired(
            current,
            Wanted::Available { progress, served },
            generation,
            BASE,
            now,
        )
    }

    #[test]
    fn served_content_as_catalogd_writes_it() {
        let status = available(
            &Value::Null,
            &Progress::Succeeded,
            Some(&served()),
            2,
            "2026-08-20T10:00:01Z",
        );
        assert_eq!(
            status,
            json!({
                "conditions": [
                    {"type": "Progressing", "status": "True", "reason": "Succeeded",
                     "message": SUCCEEDED, "observedGeneration": 2,
                     "lastTransitionTime": "2026-08-20T10:00:01Z"},
                    {"type": "Serving", "status": "True", "reason": "Available",
                     "message": SERVING, "observedGeneration": 2,
                     "lastTransitionTime": "2026-08-20T10:00:01Z"},
                ],
                "resolvedSource": {"type": "Image", "image": {"ref": served().reference}},
                "urls": {"base": BASE},
                "lastUnpacked": "2026-08-20T10:00:00Z",
            })
        );
        assert!(!differs(&status, &status));
        assert!(differs(&Value::Null, &status));
    }

    #[test]
    fn a_failed_pull_keeps_the_content_served_and_its_times() {
        let before = available(&Value::Null, &Progress::Succeeded, Some(&served()), 1, "T1");
        let failed = available(
            &before,
            &Progress::Retrying("source catalog content: unauthorized".into()),
            None,
            2,
            "T2",
        );
        // Progressing stays True (Retrying), so its transition time is kept; Serving and
        // the content fields are untouched.
        assert_eq!(failed["conditions"][0]["reason"], "Retrying");
        assert_eq!(failed["conditions"][0]["lastTransitionTime"], "T1");
        assert_eq!(failed["conditions"][1], before["conditions"][1]);
        assert_eq!(failed["urls"], before["urls"]);
        let blocked = available(
            &failed,
            &Progress::Blocked("unknown source type \"Git\"".into()),
            None,
            3,
            "T3",
        );
        assert_eq!(blocked["conditions"][0]["status"], "False");
        assert_eq!(blocked["conditions"][0]["lastTransitionTime"], "T3");
    }

    #[test]
    fn unavailable_clears_what_clients_read() {
        let before = available(&Value::Null, &Progress::Succeeded, Some(&served()), 1, "T1");
        let status = desired(&before, Wanted::Unavailable, 2, BASE, "T2");
        assert_eq!(
            status,
            json!({
                "conditions": [
                    {"type": "Progressing", "status": "True", "reason": "Succeeded",
                     "message": UNAVAILABLE, "observedGeneration": 2,
                     "lastTransitionTime": "T1"},
                    {"type": "Serving", "status": "False",
                     "reason": "UserSpecifiedUnavailable", "message": UNAVAILABLE,
                     "observedGeneration": 2, "lastTransitionTime": "T2"},
                ],
                "resolvedSource": null,
                "urls": null,
                "lastUnpacked": null,
            })
        );
        // A stored status without the cleared fields is what this one says.
        let stored = json!({"conditions": status["conditions"].clone()});
        assert!(!differs(&stored, &status));
    }
}
