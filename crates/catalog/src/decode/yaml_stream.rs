//! A YAML file: split into documents on separator lines, each read by the fast block reader
//! or, past what it knows, by libyaml; errors positioned in file lines.
use super::go_value::GoValue;
use super::{Raw, block, depth, lift, too_deep};
use block::GaveUp;
use serde::Deserialize;
use serde_json::Value;

/// Splits on separator lines (lines starting with `---`, followed by nothing but whitespace
/// or a comment) and decodes each non-empty document. `first_line` is the file line `data`
/// starts on.
pub(super) fn yaml_stream(data: &[u8], first_line: usize, emit: &mut dyn FnMut(Raw)) {
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
pub(super) fn yaml_document(doc: &[u8], first_line: usize) -> Raw {
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

pub(super) fn parse_yaml(doc: &[u8]) -> Result<Value, String> {
    match block::parse(doc) {
        Ok(value) => Ok(value),
        Err(GaveUp::TooDeep(_)) => Err(too_deep()),
        Err(GaveUp::Unknown) if depth::too_deep_line(doc).is_some() => Err(too_deep()),
        Err(GaveUp::Unknown) => libyaml(doc).map_err(|e| yaml_message(&e)),
    }
}

/// The first document of `doc` as libyaml reads it.
pub(super) fn libyaml(doc: &[u8]) -> Result<Value, serde_yaml::Error> {
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
