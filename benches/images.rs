//! Image pull benchmark: builds a catalog image from an FBC directory, pushes it to a real
//! registry on loopback (Debian's docker-registry), then pulls it into an empty cache and
//! compares the rate with reading the same bytes from disk.
//!
//!   cargo bench --bench images -- /tmp/synth-large
#[path = "../tests/common/registry.rs"]
mod registry;

use olm_registry::image::{ClientOptions, ImageRef, Registry, build_image};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

fn read_rate(path: &std::path::Path) -> (u64, f64) {
    let t = Instant::now();
    let mut f = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let r = f.read(&mut buf).unwrap();
        if r == 0 {
            break;
        }
        n += r as u64;
    }
    (n, n as f64 / t.elapsed().as_secs_f64() / 1048576.0)
}

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
    let labels = BTreeMap::from([(
        olm_registry::image::LABEL_FBC.to_owned(),
        "/configs".to_owned(),
    )]);
    let image = build_image(&[(catalog.as_path(), "/configs")], &labels).unwrap();
    println!(
        "built image: layer {:.0} MiB (gzip) in {:.2} s",
        image.layer.len() as f64 / 1048576.0,
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
        let t = Instant::now();
        let pulled = registry.pull(&target).await.unwrap();
        let took = t.elapsed().as_secs_f64();
        let bytes: u64 = pulled
            .layers
            .iter()
            .map(|l| std::fs::metadata(l).unwrap().len())
            .sum();
        let pull_rate = bytes as f64 / took / 1048576.0;
        let (_, disk_rate) = read_rate(&pulled.layers[0]);
        println!(
            "pull: {:.0} MiB in {took:.2} s = {pull_rate:.0} MiB/s; reading the same file: {disk_rate:.0} MiB/s; ratio {:.0}%",
            bytes as f64 / 1048576.0,
            100.0 * pull_rate / disk_rate
        );
    }
    let unpack_dir = work.path().join("unpacked");
    let registry = Registry::new(&options("pull0")).unwrap();
    let pulled = registry.pull(&target).await.unwrap();
    let t = Instant::now();
    olm_registry::image::unpack(&pulled, &unpack_dir).unwrap();
    println!("unpack: {:.2} s", t.elapsed().as_secs_f64());
}
