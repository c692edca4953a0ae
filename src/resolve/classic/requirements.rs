//! Requirement properties as predicates (resolution spec §1.2, §2.7, §6.1). Any failure here
//! is a hard error for the whole resolution, not an unsatisfiable result.
use serde_json::Value;

use crate::catalog::property::{GVK_REQUIRED, PACKAGE_REQUIRED};
use crate::catalog::semver::Range;
use crate::catalog::types::Property;
use crate::resolve::olm_constraint::OlmConstraint;
use crate::resolve::predicate::Predicate;

const LABEL_REQUIRED: &str = "olm.label.required";
const CONSTRAINT: &str = "olm.constraint";

/// The predicates of the requirement properties among `properties`, in property order.
pub fn requirements(properties: &[Property]) -> Result<Vec<Predicate>, String> {
    let mut predicates = Vec::new();
    for p in properties {
        let field = |value: &Value, key: &str| -> Result<String, String> {
            match value.get(key) {
                Some(Value::String(s)) => Ok(s.clone()),
                None | Some(Value::Null) => Ok(String::new()),
                Some(_) => Err(format!("parse {}: {key} is not a string", p.kind)),
            }
        };
        let decode = || {
            serde_json::from_str::<Value>(&p.value).map_err(|e| format!("parse {}: {e}", p.kind))
        };
        let predicate = match p.kind.as_str() {
            GVK_REQUIRED => {
                let v = decode()?;
                Predicate::Gvk {
                    group: field(&v, "group")?,
                    version: field(&v, "version")?,
                    kind: field(&v, "kind")?,
                }
            }
            PACKAGE_REQUIRED => {
                let v = decode()?;
                let range_text = field(&v, "versionRange")?;
                let range = Range::parse(&range_text)
                    .map_err(|e| format!("parse {PACKAGE_REQUIRED} versionRange: {e}"))?;
                Predicate::Package {
                    name: field(&v, "packageName")?,
                    range_text,
                    range,
                }
            }
            LABEL_REQUIRED => Predicate::Label(field(&decode()?, "label")?),
            CONSTRAINT => OlmConstraint::parse(&p.value)
                .map_err(|e| format!("parse olm.constraint: {e}"))?
                .to_predicate()
                .map_err(|e| format!("convert olm.constraint to resolver predicate: {e}"))?,
            _ => continue,
        };
        predicates.push(predicate);
    }
    Ok(predicates)
}
