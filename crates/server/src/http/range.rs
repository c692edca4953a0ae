//! `Range: bytes=…` on `/api/v1/all`, read as Go's static-content server reads it
//! (catalogd-http.md §2): one range is served as `206`; several are answered with the whole
//! body (`200`), which RFC 9110 allows a server to do, instead of `multipart/byteranges`,
//! which no catalog client asks for.

/// What a `Range` header asks of a body of a given length.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ranged {
    /// Serve the whole body.
    Whole,
    /// Serve bytes `start..end` (end exclusive, never empty).
    Part { start: u64, end: u64 },
    /// `416`: with `Content-Range: bytes */length` when `no_overlap`, else a malformed header.
    Unsatisfiable { no_overlap: bool },
}

pub(crate) fn parse(header: &str, length: u64) -> Ranged {
    let Some(specs) = header.strip_prefix("bytes=") else {
        return Ranged::Unsatisfiable { no_overlap: false };
    };
    let mut parts = Vec::new();
    let mut no_overlap = false;
    for spec in specs.split(',') {
        let spec = spec.trim_matches([' ', '\t']);
        if spec.is_empty() {
            continue;
        }
        let Some((first, last)) = spec.split_once('-') else {
            return Ranged::Unsatisfiable { no_overlap: false };
        };
        let (first, last) = (
            first.trim_matches([' ', '\t']),
            last.trim_matches([' ', '\t']),
        );
        let number = |s: &str| {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u64>().ok())
                .flatten()
        };
        if first.is_empty() {
            // The last `n` bytes.
            let Some(n) = number(last) else {
                return Ranged::Unsatisfiable { no_overlap: false };
            };
            parts.push((length - n.min(length), length));
            continue;
        }
        let Some(start) = number(first) else {
            return Ranged::Unsatisfiable { no_overlap: false };
        };
        if start >= length {
            no_overlap = true;
            continue;
        }
        let end = if last.is_empty() {
            length
        } else {
            match number(last) {
                Some(last) if last >= start => last.min(length - 1) + 1,
                _ => return Ranged::Unsatisfiable { no_overlap: false },
            }
        };
        parts.push((start, end));
    }
    match parts.as_slice() {
        [] if no_overlap => Ranged::Unsatisfiable { no_overlap: true },
        [] => Ranged::Whole,
        [(start, end)] if start < end => Ranged::Part {
            start: *start,
            end: *end,
        },
        // An empty suffix range (`-0`) or several ranges.
        _ => Ranged::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_ranges_suffixes_and_open_ends() {
        assert_eq!(
            parse("bytes=0-68", 1196),
            Ranged::Part { start: 0, end: 69 }
        );
        assert_eq!(
            parse("bytes=1190-", 1196),
            Ranged::Part {
                start: 1190,
                end: 1196
            }
        );
        assert_eq!(
            parse("bytes=-6", 1196),
            Ranged::Part {
                start: 1190,
                end: 1196
            }
        );
        assert_eq!(
            parse("bytes=-5000", 1196),
            Ranged::Part {
                start: 0,
                end: 1196
            }
        );
        assert_eq!(
            parse("bytes=1000-9999", 1196),
            Ranged::Part {
                start: 1000,
                end: 1196
            }
        );
        assert_eq!(
            parse("bytes= 5 - 9 ", 20),
            Ranged::Part { start: 5, end: 10 }
        );
    }

    #[test]
    fn unsatisfiable_malformed_and_multiple() {
        assert_eq!(
            parse("bytes=1196-", 1196),
            Ranged::Unsatisfiable { no_overlap: true }
        );
        assert_eq!(
            parse("bytes=0-1", 0),
            Ranged::Unsatisfiable { no_overlap: true }
        );
        for bad in [
            "items=0-1",
            "bytes=5-1",
            "bytes=a-1",
            "bytes=1",
            "bytes=--1",
            "bytes=+1-2",
        ] {
            assert_eq!(
                parse(bad, 100),
                Ranged::Unsatisfiable { no_overlap: false },
                "{bad}"
            );
        }
        assert_eq!(parse("bytes=0-1,5-9", 100), Ranged::Whole);
        assert_eq!(parse("bytes=-0", 100), Ranged::Whole);
        // A range past the end beside one inside it: the one inside is served.
        assert_eq!(
            parse("bytes=200-300, 0-9", 100),
            Ranged::Part { start: 0, end: 10 }
        );
    }
}
