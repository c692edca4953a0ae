//! TCP proxies on loopback that stand for a misbehaving registry. [`CuttingProxy`] cuts
//! connections mid-response, deterministically: the first `cuts` connections that carry more
//! than `after` bytes from the server are reset at that point (a registry that goes away in
//! the middle of a blob). [`GateProxy`] holds every connection until it is opened (a registry
//! that is slow to answer, for as long as a test needs). [`RefusingProxy`] answers the first
//! requests itself with an error status (a registry under load, or one that lacks the image)
//! and forwards the rest.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

pub struct CuttingProxy {
    pub addr: String,
    pub cut: Arc<AtomicUsize>,
    remaining: Arc<AtomicUsize>,
}

impl CuttingProxy {
    pub fn start(upstream: &str, after: u64, cuts: usize) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let remaining = Arc::new(AtomicUsize::new(cuts));
        let cut = Arc::new(AtomicUsize::new(0));
        let upstream = upstream.to_owned();
        let (remaining_c, cut_c) = (remaining.clone(), cut.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    break;
                };
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || pipe(c2, s2, None));
                let (remaining, cut) = (remaining_c.clone(), cut_c.clone());
                std::thread::spawn(move || pipe(server, client, Some((after, remaining, cut))));
            }
        });
        CuttingProxy {
            addr,
            cut,
            remaining,
        }
    }

    /// From now on every connection passes whole (the registry is back).
    pub fn stop_cutting(&self) {
        self.remaining.store(0, Ordering::SeqCst);
    }

    pub fn cuts_made(&self) -> usize {
        self.cut.load(Ordering::SeqCst)
    }
}

pub struct GateProxy {
    pub addr: String,
    open: Arc<(Mutex<bool>, Condvar)>,
}

impl GateProxy {
    pub fn start(upstream: &str) -> GateProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let open = Arc::new((Mutex::new(false), Condvar::new()));
        let (upstream, gate) = (upstream.to_owned(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { break };
                let (upstream, gate) = (upstream.clone(), gate.clone());
                std::thread::spawn(move || {
                    let (lock, opened) = &*gate;
                    // The guard is dropped at once: held, it would keep every other
                    // connection waiting for this one to end.
                    drop(
                        opened
                            .wait_while(lock.lock().unwrap(), |open| !*open)
                            .unwrap(),
                    );
                    let Ok(server) = TcpStream::connect(&upstream) else {
                        return;
                    };
                    let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                    std::thread::spawn(move || pipe(c2, s2, None));
                    pipe(server, client, None);
                });
            }
        });
        GateProxy { addr, open }
    }

    /// Lets the held connections and all later ones through.
    pub fn open(&self) {
        *self.open.0.lock().unwrap() = true;
        self.open.1.notify_all();
    }
}

pub struct RefusingProxy {
    pub addr: String,
    refused: Arc<AtomicUsize>,
}

impl RefusingProxy {
    /// Answers the first `refusals` connections' first requests (the version check aside,
    /// which it answers itself) with `response` (a status line and headers,
    /// each ending in CRLF, e.g. "HTTP/1.1 503 Service Unavailable\r\n") and closes their
    /// connection; forwards every later connection to `upstream` whole.
    pub fn start(upstream: &str, response: &'static str, refusals: usize) -> RefusingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let refused = Arc::new(AtomicUsize::new(0));
        let (upstream, counter) = (upstream.to_owned(), refused.clone());
        std::thread::spawn(move || {
            for mut client in listener.incoming().flatten() {
                let (upstream, counter) = (upstream.clone(), counter.clone());
                std::thread::spawn(move || {
                    let Some(head) = request_head(&mut client) else {
                        return;
                    };
                    // The version check (`GET /v2/`) is answered here: oci-client asks it to
                    // find out about tokens and takes a failure for "no token", so refusing it
                    // would count refusals nothing retries; and forwarding it would carry the
                    // next requests of its connection past the refusals unseen (only a
                    // connection's first request is looked at).
                    if head.starts_with(b"GET /v2/ ") {
                        let _ = client.write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                              Content-Length: 2\r\nConnection: close\r\n\r\n{}",
                        );
                        let _ = client.shutdown(Shutdown::Both);
                        return;
                    }
                    let refuse = counter
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                            (n < refusals).then_some(n + 1)
                        })
                        .is_ok();
                    if refuse {
                        // No body, and no second request on this connection: the client
                        // has nothing to send after the head of a GET or HEAD.
                        let answer =
                            format!("{response}Content-Length: 0\r\nConnection: close\r\n\r\n");
                        let _ = client.write_all(answer.as_bytes());
                        let _ = client.shutdown(Shutdown::Both);
                        return;
                    }
                    let Ok(mut server) = TcpStream::connect(&upstream) else {
                        return;
                    };
                    if server.write_all(&head).is_err() {
                        return;
                    }
                    let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                    std::thread::spawn(move || pipe(c2, s2, None));
                    pipe(server, client, None);
                });
            }
        });
        RefusingProxy { addr, refused }
    }

    /// How many requests were answered with the error.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

/// The bytes of a request's head, up to and including the blank line; None when the
/// connection ends first.
fn request_head(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(head)
}

type Cutter = (u64, Arc<AtomicUsize>, Arc<AtomicUsize>);

fn pipe(mut from: TcpStream, mut to: TcpStream, cutter: Option<Cutter>) {
    let mut buf = [0u8; 16 * 1024];
    let mut sent = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some((after, remaining, cut)) = &cutter
            && sent + n as u64 > *after
            && remaining
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| r.checked_sub(1))
                .is_ok()
        {
            cut.fetch_add(1, Ordering::SeqCst);
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
            return;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
        sent += n as u64;
    }
    let _ = to.shutdown(Shutdown::Write);
}
