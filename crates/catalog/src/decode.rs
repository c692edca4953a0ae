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
use super::typed::decode_document;
use super::types::{Document, Origin};
use json_stream::json_stream;
use serde_json::Value;
use std::sync::Arc;
use yaml_stream::{parse_yaml, yaml_stream};

mod block;
mod depth;
mod go_value;
mod json_stream;
mod lift;
mod load_error;
mod yaml_stream;

pub use load_error::{LoadError, describe_load_errors};

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

#[cfg(test)]
mod tests;
