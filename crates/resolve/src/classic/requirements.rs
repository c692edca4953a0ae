//! Requirement properties as predicates (resolution spec §1.2, §2.7, §6.1). Any failure here
//! is a hard error for the whole resolution, not an unsatisfiable result.
use serde_json::Value;

use crate::go_json::{Read, syntax_error};
use crate::olm_constraint::OlmConstraint;
use crate::predicate::Predicate;
use catalog::property::{GVK_REQUIRED, PACKAGE_REQUIRED};
use catalog::semver::Range;
use catalog::types::Property;
use catalog::{Gvk, kind_name};

const LABEL_REQUIRED: &str = "olm.label.required";
const CONSTRAINT: &str = "olm.constraint";

/// The predicates of the requirement properties among `properties`, in property order.
/// Errors are OLM's words: legacy requirement values decode as Go's `json.Unmarshal` fills
/// an anonymous struct of strings, and their errors (and blang's) are not wrapped.
pub(crate) fn requirements(properties: &[Property]) -> Result<Vec<Predicate>, String> {
    let mut predicates = Vec::new();
    for p in properties {
        let predicate = match p.kind.as_str() {
            GVK_REQUIRED => {
                let [group, version, kind] = string_fields(&p.value, ["group", "version", "kind"])?;
                Predicate::Gvk(Gvk {
                    group,
                    version,
                    kind,
                })
            }
            PACKAGE_REQUIRED => {
                let [name, range_text] = string_fields(&p.value, ["packageName", "versionRange"])?;
                Predicate::Package {
                    range: Range::parse(&range_text)?,
                    name,
                    range_text,
                }
            }
            LABEL_REQUIRED => {
                let [label] = string_fields(&p.value, ["label"])?;
                Predicate::Label(label)
            }
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

/// The string fields of a JSON object named (case-insensitively) `fields`; other members
/// are ignored and `null` leaves a field empty, as in Go.
fn string_fields<const N: usize>(value: &str, fields: [&str; N]) -> Result<[String; N], String> {
    if let Some(e) = syntax_error(value, Read::Whole) {
        return Err(e);
    }
    let decoded: Value = serde_json::from_str(value).map_err(|e| e.to_string())?;
    let mut out = fields.map(|_| String::new());
    let members = match &decoded {
        Value::Null => return Ok(out),
        Value::Object(members) => members,
        other => {
            let go_fields: Vec<String> = fields
                .iter()
                .map(|f| {
                    let mut go_name = (*f).to_owned();
                    go_name[..1].make_ascii_uppercase();
                    format!(r#"{go_name} string "json:\"{f}\"""#)
                })
                .collect();
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type struct {{ {} }}",
                kind_name(other),
                go_fields.join("; ")
            ));
        }
    };
    for (key, member) in members {
        let Some(i) = fields.iter().position(|f| f.eq_ignore_ascii_case(key)) else {
            continue;
        };
        match member {
            Value::String(s) => out[i] = s.clone(),
            Value::Null => {}
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field .{} of type string",
                    kind_name(other),
                    fields[i]
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(kind: &str, value: &str) -> String {
        let p = Property {
            kind: kind.into(),
            value: value.into(),
        };
        requirements(&[p]).expect_err(value)
    }

    #[test]
    fn legacy_values_decode_as_go_does() {
        let p = |kind: &str, value: &str| Property {
            kind: kind.into(),
            value: value.into(),
        };
        let got = requirements(&[
            p(
                GVK_REQUIRED,
                r#"{"GROUP":"g","version":"v","kind":"k","plural":"ks"}"#,
            ),
            p(LABEL_REQUIRED, "null"),
            p(
                PACKAGE_REQUIRED,
                r#"{"packageName":"p","versionRange":">=1.0.0"}"#,
            ),
        ])
        .expect("decodes");
        let texts: Vec<String> = got.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "providing an API with group: g, version: v, kind: k",
                "with label: ",
                "with package: p and with version in range: >=1.0.0",
            ]
        );
    }

    #[test]
    fn malformed_values_fail_in_olms_words() {
        for (kind, value, message) in [
            (GVK_REQUIRED, "", "unexpected end of JSON input"),
            (
                GVK_REQUIRED,
                r#"{"group":"g""#,
                "unexpected end of JSON input",
            ),
            (
                GVK_REQUIRED,
                "{group: g}",
                "invalid character 'g' looking for beginning of object key string",
            ),
            (
                GVK_REQUIRED,
                r#"{"group":"g"} {}"#,
                "invalid character '{' after top-level value",
            ),
            (
                GVK_REQUIRED,
                r#"{"group":1}"#,
                "json: cannot unmarshal number into Go struct field .group of type string",
            ),
            (
                GVK_REQUIRED,
                r#"["g","v","k"]"#,
                r#"json: cannot unmarshal array into Go value of type struct { Group string "json:\"group\""; Version string "json:\"version\""; Kind string "json:\"kind\"" }"#,
            ),
            (
                PACKAGE_REQUIRED,
                r#""p""#,
                r#"json: cannot unmarshal string into Go value of type struct { PackageName string "json:\"packageName\""; VersionRange string "json:\"versionRange\"" }"#,
            ),
            (
                PACKAGE_REQUIRED,
                r#"{"packageName":"p","versionRange":{"min":"1.0.0"}}"#,
                "json: cannot unmarshal object into Go struct field .versionRange of type string",
            ),
            (
                PACKAGE_REQUIRED,
                r#"{"packageName":"p","versionRange":"~1.0.0"}"#,
                r#"Could not parse Range "~1.0.0": Could not parse comparator "~" in "~1.0.0""#,
            ),
            (
                LABEL_REQUIRED,
                r#"{"label":true}"#,
                "json: cannot unmarshal bool into Go struct field .label of type string",
            ),
            (
                LABEL_REQUIRED,
                "7",
                r#"json: cannot unmarshal number into Go value of type struct { Label string "json:\"label\"" }"#,
            ),
            (CONSTRAINT, "", "parse olm.constraint: EOF"),
            (
                CONSTRAINT,
                r#"{"gvk":{"group":"g"}"#,
                "parse olm.constraint: unexpected EOF",
            ),
            (
                CONSTRAINT,
                r#"{"gvk":{"group":"g","plural":"gs"}}"#,
                r#"parse olm.constraint: json: unknown field "plural""#,
            ),
            (
                CONSTRAINT,
                r#"{"gvk":"g/v/k"}"#,
                "parse olm.constraint: json: cannot unmarshal string into Go struct field Constraint.gvk of type constraints.GVKConstraint",
            ),
            (
                CONSTRAINT,
                r#"{"failureMessage":"m"}"#,
                "convert olm.constraint to resolver predicate: constraint is empty",
            ),
            (
                CONSTRAINT,
                r#"{"all":{"constraints":[{"package":{"packageName":"p","versionRange":"1.2"}}]}}"#,
                r#"convert olm.constraint to resolver predicate: Could not parse Range "1.2": Could not parse version "1.2" in "1.2": No Major.Minor.Patch elements found"#,
            ),
        ] {
            assert_eq!(error(kind, value), message, "{kind} {value}");
        }
    }
}
