//! Taking generic JSON values apart with Go's `encoding/json` rules, so that documents and
//! property values are accepted and rejected exactly as upstream's struct decoding does:
//! field names match case-insensitively, unknown fields are ignored, `null` leaves a field at
//! its zero value, and a wrong JSON type is an error naming the struct field and the Go type.
use serde_json::{Map, Value};

/// The JSON type of `v` in the words Go uses in `cannot unmarshal <type>` errors.
pub fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `key` names `field` under Go's simple case folding. `field` is ASCII; the only
/// non-ASCII characters that fold onto ASCII letters are the long s and the Kelvin sign.
pub(crate) fn fold_eq(key: &str, field: &str) -> bool {
    let mut want = field.bytes();
    for c in key.chars() {
        let folded = match c {
            'ſ' => b's',
            '\u{212a}' => b'k',
            c if c.is_ascii() => c.to_ascii_lowercase() as u8,
            _ => return false,
        };
        match want.next() {
            Some(w) if w.to_ascii_lowercase() == folded => {}
            _ => return false,
        }
    }
    want.next().is_none()
}

/// `json: cannot unmarshal <kind> into Go value of type <go_type>`, for a whole value of the
/// wrong JSON type.
pub(crate) fn value_type_error(v: &Value, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go value of type {go_type}",
        kind_name(v)
    )
}

/// Where a value sits, for error messages: the innermost Go struct and the field path from
/// the outermost one (Go ≥ 1.20 prints `Struct.outer.inner`).
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub(crate) strukt: &'a str,
    pub(crate) path: &'a str,
}

impl At<'_> {
    fn error(&self, v: &Value, go_type: &str) -> String {
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{} of type {go_type}",
            kind_name(v),
            self.strukt,
            self.path
        )
    }

    /// A Go `string` field.
    pub(crate) fn string(&self, v: Value) -> Result<String, String> {
        match v {
            Value::String(s) => Ok(s),
            Value::Null => Ok(String::new()),
            other => Err(self.error(&other, "string")),
        }
    }

    /// A Go slice field; `null` is an empty slice.
    pub(crate) fn array(&self, v: Value, go_type: &str) -> Result<Vec<Value>, String> {
        match v {
            Value::Array(items) => Ok(items),
            Value::Null => Ok(Vec::new()),
            other => Err(self.error(&other, go_type)),
        }
    }

    /// A Go struct (or pointer to struct) field; `null` is `None`.
    pub(crate) fn object(
        &self,
        v: Value,
        go_type: &str,
    ) -> Result<Option<Map<String, Value>>, String> {
        match v {
            Value::Object(map) => Ok(Some(map)),
            Value::Null => Ok(None),
            other => Err(self.error(&other, go_type)),
        }
    }

    /// Checks that `v` can fill a Go struct (`null` can).
    pub(crate) fn check_object(&self, v: &Value, go_type: &str) -> Result<(), String> {
        match v {
            Value::Object(_) | Value::Null => Ok(()),
            other => Err(self.error(other, go_type)),
        }
    }

    /// A Go `[]string` field.
    pub(crate) fn strings(&self, v: Value) -> Result<Vec<String>, String> {
        self.array(v, "[]string")?
            .into_iter()
            .map(|item| self.string(item))
            .collect()
    }

    /// A Go `map[string]string` field, kept as a JSON object.
    pub(crate) fn string_map(&self, v: Value) -> Result<Option<Map<String, Value>>, String> {
        let map = self.object(v, "map[string]string")?;
        if let Some(map) = &map
            && let Some(bad) = map
                .values()
                .find(|item| !matches!(item, Value::String(_) | Value::Null))
        {
            return Err(self.error(bad, "string"));
        }
        Ok(map)
    }
}

/// Walks the members of a JSON object the way Go fills a struct: every member whose key folds
/// onto one of `fields` is handed to `set` with that field's index (a later member overwrites
/// an earlier one); other members are ignored.
///
/// `serde_json::Map` is sorted, so when two keys differ only in case (`entries`, `Entries`) the
/// byte-wise last one wins, where Go would take the one written last in the document.
pub(crate) fn for_each_field(
    map: Map<String, Value>,
    fields: &[&str],
    mut set: impl FnMut(usize, Value) -> Result<(), String>,
) -> Result<(), String> {
    for (key, value) in map {
        if let Some(i) = fields.iter().position(|f| fold_eq(&key, f)) {
            set(i, value)?;
        }
    }
    Ok(())
}

/// Checks `s` as Go's `base64.StdEncoding` reads it (the decoding of a JSON string into a Go
/// `[]byte`): standard alphabet, `=` padding required, CR and LF ignored, unused trailing bits
/// not checked. Linear and allocation-free: manifests are megabytes of base64. Says whether
/// `s` holds line breaks, which a decoder must then skip (found here without another scan).
pub(crate) fn check_std_base64(s: &str) -> Result<bool, String> {
    let body = s
        .strip_suffix("==")
        .or_else(|| s.strip_suffix('='))
        .unwrap_or(s);
    if s.len().is_multiple_of(4) && all_in_alphabet(body.as_bytes()) {
        return Ok(false);
    }
    // Line breaks, or an error to locate.
    let corrupt = |at: usize| Err(format!("illegal base64 data at input byte {at}"));
    // Position within the current 4-symbol quantum, and whether padding has started.
    let mut pos = 0usize;
    let mut padded = false;
    let mut breaks = false;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'\r' | b'\n' => {
                breaks = true;
                continue;
            }
            // Padding may only fill the last one or two places of the final quantum.
            b'=' if pos < 2 => return corrupt(i),
            b'=' => padded = true,
            _ if is_base64_symbol(b) && !padded => {}
            _ => return corrupt(i),
        }
        pos = (pos + 1) % 4;
    }
    if pos != 0 {
        return corrupt(s.len());
    }
    Ok(breaks)
}

fn is_base64_symbol(b: u8) -> bool {
    // `|`, not `||`: without branches the block check vectorises.
    ((b | 0x20).wrapping_sub(b'a') < 26) | (b.wrapping_sub(b'0') < 10) | (b == b'+') | (b == b'/')
}

/// Whether every byte is a base64 symbol; checked a block at a time without branches so that
/// the compiler can vectorise it.
pub(crate) fn all_in_alphabet(bytes: &[u8]) -> bool {
    let mut blocks = bytes.chunks_exact(64);
    let blocks_ok = blocks.all(|block| block.iter().fold(true, |ok, &b| ok & is_base64_symbol(b)));
    blocks_ok && blocks.remainder().iter().all(|&b| is_base64_symbol(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_names_fold_like_go() {
        assert!(fold_eq("defaultChannel", "defaultChannel"));
        assert!(fold_eq("DEFAULTCHANNEL", "defaultChannel"));
        assert!(fold_eq("ſchema", "schema"));
        assert!(fold_eq("pac\u{212a}age", "package"));
        assert!(!fold_eq("schemas", "schema"));
        assert!(!fold_eq("schem", "schema"));
        assert!(!fold_eq("sch\u{e9}ma", "schema"));
    }

    #[test]
    fn wrong_types_name_the_struct_field_and_go_type() {
        let at = At {
            strukt: "Bundle",
            path: "image",
        };
        assert_eq!(at.string(json!(null)), Ok(String::new()));
        assert_eq!(
            at.string(json!(1)),
            Err(
                "json: cannot unmarshal number into Go struct field Bundle.image of type string"
                    .into()
            )
        );
        let at = At {
            strukt: "ChannelEntry",
            path: "entries.skips",
        };
        assert_eq!(
            at.strings(json!(["a", true])),
            Err("json: cannot unmarshal bool into Go struct field ChannelEntry.entries.skips of type string".into())
        );
        assert_eq!(
            at.strings(json!("a")),
            Err("json: cannot unmarshal string into Go struct field ChannelEntry.entries.skips of type []string".into())
        );
        assert_eq!(
            value_type_error(&json!([]), "property.GVK"),
            "json: cannot unmarshal array into Go value of type property.GVK"
        );
    }

    #[test]
    fn base64_is_checked_like_go_std_encoding() {
        assert_eq!(check_std_base64(""), Ok(false));
        assert_eq!(check_std_base64("eyJhIjoxfQ=="), Ok(false));
        assert_eq!(check_std_base64("eyJh\nIjox\r\nfQ=="), Ok(true));
        assert_eq!(check_std_base64("YWJj"), Ok(false));
        assert_eq!(check_std_base64("YWI="), Ok(false));
        assert_eq!(check_std_base64("YW=="), Ok(false));
        assert_eq!(
            check_std_base64("YWJ"),
            Err("illegal base64 data at input byte 3".into())
        );
        assert_eq!(
            check_std_base64("Y==="),
            Err("illegal base64 data at input byte 1".into())
        );
        assert_eq!(
            check_std_base64("YW=j"),
            Err("illegal base64 data at input byte 3".into())
        );
        assert_eq!(
            check_std_base64("YW==YWJj"),
            Err("illegal base64 data at input byte 4".into())
        );
        assert_eq!(
            check_std_base64("YW-j"),
            Err("illegal base64 data at input byte 2".into())
        );
    }
}
