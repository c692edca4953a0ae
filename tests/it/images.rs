//! Images against a real registry on loopback: build, push, pull by tag and digest, OCI
//! layouts, TLS with auth, and the failures a user must get a clear word about.
use crate::common::registry;

use crate::common::{Server, run};
use api::GetPackageRequest;
use registry::TestRegistry;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

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
    server
        .wait_for_log(&format!(
            "using the copy cached when it was last pulled ({digest})"
        ))
        .await;
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
    let Some(bundles) = crate::common::shared_testdata("upstream/render-bundles") else {
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
    layout_image(dir, layer, 0)
}

/// The same, with an annotation of `padding` bytes in the manifest.
fn layout_image(dir: &Path, layer: Vec<u8>, padding: usize) -> String {
    let labels = serde_json::json!({"operators.operatorframework.io.index.configs.v1": "/configs"});
    labelled_layout_image(dir, layer, padding, labels)
}

/// The same, with `labels` in the image's config.
pub(crate) fn labelled_layout_image(
    dir: &Path,
    layer: Vec<u8>,
    padding: usize,
    labels: serde_json::Value,
) -> String {
    use image::layout::{Layout, digest_of};
    let layout = Layout::create(dir).unwrap();
    let config = serde_json::json!({
        "config": {"Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": [digest_of(&layer)]},
    })
    .to_string()
    .into_bytes();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": layout.write_blob(&config).unwrap(), "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layout.write_blob(&layer).unwrap(), "size": layer.len()}],
        "annotations": {"padding": "x".repeat(padding)},
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

/// One raw tar entry of a hostile layer.
pub(crate) enum Entry<'a> {
    File(&'a str, &'a [u8]),
    Symlink(&'a str, &'a str),
    HardLink(&'a str, &'a str),
}

/// A tar stream with raw names and link targets, so that hostile layers can be made.
pub(crate) fn hostile_layer(entries: &[Entry]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for entry in entries {
        let (name, kind, target, data): (&str, _, &str, &[u8]) = match entry {
            Entry::File(name, data) => (name, tar::EntryType::Regular, "", data),
            Entry::Symlink(name, target) => (name, tar::EntryType::Symlink, target, b""),
            Entry::HardLink(name, target) => (name, tar::EntryType::Link, target, b""),
        };
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.as_old_mut().linkname[..target.len()].copy_from_slice(target.as_bytes());
        h.set_mode(0o644);
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_cksum();
        tar.append(&h, data).unwrap();
    }
    tar.into_inner().unwrap()
}

/// The image digest an unpacking error names (the manifest's; the test checks the layer's).
fn unpacked_image(stderr: &str) -> &str {
    stderr
        .strip_prefix("error: unpacking ")
        .and_then(|rest| rest.split(": ").next())
        .unwrap_or_default()
}

/// `render REFERENCE` with a private cache: (exit code, stdout, stderr).
fn render_image(reference: &str, cache: &Path) -> (i32, String, String) {
    run(&[
        "render",
        reference,
        "--image-cache-dir",
        cache.to_str().unwrap(),
    ])
}

#[test]
fn hostile_layers_are_refused_and_write_nothing_outside() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let cases: [(&[Entry], &str); 4] = [
        (
            &[Entry::File("../../escaped", b"evil")],
            "../../escaped: path leaves the image",
        ),
        (
            &[Entry::HardLink("configs/h.json", "/etc/passwd")],
            "configs/h.json: hard link to /etc/passwd, which is not a regular file of the image",
        ),
        (
            &[
                Entry::Symlink("configs/d", "/etc"),
                Entry::File("configs/d/x.json", b"{}"),
            ],
            "configs/d/x.json: writes through a symlink",
        ),
        (
            &[Entry::File("configs/.wh...", b"")],
            "configs/.wh...: whiteout of \"..\" is not a file name",
        ),
    ];
    for (n, (entries, message)) in cases.into_iter().enumerate() {
        let layer = hostile_layer(entries);
        let reference = layout_with_layer(&work.path().join(format!("layout{n}")), layer.clone());
        let (code, stdout, stderr) = render_image(&reference, &cache);
        assert_eq!((code, stdout.as_str()), (1, ""));
        assert_eq!(
            stderr,
            format!(
                "error: unpacking {}: layer {}: {message}\n",
                unpacked_image(&stderr),
                image::layout::digest_of(&layer)
            )
        );
    }
    assert!(!work.path().join("escaped").exists());
    assert!(!std::env::temp_dir().join("escaped").exists());
}

/// The issue's image: `configs/` links to a file of the host and to /dev/zero. The links are
/// rewritten to count from the image root, where neither exists, so render serves neither
/// (and does not read /dev/zero until memory runs out).
#[test]
fn absolute_symlinks_in_an_image_stay_inside_it() {
    let work = tempfile::tempdir().unwrap();
    let host_file = work.path().join("host.json");
    std::fs::write(
        &host_file,
        r#"{"schema":"olm.package","name":"host-secret"}"#,
    )
    .unwrap();
    let package = br#"{"schema":"olm.package","name":"mine"}"#;
    let layer = hostile_layer(&[
        Entry::File("configs/mine/catalog.json", package),
        Entry::Symlink("configs/p/x.json", host_file.to_str().unwrap()),
        Entry::Symlink("configs/p/zero.json", "/dev/zero"),
        // Through a link to the root and up: still the image root.
        Entry::Symlink("top", "/"),
        Entry::Symlink("configs/p/up.json", "../../top/../../../../dev/zero"),
    ]);
    let reference = layout_with_layer(&work.path().join("layout"), layer);
    let (code, stdout, stderr) = render_image(&reference, &work.path().join("cache"));
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    // The catalog loader's words are its own; what matters is that each link led nowhere.
    let mut unreadable: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.trim_start().split_once(": ").map(|(file, _)| file))
        .filter(|file| file.starts_with("p/"))
        .collect();
    unreadable.sort();
    assert_eq!(
        unreadable,
        ["p/up.json", "p/x.json", "p/zero.json"],
        "{stderr}"
    );
    assert!(!stderr.contains("host-secret"), "{stderr}");
}

/// A 2 MB layer must not write gigabytes: 100 MiB of zeros, gzipped to about 100 KiB, stops
/// once it has expanded 100 times and past 64 MiB (the defaults).
#[test]
fn a_layer_that_expands_too_far_is_refused() {
    use std::io::Write;
    let work = tempfile::tempdir().unwrap();
    let mut tar = Vec::new();
    let mut header = tar::Header::new_gnu();
    header.set_path("configs/zeros.json").unwrap();
    header.set_size(100 << 20);
    header.set_mode(0o644);
    header.set_cksum();
    tar.extend_from_slice(header.as_bytes());
    tar.resize(tar.len() + (100 << 20) + 1024, 0);
    // The system gzip: a debug build of our compressor would take seconds for this.
    let mut gzip = std::process::Command::new("gzip")
        .arg("-9")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    let mut stdin = gzip.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&tar).unwrap());
    let layer = gzip.wait_with_output().unwrap().stdout;
    writer.join().unwrap();
    assert!(layer.len() < 2 << 20, "{}", layer.len());
    let reference = layout_with_layer(&work.path().join("layout"), layer.clone());
    let (code, stdout, stderr) = render_image(&reference, &work.path().join("cache"));
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert_eq!(
        stderr,
        format!(
            "error: unpacking {}: layer {}: layer expands to more than 100 times its compressed size (and past 67108864 bytes)\n",
            unpacked_image(&stderr),
            image::layout::digest_of(&layer)
        )
    );
}

/// A registry client reaching `insecure` over plain HTTP.
fn client(insecure: &str, cache: &Path) -> image::Registry {
    image::Registry::new(&image::ClientOptions {
        insecure_registries: vec![insecure.to_owned()],
        cache_dir: cache.to_owned(),
        ..Default::default()
    })
    .unwrap()
}

/// A stand-in for a hostile registry (distribution itself neither takes nor serves a manifest
/// over 4 MiB): every request gets a manifest of `size` bytes, announced by Content-Length or
/// not (then it ends when the connection closes). Each connection reports how many bytes of
/// it went out before the client hung up.
fn hostile_registry(size: usize, announce: bool) -> (String, mpsc::Receiver<usize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let (Ok(mut conn), tx) = (conn, tx.clone()) else {
                break;
            };
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let length = if announce {
                    format!("Content-Length: {size}\r\n")
                } else {
                    String::new()
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n{length}Connection: close\r\n\r\n"
                );
                let prefix = br#"{"schemaVersion":2,"annotations":{"padding":""#;
                let mut sent = 0;
                if conn.write_all(head.as_bytes()).is_ok() && conn.write_all(prefix).is_ok() {
                    sent = prefix.len();
                    let chunk = [b'x'; 64 << 10];
                    while sent < size {
                        let n = chunk.len().min(size - sent);
                        if conn.write_all(&chunk[..n]).is_err() {
                            break;
                        }
                        sent += n;
                    }
                }
                let _ = tx.send(sent);
            });
        }
    });
    (addr, rx)
}

/// A 200 MB manifest is refused after its first 4 MiB, and a 5 MiB one as soon as its size
/// is announced, from a registry or from an OCI layout: registries and containerd cap
/// manifests at 4 MiB, and so do we. One just under the cap is fine.
#[tokio::test]
async fn a_5_mib_manifest_is_refused() {
    use image::{ImageRef, build_image};
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let too_big =
        |reference: &str| format!("{reference}: the manifest is larger than 4194304 bytes");

    let (addr, sent) = hostile_registry(200 << 20, false);
    let huge = format!("{addr}/catalogs/example:v1");
    let huge_ref: oci_client::Reference = huge.parse().unwrap();
    let err = client(&addr, &cache)
        .get_manifest(&huge_ref)
        .await
        .unwrap_err();
    assert_eq!(err.message, too_big(&format!("manifest {huge}")));
    assert_eq!(err.kind, image::ErrorKind::InvalidContent);
    // Waited for off the runtime, which closes the connection the client gave up on.
    let sent = tokio::task::spawn_blocking(move || sent.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap()
        .unwrap();
    assert!(sent < 64 << 20, "{sent} bytes were read");

    let (addr, _) = hostile_registry(5 << 20, true);
    let big = format!("{addr}/catalogs/example:v1");
    let (code, stdout, stderr) = run(&[
        "render",
        &big,
        "--insecure-registry",
        &addr,
        "--image-cache-dir",
        cache.to_str().unwrap(),
    ]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert_eq!(
        stderr,
        format!("error: {}\n", too_big(&format!("pull {big}")))
    );

    // A real registry with a manifest just under the cap.
    let reg = TestRegistry::plain();
    let registry = client(&reg.addr, &cache);
    let image = build_image(&[(example().as_path(), "/configs")], &Default::default()).unwrap();
    let tag = format!("{}/catalogs/example:v1", reg.addr);
    registry
        .push(&image, &ImageRef::parse(&tag).unwrap())
        .await
        .unwrap();
    let mut manifest: serde_json::Value = serde_json::from_slice(&image.manifest).unwrap();
    manifest["annotations"] = serde_json::json!({"padding": "x".repeat((4 << 20) - 1024)});
    let body = serde_json::to_vec(&manifest).unwrap();
    let fits: oci_client::Reference = tag.parse().unwrap();
    registry
        .put_manifest(
            &fits,
            body.clone().into(),
            "application/vnd.oci.image.manifest.v1+json",
        )
        .await
        .unwrap();
    assert_eq!(registry.get_manifest(&fits).await.unwrap().0, body);

    let layout_dir = work.path().join("layout");
    let reference = layout_image(&layout_dir, hostile_layer(&[]), 5 << 20);
    let (code, stdout, stderr) = render_image(&reference, &cache);
    assert_eq!((code, stdout.as_str()), (1, ""));
    let (digest, _) = image::layout::Layout::open(&layout_dir)
        .unwrap()
        .find_manifest(Some("bad"))
        .unwrap();
    assert_eq!(
        stderr,
        format!(
            "error: {}: larger than 4194304 bytes\n",
            layout_dir
                .join("blobs/sha256")
                .join(digest.trim_start_matches("sha256:"))
                .display()
        )
    );
}

/// An image config over 8 MiB is refused from its descriptor, before it is downloaded.
#[tokio::test]
async fn an_oversized_image_config_is_refused() {
    use image::layout::digest_of;
    use image::{ImageRef, build_image};
    let reg = TestRegistry::plain();
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let registry = client(&reg.addr, &cache);
    let mut image = build_image(&[(example().as_path(), "/configs")], &Default::default()).unwrap();
    let mut config: serde_json::Value = serde_json::from_slice(&image.config).unwrap();
    config["config"]["Labels"]["padding"] = "x".repeat(9 << 20).into();
    image.config = serde_json::to_vec(&config).unwrap();
    let mut manifest: serde_json::Value = serde_json::from_slice(&image.manifest).unwrap();
    manifest["config"]["digest"] = digest_of(&image.config).into();
    manifest["config"]["size"] = image.config.len().into();
    image.manifest = serde_json::to_vec(&manifest).unwrap();
    let tag = format!("{}/catalogs/example:v1", reg.addr);
    registry
        .push(&image, &ImageRef::parse(&tag).unwrap())
        .await
        .unwrap();
    let (code, stdout, stderr) = run(&[
        "render",
        &tag,
        "--insecure-registry",
        &reg.addr,
        "--image-cache-dir",
        cache.to_str().unwrap(),
    ]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert_eq!(
        stderr,
        format!(
            "error: pull {tag}: the image config is larger than 8388608 bytes ({} by its descriptor)\n",
            image.config.len()
        )
    );
    assert!(
        !cache
            .join("blobs/sha256")
            .join(&digest_of(&image.config)[7..])
            .exists()
    );
}

use crate::common::proxy;

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
        stderr.contains("(attempt 1 of 5, retrying in ")
            && stderr.contains("(attempt 2 of 5, retrying in "),
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
    // The config (small, fetched whole before the layer) is; the cut layer is not.
    assert_eq!(
        blobs.len(),
        1,
        "nothing half-pulled is cached: {:?}",
        blobs.iter().map(|b| b.file_name()).collect::<Vec<_>>()
    );
    let config = std::fs::read(blobs[0].path()).unwrap();
    assert_eq!(
        image::layout::digest_of(&config),
        format!("sha256:{}", blobs[0].file_name().to_string_lossy())
    );
}

/// Callers branch on what went wrong, not on its words: an image the registry does not have,
/// and a registry that is not there (retried first, as only that kind is).
#[tokio::test]
async fn pull_errors_say_their_kind() {
    use image::{ErrorKind, ImageRef};
    let reg = TestRegistry::plain();
    let cache = tempfile::tempdir().unwrap();
    let missing = ImageRef::parse(&format!("{}/nothing/here:v1", reg.addr)).unwrap();
    let err = client(&reg.addr, cache.path())
        .pull(&missing)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound, "{err}");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let gone = ImageRef::parse(&format!("{closed}/nothing/here:v1")).unwrap();
    let err = client(&closed, cache.path()).pull(&gone).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Unavailable, "{err}");
}

/// Legacy index images are ingested from memory, not from an FBC written out: served, they
/// answer exactly as the FBC `render` makes of them does, over gRPC and the catalogd API; the
/// index names the image as its source, not a directory; and it carries the digest the
/// written-out FBC had, so a start on that FBC reuses it (as caches built when these images
/// were written out are reused now).
#[tokio::test]
async fn legacy_index_images_serve_as_the_fbc_they_render_to() {
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("index.db");
    crate::migrate::build_v13(&db);
    let layer = hostile_layer(&[Entry::File(
        "database/index.db",
        &std::fs::read(&db).unwrap(),
    )]);
    let labels = serde_json::json!({
        "operators.operatorframework.io.index.database.v1": "/database/index.db"
    });
    let reference = labelled_layout_image(&work.path().join("layout"), layer, 0, labels);
    let fbc = rendered_fbc(&reference, &[]);

    let index_cache = tempfile::tempdir().unwrap();
    let http = ["--http-addr", "127.0.0.1:0", "--catalog-name", "c"];
    let mut image_flags = http.to_vec();
    image_flags.extend_from_slice(&["--cache-dir", index_cache.path().to_str().unwrap()]);
    let from_image = Server::serving(Path::new(&reference), &image_flags).await;
    let from_fbc = Server::serving(fbc.path(), &http).await;
    let (want, got) = (answers(&from_fbc).await, answers(&from_image).await);
    assert_eq!(want.packages.len(), 1);
    assert_eq!(want.bundles.len(), 6);
    assert_eq!(got.packages, want.packages);
    assert_eq!(got.bundles, want.bundles);
    assert_eq!(got.by_name, want.by_name);
    assert_eq!(got.all, want.all);
    drop((from_image, from_fbc));

    let index_db = index_cache.path().join("olm-registry.v1/index.db");
    let source: String = rusqlite::Connection::open(&index_db)
        .unwrap()
        .query_row("SELECT value FROM info WHERE key = 'source'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(source, reference);
    let reuse = ["--cache-dir", index_cache.path().to_str().unwrap()];
    let again = Server::serving(fbc.path(), &reuse).await;
    again
        .wait_for_log("catalog unchanged, serving the cached index")
        .await;
}

/// A bundle image alone names a package it does not hold: serving it is refused as serving
/// the FBC `render` makes of it is, the problem cited by where `render` prints it.
#[test]
fn a_bundle_image_is_refused_as_its_fbc_is() {
    let Some(bundles) = crate::common::shared_testdata("upstream/render-bundles") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = bundles.join("foo-bundle-v0.2.0");
    let tag = format!("oci:{}:v0.2.0", work.path().join("layout").display());
    let (code, _, stderr) = run(&["build", "bundle", dir.to_str().unwrap(), "--tag", &tag]);
    assert_eq!(code, 0, "{stderr}");
    let fbc = rendered_fbc(&tag, &[]);
    let refusal = |source: &Path| {
        let cache = tempfile::tempdir().unwrap();
        let (code, _, stderr) = run(&[
            "serve",
            source.to_str().unwrap(),
            "-p",
            "127.0.0.1:0",
            "--cache-only",
            "--cache-dir",
            cache.path().to_str().unwrap(),
        ]);
        assert_ne!(code, 0, "{stderr}");
        let at = stderr.find("invalid index:").expect(&stderr);
        stderr[at..].trim_end().to_owned()
    };
    let expected = refusal(fbc.path()).replace("catalog.json:", &format!("render of {tag}:"));
    assert_eq!(
        expected,
        format!(
            "invalid index:\n└── unknown package \"foo\" for bundle \"foo.v0.2.0\" (render of {tag}:1)"
        )
    );
    assert_eq!(refusal(Path::new(&tag)), expected);
}

/// A directory holding, as `catalog.json`, what `render REFERENCE` prints.
fn rendered_fbc(reference: &str, flags: &[&str]) -> tempfile::TempDir {
    let fbc = tempfile::tempdir().unwrap();
    let mut args = vec!["render", reference];
    args.extend_from_slice(flags);
    let (code, rendered, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    std::fs::write(fbc.path().join("catalog.json"), rendered).unwrap();
    fbc
}

/// What a server answers about its whole catalog.
struct Answers {
    packages: Vec<api::Package>,
    bundles: Vec<api::Bundle>,
    /// GetBundle of each bundle ListBundles names.
    by_name: Vec<api::Bundle>,
    /// The body of the catalogd API's `/all`.
    all: Vec<u8>,
}

async fn answers(server: &Server) -> Answers {
    use api::{GetBundleRequest, ListBundlesRequest};
    let mut c = server.client().await;
    let mut packages = Vec::new();
    for name in crate::common::package_names(&mut c).await {
        let p = c.get_package(GetPackageRequest { name }).await.unwrap();
        packages.push(p.into_inner());
    }
    let listed = c.list_bundles(ListBundlesRequest {}).await.unwrap();
    let bundles = crate::common::collect(listed.into_inner()).await;
    let mut by_name = Vec::new();
    for b in &bundles {
        let request = GetBundleRequest {
            pkg_name: b.package_name.clone(),
            channel_name: b.channel_name.clone(),
            csv_name: b.csv_name.clone(),
        };
        by_name.push(c.get_bundle(request).await.unwrap().into_inner());
    }
    let base = crate::catalogd_http::api_base(server).await;
    let all = crate::catalogd_http::client(None)
        .get(format!("{base}/catalogs/c/api/v1/all"))
        .send()
        .await
        .unwrap();
    assert_eq!(all.status(), reqwest::StatusCode::OK);
    let all = all.bytes().await.unwrap().to_vec();
    Answers {
        packages,
        bundles,
        by_name,
        all,
    }
}
