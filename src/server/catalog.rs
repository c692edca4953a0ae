//! The catalog as the services see it: absent while it loads, then an open index. Calls
//! that arrive while it loads wait for it (bounded by the caller's deadline): OLM re-lists
//! a catalog as soon as its connection is ready, and must not get a half-loaded answer.
use crate::api::RawMessage;
use crate::store::{QueryError, Store};
use bytes::Bytes;
use rusqlite::Connection;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// How many encoded messages a stream may have queued ahead of the client.
const STREAM_BUFFER: usize = 32;

#[derive(Clone)]
pub struct Catalog {
    rx: watch::Receiver<Option<Arc<Store>>>,
}

/// Makes the catalog available once it is loaded.
pub struct Publisher(watch::Sender<Option<Arc<Store>>>);

impl Publisher {
    pub fn publish(&self, store: Arc<Store>) {
        self.0.send_replace(Some(store));
    }
}

pub fn loading() -> (Publisher, Catalog) {
    let (tx, rx) = watch::channel(None);
    (Publisher(tx), Catalog { rx })
}

fn to_status(e: QueryError) -> Status {
    match e {
        // Upstream's handlers return plain errors, which gRPC reports as UNKNOWN.
        QueryError::NotFound(message) => Status::unknown(message),
        QueryError::Storage(message) => Status::internal(message),
    }
}

impl Catalog {
    pub(super) async fn store(&self) -> Result<Arc<Store>, Status> {
        let mut rx = self.rx.clone();
        let ready = rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Status::unavailable("the catalog is not available"))?;
        Ok(ready.clone().expect("waited for Some"))
    }

    /// Runs one point query. These are index lookups that take tens of microseconds, so
    /// they run in place: handing them to a blocking thread would cost more than the lookup.
    pub async fn query<T, F>(&self, f: F) -> Result<T, Status>
    where
        F: FnOnce(&Connection) -> Result<T, QueryError>,
    {
        let store = self.store().await?;
        store.with_conn(f).map_err(to_status)
    }

    /// Runs a query that produces messages one by one, streaming them to the caller as they
    /// are read. The query stops when the caller goes away.
    pub async fn stream<F>(
        &self,
        f: F,
    ) -> Result<ReceiverStream<Result<RawMessage, Status>>, Status>
    where
        F: FnOnce(&Connection, &mut dyn FnMut(Bytes) -> bool) -> Result<(), QueryError>
            + Send
            + 'static,
    {
        let store = self.store().await?;
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        tokio::task::spawn_blocking(move || {
            let result = store
                .with_conn(|conn| f(conn, &mut |b| tx.blocking_send(Ok(RawMessage(b))).is_ok()));
            if let Err(e) = result {
                let _ = tx.blocking_send(Err(to_status(e)));
            }
        });
        Ok(ReceiverStream::new(rx))
    }
}
