//! `olm.maxOpenShiftVersion`: whether installed operators block the cluster's next minor
//! upgrade (resolution spec §4). Never a resolution input; classic (OLM's ClusterOperator
//! check) and v1 (cluster-olm-operator) accept different spellings, so both are here.
use catalog::semver::Version;
use catalog::types::Property;

pub const MAX_OPENSHIFT_VERSION: &str = "olm.maxOpenShiftVersion";

/// An OpenShift `major.minor`, normalised so that 4.23 and 5.0 are the same release.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Minor {
    pub(crate) major: u64,
    pub(crate) minor: u64,
}

impl Minor {
    fn new(major: u64, minor: u64) -> Minor {
        if (major, minor) == (4, 23) {
            Minor { major: 5, minor: 0 }
        } else {
            Minor { major, minor }
        }
    }

    fn next(self) -> Minor {
        Minor {
            major: self.major,
            minor: self.minor.saturating_add(1),
        }
    }
}

impl std::fmt::Display for Minor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// An operator that blocks the next minor upgrade, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocking {
    pub name: String,
    pub reason: BlockReason,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockReason {
    /// Its maximum is below the next minor.
    Max(Minor),
    /// Its property cannot be read, which also blocks.
    Invalid(String),
}

/// Why the cluster's version cannot be read (OLM's words).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClusterVersionError {
    /// Classic reads the release the cluster is going to, which must be set.
    #[error("desired release version missing")]
    Missing,
    #[error("failed to parse cluster version {version:?}: {reason}")]
    Unparsable { version: String, reason: String },
}

impl ClusterVersionError {
    fn unparsable(version: &str) -> impl FnOnce(String) -> ClusterVersionError {
        move |reason| ClusterVersionError::Unparsable {
            version: version.to_owned(),
            reason,
        }
    }
}

/// The single `olm.maxOpenShiftVersion` value among `properties`, raw.
fn single_value(properties: &[Property]) -> Result<Option<&str>, String> {
    let mut values = properties
        .iter()
        .filter(|p| p.kind == MAX_OPENSHIFT_VERSION);
    let first = values.next();
    if values.next().is_some() {
        return Err(format!(
            "defining more than one {MAX_OPENSHIFT_VERSION:?} property is not allowed"
        ));
    }
    Ok(first.map(|p| p.value.as_str()))
}

/// Classic reading (§4.1): the value with its quotes stripped, parsed tolerantly, and
/// required to be exactly `major.minor` (build metadata aside).
pub(crate) fn classic_max(properties: &[Property]) -> Result<Option<Minor>, String> {
    let Some(raw) = single_value(properties)? else {
        return Ok(None);
    };
    let text = raw.trim_matches('"');
    if text.is_empty() {
        return Err(r#"value cannot be "" (an empty string)"#.to_owned());
    }
    let v = Version::parse_tolerant(text)
        .map_err(|e| format!("failed to parse {text:?} as semver: {e}"))?;
    if v.patch != 0 || !v.pre.is_empty() {
        return Err(format!(
            "property {MAX_OPENSHIFT_VERSION} must specify only <major>.<minor> version, got invalid value {text}"
        ));
    }
    Ok(Some(Minor::new(v.major, v.minor)))
}

/// The minor a classic cluster at `cluster_version` upgrades to next.
pub fn classic_next_minor(cluster_version: &str) -> Result<Minor, ClusterVersionError> {
    if cluster_version.trim().is_empty() {
        return Err(ClusterVersionError::Missing);
    }
    let v = Version::parse_tolerant(cluster_version)
        .map_err(ClusterVersionError::unparsable(cluster_version))?;
    Ok(Minor::new(v.major, v.minor).next())
}

/// The operators among `(name, properties)` that block the cluster's next minor upgrade,
/// in input order. Operators without the property never block.
pub fn classic_blocking(
    cluster_version: &str,
    operators: &[(&str, &[Property])],
) -> Result<Vec<Blocking>, ClusterVersionError> {
    let next = classic_next_minor(cluster_version)?;
    Ok(operators
        .iter()
        .filter_map(|(name, properties)| {
            let reason = match classic_max(properties) {
                Ok(Some(max)) if max < next => BlockReason::Max(max),
                Ok(_) => return None,
                Err(e) => BlockReason::Invalid(e),
            };
            Some(Blocking {
                name: (*name).to_owned(),
                reason,
            })
        })
        .collect())
}

/// v1 reading (§4.2): a JSON number spelled `x.y`, or a string with exactly one dot and
/// no `v` prefix.
pub fn v1_max(properties: &[Property]) -> Result<Option<Minor>, String> {
    let Some(raw) = single_value(properties)? else {
        return Ok(None);
    };
    let invalid =
        || format!("invalid {MAX_OPENSHIFT_VERSION} value {raw}: expected \"<major>.<minor>\"");
    let text = match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Number(_)) => {
            let (major, minor) = raw.trim().split_once('.').ok_or_else(invalid)?;
            let canonical = |s: &str| {
                !s.is_empty()
                    && s.bytes().all(|b| b.is_ascii_digit())
                    && !(s.len() > 1 && s.starts_with('0'))
            };
            if !canonical(major) || major == "0" || !canonical(minor) {
                return Err(invalid());
            }
            raw.trim().to_owned()
        }
        Ok(serde_json::Value::String(s)) if !s.starts_with('v') && s.matches('.').count() == 1 => s,
        _ => return Err(invalid()),
    };
    let v = Version::parse_tolerant(&text).map_err(|e| format!("{}: {e}", invalid()))?;
    Ok(Some(Minor::new(v.major, v.minor)))
}

/// Whether an operator with maximum `max` lets a v1 cluster at `cluster_version` upgrade:
/// the maximum must be above the cluster's (normalised) minor.
pub fn v1_compatible(max: Minor, cluster_version: &str) -> Result<bool, ClusterVersionError> {
    let v = Version::parse(cluster_version)
        .map_err(ClusterVersionError::unparsable(cluster_version))?;
    Ok(max > Minor::new(v.major, v.minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(value: &str) -> Vec<Property> {
        vec![Property {
            kind: MAX_OPENSHIFT_VERSION.to_owned(),
            value: value.to_owned(),
        }]
    }

    #[test]
    fn classic_spellings() {
        for ok in ["4.8", r#""4.8""#, r#""v4.8""#, r#""4.8.0""#, r#""4.8.0+b""#] {
            assert_eq!(
                classic_max(&prop(ok)),
                Ok(Some(Minor { major: 4, minor: 8 })),
                "{ok}"
            );
        }
        assert_eq!(
            classic_max(&prop(r#""""#)),
            Err(r#"value cannot be "" (an empty string)"#.into())
        );
        assert_eq!(
            classic_max(&prop(r#""4.8.1""#)),
            Err("property olm.maxOpenShiftVersion must specify only <major>.<minor> version, got invalid value 4.8.1".into())
        );
        assert_eq!(
            classic_max(&prop(r#""bad""#)),
            Err(r#"failed to parse "bad" as semver: Invalid character(s) found in major number "0bad""#.into())
        );
        let mut two = prop("4.8");
        two.extend(prop("4.9"));
        assert_eq!(
            classic_max(&two),
            Err(
                r#"defining more than one "olm.maxOpenShiftVersion" property is not allowed"#
                    .into()
            )
        );
        assert_eq!(classic_max(&[]), Ok(None));
    }

    #[test]
    fn v1_spellings() {
        let m = |major, minor| Ok(Some(Minor { major, minor }));
        assert_eq!(v1_max(&prop("4.18")), m(4, 18));
        assert_eq!(v1_max(&prop(r#""4.18""#)), m(4, 18));
        for bad in [
            "4.19e1",
            "4.18.0",
            "5.00",
            r#""4.18.0""#,
            r#""v4.18""#,
            "true",
            "418",
        ] {
            assert!(v1_max(&prop(bad)).is_err(), "{bad}");
        }
    }
}
