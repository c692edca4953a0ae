//! Decoding `olm.constraint` property values (resolution spec §6.1) and turning them into
//! [`Predicate`]s. Decoding follows Go's `encoding/json` with unknown fields disallowed,
//! because catalogs written for upstream must be accepted or refused the same way.
use catalog::{Gvk, kind_name};
use serde_json::Value;

use catalog::semver::Range;

use super::cel_rule::CelRule;
use super::go_json::{Read, syntax_error};
use super::predicate::Predicate;

/// Upstream's limit (`2 << 16`); its comment says 64 KB but this is what it enforces.
pub(crate) const MAX_CONSTRAINT_SIZE: usize = 131_072;

/// A decoded constraint; its kind is the first non-null of `gvk`, `package`, `all`, `any`,
/// `not`, `cel`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OlmConstraint {
    pub(crate) failure_message: String,
    pub(crate) kind: ConstraintKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ConstraintKind {
    Gvk(Gvk),
    Package {
        package_name: String,
        version_range: String,
    },
    All(Vec<OlmConstraint>),
    Any(Vec<OlmConstraint>),
    Not(Vec<OlmConstraint>),
    Cel {
        rule: String,
    },
    /// No kind field was set; refused when converted to a predicate.
    Empty,
}

impl OlmConstraint {
    /// Decodes a raw property value. Only the first JSON value counts; trailing bytes are
    /// ignored as upstream's stream decoder does.
    pub fn parse(raw: &str) -> Result<OlmConstraint, String> {
        if raw.len() > MAX_CONSTRAINT_SIZE {
            return Err(format!(
                "olm.constraint value is greater than max constraint size {MAX_CONSTRAINT_SIZE} bytes"
            ));
        }
        if let Some(e) = syntax_error(raw, Read::FirstValue) {
            return Err(e);
        }
        let value = serde_json::Deserializer::from_str(raw)
            .into_iter::<Value>()
            .next()
            .unwrap_or(Ok(Value::Null))
            .map_err(|e| e.to_string())?;
        decode_constraint(
            &value,
            Place {
                strukt: "",
                path: "",
            },
        )
    }

    /// The kind's name as upstream's tests spell it.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            ConstraintKind::Gvk(_) => "gvk",
            ConstraintKind::Package { .. } => "package",
            ConstraintKind::All(_) => "all",
            ConstraintKind::Any(_) => "any",
            ConstraintKind::Not(_) => "not",
            ConstraintKind::Cel { .. } => "cel",
            ConstraintKind::Empty => "empty",
        }
    }

    /// Builds the predicate; fails on an empty constraint, a bad blang range or a CEL
    /// compile error, anywhere in the tree.
    pub fn to_predicate(&self) -> Result<Predicate, String> {
        let children = |cs: &[OlmConstraint]| {
            cs.iter()
                .map(OlmConstraint::to_predicate)
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(match &self.kind {
            ConstraintKind::Gvk(gvk) => Predicate::Gvk(gvk.clone()),
            ConstraintKind::Package {
                package_name,
                version_range,
            } => Predicate::Package {
                name: package_name.clone(),
                range_text: version_range.clone(),
                range: Range::parse(version_range)?,
            },
            ConstraintKind::All(cs) => Predicate::All(children(cs)?),
            ConstraintKind::Any(cs) => Predicate::Any(children(cs)?),
            ConstraintKind::Not(cs) => Predicate::Not(children(cs)?),
            ConstraintKind::Cel { rule } => Predicate::Cel {
                rule: rule.clone(),
                failure_message: self.failure_message.clone(),
                program: CelRule::compile(rule)?,
            },
            ConstraintKind::Empty => return Err("constraint is empty".to_owned()),
        })
    }
}

/// Where a value sits, for Go's type errors: the innermost struct holding it and the field
/// path from the outermost one (`Struct.outer.inner`; empty for the whole value).
#[derive(Clone, Copy)]
struct Place<'a> {
    strukt: &'a str,
    path: &'a str,
}

impl Place<'_> {
    fn type_error(&self, v: &Value, go_type: &str) -> String {
        if self.path.is_empty() {
            format!(
                "json: cannot unmarshal {} into Go value of type {go_type}",
                kind_name(v)
            )
        } else {
            format!(
                "json: cannot unmarshal {} into Go struct field {}.{} of type {go_type}",
                kind_name(v),
                self.strukt,
                self.path
            )
        }
    }
}

/// `path.field`, or `field` at the top.
fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_owned()
    } else {
        format!("{path}.{field}")
    }
}

/// The members of the JSON object at `place` matched against `known` names
/// case-insensitively (Go rules); any other member is an error. Null members count as
/// absent. A null object decodes to all-absent, as Go leaves a nil pointer.
fn members<'v, const N: usize>(
    v: &'v Value,
    known: [&str; N],
    place: Place<'_>,
    go_type: &str,
) -> Result<[Option<&'v Value>; N], String> {
    let mut slots = [None; N];
    let fields = match v {
        Value::Object(fields) => fields,
        Value::Null => return Ok(slots),
        other => return Err(place.type_error(other, go_type)),
    };
    for (key, value) in fields {
        let Some(i) = known.iter().position(|k| k.eq_ignore_ascii_case(key)) else {
            return Err(format!("json: unknown field {key:?}"));
        };
        slots[i] = (!value.is_null()).then_some(value);
    }
    Ok(slots)
}

/// Field `field` of Go struct `strukt` (at `path`), a string.
fn string(v: Option<&Value>, strukt: &str, path: &str, field: &str) -> Result<String, String> {
    match v {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Place {
            strukt,
            path: &join(path, field),
        }
        .type_error(other, "string")),
    }
}

/// The constraint at `place` (the whole value, or an element of a compound's list).
fn decode_constraint(v: &Value, place: Place<'_>) -> Result<OlmConstraint, String> {
    let [failure, gvk, package, all, any, not, cel] = members(
        v,
        [
            "failureMessage",
            "gvk",
            "package",
            "all",
            "any",
            "not",
            "cel",
        ],
        place,
        "constraints.Constraint",
    )?;
    let path = place.path;
    let failure_message = string(failure, "Constraint", path, "failureMessage")?;
    type Decode = fn(&Value, &str) -> Result<ConstraintKind, String>;
    let nested = |v: Option<&Value>, field: &str, decode: Decode| {
        v.map(|v| decode(v, &join(path, field))).transpose()
    };
    // Every present field is decoded (and can fail) even though only the first decides.
    let gvk = nested(gvk, "gvk", decode_gvk)?;
    let package = nested(package, "package", decode_package)?;
    let all = nested(all, "all", decode_all)?;
    let any = nested(any, "any", decode_any)?;
    let not = nested(not, "not", decode_not)?;
    let cel = nested(cel, "cel", decode_cel)?;
    let kind = gvk
        .or(package)
        .or(all)
        .or(any)
        .or(not)
        .or(cel)
        .unwrap_or(ConstraintKind::Empty);
    Ok(OlmConstraint {
        failure_message,
        kind,
    })
}

/// A pointer field of `Constraint` at `path`.
fn field_place(path: &str) -> Place<'_> {
    Place {
        strukt: "Constraint",
        path,
    }
}

fn decode_gvk(v: &Value, path: &str) -> Result<ConstraintKind, String> {
    let [group, version, kind] = members(
        v,
        ["group", "version", "kind"],
        field_place(path),
        "constraints.GVKConstraint",
    )?;
    let field = |v, name| string(v, "GVKConstraint", path, name);
    Ok(ConstraintKind::Gvk(Gvk {
        group: field(group, "group")?,
        version: field(version, "version")?,
        kind: field(kind, "kind")?,
    }))
}

fn decode_package(v: &Value, path: &str) -> Result<ConstraintKind, String> {
    let [name, range] = members(
        v,
        ["packageName", "versionRange"],
        field_place(path),
        "constraints.PackageConstraint",
    )?;
    Ok(ConstraintKind::Package {
        package_name: string(name, "PackageConstraint", path, "packageName")?,
        version_range: string(range, "PackageConstraint", path, "versionRange")?,
    })
}

fn decode_cel(v: &Value, path: &str) -> Result<ConstraintKind, String> {
    let [rule] = members(v, ["rule"], field_place(path), "constraints.Cel")?;
    Ok(ConstraintKind::Cel {
        rule: string(rule, "Cel", path, "rule")?,
    })
}

fn decode_all(v: &Value, path: &str) -> Result<ConstraintKind, String> {
    decode_compound(v, path).map(ConstraintKind::All)
}

fn decode_any(v: &Value, path: &str) -> Result<ConstraintKind, String> {
    decode_compound(v, path).map(ConstraintKind::Any)
}

fn decode_not(v: &Value, path: &str) -> Result<ConstraintKind, String> {
    decode_compound(v, path).map(ConstraintKind::Not)
}

fn decode_compound(v: &Value, path: &str) -> Result<Vec<OlmConstraint>, String> {
    let [constraints] = members(
        v,
        ["constraints"],
        field_place(path),
        "constraints.CompoundConstraint",
    )?;
    let list = join(path, "constraints");
    let place = Place {
        strukt: "CompoundConstraint",
        path: &list,
    };
    match constraints {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(|c| decode_constraint(c, place)).collect(),
        Some(other) => Err(place.type_error(other, "[]constraints.Constraint")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_texts() {
        let text = |raw: &str| {
            OlmConstraint::parse(raw)
                .expect(raw)
                .to_predicate()
                .expect(raw)
                .to_string()
        };
        assert_eq!(
            text(
                r#"{"package":{"packageName":"foo","versionRange":">=1.0.0"},"gvk":{"group":"g","version":"v","kind":"k"}}"#
            ),
            "providing an API with group: g, version: v, kind: k"
        );
        assert_eq!(
            text(r#"{"PACKAGE":{"PackageName":"foo","versionrange":">=1.0.0"}} trailing"#),
            "with package: foo and with version in range: >=1.0.0"
        );
        assert_eq!(
            text(r#"{"failureMessage":"m","cel":{"rule":"true"}}"#),
            r#"with constraint: "true" and message: "m""#
        );
        assert_eq!(
            text(
                r#"{"gvk":null,"all":{"constraints":[{"gvk":{"group":"a","version":"b","kind":"c"}}]}}"#
            ),
            "providing an API with group: a, version: b, kind: c"
        );
    }

    #[test]
    fn errors() {
        let parse_err = |raw: &str| OlmConstraint::parse(raw).expect_err(raw);
        let convert_err = |raw: &str| {
            OlmConstraint::parse(raw)
                .expect(raw)
                .to_predicate()
                .expect_err(raw)
        };
        assert_eq!(
            parse_err(r#"{"gvk":{"group":"g","plural":"x"}}"#),
            r#"json: unknown field "plural""#
        );
        assert_eq!(
            parse_err(r#"{"failureMessage":1}"#),
            "json: cannot unmarshal number into Go struct field Constraint.failureMessage of type string"
        );
        assert_eq!(
            parse_err(r#"{"all":{"constraints":{}}}"#),
            "json: cannot unmarshal object into Go struct field CompoundConstraint.all.constraints of type []constraints.Constraint"
        );
        assert_eq!(parse_err(""), "EOF");
        assert_eq!(parse_err(r#"{"gvk":{"group":"g""#), "unexpected EOF");
        assert_eq!(
            parse_err(r#"{"gvk":{"group":"g",}}"#),
            "invalid character '}' looking for beginning of object key string"
        );
        assert_eq!(
            parse_err(r#"{"any":{"constraints":[{"not":{"constraints":[{"gvk":{"kind":7}}]}}]}}"#),
            "json: cannot unmarshal number into Go struct field GVKConstraint.any.constraints.not.constraints.gvk.kind of type string"
        );
        assert_eq!(
            parse_err(r#"{"all":{"constraints":["gvk"]}}"#),
            "json: cannot unmarshal string into Go struct field CompoundConstraint.all.constraints of type constraints.Constraint"
        );
        assert_eq!(
            parse_err(r#"{"cel":"true"}"#),
            "json: cannot unmarshal string into Go struct field Constraint.cel of type constraints.Cel"
        );
        assert_eq!(
            parse_err("[]"),
            "json: cannot unmarshal array into Go value of type constraints.Constraint"
        );
        assert_eq!(convert_err("{}"), "constraint is empty");
        assert_eq!(
            convert_err(r#"{"any":{"constraints":[{"failureMessage":"x"}]}}"#),
            "constraint is empty"
        );
        assert_eq!(
            convert_err(r#"{"package":{"packageName":"p","versionRange":"~1.0.0"}}"#),
            r#"Could not parse Range "~1.0.0": Could not parse comparator "~" in "~1.0.0""#
        );
        assert_eq!(
            convert_err(r#"{"cel":{"rule":"1"}}"#),
            "cel expressions must have type Bool"
        );
    }

    #[test]
    fn size_limit_is_inclusive() {
        let pad = |n: usize| {
            let base = r#"{"failureMessage":""#;
            let tail = r#"","gvk":{"group":"g","version":"v","kind":"k"}}"#;
            format!("{base}{}{tail}", "a".repeat(n - base.len() - tail.len()))
        };
        let exact = pad(MAX_CONSTRAINT_SIZE);
        assert_eq!(exact.len(), MAX_CONSTRAINT_SIZE);
        assert_eq!(
            OlmConstraint::parse(&exact).expect("fits").kind_name(),
            "gvk"
        );
        assert_eq!(
            OlmConstraint::parse(&pad(MAX_CONSTRAINT_SIZE + 1)).expect_err("too big"),
            "olm.constraint value is greater than max constraint size 131072 bytes"
        );
    }
}
