//! Response compression (catalogd-http.md §5): gzip or zstd, chosen from `Accept-Encoding` as
//! catalogd's compression layer chooses (the higher q-value wins, zstd at equal ones, `q=0`
//! refuses), for bodies of at least [`THRESHOLD`] bytes; never for `HEAD` or ranges. Bodies are
//! compressed while they are sent, as catalogd's gzhttp does; nothing is stored compressed.
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::Write;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The codings responses are compressed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coding {
    Gzip,
    Zstd,
}

impl Coding {
    /// Its name in `Content-Encoding`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Zstd => "zstd",
        }
    }
}

/// gzip's level. Level 1 (zlib-rs's "quick" strategy) writes only static Huffman codes, which
/// barely shrink base64; level 3 comes within 1.4% of the real catalogd's bytes at about its
/// CPU. Measured on the 8,000-bundle `/all` (462 MB), CPU-s per response: level 1 172 MB at
/// 1.9, 2 135 MB at 2.7, 3 123 MB at 3.5, 4 120 MB at 4.8; catalogd 121 MB at 3.4
/// (`benches/vs_catalogd.rs`).
const GZIP_LEVEL: u32 = 3;

/// One compressed stream, fed a piece at a time: gzip at [`GZIP_LEVEL`], zstd at its default
/// (the catalog is mostly base64 manifests, which its slower levels shrink little more, and
/// the compression must keep up with a waiting client).
pub(crate) enum Encoder {
    Gzip(GzEncoder<Vec<u8>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Encoder {
    pub(crate) fn new(coding: Coding) -> std::io::Result<Encoder> {
        Ok(match coding {
            Coding::Gzip => Encoder::Gzip(GzEncoder::new(Vec::new(), Compression::new(GZIP_LEVEL))),
            Coding::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(
                Vec::new(),
                zstd::DEFAULT_COMPRESSION_LEVEL,
            )?),
        })
    }

    pub(crate) fn write(&mut self, input: &[u8]) -> std::io::Result<()> {
        match self {
            Encoder::Gzip(gz) => gz.write_all(input),
            Encoder::Zstd(zs) => zs.write_all(input),
        }
    }

    /// What the stream has produced so far.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(match self {
            Encoder::Gzip(gz) => gz.get_mut(),
            Encoder::Zstd(zs) => zs.get_mut(),
        })
    }

    /// Ends the stream, returning its last bytes.
    pub(crate) fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Encoder::Gzip(gz) => gz.finish(),
            Encoder::Zstd(zs) => zs.finish(),
        }
    }
}

/// How many streamed responses are compressed at once: one per core keeps the cores busy,
/// and each holds an encoder's state (a few MiB for zstd) and a batch, so that memory is
/// bounded whatever the number of connections. A response beyond that waits for its turn
/// before its first compressed byte.
#[derive(Clone)]
pub(crate) struct Compressing(Arc<Semaphore>);

impl Compressing {
    pub(crate) fn new() -> Compressing {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Compressing(Arc::new(Semaphore::new(cores)))
    }

    /// Waits for a turn; the turn ends when the permit is dropped.
    pub(crate) async fn turn(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().acquire_owned().await.ok()
    }
}

/// Bodies shorter than this go out as they are.
pub(crate) const THRESHOLD: u64 = 1024;

/// The coding to answer in, if any. A coding not listed takes the q-value of `*` when that
/// is listed.
pub(crate) fn negotiate(accept_encoding: Option<&str>) -> Option<Coding> {
    let header = accept_encoding?;
    let (mut gzip, mut zstd, mut any) = (None, None, None);
    for item in header.split(',') {
        let mut params = item.split(';');
        let coding = params.next().unwrap_or_default().trim();
        let q = params
            .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
            .map(|q| q.trim().parse::<f32>().unwrap_or(0.0))
            .next()
            .unwrap_or(1.0);
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(q);
        } else if coding.eq_ignore_ascii_case("zstd") {
            zstd = Some(q);
        } else if coding == "*" {
            any = Some(q);
        }
    }
    let gzip = gzip.or(any).unwrap_or(0.0);
    let zstd = zstd.or(any).unwrap_or(0.0);
    if zstd > 0.0 && zstd >= gzip {
        Some(Coding::Zstd)
    } else if gzip > 0.0 {
        Some(Coding::Gzip)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_values_decide() {
        let cases = [
            (Some("gzip"), Some(Coding::Gzip)),
            (Some("br, GZIP;q=0.5"), Some(Coding::Gzip)),
            (Some("zstd"), Some(Coding::Zstd)),
            (Some("gzip, zstd"), Some(Coding::Zstd)),
            (Some("zstd, gzip"), Some(Coding::Zstd)),
            (Some("gzip;q=1, zstd;q=0.5"), Some(Coding::Gzip)),
            (Some("gzip;q=0.5, ZSTD;q=0.8"), Some(Coding::Zstd)),
            (Some("gzip;q=0.7, zstd;q=0.7"), Some(Coding::Zstd)),
            (Some("gzip, zstd;q=0"), Some(Coding::Gzip)),
            (Some("zstd;q=0"), None),
            (Some("zstd;q=0, *"), Some(Coding::Gzip)),
            (Some("gzip;q=0, zstd"), Some(Coding::Zstd)),
            (Some("*"), Some(Coding::Zstd)),
            (Some("gzip, *;q=0.1"), Some(Coding::Gzip)),
            (Some("identity, *;q=0.1"), Some(Coding::Zstd)),
            (None, None),
            (Some(""), None),
            (Some("identity"), None),
            (Some("br"), None),
            (Some("gzip;q=0"), None),
            (Some("gzip; q=0.000, *"), Some(Coding::Zstd)),
            (Some("gzip; q=0.000, zstd;q=0"), None),
            (Some("*;q=0"), None),
            (Some("gzip;q=bad"), None),
        ];
        for (header, coding) in cases {
            assert_eq!(negotiate(header), coding, "{header:?}");
        }
    }
}
