//! Classic resolution speed: 50 subscriptions (packages with dependencies) against each
//! synthetic FBC directory given, cold (the catalog prepared inside every resolution) and
//! with the catalog prepared once (as a server does per catalog snapshot), with the time per
//! resolution and the peak memory; then an unsatisfiable request (an unowned installed CSV
//! already provides every API of a subscribed package) with the time to explain it, also
//! cold and prepared. Loading the catalog is not timed.
//!
//!   python3 ../shared/tools/gen_catalog.py --packages 400 --bundles 20 --seed 1 --out /tmp/synth-large
//!   cargo bench --bench resolve -- [--subscriptions N] [--runs N] <fbc-dir>...
use catalog::file::ReadLimits;
use catalog::types::{DeclarativeConfig, Property};
use catalog::walk::load_dir;
use resolve::classic::{
    CatalogSource, ClassicError, ClassicRequest, InstalledCsv, PreparedCatalog, Subscription,
    resolve_namespace, resolve_prepared,
};
pub use resolve::solver::SolveError;
use std::time::{Duration, Instant};

const CATALOG: &str = "synth";
const NAMESPACE: &str = "bench";

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut subscriptions = 50usize;
    let mut runs = 20usize;
    let mut dirs = Vec::new();
    while let Some(a) = args.next() {
        let mut number = |flag: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{flag} needs a number"))
        };
        match a.as_str() {
            "--subscriptions" => subscriptions = number("--subscriptions"),
            "--runs" => runs = number("--runs").max(1),
            dir => dirs.push(dir.to_string()),
        }
    }
    if dirs.is_empty() {
        dirs.push("/tmp/synth-large".to_string());
    }
    for dir in &dirs {
        bench_dir(dir, subscriptions, runs);
    }
}

fn bench_dir(dir: &str, subscriptions: usize, runs: usize) {
    let started = Instant::now();
    let dc = load_dir(std::path::Path::new(dir), ReadLimits::default())
        .unwrap_or_else(|e| panic!("loading {dir}: {} error(s), first: {:?}", e.len(), e[0]));
    let load = started.elapsed();
    let packages = packages_with_dependencies(&dc, subscriptions);
    println!(
        "{dir}: {} bundles, {} packages, loaded in {load:.2?}; peak RSS after load {} MiB",
        dc.bundles.len(),
        dc.packages.len(),
        peak_rss_kib() / 1024
    );
    // Peak memory of the resolutions alone, on top of the loaded catalog.
    reset_peak_rss();

    let started = Instant::now();
    let prepared = PreparedCatalog::new(&dc);
    println!(
        "  catalog prepared in {:.2?}; peak RSS {} MiB",
        started.elapsed(),
        peak_rss_kib() / 1024
    );
    let catalogs = [&prepared];

    let request = request(&dc, &packages, Vec::new());
    let (cold, result) = timed(runs.min(5), || resolve_namespace(&request));
    let resolved = result.unwrap_or_else(|e| panic!("{dir}: expected a resolution, got {e}"));
    let (warm, again) = timed(runs, || resolve_prepared(&request, &catalogs));
    assert_eq!(
        again.as_ref(),
        Ok(&resolved),
        "prepared and cold answers differ"
    );
    let dependencies = resolved
        .iter()
        .filter(|op| !packages.contains(&op.package))
        .count();
    println!(
        "  {} subscriptions -> {} operators ({dependencies} dependencies)\n    prepared: {}\n    cold:     {}\n    peak RSS {} MiB",
        packages.len(),
        resolved.len(),
        summary(&warm),
        summary(&cold),
        peak_rss_kib() / 1024
    );

    let installed = vec![api_squatter(&dc, &packages[0])];
    let request = self::request(&dc, &packages, installed);
    let (cold, result) = timed(runs.min(5), || resolve_namespace(&request));
    let (warm, again) = timed(runs.min(5), || resolve_prepared(&request, &catalogs));
    assert_eq!(again, result, "prepared and cold explanations differ");
    match result {
        Err(ClassicError::Unsatisfiable(SolveError::Unsatisfiable { messages })) => {
            println!(
                "  unsatisfiable + explanation ({} facts)\n    prepared: {}\n    cold:     {}",
                messages.len(),
                summary(&warm),
                summary(&cold)
            );
            for m in &messages {
                // Provider lists run to dozens of bundles; the head says which fact it is.
                let head: String = m.chars().take(160).collect();
                let more = if head.len() < m.len() { " ..." } else { "" };
                println!("    - {head}{more}");
            }
        }
        other => panic!("{dir}: expected an unsatisfiable resolution, got {other:?}"),
    }
}

/// Up to `n` packages, spread over the sorted package list, whose bundles have requirements.
fn packages_with_dependencies(dc: &DeclarativeConfig, n: usize) -> Vec<String> {
    let mut names: Vec<&str> = dc
        .packages
        .iter()
        .map(|p| p.name.as_str())
        .filter(|p| {
            dc.bundles.iter().any(|b| {
                b.package == *p && b.properties.iter().any(|p| p.kind.ends_with(".required"))
            })
        })
        .collect();
    names.sort_unstable();
    let step = (names.len() / n.max(1)).max(1);
    names
        .into_iter()
        .step_by(step)
        .take(n)
        .map(str::to_string)
        .collect()
}

fn request<'a>(
    dc: &'a DeclarativeConfig,
    packages: &[String],
    installed: Vec<InstalledCsv>,
) -> ClassicRequest<'a> {
    ClassicRequest {
        namespace: NAMESPACE.to_string(),
        catalogs: vec![CatalogSource {
            name: CATALOG.to_string(),
            namespace: NAMESPACE.to_string(),
            priority: 0,
            content: dc,
        }],
        installed,
        subscriptions: packages
            .iter()
            .map(|p| Subscription {
                name: p.clone(),
                package: p.clone(),
                source: CATALOG.to_string(),
                source_namespace: NAMESPACE.to_string(),
                ..Subscription::default()
            })
            .collect(),
        ..ClassicRequest::default()
    }
}

/// An installed CSV no subscription owns (so it must stay) that provides every API of
/// `package`: no bundle of that package can then be installed next to it.
fn api_squatter(dc: &DeclarativeConfig, package: &str) -> InstalledCsv {
    let mut apis: Vec<Property> = dc
        .bundles
        .iter()
        .filter(|b| b.package == package)
        .flat_map(|b| b.properties.iter().filter(|p| p.kind == "olm.gvk").cloned())
        .collect();
    apis.sort_by(|a, b| a.value.cmp(&b.value));
    apis.dedup();
    InstalledCsv {
        name: "squatter.v1.0.0".to_string(),
        version: "1.0.0".to_string(),
        phase: "Succeeded".to_string(),
        properties: Some(apis),
        ..InstalledCsv::default()
    }
}

fn timed<T>(runs: usize, mut f: impl FnMut() -> T) -> (Vec<Duration>, T) {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        last = Some(f());
        times.push(started.elapsed());
    }
    (times, last.expect("at least one run"))
}

fn summary(times: &[Duration]) -> String {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    format!(
        "median {:.2?}, min {:.2?}, max {:.2?} over {} runs",
        sorted[sorted.len() / 2],
        sorted[0],
        sorted[sorted.len() - 1],
        sorted.len()
    )
}

/// VmHWM of this process, in KiB (0 where /proc is not available).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Sets VmHWM back to the current RSS (Linux `clear_refs` value 5); best effort.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
