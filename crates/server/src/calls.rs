//! What happens around every call, whatever its service: requests that are not gRPC are
//! turned away as grpc-go turns them away, each call is counted as open on its connection
//! until its answer has been sent (so a connection with a call in progress is never closed as
//! idle), and the room an answer reserved (see [`Peer::reserve`]) is held until then too.
//! Each call is logged at debug level when it ends, with its method, status and duration,
//! and counted in the metrics when they are on.
use super::connection::{OpenCall, Peer, Reserved};
use super::metrics::{MethodMetrics, Metrics, code_name};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::{Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tonic::body::Body;
use tower::{Layer, Service};
use tracing::Instrument;

#[derive(Clone, Default)]
pub(crate) struct CallsLayer {
    pub(crate) metrics: Option<Arc<Metrics>>,
}

impl<S> Layer<S> for CallsLayer {
    type Service = Calls<S>;

    fn layer(&self, inner: S) -> Calls<S> {
        Calls {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct Calls<S> {
    inner: S,
    metrics: Option<Arc<Metrics>>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> Service<Request<Body>> for Calls<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Send,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        if let Some(refused) = not_grpc(&req) {
            return Box::pin(std::future::ready(Ok(refused)));
        }
        let open = req.extensions().get::<Peer>().map(Peer::open_call);
        let mut call = Call::start(&req, self.metrics.as_deref());
        let answer = self.inner.call(req);
        let span = call.span.clone();
        let answered = async move {
            let mut response = answer.await?;
            let reserved = response.extensions_mut().remove::<Reserved>();
            call.code = grpc_status(response.headers());
            Ok(response.map(|body| {
                Body::new(Tracked {
                    body,
                    call,
                    _open: open,
                    _reserved: reserved,
                })
            }))
        };
        Box::pin(answered.instrument(span))
    }
}

/// A request whose content-type is not gRPC's gets HTTP 415, as grpc-go answers it, instead
/// of being decoded as if it were.
fn not_grpc(req: &Request<Body>) -> Option<Response<Body>> {
    let content_type = req.headers().get(http::header::CONTENT_TYPE);
    let is_grpc = content_type
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "application/grpc" || v.starts_with("application/grpc+"));
    if is_grpc {
        return None;
    }
    let shown = content_type.map_or_else(
        || "(none)".to_owned(),
        |v| {
            String::from_utf8_lossy(v.as_bytes())
                .chars()
                .take(64)
                .collect()
        },
    );
    let message = format!("invalid gRPC request content-type {shown:?}");
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert(
        "grpc-status",
        HeaderValue::from(tonic::Code::Internal as i32),
    );
    if let Ok(v) = HeaderValue::from_str(&percent_encode(&message)) {
        headers.insert("grpc-message", v);
    }
    Some(response)
}

/// grpc-message is percent-encoded (gRPC over HTTP/2 spec): everything outside printable
/// ASCII, and '%' itself.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A call from its request to the end of its answer, which is when it is logged and counted.
/// An answer that ends without a status (the client went away, or the call was dropped at its
/// deadline) counts as CANCELLED, as grpc-go's interceptors see it.
struct Call {
    path: http::Uri,
    /// Recorded by traces only (none when they are off); it ends with the call.
    span: tracing::Span,
    started: Instant,
    code: Option<i32>,
    metrics: Option<(Arc<MethodMetrics>, Messages)>,
}

impl Call {
    fn start(req: &Request<Body>, metrics: Option<&Metrics>) -> Call {
        let metrics = metrics.and_then(|m| m.method(req.uri().path())).map(|m| {
            m.start();
            (m, Messages::default())
        });
        let span = tracing::info_span!(
            target: store::SPAN_TARGET,
            "grpc",
            otel.name = req.uri().path(),
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.grpc.status_code = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        Call {
            path: req.uri().clone(),
            span,
            started: Instant::now(),
            code: None,
            metrics,
        }
    }

    fn sent(&mut self, data: &[u8]) {
        if let Some((m, messages)) = &mut self.metrics {
            let n = messages.count(data);
            if n > 0 {
                m.msg_sent.inc_by(n);
            }
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        let code = self.code.unwrap_or(tonic::Code::Cancelled as i32);
        let took = self.started.elapsed();
        tracing::debug!(
            method = self.path.path(),
            status = code_name(code),
            duration_us = took.as_micros() as u64,
            "call"
        );
        if let Some((m, _)) = &self.metrics {
            m.finish(code, took);
        }
        self.span.record("rpc.grpc.status_code", code);
        if code != tonic::Code::Ok as i32 {
            self.span.record("otel.status_code", "ERROR");
        }
    }
}

fn grpc_status(headers: &http::HeaderMap) -> Option<i32> {
    headers.get("grpc-status")?.to_str().ok()?.parse().ok()
}

/// Counts the gRPC messages in an answer's bytes: each is a 5-byte prefix (compressed flag,
/// big-endian length) and its payload, and one data frame may hold several messages or a part
/// of one.
#[derive(Default)]
struct Messages {
    prefix: [u8; 5],
    prefix_len: usize,
    payload_left: u64,
}

impl Messages {
    /// How many messages begin in `data`.
    fn count(&mut self, mut data: &[u8]) -> u64 {
        let mut begun = 0;
        while !data.is_empty() {
            if self.payload_left > 0 {
                let skip = data
                    .len()
                    .min(usize::try_from(self.payload_left).unwrap_or(usize::MAX));
                data = &data[skip..];
                self.payload_left -= skip as u64;
                continue;
            }
            let take = data.len().min(5 - self.prefix_len);
            self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&data[..take]);
            self.prefix_len += take;
            data = &data[take..];
            if self.prefix_len == 5 {
                begun += 1;
                self.prefix_len = 0;
                let len = [
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                    self.prefix[4],
                ];
                self.payload_left = u64::from(u32::from_be_bytes(len));
            }
        }
        begun
    }
}

/// A response body that keeps its call open, and its room reserved, until it is done.
struct Tracked {
    body: Body,
    call: Call,
    _open: Option<OpenCall>,
    _reserved: Option<Reserved>,
}

impl http_body::Body for Tracked {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<bytes::Bytes>, tonic::Status>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.call.sent(data);
            } else if let Some(code) = frame.trailers_ref().and_then(grpc_status) {
                self.call.code = Some(code);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_counted_across_and_within_frames() {
        let message = |len: u8| {
            let mut m = vec![0, 0, 0, 0, len];
            m.extend(std::iter::repeat_n(7, usize::from(len)));
            m
        };
        let stream: Vec<u8> = [message(3), message(0), message(10), message(1)].concat();
        for cut in [1, 2, 4, 5, 6, 9, 13, stream.len()] {
            let mut counter = Messages::default();
            let total: u64 = stream.chunks(cut).map(|c| counter.count(c)).sum();
            assert_eq!(total, 4, "chunks of {cut} bytes");
        }
    }

    #[test]
    fn grpc_message_is_percent_encoded() {
        assert_eq!(
            percent_encode("content-type \"text/plain\" 100% é"),
            "content-type \"text/plain\" 100%25 %C3%A9"
        );
    }
}
