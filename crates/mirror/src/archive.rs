//! The archive of mirror-to-disk, in one of two forms.
//!
//! - A directory (no `archiveSize`): one content-addressed OCI image layout (`oci-layout`,
//!   `index.json`, `blobs/sha256/…`) holding every image of the plan, each listed in
//!   `index.json` under its destination (`<repository>:<tag>`), plus `mirror-plan.json`, the
//!   plan that disk-to-mirror follows without reaching any source registry. A later run into
//!   the same directory adds only the blobs it lacks and replaces the plan.
//! - Tar segments (`archiveSize`): the same layout is kept as the store in
//!   `working-dir/store`, filled by the copy as above, and then written out as
//!   `mirror_000001.tar`, … ([`pack`]); a later run writes only what the archives recorded in
//!   [`history`] lack. `--from` checks and extracts the segments into its own
//!   `working-dir/store` ([`unpack`]) and goes on from that directory.
mod history;
mod pack;
mod segment;
mod unpack;

use super::error::Error;
use super::plan::Plan;
use image::layout::{Layout, MAX_MANIFEST_BYTES, replace_file};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) use pack::pack;

pub(crate) const PLAN_FILE: &str = "mirror-plan.json";
const INDEX: &str = "index.json";
const LAYOUT_MARKER: &str = "oci-layout";
/// The state kept beside tar segments: the store and the record of archives written.
const WORKING_DIR: &str = "working-dir";

/// Where the layout of an archive of tar segments in `dir` is kept.
fn store_dir(dir: &Path) -> PathBuf {
    dir.join(WORKING_DIR).join("store")
}

/// Opens the directory form for writing; refused where tar segments are.
pub(crate) fn create(dir: &Path) -> Result<Layout, Error> {
    if let Some((_, path)) = segment::segments_in(dir)?.first() {
        return Err(Error::Usage(format!(
            "{}: this directory holds an archive of tar segments (archiveSize); set archiveSize again, or write to another directory",
            path.display()
        )));
    }
    Ok(Layout::create(dir)?)
}

/// Opens the store of an archive of tar segments in `dir` for a new run, holding `dir` so
/// that no other run writes there meanwhile, and removes what an interrupted run left. The
/// store's index is emptied: it lists what this run copies, which is what is archived.
pub(crate) fn create_store(dir: &Path) -> Result<(Layout, std::fs::File), Error> {
    if dir.join(LAYOUT_MARKER).exists() {
        return Err(Error::Usage(format!(
            "{}: this directory holds an archive directory (written without archiveSize); remove archiveSize, or write to another directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(Error::io(dir.display()))?;
    let lock = std::fs::File::open(dir).map_err(Error::io(dir.display()))?;
    if lock.try_lock().is_err() {
        return Err(Error::Usage(format!(
            "{}: another `mirror` run is writing this archive",
            dir.display()
        )));
    }
    for entry in std::fs::read_dir(dir).map_err(Error::io(dir.display()))? {
        let entry = entry.map_err(Error::io(dir.display()))?;
        if entry.file_name().to_string_lossy().starts_with(".tmp") {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(Error::io(path.display()))?;
        }
    }
    let store = Layout::create(&store_dir(dir))?;
    let mut index = store.index()?;
    index["manifests"] = serde_json::json!([]);
    store.write_index(&index)?;
    Ok((store, lock))
}

/// The store an archive of tar segments was packed from, for [`pack`].
pub(crate) fn open_store(dir: &Path) -> Result<Layout, Error> {
    Ok(Layout::open(&store_dir(dir))?)
}

/// Opens an archive of either form for `--from`. Tar segments are checked whole, then
/// extracted into `<dir>/working-dir/store`, which is then read as the directory form.
pub(crate) fn open(dir: &Path) -> Result<(Layout, Plan), Error> {
    let found = segment::segments_in(dir)?;
    if found.is_empty() {
        return open_directory(dir);
    }
    if dir.join(LAYOUT_MARKER).exists() {
        return Err(Error::Usage(format!(
            "{}: holds both an archive directory (oci-layout) and tar segments (mirror_*.tar); keep one of them",
            dir.display()
        )));
    }
    let segments = unpack::check(dir, found)?;
    let store_dir = store_dir(dir);
    let store = Layout::create(&store_dir)?;
    unpack::extract(&segments, &store)?;
    if let Some(after) = &segments.after {
        let contents = contents(&store)?;
        let mut absent = 0;
        for (digest, size) in &contents.blobs {
            if !store.holds(digest, Some(*size))? {
                absent += 1;
            }
        }
        if absent > 0 {
            eprintln!(
                "archive {} is differential: {absent} blobs it leaves out were carried by archive {after} (or earlier ones) and must be at the destination already",
                segments.archive
            );
        }
    }
    drop(store);
    open_directory(&store_dir)
}

fn open_directory(dir: &Path) -> Result<(Layout, Plan), Error> {
    let layout = Layout::open(dir)?;
    let path = dir.join(PLAN_FILE);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(source) => return Err(Error::NoPlan { path, source }),
    };
    let plan = serde_json::from_slice(&text).map_err(|source| Error::Plan { path, source })?;
    Ok((layout, plan))
}

/// Records the plan once its images are in the layout (whose index.json is on the disk by
/// then); an interrupted write leaves the previous plan.
pub(crate) fn write_plan(dir: &Path, plan: &Plan) -> Result<(), Error> {
    let path = dir.join(PLAN_FILE);
    let text = serde_json::to_vec_pretty(plan).map_err(|source| Error::Plan {
        path: path.clone(),
        source,
    })?;
    Ok(replace_file(&path, &text)?)
}

/// The name an image is listed under in the archive's index.json.
pub(crate) fn ref_name(repository: &str, tag: &str) -> String {
    format!("{repository}:{tag}")
}

/// What a layout's index.json reaches: every manifest (indexes and their children) and every
/// blob those name (configs, layers), by digest with their sizes.
#[derive(Debug, Default)]
struct Contents {
    manifests: BTreeMap<String, u64>,
    blobs: BTreeMap<String, u64>,
}

fn contents(layout: &Layout) -> Result<Contents, Error> {
    let descriptors = |v: &serde_json::Value, field: &str| -> Vec<(String, u64)> {
        let list = match &v[field] {
            serde_json::Value::Array(list) => list.iter().collect(),
            one @ serde_json::Value::Object(_) => vec![one],
            _ => vec![],
        };
        list.into_iter()
            .filter_map(|d| Some((d["digest"].as_str()?.to_owned(), d["size"].as_u64()?)))
            .collect()
    };
    let mut out = Contents::default();
    let mut pending = descriptors(&layout.index()?, "manifests");
    while let Some((digest, size)) = pending.pop() {
        if out.manifests.insert(digest.clone(), size).is_some() {
            continue;
        }
        let body = layout.read_blob(&digest, MAX_MANIFEST_BYTES)?;
        let v: serde_json::Value = serde_json::from_slice(&body).map_err(|e| Error::Archive {
            path: layout.blob_path(&digest).unwrap_or_default(),
            problem: format!("manifest {digest} does not parse: {e}"),
        })?;
        pending.extend(descriptors(&v, "manifests"));
        for field in ["config", "layers", "blobs"] {
            out.blobs.extend(descriptors(&v, field));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ImageKind, PlannedImage};

    /// A store holding one image of a config and three 3000-byte layers, with its plan.
    fn one_image(dir: &Path) -> (Layout, std::fs::File) {
        let (store, lock) = create_store(dir).unwrap();
        let descriptor = |data: &[u8]| {
            let digest = store.write_blob(data).unwrap();
            serde_json::json!({"mediaType": "x", "digest": digest, "size": data.len()})
        };
        let layers: Vec<_> = (0..3u8).map(|i| descriptor(&[i; 3000])).collect();
        let manifest = serde_json::json!({
            "schemaVersion": 2,
            "config": descriptor(b"{}"),
            "layers": layers,
        });
        store
            .add_manifest(
                manifest.to_string().as_bytes(),
                oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
                Some("r:t"),
            )
            .unwrap();
        write_plan(store.root(), &Plan::default()).unwrap();
        (store, lock)
    }

    #[test]
    fn segments_round_trip_within_the_size_and_a_renamed_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _lock) = one_image(dir.path());
        // Two 3000-byte layers and their descriptor take more than 8192 bytes: one a tar.
        let packed = pack(dir.path(), &store, 8192).unwrap();
        assert_eq!((packed.blobs, packed.bytes, packed.left_out), (4, 9002, 0));
        let tars = segment::segments_in(dir.path()).unwrap();
        assert_eq!(tars.len() as u32, packed.segments);
        assert!(packed.segments >= 3, "{packed:?}");
        for (_, path) in &tars {
            assert!(std::fs::metadata(path).unwrap().len() <= 8192);
        }
        // Carried elsewhere: every blob, the index and the plan come back.
        let site = tempfile::tempdir().unwrap();
        for (_, path) in &tars {
            std::fs::copy(path, site.path().join(path.file_name().unwrap())).unwrap();
        }
        let (layout, plan) = open(site.path()).unwrap();
        assert_eq!(plan, Plan::default());
        let carried = contents(&layout).unwrap();
        assert_eq!(carried.blobs, contents(&store).unwrap().blobs);
        for (digest, size) in &carried.blobs {
            assert!(layout.holds(digest, Some(*size)).unwrap());
        }
        assert_eq!(
            layout.find_manifest(Some("r:t")).unwrap().1,
            oci_client::manifest::OCI_IMAGE_MEDIA_TYPE
        );
        // The next archive of the same content carries nothing but the manifest and metadata.
        let again = pack(dir.path(), &store, 8192).unwrap();
        assert_eq!((again.segments, again.blobs, again.left_out), (1, 0, 4));
        std::fs::rename(
            site.path().join("mirror_000002.tar"),
            site.path().join("mirror_000009.tar"),
        )
        .unwrap();
        assert_eq!(
            open(site.path()).unwrap_err().to_string(),
            format!(
                "{}: holds segment 2 of {} of archive {} (renamed?)",
                site.path().join("mirror_000009.tar").display(),
                packed.segments,
                packed.id
            )
        );
        std::fs::write(site.path().join("mirror_000009.tar"), b"").unwrap();
        assert_eq!(
            open(site.path()).unwrap_err().to_string(),
            format!(
                "{}: not a segment of a mirror archive (it is empty)",
                site.path().join("mirror_000009.tar").display(),
            )
        );
    }

    #[test]
    fn the_two_forms_do_not_mix_and_one_run_writes_segments_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".tmpSEGMENT"), "left by a killed run").unwrap();
        let (store, lock) = create_store(dir.path()).unwrap();
        assert!(!dir.path().join(".tmpSEGMENT").exists());
        assert_eq!(store.root(), dir.path().join("working-dir/store"));
        assert_eq!(
            create_store(dir.path()).unwrap_err().to_string(),
            format!(
                "{}: another `mirror` run is writing this archive",
                dir.path().display()
            )
        );
        drop(lock);
        std::fs::write(dir.path().join("mirror_000001.tar"), "").unwrap();
        assert!(
            create(dir.path())
                .unwrap_err()
                .to_string()
                .ends_with("mirror_000001.tar: this directory holds an archive of tar segments (archiveSize); set archiveSize again, or write to another directory")
        );
        let plain = tempfile::tempdir().unwrap();
        create(plain.path()).unwrap();
        assert!(
            create_store(plain.path())
                .unwrap_err()
                .to_string()
                .ends_with("this directory holds an archive directory (written without archiveSize); remove archiveSize, or write to another directory")
        );
    }

    #[test]
    fn the_plan_round_trips_and_a_foreign_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path()).unwrap();
        let plan = Plan {
            images: vec![PlannedImage {
                source: "quay.io/ns/op:v1".into(),
                kind: ImageKind::RelatedImage,
                digest: "sha256:00".into(),
                repository: "ns/op".into(),
                tag: "v1".into(),
                by_digest: false,
                platforms: Vec::new(),
                subject: None,
            }],
            blocked: vec![],
        };
        write_plan(dir.path(), &plan).unwrap();
        assert_eq!(open(dir.path()).unwrap().1, plan);
        let other = tempfile::tempdir().unwrap();
        assert!(
            open(other.path())
                .unwrap_err()
                .to_string()
                .contains("not an OCI image layout")
        );
        create(other.path()).unwrap();
        assert!(
            open(other.path())
                .unwrap_err()
                .to_string()
                .contains("mirror-plan.json")
        );
    }
}
