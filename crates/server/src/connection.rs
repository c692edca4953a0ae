//! Accepted connections, each bounded: how many may be open at once, how long one may stay
//! silent before its HTTP/2 preface, how long one may sit with no call open, and how many
//! bytes of answers its calls may hold in memory before the client reads them.
//!
//! A catalog pod is reached by OLM and by anything else that can reach the service; a client
//! that connects and never speaks, or asks and never reads, must cost a bounded amount and
//! then go away, without slowing down anyone else.
use super::limits::Limits;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio::time::Sleep;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tracing::{debug, warn};

/// The HTTP/2 client preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"): a connection that has not
/// sent this much has not started speaking gRPC.
const PREFACE_LEN: u64 = 24;

/// How long accepting waits, at most, after the process ran out of file descriptors.
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);

/// What the calls of one connection share; every request carries it as an extension.
#[derive(Clone)]
pub(crate) struct Peer(Arc<PeerState>);

struct PeerState {
    open_calls: AtomicUsize,
    /// When the last open call ended, in milliseconds since `epoch`.
    idle_since_ms: AtomicU64,
    epoch: Instant,
    /// Answer bytes (in KiB) this connection may hold before its client reads them.
    buffered: Arc<Semaphore>,
    /// The same, shared by every connection.
    buffered_total: Arc<Semaphore>,
    buffer_cap_kib: u32,
}

impl Peer {
    fn new(limits: &Limits, buffered_total: Arc<Semaphore>) -> Peer {
        let cap = limits.connection_buffer_kib();
        Peer(Arc::new(PeerState {
            open_calls: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            epoch: Instant::now(),
            buffered: Arc::new(Semaphore::new(cap as usize)),
            buffered_total,
            buffer_cap_kib: cap,
        }))
    }

    /// Counts a call as open until the returned guard is dropped (its answer fully sent or
    /// abandoned): a connection with an open call is never idle.
    pub(crate) fn open_call(&self) -> OpenCall {
        self.0.open_calls.fetch_add(1, Ordering::AcqRel);
        OpenCall(self.clone())
    }

    /// Reserves room for `bytes` of answer, waiting while this connection (or the server as a
    /// whole) holds as much unsent answer as it may. One answer larger than the whole
    /// allowance is let through alone, so that it can still be served.
    pub(crate) async fn reserve(&self, bytes: usize) -> Reserved {
        let state = &self.0;
        let kib = bytes.div_ceil(1024).clamp(1, state.buffer_cap_kib as usize) as u32;
        // Always the connection's own allowance first: one order, no deadlock between calls.
        let own = state.buffered.clone().acquire_many_owned(kib).await;
        let total = state.buffered_total.clone().acquire_many_owned(kib).await;
        Reserved {
            _permits: Arc::new((own.ok(), total.ok())),
        }
    }

    fn idle_for(&self) -> Option<Duration> {
        let state = &self.0;
        if state.open_calls.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = Duration::from_millis(state.idle_since_ms.load(Ordering::Acquire));
        Some(state.epoch.elapsed().saturating_sub(since))
    }
}

/// A call counted as open on its connection.
pub(crate) struct OpenCall(Peer);

impl Drop for OpenCall {
    fn drop(&mut self) {
        let state = &(self.0).0;
        let now = state.epoch.elapsed().as_millis() as u64;
        state.idle_since_ms.store(now, Ordering::Release);
        state.open_calls.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Room held for an answer until it is sent (see [`Peer::reserve`]). Cloneable because it
/// travels as a response extension to the layer that ties it to the response body.
#[derive(Clone)]
pub(crate) struct Reserved {
    _permits: Arc<(Option<OwnedSemaphorePermit>, Option<OwnedSemaphorePermit>)>,
}

/// Accepted connections, at most `limits.max_connections` open at once: past that, new ones
/// wait in the kernel's listen backlog. Running out of file descriptors slows accepting down
/// (with a warning) instead of spinning on the error. When `stop` turns true the listening
/// socket is closed at once, so that new connections are refused (and clients such as OLM's
/// try elsewhere or later) while the calls in progress finish.
pub(crate) fn incoming(
    listener: TcpListener,
    limits: Arc<Limits>,
    stop: watch::Receiver<bool>,
) -> impl Stream<Item = Result<Conn, std::convert::Infallible>> {
    let (tx, rx) = mpsc::channel(1);
    let task = tokio::spawn(accept_loop(listener, limits, tx, stop));
    Incoming {
        conns: ReceiverStream::new(rx),
        _task: AbortOnDrop(task),
    }
}

struct Incoming {
    conns: ReceiverStream<Conn>,
    _task: AbortOnDrop,
}

impl Stream for Incoming {
    type Item = Result<Conn, std::convert::Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.conns).poll_next(cx).map(|c| c.map(Ok))
    }
}

/// Stops accepting if the server drops its incoming stream before a stop (its transport
/// failed).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Accepts until `stop`, then returns, which closes the listener and ends the incoming
/// stream once the connections already accepted are taken (how the gRPC server learns of the
/// stop, see `grpc::start`). The server keeps its incoming stream until its last connection
/// ends, so the listener cannot wait for the stream to be dropped: the kernel would go on
/// completing handshakes that nobody answers until the grace period ends.
async fn accept_loop(
    listener: TcpListener,
    limits: Arc<Limits>,
    tx: mpsc::Sender<Conn>,
    mut stop: watch::Receiver<bool>,
) {
    let stopping = async move {
        let _ = stop.wait_for(|stopping| *stopping).await;
    };
    tokio::select! {
        () = accept_until_closed(&listener, &limits, &tx) => {}
        () = stopping => debug!("stopped accepting connections"),
    }
}

async fn accept_until_closed(listener: &TcpListener, limits: &Limits, tx: &mpsc::Sender<Conn>) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let buffered_total = Arc::new(Semaphore::new(limits.total_buffer_kib() as usize));
    let mut backoff = Duration::ZERO;
    let mut warned_full = false;
    loop {
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if !warned_full {
                    warn!(
                        max_connections = limits.max_connections,
                        "connection limit reached; new connections wait until one closes"
                    );
                    warned_full = true;
                }
                match slots.clone().acquire_owned().await {
                    Ok(slot) => slot,
                    Err(_) => return,
                }
            }
        };
        // Room in the channel first, so that an accepted connection never waits in it.
        let Ok(room) = tx.reserve().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => {
                backoff = Duration::ZERO;
                stream
            }
            Err(e) if out_of_resources(&e) => {
                backoff = (backoff * 2).clamp(Duration::from_millis(10), MAX_ACCEPT_BACKOFF);
                warn!(
                    retry_in_ms = backoff.as_millis() as u64,
                    "cannot accept a connection: {e}"
                );
                tokio::time::sleep(backoff).await;
                continue;
            }
            Err(e) => {
                // The peer gave up before we accepted it (ECONNABORTED and the like).
                debug!("accepting a connection failed: {e}");
                continue;
            }
        };
        if slots.available_permits() > 0 {
            warned_full = false;
        }
        let _ = stream.set_nodelay(true);
        room.send(Conn::new(stream, slot, limits, buffered_total.clone()));
    }
}

fn out_of_resources(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// One accepted connection: the socket plus the timer that closes it when it stays silent
/// before its preface, or idle (no call open) for too long. The timer is looked at when it
/// fires, and set again for the earliest moment the connection could be due, so an idle
/// connection closes between one and two idle timeouts after its last call.
pub(crate) struct Conn {
    io: TcpStream,
    peer: Peer,
    _slot: OwnedSemaphorePermit,
    opened: Instant,
    bytes_read: u64,
    handshake_timeout: Duration,
    idle_timeout: Duration,
    timer: Pin<Box<Sleep>>,
}

impl Conn {
    fn new(
        io: TcpStream,
        slot: OwnedSemaphorePermit,
        limits: &Limits,
        buffered_total: Arc<Semaphore>,
    ) -> Conn {
        Conn {
            io,
            peer: Peer::new(limits, buffered_total),
            _slot: slot,
            opened: Instant::now(),
            bytes_read: 0,
            handshake_timeout: limits.handshake_timeout,
            idle_timeout: limits.idle_timeout,
            // The first look comes at whichever timeout can strike first.
            timer: Box::pin(tokio::time::sleep(
                limits.handshake_timeout.min(limits.idle_timeout),
            )),
        }
    }

    /// When the timer fires: the reason to close the connection, or when to look again.
    fn check(&self) -> Result<Duration, &'static str> {
        if self.bytes_read < PREFACE_LEN {
            let waited = self.opened.elapsed();
            return if waited >= self.handshake_timeout {
                Err("no HTTP/2 preface before the handshake timeout")
            } else {
                Ok(self.handshake_timeout - waited)
            };
        }
        match self.peer.idle_for() {
            None => Ok(self.idle_timeout),
            Some(idle) if idle >= self.idle_timeout => Err("idle for longer than the idle timeout"),
            Some(idle) => Ok(self.idle_timeout - idle),
        }
    }
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = Peer;

    fn connect_info(&self) -> Peer {
        self.peer.clone()
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // The HTTP/2 connection always has a read pending, so this is where the timer is
        // looked at; its wake-up comes back here.
        while self.timer.as_mut().poll(cx).is_ready() {
            match self.check() {
                Ok(next) => {
                    let deadline = tokio::time::Instant::now() + next;
                    self.timer.as_mut().reset(deadline);
                }
                Err(reason) => {
                    debug!("closing a connection: {reason}");
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, reason)));
                }
            }
        }
        let before = buf.filled().len();
        let result = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = result {
            self.bytes_read += (buf.filled().len() - before) as u64;
        }
        result
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
