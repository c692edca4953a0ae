//! OCI image layout directories (`oci-layout`, `index.json`, `blobs/sha256/…`): a source and
//! target for disconnected use, and the shape of our content-addressed pull cache.
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

const REF_NAME: &str = "org.opencontainers.image.ref.name";

#[derive(Debug)]
pub struct Layout {
    root: PathBuf,
}

fn io_err(path: &Path, e: io::Error) -> String {
    format!("{}: {e}", path.display())
}

/// `sha256:<64 hex>` → the hex part, refusing anything else (it becomes a file name).
fn sha256_hex(digest: &str) -> Result<&str, String> {
    match digest.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => Ok(hex),
        _ => Err(format!(
            "unsupported digest {digest:?} (expected sha256:<64 hex digits>)"
        )),
    }
}

pub fn digest_of(data: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(data))
}

impl Layout {
    /// Opens a layout, creating an empty one when the directory is new.
    pub fn create(root: &Path) -> Result<Layout, String> {
        fs::create_dir_all(root.join("blobs/sha256")).map_err(|e| io_err(root, e))?;
        let marker = root.join("oci-layout");
        if !marker.exists() {
            fs::write(&marker, r#"{"imageLayoutVersion":"1.0.0"}"#)
                .map_err(|e| io_err(&marker, e))?;
        }
        let index = root.join("index.json");
        if !index.exists() {
            let empty = json!({"schemaVersion": 2, "mediaType": oci_client::manifest::OCI_IMAGE_INDEX_MEDIA_TYPE, "manifests": []});
            fs::write(&index, empty.to_string()).map_err(|e| io_err(&index, e))?;
        }
        Ok(Layout {
            root: root.to_owned(),
        })
    }

    /// Opens an existing layout.
    pub fn open(root: &Path) -> Result<Layout, String> {
        if !root.join("oci-layout").is_file() {
            return Err(format!(
                "{}: not an OCI image layout (no oci-layout file)",
                root.display()
            ));
        }
        Ok(Layout {
            root: root.to_owned(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn blob_path(&self, digest: &str) -> Result<PathBuf, String> {
        Ok(self.root.join("blobs/sha256").join(sha256_hex(digest)?))
    }

    pub fn has_blob(&self, digest: &str) -> bool {
        self.blob_path(digest).is_ok_and(|p| p.is_file())
    }

    /// Writes a blob from a stream, verifying it against `digest` before it becomes visible.
    pub fn ingest_blob(&self, digest: &str, mut data: impl Read) -> Result<PathBuf, String> {
        let path = self.blob_path(digest)?;
        let dir = path.parent().unwrap_or(&self.root);
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io_err(dir, e))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 << 10];
        loop {
            let n = data
                .read(&mut buf)
                .map_err(|e| format!("reading blob {digest}: {e}"))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            tmp.write_all(&buf[..n])
                .map_err(|e| io_err(tmp.path(), e))?;
        }
        let actual = format!("sha256:{:x}", hasher.finalize());
        if actual != digest {
            return Err(format!(
                "blob {digest} does not match its digest (content is {actual})"
            ));
        }
        tmp.persist(&path).map_err(|e| io_err(&path, e.error))?;
        Ok(path)
    }

    /// A temporary file beside the blobs, for a download that is moved into place once
    /// verified.
    pub fn temp_blob(&self) -> Result<tempfile::NamedTempFile, String> {
        let dir = self.root.join("blobs/sha256");
        tempfile::NamedTempFile::new_in(&dir).map_err(|e| io_err(&dir, e))
    }

    /// Moves a download whose digest the downloader has already checked into place.
    pub fn adopt_verified_blob(
        &self,
        digest: &str,
        tmp: tempfile::NamedTempFile,
    ) -> Result<PathBuf, String> {
        let path = self.blob_path(digest)?;
        tmp.persist(&path).map_err(|e| io_err(&path, e.error))?;
        Ok(path)
    }

    pub fn write_blob(&self, data: &[u8]) -> Result<String, String> {
        let digest = digest_of(data);
        if !self.has_blob(&digest) {
            self.ingest_blob(&digest, data)?;
        }
        Ok(digest)
    }

    /// Reads a blob whole, verifying its digest (manifests and configs are small).
    pub fn read_blob(&self, digest: &str) -> Result<Vec<u8>, String> {
        let path = self.blob_path(digest)?;
        let data = fs::read(&path).map_err(|e| io_err(&path, e))?;
        let actual = digest_of(&data);
        if actual != digest {
            return Err(format!(
                "blob {digest} in {} is corrupt (content is {actual})",
                self.root.display()
            ));
        }
        Ok(data)
    }

    fn index(&self) -> Result<Value, String> {
        let path = self.root.join("index.json");
        let text = fs::read(&path).map_err(|e| io_err(&path, e))?;
        serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Stores a manifest and lists it in index.json under `tag` (replacing that tag).
    pub fn add_manifest(
        &self,
        manifest: &[u8],
        media_type: &str,
        tag: Option<&str>,
    ) -> Result<String, String> {
        let digest = self.write_blob(manifest)?;
        let mut index = self.index()?;
        let entry = json!({
            "mediaType": media_type,
            "digest": digest,
            "size": manifest.len(),
            "annotations": tag.map(|t| json!({REF_NAME: t})).unwrap_or(json!({})),
        });
        let manifests = index["manifests"]
            .as_array_mut()
            .ok_or("index.json has no manifests list")?;
        if let Some(tag) = tag {
            manifests.retain(|m| m["annotations"][REF_NAME].as_str() != Some(tag));
        }
        manifests.push(entry);
        let path = self.root.join("index.json");
        fs::write(&path, index.to_string()).map_err(|e| io_err(&path, e))?;
        Ok(digest)
    }

    /// The (digest, media type) of the manifest named `tag`, or of the only one.
    pub fn find_manifest(&self, tag: Option<&str>) -> Result<(String, String), String> {
        let index = self.index()?;
        let manifests = index["manifests"].as_array().cloned().unwrap_or_default();
        let found: Vec<&Value> = match tag {
            Some(tag) => manifests
                .iter()
                .filter(|m| m["annotations"][REF_NAME].as_str() == Some(tag))
                .collect(),
            None => manifests.iter().collect(),
        };
        match (found.as_slice(), tag) {
            ([one], _) => Ok((
                one["digest"].as_str().unwrap_or_default().to_owned(),
                one["mediaType"].as_str().unwrap_or_default().to_owned(),
            )),
            ([], Some(tag)) => Err(format!("{}: no image tagged {tag:?}", self.root.display())),
            ([], None) => Err(format!(
                "{}: the layout holds no image",
                self.root.display()
            )),
            (_, _) => Err(format!(
                "{}: the layout holds several images; name one with oci:DIR:TAG",
                self.root.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_verified_and_manifests_found_by_tag() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let d = layout.write_blob(b"hello").unwrap();
        assert_eq!(
            d,
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(layout.read_blob(&d).unwrap(), b"hello");
        let wrong = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        assert_eq!(
            layout.ingest_blob(wrong, &b"hello"[..]).unwrap_err(),
            format!("blob {wrong} does not match its digest (content is {d})")
        );
        assert!(!layout.has_blob(wrong));
        assert!(layout.blob_path("sha256:../../etc").is_err());

        let m1 = layout
            .add_manifest(
                b"{\"a\":1}",
                "application/vnd.oci.image.manifest.v1+json",
                Some("v1"),
            )
            .unwrap();
        assert_eq!(layout.find_manifest(None).unwrap().0, m1);
        let m2 = layout
            .add_manifest(
                b"{\"a\":2}",
                "application/vnd.oci.image.manifest.v1+json",
                Some("v2"),
            )
            .unwrap();
        assert_eq!(layout.find_manifest(Some("v2")).unwrap().0, m2);
        assert!(
            layout
                .find_manifest(None)
                .unwrap_err()
                .ends_with("name one with oci:DIR:TAG")
        );
        assert!(
            layout
                .find_manifest(Some("v3"))
                .unwrap_err()
                .ends_with("no image tagged \"v3\"")
        );

        std::fs::write(layout.blob_path(&d).unwrap(), b"tampered").unwrap();
        assert!(layout.read_blob(&d).unwrap_err().contains("is corrupt"));
        assert!(Layout::open(&dir.path().join("nope")).is_err());
    }
}
