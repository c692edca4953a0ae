//! Bundle rendering throughput: reads and renders registry+v1 bundle directories (the real
//! ones in ../shared/testdata/real/bundles by default) over and over on every core until at
//! least 1 GB of manifests went through, and prints MB/s and peak RSS.
//!
//!   cargo bench --bench render [-- <dir-of-bundles> [--gb N]]
use bundle::dir::{BundleDir, is_bundle_dir};
use bundle::render::render;
use catalog::file::ReadLimits;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn bundles_under(dir: &Path, out: &mut Vec<PathBuf>) {
    if is_bundle_dir(dir) {
        out.push(dir.to_path_buf());
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.filter_map(Result::ok) {
            if e.path().is_dir() {
                bundles_under(&e.path(), out);
            }
        }
    }
}

fn manifest_bytes(bundle: &Path) -> u64 {
    std::fs::read_dir(bundle.join("manifests"))
        .map(|es| {
            es.filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/testdata/real/bundles"
    ));
    let mut target_gb = 1.0f64;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--gb" => {
                target_gb = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--gb needs a number")
            }
            dir => root = PathBuf::from(dir),
        }
    }
    let mut bundles = Vec::new();
    bundles_under(&root, &mut bundles);
    bundles.sort();
    assert!(
        !bundles.is_empty(),
        "no bundle directories under {}",
        root.display()
    );
    let sizes: Vec<u64> = bundles.iter().map(|b| manifest_bytes(b)).collect();
    println!(
        "{} bundles, {:.1} MB of manifests per pass",
        bundles.len(),
        sizes.iter().sum::<u64>() as f64 / 1e6
    );

    let target = (target_gb * 1e9) as u64;
    let done = AtomicU64::new(0);
    let rendered = AtomicU64::new(0);
    let started = Instant::now();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for t in 0..threads {
            let (bundles, sizes, done, rendered) = (&bundles, &sizes, &done, &rendered);
            s.spawn(move || {
                let mut i = t;
                while done.load(Ordering::Relaxed) < target {
                    let k = i % bundles.len();
                    let b =
                        BundleDir::read(&bundles[k], ReadLimits::default()).expect("bundle reads");
                    let out = render(&b, "quay.io/bench/bundle:v1");
                    std::hint::black_box(out);
                    done.fetch_add(sizes[k], Ordering::Relaxed);
                    rendered.fetch_add(1, Ordering::Relaxed);
                    i += threads;
                }
            });
        }
    });
    let secs = started.elapsed().as_secs_f64();
    let bytes = done.load(Ordering::Relaxed) as f64;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .unwrap_or("VmHWM: ? kB")
        .to_owned();
    println!(
        "rendered {} bundles, {:.2} GB of manifests in {secs:.2} s on {threads} threads: {:.0} MB/s; {peak}",
        rendered.load(Ordering::Relaxed),
        bytes / 1e9,
        bytes / secs / 1e6
    );
}
