//! Images against a real registry on loopback: build, push, pull by tag and digest, OCI
//! layouts, TLS with auth, and the failures a user must get a clear word about.
mod common;
#[path = "common/registry.rs"]
mod registry;

use common::{Server, run};
use olm_registry::api::GetPackageRequest;
use registry::TestRegistry;
use std::path::Path;

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog")
}

/// `olm-registry build catalog` → "REF@DIGEST".
fn build_catalog(tag: &str, extra: &[&str]) -> String {
    let example = example();
    let mut args = vec!["build", "catalog", example.to_str().unwrap(), "--tag", tag];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let line = stdout.trim().to_owned();
    assert!(line.starts_with(&format!("{tag}@sha256:")), "{line}");
    line
}

#[tokio::test]
async fn build_push_and_serve_a_catalog_image() {
    let reg = TestRegistry::plain();
    let cache = tempfile::tempdir().unwrap();
    let insecure = [
        "--insecure-registry",
        &reg.addr,
        "--image-cache-dir",
        cache.path().to_str().unwrap(),
    ];
    let tag = format!("{}/catalogs/example:v1", reg.addr);
    let pushed = build_catalog(&tag, &insecure);
    // Building the same content again gives the same digest.
    assert_eq!(build_catalog(&tag, &insecure), pushed);
    let digest = pushed.rsplit_once('@').unwrap().1.to_owned();

    for reference in [
        tag.clone(),
        format!("{}/catalogs/example@{digest}", reg.addr),
    ] {
        let server = Server::serving(Path::new(&reference), &insecure).await;
        let mut c = server.client().await;
        let p = c
            .get_package(GetPackageRequest {
                name: "cache-operator".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(p.default_channel_name, "stable");
    }
}

/// Once pulled, an image is served from the cache when the registry is gone: by digest
/// always, by tag as it was when last pulled.
#[tokio::test]
async fn a_second_pull_works_offline() {
    let mut reg = TestRegistry::plain();
    let cache = tempfile::tempdir().unwrap();
    let addr = reg.addr.clone();
    let flags = [
        "--insecure-registry",
        &addr,
        "--image-cache-dir",
        cache.path().to_str().unwrap(),
    ];
    let tag = format!("{}/catalogs/example:v1", reg.addr);
    let digest = build_catalog(&tag, &flags)
        .rsplit_once('@')
        .unwrap()
        .1
        .to_owned();
    let by_digest = format!("{}/catalogs/example@{digest}", reg.addr);
    drop(Server::serving(Path::new(&tag), &flags).await);
    reg.stop();

    let server = Server::serving(Path::new(&by_digest), &flags).await;
    let mut c = server.client().await;
    assert_eq!(
        c.get_package(GetPackageRequest {
            name: "cache-operator".into()
        })
        .await
        .unwrap()
        .into_inner()
        .name,
        "cache-operator"
    );
    let server = Server::serving(Path::new(&tag), &flags).await;
    assert!(
        server.log().contains(&format!(
            "using the copy cached when it was last pulled ({digest})"
        )),
        "{}",
        server.log()
    );
}

#[tokio::test]
async fn oci_layout_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let layout = format!("oci:{}:v1", dir.path().join("layout").display());
    build_catalog(
        &layout,
        &["--image-cache-dir", cache.path().to_str().unwrap()],
    );
    let server = Server::serving(
        Path::new(&layout),
        &["--image-cache-dir", cache.path().to_str().unwrap()],
    )
    .await;
    let mut c = server.client().await;
    let p = c
        .get_package(GetPackageRequest {
            name: "queue-operator".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(p.channels.len(), 1);
}

#[test]
fn tls_with_auth_and_clear_errors() {
    let reg = TestRegistry::secure();
    let cache = tempfile::tempdir().unwrap();
    let ca = reg.ca_file.as_ref().unwrap().to_str().unwrap().to_owned();
    let auth = reg.auth_file.as_ref().unwrap().to_str().unwrap().to_owned();
    let cache_flag = ["--image-cache-dir", cache.path().to_str().unwrap()];
    let tag = format!("{}/catalogs/example:v1", reg.addr);

    // Without the CA the certificate is refused; without credentials the push is.
    let example = example();
    let mut args = vec!["build", "catalog", example.to_str().unwrap(), "--tag", &tag];
    args.extend_from_slice(&cache_flag);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 1);
    assert_eq!(
        stderr,
        format!(
            "error: push {tag}: error sending request for url (https://{}/v2/): client error (Connect): invalid peer certificate: UnknownIssuer\n",
            reg.addr
        )
    );
    args.extend_from_slice(&["--ca-file", &ca]);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 1);
    assert_eq!(
        stderr,
        format!("error: push {tag}: unauthorized: check the credentials for this registry\n")
    );

    args.extend_from_slice(&["--registry-config", &auth]);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with(&format!("{tag}@sha256:")));

    // Serving the image needs the same credentials.
    let missing = format!("{}/catalogs/nothing:v1", reg.addr);
    let termination = cache.path().join("t");
    let serve = |image: &str, with_auth: bool| {
        let mut a = vec![
            "serve",
            image,
            "-p",
            "127.0.0.1:0",
            "-t",
            termination.to_str().unwrap(),
            "--ca-file",
            &ca,
        ];
        a.extend_from_slice(&cache_flag);
        if with_auth {
            a.extend_from_slice(&["--registry-config", &auth]);
        }
        run(&a)
    };
    let (code, _, _) = serve(&tag, false);
    assert_eq!(code, 1);
    let message = std::fs::read_to_string(&termination).unwrap();
    assert!(message.starts_with(&format!("pull {tag}: ")), "{message}");
    let (code, _, _) = serve(&missing, true);
    assert_eq!(code, 1);
    let message = std::fs::read_to_string(&termination).unwrap();
    assert_eq!(
        message,
        format!("pull {missing}: manifest unknown: no such image or tag\n")
    );
}

#[test]
fn a_blob_that_does_not_match_its_digest_is_refused() {
    let reg = TestRegistry::plain();
    let cache = tempfile::tempdir().unwrap();
    let flags = [
        "--insecure-registry",
        &reg.addr,
        "--image-cache-dir",
        cache.path().to_str().unwrap(),
    ];
    let tag = format!("{}/catalogs/example:v1", reg.addr);
    build_catalog(&tag, &flags);
    // Corrupt the layer in the registry's own storage: the largest blob is the layer.
    let blobs = reg.dir.path().join("data/docker/registry/v2/blobs/sha256");
    let mut layer = None;
    let mut biggest = 0;
    for prefix in std::fs::read_dir(&blobs).unwrap() {
        for blob in std::fs::read_dir(prefix.unwrap().path()).unwrap() {
            let data = blob.unwrap().path().join("data");
            let len = std::fs::metadata(&data).unwrap().len();
            if len > biggest {
                biggest = len;
                layer = Some(data);
            }
        }
    }
    let layer = layer.unwrap();
    let mut bytes = std::fs::read(&layer).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&layer, bytes).unwrap();

    let termination = cache.path().join("t");
    let mut args = vec![
        "serve",
        tag.as_str(),
        "-p",
        "127.0.0.1:0",
        "-t",
        termination.to_str().unwrap(),
    ];
    args.extend_from_slice(&flags);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 1, "{stderr}");
    let message = std::fs::read_to_string(&termination).unwrap();
    assert!(message.starts_with(&format!("pull {tag}: ")), "{message}");
    assert!(message.contains("digest"), "{message}");
    // Nothing unverified was cached.
    let cached: Vec<_> = std::fs::read_dir(cache.path().join("blobs/sha256"))
        .unwrap()
        .collect();
    assert!(cached.iter().all(|e| {
        !e.as_ref()
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".tmp")
    }));
    assert!(
        cached.len() <= 1,
        "only the config may be cached: {cached:?}"
    );
}

/// Bundle images built from the upstream bundle directories render exactly as the
/// directories do (with the image reference as the bundle's image), by tag and by digest,
/// and can be added to a catalog straight from the registry.
#[test]
fn bundle_images_render_like_their_directories() {
    let Some(bundles) = common::shared_testdata("upstream/render-bundles") else {
        return;
    };
    let reg = TestRegistry::plain();
    let cache = tempfile::tempdir().unwrap();
    let flags = [
        "--insecure-registry",
        &reg.addr,
        "--image-cache-dir",
        cache.path().to_str().unwrap(),
    ];
    let catalog = tempfile::tempdir().unwrap();
    for version in ["0.1.0", "0.2.0"] {
        let dir = bundles.join(format!("foo-bundle-v{version}"));
        let tag = format!("{}/bundles/foo:v{version}", reg.addr);
        let mut args = vec!["build", "bundle", dir.to_str().unwrap(), "--tag", &tag];
        args.extend_from_slice(&flags);
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        let digest = stdout.trim().rsplit_once('@').unwrap().1.to_owned();
        let by_digest = format!("{}/bundles/foo@{digest}", reg.addr);

        let (_, from_dir, _) = run(&["render", dir.to_str().unwrap()]);
        for reference in [&tag, &by_digest] {
            let mut args = vec!["render", reference.as_str()];
            args.extend_from_slice(&flags);
            let (code, from_image, stderr) = run(&args);
            assert_eq!(code, 0, "{stderr}");
            let mut expected: serde_json::Value = serde_json::from_str(&from_dir).unwrap();
            expected["image"] = serde_json::Value::String(reference.clone());
            // The image is also one of the related images.
            let related = expected["relatedImages"].as_array_mut().unwrap();
            related.push(serde_json::json!({"name": "", "image": reference}));
            related.sort_by(|a, b| a["image"].as_str().cmp(&b["image"].as_str()));
            let got: serde_json::Value = serde_json::from_str(&from_image).unwrap();
            assert_eq!(got, expected, "{reference}");
        }

        let mut args = vec!["add", catalog.path().to_str().unwrap(), &tag];
        args.extend_from_slice(&flags);
        let (code, _, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
    }
    assert_eq!(run(&["validate", catalog.path().to_str().unwrap()]).0, 0);
}

/// Writes an image whose one layer is `layer` (a tar stream) into an OCI layout.
fn layout_with_layer(dir: &Path, layer: Vec<u8>) -> String {
    use olm_registry::image::layout::{Layout, digest_of};
    let layout = Layout::create(dir).unwrap();
    let config = serde_json::json!({
        "config": {"Labels": {"operators.operatorframework.io.index.configs.v1": "/configs"}},
        "rootfs": {"type": "layers", "diff_ids": [digest_of(&layer)]},
    })
    .to_string()
    .into_bytes();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": layout.write_blob(&config).unwrap(), "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layout.write_blob(&layer).unwrap(), "size": layer.len()}],
    })
    .to_string();
    layout
        .add_manifest(
            manifest.as_bytes(),
            "application/vnd.oci.image.manifest.v1+json",
            Some("bad"),
        )
        .unwrap();
    format!("oci:{}:bad", dir.display())
}

/// A tar entry with a raw name (and link target), so that hostile layers can be made.
fn hostile_layer(name: &str, link: Option<&str>) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_mode(0o644);
    match link {
        Some(target) => {
            h.set_entry_type(tar::EntryType::Symlink);
            h.as_old_mut().linkname[..target.len()].copy_from_slice(target.as_bytes());
            h.set_size(0);
            h.set_cksum();
            tar.append(&h, std::io::empty()).unwrap();
        }
        None => {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(4);
            h.set_cksum();
            tar.append(&h, &b"evil"[..]).unwrap();
        }
    }
    tar.into_inner().unwrap()
}

#[test]
fn hostile_layers_are_refused_and_write_nothing_outside() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    for (n, (name, link, message)) in [
        (
            "../../escaped",
            None,
            "../../escaped: path leaves the image",
        ),
        (
            "configs/link",
            Some("../../../../etc"),
            "configs/link: symlink to ../../../../etc escapes the image",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let reference = layout_with_layer(
            &work.path().join(format!("layout{n}")),
            hostile_layer(name, link),
        );
        let (code, stdout, stderr) = run(&[
            "render",
            &reference,
            "--image-cache-dir",
            cache.to_str().unwrap(),
        ]);
        assert_eq!((code, stdout.as_str()), (1, ""));
        assert!(
            stderr.starts_with("error: unpacking sha256:") && stderr.trim_end().ends_with(message),
            "{stderr}"
        );
    }
    assert!(!work.path().join("escaped").exists());
    assert!(!std::env::temp_dir().join("escaped").exists());
}

#[path = "common/proxy.rs"]
mod proxy;

/// A catalog big enough that its layer spans many reads: incompressible files.
fn big_catalog(dir: &Path) {
    use sha2::{Digest, Sha256};
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    let mut data = Vec::with_capacity(8 << 20);
    let mut block = Sha256::digest(b"seed").to_vec();
    while data.len() < 8 << 20 {
        block = Sha256::digest(&block).to_vec();
        data.extend_from_slice(&block);
    }
    std::fs::write(dir.join("pkg/blob.bin"), data).unwrap();
}

/// The registry drops the connection in the middle of the layer: the pull retries and
/// succeeds; when it keeps dropping, the error says so and nothing half-pulled is kept.
#[test]
fn a_connection_cut_mid_blob_is_retried_and_never_cached_half() {
    let reg = TestRegistry::plain();
    let work = tempfile::tempdir().unwrap();
    big_catalog(&work.path().join("catalog"));
    let example = work.path().join("catalog");
    reg.push_catalog(&example, "big/catalog:v1", &work.path().join("push-cache"));

    let render_through = |proxy: &proxy::CuttingProxy, cache: &str| {
        let via = format!("{}/big/catalog:v1", proxy.addr);
        run(&[
            "render",
            &via,
            "--insecure-registry",
            &proxy.addr,
            "--image-cache-dir",
            work.path().join(cache).to_str().unwrap(),
            "-o",
            "yaml",
        ])
    };
    // Two cuts, then a clean connection: the third attempt gets the blob.
    let flaky = proxy::CuttingProxy::start(&reg.addr, 1 << 20, 2);
    let (code, _, stderr) = render_through(&flaky, "cache-a");
    // The catalog holds no FBC documents, only a binary file: it fails to parse, after the pull.
    assert_eq!(flaky.cuts_made(), 2, "{stderr}");
    assert!(
        stderr.contains("(attempt 1 of 5, retrying)")
            && stderr.contains("(attempt 2 of 5, retrying)"),
        "{stderr}"
    );
    assert!(!stderr.contains("attempt 3 of 5"), "{stderr}");
    assert_eq!(code, 1);
    assert!(
        stderr.contains("pkg/blob.bin"),
        "the pull succeeded and the file was read: {stderr}"
    );

    // Cut every time: a clear error, and no blob in the cache.
    let dead = proxy::CuttingProxy::start(&reg.addr, 1 << 20, usize::MAX);
    let (code, _, stderr) = render_through(&dead, "cache-b");
    assert_eq!(code, 1);
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("error: pull {}/big/catalog:v1: ", dead.addr)),
        "{stderr}"
    );
    let blobs: Vec<_> = std::fs::read_dir(work.path().join("cache-b/blobs/sha256"))
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    assert!(
        blobs.is_empty(),
        "nothing half-pulled is cached: {:?}",
        blobs.iter().map(|b| b.file_name()).collect::<Vec<_>>()
    );
}
