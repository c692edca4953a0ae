//! Serving benchmark: starts the real server on a catalog, drives it with real gRPC clients
//! and prints the figures issue #2 asks for (cold and warm start, peak RSS, ListBundles,
//! GetBundle throughput and latency, index size). The load runs against the warm-started
//! server, which is how a CatalogSource pod with a cache serves.
//!
//!   python3 ../shared/tools/gen_catalog.py --packages 400 --bundles 20 --seed 1 --out /tmp/synth-large
//!   cargo bench --bench serve -- /tmp/synth-large [--callers 32] [--seconds 10] [--connections 4]
use olm_registry::api::registry_client::RegistryClient;
use olm_registry::api::{GetBundleRequest, ListBundlesRequest};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

struct Options {
    catalog: PathBuf,
    callers: usize,
    seconds: u64,
    connections: usize,
}

fn options() -> Options {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut opts = Options {
        catalog: PathBuf::new(),
        callers: 32,
        seconds: 10,
        connections: 4,
    };
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} needs a number"))
        };
        match a.as_str() {
            "--callers" => opts.callers = value("--callers"),
            "--seconds" => opts.seconds = value("--seconds") as u64,
            "--connections" => opts.connections = value("--connections"),
            path => opts.catalog = PathBuf::from(path),
        }
    }
    if opts.catalog.as_os_str().is_empty() {
        eprintln!(
            "usage: cargo bench --bench serve -- <fbc-dir> [--callers N] [--seconds N] [--connections N]"
        );
        std::process::exit(2);
    }
    opts
}

struct Running {
    child: Child,
    addr: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(catalog: &Path, cache: &Path) -> Running {
    let mut child = Command::new(env!("CARGO_BIN_EXE_olm-registry"))
        .arg("serve")
        .arg(catalog)
        .args(["-p", "127.0.0.1:0", "-t", "/dev/null", "--cache-dir"])
        .arg(cache)
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
fn cpu_seconds(pid: u32) -> f64 {
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
fn memory(pid: u32) -> (f64, f64) {
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

async fn channel(addr: &str) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

async fn wait_serving(addr: &str) {
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

fn dir_size(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| {
                    let meta = e.metadata().unwrap();
                    if meta.is_dir() {
                        dir_size(&e.path())
                    } else {
                        meta.len()
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let opts = options();
    let cache = tempfile::tempdir().unwrap();
    println!(
        "catalog: {} ({:.0} MiB)",
        opts.catalog.display(),
        dir_size(&opts.catalog) as f64 / 1048576.0
    );

    // Cold start: ingest into an empty cache directory.
    let t = Instant::now();
    let server = start(&opts.catalog, cache.path());
    wait_serving(&server.addr).await;
    let cold = t.elapsed();
    let (cold_peak, cold_rss) = memory(server.child.id());
    println!(
        "cold start to SERVING: {:.2} s, peak RSS {cold_peak:.0} MiB, RSS after {cold_rss:.0} MiB",
        cold.as_secs_f64()
    );
    println!(
        "index on disk: {:.0} MiB",
        dir_size(cache.path()) as f64 / 1048576.0
    );
    drop(server);

    // Warm start: same catalog, same cache. The load below runs against this server.
    let t = Instant::now();
    let server = start(&opts.catalog, cache.path());
    wait_serving(&server.addr).await;
    let warm = t.elapsed();
    let (warm_peak, warm_rss) = memory(server.child.id());
    println!(
        "warm start to SERVING: {:.3} s, peak RSS {warm_peak:.0} MiB, RSS {warm_rss:.0} MiB",
        warm.as_secs_f64()
    );

    // ListBundles, three times; the keys of the bundles feed the GetBundle load.
    let mut client =
        RegistryClient::new(channel(&server.addr).await).max_decoding_message_size(usize::MAX);
    let mut keys = Vec::new();
    let mut best = Duration::MAX;
    for round in 0..3 {
        let t = Instant::now();
        let mut stream = client
            .list_bundles(ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        let mut n = 0;
        while let Some(b) = stream.message().await.unwrap() {
            if round == 0 {
                keys.push((b.package_name, b.channel_name, b.csv_name));
            }
            n += 1;
        }
        let took = t.elapsed();
        best = best.min(took);
        println!("ListBundles: {n} bundles in {:.3} s", took.as_secs_f64());
    }
    println!("ListBundles best: {:.3} s", best.as_secs_f64());

    // GetBundle from many concurrent callers over a few connections.
    let mut channels = Vec::new();
    for _ in 0..opts.connections {
        channels.push(channel(&server.addr).await);
    }
    let keys = std::sync::Arc::new(keys);
    let deadline = Instant::now() + Duration::from_secs(opts.seconds);
    let mut tasks = Vec::new();
    for caller in 0..opts.callers {
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
    println!(
        "GetBundle x{} callers: {:.0} calls/s, p50 {:.2} ms, p99 {:.2} ms, {:.0} MiB/s of manifests, server used {server_cores:.2} cores",
        opts.callers,
        latencies.len() as f64 / elapsed,
        percentile(&latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        bytes as f64 / elapsed / 1048576.0
    );
    let (peak, rss) = memory(server.child.id());
    println!("serving after the load: peak RSS {peak:.0} MiB, RSS now {rss:.0} MiB");
}
