//! What happens around every call, whatever its service: requests that are not gRPC are
//! turned away as grpc-go turns them away, each call is counted as open on its connection
//! until its answer has been sent (so a connection with a call in progress is never closed as
//! idle), and the room an answer reserved (see [`Peer::reserve`]) is held until then too.
use super::connection::{OpenCall, Peer, Reserved};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::{Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tonic::body::Body;
use tower::{Layer, Service};

#[derive(Clone, Copy, Default)]
pub struct CallsLayer;

impl<S> Layer<S> for CallsLayer {
    type Service = Calls<S>;

    fn layer(&self, inner: S) -> Calls<S> {
        Calls { inner }
    }
}

#[derive(Clone)]
pub struct Calls<S> {
    inner: S,
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
        let answer = self.inner.call(req);
        Box::pin(async move {
            let mut response = answer.await?;
            let reserved = response.extensions_mut().remove::<Reserved>();
            Ok(response.map(|body| {
                Body::new(Tracked {
                    body,
                    _open: open,
                    _reserved: reserved,
                })
            }))
        })
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

/// A response body that keeps its call open, and its room reserved, until it is done.
struct Tracked {
    body: Body,
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
        Pin::new(&mut self.body).poll_frame(cx)
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
    fn grpc_message_is_percent_encoded() {
        assert_eq!(
            percent_encode("content-type \"text/plain\" 100% é"),
            "content-type \"text/plain\" 100%25 %C3%A9"
        );
    }
}
