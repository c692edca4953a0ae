//! Go-compatible canonical JSON (registry-api.md §4.3, HEAD rule).
//!
//! Upstream decodes every FBC document into a generic map and re-encodes it, so the text that
//! is served and hashed is what Go's `encoding/json` prints for a `map[string]any`: keys sorted
//! byte-wise at every depth, compact, no HTML escaping, every number a float64.
use serde_json::{Number, Value};
use std::fmt::Write;

/// The canonical text of `v`.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

/// Appends the canonical text of `v` to `out`.
///
/// `serde_json::Map` is a `BTreeMap` (the `preserve_order` feature must stay off), and
/// `String`'s `Ord` is byte-wise, which is exactly Go's key order.
pub fn write_canonical(v: &Value, out: &mut String) {
    write_value(v, out, &mut None);
}

/// [`write_canonical`], also noting in `long` where the string values of at least `min` bytes
/// that are written as they are (nothing to escape) sit in `out`: the text between their
/// quotes, in order. A caller that can derive such a text (base64 manifests) stores it once.
pub fn write_canonical_noting(
    v: &Value,
    out: &mut String,
    min: usize,
    long: &mut Vec<std::ops::Range<usize>>,
) {
    write_value(v, out, &mut Some((min, long)));
}

type Noting<'a> = Option<(usize, &'a mut Vec<std::ops::Range<usize>>)>;

fn write_value(v: &Value, out: &mut String, noting: &mut Noting<'_>) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => {
            let start = out.len() + 1;
            write_string(s, out);
            if let Some((min, long)) = noting
                && s.len() >= *min
                && out.len() - 1 - start == s.len()
            {
                long.push(start..out.len() - 1);
            }
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out, noting);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_value(item, out, noting);
            }
            out.push('}');
        }
    }
}

/// Integers up to this magnitude are exact in a float64, so they print as themselves.
const EXACT_INT: u64 = 1 << 53;

fn write_number(n: &Number, out: &mut String) {
    if let Some(u) = n.as_u64() {
        if u <= EXACT_INT {
            let _ = write!(out, "{u}");
            return;
        }
    } else if let Some(i) = n.as_i64()
        && i.unsigned_abs() <= EXACT_INT
    {
        let _ = write!(out, "{i}");
        return;
    }
    // Larger integers go through float64 like Go's `any` decoding does, losing precision.
    write_float(n.as_f64().unwrap_or(0.0), out);
}

/// Prints `f` the way Go's `encoding/json` prints a float64: the shortest text that reads back
/// as the same float, plain decimal inside [1e-6, 1e21), exponent form (`1e+21`, `1e-7`)
/// outside. Callers never pass NaN or infinities (JSON cannot hold them).
pub(crate) fn write_float(f: f64, out: &mut String) {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        // Rust's `Display` for f64 is the shortest round-trip text without an exponent.
        let _ = write!(out, "{f}");
        return;
    }
    let start = out.len();
    let _ = write!(out, "{f:e}");
    // Rust writes `1e21`/`1e-7`; Go writes `1e+21`/`1e-7`.
    if let Some(e) = out[start..].find('e') {
        let at = start + e + 1;
        if !out[at..].starts_with('-') {
            out.insert(at, '+');
        }
    }
}

/// Appends `s` as a JSON string literal, escaped as Go's encoder does with HTML escaping off.
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut flushed = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Skip blocks with nothing to escape: long strings (base64 manifests) are all such.
        while let Some(block) = bytes.get(i..i + 32) {
            if block.iter().fold(false, |found, &b| found | needs_care(b)) {
                break;
            }
            i += 32;
        }
        let Some(&b) = bytes.get(i) else { break };
        let escape: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0..=0x1f => None,
            // U+2028 and U+2029 are E2 80 A8 / E2 80 A9: valid JSON, but not valid JavaScript.
            0xe2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) =>
            {
                out.push_str(&s[flushed..i]);
                out.push_str(if bytes[i + 2] == 0xa8 {
                    "\\u2028"
                } else {
                    "\\u2029"
                });
                i += 3;
                flushed = i;
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&s[flushed..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 0xf)] as char);
            }
        }
        i += 1;
        flushed = i;
    }
    out.push_str(&s[flushed..]);
    out.push('"');
}

/// Bytes that may need escaping: control characters, quote, backslash, and the lead byte of
/// U+2028/U+2029.
fn needs_care(b: u8) -> bool {
    // `|`, not `||`: without branches the block scan vectorises.
    (b < 0x20) | (b == b'"') | (b == b'\\') | (b == 0xe2)
}

/// Go's `json.MarshalIndent(v, "", "    ")` applied to compact JSON `text`: what opm prints
/// for a value it marshals whole (a converted template, say).
pub fn indent(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    reindent(text, 0, &mut out);
    out
}

/// Escapes `<`, `>` and `&` in JSON text as `\u003c`, `\u003e` and `\u0026`, which Go's
/// encoder does by default (`json.Marshal`, unlike an `Encoder` with `SetEscapeHTML(false)`).
/// In valid JSON these characters occur only inside strings, so replacing them in the text
/// keeps it valid and means the same.
pub fn escape_html(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['<', '>', '&']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

const INDENT: &str = "    ";

pub(crate) fn newline(level: usize, out: &mut String) {
    out.push('\n');
    for _ in 0..level {
        out.push_str(INDENT);
    }
}

/// Indents JSON text as Go's `json.Indent` does, nested `level` deep: one member or element
/// per line, `": "` after keys, empty objects and arrays kept as `{}`/`[]`. Strings are
/// copied whole, so megabyte-long manifests cost one copy.
pub(crate) fn reindent(text: &str, level: usize, out: &mut String) {
    let b = text.as_bytes();
    let mut depth = level;
    // Set after `{` or `[`: the line break is written only once something follows.
    let mut opened = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
            continue;
        }
        if opened && !matches!(c, b'}' | b']') {
            newline(depth, out);
        }
        let was_opened = std::mem::replace(&mut opened, false);
        match c {
            b'"' => {
                let end = string_end(b, i);
                out.push_str(&text[i..end]);
                i = end;
                continue;
            }
            b'{' | b'[' => {
                out.push(char::from(c));
                depth += 1;
                opened = true;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if !was_opened {
                    newline(depth, out);
                }
                out.push(char::from(c));
            }
            b',' => {
                out.push(',');
                newline(depth, out);
            }
            b':' => out.push_str(": "),
            _ => {
                // The rest of a number or literal.
                let end = b[i..]
                    .iter()
                    .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'))
                    .map_or(b.len(), |p| i + p);
                out.push_str(&text[i..end]);
                i = end;
                continue;
            }
        }
        i += 1;
    }
}

/// The index just past the string literal that starts at `start`.
fn string_end(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(text: &str) -> String {
        canonical(&serde_json::from_str(text).expect("test JSON"))
    }

    #[test]
    fn numbers_print_as_go_float64() {
        assert_eq!(canon("4.10"), "4.1");
        assert_eq!(canon("1.0"), "1");
        assert_eq!(canon("-1.50"), "-1.5");
        assert_eq!(canon("0"), "0");
        assert_eq!(canon("-0.0"), "-0");
        assert_eq!(canon("1e21"), "1e+21");
        assert_eq!(canon("1e20"), "100000000000000000000");
        assert_eq!(canon("123456789e13"), "1.23456789e+21");
        assert_eq!(canon("1e-7"), "1e-7");
        assert_eq!(canon("1.5e-10"), "1.5e-10");
        assert_eq!(canon("0.000001"), "0.000001");
        assert_eq!(canon("1e300"), "1e+300");
        assert_eq!(canon("0.1"), "0.1");
        assert_eq!(canon("100"), "100");
        assert_eq!(canon("-42"), "-42");
        // 2^53 + 1 is not a float64: Go prints the nearest one.
        assert_eq!(canon("9007199254740993"), "9007199254740992");
        assert_eq!(canon("9007199254740992"), "9007199254740992");
        assert_eq!(canon("-9007199254740993"), "-9007199254740992");
        assert_eq!(canon("18446744073709551615"), "18446744073709552000");
        assert_eq!(
            canon("123456789012345678901234567890"),
            "1.2345678901234568e+29"
        );
    }

    #[test]
    fn strings_are_escaped_the_go_way_without_html_escaping() {
        assert_eq!(
            canonical(&json!("a\"b\\c\nd\re\tf")),
            r#""a\"b\\c\nd\re\tf""#
        );
        assert_eq!(
            canonical(&json!("\u{0}\u{1}\u{8}\u{c}\u{1f}")),
            r#""\u0000\u0001\u0008\u000c\u001f""#
        );
        assert_eq!(
            canonical(&json!("<a href='x'>&amp;</a>")),
            r#""<a href='x'>&amp;</a>""#
        );
        assert_eq!(
            canonical(&json!("x\u{2028}y\u{2029}z")),
            r#""x\u2028y\u2029z""#
        );
        assert_eq!(canonical(&json!("é☃\u{7f}😀/")), "\"é☃\u{7f}😀/\"");
        // E2 80 AA (U+202A) shares the lead bytes but is left alone.
        assert_eq!(canonical(&json!("\u{202a}")), "\"\u{202a}\"");
    }

    #[test]
    fn keys_are_sorted_bytewise_at_every_depth_and_output_is_compact() {
        let v: Value = serde_json::from_str(
            r#"{ "b": 1, "B": 2, "a": { "z": [ true, null, {"y": 1, "x": 2} ], "é": 0, "e": 0 } }"#,
        )
        .expect("test JSON");
        assert_eq!(
            canonical(&v),
            r#"{"B":2,"a":{"e":0,"z":[true,null,{"x":2,"y":1}],"é":0},"b":1}"#
        );
        assert_eq!(canonical(&json!({})), "{}");
        assert_eq!(canonical(&json!([])), "[]");
    }

    #[test]
    fn html_escaping_and_indenting_are_go_s() {
        let text = canonical(&json!({"skipRange": ">=1.0.0 <2.0.0", "a": "x&y", "e": [], "o": {}}));
        assert_eq!(
            indent(&escape_html(&text)),
            "{\n    \"a\": \"x\\u0026y\",\n    \"e\": [],\n    \"o\": {},\n    \"skipRange\": \"\\u003e=1.0.0 \\u003c2.0.0\"\n}"
        );
        assert!(matches!(escape_html("{}"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn long_strings_written_as_they_are_are_noted() {
        let doc = json!({
            "aaaaaaaa": "short",
            "b": ["12345678", "1234567\"", {"c": "abcdefgh"}],
            "d": "1234\u{2028}56",
        });
        let mut out = String::new();
        let mut long = Vec::new();
        write_canonical_noting(&doc, &mut out, 8, &mut long);
        assert_eq!(out, canonical(&doc));
        let noted: Vec<&str> = long.iter().map(|r| &out[r.clone()]).collect();
        // Keys are not noted, nor what was escaped on the way.
        assert_eq!(noted, ["12345678", "abcdefgh"]);
    }
}
