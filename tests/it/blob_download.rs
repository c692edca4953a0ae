//! Blob downloads into an OCI layout against a real registry on loopback: a connection cut
//! again and again still completes, because each retry continues where the bytes stopped;
//! content or sizes that do not match the descriptor leave nothing behind.
use crate::common::proxy;
use crate::common::registry;

use bytes::Bytes;
use image::layout::{Layout, digest_of};
use image::{ClientOptions, Registry};
use oci_client::Reference;
use oci_client::manifest::OciDescriptor;
use registry::TestRegistry;
use std::path::Path;

fn client(insecure: &str, cache: &Path) -> Registry {
    Registry::new(&ClientOptions {
        insecure_registries: vec![insecure.to_owned()],
        cache_dir: cache.to_owned(),
        ..Default::default()
    })
    .unwrap()
}

/// `len` bytes that differ from those of another seed.
fn sample(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_add(seed).wrapping_mul(2654435761) >> 24) as u8)
        .collect()
}

fn at(host: &str, digest: &str) -> Reference {
    Reference::with_digest(host.to_owned(), "data/blobs".to_owned(), digest.to_owned())
}

/// Pushes `data` as a blob of `data/blobs`; returns its descriptor.
async fn publish(reg: &TestRegistry, data: Vec<u8>) -> OciDescriptor {
    let work = tempfile::tempdir().unwrap();
    let digest = digest_of(&data);
    let size = data.len();
    client(&reg.addr, work.path())
        .put_blob_stream(
            &at(&reg.addr, &digest),
            &digest,
            size as u64,
            Box::pin(tokio_stream::iter([Ok(Bytes::from(data))])),
        )
        .await
        .unwrap();
    OciDescriptor {
        digest,
        size: size as i64,
        ..Default::default()
    }
}

/// Everything in the layout's blob directory (temporary files included).
fn blob_files(layout: &Layout) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(layout.root().join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_download_cut_every_time_still_completes_by_continuing_where_it_stopped() {
    let reg = TestRegistry::plain();
    let data = sample(3 << 20, 7);
    let descriptor = publish(&reg, data.clone()).await;
    // Every connection is cut after 1 MiB: starting over would never get the 3 MiB through.
    let cutter = proxy::CuttingProxy::start(&reg.addr, 1 << 20, usize::MAX);
    let work = tempfile::tempdir().unwrap();
    let registry = client(&cutter.addr, &work.path().join("cache"));
    let layout = Layout::create(&work.path().join("layout")).unwrap();
    let path = registry
        .download_blob(
            &at(&cutter.addr, &descriptor.digest),
            &descriptor,
            &layout,
            &indicatif::ProgressBar::hidden(),
        )
        .await
        .unwrap();
    assert_eq!(cutter.cuts_made(), 3);
    assert_eq!(path, layout.blob_path(&descriptor.digest).unwrap());
    assert!(std::fs::read(&path).unwrap() == data);
    let hex = descriptor.digest.trim_start_matches("sha256:").to_owned();
    assert_eq!(blob_files(&layout), [hex]);
}

#[tokio::test]
async fn content_or_sizes_unlike_the_descriptor_are_refused_and_nothing_is_kept() {
    let reg = TestRegistry::plain();
    let descriptor = publish(&reg, sample(1 << 20, 9)).await;
    let work = tempfile::tempdir().unwrap();
    let registry = client(&reg.addr, &work.path().join("cache"));
    let layout = Layout::create(&work.path().join("layout")).unwrap();
    let download = |descriptor: OciDescriptor| {
        let (registry, layout, addr) = (&registry, &layout, reg.addr.clone());
        async move {
            registry
                .download_blob(
                    &at(&addr, &descriptor.digest),
                    &descriptor,
                    layout,
                    &indicatif::ProgressBar::hidden(),
                )
                .await
                .unwrap_err()
        }
    };
    let digest = descriptor.digest.clone();

    let longer = download(OciDescriptor {
        size: descriptor.size + 1,
        ..descriptor.clone()
    })
    .await;
    assert_eq!(
        longer.message,
        format!("blob {digest} has 1048576 bytes where its descriptor says 1048577")
    );
    let shorter = download(OciDescriptor {
        size: descriptor.size - 1,
        ..descriptor.clone()
    })
    .await;
    assert_eq!(
        shorter.message,
        format!("blob {digest} has more bytes than its descriptor says (1048575)")
    );

    // Same length, other bytes, in the registry's own storage.
    let stored = reg.blob_file(&digest);
    let mut bytes = std::fs::read(&stored).unwrap();
    bytes.iter_mut().for_each(|b| *b = !*b);
    let actual = digest_of(&bytes);
    std::fs::write(&stored, bytes).unwrap();
    let corrupt = download(descriptor).await;
    assert_eq!(
        corrupt.message,
        format!(
            "blob {digest} does not match its digest (content is {actual}, from {}/data/blobs)",
            reg.addr
        )
    );
    assert_eq!(corrupt.kind, image::ErrorKind::InvalidContent);
    assert!(blob_files(&layout).is_empty(), "{:?}", blob_files(&layout));
}
