//! Checks of `dependencies.yaml` items (catalog-formats.md §C.3), with upstream's messages.
use super::metadata::Item;
// A dependency's type names the kind of property it requires, so `olm.gvk` and
// `olm.package` are the property types' own names.
use catalog::property::{GVK, PACKAGE};
use catalog::semver::validate_range;
use serde_json::Value;

pub(crate) const LABEL: &str = "olm.label";
pub(crate) const CONSTRAINT: &str = "olm.constraint";

/// Largest `olm.constraint` value the operator-framework parser accepts.
const MAX_CONSTRAINT_BYTES: usize = 2 << 16;

/// Constraint kinds other than CEL that the parser knows.
const COMPOUND_CONSTRAINTS: [&str; 5] = ["gvk", "package", "all", "any", "not"];

/// Every problem of `items`, each as `dependencies[i] (<type>): <message>`.
pub(crate) fn check(items: &[Item]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let value: Value = serde_json::from_str(&item.value).unwrap_or(Value::Null);
        let field = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or("");
        let mut messages: Vec<String> = Vec::new();
        match item.kind.as_str() {
            GVK => {
                for (key, message) in [
                    ("group", "API Group is empty"),
                    ("version", "API Version is empty"),
                    ("kind", "API Kind is empty"),
                ] {
                    if field(key).is_empty() {
                        messages.push(message.to_owned());
                    }
                }
            }
            PACKAGE => {
                if field("packageName").is_empty() {
                    messages.push("Package name is empty".to_owned());
                }
                let range = field("version");
                if range.is_empty() {
                    messages.push("Package version is empty".to_owned());
                } else if let Err(e) = validate_range(range) {
                    messages.push(format!("Invalid semver format version {range:?}: {e}"));
                }
            }
            LABEL => {
                if field("label").is_empty() {
                    messages.push("Label information is missing".to_owned());
                }
            }
            CONSTRAINT => messages.extend(check_constraint(&item.value, &value)),
            other => messages.push(format!("unsupported dependency type {other}")),
        }
        problems.extend(
            messages
                .into_iter()
                .map(|m| format!("dependencies[{i}] ({}): {m}", item.kind)),
        );
    }
    problems
}

fn check_constraint(text: &str, value: &Value) -> Option<String> {
    if text.len() > MAX_CONSTRAINT_BYTES {
        return Some(format!(
            "olm.constraint value is greater than max constraint size {MAX_CONSTRAINT_BYTES} bytes"
        ));
    }
    match value.get("cel") {
        Some(cel) => {
            let rule = cel.get("rule").and_then(Value::as_str).unwrap_or("");
            rule.trim()
                .is_empty()
                .then(|| "The CEL expression is missing".to_owned())
        }
        None => (!COMPOUND_CONSTRAINTS.iter().any(|k| value.get(k).is_some()))
            .then(|| "The CEL field is missing".to_owned()),
    }
}
