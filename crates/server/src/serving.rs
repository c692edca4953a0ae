//! The catalog as the services see it: absent while it loads, then an open index. Calls
//! that arrive while it loads wait for it (bounded by the caller's deadline): OLM re-lists
//! a catalog as soon as its connection is ready, and must not get a half-loaded answer.
//!
//! Every query runs on a blocking thread, entered only once one of the index's connections
//! is free (waited for asynchronously), so that no runtime worker ever waits for SQLite. A
//! stream reads a page, gives the connection back, and only then waits for its client. The
//! one exception is a point lookup that finds a connection free and everything it reads in
//! memory: that cannot wait, and runs on the calling task (see [`ServedCatalog::lookup`]).
use super::connection::Peer;
use api::RawMessage;
use bytes::Bytes;
use rusqlite::Connection;
use std::sync::Arc;
use store::{self, QueryError, Store};
use tokio::sync::{Semaphore, mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;
use unfinished::ScratchDir;

/// A page of a stream ends at whichever comes first.
const PAGE_ITEMS: usize = 256;
const PAGE_BYTES: usize = 256 << 10;

/// How many of the index's connections whole-catalog downloads (the catalogd API's bodies)
/// may hold at once: the rest stay for gRPC calls, which OLM makes on every reconnect and
/// which must not queue behind bulk reads.
const BULK_CONNECTIONS: usize = store::MAX_CONNECTIONS / 2;

/// The handle every service holds: the index once published, and the connections to it.
#[derive(Clone)]
pub(crate) struct ServedCatalog {
    rx: watch::Receiver<Option<Arc<Store>>>,
    connections: Arc<Semaphore>,
    bulk: Arc<Semaphore>,
    /// The private directory of an index published whole (see [`ServedCatalog::ready`]):
    /// removed only when the last handle (a download still streaming it) goes away.
    _scratch: Option<Arc<ScratchDir>>,
}

/// Makes the catalog available once it is loaded.
pub(crate) struct Publisher(watch::Sender<Option<Arc<Store>>>);

impl Publisher {
    pub(crate) fn publish(&self, store: Arc<Store>) {
        self.0.send_replace(Some(store));
    }
}

pub(crate) fn loading() -> (Publisher, ServedCatalog) {
    let (tx, rx) = watch::channel(None);
    (Publisher(tx), ServedCatalog::new(rx, None))
}

impl ServedCatalog {
    fn new(rx: watch::Receiver<Option<Arc<Store>>>, scratch: Option<ScratchDir>) -> Self {
        ServedCatalog {
            rx,
            connections: Arc::new(Semaphore::new(store::MAX_CONNECTIONS)),
            bulk: Arc::new(Semaphore::new(BULK_CONNECTIONS)),
            _scratch: scratch.map(Arc::new),
        }
    }

    /// A catalog whose index is open already, with the private directory it lives in (if any).
    pub(crate) fn ready(store: Store, scratch: Option<ScratchDir>) -> Self {
        // The receiver keeps the value after its sender is gone.
        let (_, rx) = watch::channel(Some(Arc::new(store)));
        ServedCatalog::new(rx, scratch)
    }
}

/// Caps a message that may echo what a client sent, so that an answer's grpc-message stays
/// small whatever the request held.
pub(crate) fn bounded(message: String) -> String {
    const MAX: usize = 1024;
    if message.len() <= MAX {
        return message;
    }
    let mut end = MAX;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &message[..end], message.len() - end)
}

fn to_status(e: QueryError) -> Status {
    match e {
        // Upstream's handlers return plain errors, which gRPC reports as UNKNOWN.
        QueryError::NotFound(message) => Status::unknown(bounded(message)),
        QueryError::Storage(message) => Status::internal(bounded(message)),
    }
}

/// A keyset-paged query: calls `send` with each row's key and message, in key order,
/// starting after the given key, until `send` returns false.
pub(crate) type Paged = dyn Fn(&Connection, i64, &mut dyn FnMut(i64, Bytes) -> bool) -> Result<(), QueryError>
    + Send
    + Sync;

impl ServedCatalog {
    /// The catalog if it is loaded, without waiting for it.
    pub(super) fn loaded(&self) -> Option<Arc<Store>> {
        self.rx.borrow().clone()
    }

    pub(super) async fn store(&self) -> Result<Arc<Store>, Status> {
        let mut rx = self.rx.clone();
        let ready = rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| Status::unavailable("the server stopped before its catalog was loaded"))?;
        Ok(ready.clone().expect("waited for Some"))
    }

    /// Runs one query on a blocking thread once a connection is free.
    pub(crate) async fn query<T, F>(&self, f: F) -> Result<T, Status>
    where
        F: FnOnce(&Connection) -> Result<T, QueryError> + Send + 'static,
        T: Send + 'static,
    {
        let store = self.store().await?;
        let permit = self
            .connections
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Status::unavailable("the server is stopping"))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            store.with_conn(f)
        })
        .await
        .map_err(|e| Status::internal(format!("query task failed: {e}")))?
        .map_err(to_status)
    }

    /// Runs a point lookup (one bundle or package) on the calling task when that cannot wait:
    /// a connection is idle and every page it reads is in the OS page cache, at most
    /// [`store::CACHED_READ_BUDGET`] bytes of them (see [`Store::try_cached`]). That is the
    /// common case of a served catalog, and it spares each call two thread switches. Anything
    /// else runs as [`Self::query`] does.
    pub(crate) async fn lookup<T, F>(&self, f: F) -> Result<T, Status>
    where
        F: Fn(&Connection) -> Result<T, QueryError> + Send + 'static,
        T: Send + 'static,
    {
        let store = self.store().await?;
        if let Ok(_permit) = self.connections.try_acquire()
            && let Some(answer) = store.try_cached(store::CACHED_READ_BUDGET, &f)
        {
            return answer.map_err(to_status);
        }
        self.query(f).await
    }

    /// Runs a bulk read (a batch of a download) like [`Self::query`], but only while fewer
    /// than [`BULK_CONNECTIONS`] other bulk reads run.
    pub(crate) async fn bulk_query<T, F>(&self, f: F) -> Result<T, Status>
    where
        F: FnOnce(&Connection) -> Result<T, QueryError> + Send + 'static,
        T: Send + 'static,
    {
        let _bulk = self
            .bulk
            .acquire()
            .await
            .map_err(|_| Status::unavailable("the server is stopping"))?;
        self.query(f).await
    }

    /// Streams a paged query to the caller. Each page is read with a connection that is
    /// given back before the page is sent. Room for a page is reserved on the caller's
    /// connection (`peer`) before it is read and held while it is sent, so a caller that does
    /// not read holds one page per stream at most, within its connection's allowance. The
    /// stream stops when the caller goes away.
    pub(crate) async fn stream(
        &self,
        peer: Option<Peer>,
        query: Arc<Paged>,
    ) -> Result<ReceiverStream<Result<RawMessage, Status>>, Status> {
        // Waiting for the catalog here, not in the task, keeps "not loaded" a call error.
        self.store().await?;
        let (tx, rx) = mpsc::channel(1);
        let catalog = self.clone();
        tokio::spawn(async move {
            let mut after = i64::MIN;
            loop {
                let _reserved = match &peer {
                    Some(peer) => Some(peer.reserve(PAGE_BYTES).await),
                    None => None,
                };
                let query = query.clone();
                let page = catalog
                    .query(move |conn| {
                        let mut page = Vec::new();
                        let mut bytes = 0;
                        query(conn, after, &mut |key, message| {
                            bytes += message.len();
                            page.push((key, message));
                            page.len() < PAGE_ITEMS && bytes < PAGE_BYTES
                        })?;
                        Ok((page, bytes))
                    })
                    .await;
                let (page, bytes) = match page {
                    Ok(page) => page,
                    Err(status) => {
                        let _ = tx.send(Err(status)).await;
                        return;
                    }
                };
                let last_page = page.len() < PAGE_ITEMS && bytes < PAGE_BYTES;
                let Some(&(last_key, _)) = page.last() else {
                    return;
                };
                for (_, message) in page {
                    if tx.send(Ok(RawMessage(message))).await.is_err() {
                        return;
                    }
                }
                if last_page {
                    return;
                }
                after = last_key;
            }
        });
        Ok(ReceiverStream::new(rx))
    }
}

#[cfg(test)]
mod tests {
    use super::bounded;

    #[test]
    fn long_messages_are_cut_on_a_character_boundary() {
        assert_eq!(bounded("short".into()), "short");
        let long = format!("package \"{}\" not found", "é".repeat(600));
        let cut = bounded(long.clone());
        assert!(cut.starts_with("package \""), "{cut}");
        assert!(
            cut.ends_with(&format!("… ({} more bytes)", long.len() - 1023)),
            "{cut}"
        );
    }
}
