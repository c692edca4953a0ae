//! Mirror benchmark: an image of ~1 GiB of incompressible layers in a real registry on
//! loopback (Debian's docker-registry), mirrored by the release binary to disk and to a
//! second registry, against `cp` of the same bytes; throughput and peak RSS of each run.
//!
//!   cargo bench --bench mirror [-- LAYERS MIB_PER_LAYER PARALLEL]   (default 8 128 4)
#[path = "../tests/common/registry.rs"]
mod registry;

use bytes::Bytes;
use olm_registry::image::layout::digest_of;
use olm_registry::image::{ClientOptions, Registry};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_olm-registry");

fn noise(path: &Path, len: usize, mut seed: u64) -> String {
    let mut data = vec![0u8; len];
    for chunk in data.chunks_mut(8) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let bytes = seed.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    std::fs::write(path, &data).unwrap();
    format!("sha256:{:x}", Sha256::digest(&data))
}

/// A file as a stream of 1 MiB chunks (setup only: reads block the runtime thread).
fn file_chunks(path: &Path) -> olm_registry::image::remote::BlobStream {
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

/// Peak resident memory of the largest child waited for so far, in MiB.
fn children_peak_rss_mib() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn timed(label: &str, bytes: u64, baseline: Option<f64>, cmd: &mut Command) -> f64 {
    let t = Instant::now();
    let out = cmd.output().unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{label}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rate = bytes as f64 / 1048576.0 / secs;
    let summary = String::from_utf8_lossy(&out.stdout);
    let summary = summary
        .lines()
        .find(|l| l.starts_with("mirrored"))
        .unwrap_or("");
    match baseline {
        Some(cp) => println!(
            "{label}: {secs:.2} s = {rate:.0} MiB/s ({:.0}% of cp), peak RSS {:.0} MiB\n    {summary}",
            100.0 * rate / cp,
            children_peak_rss_mib()
        ),
        None => println!("{label}: {secs:.2} s = {rate:.0} MiB/s"),
    }
    rate
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
    let source = registry::TestRegistry::plain();
    let target = registry::TestRegistry::plain();
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
    println!(
        "image: {layers} layers of {mib} MiB = {} MiB, pushed in {:.1} s; --parallel {parallel}",
        bytes >> 20,
        t.elapsed().as_secs_f64()
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
    let mirror = |to: String, round: usize| {
        let mut cmd = Command::new(BIN);
        cmd.args(["mirror", "-c", isc.to_str().unwrap(), "--to", &to])
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
    for round in 0..2 {
        let copy = work.path().join(format!("cp{round}"));
        let cp = timed(
            "cp of the same files",
            bytes,
            None,
            Command::new("cp").arg("-r").arg(&files).arg(&copy),
        );
        let disk = work.path().join(format!("archive{round}"));
        timed(
            "mirror to disk",
            bytes,
            Some(cp),
            &mut mirror(format!("file://{}", disk.display()), round),
        );
        timed(
            "registry to registry",
            bytes,
            Some(cp),
            &mut mirror(format!("docker://{}/round{round}", target.addr), round),
        );
        for dir in [copy, disk] {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
