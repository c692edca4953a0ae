//! A file that sniffs as JSON: a stream of values, each with the line it starts on, and
//! upstream's retry of the rest as YAML when one of the first two documents is not JSON.
use super::Raw;
use super::go_value::GoValue;
use super::yaml_stream::yaml_stream;

/// Counts lines forward through a buffer, so that numbering every document is linear.
struct Lines<'a> {
    data: &'a [u8],
    offset: usize,
    line: usize,
}

impl<'a> Lines<'a> {
    fn new(data: &'a [u8], first_line: usize) -> Self {
        Lines {
            data,
            offset: 0,
            line: first_line,
        }
    }

    /// The line of byte `offset`; offsets must not decrease between calls.
    fn at(&mut self, offset: usize) -> usize {
        let end = offset.min(self.data.len());
        if end > self.offset {
            self.line += self.data[self.offset..end]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.offset = end;
        }
        self.line
    }
}

pub(super) fn json_stream(data: &[u8], emit: &mut dyn FnMut(Raw)) {
    let mut lines = Lines::new(data, 1);
    let mut stream = serde_json::Deserializer::from_slice(data).into_iter::<GoValue>();
    let mut decoded = 0usize;
    loop {
        let start = skip_json_whitespace(data, stream.byte_offset());
        match stream.next() {
            None => return,
            Some(Ok(GoValue(value))) => {
                emit(Ok((lines.at(start), value)));
                decoded += 1;
            }
            Some(Err(e)) => {
                let json_error = (e.line(), format!("invalid JSON: {e}"));
                // Upstream's decoder retries the rest of the stream as YAML when JSON fails
                // on its first or second document (`{…}` followed by `---` YAML documents);
                // the JSON error stands if the first YAML document does not decode either.
                // JSON nested too deep is YAML nested too deep (and slow for libyaml). That
                // is the one data error GoValue raises on JSON (JSON cannot spell the
                // non-finite floats it also refuses); syntax and EOF errors are the others.
                if decoded < 2 && !e.is_data() {
                    let mut rest = Vec::new();
                    yaml_stream(&data[start..], lines.at(start), &mut |raw| rest.push(raw));
                    if matches!(rest.first(), Some(Ok(_))) {
                        rest.into_iter().for_each(&mut *emit);
                        return;
                    }
                }
                emit(Err(json_error));
                return;
            }
        }
    }
}

fn skip_json_whitespace(data: &[u8], mut offset: usize) -> usize {
    while offset < data.len() && matches!(data[offset], b' ' | b'\t' | b'\n' | b'\r') {
        offset += 1;
    }
    offset
}
