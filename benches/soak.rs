//! Soak benchmark: the real server on a real catalog, under callers that mix every RPC with
//! 5% ListBundles, for minutes, at several concurrencies, then again with streams held open
//! that never read. Prints errors, calls/s, p50/p99 and RSS at the start and end of each
//! phase: the figures of "never stop serving".
//!
//!   cargo bench --bench soak -- [<fbc-dir>] [--seconds 180] [--callers 64,256] [--stalled 200]
//!
//! The catalog defaults to the real community catalog v4.16 in ../shared/testdata.
#[path = "common/server.rs"]
mod server;

use olm_registry::api::registry_client::RegistryClient;
use olm_registry::api::{
    GetAllProvidersRequest, GetAllReplacementsRequest, GetBundleInChannelRequest, GetBundleRequest,
    GetLatestProvidersRequest, GetPackageRequest, GetReplacementRequest, ListBundlesRequest,
    ListPackageRequest,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

type Client = RegistryClient<Channel>;

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

/// What the catalog holds that requests can name, each known to have an answer.
struct Keys {
    packages: Vec<String>,
    bundles: Vec<(String, String, String)>,
    /// (package, channel, replaced csv)
    replaced: Vec<(String, String, String)>,
    gvks: Vec<(String, String, String)>,
}

async fn keys(client: &mut Client) -> Keys {
    let mut stream = client
        .list_bundles(ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut keys = Keys {
        packages: Vec::new(),
        bundles: Vec::new(),
        replaced: Vec::new(),
        gvks: Vec::new(),
    };
    while let Some(b) = stream.message().await.unwrap() {
        if !b.replaces.is_empty() {
            keys.replaced.push((
                b.package_name.clone(),
                b.channel_name.clone(),
                b.replaces.clone(),
            ));
        }
        for api in &b.provided_apis {
            keys.gvks
                .push((api.group.clone(), api.version.clone(), api.kind.clone()));
        }
        keys.bundles
            .push((b.package_name, b.channel_name, b.csv_name));
    }
    let mut packages = client
        .list_packages(ListPackageRequest {})
        .await
        .unwrap()
        .into_inner();
    while let Some(p) = packages.message().await.unwrap() {
        keys.packages.push(p.name);
    }
    keys.gvks.sort();
    keys.gvks.dedup();
    keys
}

/// One call, the `n`th of its caller: 5% ListBundles, the rest spread over the other RPCs.
/// Returns whether it was a ListBundles.
#[allow(deprecated)] // GetBundleForChannel is deprecated upstream, and still served.
async fn call(client: &mut Client, keys: &Keys, n: usize) -> Result<bool, tonic::Status> {
    let pick = |len: usize| (n.wrapping_mul(2654435761)) % len.max(1);
    if n.is_multiple_of(20) {
        let mut s = client
            .list_bundles(ListBundlesRequest {})
            .await?
            .into_inner();
        while s.message().await?.is_some() {}
        return Ok(true);
    }
    match n % 8 {
        0 => {
            let mut s = client
                .list_packages(ListPackageRequest {})
                .await?
                .into_inner();
            while s.message().await?.is_some() {}
        }
        1 => {
            let name = keys.packages[pick(keys.packages.len())].clone();
            client.get_package(GetPackageRequest { name }).await?;
        }
        2 | 3 => {
            let (p, c, b) = keys.bundles[pick(keys.bundles.len())].clone();
            client
                .get_bundle(GetBundleRequest {
                    pkg_name: p,
                    channel_name: c,
                    csv_name: b,
                })
                .await?;
        }
        4 => {
            let (p, c, _) = keys.bundles[pick(keys.bundles.len())].clone();
            client
                .get_bundle_for_channel(GetBundleInChannelRequest {
                    pkg_name: p,
                    channel_name: c,
                })
                .await?;
        }
        5 => {
            let (p, c, replaced) = keys.replaced[pick(keys.replaced.len())].clone();
            if n % 16 < 8 {
                let mut s = client
                    .get_channel_entries_that_replace(GetAllReplacementsRequest {
                        csv_name: replaced,
                    })
                    .await?
                    .into_inner();
                while s.message().await?.is_some() {}
            } else {
                client
                    .get_bundle_that_replaces(GetReplacementRequest {
                        csv_name: replaced,
                        pkg_name: p,
                        channel_name: c,
                    })
                    .await?;
            }
        }
        _ => {
            let (group, version, kind) = keys.gvks[pick(keys.gvks.len())].clone();
            let mut s = if n % 16 < 8 {
                client
                    .get_channel_entries_that_provide(GetAllProvidersRequest {
                        group,
                        version,
                        kind,
                        plural: String::new(),
                    })
                    .await?
                    .into_inner()
            } else {
                client
                    .get_latest_channel_entries_that_provide(GetLatestProvidersRequest {
                        group,
                        version,
                        kind,
                        plural: String::new(),
                    })
                    .await?
                    .into_inner()
            };
            while s.message().await?.is_some() {}
        }
    }
    Ok(false)
}

struct Phase {
    calls: usize,
    lists: usize,
    errors: Vec<String>,
    latencies: Vec<Duration>,
    elapsed: f64,
}

async fn phase(clients: &[Client], keys: Arc<Keys>, callers: usize, seconds: u64) -> Phase {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..callers {
        let mut client = clients[c % clients.len()].clone();
        let keys = keys.clone();
        tasks.spawn(async move {
            let (mut latencies, mut errors, mut lists) = (Vec::new(), Vec::new(), 0);
            let mut n = c * 7919;
            while Instant::now() < deadline {
                let t = Instant::now();
                match call(&mut client, &keys, n).await {
                    Ok(true) => lists += 1,
                    Ok(false) => latencies.push(t.elapsed()),
                    Err(e) => errors.push(format!("{:?}: {}", e.code(), e.message())),
                }
                n += 1;
            }
            (latencies, errors, lists)
        });
    }
    let mut phase = Phase {
        calls: 0,
        lists: 0,
        errors: Vec::new(),
        latencies: Vec::new(),
        elapsed: 0.0,
    };
    for (latencies, errors, lists) in tasks.join_all().await {
        phase.calls += latencies.len() + errors.len() + lists;
        phase.lists += lists;
        phase.latencies.extend(latencies);
        phase.errors.extend(errors);
    }
    phase.elapsed = started.elapsed().as_secs_f64();
    phase.latencies.sort();
    phase
}

/// Opens `n` ListBundles streams over a few connections of their own, reads one message of
/// each and then never reads again. They stay open while the returned value lives.
async fn stalled_streams(
    addr: &str,
    n: usize,
) -> Vec<(Client, tonic::Streaming<olm_registry::api::Bundle>)> {
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
