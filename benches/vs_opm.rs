//! olm-registry side by side with `opm serve` on the same catalog, same machine, same gRPC
//! client, run alternately (the order swapped every round, so that what the neighbours of a
//! shared machine do hits both alike). Before anything is timed, the answers of the two are
//! compared message by message (protobuf equality): ListPackages, GetPackage of every
//! package, ListBundles, and GetBundle of every 16th bundle.
//!
//!   cargo bench --bench vs_opm -- CATALOG [--rounds 3] [--callers 32] [--seconds 10]
//!       [--opm PATH]
//!
//! PATH is an `opm` binary or its gzip (default: `$OPM`, else `../shared/tools/peers/
//! opm-v1.26.4.gz` beside the repository); without one the bench says so and does nothing.
//! opm listens on every interface, so the bench runs itself, both servers and its client in a
//! private network namespace with only loopback up (`unshare --net`: root).
//!
//! Per round and server: cold start to SERVING (empty cache directory) and its peak RSS; warm
//! start (the cache that cold start built) and its RSS; a full ListBundles (best of two); an
//! OLM reconnect round (ListBundles, then ListPackages and GetPackage of every package, as the
//! catalog operator and packageserver do when a connection becomes ready); GetBundle at N
//! callers for S seconds (calls/s, p99, server CPU per call); RSS after that. Figures are
//! printed as min / median / max over the rounds, with opm's median over ours.
#[path = "common/netns.rs"]
mod netns;
#[path = "common/server.rs"]
mod server;

use api::registry_client::RegistryClient;
use api::{GetBundleRequest, GetPackageRequest, ListBundlesRequest, ListPackageRequest};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Set in the environment of the bench re-run inside its network namespace.
const IN_NETNS: &str = "OLM_REGISTRY_VS_OPM_NETNS";

struct Options {
    catalog: PathBuf,
    opm: Option<PathBuf>,
    rounds: usize,
    shape: server::LoadShape,
}

fn options() -> Options {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut opts = Options {
        catalog: PathBuf::new(),
        opm: std::env::var_os("OPM").map(PathBuf::from),
        rounds: 3,
        shape: server::LoadShape {
            callers: 32,
            seconds: 10,
            connections: 4,
        },
    };
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> String {
            args.next()
                .unwrap_or_else(|| panic!("{name} needs a value"))
        };
        let number = |name: &str, v: String| -> usize {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} needs a number"))
        };
        match a.as_str() {
            "--rounds" => opts.rounds = number("--rounds", value("--rounds")).max(1),
            "--callers" => opts.shape.callers = number("--callers", value("--callers")),
            "--seconds" => opts.shape.seconds = number("--seconds", value("--seconds")) as u64,
            "--opm" => opts.opm = Some(PathBuf::from(value("--opm"))),
            path => opts.catalog = PathBuf::from(path),
        }
    }
    if opts.catalog.as_os_str().is_empty() {
        eprintln!(
            "usage: cargo bench --bench vs_opm -- <fbc-dir> [--rounds N] [--callers N] [--seconds N] [--opm PATH]"
        );
        std::process::exit(2);
    }
    opts
}

fn main() {
    let opts = options();
    let opm = opts.opm.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/peers/opm-v1.26.4.gz")
    });
    if !opm.is_file() {
        println!(
            "SKIPPED: no opm binary at {} (give one with --opm PATH or OPM=PATH); nothing was compared",
            opm.display()
        );
        return;
    }
    if std::env::var_os(IN_NETNS).is_none() {
        std::process::exit(netns::rerun_in_namespaces(IN_NETNS, &[], ""));
    }
    let work = tempfile::tempdir().unwrap();
    let opm = executable(&opm, work.path());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(&opts, &opm, work.path()));
}

/// `opm` itself, unpacked into `dir` when it is gzipped.
fn executable(opm: &Path, dir: &Path) -> PathBuf {
    if opm.extension().is_none_or(|e| e != "gz") {
        return opm.to_owned();
    }
    let unpacked = dir.join("opm");
    let mut input = flate2::read::GzDecoder::new(std::fs::File::open(opm).unwrap());
    let mut output = std::fs::File::create(&unpacked).unwrap();
    std::io::copy(&mut input, &mut output).expect("unpacking opm");
    drop(output);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&unpacked, std::fs::Permissions::from_mode(0o755)).unwrap();
    unpacked
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Peer {
    Opm,
    Ours,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::Opm => "opm v1.26.4",
            Peer::Ours => "olm-registry",
        }
    }
}

/// One of the two servers, started on `catalog` with its index in `cache`: `cold` when the
/// cache is empty (opm is then told not to insist on it).
fn start(peer: Peer, opm: &Path, catalog: &Path, cache: &Path, cold: bool) -> server::Running {
    match peer {
        Peer::Ours => server::start(catalog, cache, &[]),
        Peer::Opm => {
            // Nothing else listens in this namespace but the servers the bench starts, and
            // only one runs at a time.
            let port = server::free_port();
            let mut command = Command::new(opm);
            command
                .arg("serve")
                .arg(catalog)
                .args(["-p", &port.to_string(), "-t", "/dev/null", "--cache-dir"])
                .arg(cache);
            if cold {
                command.arg("--cache-enforce-integrity=false");
            }
            let child = command
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start opm");
            server::Running {
                child,
                addr: format!("127.0.0.1:{port}"),
            }
        }
    }
}

/// Waits until `server` answers SERVING, asking as any client would (opm listens only once
/// its catalog is loaded, ours at once): the same polling for both.
async fn wait_serving(server: &mut server::Running) {
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            panic!("the server exited before serving: {status}");
        }
        if let Ok(channel) = Channel::from_shared(format!("http://{}", server.addr))
            .unwrap()
            .connect()
            .await
        {
            let answer = HealthClient::new(channel)
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await;
            if answer.is_ok_and(|a| a.into_inner().status == ServingStatus::Serving as i32) {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn client(addr: &str) -> RegistryClient<Channel> {
    RegistryClient::new(server::channel(addr).await).max_decoding_message_size(usize::MAX)
}

async fn list_bundles(client: &mut RegistryClient<Channel>) -> Vec<api::Bundle> {
    let mut stream = client
        .list_bundles(ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut bundles = Vec::new();
    while let Some(b) = stream.message().await.unwrap() {
        bundles.push(b);
    }
    bundles
}

async fn packages(client: &mut RegistryClient<Channel>) -> Vec<api::Package> {
    let mut stream = client
        .list_packages(ListPackageRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut names = Vec::new();
    while let Some(p) = stream.message().await.unwrap() {
        names.push(p.name);
    }
    let mut packages = Vec::new();
    for name in names {
        packages.push(
            client
                .get_package(GetPackageRequest { name })
                .await
                .unwrap()
                .into_inner(),
        );
    }
    packages
}

/// Compares the answers of the two servers; returns the keys of every bundle, or what differs.
async fn compare(opm: &str, ours: &str) -> Result<Vec<(String, String, String)>, String> {
    let (mut opm, mut ours) = (client(opm).await, client(ours).await);
    let key = |b: &api::Bundle| {
        (
            b.package_name.clone(),
            b.channel_name.clone(),
            b.csv_name.clone(),
        )
    };
    // opm v1.26.4 lists a package's channels in Go's map order (registry-api.md): both are
    // put in name order, the one order that is ours.
    let sorted = |mut packages: Vec<api::Package>| {
        packages.sort_by(|a, b| a.name.cmp(&b.name));
        for p in &mut packages {
            p.channels.sort_by(|a, b| a.name.cmp(&b.name));
        }
        packages
    };
    let (a, b) = (
        sorted(packages(&mut opm).await),
        sorted(packages(&mut ours).await),
    );
    same("ListPackages + GetPackage", &a, &b)?;
    println!("answers: {} packages the same", a.len());
    let mut a = list_bundles(&mut opm).await;
    let mut b = list_bundles(&mut ours).await;
    a.sort_by_key(key);
    b.sort_by_key(key);
    same("ListBundles", &a, &b)?;
    println!("answers: ListBundles the same ({} bundles)", a.len());
    let keys: Vec<_> = b.iter().map(key).collect();
    let mut asked = 0;
    for (pkg_name, channel_name, csv_name) in keys.iter().step_by(16) {
        let request = GetBundleRequest {
            pkg_name: pkg_name.clone(),
            channel_name: channel_name.clone(),
            csv_name: csv_name.clone(),
        };
        let a = opm.get_bundle(request.clone()).await.unwrap().into_inner();
        let b = ours.get_bundle(request).await.unwrap().into_inner();
        same("GetBundle", &[a], &[b])?;
        asked += 1;
    }
    println!("answers: GetBundle the same ({asked} bundles asked)");
    Ok(keys)
}

/// Equal lists of messages, or the first difference named.
fn same<M: PartialEq + std::fmt::Debug>(what: &str, opm: &[M], ours: &[M]) -> Result<(), String> {
    if opm.len() != ours.len() {
        return Err(format!(
            "{what}: opm gave {} messages, olm-registry {}",
            opm.len(),
            ours.len()
        ));
    }
    let Some((a, b)) = opm.iter().zip(ours).find(|(a, b)| a != b) else {
        return Ok(());
    };
    let (a, b) = (format!("{a:?}"), format!("{b:?}"));
    let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let around = |s: &str| {
        let bytes = &s.as_bytes()[at.saturating_sub(200)..(at + 200).min(s.len())];
        String::from_utf8_lossy(bytes).into_owned()
    };
    Err(format!(
        "{what}: answers differ at character {at} of the message\n  opm:          …{}…\n  olm-registry: …{}…",
        around(&a),
        around(&b)
    ))
}

/// The figures one round measured for one server.
#[derive(Default)]
struct Figures {
    cold_s: f64,
    cold_peak_mib: f64,
    warm_s: f64,
    warm_peak_mib: f64,
    list_bundles_s: f64,
    list_bundles_cpu_s: f64,
    reconnect_s: f64,
    calls_per_s: f64,
    p99_ms: f64,
    cpu_us_per_call: f64,
    serving_rss_mib: f64,
}

/// A row of the table: name, unit, the figure, and whether less is better.
type Row = (&'static str, &'static str, fn(&Figures) -> f64, bool);

const ROWS: &[Row] = &[
    ("cold start to SERVING", "s", |f| f.cold_s, true),
    ("cold start peak RSS", "MiB", |f| f.cold_peak_mib, true),
    ("warm start to SERVING", "s", |f| f.warm_s, true),
    ("warm start peak RSS", "MiB", |f| f.warm_peak_mib, true),
    ("ListBundles (full stream)", "s", |f| f.list_bundles_s, true),
    (
        "server CPU per ListBundles stream",
        "s",
        |f| f.list_bundles_cpu_s,
        true,
    ),
    ("OLM reconnect round", "s", |f| f.reconnect_s, true),
    ("GetBundle throughput", "calls/s", |f| f.calls_per_s, false),
    ("GetBundle p99", "ms", |f| f.p99_ms, true),
    (
        "server CPU per GetBundle",
        "µs",
        |f| f.cpu_us_per_call,
        true,
    ),
    (
        "RSS after the GetBundle load",
        "MiB",
        |f| f.serving_rss_mib,
        true,
    ),
];

async fn run(opts: &Options, opm: &Path, work: &Path) {
    println!(
        "catalog {}; {} round(s); GetBundle at {} callers for {} s",
        opts.catalog.display(),
        opts.rounds,
        opts.shape.callers,
        opts.shape.seconds
    );
    let mut figures: [Vec<Figures>; 2] = [Vec::new(), Vec::new()];
    let mut keys: Option<server::Keys> = None;
    for round in 0..opts.rounds {
        let order = if round % 2 == 0 {
            [Peer::Opm, Peer::Ours]
        } else {
            [Peer::Ours, Peer::Opm]
        };
        let mut warm = Vec::new();
        for peer in order {
            let cache = work.join(format!("cache-{peer:?}-{round}"));
            std::fs::create_dir_all(&cache).unwrap();
            let mut f = Figures::default();
            let t = Instant::now();
            let mut cold = start(peer, opm, &opts.catalog, &cache, true);
            wait_serving(&mut cold).await;
            f.cold_s = t.elapsed().as_secs_f64();
            f.cold_peak_mib = server::memory(cold.child.id()).0;
            drop(cold);
            let t = Instant::now();
            let mut server = start(peer, opm, &opts.catalog, &cache, false);
            wait_serving(&mut server).await;
            f.warm_s = t.elapsed().as_secs_f64();
            f.warm_peak_mib = server::memory(server.child.id()).0;
            println!(
                "round {round}, {}: cold {:.2} s / {:.0} MiB, warm {:.3} s / {:.0} MiB",
                peer.name(),
                f.cold_s,
                f.cold_peak_mib,
                f.warm_s,
                f.warm_peak_mib
            );
            warm.push((peer, server, f, cache));
        }
        // Both are up: the answers are compared once, before any load is timed.
        if keys.is_none() {
            let addr = |p: Peer| warm.iter().find(|w| w.0 == p).unwrap().1.addr.clone();
            match compare(&addr(Peer::Opm), &addr(Peer::Ours)).await {
                Ok(k) => keys = Some(std::sync::Arc::new(k)),
                Err(difference) => {
                    eprintln!("ANSWERS DIFFER, nothing timed: {difference}");
                    std::process::exit(1);
                }
            }
        }
        let keys = keys.as_ref().unwrap();
        for (peer, server, mut f, cache) in warm {
            let mut c = client(&server.addr).await;
            f.list_bundles_s = f64::MAX;
            f.list_bundles_cpu_s = f64::MAX;
            let pid = server.child.id();
            for _ in 0..2 {
                let cpu = server::cpu_seconds(pid);
                let t = Instant::now();
                list_bundles(&mut c).await;
                f.list_bundles_s = f.list_bundles_s.min(t.elapsed().as_secs_f64());
                f.list_bundles_cpu_s = f.list_bundles_cpu_s.min(server::cpu_seconds(pid) - cpu);
            }
            let t = Instant::now();
            list_bundles(&mut c).await;
            packages(&mut c).await;
            f.reconnect_s = t.elapsed().as_secs_f64();
            let load = server::get_bundle_load(&server, keys, opts.shape).await;
            f.calls_per_s = load.calls_per_second();
            f.p99_ms = server::percentile(&load.latencies, 0.99).as_secs_f64() * 1e3;
            f.cpu_us_per_call = load.cpu_us_per_call();
            f.serving_rss_mib = server::memory(server.child.id()).1;
            println!(
                "round {round}, {}: ListBundles {:.2} s ({:.3} CPU-s), reconnect {:.2} s, GetBundle {:.0} calls/s p99 {:.1} ms {:.0} µs CPU/call, RSS {:.0} MiB",
                peer.name(),
                f.list_bundles_s,
                f.list_bundles_cpu_s,
                f.reconnect_s,
                f.calls_per_s,
                f.p99_ms,
                f.cpu_us_per_call,
                f.serving_rss_mib
            );
            drop(server);
            let _ = std::fs::remove_dir_all(cache);
            figures[usize::from(peer == Peer::Ours)].push(f);
        }
    }
    print_table(&figures);
}

fn print_table(figures: &[Vec<Figures>; 2]) {
    let spread = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        (
            values[0],
            values[values.len() / 2],
            values[values.len() - 1],
        )
    };
    let number = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 1.0 {
            format!("{v:.2}")
        } else {
            format!("{v:.3}")
        }
    };
    println!();
    println!(
        "| figure (min / median / max of {} rounds) | opm v1.26.4 | olm-registry | olm-registry against opm (medians) |",
        figures[0].len()
    );
    println!("|---|---|---|---|");
    for (name, unit, get, lower_is_better) in ROWS {
        let [opm, ours] = figures.each_ref().map(|f| {
            let mut v: Vec<f64> = f.iter().map(get).collect();
            spread(&mut v)
        });
        let ratio = if *lower_is_better {
            opm.1 / ours.1
        } else {
            ours.1 / opm.1
        };
        let cell = |(min, median, max): (f64, f64, f64)| {
            format!(
                "{} / {} / {} {unit}",
                number(min),
                number(median),
                number(max)
            )
        };
        println!(
            "| {name} | {} | {} | {ratio:.1}x {} |",
            cell(opm),
            cell(ours),
            if ratio >= 1.0 { "better" } else { "worse" }
        );
    }
}
