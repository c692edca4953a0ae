//! The server under benchmark: the real binary started on a catalog, its address, CPU and
//! memory as the kernel reports them, and clients for it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

pub struct Running {
    pub child: Child,
    pub addr: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nothing listens on right now (the servers are told the port, so that the
/// benches do not depend on how they log their address).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `serve` on `catalog` as catalog `name`, with its catalogd HTTP listener on a free
/// loopback port, and waits until it serves: the catalogd benches all start it this way.
pub async fn start_http(catalog: &Path, cache: &Path, name: &str) -> (Running, SocketAddr) {
    let http = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let running = start(
        catalog,
        cache,
        &["--http-addr", &http.to_string(), "--catalog-name", name],
    );
    wait_serving(&running.addr).await;
    (running, http)
}

/// An HTTP client for the catalogd benches: HTTP/1.1 only, straight to the server, and one
/// kept connection, so that each client of a load is one connection.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .http1_only()
        .no_proxy()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap()
}

/// Starts `serve` on `catalog` with the index kept in `cache`, plus `extra` flags.
pub fn start(catalog: &Path, cache: &Path, extra: &[&str]) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_olm-registry"))
        .arg("serve")
        .arg(catalog)
        .args(["-p", "127.0.0.1:0", "-t", "/dev/null", "--cache-dir"])
        .arg(cache)
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start olm-registry");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.split("listening on ").nth(1) {
                let _ = tx.send(addr.trim().to_owned());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("server address");
    Running { child, addr }
}

/// CPU seconds (user + system) a process has used so far.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<f64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    let ticks = fields.get(11).copied().unwrap_or(0.0) + fields.get(12).copied().unwrap_or(0.0);
    ticks / 100.0
}

/// (VmHWM, VmRSS) of a process, in MiB.
pub fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

pub async fn channel(addr: &str) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

pub async fn wait_serving(addr: &str) {
    let mut health = HealthClient::new(channel(addr).await);
    let mut updates = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    while let Some(u) = updates.message().await.unwrap() {
        if u.status == ServingStatus::Serving as i32 {
            return;
        }
    }
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// (package, channel, CSV name) of every bundle, the keys a GetBundle load asks for.
pub type Keys = std::sync::Arc<Vec<(String, String, String)>>;

/// How a GetBundle load is driven.
#[derive(Clone, Copy)]
pub struct LoadShape {
    /// Concurrent callers, spread over `connections` HTTP/2 connections.
    pub callers: usize,
    pub seconds: u64,
    pub connections: usize,
}

/// What one GetBundle load measured.
pub struct Load {
    /// Sorted.
    pub latencies: Vec<Duration>,
    pub bytes: usize,
    pub elapsed: f64,
    pub server_cores: f64,
}

impl Load {
    pub fn calls_per_second(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed
    }

    /// Server CPU time per call, in microseconds.
    pub fn cpu_us_per_call(&self) -> f64 {
        self.server_cores / self.calls_per_second() * 1e6
    }
}

/// GetBundle from `shape.callers` concurrent callers over a few connections for
/// `shape.seconds`, every response decoded.
pub async fn get_bundle_load(server: &Running, keys: &Keys, shape: LoadShape) -> Load {
    use api::GetBundleRequest;
    use api::registry_client::RegistryClient;
    use std::time::Instant;
    let mut channels = Vec::new();
    for _ in 0..shape.connections {
        channels.push(channel(&server.addr).await);
    }
    let deadline = Instant::now() + Duration::from_secs(shape.seconds);
    let mut tasks = Vec::new();
    for caller in 0..shape.callers {
        let keys = keys.clone();
        let mut client = RegistryClient::new(channels[caller % channels.len()].clone())
            .max_decoding_message_size(usize::MAX);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut bytes = 0usize;
            let mut i = caller * 7919;
            while Instant::now() < deadline {
                let (p, c, b) = &keys[i % keys.len()];
                i += 1;
                let t = Instant::now();
                let bundle = client
                    .get_bundle(GetBundleRequest {
                        pkg_name: p.clone(),
                        channel_name: c.clone(),
                        csv_name: b.clone(),
                    })
                    .await
                    .unwrap()
                    .into_inner();
                latencies.push(t.elapsed());
                bytes +=
                    bundle.csv_json.len() + bundle.object.iter().map(String::len).sum::<usize>();
            }
            (latencies, bytes)
        }));
    }
    let started = Instant::now();
    let server_cpu = cpu_seconds(server.child.id());
    let mut latencies = Vec::new();
    let mut bytes = 0;
    for t in tasks {
        let (l, b) = t.await.unwrap();
        latencies.extend(l);
        bytes += b;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let server_cores = (cpu_seconds(server.child.id()) - server_cpu) / elapsed;
    latencies.sort();
    Load {
        latencies,
        bytes,
        elapsed,
        server_cores,
    }
}
