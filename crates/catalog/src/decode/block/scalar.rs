//! The reader's scalars that may run over several lines: plain (folded), quoted and literal
//! block scalars, and the one-line flow collections a value may be.
use super::flow::Flow;
use super::plain::{plain_on_line, resolve_plain, starts_with_indicator};
use super::quoted::{double_quoted_line, single_quoted_line};
use super::{End, Reader, is_document_marker};
use serde_json::Value;

impl<'a> Reader<'a> {
    /// A scalar or one-line flow collection starting with `text` (the rest of the current
    /// line, already consumed), inside a node at `indent`.
    pub(super) fn scalar(&mut self, text: &'a str, indent: usize) -> Option<Value> {
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

/// What a literal block scalar keeps of its final line breaks: `|-` none, `|` one, `|+` all.
#[derive(Clone, Copy)]
enum Chomp {
    Strip,
    Clip,
    Keep,
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
