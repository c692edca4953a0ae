//! Downloading one blob from a registry into an OCI layout (the pull cache, or a mirror
//! archive) as fast as the connection delivers it.
//!
//! - The bytes are received on the runtime and hashed and written on a thread of the blob's
//!   own: hashing (the dearest step) never holds up the network, and a single blob keeps two
//!   cores busy even on a single-threaded runtime.
//! - At most a few MiB per blob are queued between the two, whatever the blob's size.
//! - The file appears under its digest only once size and hash match; a mismatch is not
//!   worth another try and is reported at once.
//! - A transient failure (reset, EOF, 5xx) costs a retry that continues where the bytes
//!   stopped (an HTTP range request); a registry that ignores ranges sends the blob whole
//!   and the download starts over.
use super::error::{Error, ErrorKind};
use super::layout::Layout;
use super::registry::{Backoff, Registry};
use super::remote::is_digest_mismatch;
use bytes::Bytes;
use oci_client::Reference;
use oci_client::client::BlobResponse;
use oci_client::manifest::OciDescriptor;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::PathBuf;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;

/// The thread takes the bytes in batches of at least this much (a socket read gives up to
/// ~400 KiB): fewer wake-ups per MiB.
const BATCH: usize = 512 << 10;

/// Batches queued besides the one the thread works on: one keeps it busy. A blob in flight
/// holds about three batches (~2.5 MiB), whatever its size.
const QUEUE: usize = 1;

/// A blob being hashed and written into a layout's temporary file by a thread of its own.
/// Each chunk is hashed and then written while it is still in that core's cache. Dropping
/// the sink stops the thread and removes the file.
struct BlobSink {
    received: u64,
    pending: Vec<Bytes>,
    pending_len: usize,
    batches: mpsc::Sender<Vec<Bytes>>,
    thread: JoinHandle<Result<(String, tempfile::NamedTempFile), String>>,
}

impl BlobSink {
    fn start(layout: &Layout) -> Result<BlobSink, String> {
        let mut file = layout.temp_blob().map_err(|e| e.message)?;
        let (batches, mut incoming) = mpsc::channel::<Vec<Bytes>>(QUEUE);
        let thread = tokio::task::spawn_blocking(move || {
            let mut hasher = Sha256::new();
            while let Some(batch) = incoming.blocking_recv() {
                for chunk in batch {
                    hasher.update(&chunk);
                    file.write_all(&chunk)
                        .map_err(|e| format!("{}: {e}", file.path().display()))?;
                }
            }
            Ok((format!("sha256:{:x}", hasher.finalize()), file))
        });
        Ok(BlobSink {
            received: 0,
            pending: Vec::new(),
            pending_len: 0,
            batches,
            thread,
        })
    }

    async fn push(&mut self, chunk: Bytes) -> Result<(), String> {
        self.received += chunk.len() as u64;
        self.pending_len += chunk.len();
        self.pending.push(chunk);
        if self.pending_len >= BATCH {
            self.flush().await?;
        }
        Ok(())
    }

    /// Hands the pending chunks to the thread; waits while it is a full queue behind.
    async fn flush(&mut self) -> Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.pending_len = 0;
        if self
            .batches
            .send(std::mem::take(&mut self.pending))
            .await
            .is_err()
        {
            // The thread ends early only when a write failed; its error says why.
            return Err(match (&mut self.thread).await {
                Ok(Err(e)) => e,
                Ok(Ok(_)) => "the blob writer stopped".to_owned(),
                Err(e) => format!("the blob writer failed: {e}"),
            });
        }
        Ok(())
    }

    /// The digest of everything pushed, and the file holding it.
    async fn finish(mut self) -> Result<(String, tempfile::NamedTempFile), String> {
        self.flush().await?;
        drop(self.batches);
        self.thread
            .await
            .map_err(|e| format!("the blob writer failed: {e}"))?
    }
}

/// The repository a blob came from, for messages.
fn source_of(r: &Reference) -> String {
    format!("{}/{}", r.registry(), r.repository())
}

/// The layout's files, whatever the layout's own error says.
fn local(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, message.to_string())
}

impl Registry {
    /// Downloads the blob `descriptor` names from the reference's repository into `layout`,
    /// verified against its digest and size, and returns its path there. `progress` counts
    /// the bytes.
    pub async fn download_blob(
        &self,
        r: &Reference,
        descriptor: &OciDescriptor,
        layout: &Layout,
        progress: &indicatif::ProgressBar,
    ) -> Result<PathBuf, Error> {
        let digest = &descriptor.digest;
        let size = u64::try_from(descriptor.size).unwrap_or(0);
        let mut sink = None;
        let mut backoff = Backoff::new(self.retry_policy());
        loop {
            match self
                .download_once(r, descriptor, size, layout, &mut sink, progress)
                .await
            {
                Ok(()) => break,
                Err(e) if e.is_transient() && backoff.again(&e).await => {}
                Err(e) => return Err(e),
            }
        }
        // Every successful attempt has started a sink.
        let sink =
            sink.ok_or_else(|| Error::invalid(format!("blob {digest}: nothing was received")))?;
        let received = sink.received;
        let (actual, file) = sink.finish().await.map_err(local)?;
        if received != size {
            return Err(Error::invalid(format!(
                "blob {digest} has {received} bytes where its descriptor says {size}"
            )));
        }
        if actual != *digest {
            return Err(Error::invalid(format!(
                "blob {digest} does not match its digest (content is {actual}, from {})",
                source_of(r)
            )));
        }
        layout.adopt_verified_blob(digest, file).map_err(local)
    }

    /// One request for the bytes not received yet; they go into `sink` (started here when
    /// there is none, or again when the registry sends the whole blob).
    async fn download_once(
        &self,
        r: &Reference,
        descriptor: &OciDescriptor,
        size: u64,
        layout: &Layout,
        sink: &mut Option<BlobSink>,
        progress: &indicatif::ProgressBar,
    ) -> Result<(), Error> {
        let digest = &descriptor.digest;
        let what = format!("blob {digest} from {}", r.whole());
        let offset = sink.as_ref().map_or(0, |s| s.received);
        if size > 0 && offset >= size {
            // Everything arrived before the connection failed.
            return Ok(());
        }
        // A range from 0 asks for the bytes without the client's own hashing (ours is on
        // another thread); an empty blob has no range to ask for.
        let response = if size == 0 {
            self.client
                .pull_blob_stream(r, descriptor)
                .await
                .map(BlobResponse::Full)
        } else {
            self.client
                .pull_blob_stream_partial(r, descriptor, offset, None)
                .await
        };
        let mut stream = match response.map_err(|e| Error::from_oci(&what, &e))? {
            BlobResponse::Partial(stream) => stream,
            BlobResponse::Full(stream) => {
                if let Some(stale) = sink.take() {
                    progress.dec(stale.received);
                }
                stream
            }
        };
        let sink = match sink {
            Some(sink) => sink,
            None => sink.insert(BlobSink::start(layout).map_err(local)?),
        };
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                if is_digest_mismatch(&e) {
                    Error::invalid(format!(
                        "blob {digest} does not match its digest ({e}, from {})",
                        source_of(r)
                    ))
                } else {
                    Error::new(ErrorKind::Unavailable, format!("{what}: {e}"))
                }
            })?;
            // The descriptor's size is the cap on what is written, an empty blob's too.
            if sink.received + chunk.len() as u64 > size {
                return Err(Error::invalid(format!(
                    "blob {digest} has more bytes than its descriptor says ({size})"
                )));
            }
            progress.inc(chunk.len() as u64);
            sink.push(chunk).await.map_err(local)?;
        }
        Ok(())
    }
}
