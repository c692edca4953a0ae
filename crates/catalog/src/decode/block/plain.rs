//! Plain scalars: where one ends on its line, and what value its text has.
use super::dash_rest;
use serde_json::Value;

/// What ends a plain scalar on its line.
pub(super) enum Stop {
    /// A `:` followed by a space or the end of the line, at this offset.
    Colon(usize),
    /// A comment (` #`) starting at this offset.
    Comment(usize),
    End,
}

pub(super) fn scan_plain(text: &str) -> Stop {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b':' if matches!(bytes.get(i + 1), None | Some(b' ')) => return Stop::Colon(i),
            b'#' if i > 0 && bytes[i - 1] == b' ' => return Stop::Comment(i - 1),
            _ => {}
        }
    }
    Stop::End
}

/// A plain scalar's text on one line: up to a comment, trailing spaces trimmed, and whether a
/// comment ended it. `None` if the line holds something a plain scalar cannot (`: `).
pub(super) fn plain_on_line(text: &str) -> Option<(&str, bool)> {
    let (body, commented) = match scan_plain(text) {
        Stop::Colon(_) => return None,
        Stop::Comment(i) => (&text[..i], true),
        Stop::End => (text, false),
    };
    let body = body.trim_end_matches(' ');
    (!body.is_empty()).then_some((body, commented))
}

/// Characters that cannot start a plain scalar (or mean something else there).
pub(super) fn starts_with_indicator(text: &str) -> bool {
    match text.as_bytes() {
        [] => true,
        [b'-' | b'?' | b':', next, ..] => *next == b' ',
        [b'-' | b'?' | b':'] => true,
        [first, ..] => b",[]{}#&*!|>'\"%@`".contains(first),
    }
}

/// Whether a plain scalar is text without asking libyaml. Under its YAML 1.2 core schema,
/// text starting with a letter can only be null or a boolean, and only as one of nine words;
/// only text starting with a digit, sign or dot can be a number.
pub(super) fn is_plain_text(text: &str) -> bool {
    let Some(&first) = text.as_bytes().first() else {
        return false;
    };
    !(first.is_ascii_digit()
        || matches!(first, b'+' | b'-' | b'.' | b'~')
        || matches!(
            text,
            "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
        ))
}

/// The value of a plain scalar as libyaml's reading gives it.
pub(super) fn resolve_plain(text: &str) -> Option<Value> {
    // A folded scalar with a line break in it cannot be a number (and libyaml would read the
    // text on its own differently).
    if is_plain_text(text) || text.contains('\n') {
        return Some(Value::String(text.to_owned()));
    }
    match text {
        "~" | "null" | "Null" | "NULL" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        _ => {}
    }
    if text.is_empty()
        || text.starts_with("---")
        || text.starts_with("...")
        || dash_rest(text).is_some()
    {
        return None;
    }
    match crate::decode::yaml_stream::libyaml(text.as_bytes()).ok()? {
        Value::Array(_) | Value::Object(_) => None,
        v => Some(v),
    }
}
