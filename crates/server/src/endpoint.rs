//! The HTTP/1 listener of `--metrics-addr`: `/metrics` for Prometheus, `/healthz` (the
//! process answers) and `/readyz` (the catalog is loaded and the server is not stopping) for
//! probes and load balancers that do not speak gRPC. It reads the server's readiness and stops
//! on the server's shutdown signal, like the gRPC listener.
use super::metrics::Metrics;
use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic_health::pb::health_check_response::ServingStatus;
use tracing::{debug, warn};

/// A scraper that has not sent its request headers by then is dropped.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait before accepting again after accept fails (out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The content type of the text exposition format Prometheus asks for last and every
/// scraper reads.
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

pub(crate) async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    ready: watch::Receiver<ServingStatus>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stopping| *stopping) => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                warn!("metrics listener: accept failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        let ready = ready.clone();
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let response = answer(&req, &metrics, &ready);
            async move { Ok::<_, std::convert::Infallible>(response) }
        });
        tokio::spawn(async move {
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                debug!("metrics connection: {e}");
            }
        });
    }
}

fn answer(
    req: &Request<Incoming>,
    metrics: &Metrics,
    ready: &watch::Receiver<ServingStatus>,
) -> Response<String> {
    let plain = |status: StatusCode, body: &str| {
        let mut r = Response::new(format!("{body}\n"));
        *r.status_mut() = status;
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        r
    };
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
    }
    match req.uri().path() {
        "/metrics" => {
            let mut r = Response::new(metrics.exposition());
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static(TEXT_FORMAT),
            );
            r
        }
        "/healthz" => plain(StatusCode::OK, "ok"),
        "/readyz" if *ready.borrow() == ServingStatus::Serving => plain(StatusCode::OK, "ok"),
        "/readyz" => plain(StatusCode::SERVICE_UNAVAILABLE, "not ready"),
        _ => plain(StatusCode::NOT_FOUND, "not found"),
    }
}
