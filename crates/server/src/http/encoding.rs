//! Response compression (catalogd-http.md §5): gzip or zstd, chosen from `Accept-Encoding` as
//! catalogd's compression layer chooses (the higher q-value wins, zstd at equal ones, `q=0`
//! refuses), for bodies of at least [`THRESHOLD`] bytes; never for `HEAD` or ranges.
use store::content::Coding;

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
