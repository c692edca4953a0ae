//! Response bodies: small fixed ones, and the catalog streamed from the index a batch at a
//! time. A batch is read on a blocking thread with one of the index's connections, which is
//! given back before the batch is sent; compression runs on a blocking thread too, for a
//! bounded number of responses at once ([`Compressing`]). One batch waits for the client at a
//! time, so a connection holds a few batches at most however slow its reader is, and a reader
//! that takes nothing for [`STALL_TIMEOUT`] is dropped.
use super::encoding::{Coding, Compressing, Encoder};
use crate::serving::ServedCatalog;
use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use std::time::Duration;
use store::content::{self, MetasFilter};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

pub(crate) type Body = BoxBody<Bytes, std::io::Error>;

/// Bytes read from the index per batch.
const BATCH_BYTES: usize = 1 << 20;

/// catalogd's write timeout: a client that accepts no bytes for this long is cut off.
const STALL_TIMEOUT: Duration = Duration::from_secs(5 * 60);

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

pub(crate) fn empty() -> Body {
    full(Bytes::new())
}

/// A plain-text error as Go's `http.Error` writes it; the catalog endpoints and GraphQL
/// both answer their errors this way.
pub(crate) fn text_error(status: StatusCode, message: &str) -> Response<Body> {
    let mut r = Response::new(full(format!("{message}\n")));
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// Where a streamed body's bytes come from.
#[derive(Clone)]
pub(crate) enum Source {
    /// `/api/v1/all` bytes `from..to`.
    Range { from: u64, to: u64 },
    /// The lines matching a filter after offset `after`.
    Metas { filter: MetasFilter, after: i64 },
}

impl Source {
    /// Reads the next batch; `None` once there is nothing more.
    pub(crate) async fn next(
        &mut self,
        catalog: &ServedCatalog,
    ) -> Result<Option<Vec<u8>>, String> {
        let this = self.clone();
        if let Source::Range { from, to } = this
            && from >= to
        {
            return Ok(None);
        }
        let (batch, next) = catalog
            .bulk_query(move |conn| {
                let mut batch = Vec::with_capacity(BATCH_BYTES + BATCH_BYTES / 4);
                let next = match this {
                    Source::Range { from, to } => {
                        let read = content::read_range(conn, from, to, BATCH_BYTES, &mut batch)?;
                        (read > 0).then_some(Source::Range {
                            from: from + read as u64,
                            to,
                        })
                    }
                    Source::Metas { filter, after } => {
                        let last =
                            content::read_metas(conn, &filter, after, BATCH_BYTES, &mut batch)?;
                        // A batch under budget was the last one.
                        last.filter(|_| batch.len() >= BATCH_BYTES)
                            .map(|after| Source::Metas { filter, after })
                    }
                };
                Ok((batch, next))
            })
            .await
            .map_err(|status| status.message().to_owned())?;
        *self = next.unwrap_or(Source::Range { from: 0, to: 0 });
        Ok((!batch.is_empty()).then_some(batch))
    }

    pub(crate) fn done(&self) -> bool {
        matches!(self, Source::Range { from, to } if from >= to)
    }
}

/// Streams `first` (already read) and the rest of `source`, compressed in `coding` if any
/// once `compressing` gives it a turn. An error of the index cuts the body short, so that the
/// client sees a broken transfer and not a complete-looking partial catalog. `finished` is
/// dropped when the body ends.
pub(crate) fn stream<G: Send + 'static>(
    catalog: ServedCatalog,
    first: Option<Vec<u8>>,
    mut source: Source,
    coding: Option<(Coding, Compressing)>,
    finished: G,
) -> Body {
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(1);
    tokio::spawn(async move {
        let _finished = finished;
        let _turn = match &coding {
            Some((_, compressing)) => compressing.turn().await,
            None => None,
        };
        let mut encoder = match coding.map(|(coding, _)| Encoder::new(coding)).transpose() {
            Ok(encoder) => encoder,
            Err(e) => {
                let _ = tx.send(Err(e)).await;
                return;
            }
        };
        let mut pending = first;
        loop {
            let batch = match pending.take() {
                Some(batch) => Some(batch),
                None => match source.next(&catalog).await {
                    Ok(batch) => batch,
                    Err(e) => {
                        tracing::error!("catalogd API: reading the catalog: {e}");
                        let _ = tx.send(Err(std::io::Error::other(e))).await;
                        return;
                    }
                },
            };
            let last = batch.is_none();
            let out = match (encoder.take(), batch) {
                (None, Some(batch)) => batch,
                (None, None) => return,
                (Some(mut stream), batch) => {
                    let compressed = tokio::task::spawn_blocking(move || match batch {
                        Some(batch) => stream.write(&batch).map(|()| {
                            let out = stream.take();
                            (out, Some(stream))
                        }),
                        None => stream.finish().map(|out| (out, None)),
                    })
                    .await
                    .map_err(std::io::Error::other)
                    .and_then(|r| r);
                    match compressed {
                        Ok((out, next)) => {
                            encoder = next;
                            out
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e)).await;
                            return;
                        }
                    }
                }
            };
            if !out.is_empty() {
                let sent =
                    tokio::time::timeout(STALL_TIMEOUT, tx.send(Ok(Frame::data(Bytes::from(out)))))
                        .await;
                if !matches!(sent, Ok(Ok(()))) {
                    return;
                }
            }
            if last {
                return;
            }
        }
    });
    StreamBody::new(ReceiverStream::new(rx)).boxed()
}
