//! One request to the catalogd API, answered as catalogd answers it (catalogd-http.md §1–§6),
//! checks in its order: route, method, catalog name, metas parameters, catalog, validators,
//! then the body. A catalog named on the command line answers `503` until it is loaded; one
//! not served (never published, or removed) answers `404`. A GraphQL request goes to its own
//! module after the catalog name is checked.
use super::body::{self, Body, Source};
use super::conditional::{self, Decision, Validators};
use super::encoding::{self, Coding, Compressing, THRESHOLD};
use super::graphql;
use super::range::{self, Ranged};
use super::routes::{self, Endpoint, Routed};
use super::{Http, Timing};
use crate::catalogs::Served;
use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use std::sync::Arc;
use std::time::Instant;
use store::content::{self, ContentFacts};

/// What the responses about the loaded content carry.
pub(crate) struct Loaded {
    facts: ContentFacts,
    etag: String,
    last_modified: HeaderValue,
}

pub(crate) async fn handle<B>(http: Arc<Http>, req: Request<B>) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let timing = Timing {
        metrics: http.metrics.clone(),
        started: Instant::now(),
        code: 0,
    };
    let (parts, body) = req.into_parts();
    let (response, timing) = answer(&http, &parts, body, timing).await;
    let mut response = response;
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    tracing::debug!(
        method = %parts.method,
        uri = %parts.uri,
        status = response.status().as_u16(),
        "catalogd API request"
    );
    drop(timing);
    response
}

/// The response, and the timing of a response whose body is not streamed (a streamed body
/// takes its timing along and records it when it ends).
async fn answer<B>(
    http: &Http,
    req: &Parts,
    body: B,
    mut timing: Timing,
) -> (Response<Body>, Option<Timing>)
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let uri = &req.uri;
    let (endpoint, catalog) = match routes::route(uri.path(), uri.query(), http.optional) {
        Routed::Redirect(location) => {
            timing.code = 301;
            return (redirect(&req.method, &location), Some(timing));
        }
        Routed::Unknown => return error(timing, StatusCode::NOT_FOUND, "404 page not found"),
        Routed::Found { endpoint, catalog } => (endpoint, catalog),
    };
    let method = &req.method;
    let allowed = match endpoint {
        Endpoint::Graphql => method == Method::POST,
        Endpoint::All | Endpoint::Metas => method == Method::GET || method == Method::HEAD,
    };
    if !allowed {
        return error(timing, StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    }
    let problems = routes::dns1123_problems(&catalog);
    if !problems.is_empty() {
        let message = format!("invalid catalog name: {}", problems.join("; "));
        return error(timing, StatusCode::BAD_REQUEST, &message);
    }
    if endpoint == Endpoint::Graphql {
        let served = http.catalogs.get(&catalog);
        let response = graphql::answer(
            &http.graphql,
            &catalog,
            served.as_deref(),
            &req.headers,
            body,
        )
        .await;
        timing.code = response.status().as_u16();
        return (response, Some(timing));
    }
    let filter = match endpoint {
        Endpoint::Metas => match routes::metas_filter(uri.query()) {
            Ok(filter) => Some(filter),
            Err(_) => return error(timing, StatusCode::BAD_REQUEST, "400 Bad Request"),
        },
        Endpoint::All | Endpoint::Graphql => None,
    };
    let Some(served) = http.catalogs.get(&catalog) else {
        return error(timing, StatusCode::NOT_FOUND, "404 Not Found");
    };
    if served.catalog.loaded().is_none() {
        let message = format!("503 Service Unavailable: catalog {catalog:?} is still loading");
        return error(timing, StatusCode::SERVICE_UNAVAILABLE, &message);
    }
    let loaded = match served.loaded().await {
        Ok(loaded) => loaded,
        Err(e) => {
            tracing::error!("catalogd API: {e}");
            return error(
                timing,
                StatusCode::INTERNAL_SERVER_ERROR,
                "500 Internal Server Error",
            );
        }
    };
    let validators = Validators {
        modified: loaded.facts.built_at,
        etag: &loaded.etag,
    };
    let use_range = match conditional::evaluate(method, &req.headers, &validators) {
        Decision::Proceed { range } => range,
        Decision::NotModified => {
            timing.code = 304;
            let mut r = Response::new(body::empty());
            *r.status_mut() = StatusCode::NOT_MODIFIED;
            validator_headers(r.headers_mut(), &loaded);
            return (r, Some(timing));
        }
        Decision::PreconditionFailed => {
            timing.code = 412;
            let mut r = Response::new(body::empty());
            *r.status_mut() = StatusCode::PRECONDITION_FAILED;
            return (r, Some(timing));
        }
    };
    let coding = if method == Method::GET {
        encoding::negotiate(
            req.headers
                .get(header::ACCEPT_ENCODING)
                .and_then(|h| h.to_str().ok()),
        )
    } else {
        None
    }
    .map(|coding| (coding, http.compressing.clone()));
    match filter {
        Some(filter) if !filter.is_empty() => {
            metas(&served, &loaded, method, filter, coding, timing).await
        }
        Some(_) => whole(&served, &loaded, method, coding, false, None, timing),
        None => {
            let range = req
                .headers
                .get(header::RANGE)
                .filter(|_| use_range)
                .and_then(|h| h.to_str().ok());
            whole(&served, &loaded, method, coding, true, range, timing)
        }
    }
}

/// `/api/v1/all`, or metas without a filter (`ranges` false: no range support, no length).
fn whole(
    served: &Served,
    loaded: &Loaded,
    method: &Method,
    coding: Option<(Coding, Compressing)>,
    ranges: bool,
    range: Option<&str>,
    mut timing: Timing,
) -> (Response<Body>, Option<Timing>) {
    let length = loaded.facts.length;
    let ranged = range.map_or(Ranged::Whole, |r| range::parse(r, length));
    let mut r = Response::new(body::empty());
    let (from, to) = match ranged {
        Ranged::Whole => (0, length),
        Ranged::Part { start, end } => {
            *r.status_mut() = StatusCode::PARTIAL_CONTENT;
            let value = format!("bytes {start}-{}/{length}", end - 1);
            r.headers_mut()
                .insert(header::CONTENT_RANGE, header_value(&value));
            (start, end)
        }
        Ranged::Unsatisfiable { no_overlap } => {
            let (mut response, timing) = if no_overlap {
                error(
                    timing,
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    "invalid range: failed to overlap",
                )
            } else {
                error(timing, StatusCode::RANGE_NOT_SATISFIABLE, "invalid range")
            };
            if no_overlap {
                response.headers_mut().insert(
                    header::CONTENT_RANGE,
                    header_value(&format!("bytes */{length}")),
                );
            }
            return (response, timing);
        }
    };
    timing.code = r.status().as_u16();
    let coding = coding.filter(|_| ranged == Ranged::Whole && length >= THRESHOLD);
    let headers = r.headers_mut();
    content_headers(headers, loaded);
    if let Some((coding, _)) = &coding {
        headers.insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(coding.name()),
        );
    } else if ranges {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(to - from));
        headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    }
    if method == Method::HEAD {
        return (r, Some(timing));
    }
    let source = Source::Range { from, to };
    *r.body_mut() = body::stream(served.catalog.clone(), None, source, coding, timing);
    (r, None)
}

/// `/api/v1/metas` with a filter. The first batch is read before answering: a result that
/// fits in it goes out whole with its length unless it is to be compressed (a coding accepted,
/// 1024 bytes or more: catalogd's compression layer sends smaller bodies as they are).
async fn metas(
    served: &Served,
    loaded: &Loaded,
    method: &Method,
    filter: content::MetasFilter,
    coding: Option<(Coding, Compressing)>,
    mut timing: Timing,
) -> (Response<Body>, Option<Timing>) {
    timing.code = 200;
    let mut r = Response::new(body::empty());
    content_headers(r.headers_mut(), loaded);
    if method == Method::HEAD {
        return (r, Some(timing));
    }
    let mut source = Source::Metas { filter, after: -1 };
    let first = match source.next(&served.catalog).await {
        Ok(first) => first.unwrap_or_default(),
        Err(e) => {
            tracing::error!("catalogd API: reading the catalog: {e}");
            return error(
                timing,
                StatusCode::INTERNAL_SERVER_ERROR,
                "500 Internal Server Error",
            );
        }
    };
    let coding = coding.filter(|_| !source.done() || first.len() as u64 >= THRESHOLD);
    if coding.is_none() && source.done() {
        r.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(first.len()));
        *r.body_mut() = body::full(first);
        return (r, Some(timing));
    }
    // One batch to compress, or more than one (so over the threshold): streamed.
    if let Some((coding, _)) = &coding {
        r.headers_mut().insert(
            header::CONTENT_ENCODING,
            HeaderValue::from_static(coding.name()),
        );
    }
    *r.body_mut() = body::stream(served.catalog.clone(), Some(first), source, coding, timing);
    (r, None)
}

fn content_headers(headers: &mut HeaderMap, loaded: &Loaded) {
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/jsonl"),
    );
    validator_headers(headers, loaded);
}

fn validator_headers(headers: &mut HeaderMap, loaded: &Loaded) {
    headers.insert(header::LAST_MODIFIED, loaded.last_modified.clone());
    headers.insert(header::ETAG, header_value(&loaded.etag));
}

/// A value made of printable ASCII (numbers, dates, quoted hex digests).
fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A plain-text error as Go's `http.Error` writes it, recorded in `timing`.
fn error(
    mut timing: Timing,
    status: StatusCode,
    message: &str,
) -> (Response<Body>, Option<Timing>) {
    timing.code = status.as_u16();
    (body::text_error(status, message), Some(timing))
}

/// Go's `http.Redirect` with 301.
fn redirect(method: &Method, location: &str) -> Response<Body> {
    let escaped = location
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;");
    let body = if method == Method::GET {
        body::full(format!("<a href=\"{escaped}\">Moved Permanently</a>.\n\n"))
    } else {
        body::empty()
    };
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::MOVED_PERMANENTLY;
    r.headers_mut()
        .insert(header::LOCATION, header_value(location));
    if method == Method::GET {
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
    }
    r
}

impl Served {
    /// The facts of the loaded content, read from the index once.
    async fn loaded(&self) -> Result<Arc<Loaded>, String> {
        self.content
            .get_or_try_init(|| async {
                let store = self
                    .catalog
                    .loaded()
                    .ok_or_else(|| "the catalog is not loaded".to_owned())?;
                let facts = self
                    .catalog
                    .query(content::facts)
                    .await
                    .map_err(|status| status.message().to_owned())?;
                Ok(Arc::new(Loaded {
                    last_modified: header_value(&conditional::format_date(facts.built_at)),
                    etag: format!("\"{}\"", store.digest()),
                    facts,
                }))
            })
            .await
            .cloned()
    }
}
