//! The catalogd HTTP API of OLM v1 (catalogd-http.md): `/catalogs/{name}/api/v1/all`,
//! `/api/v1/metas` and `/api/v1/graphql` (catalogd-graphql.md) of every catalog in a
//! [`Catalogs`], each from its own index (which for `serve` is also the gRPC API's), over
//! HTTP/1.1.
//!
//! The listener follows the server's readiness (a catalog named on the command line answers
//! `503` until it is loaded) and its stop signal: on stop it closes the listening socket, so new
//! connections are refused, lets responses in flight finish and closes idle connections.
//! Connections are capped; each has a deadline for its request headers and bounded header
//! and body buffers.
mod body;
mod conditional;
mod encoding;
mod graphql;
mod handler;
mod range;
mod routes;

use super::catalogs::Catalogs;
use super::metrics::Metrics;
use super::tls::TlsConfig;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tracing::{debug, warn};

pub(crate) use graphql::Schema;
pub(crate) use handler::Loaded;
pub use routes::dns1123_problems;

/// How the catalogd API is served (which catalogs: see [`Catalogs`]).
#[derive(Clone)]
pub struct HttpOptions {
    /// Serve `/api/v1/metas` (catalogd keeps it behind an alpha gate, off by default).
    pub metas: bool,
    /// Serve `/api/v1/graphql` (catalogd keeps it behind an alpha gate, off by default).
    pub graphql: bool,
    /// Connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// HTTPS with this certificate pair; plain HTTP without.
    pub tls: Option<Arc<TlsConfig>>,
}

/// catalogd's read timeout: the request headers must arrive within it.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Bytes a connection may buffer while reading a request's headers (a GraphQL body is read
/// as it arrives, within its own limit).
const MAX_REQUEST_BUFFER: usize = 64 << 10;

/// How long to wait before accepting again after accept fails (out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Turns an accepted TCP connection into the stream HTTP is spoken on: as it is for plain
/// HTTP, through a TLS handshake for HTTPS.
pub(crate) trait Handshake: Clone + Send + Sync + 'static {
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    fn handshake(
        &self,
        tcp: TcpStream,
    ) -> impl Future<Output = std::io::Result<Self::Stream>> + Send;
}

/// Plain HTTP.
#[derive(Clone)]
pub(crate) struct Plain;

impl Handshake for Plain {
    type Stream = TcpStream;
    async fn handshake(&self, tcp: TcpStream) -> std::io::Result<TcpStream> {
        Ok(tcp)
    }
}

/// HTTPS with the certificate pair in use when the connection arrives.
impl Handshake for Arc<TlsConfig> {
    type Stream = tokio_rustls::server::TlsStream<TcpStream>;
    async fn handshake(&self, tcp: TcpStream) -> std::io::Result<Self::Stream> {
        self.acceptor().accept(tcp).await
    }
}

/// What every request of the listener shares.
struct Http {
    catalogs: Catalogs,
    optional: routes::Optional,
    metrics: Option<Arc<Metrics>>,
    graphql: graphql::Graphql,
    compressing: encoding::Compressing,
}

/// Records a request's duration by status code when dropped: when its body has been sent
/// for a streamed body, when the handler returns otherwise.
struct Timing {
    metrics: Option<Arc<Metrics>>,
    started: Instant,
    code: u16,
}

impl Drop for Timing {
    fn drop(&mut self) {
        if let Some(metrics) = &self.metrics {
            metrics.catalogd_http_request(self.code, self.started.elapsed());
        }
    }
}

/// Serves the catalogd API on `listener` until `stop` turns true, then waits for the
/// connections still open to finish their responses (the caller bounds that wait).
pub(crate) async fn serve(
    listener: TcpListener,
    catalogs: Catalogs,
    options: HttpOptions,
    metrics: Option<Arc<Metrics>>,
    stop: watch::Receiver<bool>,
) {
    match options.tls.clone() {
        Some(tls) => accept(listener, tls, catalogs, options, metrics, stop).await,
        None => accept(listener, Plain, catalogs, options, metrics, stop).await,
    }
}

async fn accept<H: Handshake>(
    listener: TcpListener,
    handshake: H,
    catalogs: Catalogs,
    options: HttpOptions,
    metrics: Option<Arc<Metrics>>,
    mut stop: watch::Receiver<bool>,
) {
    let max = options.max_connections.clamp(1, Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(max));
    let http = Arc::new(Http {
        catalogs,
        optional: routes::Optional {
            metas: options.metas,
            graphql: options.graphql,
        },
        metrics,
        graphql: graphql::Graphql::default(),
        compressing: encoding::Compressing::new(),
    });
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            _ = stop.wait_for(|stopping| *stopping) => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stopping| *stopping) => break,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                warn!("catalogd API listener: accept failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let (http, handshake, stop) = (http.clone(), handshake.clone(), stop.clone());
        tokio::spawn(async move {
            let _slot = slot;
            connection(tcp, handshake, http, stop).await;
        });
    }
    // New connections are refused from here on.
    drop(listener);
    let _ = slots.acquire_many(max as u32).await;
}

async fn connection<H: Handshake>(
    tcp: TcpStream,
    handshake: H,
    http: Arc<Http>,
    mut stop: watch::Receiver<bool>,
) {
    let stream = match tokio::time::timeout(READ_TIMEOUT, handshake.handshake(tcp)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            debug!("catalogd API connection: handshake failed: {e}");
            return;
        }
        Err(_) => {
            debug!("catalogd API connection: handshake timed out");
            return;
        }
    };
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let http = http.clone();
        async move { Ok::<_, std::convert::Infallible>(handler::handle(http, req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(READ_TIMEOUT)
        .max_buf_size(MAX_REQUEST_BUFFER)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let stopping = async move {
        let _ = stop.wait_for(|stopping| *stopping).await;
    };
    let served = tokio::select! {
        served = conn.as_mut() => served,
        _ = stopping => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = served {
        debug!("catalogd API connection: {e}");
    }
}
