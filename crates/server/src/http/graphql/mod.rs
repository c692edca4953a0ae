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
use super::encoding::{self, THRESHOLD};
use crate::serving::ServedCatalog;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use response::{GraphqlError, envelope};
use schema::{Deriver, Schema};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use store::Store;
use store::content::{Encoder, MetasFilter, documents};
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

/// What the endpoint keeps between requests: each catalog's schema, by catalog name, with
/// the index it was derived from.
pub(crate) struct Graphql {
    schemas: Mutex<HashMap<String, Derived>>,
    /// One derivation at a time (it reads every document once).
    deriving: tokio::sync::Mutex<()>,
    running: Semaphore,
}

struct Derived {
    store: Weak<Store>,
    schema: Result<Arc<Schema>, String>,
}

impl Default for Graphql {
    fn default() -> Self {
        Graphql {
            schemas: Mutex::new(HashMap::new()),
            deriving: tokio::sync::Mutex::new(()),
            running: Semaphore::new(RUNNING),
        }
    }
}

/// The answer: a status, and a body in catalogd's form.
pub(crate) type Answer = Response<Body>;

/// Answers a POST to the endpoint of catalog `name`, `catalog` being its handle when this
/// server serves it (`None`: 404, once the query has passed the checks catalogd makes first).
pub(crate) async fn answer<B>(
    state: &Graphql,
    name: &str,
    catalog: Option<&ServedCatalog>,
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
    let Some(catalog) = catalog else {
        return body::text_error(StatusCode::NOT_FOUND, "404 Not Found");
    };
    let Some(store) = catalog.loaded() else {
        let message = format!("503 Service Unavailable: catalog {name:?} is still loading");
        return body::text_error(StatusCode::SERVICE_UNAVAILABLE, &message);
    };
    let schema = match state.schema(name, &store, catalog).await {
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
    /// The schema of catalog `name` as served from `store`: cached, or derived from the
    /// index (a failure is kept too: the index does not change).
    async fn schema(
        &self,
        name: &str,
        store: &Arc<Store>,
        catalog: &ServedCatalog,
    ) -> Result<Arc<Schema>, String> {
        if let Some(cached) = self.cached(name, store) {
            return cached;
        }
        let _deriving = self.deriving.lock().await;
        if let Some(cached) = self.cached(name, store) {
            return cached;
        }
        let derived = catalog
            .bulk_query(|conn| {
                let mut deriver = Deriver::default();
                documents(
                    conn,
                    &MetasFilter::default(),
                    0,
                    u64::MAX,
                    &mut |schema, text| {
                        if !schema.is_empty() {
                            let doc: serde_json::Value =
                                serde_json::from_slice(text).map_err(|e| {
                                    store::QueryError::Storage(format!("a stored document: {e}"))
                                })?;
                            deriver.add(schema, &doc);
                        }
                        Ok(true)
                    },
                )?;
                Ok(deriver.build())
            })
            .await;
        let schema = match derived {
            Ok(built) => built.map(Arc::new),
            // Reading failed: not kept, the next request tries again.
            Err(status) => return Err(status.message().to_owned()),
        };
        let mut schemas = self.schemas.lock().unwrap_or_else(|p| p.into_inner());
        schemas.retain(|_, d| d.store.strong_count() > 0);
        schemas.insert(
            name.to_owned(),
            Derived {
                store: Arc::downgrade(store),
                schema: schema.clone(),
            },
        );
        schema
    }

    fn cached(&self, name: &str, store: &Arc<Store>) -> Option<Result<Arc<Schema>, String>> {
        let schemas = self.schemas.lock().unwrap_or_else(|p| p.into_inner());
        let derived = schemas.get(name)?;
        let same = derived
            .store
            .upgrade()
            .is_some_and(|s| Arc::ptr_eq(&s, store));
        same.then(|| derived.schema.clone())
    }
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
