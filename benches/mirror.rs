//! Mirror benchmark: an image of ~1 GiB of incompressible layers in a real registry on
//! loopback (Debian's docker-registry), mirrored by the release binary to disk and to a
//! second registry, against `cp` of the same bytes and against what `curl` gets from the
//! same registries; then to disk as tar segments (`archiveSize` a third of the image) and from
//! those tars, moved to a directory of their own, to the second registry (extracted, then
//! pushed); throughput, CPU and peak RSS of each run.
//!
//!   cargo bench --bench mirror [-- LAYERS MIB_PER_LAYER PARALLEL ROUNDS]   (default 8 128 4 2)
#[path = "common/ceilings.rs"]
mod ceilings;
// Benches use part of the test harness's registry helper.
#[allow(dead_code)]
#[path = "../tests/it/common/registry.rs"]
mod registry;

use bytes::Bytes;
use image::layout::digest_of;
use image::{ClientOptions, Registry};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_olm-registry");
const MIB: f64 = 1048576.0;

/// Writes `len` incompressible bytes (xorshift) 1 MiB at a time, so that this process stays
/// small: a child starts with its parent's peak RSS as its own.
fn noise(path: &Path, len: usize, mut seed: u64) -> String {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 20];
    for _ in 0..len.div_ceil(block.len()) {
        for chunk in block.chunks_mut(8) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            chunk.copy_from_slice(&seed.to_le_bytes()[..chunk.len()]);
        }
        hasher.update(&block);
        file.write_all(&block).unwrap();
    }
    file.flush().unwrap();
    format!("sha256:{:x}", hasher.finalize())
}

/// A file as a stream of 1 MiB chunks (setup only: reads block the runtime thread).
fn file_chunks(path: &Path) -> image::remote::BlobStream {
    let mut file = std::fs::File::open(path).unwrap();
    Box::pin(tokio_stream::iter(std::iter::from_fn(move || {
        let mut buf = vec![0u8; 1 << 20];
        let n = file.read(&mut buf).unwrap();
        (n > 0).then(|| {
            buf.truncate(n);
            Ok(Bytes::from(buf))
        })
    })))
}

fn own_peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or_default()
        / 1024.0
}

/// What one child run cost: wall seconds, CPU seconds (user + system), peak RSS in MiB.
struct Run {
    secs: f64,
    cpu: f64,
    rss_mib: f64,
    stdout: String,
}

/// Runs a command to its end and takes its own resource usage from wait4.
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4, which also reports its resource usage"
)]
fn run(label: &str, cmd: &mut Command) -> Run {
    let t = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    let secs = t.elapsed().as_secs_f64();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{label}: {}",
        errors.join().unwrap()
    );
    let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Run {
        secs,
        cpu: cpu(usage.ru_utime) + cpu(usage.ru_stime),
        rss_mib: usage.ru_maxrss as f64 / 1024.0,
        stdout,
    }
}

#[tokio::main]
async fn main() {
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let layers = numbers.first().copied().unwrap_or(8);
    let mib = numbers.get(1).copied().unwrap_or(128);
    let parallel = numbers.get(2).copied().unwrap_or(4);
    let rounds = numbers.get(3).copied().unwrap_or(2);
    let source = registry::TestRegistry::plain();
    let target = registry::TestRegistry::plain();
    let pid_of = |r: &registry::TestRegistry| {
        ceilings::pid_with_argument(r.dir.path().join("config.yml").to_str().unwrap())
    };
    let (source_pid, target_pid) = (pid_of(&source), pid_of(&target));
    let work = tempfile::tempdir().unwrap();
    let files = work.path().join("layers");
    std::fs::create_dir_all(&files).unwrap();

    let client = Registry::new(&ClientOptions {
        insecure_registries: vec![source.addr.clone()],
        cache_dir: work.path().join("cache"),
        ..Default::default()
    })
    .unwrap();
    let at = |what: &str| -> oci_client::Reference {
        format!("{}/bench/big:{what}", source.addr)
            .replace(":sha256:", "@sha256:")
            .parse()
            .unwrap()
    };
    let mut descriptors = Vec::new();
    let t = Instant::now();
    for i in 0..layers {
        let path = files.join(format!("layer{i}"));
        let digest = noise(&path, mib << 20, 0x9e3779b97f4a7c15 ^ i as u64);
        client
            .put_blob_stream(
                &at(&digest),
                &digest,
                (mib << 20) as u64,
                file_chunks(&path),
            )
            .await
            .unwrap();
        descriptors.push(serde_json::json!({
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": digest,
            "size": mib << 20,
        }));
    }
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    let config_digest = digest_of(config);
    client
        .put_blob_stream(
            &at(&config_digest),
            &config_digest,
            config.len() as u64,
            Box::pin(tokio_stream::iter([Ok(Bytes::from_static(config))])),
        )
        .await
        .unwrap();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config.len()},
        "layers": descriptors,
    }))
    .unwrap();
    client
        .put_manifest(
            &at("v1"),
            manifest.into(),
            "application/vnd.oci.image.manifest.v1+json",
        )
        .await
        .unwrap();
    let bytes = (layers * (mib << 20)) as u64;
    let total = bytes as f64 / MIB;
    println!(
        "image: {layers} layers of {mib} MiB = {total:.0} MiB, pushed in {:.1} s; --parallel {parallel}",
        t.elapsed().as_secs_f64()
    );

    // What the machine and the registries allow, whoever the client.
    let layer0 = files.join("layer0");
    let first = descriptors[0]["digest"].as_str().unwrap();
    let fetched = work.path().join("curl-get");
    println!(
        "ceilings (one {mib} MiB blob): sha256 {:.0} MiB/s per core; curl GET to /dev/null {:.0} MiB/s, to a file {:.0} MiB/s",
        ceilings::sha256_file(&layer0).1,
        ceilings::curl_get(&source.addr, "bench/big", first, Path::new("/dev/null")),
        ceilings::curl_get(&source.addr, "bench/big", first, &fetched),
    );
    std::fs::remove_file(&fetched).unwrap();
    let (put_rate, put_cpu) = ceilings::curl_put(&target.addr, "ceiling/put", &layer0, target_pid);
    println!(
        "    curl PUT (one request) into the target registry {put_rate:.0} MiB/s; the registry spent {put_cpu:.2} CPU-s on it ({:.0} MiB per CPU-s)",
        mib as f64 / put_cpu.max(1e-3)
    );
    println!(
        "    (this process's own peak RSS is {:.0} MiB: a child's figure below includes it)",
        own_peak_rss_mib()
    );

    let isc = work.path().join("isc.yaml");
    std::fs::write(
        &isc,
        format!(
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  additionalImages:\n  - name: {}/bench/big:v1\n",
            source.addr
        ),
    )
    .unwrap();
    // Tars of a third of the image each: with the default 8 layers of 128 MiB, two layers a tar.
    let sized = work.path().join("isc-sized.yaml");
    let archive_gib = bytes as f64 / 3.0 / (1u64 << 30) as f64;
    std::fs::write(
        &sized,
        format!(
            "archiveSize: {archive_gib}\n{}",
            std::fs::read_to_string(&isc).unwrap()
        ),
    )
    .unwrap();
    let mirror = |what: [&str; 2], to: String, round: usize| {
        let mut cmd = Command::new(BIN);
        cmd.arg("mirror")
            .args(what)
            .args(["--to", &to])
            .args(["--parallel", &parallel.to_string()])
            .args(["--insecure-registry", &source.addr])
            .args(["--insecure-registry", &target.addr])
            .arg("--image-cache-dir")
            .arg(work.path().join(format!("mirror-cache{round}")))
            .arg("--workspace")
            .arg(work.path().join(format!("workspace{round}")))
            .env("RUST_LOG", "warn");
        cmd
    };
    let registries_cpu =
        || [source_pid, target_pid].map(|p| p.map(ceilings::cpu_seconds).unwrap_or_default());
    let report = |label: &str, run: &Run, cp_rate: f64, before: [f64; 2]| {
        let after = registries_cpu();
        let rate = total / run.secs;
        println!(
            "{label}: {:.2} s = {rate:.0} MiB/s ({:.0}% of cp); mirror: {:.2} CPU-s = {:.0} MiB per CPU-s, peak RSS {:.0} MiB; registries: source {:.2} CPU-s, target {:.2} CPU-s",
            run.secs,
            100.0 * rate / cp_rate,
            run.cpu,
            total / run.cpu.max(1e-3),
            run.rss_mib,
            after[0] - before[0],
            after[1] - before[1],
        );
        if let Some(summary) = run.stdout.lines().find(|l| l.starts_with("mirrored")) {
            println!("    {summary}");
        }
    };
    for round in 0..rounds {
        let copy = work.path().join(format!("cp{round}"));
        let cp = run("cp", Command::new("cp").arg("-r").arg(&files).arg(&copy));
        let cp_rate = total / cp.secs;
        println!(
            "cp of the same files: {:.2} s = {cp_rate:.0} MiB/s ({:.2} CPU-s)",
            cp.secs, cp.cpu
        );
        let disk = work.path().join(format!("archive{round}"));
        let before = registries_cpu();
        let config = ["-c", isc.to_str().unwrap()];
        let to_disk = run(
            "mirror to disk",
            &mut mirror(config, format!("file://{}", disk.display()), round),
        );
        report("mirror to disk", &to_disk, cp_rate, before);
        let before = registries_cpu();
        let to_registry = run(
            "registry to registry",
            &mut mirror(
                config,
                format!("docker://{}/round{round}", target.addr),
                round,
            ),
        );
        report("registry to registry", &to_registry, cp_rate, before);
        let tars = work.path().join(format!("tars{round}"));
        let before = registries_cpu();
        let to_tars = run(
            "mirror to tars",
            &mut mirror(
                ["-c", sized.to_str().unwrap()],
                format!("file://{}", tars.display()),
                round,
            ),
        );
        report(
            &format!("mirror to disk as tars (archiveSize {archive_gib:.3} GiB)"),
            &to_tars,
            cp_rate,
            before,
        );
        if let Some(line) = to_tars.stdout.lines().find(|l| l.starts_with("archive ")) {
            println!("    {line}");
        }
        // Carried to a directory of its own, as to another site: extracted there.
        let carried = work.path().join(format!("carried{round}"));
        std::fs::create_dir_all(&carried).unwrap();
        for entry in std::fs::read_dir(&tars).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "tar") {
                std::fs::rename(&path, carried.join(path.file_name().unwrap())).unwrap();
            }
        }
        let from = format!("file://{}", carried.display());
        let before = registries_cpu();
        let from_tars = run(
            "tars to registry",
            &mut mirror(
                ["--from", &from],
                format!("docker://{}/tars{round}", target.addr),
                round,
            ),
        );
        report(
            "tars to registry (extract, push)",
            &from_tars,
            cp_rate,
            before,
        );
        for dir in [copy, disk, tars, carried] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
