//! Building images without a container engine: one gzip tar layer made from directories, a
//! config carrying the labels, an OCI manifest. The layer is reproducible (sorted entries,
//! zero times and owners), so building the same content twice gives the same digests.
use super::error::{Error, ErrorKind};
use super::layout::digest_of;
use flate2::Compression;
use flate2::write::GzEncoder;
use oci_client::manifest::{
    IMAGE_CONFIG_MEDIA_TYPE, IMAGE_LAYER_GZIP_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE,
};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// An image ready to be pushed or written to a layout.
pub struct BuiltImage {
    pub config: Vec<u8>,
    pub layer: Vec<u8>,
    pub manifest: Vec<u8>,
}

impl BuiltImage {
    #[cfg(test)]
    fn manifest_digest(&self) -> String {
        digest_of(&self.manifest)
    }
}

/// Builds an image whose one layer holds each `(source directory, path in the image)`.
pub fn build_image(
    contents: &[(&Path, &str)],
    labels: &BTreeMap<String, String>,
) -> Result<BuiltImage, Error> {
    let mut tar = tar::Builder::new(Vec::new());
    tar.follow_symlinks(false);
    for (source, target) in contents {
        let target = target.trim_matches('/');
        append_dir(&mut tar, source, target)?;
    }
    let tar = tar.into_inner().map_err(|e| io("building the layer", e))?;
    let diff_id = format!("sha256:{:x}", Sha256::digest(&tar));
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&tar)
        .map_err(|e| io("compressing the layer", e))?;
    let layer = gz.finish().map_err(|e| io("compressing the layer", e))?;
    let config = json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": concat!("olm-registry ", env!("CARGO_PKG_VERSION"))}],
    })
    .to_string()
    .into_bytes();
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_IMAGE_MEDIA_TYPE,
        "config": {"mediaType": IMAGE_CONFIG_MEDIA_TYPE, "digest": digest_of(&config), "size": config.len()},
        "layers": [{"mediaType": IMAGE_LAYER_GZIP_MEDIA_TYPE, "digest": digest_of(&layer), "size": layer.len()}],
    })
    .to_string()
    .into_bytes();
    Ok(BuiltImage {
        config,
        layer,
        manifest,
    })
}

/// Reading the contents or writing the layer failed; `what` says which.
fn io(what: impl std::fmt::Display, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("{what}: {e}"))
}

fn append_dir(tar: &mut tar::Builder<Vec<u8>>, dir: &Path, prefix: &str) -> Result<(), Error> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io(dir.display(), e))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Directory);
    header.set_mode(0o755);
    header.set_size(0);
    header.set_mtime(0);
    if !prefix.is_empty() {
        tar.append_data(&mut header, format!("{prefix}/"), std::io::empty())
            .map_err(|e| io(dir.display(), e))?;
    }
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let in_image = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let meta = std::fs::metadata(&path).map_err(|e| io(path.display(), e))?;
        if meta.is_dir() {
            append_dir(tar, &path, &in_image)?;
        } else {
            let data = std::fs::read(&path).map_err(|e| io(path.display(), e))?;
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(data.len() as u64);
            header.set_mtime(0);
            tar.append_data(&mut header, &in_image, data.as_slice())
                .map_err(|e| io(path.display(), e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_content_builds_the_same_image() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/catalog.json"), "{}").unwrap();
        let labels = BTreeMap::from([("k".to_string(), "v".to_string())]);
        let a = build_image(&[(dir.path(), "/configs")], &labels).unwrap();
        let b = build_image(&[(dir.path(), "/configs")], &labels).unwrap();
        assert_eq!(a.manifest_digest(), b.manifest_digest());
        let config: serde_json::Value = serde_json::from_slice(&a.config).unwrap();
        assert_eq!(config["config"]["Labels"]["k"], "v");

        let out = tempfile::tempdir().unwrap();
        super::super::unpack::unpack_layer(
            a.layer.as_slice(),
            out.path(),
            Default::default(),
            &mut Default::default(),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("configs/pkg/catalog.json")).unwrap(),
            "{}"
        );
    }
}
