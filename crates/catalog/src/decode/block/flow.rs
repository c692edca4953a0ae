//! Flow collections (`[a, b]`, `{k: v}`) written on one line.
use super::plain::{resolve_plain, starts_with_indicator};
use super::quoted::{double_quoted_line, single_quoted_line};
use super::{Nesting, deeper};
use serde_json::{Map, Value};

/// A flow collection (`[a, b]`, `{k: v}`) that ends on the line it starts on.
pub(super) struct Flow<'t> {
    pub(super) text: &'t str,
    pub(super) pos: usize,
    /// Collections around the node being read, as in the block reader.
    pub(super) depth: usize,
    pub(super) too_deep: bool,
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

    pub(super) fn node(&mut self) -> Option<Value> {
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

impl Nesting for Flow<'_> {
    fn depth(&mut self) -> &mut usize {
        &mut self.depth
    }

    fn too_deep(&mut self) {
        self.too_deep = true;
    }
}
