//! Conditional requests (catalogd-http.md §4, RFC 9110 §13), in the order Go's static-content
//! server evaluates them. Beyond catalogd, every response carries a strong `ETag` (the index's
//! content digest), so `If-None-Match`/`If-Match` compare tags instead of always failing; an
//! `If-None-Match` present makes `If-Modified-Since` ignored, as the RFC says.
use http::{HeaderMap, Method, header};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What the validators of a request decide.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Answer the request; `range` says whether its `Range` header still applies (`If-Range`).
    Proceed {
        range: bool,
    },
    NotModified,
    PreconditionFailed,
}

/// The validators of the content: when it was built (seconds since the epoch) and its
/// entity tag, quoted.
pub(crate) struct Validators<'a> {
    pub(crate) modified: u64,
    pub(crate) etag: &'a str,
}

pub(crate) fn evaluate(method: &Method, headers: &HeaderMap, v: &Validators) -> Decision {
    let text = |name| headers.get(name).and_then(|h| h.to_str().ok());
    let read_only = method == Method::GET || method == Method::HEAD;
    let matched = match text(header::IF_MATCH) {
        Some(tags) => Some(tag_listed(tags, v.etag, true)),
        None => text(header::IF_UNMODIFIED_SINCE)
            .and_then(parse_date)
            .map(|t| v.modified <= t),
    };
    if matched == Some(false) {
        return Decision::PreconditionFailed;
    }
    match text(header::IF_NONE_MATCH) {
        Some(tags) if tag_listed(tags, v.etag, false) => {
            return if read_only {
                Decision::NotModified
            } else {
                Decision::PreconditionFailed
            };
        }
        Some(_) => {}
        None => {
            let since = text(header::IF_MODIFIED_SINCE).and_then(parse_date);
            if read_only && since.is_some_and(|t| v.modified <= t) {
                return Decision::NotModified;
            }
        }
    }
    let range = match text(header::IF_RANGE) {
        Some(_) if !read_only => true,
        None => true,
        Some(tag) if tag.starts_with('"') || tag.starts_with("W/") => tag == v.etag,
        Some(date) => parse_date(date) == Some(v.modified),
    };
    Decision::Proceed { range }
}

/// Whether a list of entity tags (`*` for any) holds `etag`; `strong` refuses weak tags.
fn tag_listed(list: &str, etag: &str, strong: bool) -> bool {
    list.split(',').map(str::trim).any(|tag| {
        tag == "*"
            || match tag.strip_prefix("W/") {
                Some(weak) => !strong && weak == etag,
                None => tag == etag,
            }
    })
}

/// An HTTP date in any of the three formats RFC 9110 makes a recipient accept (IMF-fixdate,
/// RFC 850, asctime), as seconds since the epoch.
pub(crate) fn parse_date(text: &str) -> Option<u64> {
    let time = httpdate::parse_http_date(text.trim()).ok()?;
    time.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// IMF-fixdate of seconds since the epoch.
pub(crate) fn format_date(seconds: u64) -> String {
    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    /// Thu, 20 Aug 2026 10:00:00 GMT
    const T: u64 = 1_787_220_000;
    const ETAG: &str = "\"abc\"";

    fn decide(method: Method, headers: &[(header::HeaderName, &str)]) -> Decision {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        evaluate(
            &method,
            &map,
            &Validators {
                modified: T,
                etag: ETAG,
            },
        )
    }

    #[test]
    fn the_three_date_formats() {
        assert_eq!(parse_date("Thu, 20 Aug 2026 10:00:00 GMT"), Some(T));
        assert_eq!(parse_date("Thursday, 20-Aug-26 10:00:00 GMT"), Some(T));
        assert_eq!(parse_date("Thu Aug 20 10:00:00 2026"), Some(T));
        assert_eq!(parse_date("2026-08-20T10:00:00Z"), None);
        assert_eq!(format_date(T), "Thu, 20 Aug 2026 10:00:00 GMT");
    }

    #[test]
    fn modified_since() {
        use header::IF_MODIFIED_SINCE as IMS;
        let proceed = Decision::Proceed { range: true };
        assert_eq!(
            decide(Method::GET, &[(IMS, "Thu, 20 Aug 2026 10:00:00 GMT")]),
            Decision::NotModified
        );
        assert_eq!(
            decide(Method::HEAD, &[(IMS, "Thu, 20 Aug 2026 10:00:01 GMT")]),
            Decision::NotModified
        );
        assert_eq!(
            decide(Method::GET, &[(IMS, "Thu, 20 Aug 2026 09:59:59 GMT")]),
            proceed
        );
        assert_eq!(decide(Method::GET, &[(IMS, "yesterday")]), proceed);
        // A tag list that does not match wins over a date that would.
        assert_eq!(
            decide(
                Method::GET,
                &[
                    (IMS, "Thu, 20 Aug 2026 10:00:00 GMT"),
                    (header::IF_NONE_MATCH, "\"other\"")
                ]
            ),
            proceed
        );
    }

    #[test]
    fn entity_tags() {
        use header::{IF_MATCH, IF_NONE_MATCH, IF_RANGE, IF_UNMODIFIED_SINCE};
        assert_eq!(
            decide(Method::GET, &[(IF_NONE_MATCH, "\"x\", \"abc\"")]),
            Decision::NotModified
        );
        assert_eq!(
            decide(Method::GET, &[(IF_NONE_MATCH, "W/\"abc\"")]),
            Decision::NotModified
        );
        assert_eq!(
            decide(Method::GET, &[(IF_NONE_MATCH, "*")]),
            Decision::NotModified
        );
        assert_eq!(
            decide(Method::GET, &[(IF_MATCH, "\"abc\"")]),
            Decision::Proceed { range: true }
        );
        assert_eq!(
            decide(Method::GET, &[(IF_MATCH, "W/\"abc\"")]),
            Decision::PreconditionFailed
        );
        assert_eq!(
            decide(Method::GET, &[(IF_MATCH, "\"old\"")]),
            Decision::PreconditionFailed
        );
        assert_eq!(
            decide(
                Method::GET,
                &[(IF_UNMODIFIED_SINCE, "Thu, 20 Aug 2026 09:59:59 GMT")]
            ),
            Decision::PreconditionFailed
        );
        assert_eq!(
            decide(Method::GET, &[(IF_RANGE, "\"old\"")]),
            Decision::Proceed { range: false }
        );
        assert_eq!(
            decide(Method::GET, &[(IF_RANGE, "Thu, 20 Aug 2026 10:00:00 GMT")]),
            Decision::Proceed { range: true }
        );
    }
}
