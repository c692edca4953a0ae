//! `POST /catalogs/{name}/api/v1/graphql` (catalogd-graphql.md): the request checked in
//! catalogd's order (body, query, complexity, catalog, schema), then validated and executed
//! over the index on a blocking thread. Each catalog's schema is derived from its documents
//! once per index (one read of them, kept as a few KB of names and counts) and dropped with
//! the index. Executions run a few at a time, each bounded in time and in response size;
//! nothing holds a catalog's documents.
mod execute;
mod limits;
mod request;
mod response;
mod schema;
mod syntax;
mod validate;

use super::body::{self, Body};
use super::encoding::Encoder;
use super::encoding::{self, THRESHOLD};
use crate::catalogs::Served;
use crate::serving::ServedCatalog;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use response::{GraphqlError, envelope};
use schema::Deriver;
pub(crate) use schema::Schema;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::content::{MetasFilter, documents};
use syntax::SyntaxError;
use tokio::sync::Semaphore;

/// catalogd's limit on the request body.
const MAX_BODY: usize = 1 << 20;
/// catalogd's limit on the query text.
const MAX_QUERY: usize = 100_000;
/// catalogd's execution deadline.
const DEADLINE: Duration = Duration::from_secs(5);
/// catalogd's read timeout, applied to the body (the headers have theirs).
const BODY_TIMEOUT: Duration = Duration::from_secs(5);
/// Queries executed at once (each may hold a response up to its size limit); more wait.
const RUNNING: usize = 4;

/// What the endpoint's requests share across catalogs (each catalog's schema is kept on
/// its served entry, [`Served::schema`], and goes with it).
pub(crate) struct Graphql {
    /// One derivation at a time (it reads every document once).
    deriving: tokio::sync::Mutex<()>,
    running: Semaphore,
}

impl Default for Graphql {
    fn default() -> Self {
        Graphql {
            deriving: tokio::sync::Mutex::new(()),
            running: Semaphore::new(RUNNING),
        }
    }
}

/// The answer: a status, and a body in catalogd's form.
pub(crate) type Answer = Response<Body>;

/// Answers a POST to the endpoint of catalog `name`, `served` being its entry when this
/// server serves it (`None`: 404, once the query has passed the checks catalogd makes first).
pub(crate) async fn answer<B>(
    state: &Graphql,
    name: &str,
    served: Option<&Served>,
    headers: &HeaderMap,
    body: B,
) -> Answer
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let Some(body) = read_body(body).await else {
        return body::text_error(StatusCode::BAD_REQUEST, "Invalid request body");
    };
    let Ok(query) = request::query_of(&body) else {
        return body::text_error(StatusCode::BAD_REQUEST, "Invalid request body");
    };
    drop(body);
    if query.is_empty() {
        return body::text_error(StatusCode::BAD_REQUEST, "Query cannot be empty");
    }
    if query.len() > MAX_QUERY {
        return body::text_error(StatusCode::BAD_REQUEST, "Query too large");
    }
    let doc = match syntax::parse(&query) {
        Ok(doc) => doc,
        Err(SyntaxError::Invalid(message)) => {
            let error = GraphqlError::general(format!("query parse error: {message}"));
            return json(headers, envelope(None, &[error])).await;
        }
        Err(SyntaxError::TooDeep) => {
            let error = GraphqlError::general(format!(
                "query exceeds maximum depth of {}",
                limits::MAX_DEPTH
            ));
            return json(headers, envelope(None, &[error])).await;
        }
    };
    if let Err(message) = limits::check(&doc) {
        return json(headers, envelope(None, &[GraphqlError::general(message)])).await;
    }
    let Some(served) = served else {
        return body::text_error(StatusCode::NOT_FOUND, "404 Not Found");
    };
    let catalog = &served.catalog;
    if catalog.loaded().is_none() {
        let message = format!("503 Service Unavailable: catalog {name:?} is still loading");
        return body::text_error(StatusCode::SERVICE_UNAVAILABLE, &message);
    };
    let schema = match state.schema(served).await {
        Ok(schema) => schema,
        Err(e) => {
            tracing::error!("GraphQL schema of catalog {name:?}: {e}");
            return body::text_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "500 Internal Server Error",
            );
        }
    };
    let Ok(_running) = state.running.acquire().await else {
        return body::text_error(StatusCode::SERVICE_UNAVAILABLE, "503 Service Unavailable");
    };
    let reads = match execute::operation(&doc) {
        Ok(op) => execute::reads_documents(&schema, &doc, op),
        Err(_) => false,
    };
    let run = move |conn: Option<&rusqlite::Connection>| {
        let errors = validate::validate(&schema, &doc);
        if !errors.is_empty() {
            return envelope(None, &errors);
        }
        let op = match execute::operation(&doc) {
            Ok(op) => op,
            Err(error) => return envelope(None, &[error]),
        };
        let deadline = Instant::now() + DEADLINE;
        let (data, errors) = execute::execute(&schema, &doc, op, conn, deadline);
        envelope(data.as_ref(), &errors)
    };
    let answered = if reads {
        catalog
            .bulk_query(move |conn| Ok(run(Some(conn))))
            .await
            .map_err(|status| status.message().to_owned())
    } else {
        tokio::task::spawn_blocking(move || run(None))
            .await
            .map_err(|e| e.to_string())
    };
    match answered {
        Ok(body) => json(headers, body).await,
        Err(e) => {
            tracing::error!("GraphQL query of catalog {name:?}: {e}");
            body::text_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "500 Internal Server Error",
            )
        }
    }
}

impl Graphql {
    /// The schema of the catalog `served` (loaded): kept on the entry, or derived from its
    /// index. A failure to build it is kept too (the index does not change); a failure to
    /// read the index is not, so the next request tries again.
    async fn schema(&self, served: &Served) -> Result<Arc<Schema>, String> {
        let kept = served
            .schema
            .get_or_try_init(|| async {
                let _one_at_a_time = self.deriving.lock().await;
                derive(&served.catalog).await
            })
            .await?;
        kept.clone()
    }
}

/// Reads every document of `catalog` once and builds its schema.
async fn derive(catalog: &ServedCatalog) -> Result<Result<Arc<Schema>, String>, String> {
    catalog
        .bulk_query(|conn| {
            let mut deriver = Deriver::default();
            documents(
                conn,
                &MetasFilter::default(),
                0,
                u64::MAX,
                &mut |schema, text| {
                    if !schema.is_empty() {
                        let doc: serde_json::Value = serde_json::from_slice(text).map_err(|e| {
                            store::QueryError::Storage(format!("a stored document: {e}"))
                        })?;
                        deriver.add(schema, &doc);
                    }
                    Ok(true)
                },
            )?;
            Ok(deriver.build().map(Arc::new))
        })
        .await
        .map_err(|status| status.message().to_owned())
}

/// The body, or `None` when it is longer than [`MAX_BODY`] or does not arrive in time.
/// Go's decoder reads a JSON value from the first [`MAX_BODY`] bytes: a value complete
/// within them is read even when more follows, so the first bytes are kept.
async fn read_body<B>(mut body: B) -> Option<Vec<u8>>
where
    B: http_body::Body<Data = Bytes> + Unpin,
{
    let read = async {
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return None };
            if let Ok(data) = frame.into_data() {
                let room = MAX_BODY - out.len();
                out.extend_from_slice(&data[..data.len().min(room)]);
                if data.len() > room {
                    break;
                }
            }
        }
        Some(out)
    };
    tokio::time::timeout(BODY_TIMEOUT, read)
        .await
        .ok()
        .flatten()
}

/// A `200` JSON answer, compressed as catalogd's compression layer would.
async fn json(request: &HeaderMap, envelope: String) -> Answer {
    let coding = encoding::negotiate(
        request
            .get(header::ACCEPT_ENCODING)
            .and_then(|h| h.to_str().ok()),
    )
    .filter(|_| envelope.len() as u64 >= THRESHOLD);
    let mut r = Response::new(body::empty());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let Some(coding) = coding else {
        *r.body_mut() = body::full(envelope);
        return r;
    };
    let compressed = tokio::task::spawn_blocking(move || {
        let mut encoder = Encoder::new(coding)?;
        encoder.write(envelope.as_bytes())?;
        encoder.finish()
    })
    .await
    .map_err(std::io::Error::other)
    .and_then(|r| r);
    match compressed {
        Ok(bytes) => {
            r.headers_mut().insert(
                header::CONTENT_ENCODING,
                HeaderValue::from_static(coding.name()),
            );
            *r.body_mut() = body::full(bytes);
            r
        }
        Err(e) => {
            tracing::error!("GraphQL: compressing an answer: {e}");
            body::text_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "500 Internal Server Error",
            )
        }
    }
}
