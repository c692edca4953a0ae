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
use serde_json::{Map, Value};
use std::borrow::Cow;

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

    /// A scalar or one-line flow collection starting with `text` (the rest of the current
    /// line, already consumed), inside a node at `indent`.
    fn scalar(&mut self, text: &'a str, indent: usize) -> Option<Value> {
        match text.as_bytes()[0] {
            b'|' => self.literal(text, indent),
            b'\'' | b'"' => {
                let (value, after) = self.quoted(text, indent)?;
                only_comment(after).then_some(Value::String(value))
            }
            b'[' | b'{' => {
                let mut flow = Flow {
                    text,
                    pos: 0,
                    depth: self.depth,
                    too_deep: false,
                };
                let value = flow.node();
                if flow.too_deep {
                    // The flow collection is on the line just consumed.
                    self.too_deep = Some(self.pos);
                }
                let value = value?;
                only_comment(&text[flow.pos..]).then_some(value)
            }
            _ => self.plain(text, indent),
        }
    }

    /// A plain scalar, folded over the more-indented lines that continue it.
    fn plain(&mut self, first: &'a str, indent: usize) -> Option<Value> {
        if starts_with_indicator(first) {
            return None;
        }
        let (head, commented) = plain_on_line(first)?;
        if commented {
            return resolve_plain(head);
        }
        let mut folded: Option<String> = None;
        let mut next = self.pos;
        let mut breaks = 0;
        while let Some(line) = self.lines.get(next) {
            if line.text.is_empty() {
                breaks += 1;
                next += 1;
                continue;
            }
            if line.indent <= indent || line.text.starts_with('#') {
                break;
            }
            // Indicators are text on a continuation line (`- item` included); only `: `
            // and ` #` keep their meaning.
            let (part, commented) = plain_on_line(line.text)?;
            let out = folded.get_or_insert_with(|| head.to_owned());
            fold_break(out, breaks);
            out.push_str(part);
            breaks = 0;
            next += 1;
            self.pos = next;
            if commented {
                break;
            }
        }
        match folded {
            Some(text) => resolve_plain(&text),
            None => resolve_plain(head),
        }
    }

    /// A quoted scalar (`'…'` or `"…"`) that may run over several lines; returns its value
    /// and what follows the closing quote on the last line.
    fn quoted(&mut self, text: &'a str, indent: usize) -> Option<(String, &'a str)> {
        let double = text.starts_with('"');
        let mut out = String::new();
        let mut line = &text[1..];
        loop {
            let (closed, escaped_break) = if double {
                double_quoted_line(line, &mut out)?
            } else {
                (single_quoted_line(line, &mut out), false)
            };
            if let Some(after) = closed {
                return Some((out, after));
            }
            // The scalar goes on past this line break.
            let mut breaks = 0;
            loop {
                let next = self.lines.get(self.pos)?;
                self.pos += 1;
                if next.text.is_empty() {
                    breaks += 1;
                    continue;
                }
                if next.indent <= indent || is_document_marker(next.raw) {
                    return None;
                }
                line = next.text;
                break;
            }
            if escaped_break {
                if breaks > 0 {
                    return None;
                }
            } else {
                fold_break(&mut out, breaks);
            }
        }
    }

    /// A literal block scalar (`|`, `|-`, `|+`) whose header is `header`.
    fn literal(&mut self, header: &str, indent: usize) -> Option<Value> {
        let (chomp, comment) = match header.as_bytes().get(1) {
            Some(b'-') => (Chomp::Strip, &header[2..]),
            Some(b'+') => (Chomp::Keep, &header[2..]),
            _ => (Chomp::Clip, &header[1..]),
        };
        if !(comment.is_empty() || comment.starts_with(' ') && only_comment(comment)) {
            return None;
        }
        let start = self.pos;
        let first_content = (start..self.lines.len()).find(|&i| !self.lines[i].text.is_empty())?;
        let block_indent = self.lines[first_content].indent;
        if block_indent <= indent {
            return None;
        }
        let mut end = start;
        let mut last_content = first_content;
        for (i, line) in self.lines.iter().enumerate().skip(start) {
            if line.text.is_empty() {
                // Spaces beyond the indentation on an empty line are content; leave that
                // corner to libyaml.
                if line.raw.len() > block_indent {
                    return None;
                }
            } else if line.indent < block_indent {
                break;
            } else {
                last_content = i;
            }
            end = i + 1;
        }
        if last_content + 1 == self.lines.len() && self.end == (End::File { terminated: false }) {
            return None;
        }
        let mut out = String::new();
        for line in &self.lines[start..=last_content] {
            out.push_str(line.raw.get(block_indent..).unwrap_or(""));
            out.push('\n');
        }
        match chomp {
            Chomp::Strip => {
                out.pop();
            }
            Chomp::Clip => {}
            Chomp::Keep => {
                // libyaml counts kept lines holding only spaces in its own way.
                if self.lines[last_content + 1..end]
                    .iter()
                    .any(|l| !l.raw.is_empty())
                {
                    return None;
                }
                let mut trailing = end - (last_content + 1);
                if end == self.lines.len() && self.end == (End::File { terminated: true }) {
                    trailing -= 1;
                }
                out.extend(std::iter::repeat_n('\n', trailing));
            }
        }
        self.pos = end;
        Some(Value::String(out))
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

impl Nesting for Flow<'_> {
    fn depth(&mut self) -> &mut usize {
        &mut self.depth
    }

    fn too_deep(&mut self) {
        self.too_deep = true;
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

#[derive(Clone, Copy)]
enum Chomp {
    Strip,
    Clip,
    Keep,
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

/// What ends a plain scalar on its line.
enum Stop {
    /// A `:` followed by a space or the end of the line, at this offset.
    Colon(usize),
    /// A comment (` #`) starting at this offset.
    Comment(usize),
    End,
}

fn scan_plain(text: &str) -> Stop {
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
fn plain_on_line(text: &str) -> Option<(&str, bool)> {
    let (body, commented) = match scan_plain(text) {
        Stop::Colon(_) => return None,
        Stop::Comment(i) => (&text[..i], true),
        Stop::End => (text, false),
    };
    let body = body.trim_end_matches(' ');
    (!body.is_empty()).then_some((body, commented))
}

/// Characters that cannot start a plain scalar (or mean something else there).
fn starts_with_indicator(text: &str) -> bool {
    match text.as_bytes() {
        [] => true,
        [b'-' | b'?' | b':', next, ..] => *next == b' ',
        [b'-' | b'?' | b':'] => true,
        [first, ..] => b",[]{}#&*!|>'\"%@`".contains(first),
    }
}

/// Nothing but spaces and perhaps a comment.
fn only_comment(text: &str) -> bool {
    let rest = text.trim_start_matches(' ');
    rest.is_empty() || (rest.starts_with('#') && rest.len() < text.len())
}

/// Line folding: one line break becomes a space, each further one a newline.
fn fold_break(out: &mut String, breaks: usize) {
    if breaks == 0 {
        out.push(' ');
    } else {
        out.extend(std::iter::repeat_n('\n', breaks));
    }
}

/// Reads a single-quoted scalar's characters on one line into `out`; returns what follows
/// the closing quote, or `None` with the line's text (trailing spaces dropped) appended when
/// the scalar continues on the next line.
fn single_quoted_line<'t>(line: &'t str, out: &mut String) -> Option<&'t str> {
    let mut rest = line;
    while let Some(q) = rest.find('\'') {
        out.push_str(&rest[..q]);
        if rest[q + 1..].starts_with('\'') {
            out.push('\'');
            rest = &rest[q + 2..];
        } else {
            return Some(&rest[q + 1..]);
        }
    }
    out.push_str(rest.trim_end_matches(' '));
    None
}

/// As [`single_quoted_line`] for a double-quoted scalar, decoding escapes; also says whether
/// the line ends with an escaped line break. `None` for escapes this reader does not know.
fn double_quoted_line<'t>(line: &'t str, out: &mut String) -> Option<(Option<&'t str>, bool)> {
    let mut chars = line.char_indices();
    let mut pending_spaces = 0;
    while let Some((i, c)) = chars.next() {
        if c == ' ' {
            pending_spaces += 1;
            continue;
        }
        out.extend(std::iter::repeat_n(' ', pending_spaces));
        pending_spaces = 0;
        match c {
            '"' => return Some((Some(&line[i + 1..]), false)),
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    return Some((None, true));
                };
                let decoded = match e {
                    '0' => '\0',
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    't' => '\t',
                    'n' => '\n',
                    'v' => '\u{b}',
                    'f' => '\u{c}',
                    'r' => '\r',
                    'e' => '\u{1b}',
                    ' ' => ' ',
                    '"' => '"',
                    '/' => '/',
                    '\\' => '\\',
                    'N' => '\u{85}',
                    '_' => '\u{a0}',
                    'L' => '\u{2028}',
                    'P' => '\u{2029}',
                    'x' | 'u' | 'U' => {
                        let digits = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex: String = chars.by_ref().take(digits).map(|(_, h)| h).collect();
                        if hex.len() != digits {
                            return None;
                        }
                        char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
                    }
                    _ => return None,
                };
                out.push(decoded);
            }
            _ => out.push(c),
        }
    }
    // Trailing spaces before a line break are dropped by folding.
    Some((None, false))
}

/// Whether a plain scalar is text without asking libyaml. Under its YAML 1.2 core schema,
/// text starting with a letter can only be null or a boolean, and only as one of nine words;
/// only text starting with a digit, sign or dot can be a number.
fn is_plain_text(text: &str) -> bool {
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
fn resolve_plain(text: &str) -> Option<Value> {
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
    match super::libyaml(text.as_bytes()).ok()? {
        Value::Array(_) | Value::Object(_) => None,
        v => Some(v),
    }
}

/// A flow collection (`[a, b]`, `{k: v}`) that ends on the line it starts on.
struct Flow<'t> {
    text: &'t str,
    pos: usize,
    /// Collections around the node being read, as in [`Reader`].
    depth: usize,
    too_deep: bool,
}

impl Flow<'_> {
    fn skip_spaces(&mut self) {
        while self.text.as_bytes().get(self.pos) == Some(&b' ') {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn node(&mut self) -> Option<Value> {
        self.skip_spaces();
        match self.peek()? {
            b'[' => deeper(self, Self::sequence),
            b'{' => deeper(self, Self::mapping),
            _ => self.scalar(),
        }
    }

    fn sequence(&mut self) -> Option<Value> {
        let mut items = Vec::new();
        self.entries(b']', |flow| {
            items.push(flow.node()?);
            Some(())
        })?;
        Some(Value::Array(items))
    }

    fn mapping(&mut self) -> Option<Value> {
        let mut map = Map::new();
        self.entries(b'}', |flow| {
            let Value::String(key) = flow.scalar()? else {
                return None;
            };
            flow.skip_spaces();
            if flow.peek()? != b':' {
                return None;
            }
            flow.pos += 1;
            if flow.peek()? != b' ' {
                return None;
            }
            let value = flow.node()?;
            map.insert(key, value).is_none().then_some(())
        })?;
        Some(Value::Object(map))
    }

    /// Reads the entries of the collection opening here, one `entry` at a time, through its
    /// `close`.
    fn entries(&mut self, close: u8, mut entry: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.pos += 1;
        self.skip_spaces();
        if self.peek()? == close {
            self.pos += 1;
            return Some(());
        }
        loop {
            entry(self)?;
            if self.separator(close)? {
                return Some(());
            }
        }
    }

    /// After an item: `,` (more follow: false) or `close` (done: true).
    fn separator(&mut self, close: u8) -> Option<bool> {
        self.skip_spaces();
        let c = self.peek()?;
        self.pos += 1;
        if c == close {
            return Some(true);
        }
        if c != b',' {
            return None;
        }
        self.skip_spaces();
        // A trailing comma is left to libyaml.
        (!matches!(self.peek()?, b']' | b'}')).then_some(false)
    }

    fn scalar(&mut self) -> Option<Value> {
        self.skip_spaces();
        let rest = &self.text[self.pos..];
        match self.peek()? {
            b'\'' => {
                let mut out = String::new();
                let after = single_quoted_line(&rest[1..], &mut out)?;
                self.pos = self.text.len() - after.len();
                Some(Value::String(out))
            }
            b'"' => {
                let mut out = String::new();
                let after = double_quoted_line(&rest[1..], &mut out)?.0?;
                self.pos = self.text.len() - after.len();
                Some(Value::String(out))
            }
            _ => {
                if starts_with_indicator(rest) {
                    return None;
                }
                // A `:` ends a key (or makes a pair in a sequence, which `separator` then
                // refuses); `#` needs the full grammar.
                let len = rest
                    .find([',', '[', ']', '{', '}', ':', '#'])
                    .unwrap_or(rest.len());
                if rest.as_bytes().get(len) == Some(&b'#') {
                    return None;
                }
                let body = rest[..len].trim_end_matches(' ');
                self.pos += len;
                resolve_plain(body)
            }
        }
    }
}

#[cfg(test)]
mod tests;
