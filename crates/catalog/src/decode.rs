//! Splitting one file's bytes into documents and decoding them (catalog-formats.md §A.2).
//!
//! All YAML decoding of the crate happens in this module. It uses `serde_yaml`, a YAML 1.2
//! parser, where upstream converts YAML 1.1 to JSON. The accepted differences:
//! - unquoted `yes`/`no`/`on`/`off`/`y`/`n` stay strings (upstream: booleans);
//! - `0755`-style literals stay strings, `1_000` stays a string, `0o17` is a number (upstream:
//!   the YAML 1.1 readings);
//! - `<<` merge keys are ordinary keys (upstream merges them);
//! - a mapping with the same key twice keeps the last value, as upstream does;
//! - timestamps (`createdAt: 2025-06-24T14:07:09`) stay the raw scalar text, as upstream's
//!   decoding into a generic value does.
//!
//! Floats such as `4.10` become the number 4.1 in both, so authors must still quote versions.
use super::json::write_float;
use super::typed::decode_document;
use super::types::{Document, Origin};
use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde_json::{Map, Number, Value};
use std::fmt;
use std::sync::Arc;

mod block;
mod depth;
mod lift;

use block::GaveUp;

/// How far into a file upstream looks for the `{` that makes it a JSON stream.
const SNIFF_LEN: usize = 4096;

/// The deepest nesting of collections a document may have. Every reader here recurses once
/// per level (and so do the conversions and drops of the values they build), so an unbounded
/// depth is a stack overflow. Real catalogs and manifests reach 38 levels; 100 leaves room
/// for any real schema, stays below the 128 at which serde_json and serde_yaml stop on their
/// own (so this check is always the one that speaks), and needs a few tens of KiB of stack.
pub(crate) const MAX_DEPTH: usize = 100;

/// The message for a document nested deeper than [`MAX_DEPTH`].
fn too_deep() -> String {
    format!("nesting deeper than {MAX_DEPTH} levels")
}

/// A document or file that could not be read or decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", place(file, *line))]
pub struct LoadError {
    /// The file, relative to the catalog root; empty when the error is not about one file.
    pub file: String,
    /// 1-based line of the offending document (of the syntax error itself for malformed
    /// JSON/YAML); 0 when the error concerns the whole file.
    pub line: usize,
    pub message: String,
}

/// What a [`LoadError`]'s message is prefixed with: `file:line: `, `file: ` for a whole
/// file, nothing when no file is concerned.
fn place(file: &str, line: usize) -> String {
    match (file.is_empty(), line) {
        (true, _) => String::new(),
        (false, 0) => format!("{file}: "),
        (false, line) => format!("{file}:{line}: "),
    }
}

/// All the load errors of a catalog as one message, one per line.
pub fn describe_load_errors(errors: &[LoadError]) -> String {
    let mut message = format!("the catalog has {} unreadable document(s):", errors.len());
    for e in errors {
        message.push_str(&format!("\n  {e}"));
    }
    message
}

/// Decodes every document of one file. `file` is the path used in origins and messages.
///
/// Every bad document is reported, not only the first, except where the file's syntax makes
/// it impossible to find the next document (malformed JSON, a bad YAML separator).
pub fn parse_documents(file: &str, data: &[u8]) -> Result<Vec<Document>, Vec<LoadError>> {
    parse_documents_seeing(file, data, &mut |_| {})
}

/// [`parse_documents`], showing `seen` each document's generic value before it is decoded
/// (the form the catalogd HTTP API serves).
pub(crate) fn parse_documents_seeing(
    file: &str,
    data: &[u8],
    seen: &mut dyn FnMut(&Value),
) -> Result<Vec<Document>, Vec<LoadError>> {
    let shared: Arc<str> = Arc::from(file);
    let mut docs = Vec::new();
    let mut errors = Vec::new();
    split_values(data, &mut |raw| match raw {
        Ok((line, value)) => {
            seen(&value);
            let origin = Origin {
                file: Arc::clone(&shared),
                line,
            };
            match decode_document(value, origin) {
                Ok(doc) => docs.push(doc),
                Err(message) => errors.push(LoadError {
                    file: file.to_owned(),
                    line,
                    message,
                }),
            }
        }
        Err((line, message)) => errors.push(LoadError {
            file: file.to_owned(),
            line,
            message,
        }),
    });
    if errors.is_empty() {
        Ok(docs)
    } else {
        Err(errors)
    }
}

/// Parses one YAML (or JSON) document into a JSON value, as upstream converts YAML manifests
/// to JSON. Only the first document of a multi-document text is read, as upstream does.
pub fn yaml_to_json(data: &[u8]) -> Result<Value, String> {
    parse_yaml(data)
}

/// The words of a libyaml error.
fn yaml_message(e: &serde_yaml::Error) -> String {
    let message = e.to_string();
    // serde_yaml puts the path of the value first: for a deep one, a line of `[0]`s.
    if message.contains(&too_deep()) {
        too_deep()
    } else {
        message
    }
}

/// One document as split from a file: its line and value, or an error and the line it is on.
type Raw = Result<(usize, Value), (usize, String)>;

fn split_values(data: &[u8], emit: &mut dyn FnMut(Raw)) {
    if looks_like_json(data) {
        json_stream(data, emit);
    } else {
        yaml_stream(data, 1, emit);
    }
}

/// Upstream's sniff: the first non-whitespace character of the first 4096 bytes is `{`.
fn looks_like_json(data: &[u8]) -> bool {
    let head = &data[..data.len().min(SNIFF_LEN)];
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // The window may cut a character in two; what precedes it is what matters.
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
    };
    text.trim_start().starts_with('{')
}

/// Counts lines forward through a buffer, so that numbering every document is linear.
struct Lines<'a> {
    data: &'a [u8],
    offset: usize,
    line: usize,
}

impl<'a> Lines<'a> {
    fn new(data: &'a [u8], first_line: usize) -> Self {
        Lines {
            data,
            offset: 0,
            line: first_line,
        }
    }

    /// The line of byte `offset`; offsets must not decrease between calls.
    fn at(&mut self, offset: usize) -> usize {
        let end = offset.min(self.data.len());
        if end > self.offset {
            self.line += self.data[self.offset..end]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.offset = end;
        }
        self.line
    }
}

fn json_stream(data: &[u8], emit: &mut dyn FnMut(Raw)) {
    let mut lines = Lines::new(data, 1);
    let mut stream = serde_json::Deserializer::from_slice(data).into_iter::<GoValue>();
    let mut decoded = 0usize;
    loop {
        let start = skip_json_whitespace(data, stream.byte_offset());
        match stream.next() {
            None => return,
            Some(Ok(GoValue(value))) => {
                emit(Ok((lines.at(start), value)));
                decoded += 1;
            }
            Some(Err(e)) => {
                let json_error = (e.line(), format!("invalid JSON: {e}"));
                // Upstream's decoder retries the rest of the stream as YAML when JSON fails
                // on its first or second document (`{…}` followed by `---` YAML documents);
                // the JSON error stands if the first YAML document does not decode either.
                // JSON nested too deep is YAML nested too deep (and slow for libyaml).
                if decoded < 2 && !json_error.1.contains(&too_deep()) {
                    let mut rest = Vec::new();
                    yaml_stream(&data[start..], lines.at(start), &mut |raw| rest.push(raw));
                    if matches!(rest.first(), Some(Ok(_))) {
                        rest.into_iter().for_each(&mut *emit);
                        return;
                    }
                }
                emit(Err(json_error));
                return;
            }
        }
    }
}

fn skip_json_whitespace(data: &[u8], mut offset: usize) -> usize {
    while offset < data.len() && matches!(data[offset], b' ' | b'\t' | b'\n' | b'\r') {
        offset += 1;
    }
    offset
}

/// Splits on separator lines (lines starting with `---`, followed by nothing but whitespace
/// or a comment) and decodes each non-empty document. `first_line` is the file line `data`
/// starts on.
fn yaml_stream(data: &[u8], first_line: usize, emit: &mut dyn FnMut(Raw)) {
    let mut doc_start = 0;
    let mut doc_line = first_line;
    let mut pos = 0;
    let mut line = first_line;
    while pos < data.len() {
        let end = data[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(data.len(), |i| pos + i + 1);
        if let Some(after) = data[pos..end].strip_prefix(b"---") {
            let after = String::from_utf8_lossy(after);
            let after = after.trim();
            if !after.is_empty() && !after.starts_with('#') {
                emit(Err((
                    line,
                    format!("invalid Yaml document separator: {after}"),
                )));
                return;
            }
            if pos > doc_start {
                emit(yaml_document(&data[doc_start..pos], doc_line));
            }
            doc_start = end;
            doc_line = line + 1;
        }
        pos = end;
        line += 1;
    }
    if data.len() > doc_start {
        emit(yaml_document(&data[doc_start..], doc_line));
    }
}

/// Decodes one YAML document that starts on file line `first_line`. The document's line is
/// that of its first line with content.
fn yaml_document(doc: &[u8], first_line: usize) -> Raw {
    let Some(skipped) = leading_blank_lines(doc) else {
        // Only blank lines and comments: upstream decodes this to null.
        return Ok((first_line, Value::Null));
    };
    let line = first_line + skipped;
    match block::parse(doc) {
        Ok(value) => return Ok((line, value)),
        Err(GaveUp::TooDeep(at)) => {
            return Err((first_line + at - 1, format!("invalid YAML: {}", too_deep())));
        }
        Err(GaveUp::Unknown) => {}
    }
    if let Some(at) = depth::too_deep_line(doc) {
        return Err((first_line + at, format!("invalid YAML: {}", too_deep())));
    }
    // A document for libyaml: its long base64 scalars are kept away from it when possible.
    let lifted = lift::lift(doc).and_then(|lifted| {
        let mut value = libyaml(&lifted.text).ok()?;
        lifted.restore(&mut value).then_some(value)
    });
    if let Some(value) = lifted {
        return Ok((line, value));
    }
    match libyaml(doc) {
        Ok(value) => Ok((line, value)),
        Err(_) => Err(yaml_error(doc, first_line, line)),
    }
}

fn parse_yaml(doc: &[u8]) -> Result<Value, String> {
    match block::parse(doc) {
        Ok(value) => Ok(value),
        Err(GaveUp::TooDeep(_)) => Err(too_deep()),
        Err(GaveUp::Unknown) if depth::too_deep_line(doc).is_some() => Err(too_deep()),
        Err(GaveUp::Unknown) => libyaml(doc).map_err(|e| yaml_message(&e)),
    }
}

/// The first document of `doc` as libyaml reads it.
fn libyaml(doc: &[u8]) -> Result<Value, serde_yaml::Error> {
    match serde_yaml::Deserializer::from_slice(doc).next() {
        Some(d) => GoValue::deserialize(d).map(|v| v.0),
        // libyaml reports nothing but the end of the stream for a document of only `...`.
        None => Ok(Value::Null),
    }
}

/// The error for a document that failed to decode, with positions counted in file lines:
/// rare enough that decoding it once more behind padding lines is the simple way.
fn yaml_error(doc: &[u8], first_line: usize, fallback_line: usize) -> (usize, String) {
    let mut padded = vec![b'\n'; first_line - 1];
    padded.extend_from_slice(doc);
    match libyaml(&padded) {
        Err(e) => (
            e.location().map_or(fallback_line, |l| l.line()),
            format!("invalid YAML: {}", yaml_message(&e)),
        ),
        Ok(_) => (fallback_line, "invalid YAML".to_owned()),
    }
}

/// How many lines precede the first line that is neither blank nor a comment, or `None` if
/// there is no such line.
fn leading_blank_lines(doc: &[u8]) -> Option<usize> {
    doc.split(|&b| b == b'\n').position(|l| {
        let l = l.trim_ascii_start();
        !l.is_empty() && l[0] != b'#'
    })
}

/// A JSON value built from any self-describing input (JSON and YAML alike) with the
/// conversions upstream's YAML-to-JSON step applies: non-string keys become their text, tags
/// are dropped, and non-finite floats are refused (JSON has no way to write them). Nesting
/// deeper than [`MAX_DEPTH`] is refused.
struct GoValue(Value);

impl<'de> Deserialize<'de> for GoValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(GoVisitor { depth: 0 }).map(GoValue)
    }
}

/// Reads a value inside `depth` collections.
#[derive(Clone, Copy)]
struct GoVisitor {
    depth: usize,
}

impl GoVisitor {
    /// The visitor for the items of a collection read by this one.
    fn inner<E: de::Error>(self) -> Result<GoVisitor, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(too_deep()));
        }
        Ok(GoVisitor {
            depth: self.depth + 1,
        })
    }
}

impl<'de> DeserializeSeed<'de> for GoVisitor {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for GoVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    // Integers beyond 64 bits only survive as float64 upstream.
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        self.visit_f64(v as f64)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        self.visit_f64(v as f64)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v).map(Value::Number).ok_or_else(|| {
            let text = if v.is_nan() {
                "NaN"
            } else if v > 0.0 {
                "+Inf"
            } else {
                "-Inf"
            };
            E::custom(format!("json: unsupported value: {text}"))
        })
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut map = Map::new();
        while let Some(key) = access.next_key_seed(KeySeed)? {
            let value = access.next_value_seed(inner)?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }

    // serde_yaml presents a value with a custom tag (`!foo bar`) as an enum; the tag has no
    // meaning in a catalog, so only the value is kept.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (_tag, variant): (de::IgnoredAny, _) = data.variant()?;
        variant.newtype_variant_seed(self)
    }
}

/// A mapping key as upstream's YAML-to-JSON conversion writes it.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, number or boolean mapping key")
    }

    fn visit_bool<E>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        if !v.is_finite() {
            return Err(E::custom("unsupported map key: non-finite number"));
        }
        let mut s = String::new();
        write_float(v, &mut s);
        Ok(s)
    }

    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Err(E::custom("unsupported map key: null"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::*;
    use serde_json::json;

    fn values(data: &str) -> Vec<Raw> {
        let mut out = Vec::new();
        split_values(data.as_bytes(), &mut |raw| out.push(raw));
        out
    }

    fn errors(file: &str, data: &str) -> Vec<String> {
        match parse_documents(file, data.as_bytes()) {
            Ok(docs) => panic!("expected errors, got {docs:?}"),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn json_streams_are_split_with_document_lines() {
        let raw = values("\n\n  {\"schema\": \"a\"}{\"schema\":\"b\"}\n\n{\n\"schema\": \"c\"}\n");
        assert_eq!(
            raw,
            vec![
                Ok((3, json!({"schema": "a"}))),
                Ok((3, json!({"schema": "b"}))),
                Ok((5, json!({"schema": "c"}))),
            ]
        );
    }

    #[test]
    fn malformed_json_reports_file_and_line_of_the_error() {
        // Third document: the JSON error is final.
        let data = "{\"schema\":\"a\"}\n{\"schema\":\"b\"}\n{\n  \"schema\": \"c\"\n  \"name\": \"x\"\n}\n";
        assert_eq!(
            errors("pkg/catalog.json", data),
            vec!["pkg/catalog.json:5: invalid JSON: expected `,` or `}` at line 5 column 3"]
        );
        // First document: YAML cannot read it either, so the JSON error stands.
        assert_eq!(
            errors("c.json", "{\"schema\": \"olm.package\" \"name\": \"x\"}"),
            vec!["c.json:1: invalid JSON: expected `,` or `}` at line 1 column 26"]
        );
    }

    #[test]
    fn json_that_yaml_can_read_falls_back_to_yaml() {
        // A trailing comma is fine in a YAML flow mapping, and `---` documents may follow JSON.
        let raw = values("{\"schema\": \"a\",}\n---\nschema: b\n");
        assert_eq!(
            raw,
            vec![
                Ok((1, json!({"schema": "a"}))),
                Ok((3, json!({"schema": "b"})))
            ]
        );
        let raw = values("{\"schema\": \"a\"}\n---\nschema: b\n");
        assert_eq!(
            raw,
            vec![
                Ok((1, json!({"schema": "a"}))),
                Ok((3, json!({"schema": "b"})))
            ]
        );
    }

    #[test]
    fn yaml_documents_are_split_on_separator_lines() {
        let raw = values(
            "---\n# leading comment\nschema: a\n---   # comment\n---\n\nschema: b\nn: 4.10\n--- \r\nschema: c",
        );
        assert_eq!(
            raw,
            vec![
                Ok((3, json!({"schema": "a"}))),
                Ok((7, json!({"schema": "b", "n": 4.1}))),
                Ok((10, json!({"schema": "c"}))),
            ]
        );
    }

    #[test]
    fn blank_and_comment_only_yaml_documents_are_null() {
        let raw = values("schema: a\n---\n\n# nothing\n---\nschema: b\n");
        assert_eq!(
            raw,
            vec![
                Ok((1, json!({"schema": "a"}))),
                Ok((3, Value::Null)),
                Ok((6, json!({"schema": "b"})))
            ]
        );
        assert_eq!(
            errors("x.yaml", "schema: a\n---\n\n# nothing\n"),
            vec!["x.yaml:3: object '{}' is missing root schema field"]
        );
        assert!(values("").is_empty());
        assert!(values("---\n---\n").is_empty());
    }

    #[test]
    fn bad_yaml_separator_is_an_error_on_its_line() {
        assert_eq!(
            errors("a.yaml", "schema: a\n--- schema: b\nname: x\n"),
            vec!["a.yaml:2: invalid Yaml document separator: schema: b"]
        );
        assert_eq!(
            errors("a.yaml", "schema: a\n----\n"),
            vec!["a.yaml:2: invalid Yaml document separator: -"]
        );
    }

    #[test]
    fn malformed_yaml_reports_file_lines_and_later_documents_still_load() {
        let data = "schema: olm.package\nname: a\n---\nschema: olm.package\nname: b\n  bad: indent\n---\nschema: olm.package\nname: [c\n";
        let errs = errors("dir/a.yaml", data);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0].starts_with("dir/a.yaml:6: invalid YAML: mapping values are not allowed in this context at line 6 column 6"),
            "{}",
            errs[0]
        );
        assert!(
            errs[1].starts_with("dir/a.yaml:10: invalid YAML: "),
            "{}",
            errs[1]
        );
    }

    #[test]
    fn yaml_scalars_follow_the_documented_rules() {
        let raw = values(
            "schema: x\nts: 2025-06-24T14:07:09\nyes: yes\nn: 010\nf: 1.0\nbig: 123456789012345678901234567890\n1: int key\ntrue: bool key\nt: !custom tagged\nq: '4.10'\nnul: ~\n",
        );
        assert_eq!(
            raw,
            vec![Ok((
                1,
                json!({
                    "schema": "x", "ts": "2025-06-24T14:07:09", "yes": "yes", "n": "010", "f": 1.0,
                    "big": 1.2345678901234568e29, "1": "int key", "true": "bool key", "t": "tagged",
                    "q": "4.10", "nul": null
                })
            ))]
        );
        let errs = errors("f.yaml", "schema: x\nv: .inf\n");
        assert!(
            errs[0].starts_with("f.yaml:2: invalid YAML: v: json: unsupported value: +Inf"),
            "{}",
            errs[0]
        );
        let errs = errors("f.yaml", "schema: x\n~: v\n");
        assert!(
            errs[0].starts_with("f.yaml:2: invalid YAML: unsupported map key: null"),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn non_object_documents_and_every_bad_document_are_reported() {
        let data = "- a\n---\nschema: olm.package\nname: ok\n---\nname: no-schema\n---\nschema: olm.bundle\nimage: 3\n";
        assert_eq!(
            errors("b.yaml", data),
            vec![
                "b.yaml:1: json: cannot unmarshal array into Go value of type map[string]interface {}",
                r#"b.yaml:6: object '{"name":"no-schema"}' is missing root schema field"#,
                "b.yaml:8: parse bundle: json: cannot unmarshal number into Go struct field Bundle.image of type string",
            ]
        );
        assert_eq!(
            errors(
                "d.json",
                "{\"schema\":\"olm.package\",\"Schema\":\"olm.package\"}"
            ),
            vec![r#"d.json:1: duplicate keys for key "schema": [Schema schema]"#]
        );
    }

    #[test]
    fn documents_carry_their_origin() {
        let docs = parse_documents(
            "p/c.yaml",
            b"---\nschema: olm.package\nname: p\n---\nschema: custom\nx: 1\n",
        )
        .expect("valid documents");
        let origins: Vec<String> = docs
            .iter()
            .map(|d| match d {
                Document::Package(p) => p.origin.to_string(),
                Document::Meta(m) => m.origin.to_string(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(origins, ["p/c.yaml:2", "p/c.yaml:5"]);
    }

    #[test]
    fn load_error_display() {
        let e = |file: &str, line| {
            LoadError {
                file: file.into(),
                line,
                message: "m".into(),
            }
            .to_string()
        };
        assert_eq!(e("a/b.json", 3), "a/b.json:3: m");
        assert_eq!(e("a/b.json", 0), "a/b.json: m");
        assert_eq!(e("", 0), "m");
    }

    #[test]
    fn lifting_long_scalars_never_changes_the_result() {
        let b64 = "eyJhIjoxfQ".repeat(40);
        let docs = [
            // Lifted: plain values of simple keys, in sequences too.
            format!(
                "schema: olm.bundle\nproperties:\n- type: olm.bundle.object\n  value:\n    data: {b64}==\nicon:\n  base64data: {b64}\r\n"
            ),
            // Not restorable: inside a block scalar, and a plain scalar continued on the next line.
            format!("schema: x\ndescription: |\n  data: {b64}\n"),
            format!("schema: x\nv:\n  data: {b64}\n    continued\n"),
            // Marker text already in the document.
            format!("schema: x\na: {b64}\nb: __olm_registry_lifted_scalar_0\n"),
        ];
        for doc in docs {
            let direct = parse_yaml(doc.as_bytes()).expect("valid YAML");
            assert_eq!(yaml_document(doc.as_bytes(), 1), Ok((1, direct)), "{doc}");
        }
        // Errors are still reported against the original text.
        let bad = format!("schema: x\nv: {b64}\n  bad: indent\n");
        let (line, message) = yaml_document(bad.as_bytes(), 5).expect_err("invalid");
        assert_eq!(line, 7, "{message}");
    }

    #[test]
    fn nesting_past_the_limit_is_refused_by_every_reader() {
        let deep = |levels: usize| "[".repeat(levels) + &"]".repeat(levels);
        let at_limit = format!("{{\"schema\":\"x\",\"v\":{}}}", deep(MAX_DEPTH - 1));
        assert!(parse_documents("c.json", at_limit.as_bytes()).is_ok());
        // The 100th `[` is in column 118; serde_json has looked one further when it is empty.
        for (levels, column) in [(MAX_DEPTH, 119), (100_000, 118)] {
            let json = format!("{{\"schema\":\"x\",\"v\":{}}}", deep(levels));
            assert_eq!(
                errors("c.json", &json),
                [format!(
                    "c.json:1: invalid JSON: nesting deeper than 100 levels at line 1 column {column}"
                )]
            );
            // Past the fast reader's subset (a multi-line flow collection), libyaml speaks.
            let yaml = format!("schema: x\nv: [\n{}]\n", deep(levels.min(200)));
            assert_eq!(
                errors("c.yaml", &yaml),
                ["c.yaml:3: invalid YAML: nesting deeper than 100 levels"]
            );
            assert_eq!(
                yaml_to_json(yaml.as_bytes()),
                Err("nesting deeper than 100 levels".to_owned())
            );
        }
        assert_eq!(
            errors("c.yaml", &format!("schema: x\nv: {}\n", deep(100_000))),
            ["c.yaml:2: invalid YAML: nesting deeper than 100 levels"]
        );
        // One level per line: libyaml's events stop it at the line of level 101.
        let lines = format!(
            "schema: x\nv: [\n{}{}]\n",
            "[\n".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(
            errors("c.yaml", &lines),
            ["c.yaml:101: invalid YAML: nesting deeper than 100 levels"]
        );
        // An alias adds the depth of what it names (reported where that is written).
        let alias = format!("schema: x\na: &a {}\nb: [*a]\n", deep(MAX_DEPTH - 1));
        assert_eq!(
            errors("c.yaml", &alias),
            ["c.yaml:2: invalid YAML: nesting deeper than 100 levels"]
        );
    }

    #[test]
    fn yaml_manifests_convert_to_json() {
        assert_eq!(
            yaml_to_json(b"kind: Foo\nspec: {a: 1}\n---\nkind: Bar\n"),
            Ok(json!({"kind": "Foo", "spec": {"a": 1}}))
        );
        assert!(yaml_to_json(b"kind: [").is_err());
    }
}
