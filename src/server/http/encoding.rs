//! Response compression (catalogd-http.md §5): gzip when the client accepts it (q-values
//! honoured, `q=0` refuses) and the body is at least [`THRESHOLD`] bytes; never for `HEAD` or
//! ranges. zstd, which newer catalogd also offers, is not: the only catalog client,
//! operator-controller, asks for gzip alone.
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write;

/// Bodies shorter than this go out as they are.
pub const THRESHOLD: u64 = 1024;

/// Whether `Accept-Encoding` accepts gzip: listed with a non-zero q-value, or `*` with one
/// when gzip is not listed.
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let Some(header) = accept_encoding else {
        return false;
    };
    let mut gzip = None;
    let mut any = None;
    for item in header.split(',') {
        let mut params = item.split(';');
        let coding = params.next().unwrap_or_default().trim();
        let q = params
            .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
            .map(|q| q.trim().parse::<f32>().unwrap_or(0.0))
            .next()
            .unwrap_or(1.0);
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(q > 0.0);
        } else if coding == "*" {
            any = Some(q > 0.0);
        }
    }
    gzip.or(any).unwrap_or(false)
}

/// A gzip stream compressed one batch at a time, on a blocking thread (it is CPU work).
pub struct Gzip(GzEncoder<Vec<u8>>);

impl Default for Gzip {
    /// The fast level: compression runs while the client waits, and the catalog text (JSON,
    /// mostly base64 manifests) gains little from the slower ones.
    fn default() -> Gzip {
        Gzip(GzEncoder::new(Vec::new(), Compression::fast()))
    }
}

impl Gzip {
    /// Compresses `input`, returning what the stream has produced so far.
    pub fn push(&mut self, input: &[u8]) -> std::io::Result<Vec<u8>> {
        self.0.write_all(input)?;
        Ok(std::mem::take(self.0.get_mut()))
    }

    /// Ends the stream, returning its last bytes.
    pub fn finish(self) -> std::io::Result<Vec<u8>> {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_values_decide() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("br, GZIP;q=0.5")));
        assert!(accepts_gzip(Some("*")));
        assert!(accepts_gzip(Some("identity, *;q=0.1")));
        assert!(!accepts_gzip(None));
        assert!(!accepts_gzip(Some("")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(Some("zstd, br")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("gzip; q=0.000, *")));
        assert!(!accepts_gzip(Some("*;q=0")));
        assert!(!accepts_gzip(Some("gzip;q=bad")));
    }

    #[test]
    fn batches_make_one_stream() {
        let mut gz = Gzip::default();
        let mut out = gz.push(b"hello ").unwrap();
        out.extend(gz.push(b"world\n").unwrap());
        out.extend(gz.finish().unwrap());
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&out[..]), &mut text)
            .unwrap();
        assert_eq!(text, "hello world\n");
    }
}
