//! Serving benchmark: starts the real server on a catalog, drives it with real gRPC clients
//! and prints the figures issue #2 asks for (cold and warm start, peak RSS, ListBundles,
//! GetBundle throughput and latency, index size). The load runs against the warm-started
//! server, which is how a CatalogSource pod with a cache serves.
//!
//!   python3 ../shared/tools/gen_catalog.py --packages 400 --bundles 20 --seed 1 --out /tmp/synth-large
//!   cargo bench --bench serve -- /tmp/synth-large [--callers 32] [--seconds 10] [--connections 4]
//!       [--metrics-rounds 5]
//!
//! With `--metrics-rounds N`, GetBundle throughput is then measured N times without and N
//! times with `--metrics-addr`, alternately on fresh warm-started servers (the order swapped
//! every round, so that drift on a shared machine hits both alike), and the medians compared.
#[path = "common/server.rs"]
mod server;

use api::ListBundlesRequest;
use api::registry_client::RegistryClient;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Options {
    catalog: PathBuf,
    callers: usize,
    seconds: u64,
    connections: usize,
    metrics_rounds: usize,
}

impl Options {
    fn load(&self) -> server::LoadShape {
        server::LoadShape {
            callers: self.callers,
            seconds: self.seconds,
            connections: self.connections,
        }
    }
}

fn options() -> Options {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut opts = Options {
        catalog: PathBuf::new(),
        callers: 32,
        seconds: 10,
        connections: 4,
        metrics_rounds: 0,
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
            "--metrics-rounds" => opts.metrics_rounds = value("--metrics-rounds"),
            path => opts.catalog = PathBuf::from(path),
        }
    }
    if opts.catalog.as_os_str().is_empty() {
        eprintln!(
            "usage: cargo bench --bench serve -- <fbc-dir> [--callers N] [--seconds N] [--connections N] [--metrics-rounds N]"
        );
        std::process::exit(2);
    }
    opts
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
    let server = server::start(&opts.catalog, cache.path(), &[]);
    server::wait_serving(&server.addr).await;
    let cold = t.elapsed();
    let (cold_peak, cold_rss) = server::memory(server.child.id());
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
    let server = server::start(&opts.catalog, cache.path(), &[]);
    server::wait_serving(&server.addr).await;
    let warm = t.elapsed();
    let (warm_peak, warm_rss) = server::memory(server.child.id());
    println!(
        "warm start to SERVING: {:.3} s, peak RSS {warm_peak:.0} MiB, RSS {warm_rss:.0} MiB",
        warm.as_secs_f64()
    );

    // ListBundles, three times; the keys of the bundles feed the GetBundle load.
    let mut client = RegistryClient::new(server::channel(&server.addr).await)
        .max_decoding_message_size(usize::MAX);
    let mut keys = Vec::new();
    let mut best = Duration::MAX;
    let mut best_cpu = f64::MAX;
    // The server's CPU per stream beside the wall time: with a slow client, wall time
    // measures the client.
    let pid = server.child.id();
    for round in 0..3 {
        let cpu = server::cpu_seconds(pid);
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
        let cpu = server::cpu_seconds(pid) - cpu;
        best = best.min(took);
        best_cpu = best_cpu.min(cpu);
        println!(
            "ListBundles: {n} bundles in {:.3} s, server CPU {cpu:.3} s",
            took.as_secs_f64()
        );
    }
    println!(
        "ListBundles best: {:.3} s, server CPU {best_cpu:.3} s per full stream",
        best.as_secs_f64()
    );

    let keys: server::Keys = std::sync::Arc::new(keys);
    let load = server::get_bundle_load(&server, &keys, opts.load()).await;
    println!(
        "GetBundle x{} callers: {:.0} calls/s, p50 {:.2} ms, p99 {:.2} ms, {:.0} MiB/s of manifests, server used {:.2} cores ({:.1} µs CPU per call)",
        opts.callers,
        load.calls_per_second(),
        server::percentile(&load.latencies, 0.50).as_secs_f64() * 1e3,
        server::percentile(&load.latencies, 0.99).as_secs_f64() * 1e3,
        load.bytes as f64 / load.elapsed / 1048576.0,
        load.server_cores,
        load.cpu_us_per_call()
    );
    let (peak, rss) = server::memory(server.child.id());
    println!("serving after the load: peak RSS {peak:.0} MiB, RSS now {rss:.0} MiB");
    drop(server);

    if opts.metrics_rounds > 0 {
        compare_metrics(&opts, cache.path(), &keys).await;
    }
}

/// GetBundle throughput and server CPU time per call without and with metrics, alternately,
/// and the medians. CPU per call is the steadier figure on a shared machine: throughput
/// moves with what the neighbours run.
async fn compare_metrics(opts: &Options, cache: &Path, keys: &server::Keys) {
    let mut figures: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
    for round in 0..opts.metrics_rounds {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for metrics in order {
            let extra: &[&str] = if metrics {
                &["--metrics-addr", "127.0.0.1:0"]
            } else {
                &[]
            };
            let server = server::start(&opts.catalog, cache, extra);
            server::wait_serving(&server.addr).await;
            let load = server::get_bundle_load(&server, keys, opts.load()).await;
            let rate = load.calls_per_second();
            let cpu_us = load.cpu_us_per_call();
            println!(
                "round {round}, metrics {}: {rate:.0} calls/s, {cpu_us:.1} µs server CPU per call",
                if metrics { "on" } else { "off" }
            );
            figures[usize::from(metrics)].push((rate, cpu_us));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [off, on] = figures.map(|f| {
        let (rates, cpu): (Vec<f64>, Vec<f64>) = f.into_iter().unzip();
        (median(rates), median(cpu))
    });
    println!(
        "GetBundle x{} callers, medians of {} rounds: metrics off {:.0} calls/s, {:.1} µs CPU/call; on {:.0} calls/s, {:.1} µs CPU/call (throughput {:+.1}%, CPU per call {:+.1}%)",
        opts.callers,
        opts.metrics_rounds,
        off.0,
        off.1,
        on.0,
        on.1,
        (on.0 / off.0 - 1.0) * 100.0,
        (on.1 / off.1 - 1.0) * 100.0
    );
}
