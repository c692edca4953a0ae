//! JSON syntax errors worded as Go's `encoding/json` words them, for the property values OLM
//! decodes with it: an admin comparing our answer with OLM's sees the same sentence.
//! `serde_json` accepts and rejects the same texts, so this only decides the wording.

/// How the value is read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Read {
    /// `json.Unmarshal`: the whole text is one value.
    Whole,
    /// `json.Decoder.Decode`: the first value; whatever follows it is not read.
    FirstValue,
}

#[derive(Clone, Copy)]
enum Frame {
    /// Inside an object, before (`true`) or after the colon.
    Object {
        at_key: bool,
    },
    Array,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValue,
    /// After `[`: a value or `]`.
    BeginValueOrClose,
    /// After `{`: a key or `}`.
    BeginKeyOrClose,
    BeginKey,
    EndValue,
    EndTop,
    InString,
    Escape,
    Unicode(u8),
    Minus,
    Zero,
    Digits,
    Dot,
    Fraction,
    Exponent,
    ExponentSign,
    ExponentDigits,
    /// The rest of `true`, `false` or `null`.
    Literal(&'static str, &'static [u8]),
}

/// The syntax error Go reports for `text`, if any.
pub(crate) fn syntax_error(text: &str, read: Read) -> Option<String> {
    let mut scanner = Scanner {
        state: State::BeginValue,
        stack: Vec::new(),
        read,
    };
    let mut saw_value = false;
    for &c in text.as_bytes() {
        saw_value |= !c.is_ascii_whitespace();
        if let Err(e) = scanner.step(c) {
            return Some(e);
        }
        if read == Read::FirstValue && scanner.state == State::EndTop {
            return None;
        }
    }
    // The end of input acts as a space: it ends a number, or is wrong inside one.
    let ended = scanner.step(b' ');
    match read {
        Read::Whole => match ended {
            Err(e) => Some(e),
            Ok(()) if scanner.state == State::EndTop => None,
            Ok(()) => Some("unexpected end of JSON input".to_owned()),
        },
        Read::FirstValue if scanner.state == State::EndTop => None,
        Read::FirstValue if saw_value => Some("unexpected EOF".to_owned()),
        Read::FirstValue => Some("EOF".to_owned()),
    }
}

struct Scanner {
    state: State,
    stack: Vec<Frame>,
    read: Read,
}

impl Scanner {
    fn step(&mut self, c: u8) -> Result<(), String> {
        let fail = |context: &str| Err(format!("invalid character {} {context}", quote(c)));
        let space = c.is_ascii_whitespace();
        match self.state {
            State::BeginValueOrClose if c == b']' => return self.close(),
            State::BeginKeyOrClose if c == b'}' => return self.close(),
            State::BeginValue
            | State::BeginValueOrClose
            | State::BeginKeyOrClose
            | State::BeginKey
                if space => {}
            State::BeginKeyOrClose | State::BeginKey if c == b'"' => self.state = State::InString,
            State::BeginKeyOrClose | State::BeginKey => {
                return fail("looking for beginning of object key string");
            }
            State::BeginValue | State::BeginValueOrClose => self.begin_value(c)?,
            // The decoder stops after the first value without looking further.
            State::EndTop if space || self.read == Read::FirstValue => {}
            State::EndTop => return fail("after top-level value"),
            State::EndValue => return self.end_value(c),
            State::InString => match c {
                b'"' => self.value_done(),
                b'\\' => self.state = State::Escape,
                c if c < 0x20 => return fail("in string literal"),
                _ => {}
            },
            State::Escape => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.state = State::InString;
                }
                b'u' => self.state = State::Unicode(4),
                _ => return fail("in string escape code"),
            },
            State::Unicode(left) if c.is_ascii_hexdigit() => {
                self.state = match left {
                    1 => State::InString,
                    n => State::Unicode(n - 1),
                };
            }
            State::Unicode(_) => return fail("in \\u hexadecimal character escape"),
            State::Minus => match c {
                b'0' => self.state = State::Zero,
                b'1'..=b'9' => self.state = State::Digits,
                _ => return fail("in numeric literal"),
            },
            State::Digits if c.is_ascii_digit() => {}
            State::Digits | State::Zero => match c {
                b'.' => self.state = State::Dot,
                b'e' | b'E' => self.state = State::Exponent,
                _ => return self.end_number(c),
            },
            State::Dot if c.is_ascii_digit() => self.state = State::Fraction,
            State::Dot => return fail("after decimal point in numeric literal"),
            State::Fraction if c.is_ascii_digit() => {}
            State::Fraction if c == b'e' || c == b'E' => self.state = State::Exponent,
            State::Fraction | State::ExponentDigits if !c.is_ascii_digit() => {
                return self.end_number(c);
            }
            State::Fraction | State::ExponentDigits => {}
            State::Exponent if c == b'+' || c == b'-' => self.state = State::ExponentSign,
            State::Exponent | State::ExponentSign if c.is_ascii_digit() => {
                self.state = State::ExponentDigits;
            }
            State::Exponent | State::ExponentSign => {
                return fail("in exponent of numeric literal");
            }
            State::Literal(word, rest) => match rest.split_first() {
                Some((&want, more)) if want == c => {
                    if more.is_empty() {
                        self.value_done();
                    } else {
                        self.state = State::Literal(word, more);
                    }
                }
                Some((&want, _)) => {
                    return fail(&format!("in literal {word} (expecting {})", quote(want)));
                }
                None => self.value_done(),
            },
        }
        Ok(())
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        self.state = match c {
            b'{' => {
                self.stack.push(Frame::Object { at_key: true });
                State::BeginKeyOrClose
            }
            b'[' => {
                self.stack.push(Frame::Array);
                State::BeginValueOrClose
            }
            b'"' => State::InString,
            b'-' => State::Minus,
            b'0' => State::Zero,
            b'1'..=b'9' => State::Digits,
            b't' => State::Literal("true", b"rue"),
            b'f' => State::Literal("false", b"alse"),
            b'n' => State::Literal("null", b"ull"),
            _ => {
                return Err(format!(
                    "invalid character {} looking for beginning of value",
                    quote(c)
                ));
            }
        };
        Ok(())
    }

    /// A number ends at the first byte that cannot continue it, which is then read as
    /// whatever follows the value.
    fn end_number(&mut self, c: u8) -> Result<(), String> {
        self.value_done();
        self.step(c)
    }

    fn value_done(&mut self) {
        self.state = if self.stack.is_empty() {
            State::EndTop
        } else {
            State::EndValue
        };
    }

    fn close(&mut self) -> Result<(), String> {
        self.stack.pop();
        self.value_done();
        Ok(())
    }

    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let fail = |context: &str| Err(format!("invalid character {} {context}", quote(c)));
        let Some(top) = self.stack.last_mut() else {
            self.state = State::EndTop;
            return self.step(c);
        };
        if c.is_ascii_whitespace() {
            return Ok(());
        }
        match (top, c) {
            (
                Frame::Object {
                    at_key: at_key @ true,
                },
                b':',
            ) => {
                *at_key = false;
                self.state = State::BeginValue;
            }
            (Frame::Object { at_key: true }, _) => return fail("after object key"),
            (
                Frame::Object {
                    at_key: at_key @ false,
                },
                b',',
            ) => {
                *at_key = true;
                self.state = State::BeginKey;
            }
            (Frame::Object { at_key: false }, b'}') | (Frame::Array, b']') => return self.close(),
            (Frame::Object { at_key: false }, _) => return fail("after object key:value pair"),
            (Frame::Array, b',') => self.state = State::BeginValue,
            (Frame::Array, _) => return fail("after array element"),
        }
        Ok(())
    }
}

/// A byte as Go's scanner quotes it in errors: the character it stands for (the byte read as
/// a code point) in single quotes, escaped as Go escapes unprintable characters.
fn quote(c: u8) -> String {
    let inner = match c {
        b'\'' => "\\'".to_owned(),
        b'"' => "\"".to_owned(),
        b'\\' => "\\\\".to_owned(),
        0x07 => "\\a".to_owned(),
        0x08 => "\\b".to_owned(),
        0x0c => "\\f".to_owned(),
        b'\n' => "\\n".to_owned(),
        b'\r' => "\\r".to_owned(),
        b'\t' => "\\t".to_owned(),
        0x0b => "\\v".to_owned(),
        c if c < 0x20 || c == 0x7f => format!("\\x{c:02x}"),
        c if (0x80..=0xa0).contains(&c) || c == 0xad => format!("\\u{c:04x}"),
        c => char::from(c).to_string(),
    };
    format!("'{inner}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_values() {
        let err = |text: &str| syntax_error(text, Read::Whole);
        for ok in [
            "{}",
            " {\"a\": [1, -2.5e+3, true, null, \"x\\u00e9\"]} ",
            "0",
            "[]",
        ] {
            assert_eq!(err(ok), None, "{ok}");
        }
        for (text, message) in [
            ("", "unexpected end of JSON input"),
            ("{\"group\":", "unexpected end of JSON input"),
            ("\"abc", "unexpected end of JSON input"),
            ("x", "invalid character 'x' looking for beginning of value"),
            ("{} x", "invalid character 'x' after top-level value"),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            (
                "{\"a\":1 \"b\"}",
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            (
                "{1}",
                "invalid character '1' looking for beginning of object key string",
            ),
            (
                "{\"a\":tru}",
                "invalid character '}' in literal true (expecting 'e')",
            ),
            (
                "nul",
                "invalid character ' ' in literal null (expecting 'l')",
            ),
            ("-", "invalid character ' ' in numeric literal"),
            (
                "1.",
                "invalid character ' ' after decimal point in numeric literal",
            ),
            (
                "1e+",
                "invalid character ' ' in exponent of numeric literal",
            ),
            ("01", "invalid character '1' after top-level value"),
            ("\"\\x\"", "invalid character 'x' in string escape code"),
            (
                "\"\\u12g4\"",
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            ("\"a\tb\"", "invalid character '\\t' in string literal"),
            (
                "{'a':1}",
                "invalid character '\\'' looking for beginning of object key string",
            ),
        ] {
            assert_eq!(err(text).as_deref(), Some(message), "{text}");
        }
    }

    #[test]
    fn first_values() {
        let err = |text: &str| syntax_error(text, Read::FirstValue);
        assert_eq!(err("{} trailing"), None);
        assert_eq!(err("[1]x"), None);
        assert_eq!(err("12"), None);
        assert_eq!(err(""), Some("EOF".to_owned()));
        assert_eq!(err("  "), Some("EOF".to_owned()));
        assert_eq!(err("{\"gvk\":"), Some("unexpected EOF".to_owned()));
        assert_eq!(err("-"), Some("unexpected EOF".to_owned()));
        assert_eq!(
            err("{\"gvk\" }"),
            Some("invalid character '}' after object key".to_owned())
        );
    }
}
