//! `archiveSize`: an archive to disk written as `mirror_NNNNNN.tar` segments of at most that
//! size, a second run that writes only what the first archive lacks, both imported with the
//! source gone, and segments that are missing, truncated or from another archive refused
//! before anything is written.
use super::*;
use std::collections::BTreeSet;

/// `archiveSize` of the tests, in GiB: 614.4 KiB, so that two 300 KiB layers share a segment
/// and the 1 MiB layer needs one of its own.
const ARCHIVE_SIZE: &str = "0.0006";
const LIMIT: u64 = 644_245;

/// A segment's descriptor, its first tar entry.
fn descriptor(path: &Path) -> serde_json::Value {
    let mut tar = tar::Archive::new(std::fs::File::open(path).unwrap());
    let mut first = tar.entries().unwrap().next().unwrap().unwrap();
    assert_eq!(
        first.path().unwrap().to_str().unwrap(),
        "mirror-segment.json"
    );
    serde_json::from_reader(&mut first).unwrap()
}

/// The segment files of a directory, by name.
fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tar"))
        .collect();
    found.sort();
    found
}

/// Every blob the segments carry, by digest.
fn blobs(dir: &Path) -> BTreeSet<String> {
    segments(dir)
        .iter()
        .flat_map(|s| {
            descriptor(s)["entries"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["name"].as_str()?.strip_prefix("blobs/sha256/"))
                .map(|hex| format!("sha256:{hex}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A copy of an archive's segments, as carried to a disconnected site.
fn carry(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for s in segments(from) {
        std::fs::copy(&s, to.join(s.file_name().unwrap())).unwrap();
    }
}

fn sized_config(work: &Path, host: &str, extra: &[&str]) -> PathBuf {
    let path = write_config(work, host, extra);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("archiveSize: {ARCHIVE_SIZE}\n{text}")).unwrap();
    path
}

/// The blobs of an image: its manifest, config and layers.
async fn image_blobs(registry: &Registry, reference: &str) -> BTreeSet<String> {
    let r: oci_client::Reference = reference.parse().unwrap();
    let (body, _) = registry.get_manifest(&r).await.unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let mut out = BTreeSet::from([image::layout::digest_of(&body)]);
    out.insert(manifest["config"]["digest"].as_str().unwrap().to_owned());
    for layer in manifest["layers"].as_array().unwrap() {
        out.insert(layer["digest"].as_str().unwrap().to_owned());
    }
    out
}

#[tokio::test]
async fn archives_fit_the_size_and_a_second_run_carries_only_what_is_new() {
    let (mut source, target, fresh) = (
        TestRegistry::plain(),
        TestRegistry::plain(),
        TestRegistry::plain(),
    );
    let Some(src) = publish(&source.addr, &source.addr).await else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let registry = client(&[source.addr.as_str()], &work.path().join("cache"));
    // Two 300 KiB images beside the 1 MiB one, so that several segments are needed.
    let mut fill = Vec::new();
    for (name, seed) in [("fill-a", 11), ("fill-b", 12)] {
        let image = image_of(&[(name, noise(300 << 10, seed))]);
        let at = format!("{}/tools/{name}:v1", source.addr);
        registry
            .push(&image, &ImageRef::parse(&at).unwrap())
            .await
            .unwrap();
        fill.push(format!("{}/tools/{name}:v1", src.host));
    }
    let fill: Vec<&str> = fill.iter().map(String::as_str).collect();
    let archive = work.path().join("archive");
    let to_disk = format!("file://{}", archive.display());
    let insecure = [source.addr.as_str()];

    // An archiveSize of 0 or less is refused before anything is written.
    for size in ["0", "-1"] {
        let config = write_config(work.path(), &src.host, &[]);
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, format!("archiveSize: {size}\n{text}")).unwrap();
        let (code, _, stderr) = mirror(
            &["-c", config.to_str().unwrap(), "--to", &to_disk],
            &insecure,
            work.path(),
        );
        assert_eq!(code, 1, "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{}: invalid ImageSetConfiguration:\n  archiveSize: expected a size in GiB greater than 0 (such as 4 or 0.5), found {size}",
                config.display()
            )),
            "{stderr}"
        );
        assert!(!archive.exists());
    }
    let config = sized_config(work.path(), &src.host, &fill);
    let (code, stdout, stderr) = mirror(
        &["-c", config.to_str().unwrap(), "--to", &to_disk],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&stdout).0, 9, "{stdout}");
    let first = segments(&archive);
    assert!(first.len() >= 3, "{first:?}");
    let id = descriptor(&first[0])["archive"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stdout.contains(&format!(
            "archive {id}: {} segments in {}, ",
            first.len(),
            archive.display()
        )),
        "{stdout}"
    );
    // The 1 MiB layer gets the first segment to itself, with a warning; every other segment
    // fits the limit; all are segments of one archive, numbered in order.
    let big_hex = src.big_layer.trim_start_matches("sha256:");
    let big_size = std::fs::metadata(archive.join("working-dir/store/blobs/sha256").join(big_hex))
        .unwrap()
        .len();
    assert!(
        stderr.contains(&format!(
            "warning: blobs/sha256/{big_hex} ({big_size} bytes) is larger than archiveSize ({LIMIT} bytes): mirror_000001.tar holds it alone and is larger too"
        )),
        "{stderr}"
    );
    for (n, path) in (1..).zip(&first) {
        let d = descriptor(path);
        assert_eq!(
            path.file_name().unwrap().to_str().unwrap(),
            format!("mirror_{n:06}.tar")
        );
        assert_eq!(
            (
                d["archive"].as_str(),
                d["segment"].as_u64(),
                d["segments"].as_u64()
            ),
            (Some(id.as_str()), Some(n), Some(first.len() as u64))
        );
        assert!(d.get("after").is_none());
        let size = std::fs::metadata(path).unwrap().len();
        if n == 1 {
            assert_eq!(d["entries"].as_array().unwrap().len(), 1, "{d}");
            assert!(size > LIMIT);
        } else {
            assert!(size <= LIMIT, "{}: {size}", path.display());
        }
    }
    // The directory holds the segments and the state kept for the next run, no layout.
    assert!(!archive.join("oci-layout").exists());
    assert!(archive.join("working-dir/history.json").is_file());
    let carried_first = blobs(&archive);
    carry(&archive, &work.path().join("carry-1"));

    // A second run with one more image writes only what the first archive lacks.
    let new_at = format!("{}/tools/new:v1", source.addr);
    let new_digest = registry
        .push(
            &image_of(&[("new", b"new tool".to_vec())]),
            &ImageRef::parse(&new_at).unwrap(),
        )
        .await
        .unwrap();
    let new_blobs = image_blobs(&registry, &new_at).await;
    let new_ref = format!("{}/tools/new:v1", src.host);
    let mut extra = fill.clone();
    extra.push(&new_ref);
    let config = sized_config(work.path(), &src.host, &extra);
    let (code, stdout, stderr) = mirror(
        &["-c", config.to_str().unwrap(), "--to", &to_disk],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    let second = segments(&archive);
    let id2 = descriptor(&second[0])["archive"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(id2, id);
    for path in &second {
        assert_eq!(descriptor(path)["after"].as_str(), Some(id.as_str()));
        assert!(std::fs::metadata(path).unwrap().len() <= LIMIT);
    }
    let carried_second = blobs(&archive);
    assert_eq!(
        carried_second
            .difference(&carried_first)
            .cloned()
            .collect::<BTreeSet<_>>(),
        new_blobs
    );
    // Of the first archive's blobs, only the manifests travel again (the 18 layers and
    // configs of the first run stay behind).
    assert!(!carried_second.contains(&src.big_layer));
    assert!(
        stdout.contains(&format!(
            "archive {id2}: {} segments in {}, 2 blobs (0.0 MiB); 18 blobs left out that earlier archives carried (a differential archive)",
            second.len(),
            archive.display()
        )),
        "{stdout}"
    );
    carry(&archive, &work.path().join("carry-2"));

    // The source goes away. Damaged sets of segments are refused before anything is written.
    source.stop();
    let to_target = format!("docker://{}/pfx", target.addr);
    let import = |dir: &Path, to: &str, registry: &str| {
        mirror(
            &["--from", &format!("file://{}", dir.display()), "--to", to],
            &[registry],
            work.path(),
        )
    };
    let bad = work.path().join("bad");
    let refused = |setup: &dyn Fn(&Path), expected: String| {
        let _ = std::fs::remove_dir_all(&bad);
        carry(&work.path().join("carry-1"), &bad);
        setup(&bad);
        let (code, _, stderr) = import(&bad, &to_target, &target.addr);
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.contains(&expected), "{expected}\n{stderr}");
        assert!(!bad.join("working-dir").exists(), "nothing extracted");
    };
    refused(
        &|dir| std::fs::remove_file(dir.join("mirror_000002.tar")).unwrap(),
        format!(
            "{}: archive {id} has {} segments, but mirror_000002.tar is missing (carry every mirror_*.tar of an archive together)",
            bad.display(),
            first.len()
        ),
    );
    let last = bad.join(first.last().unwrap().file_name().unwrap());
    let last_len = std::fs::metadata(work.path().join("carry-1").join(last.file_name().unwrap()))
        .unwrap()
        .len();
    refused(
        &|_| {
            let file = std::fs::File::options().write(true).open(&last).unwrap();
            file.set_len(last_len - 1000).unwrap();
        },
        format!(
            "{}: truncated: it has {} bytes of the {last_len} its entries take (copy it again)",
            last.display(),
            last_len - 1000
        ),
    );
    refused(
        &|dir| {
            std::fs::copy(
                work.path().join("carry-2/mirror_000001.tar"),
                dir.join("mirror_000002.tar"),
            )
            .unwrap();
        },
        format!(
            "{}: a segment of archive {id2}, not of archive {id} like mirror_000001.tar (carry each archive in its own directory)",
            bad.join("mirror_000002.tar").display()
        ),
    );
    // A blob whose bytes changed in transit is found as it is extracted; nothing is pushed.
    let _ = std::fs::remove_dir_all(&bad);
    carry(&work.path().join("carry-1"), &bad);
    let damaged = bad.join("mirror_000001.tar");
    let mut bytes = std::fs::read(&damaged).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] = !bytes[middle];
    std::fs::write(&damaged, bytes).unwrap();
    let (code, _, stderr) = import(&bad, &to_target, &target.addr);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: blob {b} does not match its digest (content is sha256:",
            damaged.display(),
            b = src.big_layer
        )),
        "{stderr}"
    );
    assert!(!bad.join("working-dir/store/mirror-plan.json").exists());
    assert!(
        !bad.join("working-dir/store/blobs/sha256")
            .join(big_hex)
            .exists()
    );
    let dest = client(&[target.addr.as_str()], &work.path().join("cache-target"));
    let catalog_at: oci_client::Reference = format!("{}/pfx/olm/catalog:v1", target.addr)
        .parse()
        .unwrap();
    assert!(dest.resolve_digest(&catalog_at).await.is_err());

    // The first archive, then the differential one carried alone.
    let (code, stdout, stderr) = import(&work.path().join("carry-1"), &to_target, &target.addr);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&stdout), (9, 18, 0, 2), "{stdout}");
    let root = format!("{}/pfx", target.addr);
    assert_mirrored(
        &src,
        &root,
        &[target.addr.as_str()],
        &work.path().join("c1"),
    )
    .await;
    let (code, stdout, stderr) = import(&work.path().join("carry-2"), &to_target, &target.addr);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(counts(&stdout), (10, 2, 20, 0), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "archive {id2} is differential: 18 blobs it leaves out were carried by archive {id} (or earlier ones) and must be at the destination already"
        )),
        "{stderr}"
    );
    let new_at: oci_client::Reference = format!("{root}/tools/new:v1").parse().unwrap();
    assert_eq!(dest.resolve_digest(&new_at).await.unwrap(), new_digest);

    // Alone into a registry that never had the first archive, it cannot be complete.
    let (code, stdout, stderr) = import(
        &work.path().join("carry-2"),
        &format!("docker://{}/pfx", fresh.addr),
        &fresh.addr,
    );
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    // Each image names the first blob that is neither in the archive nor at the destination.
    let big = stderr
        .lines()
        .find(|l| l.starts_with(&format!("  {}/olm/big:v1: blob sha256:", src.host)))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        big.ends_with(&format!(
            " is neither in the archive nor at {}/pfx/olm/big",
            fresh.addr
        )),
        "{big}"
    );
    assert!(!stderr.contains("retrying"), "{stderr}");
}
