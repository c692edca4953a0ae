//! Block-style YAML for JSON values, laid out as upstream's writer does (two-space indent,
//! sequences in mappings not indented, keys in the order given).
//!
//! Strings are quoted whenever a YAML 1.1 reader (upstream's) or a YAML 1.2 reader could
//! read them as something else: `yes`, `on`, `1_000`, `0.5`, timestamps, `null`... — in
//! double quotes, as upstream's emitter quotes them; single quotes are for strings that
//! cannot be plain for their characters (`- a`). Multi-line strings become literal blocks.
use crate::json::{write_canonical, write_string};
use serde_json::{Map, Value};

/// Appends `map` as a block mapping at column 0.
pub(super) fn write_document(map: &Map<String, Value>, out: &mut String) {
    mapping(map, 0, false, out);
}

fn pad(indent: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// `inline`: the cursor already sits at column `indent` (after a `- `).
fn mapping(map: &Map<String, Value>, indent: usize, inline: bool, out: &mut String) {
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 || !inline {
            pad(indent, out);
        }
        string(key, out);
        out.push(':');
        match value {
            Value::Object(m) if !m.is_empty() => {
                out.push('\n');
                mapping(m, indent + 2, false, out);
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                sequence(items, indent, false, out);
            }
            _ => {
                out.push(' ');
                scalar(value, indent + 2, out);
            }
        }
    }
}

fn sequence(items: &[Value], indent: usize, inline: bool, out: &mut String) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !inline {
            pad(indent, out);
        }
        out.push_str("- ");
        match item {
            Value::Object(m) if !m.is_empty() => mapping(m, indent + 2, true, out),
            Value::Array(inner) if !inner.is_empty() => sequence(inner, indent + 2, true, out),
            _ => scalar(item, indent + 2, out),
        }
    }
}

/// A scalar (or empty collection) and its line end; literal block lines go at `indent`.
fn scalar(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::String(s) if s.contains('\n') && literal_ok(s) => literal(s, indent, out),
        Value::String(s) => string(s, out),
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
        Value::Null | Value::Bool(_) | Value::Number(_) => write_canonical(v, out),
    }
    out.push('\n');
}

fn string(s: &str, out: &mut String) {
    if plain_ok(s) {
        out.push_str(s);
    } else if reads_as_non_string(s) {
        // Upstream's emitter double-quotes a string its reader would take for another type
        // (`defaultChannel: ""`, `"yes"`, `"1.0"`); single quotes are its fallback only for
        // strings that cannot be plain for their characters.
        write_string(s, out);
    } else if !s.contains('\n') && !s.chars().any(is_special_char) {
        out.push('\'');
        out.push_str(&s.replace('\'', "''"));
        out.push('\'');
    } else {
        // JSON escapes are valid in YAML double-quoted scalars.
        write_string(s, out);
    }
}

/// `|` keeps one final line break, `|-` none, `|+` all of them.
fn literal(s: &str, indent: usize, out: &mut String) {
    let trailing = s.len() - s.trim_end_matches('\n').len();
    let body = match trailing {
        0 => {
            out.push_str("|-");
            s
        }
        1 => {
            out.push('|');
            &s[..s.len() - 1]
        }
        _ => {
            out.push_str("|+");
            &s[..s.len() - 1]
        }
    };
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            pad(indent, out);
            out.push_str(line);
        }
    }
}

/// Characters that only a double-quoted scalar can carry.
fn is_special_char(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// A literal block needs printable text, and a first content line that does not start with a
/// space (which would need an explicit indentation indicator).
fn literal_ok(s: &str) -> bool {
    !s.chars().any(|c| is_special_char(c) && c != '\t')
        && !s.trim_start_matches('\n').starts_with([' ', '\t'])
        && !s.trim_start_matches('\n').is_empty()
}

fn plain_ok(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    !"-?:,[]{}#&*!|>'\"%@` \t".contains(first)
        && !s.ends_with([' ', '\t', ':'])
        && !s.contains(": ")
        && !s.contains(" #")
        && !s
            .chars()
            .any(|c| is_special_char(c) || c == '\n' || c == '\t')
        && !reads_as_non_string(s)
}

/// Whether a YAML 1.1 or 1.2 reader would take the plain scalar `s` for a null, boolean,
/// number or timestamp.
fn reads_as_non_string(s: &str) -> bool {
    const WORDS: [&str; 31] = [
        "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
        "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
        ".inf", ".Inf", ".INF", ".nan", ".NaN",
    ];
    // `=` and `<<` are YAML 1.1's value and merge keys.
    let other = [
        "-.inf", "-.Inf", "-.INF", "+.inf", "+.Inf", "+.INF", ".NAN", "=", "<<",
    ];
    if WORDS.contains(&s) || other.contains(&s) {
        return true;
    }
    let Some(&first) = s.as_bytes().first() else {
        return true;
    };
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return false;
    }
    let t: String = s.chars().filter(|c| *c != '_').collect();
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(&t);
    let radix = |prefix: &str, radix: u32| {
        unsigned
            .strip_prefix(prefix)
            .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_digit(radix)))
    };
    // Numbers in any base, floats in any spelling, sexagesimal `1:30` and dates.
    radix("0x", 16)
        || radix("0o", 8)
        || radix("0b", 2)
        || t.parse::<f64>().is_ok()
        || (first.is_ascii_digit() && s.contains(':'))
        || s.get(..5)
            .is_some_and(|p| p.as_bytes()[..4].iter().all(u8::is_ascii_digit) && p.ends_with('-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::yaml_to_json;
    use serde_json::json;

    fn yaml(v: Value) -> String {
        let mut out = String::new();
        write_document(v.as_object().expect("object"), &mut out);
        out
    }

    #[test]
    fn layout_follows_upstream() {
        let v = json!({
            "a": {"b": [1, {"c": null, "d": [true, []]}, [2, 3]], "e": {}},
            "f": "text",
            "g": 1.5e-7
        });
        assert_eq!(
            yaml(v),
            "a:\n  b:\n  - 1\n  - c: null\n    d:\n    - true\n    - []\n  - - 2\n    - 3\n  e: {}\nf: text\ng: 1.5e-7\n"
        );
    }

    #[test]
    fn strings_read_back_unchanged_and_ambiguous_ones_are_quoted() {
        let quoted = [
            "yes",
            "no",
            "on",
            "off",
            "y",
            "n",
            "Yes",
            "NO",
            "true",
            "null",
            "~",
            "",
            "1.0",
            "4.10",
            "0755",
            "1_000",
            "0x10",
            "1e3",
            ".5",
            "-1",
            "+1",
            ".inf",
            "2025-06-24T14:07:09",
            "1:30",
            " lead",
            "trail ",
            "- x",
            "#c",
            "a: b",
            "a #b",
            "@x",
            "`x",
            "'q'",
            "\"q\"",
            "x:",
            "tab\there",
            "nul\u{0}",
            ">=1.0.0 <2.0.0",
            "=",
            "<<",
        ];
        for s in quoted {
            let text = yaml(json!({ "k": s }));
            assert!(
                !text.starts_with(&format!("k: {s}\n")) || s.is_empty(),
                "{s:?} should be quoted: {text}"
            );
            assert_eq!(
                yaml_to_json(text.as_bytes()),
                Ok(json!({ "k": s })),
                "{text}"
            );
        }
        for s in [
            "0.1.0",
            "v1.0.0",
            "<0.6.0",
            "quay.io/a/b@sha256:abc",
            "olm.package",
            "a-b",
            "x y",
            "é☃",
            "it's",
        ] {
            let text = yaml(json!({ "k": s }));
            assert_eq!(text, format!("k: {s}\n"));
            assert_eq!(yaml_to_json(text.as_bytes()), Ok(json!({ "k": s })));
        }
    }

    #[test]
    fn strings_of_other_types_are_double_quoted_others_single_quoted() {
        // As opm writes them (observed with opm v1.26.4's `render -o yaml`).
        for (s, written) in [
            ("", r#""""#),
            ("yes", r#""yes""#),
            ("on", r#""on""#),
            ("1.0", r#""1.0""#),
            ("null", r#""null""#),
            ("1_000", r#""1_000""#),
            ("1:30", r#""1:30""#),
            ("2001-12-14", r#""2001-12-14""#),
            ("- a", "'- a'"),
        ] {
            assert_eq!(yaml(json!({ "k": s })), format!("k: {written}\n"), "{s:?}");
        }
    }

    #[test]
    fn multi_line_strings_are_literal_blocks() {
        let cases = [
            ("a\nb", "k: |-\n  a\n  b\n"),
            ("a\n\nb\n", "k: |\n  a\n\n  b\n"),
            ("a\n\n", "k: |+\n  a\n\n"),
            ("\nlead", "k: |-\n\n  lead\n"),
            ("  indented\nx", "k: \"  indented\\nx\"\n"),
            ("a\r\nb", "k: \"a\\r\\nb\"\n"),
            ("\n", "k: \"\\n\"\n"),
        ];
        for (s, expected) in cases {
            let text = yaml(json!({ "k": s }));
            assert_eq!(text, expected);
            assert_eq!(
                yaml_to_json(text.as_bytes()),
                Ok(json!({ "k": s })),
                "{text}"
            );
        }
        let nested = json!({"a": [{"d": "x\ny"}]});
        let text = yaml(nested.clone());
        assert_eq!(text, "a:\n- d: |-\n    x\n    y\n");
        assert_eq!(yaml_to_json(text.as_bytes()), Ok(nested));
    }
}
