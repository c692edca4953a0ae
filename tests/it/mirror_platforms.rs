//! The platform filter of `mirror` (issue #20 item 4) against docker-registry 2.8, which
//! refuses sparse indexes: an image pulled by digest keeps every platform there (with a
//! note), an image pulled by tag gets a rewritten index, and the archive keeps a sparse
//! index that a 2.8 registry then cannot take. Prints the bytes copied with and without the
//! filter.
use crate::common::registry::TestRegistry;
use crate::mirror::{client, counts, image_of, mirror, noise, put_index, write_image_set};
use crate::mirror_signatures::publish;
use image::{ImageRef, Registry};
use std::collections::BTreeMap;
use std::path::Path;

const ARCHES: [&str; 4] = ["amd64", "arm64", "ppc64le", "s390x"];

/// A pushed index: its digest and each platform's manifest digest.
pub(crate) struct Index {
    pub(crate) digest: String,
    pub(crate) children: BTreeMap<&'static str, String>,
}

/// What [`publish_app`] pushed.
pub(crate) struct App {
    /// `apps/operand`, named by digest by the bundle.
    pub(crate) operand: Index,
    /// `apps/tool:v1`, each platform also tagged `v1-<arch>`.
    pub(crate) tool: Index,
}

/// Pushes a four-platform index as `repo:tag`, each platform 256 KiB of its own.
pub(crate) async fn push_index(
    registry: &Registry,
    addr: &str,
    repo: &str,
    tag: &str,
    seed: u64,
) -> Index {
    let mut children = BTreeMap::new();
    let mut entries = Vec::new();
    for (i, arch) in ARCHES.into_iter().enumerate() {
        let child = image_of(&[("payload", noise(256 << 10, seed * 10 + i as u64 + 1))]);
        let to = ImageRef::parse(&format!("{addr}/{repo}:{tag}-{arch}")).unwrap();
        let digest = registry.push(&child, &to).await.unwrap();
        entries.push((arch, digest.clone(), child.manifest.len()));
        children.insert(arch, digest);
    }
    Index {
        digest: put_index(registry, &format!("{addr}/{repo}:{tag}"), &entries).await,
        children,
    }
}

fn write_isc(dir: &Path, name: &str, addr: &str, operand: &str, tool: &str) -> String {
    let path = dir.join(name);
    write_image_set(
        &path,
        &format!(
            "  operators:
  - catalog: {addr}/apps/catalog:v1
{operand}  additionalImages:
  - name: {addr}/apps/tool:v1
{tool}"
        ),
    );
    path.display().to_string()
}

fn mib(stdout: &str) -> f64 {
    let line = stdout.lines().find(|l| l.starts_with("mirrored ")).unwrap();
    let after = line.split("blobs copied (").nth(1).unwrap();
    after.split(' ').next().unwrap().parse().unwrap()
}

/// Pushes into `source` a catalog `apps/catalog:v1` of one bundle (`apps/app-bundle:v1`)
/// whose related image is the index `apps/operand` by digest, and the index `apps/tool:v1`.
pub(crate) async fn publish_app(source: &TestRegistry, work: &Path) -> App {
    let cache = work.join("cache");
    let addr = source.addr.clone();
    let src = client(&[&addr], &cache);
    let operand = push_index(&src, &addr, "apps/operand", "v1", 1).await;
    let tool = push_index(&src, &addr, "apps/tool", "v1", 2).await;
    let bundle = image_of(&[("bundle", b"a bundle".to_vec())]);
    src.push(
        &bundle,
        &ImageRef::parse(&format!("{addr}/apps/app-bundle:v1")).unwrap(),
    )
    .await
    .unwrap();
    let fbc = work.join("fbc/app");
    std::fs::create_dir_all(&fbc).unwrap();
    let docs = [
        serde_json::json!({"schema": "olm.package", "name": "app", "defaultChannel": "stable"}),
        serde_json::json!({"schema": "olm.channel", "package": "app", "name": "stable",
            "entries": [{"name": "app.v1.0.0"}]}),
        serde_json::json!({"schema": "olm.bundle", "package": "app", "name": "app.v1.0.0",
            "image": format!("{addr}/apps/app-bundle:v1"),
            "properties": [{"type": "olm.package", "value": {"packageName": "app", "version": "1.0.0"}}],
            "relatedImages": [{"name": "operand", "image": format!("{addr}/apps/operand@{}", operand.digest)}]}),
    ];
    let text: String = docs.iter().map(|d| format!("{d}\n")).collect();
    std::fs::write(fbc.join("catalog.json"), text).unwrap();
    source.push_catalog(&work.join("fbc"), "apps/catalog:v1", &cache);
    App { operand, tool }
}

#[tokio::test]
async fn the_platform_filter_keeps_digests_of_images_pulled_by_digest() {
    let source = TestRegistry::plain();
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let addr = source.addr.clone();
    let App { operand, tool } = publish_app(&source, work.path()).await;

    let amd64 = "    platforms: [{os: linux, architecture: amd64}]\n";
    let arm64 = "    platforms: [{os: linux, architecture: arm64}]\n";
    let filtered = write_isc(work.path(), "filtered.yaml", &addr, amd64, arm64);
    let whole = write_isc(work.path(), "whole.yaml", &addr, "", "");
    let operand_source = format!("{addr}/apps/operand@{}", operand.digest);

    // Registry to registry, filtered, into docker-registry 2.8.
    let dest = TestRegistry::plain();
    let insecure = [addr.as_str(), dest.addr.as_str()];
    let to = format!("docker://{}/m", dest.addr);
    let (code, stdout, stderr) = mirror(
        &["-c", &filtered, "--to", &to, "--dry-run"],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(&format!(
            "  relatedImage     {operand_source} ({}) -> {}/m/apps/operand@{} [only linux/amd64]\n",
            operand.digest, dest.addr, operand.digest
        )),
        "{stdout}"
    );
    let (code, stdout, stderr) = mirror(&["-c", &filtered, "--to", &to], &insecure, work.path());
    assert_eq!(code, 0, "{stderr}");
    let note = format!(
        "note: {operand_source}: {}/m/apps/operand refuses an index whose platforms are not all present \
         (a sparse index); copied every platform instead of only linux/amd64, so that the digest clusters \
         pull it by ({}) stays the same",
        dest.addr, operand.digest
    );
    assert!(stderr.lines().any(|l| l == note), "{stderr}");
    // bundle 2 blobs, operand 4 platforms x 2, tool 1 platform x 2, catalog 2; the second
    // round for the refused operand finds its amd64 blobs already there.
    assert_eq!(counts(&stdout), (4, 14, 2, 0), "{stdout}");
    let d = client(&insecure, &cache);
    let at = |path: &str| -> oci_client::Reference {
        format!("{}/m/{path}", dest.addr).parse().unwrap()
    };
    let (body, _) = d
        .get_manifest(&at(&format!("apps/operand@{}", operand.digest)))
        .await
        .unwrap();
    assert_eq!(image::layout::digest_of(&body), operand.digest);
    for child in operand.children.values() {
        d.get_manifest(&at(&format!("apps/operand@{child}")))
            .await
            .unwrap();
    }
    // The tag-only image: a rewritten index naming arm64 alone, and only that is there.
    let (body, _) = d.get_manifest(&at("apps/tool:v1")).await.unwrap();
    assert_ne!(image::layout::digest_of(&body), tool.digest);
    let index: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let named: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["digest"].as_str().unwrap())
        .collect();
    assert_eq!(named, [tool.children["arm64"].as_str()]);
    for (arch, child) in &tool.children {
        let there = d
            .get_manifest(&at(&format!("apps/tool@{child}")))
            .await
            .is_ok();
        assert_eq!(there, *arch == "arm64", "{arch}");
    }
    let filtered_mib = mib(&stdout);

    // A platforms entry that is not {os, architecture}: refused before anything is copied.
    let plain = TestRegistry::plain();
    let bad = write_isc(
        work.path(),
        "bad.yaml",
        &addr,
        "    platforms: [linux/amd64]\n",
        "",
    );
    let insecure_plain = [addr.as_str(), plain.addr.as_str()];
    let to_plain = format!("docker://{}/m", plain.addr);
    let (code, _, stderr) = mirror(
        &["-c", &bad, "--to", &to_plain],
        &insecure_plain,
        work.path(),
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!(
            "error: {bad}: mirror.operators[0].platforms: expected {{os: OS, architecture: ARCH}}, found \"linux/amd64\""
        )),
        "{stderr}"
    );
    let p = client(&insecure_plain, &cache);
    let catalog: oci_client::Reference =
        format!("{}/m/apps/catalog:v1", plain.addr).parse().unwrap();
    assert!(p.resolve_digest(&catalog).await.is_err());

    // The same set without the filter, into that registry: every platform of both.
    let (code, stdout, stderr) = mirror(
        &["-c", &whole, "--to", &to_plain],
        &insecure_plain,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&stdout), (4, 20, 0, 0), "{stdout}");
    let whole_mib = mib(&stdout);

    // To disk, filtered: the archive takes the sparse index (the original bytes, amd64 only).
    let archive = work.path().join("archive");
    let to_disk = format!("file://{}", archive.display());
    let (code, stdout, stderr) =
        mirror(&["-c", &filtered, "--to", &to_disk], &[&addr], work.path());
    assert_eq!(code, 0, "{stderr}");
    // bundle 2, operand amd64 2, tool arm64 2; the rebuilt catalog is staged in the archive.
    assert_eq!(counts(&stdout), (4, 6, 2, 0), "{stdout}");
    let disk_mib = mib(&stdout);
    let blob = |digest: &str| {
        archive
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"))
    };
    assert!(blob(&operand.digest).is_file());
    for (arch, child) in &operand.children {
        assert_eq!(blob(child).is_file(), *arch == "amd64", "{arch}");
    }
    eprintln!(
        "platform filter, bytes copied: registry to registry {filtered_mib} MiB filtered \
         (docker-registry 2.8 keeps every platform of the image pulled by digest) vs \
         {whole_mib} MiB whole; to disk {disk_mib} MiB filtered"
    );

    // Disk to a 2.8 registry: the sparse index is refused and the archive cannot make it
    // whole; said so, and the catalog is held back.
    let last = TestRegistry::plain();
    let to_last = format!("docker://{}/m", last.addr);
    let (code, _, stderr) = mirror(
        &["--from", &to_disk, "--to", &to_last],
        &[&last.addr],
        work.path(),
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!(
            "  {operand_source}: {}/m/apps/operand refuses an index whose platforms are not all present \
             (a sparse index), and the archive holds only linux/amd64 of it: mirror it to disk again \
             without `platforms`, or mirror the archive to a registry that takes sparse indexes",
            last.addr
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "  {addr}/apps/catalog:v1: not copied, because other images failed"
        )),
        "{stderr}"
    );
    let l = client(&[&last.addr], &cache);
    let tool_there: oci_client::Reference =
        format!("{}/m/apps/tool:v1", last.addr).parse().unwrap();
    let (body, _) = l.get_manifest(&tool_there).await.unwrap();
    assert_ne!(image::layout::digest_of(&body), tool.digest);
}

/// The tags the archive's index.json lists.
fn archived_tags(archive: &Path) -> Vec<String> {
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(archive.join("index.json")).unwrap()).unwrap();
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["annotations"]["org.opencontainers.image.ref.name"].as_str())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_platform_filter_carries_the_signatures_of_what_it_copies() {
    let source = TestRegistry::plain();
    let work = tempfile::tempdir().unwrap();
    let addr = source.addr.clone();
    let signed = publish(&client(&[&addr], &work.path().join("cache")), &addr).await;
    let sig = |digest: &str| format!("app/multi:{}.sig", digest.replace(':', "-"));
    let (amd64, arm64) = (&signed.platforms[0], &signed.platforms[1]);
    for (name, image, index_signed) in [
        (
            "by-digest",
            format!("{addr}/app/multi@{}", signed.multi),
            true,
        ),
        // A rewritten index has a digest nothing signed.
        ("by-tag", format!("{addr}/app/multi:v1"), false),
    ] {
        let isc = work.path().join(format!("{name}.yaml"));
        write_image_set(
            &isc,
            &format!(
                "  additionalImages:
  - name: {image}
    platforms: [{{os: linux, architecture: amd64}}]
"
            ),
        );
        let archive = work.path().join(name);
        let to = format!("file://{}", archive.display());
        let (code, _, stderr) = mirror(
            &["-c", isc.to_str().unwrap(), "--to", &to],
            &[&addr],
            work.path(),
        );
        assert_eq!(code, 0, "{stderr}");
        let tags = archived_tags(&archive);
        assert_eq!(
            tags.contains(&sig(&signed.multi)),
            index_signed,
            "{name}: {tags:?}"
        );
        assert!(tags.contains(&sig(amd64)), "{name}: {tags:?}");
        assert!(!tags.contains(&sig(arm64)), "{name}: {tags:?}");
    }
}
