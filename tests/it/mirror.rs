//! `mirror` against real registries on loopback: bundle, related, multi-platform and catalog
//! images built and pushed by the project itself (bundles from ../shared/testdata/upstream),
//! then mirrored registry to registry, to disk and from disk, interrupted, and corrupted.
use crate::common::proxy;
use crate::common::registry;

use crate::common::{Server, run, shared_testdata};
use api::GetPackageRequest;
use image::{BuiltImage, ClientOptions, ImageRef, Registry, build_image};
use registry::TestRegistry;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod archive;

/// Pushed images by the name the catalog and the configuration use, with their digests.
struct Source {
    /// The registry as image references name it (the registry itself, or a proxy before it).
    host: String,
    digests: BTreeMap<&'static str, String>,
    /// The layer of the 1 MiB image (the one blob a cut connection cannot carry).
    big_layer: String,
    _work: tempfile::TempDir,
}

pub(crate) fn client(insecure: &[&str], cache: &Path) -> Registry {
    Registry::new(&ClientOptions {
        insecure_registries: insecure.iter().map(|s| s.to_string()).collect(),
        cache_dir: cache.to_owned(),
        ..Default::default()
    })
    .unwrap()
}

/// An image whose one layer holds `files` (name, bytes).
pub(crate) fn image_of(files: &[(&str, Vec<u8>)]) -> BuiltImage {
    let dir = tempfile::tempdir().unwrap();
    for (name, data) in files {
        std::fs::write(dir.path().join(name), data).unwrap();
    }
    build_image(&[(dir.path(), "/data")], &BTreeMap::new()).unwrap()
}

/// Incompressible bytes (xorshift), so that the gzip layer stays as big.
pub(crate) fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

fn digest_of(stdout: &str) -> String {
    stdout.trim().rsplit_once('@').unwrap().1.to_owned()
}

/// Pushes to `at` an OCI index of `children`, each (architecture, digest, size) of a linux
/// image manifest already in the registry; answers the index's digest.
pub(crate) async fn put_index(
    registry: &Registry,
    at: &str,
    children: &[(&str, String, usize)],
) -> String {
    let manifests: Vec<_> = children
        .iter()
        .map(|(arch, digest, size)| {
            serde_json::json!({
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest,
                "size": size,
                "platform": {"os": "linux", "architecture": arch},
            })
        })
        .collect();
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": manifests,
    }))
    .unwrap();
    let r: oci_client::Reference = at.parse().unwrap();
    registry
        .put_manifest(
            &r,
            index.clone().into(),
            "application/vnd.oci.image.index.v1+json",
        )
        .await
        .unwrap();
    image::layout::digest_of(&index)
}

/// Builds and pushes into `addr` everything a catalog of two etcd bundles needs; references
/// name `host`. None when the shared upstream bundles are absent.
async fn publish(addr: &str, host: &str) -> Option<Source> {
    let bundles = shared_testdata("upstream/bundles")?;
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let flags = [
        "--insecure-registry",
        addr,
        "--image-cache-dir",
        cache.to_str().unwrap(),
    ];
    let registry = client(&[addr], &cache);
    let push = async |image: &BuiltImage, to: String| {
        registry
            .push(image, &ImageRef::parse(&to).unwrap())
            .await
            .unwrap()
    };
    let mut digests = BTreeMap::new();
    let operator = image_of(&[("operator", b"etcd operator".to_vec())]);
    digests.insert(
        "operator",
        push(&operator, format!("{addr}/olm/etcd-operator:v0.9.2")).await,
    );
    let big = image_of(&[("big", noise(1 << 20, 7))]);
    let big_layer = serde_json::from_slice::<serde_json::Value>(&big.manifest).unwrap()["layers"]
        [0]["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    digests.insert("big", push(&big, format!("{addr}/olm/big:v1")).await);
    // The same image under another name: its blobs are mounted, not copied twice.
    digests.insert("extra", push(&big, format!("{addr}/tools/extra:v1")).await);
    digests.insert(
        "unwanted",
        push(
            &image_of(&[("x", b"unwanted".to_vec())]),
            format!("{addr}/unwanted/tool:v1"),
        )
        .await,
    );
    // A two-platform index: copied whole, so its digest stays the same.
    let mut children = Vec::new();
    for (arch, text) in [("amd64", "x86"), ("arm64", "arm")] {
        let child = image_of(&[("arch", text.as_bytes().to_vec())]);
        let digest = push(&child, format!("{addr}/olm/multi:{arch}")).await;
        children.push((arch, digest, child.manifest.len()));
    }
    digests.insert(
        "multi",
        put_index(&registry, &format!("{addr}/olm/multi:v1"), &children).await,
    );

    let mut docs = vec![
        serde_json::json!({"schema": "olm.package", "name": "etcd", "defaultChannel": "alpha"}),
        serde_json::json!({"schema": "olm.channel", "package": "etcd", "name": "alpha", "entries": [
            {"name": "etcdoperator.v0.9.0"},
            {"name": "etcdoperator.v0.9.2", "replaces": "etcdoperator.v0.9.0"},
        ]}),
    ];
    for (version, key) in [("0.9.0", "bundle-0.9.0"), ("0.9.2", "bundle-0.9.2")] {
        let tag = format!("{addr}/olm/etcd-bundle:v{version}");
        let dir = bundles.join(format!("etcd.{version}"));
        let mut args = vec!["build", "bundle", dir.to_str().unwrap(), "--tag", &tag];
        args.extend_from_slice(&flags);
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        digests.insert(key, digest_of(&stdout));
        let mut args = vec!["render", &tag, "-o", "json"];
        args.extend_from_slice(&flags);
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        let mut bundle: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let image = format!("{host}/olm/etcd-bundle:v{version}");
        bundle["image"] = image.clone().into();
        bundle["relatedImages"] = serde_json::json!([
            {"name": "", "image": image},
            {"name": "operator", "image": format!("{host}/olm/etcd-operator@{}", digests["operator"])},
            {"name": "big", "image": format!("{host}/olm/big:v1")},
            {"name": "multi", "image": format!("{host}/olm/multi:v1")},
            {"name": "tool", "image": format!("{host}/unwanted/tool:v1")},
        ]);
        docs.push(bundle);
    }
    let fbc = work.path().join("fbc/etcd");
    std::fs::create_dir_all(&fbc).unwrap();
    let text: String = docs.iter().map(|d| format!("{d}\n")).collect();
    std::fs::write(fbc.join("catalog.json"), text).unwrap();
    let tag = format!("{addr}/olm/catalog:v1");
    let fbc_root = work.path().join("fbc");
    let mut args = vec![
        "build",
        "catalog",
        fbc_root.to_str().unwrap(),
        "--tag",
        &tag,
    ];
    args.extend_from_slice(&flags);
    let (code, _, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    Some(Source {
        host: host.to_owned(),
        digests,
        big_layer,
        _work: work,
    })
}

fn write_config(dir: &Path, host: &str, extra: &[&str]) -> PathBuf {
    let mut additional = format!("  - name: {host}/tools/extra:v1\n");
    for e in extra {
        additional.push_str(&format!("  - name: {e}\n"));
    }
    let path = dir.join("isc.yaml");
    write_image_set(
        &path,
        &format!(
            "  operators:
  - catalog: {host}/olm/catalog:v1
    full: true
  additionalImages:
{additional}  blockedImages:
  - name: .*/unwanted/.*
"
        ),
    );
    path
}

/// Writes at `path` an ImageSetConfiguration whose `mirror:` section is `section` (lines
/// indented under it), the header every mirror test repeats.
pub(crate) fn write_image_set(path: &Path, section: &str) {
    std::fs::write(
        path,
        format!(
            "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n{section}"
        ),
    )
    .unwrap();
}

/// `mirror` with these arguments plus the registries, cache and workspace flags.
fn mirror_command(args: &[&str], insecure: &[&str], work: &Path) -> Vec<String> {
    let mut all = vec!["mirror".to_owned()];
    all.extend(args.iter().map(|a| a.to_string()));
    for r in insecure {
        all.extend(["--insecure-registry".to_owned(), r.to_string()]);
    }
    for (flag, dir) in [("--image-cache-dir", "cache"), ("--workspace", "workspace")] {
        all.extend([flag.to_owned(), work.join(dir).display().to_string()]);
    }
    all
}

/// Runs `mirror` with these arguments plus the registries, cache and workspace flags.
pub(crate) fn mirror(args: &[&str], insecure: &[&str], work: &Path) -> (i32, String, String) {
    let all = mirror_command(args, insecure, work);
    run(&all.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The counts of the summary line: (images, copied, reused, mounted).
pub(crate) fn counts(stdout: &str) -> (usize, usize, usize, usize) {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("mirrored "))
        .unwrap_or_else(|| panic!("no summary in {stdout:?}"));
    let number = |after: &str| -> usize {
        let head = line.split(after).next().unwrap();
        head.rsplit(|c: char| !c.is_ascii_digit())
            .find(|s| !s.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    (
        number(" images"),
        number(" blobs copied"),
        number(" reused"),
        number(" mounted"),
    )
}

/// Every mirrored image has its source digest at `root`; the blocked one is absent.
async fn assert_mirrored(src: &Source, root: &str, insecure: &[&str], cache: &Path) {
    let dest = client(insecure, cache);
    let at = |path: &str| -> oci_client::Reference { format!("{root}/{path}").parse().unwrap() };
    for (path, key) in [
        ("olm/etcd-bundle:v0.9.0", "bundle-0.9.0"),
        ("olm/etcd-bundle:v0.9.2", "bundle-0.9.2"),
        ("olm/big:v1", "big"),
        ("tools/extra:v1", "extra"),
        ("olm/multi:v1", "multi"),
    ] {
        assert_eq!(
            dest.resolve_digest(&at(path)).await.unwrap(),
            src.digests[key],
            "{path}"
        );
    }
    let operator = at(&format!("olm/etcd-operator@{}", src.digests["operator"]));
    let (body, _) = dest.get_manifest(&operator).await.unwrap();
    assert_eq!(image::layout::digest_of(&body), src.digests["operator"]);
    // Digest-only sources are also tagged sha256-<hex>, as oc-mirror v2 does.
    let tagged = at(&format!(
        "olm/etcd-operator:{}",
        src.digests["operator"].replace(':', "-")
    ));
    assert_eq!(
        dest.resolve_digest(&tagged).await.unwrap(),
        src.digests["operator"]
    );
    // Both platforms of the index came along.
    let (index, _) = dest.get_manifest(&at("olm/multi:v1")).await.unwrap();
    let index: serde_json::Value = serde_json::from_slice(&index).unwrap();
    for child in index["manifests"].as_array().unwrap() {
        let child = at(&format!("olm/multi@{}", child["digest"].as_str().unwrap()));
        dest.get_manifest(&child).await.unwrap();
    }
    assert!(dest.resolve_digest(&at("unwanted/tool:v1")).await.is_err());
}

async fn serves_etcd(catalog: &str, insecure: &[&str], cache: &Path) {
    let mut flags = vec!["--image-cache-dir", cache.to_str().unwrap()];
    for r in insecure {
        flags.extend_from_slice(&["--insecure-registry", r]);
    }
    let server = Server::serving(Path::new(catalog), &flags).await;
    let package = server
        .client()
        .await
        .get_package(GetPackageRequest {
            name: "etcd".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(package.default_channel_name, "alpha");
    assert_eq!(package.channels[0].csv_name, "etcdoperator.v0.9.2");
}

#[tokio::test]
async fn mirror_to_mirror_keeps_digests_and_writes_cluster_resources() {
    let (source, target) = (TestRegistry::plain(), TestRegistry::plain());
    let Some(src) = publish(&source.addr, &source.addr).await else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let config = write_config(work.path(), &src.host, &[]);
    let root = format!("{}/mirror", target.addr);
    let to = format!("docker://{root}");
    let insecure = [source.addr.as_str(), target.addr.as_str()];
    let args = ["-c", config.to_str().unwrap(), "--to", &to];

    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let (code, stdout, stderr) = mirror(&dry, &insecure, work.path());
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("7 images to mirror:"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "bundle           {h}/olm/etcd-bundle:v0.9.0 ({}) -> {root}/olm/etcd-bundle:v0.9.0",
            src.digests["bundle-0.9.0"],
            h = src.host
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!(
        "blocked          {}/unwanted/tool:v1 (matches blockedImages \".*/unwanted/.*\")",
        src.host
    )));
    let dest = client(&insecure, &work.path().join("cache"));
    let catalog_ref: oci_client::Reference = format!("{root}/olm/catalog:v1").parse().unwrap();
    assert!(
        dest.resolve_digest(&catalog_ref).await.is_err(),
        "a dry run copies nothing"
    );

    let (code, stdout, stderr) = mirror(&args, &insecure, work.path());
    assert_eq!(code, 0, "{stderr}");
    // 2 bundles, the operator, big, extra, the index, the catalog; big's two blobs are
    // mounted into tools/extra instead of copied again.
    assert_eq!(counts(&stdout), (7, 14, 0, 2), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "blocked: {}/unwanted/tool:v1 (matches blockedImages \".*/unwanted/.*\"); not mirrored",
            src.host
        )),
        "{stderr}"
    );
    assert_mirrored(&src, &root, &insecure, &work.path().join("cache")).await;

    let resources = work.path().join("workspace/working-dir/cluster-resources");
    let mut files: Vec<String> = std::fs::read_dir(&resources)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "cc-catalog-v1.yaml",
            "cs-catalog-v1.yaml",
            "idms-oc-mirror.yaml",
            "itms-oc-mirror.yaml"
        ]
    );
    let idms = std::fs::read_to_string(resources.join("idms-oc-mirror.yaml")).unwrap();
    assert!(
        idms.contains(&format!(
            "  - mirrors:\n    - {}/mirror/olm\n    source: {}/olm\n",
            target.addr, src.host
        )),
        "{idms}"
    );
    let cs = std::fs::read_to_string(resources.join("cs-catalog-v1.yaml")).unwrap();
    assert!(
        cs.contains(&format!("  image: {root}/olm/catalog:v1\n")),
        "{cs}"
    );
    let mapping =
        std::fs::read_to_string(work.path().join("workspace/working-dir/mapping.txt")).unwrap();
    let h = &src.host;
    let lines: Vec<&str> = mapping.lines().collect();
    assert_eq!(
        lines[..6],
        [
            format!("{h}/olm/etcd-bundle:v0.9.0={root}/olm/etcd-bundle:v0.9.0"),
            format!("{h}/olm/etcd-bundle:v0.9.2={root}/olm/etcd-bundle:v0.9.2"),
            format!(
                "{h}/olm/etcd-operator@{d}={root}/olm/etcd-operator@{d}",
                d = src.digests["operator"]
            ),
            format!("{h}/olm/big:v1={root}/olm/big:v1"),
            format!("{h}/olm/multi:v1={root}/olm/multi:v1"),
            format!("{h}/tools/extra:v1={root}/tools/extra:v1"),
        ]
    );
    assert_eq!(
        lines[6],
        format!("{h}/olm/catalog:v1={root}/olm/catalog:v1")
    );
    assert_eq!(lines.len(), 7);

    serves_etcd(
        &format!("{root}/olm/catalog:v1"),
        &insecure,
        &work.path().join("serve-cache"),
    )
    .await;

    // A second run finds everything in place.
    let (code, stdout, stderr) = mirror(&args, &insecure, work.path());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&stdout), (7, 0, 16, 0), "{stdout}");
}

#[tokio::test]
async fn mirror_to_disk_then_disk_to_mirror_without_the_source() {
    let (mut source, target) = (TestRegistry::plain(), TestRegistry::plain());
    let Some(src) = publish(&source.addr, &source.addr).await else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("archive");
    let to_disk = format!("file://{}", archive.display());
    let config = write_config(work.path(), &src.host, &[]);
    let insecure = [source.addr.as_str()];
    let (code, stdout, stderr) = mirror(
        &["-c", config.to_str().unwrap(), "--to", &to_disk],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    // Blobs are stored once by digest; the rebuilt catalog is already in the archive.
    assert_eq!(counts(&stdout), (7, 12, 2, 0), "{stdout}");
    assert!(archive.join("mirror-plan.json").is_file());

    // A new image in the configuration: only its blobs are written.
    let registry = client(&insecure, &work.path().join("cache"));
    let new = image_of(&[("new", b"new tool".to_vec())]);
    let new_digest = registry
        .push(
            &new,
            &ImageRef::parse(&format!("{}/tools/new:v1", source.addr)).unwrap(),
        )
        .await
        .unwrap();
    let new_ref = format!("{}/tools/new:v1", src.host);
    let config = write_config(work.path(), &src.host, &[&new_ref]);
    let (code, stdout, stderr) = mirror(
        &["-c", config.to_str().unwrap(), "--to", &to_disk],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&stdout), (8, 2, 14, 0), "{stdout}");

    // The source goes away: the archive alone goes to the target.
    source.stop();
    let root = format!("{}/pfx", target.addr);
    let (code, stdout, stderr) = mirror(
        &["--from", &to_disk, "--to", &format!("docker://{root}")],
        &[target.addr.as_str()],
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&stdout), (8, 16, 0, 2), "{stdout}");
    let cache = work.path().join("cache-target");
    assert_mirrored(&src, &root, &[target.addr.as_str()], &cache).await;
    let dest = client(&[target.addr.as_str()], &cache);
    let new_at: oci_client::Reference = format!("{root}/tools/new:v1").parse().unwrap();
    assert_eq!(dest.resolve_digest(&new_at).await.unwrap(), new_digest);
    serves_etcd(
        &format!("{root}/olm/catalog:v1"),
        &[target.addr.as_str()],
        &work.path().join("serve-cache"),
    )
    .await;
}

#[tokio::test]
async fn an_interrupted_copy_resumes_with_only_the_missing_blobs() {
    let (source, target) = (TestRegistry::plain(), TestRegistry::plain());
    // Every connection that carries more than 256 KiB is cut: the 1 MiB layer never
    // arrives, everything else does (after retries).
    let cutter = proxy::CuttingProxy::start(&source.addr, 256 << 10, usize::MAX);
    let Some(src) = publish(&source.addr, &cutter.addr).await else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let config = write_config(work.path(), &src.host, &[]);
    let root = format!("{}/mirror", target.addr);
    let to = format!("docker://{root}");
    let insecure = [cutter.addr.as_str(), target.addr.as_str()];
    let args = ["-c", config.to_str().unwrap(), "--to", &to];
    let (code, stdout, stderr) = mirror(&args, &insecure, work.path());
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(cutter.cuts_made() >= 5, "{}", cutter.cuts_made());
    assert!(
        stderr.contains(&format!(
            "{}/olm/big:v1: blob {}: ",
            src.host, src.big_layer
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{}/olm/catalog:v1: not copied, because other images failed",
            src.host
        )),
        "{stderr}"
    );
    // Copied: everything but the big layer.
    assert_eq!(counts(&stdout), (4, 13, 0, 1), "{stdout}");

    cutter.stop_cutting();
    let (code, stdout, stderr) = mirror(&args, &insecure, work.path());
    assert_eq!(code, 0, "{stderr}");
    // Only the missing layer is copied (and mounted into the second repository).
    assert_eq!(counts(&stdout), (7, 1, 14, 1), "{stdout}");
    assert_mirrored(&src, &root, &insecure, &work.path().join("cache")).await;
}

#[tokio::test]
async fn a_corrupt_source_blob_is_detected_and_not_pushed() {
    let (source, target) = (TestRegistry::plain(), TestRegistry::plain());
    let work = tempfile::tempdir().unwrap();
    let registry = client(&[source.addr.as_str()], &work.path().join("push-cache"));
    let image = image_of(&[("data", noise(64 << 10, 3))]);
    let layer = serde_json::from_slice::<serde_json::Value>(&image.manifest).unwrap()["layers"][0]
        ["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    registry
        .push(
            &image,
            &ImageRef::parse(&format!("{}/tools/data:v1", source.addr)).unwrap(),
        )
        .await
        .unwrap();
    // Same length, different bytes.
    let stored = source.blob_file(&layer);
    let mut bytes = std::fs::read(&stored).unwrap();
    bytes.iter_mut().for_each(|b| *b = !*b);
    std::fs::write(&stored, bytes).unwrap();

    let config = work.path().join("isc.yaml");
    write_image_set(
        &config,
        &format!(
            "  additionalImages:\n  - name: {}/tools/data:v1\n",
            source.addr
        ),
    );
    let insecure = [source.addr.as_str(), target.addr.as_str()];
    let archive = work.path().join("archive");
    for to in [
        format!("docker://{}/mirror", target.addr),
        format!("file://{}", archive.display()),
    ] {
        let (code, stdout, stderr) = mirror(
            &["-c", config.to_str().unwrap(), "--to", &to],
            &insecure,
            work.path(),
        );
        assert_eq!(code, 1, "{stdout}\n{stderr}");
        assert!(
            stderr.contains(&format!(
                "{}/tools/data:v1: blob {layer}: blob {layer} does not match its digest",
                source.addr
            )),
            "{stderr}"
        );
        // Detected at once, not retried.
        assert!(!stderr.contains("retrying"), "{stderr}");
    }
    let dest = client(&insecure, &work.path().join("cache"));
    let at: oci_client::Reference = format!("{}/mirror/tools/data:v1", target.addr)
        .parse()
        .unwrap();
    assert!(!dest.blob_exists(&at, &layer).await.unwrap());
    assert!(dest.resolve_digest(&at).await.is_err());
    let hex = layer.trim_start_matches("sha256:");
    assert!(!archive.join("blobs/sha256").join(hex).exists());
    assert!(!archive.join("mirror-plan.json").exists());
}

/// The files (relative names) of a directory tree, with their modes.
fn modes(dir: &Path) -> Vec<(String, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let name = path.strip_prefix(dir).unwrap().display().to_string();
            out.push((name, meta.permissions().mode() & 0o7777));
            if meta.is_dir() {
                pending.push(path);
            }
        }
    }
    out.sort();
    out
}

/// A run to disk killed in the middle of a blob leaves a temporary file; the next run removes
/// it, finishes the archive with files any user can read, and a blob damaged in the archive
/// afterwards (truncated, or rewritten at the same size) is found and copied again.
#[tokio::test]
async fn an_archive_survives_a_killed_run_and_damaged_blobs() {
    use std::io::{BufRead, BufReader};
    let source = TestRegistry::plain();
    // Every connection that carries more than 256 KiB is cut: the 1 MiB layer keeps retrying.
    let cutter = proxy::CuttingProxy::start(&source.addr, 256 << 10, usize::MAX);
    let Some(src) = publish(&source.addr, &cutter.addr).await else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("archive");
    let blobs = archive.join("blobs/sha256");
    let to_disk = format!("file://{}", archive.display());
    let config = write_config(work.path(), &src.host, &[]);
    let insecure = [cutter.addr.as_str()];
    let args = ["-c", config.to_str().unwrap(), "--to", &to_disk];
    let temp_files = || -> Vec<String> {
        [archive.clone(), blobs.clone()]
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flat_map(|entries| entries.flatten())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".tmp"))
            .collect()
    };

    // Killed while the big layer waits for its retry: its partial download stays behind.
    let mut killed = std::process::Command::new(crate::common::BIN)
        .args(mirror_command(&args, &insecure, work.path()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(killed.stderr.take().unwrap());
    let mut seen = Vec::new();
    for line in stderr.lines().map_while(Result::ok) {
        let retrying = line.contains(&src.big_layer) && line.contains("retrying");
        seen.push(line);
        if retrying {
            break;
        }
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(!temp_files().is_empty(), "{seen:?}");

    cutter.stop_cutting();
    let (code, stdout, stderr) = mirror(&args, &insecure, work.path());
    assert_eq!(code, 0, "{stderr}");
    let (images, copied, reused, mounted) = counts(&stdout);
    assert_eq!((images, copied + reused, mounted), (7, 14, 0), "{stdout}");
    assert_eq!(temp_files(), Vec::<String>::new());
    // 0666/0777 less the umask (0644/0755 under the usual 022), as cp and oc-mirror make them.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
        .unwrap();
    for (name, mode) in modes(&archive) {
        let expected = if archive.join(&name).is_dir() {
            0o777
        } else {
            0o666
        };
        assert_eq!(mode, expected & !umask, "{name}");
    }

    // Damage two blobs of the archive: the big layer loses its second half; the big image's
    // config keeps its size but not its bytes (and gets a new mtime, as any rewrite would).
    let hex = |d: &str| d.trim_start_matches("sha256:").to_owned();
    let big_manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(blobs.join(hex(&src.digests["big"]))).unwrap())
            .unwrap();
    let config_blob = big_manifest["config"]["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let layer_path = blobs.join(hex(&src.big_layer));
    let layer = std::fs::read(&layer_path).unwrap();
    std::fs::write(&layer_path, &layer[..layer.len() / 2]).unwrap();
    let config_path = blobs.join(hex(&config_blob));
    let written = std::fs::metadata(&config_path).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&config_path).unwrap();
    bytes.iter_mut().for_each(|b| *b = b.to_ascii_uppercase());
    std::fs::write(&config_path, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&config_path)
        .unwrap()
        .set_modified(written + std::time::Duration::from_secs(1))
        .unwrap();

    let (code, stdout, stderr) = mirror(&args, &insecure, work.path());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&stdout), (7, 2, 12, 0), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "blob {} in {} has {} bytes where {} are expected; fetching it again",
            src.big_layer,
            archive.display(),
            layer.len() / 2,
            layer.len()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "blob {config_blob} in {} does not match its digest (content is {}); fetching it again",
            archive.display(),
            image::layout::digest_of(&bytes)
        )),
        "{stderr}"
    );
    for (digest, path) in [(&src.big_layer, &layer_path), (&config_blob, &config_path)] {
        let content = std::fs::read(path).unwrap();
        assert_eq!(&image::layout::digest_of(&content), digest);
    }
}
