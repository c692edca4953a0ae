//! Soak benchmark: the real server on a real catalog, under callers that mix every RPC with
//! 5% ListBundles, for minutes, at several concurrencies, then again with streams held open
//! that never read. Prints errors, calls/s, p50/p99 and RSS at the start and end of each
//! phase: the figures of "never stop serving".
//!
//!   cargo bench --bench soak -- [<fbc-dir>] [--seconds 180] [--callers 64,256] [--stalled 200]
//!
//! The catalog defaults to the real community catalog v4.16 in ../shared/testdata.
#[path = "common/registry_load.rs"]
mod registry_load;
#[path = "common/server.rs"]
mod server;

use api::ListBundlesRequest;
use api::registry_client::RegistryClient;
use registry_load::{Client, keys, phase};
use std::path::PathBuf;
use std::sync::Arc;

struct Options {
    catalog: PathBuf,
    seconds: u64,
    callers: Vec<usize>,
    stalled: usize,
    connections: usize,
}

fn options() -> Options {
    let mut opts = Options {
        catalog: PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/testdata/real/community-catalog-v4.16"),
        seconds: 180,
        callers: vec![64, 256],
        stalled: 200,
        connections: 16,
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--seconds" => opts.seconds = value().parse().expect("--seconds N"),
            "--stalled" => opts.stalled = value().parse().expect("--stalled N"),
            "--connections" => opts.connections = value().parse().expect("--connections N"),
            "--callers" => {
                opts.callers = value()
                    .split(',')
                    .map(|n| n.parse().expect("--callers N[,N...]"))
                    .collect()
            }
            path => opts.catalog = PathBuf::from(path),
        }
    }
    opts
}

/// Opens `n` ListBundles streams over a few connections of their own, reads one message of
/// each and then never reads again. They stay open while the returned value lives.
async fn stalled_streams(addr: &str, n: usize) -> Vec<(Client, tonic::Streaming<api::Bundle>)> {
    let mut connections = Vec::new();
    for _ in 0..n.div_ceil(10) {
        connections.push(
            RegistryClient::new(server::channel(addr).await).max_decoding_message_size(usize::MAX),
        );
    }
    let mut streams = Vec::new();
    for i in 0..n {
        let mut client = connections[i % connections.len()].clone();
        let mut stream = client
            .list_bundles(ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        stream.message().await.unwrap();
        streams.push((client, stream));
    }
    streams
}

#[tokio::main]
async fn main() {
    let opts = options();
    let cache = tempfile::tempdir().unwrap();
    let running = server::start(&opts.catalog, cache.path(), &[]);
    server::wait_serving(&running.addr).await;
    let pid = running.child.id();
    println!("catalog: {}", opts.catalog.display());

    let mut clients = Vec::new();
    for _ in 0..opts.connections {
        clients.push(
            RegistryClient::new(server::channel(&running.addr).await)
                .max_decoding_message_size(usize::MAX),
        );
    }
    let keys = Arc::new(keys(&mut clients[0].clone()).await);
    println!(
        "{} packages, {} bundle entries; {} s per phase over {} connections",
        keys.packages.len(),
        keys.bundles.len(),
        opts.seconds,
        opts.connections
    );

    let mut total_errors = 0;
    for stalled in [0, opts.stalled] {
        let _held = if stalled > 0 {
            Some(stalled_streams(&running.addr, stalled).await)
        } else {
            None
        };
        for &callers in &opts.callers {
            let (_, rss_start) = server::memory(pid);
            let cpu = server::cpu_seconds(pid);
            let p = phase(&clients, keys.clone(), callers, opts.seconds).await;
            let (peak, rss_end) = server::memory(pid);
            let cores = (server::cpu_seconds(pid) - cpu) / p.elapsed;
            total_errors += p.errors.len();
            println!(
                "{callers} callers, {stalled} never-reading streams: {} calls ({} ListBundles), {} errors, {:.0} calls/s, p50 {:.2} ms, p99 {:.2} ms (unary and small streams), RSS {rss_start:.0} -> {rss_end:.0} MiB (peak {peak:.0}), server {cores:.2} cores",
                p.calls,
                p.lists,
                p.errors.len(),
                p.calls as f64 / p.elapsed,
                server::percentile(&p.latencies, 0.50).as_secs_f64() * 1e3,
                server::percentile(&p.latencies, 0.99).as_secs_f64() * 1e3,
            );
            for e in p.errors.iter().take(5) {
                println!("  error: {e}");
            }
        }
    }
    if total_errors > 0 {
        std::process::exit(1);
    }
}
