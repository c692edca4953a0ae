//! A fast reader for the YAML that Kubernetes tooling writes.
//!
//! Bundle manifests and catalogs are block mappings and sequences of plain, quoted and
//! literal scalars, with the odd one-line flow collection. libyaml scans all of that a
//! character at a time and was most of the time spent rendering a bundle. This reader takes
//! the document line by line instead. It knows only that subset: anything else (anchors,
//! aliases, tags, folded or indentation-indicated block scalars, tabs, complex or
//! non-string keys, duplicate keys, multi-line flow collections, directives, ...) makes it
//! give up with `None`, and the caller parses the document with libyaml. So a document
//! either gets libyaml's exact answer from here or goes to libyaml itself; the tests check
//! the first half of that against libyaml on every YAML file of the test corpora.
use super::MAX_DEPTH;
use plain::{Stop, is_plain_text, scan_plain, starts_with_indicator};
use quoted::{double_quoted_line, single_quoted_line};
use serde_json::{Map, Value};
use std::borrow::Cow;

mod flow;
mod plain;
mod quoted;
mod scalar;

/// Why the reader did not read a document.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum GaveUp {
    /// YAML outside the subset this reader knows (or not valid YAML): libyaml must read it.
    Unknown,
    /// Collections nested deeper than [`MAX_DEPTH`], reached on this line of the document
    /// (1-based). Up to there the reader read what libyaml reads, so libyaml would refuse the
    /// document too; it is not asked, as it takes quadratic time over deep flow collections.
    TooDeep(usize),
}

/// The first document of `doc` as a JSON value.
pub(super) fn parse(doc: &[u8]) -> Result<Value, GaveUp> {
    let mut too_deep = None;
    read(doc, &mut too_deep).ok_or(match too_deep {
        Some(line) => GaveUp::TooDeep(line),
        None => GaveUp::Unknown,
    })
}

/// The document, or `None` with `too_deep` set if that is why.
fn read(doc: &[u8], too_deep: &mut Option<usize>) -> Option<Value> {
    if doc.iter().any(|&b| b == b'\t' || b == b'\r') {
        return None;
    }
    let text = std::str::from_utf8(doc).ok()?;
    if text.starts_with('\u{feff}') {
        return None;
    }
    let mut lines: Vec<Line> = text.split('\n').map(Line::new).collect();
    let mut first = lines.iter().position(|l| !l.is_blank_or_comment())?;
    if lines[first].raw.starts_with('%') || lines[first].raw.starts_with("...") {
        return None;
    }
    if is_document_marker(lines[first].raw) {
        let after = lines[first].raw[3..].trim_start_matches(' ');
        if !after.is_empty() && !after.starts_with('#') {
            return None;
        }
        first = first
            + 1
            + lines[first + 1..]
                .iter()
                .position(|l| !l.is_blank_or_comment())?;
    }
    // `split` yields a last, empty piece exactly when the text ends with a line break.
    let mut end = End::File {
        terminated: text.ends_with('\n'),
    };
    if let Some(marker) = lines[first..]
        .iter()
        .position(|l| is_document_marker(l.raw))
    {
        if marker == 0 {
            // An empty document, or an end marker first.
            return None;
        }
        lines.truncate(first + marker);
        end = End::Marker;
    }
    let mut reader = Reader {
        lines,
        pos: first,
        end,
        depth: 0,
        too_deep: None,
    };
    let root = reader.lines[first];
    let value = if dash_rest(root.text).is_some() {
        reader.sequence(root.indent)
    } else if split_key(root.text).is_some() {
        reader.mapping(root.indent)
    } else {
        return None;
    };
    *too_deep = reader.too_deep;
    let value = value?;
    reader.peek().is_none().then_some(value)
}

/// `---` or `...` at the start of a line, alone or followed by a space.
fn is_document_marker(raw: &str) -> bool {
    (raw.starts_with("---") || raw.starts_with("..."))
        && matches!(raw.as_bytes().get(3), None | Some(b' '))
}

#[derive(Clone, Copy)]
struct Line<'a> {
    /// The whole line.
    raw: &'a str,
    /// Columns of leading spaces.
    indent: usize,
    /// The line after its indentation.
    text: &'a str,
}

impl<'a> Line<'a> {
    fn new(raw: &'a str) -> Self {
        let text = raw.trim_start_matches(' ');
        Line {
            raw,
            indent: raw.len() - text.len(),
            text,
        }
    }

    fn is_blank_or_comment(&self) -> bool {
        self.text.is_empty() || self.text.starts_with('#')
    }
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    /// The next line to read.
    pos: usize,
    end: End,
    /// Collections around the node being read.
    depth: usize,
    /// The line where nesting went past [`MAX_DEPTH`].
    too_deep: Option<usize>,
}

/// What follows the last of the document's lines.
#[derive(Clone, Copy, PartialEq)]
enum End {
    /// A document marker: the last line is a whole line.
    Marker,
    /// The end of the text; when it ends with a line break, the last line is the empty
    /// piece after that break, not a line of the document.
    File { terminated: bool },
}

impl<'a> Reader<'a> {
    /// The next line with content, skipping blank and comment lines.
    fn peek(&mut self) -> Option<Line<'a>> {
        while let Some(line) = self.lines.get(self.pos) {
            if !line.is_blank_or_comment() {
                return Some(*line);
            }
            self.pos += 1;
        }
        None
    }

    /// Lets a node that starts inside the current line (after `- `) be read as if its line
    /// began at `column`.
    fn restart_line_at(&mut self, column: usize) {
        let line = &mut self.lines[self.pos];
        line.indent = column;
        line.text = &line.raw[column..];
    }

    fn mapping(&mut self, indent: usize) -> Option<Value> {
        deeper(self, |r| r.mapping_entries(indent))
    }

    fn mapping_entries(&mut self, indent: usize) -> Option<Value> {
        let mut map = Map::new();
        while let Some(line) = self.peek() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return None;
            }
            let (key, rest) = split_key(line.text)?;
            self.pos += 1;
            let value = self.value(rest, indent)?;
            if map.insert(key.into_owned(), value).is_some() {
                return None;
            }
        }
        Some(Value::Object(map))
    }

    fn sequence(&mut self, indent: usize) -> Option<Value> {
        deeper(self, |r| r.sequence_items(indent))
    }

    fn sequence_items(&mut self, indent: usize) -> Option<Value> {
        let mut items = Vec::new();
        while let Some(line) = self.peek() {
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return None;
            }
            // A line without a dash ends a sequence written at its parent key's indentation.
            let Some(rest) = dash_rest(line.text) else {
                break;
            };
            let entry = rest.trim_start_matches(' ');
            let column = line.raw.len() - entry.len();
            let item = if entry.is_empty() || entry.starts_with('#') {
                self.pos += 1;
                self.nested(indent, false)?
            } else if dash_rest(entry).is_some() {
                self.restart_line_at(column);
                self.sequence(column)?
            } else if split_key(entry).is_some() {
                self.restart_line_at(column);
                self.mapping(column)?
            } else {
                self.pos += 1;
                self.scalar(entry, indent)?
            };
            items.push(item);
        }
        Some(Value::Array(items))
    }

    /// The value after `key:`; `rest` is what follows the colon on its line.
    fn value(&mut self, rest: &'a str, indent: usize) -> Option<Value> {
        let rest = rest.trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with('#') {
            self.nested(indent, true)
        } else {
            self.scalar(rest, indent)
        }
    }

    /// The node on the lines below a key or dash with nothing after it: indented deeper, or
    /// (for a key) a sequence at the key's own indentation; null when there is none.
    fn nested(&mut self, indent: usize, sequence_at_same_indent: bool) -> Option<Value> {
        match self.peek() {
            Some(line) if line.indent > indent => {
                if dash_rest(line.text).is_some() {
                    self.sequence(line.indent)
                } else if split_key(line.text).is_some() {
                    self.mapping(line.indent)
                } else {
                    None
                }
            }
            Some(line)
                if sequence_at_same_indent
                    && line.indent == indent
                    && dash_rest(line.text).is_some() =>
            {
                self.sequence(indent)
            }
            _ => Some(Value::Null),
        }
    }
}

/// A reader that counts the collections around the node it reads.
trait Nesting {
    fn depth(&mut self) -> &mut usize;
    /// Records that nesting went too deep here.
    fn too_deep(&mut self);
}

impl Nesting for Reader<'_> {
    fn depth(&mut self) -> &mut usize {
        &mut self.depth
    }

    fn too_deep(&mut self) {
        // The collection starts on the next line to read.
        self.too_deep = Some(self.pos + 1);
    }
}

/// Runs `read` on a collection one level deeper, or gives up past [`MAX_DEPTH`].
fn deeper<R: Nesting>(reader: &mut R, read: impl FnOnce(&mut R) -> Option<Value>) -> Option<Value> {
    if *reader.depth() == MAX_DEPTH {
        reader.too_deep();
        return None;
    }
    *reader.depth() += 1;
    let value = read(reader);
    *reader.depth() -= 1;
    value
}

/// What follows `-` when `text` is a block sequence entry.
fn dash_rest(text: &str) -> Option<&str> {
    match text.as_bytes() {
        [b'-'] => Some(""),
        [b'-', b' ', ..] => Some(&text[1..]),
        _ => None,
    }
}

/// `key: rest` → the key and `rest`, when `text` starts a mapping entry with a string key.
fn split_key(text: &str) -> Option<(Cow<'_, str>, &str)> {
    let (key, after) = match text.as_bytes()[0] {
        b'\'' => {
            let mut key = String::new();
            let after = single_quoted_line(&text[1..], &mut key)?;
            (Cow::Owned(key), after)
        }
        b'"' => {
            let mut key = String::new();
            let (closed, _) = double_quoted_line(&text[1..], &mut key)?;
            (Cow::Owned(key), closed?)
        }
        _ => {
            if starts_with_indicator(text) {
                return None;
            }
            let Stop::Colon(colon) = scan_plain(text) else {
                return None;
            };
            let key = text[..colon].trim_end_matches(' ');
            // Keys that are not text (numbers, booleans, null) and merge keys are libyaml's.
            if !is_plain_text(key) || key == "<<" {
                return None;
            }
            (Cow::Borrowed(key), &text[colon..])
        }
    };
    let rest = after.trim_start_matches(' ').strip_prefix(':')?;
    (rest.is_empty() || rest.starts_with(' ')).then_some((key, rest))
}

#[cfg(test)]
mod tests;
