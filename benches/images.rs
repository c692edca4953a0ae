//! Image pull benchmark: builds a catalog image from an FBC directory, pushes it to a real
//! registry on loopback (Debian's docker-registry), then pulls it into an empty cache and
//! compares the rate with reading the same bytes from disk, with reading and hashing them
//! (what verifying costs), and with `curl` fetching the same blob.
//!
//!   cargo bench --bench images -- /tmp/synth-large
#[path = "common/ceilings.rs"]
mod ceilings;
// Benches use part of the test harness's registry helper.
#[allow(dead_code)]
#[path = "../tests/it/common/registry.rs"]
mod registry;

use image::{ClientOptions, ImageRef, Registry, build_image};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

#[tokio::main]
async fn main() {
    let catalog = PathBuf::from(
        std::env::args()
            .skip(1)
            .find(|a| a != "--bench")
            .expect("usage: cargo bench --bench images -- <fbc-dir>"),
    );
    let reg = registry::TestRegistry::plain();
    let work = tempfile::tempdir().unwrap();
    let options = |cache: &str| ClientOptions {
        insecure_registries: vec![reg.addr.clone()],
        cache_dir: work.path().join(cache),
        ..Default::default()
    };

    let t = Instant::now();
    let labels = BTreeMap::from([(image::LABEL_FBC.to_owned(), "/configs".to_owned())]);
    let image = build_image(&[(catalog.as_path(), "/configs")], &labels).unwrap();
    println!(
        "built image: layer {:.0} MiB (gzip) in {:.2} s",
        image.layers[0].len() as f64 / 1048576.0,
        t.elapsed().as_secs_f64()
    );
    let target = ImageRef::parse(&format!("{}/bench/catalog:v1", reg.addr)).unwrap();
    let t = Instant::now();
    Registry::new(&options("push"))
        .unwrap()
        .push(&image, &target)
        .await
        .unwrap();
    println!("pushed in {:.2} s", t.elapsed().as_secs_f64());

    for round in 0..3 {
        let registry = Registry::new(&options(&format!("pull{round}"))).unwrap();
        let (t, cpu) = (Instant::now(), ceilings::own_cpu_seconds());
        let pulled = registry.pull(&target).await.unwrap();
        let (took, cpu) = (t.elapsed().as_secs_f64(), ceilings::own_cpu_seconds() - cpu);
        let bytes: u64 = pulled
            .layers
            .iter()
            .map(|l| std::fs::metadata(l).unwrap().len())
            .sum();
        let mib = bytes as f64 / 1048576.0;
        let pull_rate = mib / took;
        let layer = &pulled.layers[0];
        let disk_rate = ceilings::read_rate(layer);
        let (digest, hash_rate) = ceilings::sha256_file(layer);
        let curl_path = work.path().join("curl-layer");
        let curl_rate = ceilings::curl_get(&reg.addr, "bench/catalog", &digest, &curl_path);
        std::fs::remove_file(&curl_path).unwrap();
        println!(
            "pull: {mib:.0} MiB in {took:.2} s = {pull_rate:.0} MiB/s, {cpu:.2} CPU-s ({:.0} MiB per CPU-s)\n    \
             reading the same file: {disk_rate:.0} MiB/s (pull at {:.0}%); reading and hashing it: {hash_rate:.0} MiB/s ({:.0}%); \
             curl GET to a file: {curl_rate:.0} MiB/s ({:.0}%)",
            mib / cpu.max(1e-3),
            100.0 * pull_rate / disk_rate,
            100.0 * pull_rate / hash_rate,
            100.0 * pull_rate / curl_rate,
        );
    }
    let unpack_dir = work.path().join("unpacked");
    let registry = Registry::new(&options("pull0")).unwrap();
    let pulled = registry.pull(&target).await.unwrap();
    let t = Instant::now();
    image::unpack(&pulled, &unpack_dir).unwrap();
    println!("unpack: {:.2} s", t.elapsed().as_secs_f64());
}
