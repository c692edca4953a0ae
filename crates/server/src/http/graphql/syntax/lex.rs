//! The lexer: graphql-go's tokens, read one at a time as the parser asks for them, with its
//! lexer messages (unterminated strings, bad characters, malformed numbers).
use super::{Parser, SyntaxError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Eof,
    Bang,
    Dollar,
    ParenL,
    ParenR,
    Spread,
    Colon,
    Equals,
    At,
    BracketL,
    BracketR,
    BraceL,
    Pipe,
    BraceR,
    Name,
    Int,
    Float,
    String,
    BlockString,
}

impl Kind {
    pub(super) fn text(self) -> &'static str {
        match self {
            Kind::Eof => "EOF",
            Kind::Bang => "!",
            Kind::Dollar => "$",
            Kind::ParenL => "(",
            Kind::ParenR => ")",
            Kind::Spread => "...",
            Kind::Colon => ":",
            Kind::Equals => "=",
            Kind::At => "@",
            Kind::BracketL => "[",
            Kind::BracketR => "]",
            Kind::BraceL => "{",
            Kind::Pipe => "|",
            Kind::BraceR => "}",
            Kind::Name => "Name",
            Kind::Int => "Int",
            Kind::Float => "Float",
            Kind::String => "String",
            Kind::BlockString => "BlockString",
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub(super) kind: Kind,
    pub(super) start: usize,
    pub(super) value: String,
}

impl Token {
    /// As graphql-go names a token in a message: its kind, and its value when it has one.
    pub(super) fn describe(&self) -> String {
        if self.value.is_empty() {
            self.kind.text().to_owned()
        } else {
            format!(
                "{} {}",
                self.kind.text(),
                serde_json::Value::from(self.value.as_str())
            )
        }
    }
}

impl Parser<'_> {
    pub(super) fn read_token(&mut self) -> Result<Token, SyntaxError> {
        let bytes = self.source.as_bytes();
        let mut i = self.end;
        // Ignored: white space, line terminators, commas, comments, a byte order mark.
        while i < bytes.len() {
            match bytes[i] {
                b' ' | b'\t' | b',' | b'\n' | b'\r' => i += 1,
                b'#' => {
                    while i < bytes.len() && bytes[i] != b'\n' && bytes[i] != b'\r' {
                        i += 1;
                    }
                }
                0xEF if bytes[i..].starts_with("\u{feff}".as_bytes()) => i += 3,
                _ => break,
            }
        }
        let start = i;
        let token = |kind, end: usize, value: String, parser: &mut Self| {
            parser.end = end;
            Ok(Token { kind, start, value })
        };
        let Some(&b) = bytes.get(i) else {
            return token(Kind::Eof, i, String::new(), self);
        };
        let single = match b {
            b'!' => Some(Kind::Bang),
            b'$' => Some(Kind::Dollar),
            b'(' => Some(Kind::ParenL),
            b')' => Some(Kind::ParenR),
            b':' => Some(Kind::Colon),
            b'=' => Some(Kind::Equals),
            b'@' => Some(Kind::At),
            b'[' => Some(Kind::BracketL),
            b']' => Some(Kind::BracketR),
            b'{' => Some(Kind::BraceL),
            b'|' => Some(Kind::Pipe),
            b'}' => Some(Kind::BraceR),
            _ => None,
        };
        if let Some(kind) = single {
            return token(kind, i + 1, String::new(), self);
        }
        match b {
            b'.' if bytes[i..].starts_with(b"...") => {
                token(Kind::Spread, i + 3, String::new(), self)
            }
            b'_' | b'a'..=b'z' | b'A'..=b'Z' => {
                let mut end = i + 1;
                while end < bytes.len()
                    && (bytes[end] == b'_' || bytes[end].is_ascii_alphanumeric())
                {
                    end += 1;
                }
                token(Kind::Name, end, self.source[i..end].to_owned(), self)
            }
            b'-' | b'0'..=b'9' => {
                let (kind, end) = self.number(i)?;
                token(kind, end, self.source[i..end].to_owned(), self)
            }
            b'"' if bytes[i..].starts_with(b"\"\"\"") => {
                let (value, end) = self.block_string(i)?;
                token(Kind::BlockString, end, value, self)
            }
            b'"' => {
                let (value, end) = self.string(i)?;
                token(Kind::String, end, value, self)
            }
            _ => {
                let c = self.source[i..].chars().next().unwrap_or_default();
                Err(self.error(i, &format!("Unexpected character {}.", quote_char(c))))
            }
        }
    }

    fn number(&self, start: usize) -> Result<(Kind, usize), SyntaxError> {
        let bytes = self.source.as_bytes();
        let mut i = start;
        let mut kind = Kind::Int;
        if bytes[i] == b'-' {
            i += 1;
        }
        let digits = |i: usize| -> Result<usize, SyntaxError> {
            let mut end = i;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
            if end == i {
                return Err(self.error(
                    i,
                    &format!(
                        "Invalid number, expected digit but got: {}.",
                        self.source[i..]
                            .chars()
                            .next()
                            .map_or("EOF".to_owned(), quote_char)
                    ),
                ));
            }
            Ok(end)
        };
        if bytes.get(i) == Some(&b'0') {
            i += 1;
            if bytes.get(i).is_some_and(u8::is_ascii_digit) {
                return Err(self.error(
                    i,
                    &format!(
                        "Invalid number, unexpected digit after 0: {}.",
                        quote_char(bytes[i] as char)
                    ),
                ));
            }
        } else {
            i = digits(i)?;
        }
        if bytes.get(i) == Some(&b'.') {
            kind = Kind::Float;
            i = digits(i + 1)?;
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            kind = Kind::Float;
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            i = digits(i)?;
        }
        Ok((kind, i))
    }

    fn string(&self, start: usize) -> Result<(String, usize), SyntaxError> {
        let mut value = String::new();
        let mut chars = self.source[start + 1..].char_indices();
        while let Some((at, c)) = chars.next() {
            let at = start + 1 + at;
            match c {
                '"' => return Ok((value, at + 1)),
                '\n' | '\r' => break,
                '\\' => {
                    let escaped = match chars.next().map(|(_, c)| c) {
                        Some('"') => '"',
                        Some('/') => '/',
                        Some('\\') => '\\',
                        Some('b') => '\u{8}',
                        Some('f') => '\u{c}',
                        Some('n') => '\n',
                        Some('r') => '\r',
                        Some('t') => '\t',
                        Some('u') => {
                            let hex: String = chars.by_ref().take(4).map(|(_, c)| c).collect();
                            match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                                Some(c) if hex.len() == 4 => c,
                                _ => {
                                    return Err(self.error(
                                        at,
                                        &format!("Invalid character escape sequence: \\u{hex}."),
                                    ));
                                }
                            }
                        }
                        other => {
                            return Err(self.error(
                                at,
                                &format!(
                                    "Invalid character escape sequence: \\{}.",
                                    other.map(String::from).unwrap_or_default()
                                ),
                            ));
                        }
                    };
                    value.push(escaped);
                }
                c if c < ' ' && c != '\t' => {
                    return Err(self.error(
                        at,
                        &format!("Invalid character within String: {}.", quote_char(c)),
                    ));
                }
                c => value.push(c),
            }
        }
        Err(self.error(self.source.len(), "Unterminated string."))
    }

    fn block_string(&self, start: usize) -> Result<(String, usize), SyntaxError> {
        let body = &self.source[start + 3..];
        let mut raw = String::new();
        let mut i = 0;
        while i < body.len() {
            let rest = &body[i..];
            if rest.starts_with("\"\"\"") {
                return Ok((block_string_value(&raw), start + 3 + i + 3));
            }
            if rest.starts_with("\\\"\"\"") {
                raw.push_str("\"\"\"");
                i += 4;
                continue;
            }
            let c = rest.chars().next().unwrap_or_default();
            raw.push(c);
            i += c.len_utf8();
        }
        Err(self.error(self.source.len(), "Unterminated string."))
    }
}

/// A block string's value: common indentation and blank first and last lines removed.
fn block_string_value(raw: &str) -> String {
    let lines: Vec<&str> = raw
        .split("\r\n")
        .flat_map(|l| l.split(['\n', '\r']))
        .collect();
    let indent = lines
        .iter()
        .skip(1)
        .filter_map(|l| {
            let trimmed = l.trim_start_matches([' ', '\t']);
            (!trimmed.is_empty()).then_some(l.len() - trimmed.len())
        })
        .min()
        .unwrap_or(0);
    let mut out: Vec<&str> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l
            } else {
                l.get(indent..).unwrap_or("")
            }
        })
        .collect();
    while out
        .first()
        .is_some_and(|l| l.trim_matches([' ', '\t']).is_empty())
    {
        out.remove(0);
    }
    while out
        .last()
        .is_some_and(|l| l.trim_matches([' ', '\t']).is_empty())
    {
        out.pop();
    }
    out.join("\n")
}

/// A character as graphql-go quotes it in a lexer message.
fn quote_char(c: char) -> String {
    if c < ' ' && c != '\t' {
        format!("\"\\u{:04X}\"", c as u32)
    } else {
        format!("{:?}", c.to_string())
    }
}
