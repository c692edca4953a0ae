//! Keeping megabytes of base64 away from the YAML parser.
//!
//! Most of a YAML catalog's bytes are `data: <base64>` manifests and `base64data: <base64>`
//! icons, and libyaml scans plain scalars a character at a time. Lines of the form
//! `[indent][- ]key: <long base64>` have their value swapped for a short marker before
//! parsing, and the value is put back afterwards. A base64 text that long can only be a
//! string, so the result is the same, provided that every marker comes back as a whole
//! string value exactly once; if one does not (the line was inside a block scalar, or a plain
//! scalar continued on the next line), the caller parses the original document instead.
use crate::fields::all_in_alphabet;
use serde_json::Value;

/// Shorter values are not worth lifting.
const MIN_LEN: usize = 256;
const MARK: &str = "__olm_registry_lifted_scalar_";

/// A document with its long scalars lifted out.
pub(super) struct Lifted<'a> {
    /// The document text with markers in place of the scalars (same lines, shorter).
    pub(crate) text: Vec<u8>,
    scalars: Vec<&'a [u8]>,
}

/// Lifts the long base64 values out of `doc`, or returns `None` if there are none.
pub(super) fn lift(doc: &[u8]) -> Option<Lifted<'_>> {
    let mut scalars = Vec::new();
    let mut text = Vec::new();
    let mut copied = 0;
    let mut line_start = 0;
    for line in doc.split(|&b| b == b'\n') {
        if let Some((from, to)) = long_value(line) {
            text.extend_from_slice(&doc[copied..line_start + from]);
            text.extend_from_slice(format!("{MARK}{}", scalars.len()).as_bytes());
            scalars.push(&line[from..to]);
            copied = line_start + to;
        }
        line_start += line.len() + 1;
    }
    if scalars.is_empty() {
        return None;
    }
    text.extend_from_slice(&doc[copied..]);
    Some(Lifted { text, scalars })
}

/// The byte range of the value on a `[indent][- ]key: <long base64>` line.
fn long_value(line: &[u8]) -> Option<(usize, usize)> {
    let end = line.len() - usize::from(line.last() == Some(&b'\r'));
    if end < MIN_LEN {
        return None;
    }
    let mut i = 0;
    loop {
        while line.get(i) == Some(&b' ') {
            i += 1;
        }
        if line.get(i..i + 2) != Some(b"- ") {
            break;
        }
        i += 2;
    }
    let key = i;
    while i < end
        && (line[i].is_ascii_alphanumeric() || matches!(line[i], b'_' | b'.' | b'-' | b'/'))
    {
        i += 1;
    }
    if i == key || line.get(i..i + 2) != Some(b": ") {
        return None;
    }
    i += 1;
    while line.get(i) == Some(&b' ') {
        i += 1;
    }
    let value = &line[i..end];
    let body = value
        .strip_suffix(b"==")
        .or_else(|| value.strip_suffix(b"="))
        .unwrap_or(value);
    // A letter other than the exponent's `e` (or a `/`) rules out a number.
    let not_a_number = || {
        value
            .iter()
            .any(|&b| b == b'/' || (b.is_ascii_alphabetic() && (b | 0x20) != b'e'))
    };
    (value.len() >= MIN_LEN && all_in_alphabet(body) && not_a_number()).then_some((i, end))
}

impl Lifted<'_> {
    /// Puts the lifted scalars back into the parsed `value`; false if any marker is not found
    /// exactly once as a whole string.
    pub(super) fn restore(&self, value: &mut Value) -> bool {
        let mut found = vec![false; self.scalars.len()];
        self.restore_in(value, &mut found) && found.iter().all(|f| *f)
    }

    fn restore_in(&self, value: &mut Value, found: &mut [bool]) -> bool {
        match value {
            Value::String(s) => {
                let Some(index) = s.strip_prefix(MARK) else {
                    return true;
                };
                let Some(i) = index
                    .parse::<usize>()
                    .ok()
                    .filter(|i| i.to_string() == index && *i < found.len())
                else {
                    return false;
                };
                if std::mem::replace(&mut found[i], true) {
                    return false;
                }
                // The alphabet check made the scalar ASCII, so this cannot fail.
                match std::str::from_utf8(self.scalars[i]) {
                    Ok(text) => *s = text.to_owned(),
                    Err(_) => return false,
                }
                true
            }
            Value::Array(items) => items.iter_mut().all(|v| self.restore_in(v, found)),
            Value::Object(map) => map.values_mut().all(|v| self.restore_in(v, found)),
            Value::Null | Value::Bool(_) | Value::Number(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_long_base64_values_of_simple_keys_are_lifted() {
        let b64 = "QUJD".repeat(100);
        let doc = format!(
            "a: {b64}\n  - - data: {b64}==\r\nb: {}\nc: '{b64}'\nd: {b64} # x\n{b64}\ne: {}\n",
            &b64[..100],
            "1".repeat(400)
        );
        let lifted = lift(doc.as_bytes()).expect("lifted");
        assert_eq!(
            String::from_utf8(lifted.text.clone()).expect("UTF-8"),
            format!(
                "a: {MARK}0\n  - - data: {MARK}1\r\nb: {}\nc: '{b64}'\nd: {b64} # x\n{b64}\ne: {}\n",
                &b64[..100],
                "1".repeat(400)
            )
        );
        assert_eq!(
            lifted.scalars,
            [b64.as_bytes(), format!("{b64}==").as_bytes()]
        );
        assert!(lift(b"a: b\n").is_none());
    }

    #[test]
    fn markers_must_come_back_whole_and_once() {
        let b64 = "QUJD".repeat(100);
        let doc = format!("a: {b64}\n");
        let lifted = lift(doc.as_bytes()).expect("lifted");
        let mut ok = serde_json::json!({"a": format!("{MARK}0")});
        assert!(lifted.restore(&mut ok));
        assert_eq!(ok, serde_json::json!({"a": b64}));
        for bad in [
            serde_json::json!({"a": format!("{MARK}0 more")}),
            serde_json::json!({"a": format!("{MARK}0"), "b": format!("{MARK}0")}),
            serde_json::json!({"a": format!("{MARK}1")}),
            serde_json::json!({"a": format!("{MARK}00")}),
            serde_json::json!({"a": "nothing"}),
        ] {
            let mut v = bad.clone();
            assert!(!lifted.restore(&mut v), "{bad}");
        }
    }
}
