//! Requirements as predicates over one candidate bundle (resolution spec §1.3), with the text
//! forms that unsatisfiability messages quote (§7).
use std::fmt;

use catalog::Gvk;
use catalog::property::{GVK, PACKAGE};
use catalog::quote::go_quote;
use catalog::semver::{Range, Version};
use catalog::types::Property;

use super::cel_rule::CelRule;

pub(crate) const LABEL: &str = "olm.label";

/// What a predicate is evaluated against: one catalog entry or installed operator.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Subject<'a> {
    /// The package the entry is listed under in its catalog (empty for installed CSVs).
    pub(crate) package: &'a str,
    /// The entry's own (tolerantly parsed) version, if it has one.
    pub(crate) version: Option<&'a Version>,
    pub(crate) properties: &'a [Property],
    /// `properties[i]`'s value decoded by [`decode`], `None` when it is not JSON. Decoded
    /// once per entry because an entry is tested against many requirements.
    pub(crate) values: &'a [Option<serde_json::Value>],
}

/// The JSON values of `properties`, in order.
pub(crate) fn decode(properties: &[Property]) -> Vec<Option<serde_json::Value>> {
    properties
        .iter()
        .map(|p| serde_json::from_str(&p.value).ok())
        .collect()
}

#[derive(Debug)]
pub enum Predicate {
    Gvk(Gvk),
    Package {
        name: String,
        range_text: String,
        range: Range,
    },
    Label(String),
    Cel {
        rule: String,
        failure_message: String,
        program: CelRule,
    },
    All(Vec<Predicate>),
    Any(Vec<Predicate>),
    /// True when none of the children is.
    Not(Vec<Predicate>),
}

impl Predicate {
    pub(crate) fn matches(&self, s: &Subject<'_>) -> bool {
        match self {
            Predicate::Gvk(gvk) => values_of(s, GVK).any(|v| {
                str_field(v, "group") == Some(&gvk.group)
                    && str_field(v, "version") == Some(&gvk.version)
                    && str_field(v, "kind") == Some(&gvk.kind)
            }),
            Predicate::Package { name, range, .. } => {
                let named = s.package == name
                    || values_of(s, PACKAGE).any(|v| str_field(v, "packageName") == Some(name));
                // `olm.package` versions are parsed strictly; the entry's own tolerantly.
                let in_range = values_of(s, PACKAGE).any(|v| {
                    str_field(v, "version")
                        .and_then(|text| Version::parse(text).ok())
                        .is_some_and(|version| range.contains(&version))
                }) || s.version.is_some_and(|v| range.contains(v));
                named && in_range
            }
            Predicate::Label(label) => {
                values_of(s, LABEL).any(|v| str_field(v, "label") == Some(label))
            }
            Predicate::Cel { program, .. } => program.matches_decoded(s.properties, s.values),
            Predicate::All(children) => children.iter().all(|c| c.matches(s)),
            Predicate::Any(children) => children.iter().any(|c| c.matches(s)),
            Predicate::Not(children) => !children.iter().any(|c| c.matches(s)),
        }
    }
}

/// The decoded values of the subject's properties of type `kind`; undecodable ones are
/// skipped, as they can never match.
fn values_of<'a>(s: &Subject<'a>, kind: &'a str) -> impl Iterator<Item = &'a serde_json::Value> {
    s.properties
        .iter()
        .zip(s.values)
        .filter(move |(p, _)| p.kind == kind)
        .filter_map(|(_, v)| v.as_ref())
}

fn str_field<'v>(v: &'v serde_json::Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(serde_json::Value::as_str)
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, children: &[Predicate], sep: &str| {
            for (i, c) in children.iter().enumerate() {
                if i > 0 {
                    f.write_str(sep)?;
                }
                write!(f, "{c}")?;
            }
            Ok(())
        };
        match self {
            Predicate::Gvk(Gvk {
                group,
                version,
                kind,
            }) => write!(
                f,
                "providing an API with group: {group}, version: {version}, kind: {kind}"
            ),
            Predicate::Package {
                name, range_text, ..
            } => write!(
                f,
                "with package: {name} and with version in range: {range_text}"
            ),
            Predicate::Label(label) => write!(f, "with label: {label}"),
            Predicate::Cel {
                rule,
                failure_message,
                ..
            } => write!(
                f,
                "with constraint: {} and message: {}",
                go_quote(rule),
                go_quote(failure_message)
            ),
            Predicate::All(children) => join(f, children, " and "),
            Predicate::Any(children) => join(f, children, " or "),
            // Upstream puts no "not" before the first child.
            Predicate::Not(children) => join(f, children, " and not "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(kind: &str, value: &str) -> Property {
        Property {
            kind: kind.to_owned(),
            value: value.to_owned(),
        }
    }

    #[test]
    fn package_predicate_uses_property_or_entry_identity() {
        let p = Predicate::Package {
            name: "foo".into(),
            range_text: ">=1.0.0".into(),
            range: Range::parse(">=1.0.0").expect("valid"),
        };
        let matches = |package, version, properties: &[Property]| {
            p.matches(&Subject {
                package,
                version,
                properties,
                values: &decode(properties),
            })
        };
        let props = [prop(PACKAGE, r#"{"packageName":"foo","version":"1.2.0"}"#)];
        assert!(matches("", None, &props));
        let old = Version::parse("0.5.0").expect("valid");
        let new = Version::parse("1.5.0").expect("valid");
        assert!(matches("foo", Some(&new), &[]));
        assert!(!matches("foo", Some(&old), &[]));
        assert!(!matches("bar", Some(&new), &[]));
        // `olm.package` versions are parsed strictly.
        let loose = [prop(PACKAGE, r#"{"packageName":"foo","version":"v1.2"}"#)];
        assert!(!matches("foo", None, &loose));
    }

    #[test]
    fn labels_and_quoting() {
        let l = Predicate::Label("beta".into());
        let properties = [prop(LABEL, r#"{"label":"beta"}"#)];
        assert!(l.matches(&Subject {
            package: "",
            version: None,
            properties: &properties,
            values: &decode(&properties),
        }));
        assert_eq!(l.to_string(), "with label: beta");
    }
}
