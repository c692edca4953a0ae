//! Quoted scalars, one line at a time: a scalar that goes on is continued by the caller.
/// Reads a single-quoted scalar's characters on one line into `out`; returns what follows
/// the closing quote, or `None` with the line's text (trailing spaces dropped) appended when
/// the scalar continues on the next line.
pub(super) fn single_quoted_line<'t>(line: &'t str, out: &mut String) -> Option<&'t str> {
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
pub(super) fn double_quoted_line<'t>(
    line: &'t str,
    out: &mut String,
) -> Option<(Option<&'t str>, bool)> {
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
