//! OCI image layout directories (`oci-layout`, `index.json`, `blobs/sha256/…`): a source and
//! target for disconnected use, and the shape of our content-addressed pull cache.
//!
//! Writing one (a mirror archive, the pull cache) is safe against interruption and against
//! the disk losing what was not flushed:
//! - a blob is written to a `.tmp*` file beside the blobs, flushed, and renamed under its
//!   digest; `index.json` is replaced the same way, after the blobs directory is flushed, so
//!   it never names a blob whose bytes may be lost;
//! - `.tmp*` files left by an interrupted run are removed by the next process that opens the
//!   layout for writing while no other process has it open (every writer holds a shared lock
//!   on the layout directory; cleaning takes it exclusively, so a run in progress keeps its
//!   files);
//! - files are created with mode 0666 and directories 0777, less the umask (0644/0755 under
//!   the usual umask), as `cp` and oc-mirror do: an archive is readable by whoever carries it;
//! - a blob already present is trusted only once its size matches and its digest has been
//!   checked: the check is recorded in `.verified/<hex>` with the file's size and mtime, and
//!   redone whenever those change (a truncated or rewritten blob), so a rerun hashes only what
//!   changed. A blob that fails is removed and fetched again.
//!
//! Errors are [`Error`]s of the kind the failure is: `Io` for the files themselves,
//! `InvalidContent` for what they hold (a corrupt blob, a bad digest, a malformed index),
//! `NotFound` for a directory that is no layout or an image it does not hold.
use super::error::{Error, ErrorKind};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// The largest manifest or image index read, as registries (distribution, containerd) cap
/// them.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// The largest image config read: configs are small JSON like manifests, with some room for
/// long histories.
pub(crate) const MAX_CONFIG_BYTES: u64 = 8 << 20;
/// The largest `index.json` read: a mirror archive lists every image it holds there.
const MAX_INDEX_BYTES: u64 = 64 << 20;

#[derive(Debug)]
pub struct Layout {
    root: PathBuf,
    /// A shared lock on the root while this process may write (see the module comment).
    _writing: Option<fs::File>,
}

fn io_err(path: &Path, e: io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("{}: {e}", path.display()))
}

/// `sha256:<64 hex>` → the hex part, refusing anything else (it becomes a file name).
fn sha256_hex(digest: &str) -> Result<&str, Error> {
    match digest.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => Ok(hex),
        _ => Err(Error::invalid(format!(
            "unsupported digest {digest:?} (expected sha256:<64 hex digits>)"
        ))),
    }
}

pub fn digest_of(data: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(data))
}

/// A temporary file in `dir` with the mode of any other file we create (0666 less the umask;
/// tempfile's default is 0600).
pub fn temp_file(dir: &Path) -> Result<tempfile::NamedTempFile, Error> {
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(dir).map_err(|e| io_err(dir, e))
}

/// Flushes a directory's entries (new names, renames) to the disk.
pub fn sync_dir(dir: &Path) -> Result<(), Error> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(dir, e))
}

/// Flushes a finished temporary file and renames it to `path`; the name never points at
/// bytes the disk may not have.
pub fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> Result<fs::File, Error> {
    tmp.as_file()
        .sync_all()
        .map_err(|e| io_err(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| io_err(path, e.error))
}

/// Replaces `path` with `data` in one step: an interrupted write leaves the previous file.
pub fn replace_file(path: &Path, data: &[u8]) -> Result<(), Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = temp_file(dir)?;
    tmp.write_all(data).map_err(|e| io_err(path, e))?;
    persist(tmp, path)?;
    sync_dir(dir)
}

/// Reads at most `max` bytes of `path`, failing when there are more.
fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, Error> {
    let file = fs::File::open(path).map_err(|e| io_err(path, e))?;
    let mut data = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut data)
        .map_err(|e| io_err(path, e))?;
    if data.len() as u64 > max {
        return Err(Error::invalid(format!(
            "{}: larger than {max} bytes",
            path.display()
        )));
    }
    Ok(data)
}

/// The digest of a file's content, read as a stream.
fn hash_file(path: &Path) -> Result<String, Error> {
    let mut file = fs::File::open(path).map_err(|e| io_err(path, e))?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher).map_err(|e| io_err(path, e))?;
    Ok(format!("sha256:{:x}", hasher.finalize()))
}

/// What a verification record holds: the size and mtime the blob had when it was checked.
fn stamp(meta: &fs::Metadata) -> String {
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{} {mtime}", meta.len())
}

impl Layout {
    /// Opens a layout for writing, creating an empty one when the directory is new, and
    /// removes what interrupted runs left when no other process has it open.
    pub fn create(root: &Path) -> Result<Layout, Error> {
        let blobs = root.join("blobs/sha256");
        fs::create_dir_all(&blobs).map_err(|e| io_err(root, e))?;
        let lock = fs::File::open(root).map_err(|e| io_err(root, e))?;
        if lock.try_lock().is_ok() {
            for dir in [root, blobs.as_path()] {
                for entry in fs::read_dir(dir).map_err(|e| io_err(dir, e))?.flatten() {
                    if entry.file_name().to_string_lossy().starts_with(".tmp") {
                        let path = entry.path();
                        fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
                    }
                }
            }
        }
        // Turning the exclusive lock into a shared one lets another process in between,
        // which is harmless: the cleaning is done by then.
        lock.lock_shared().map_err(|e| io_err(root, e))?;
        let layout = Layout {
            root: root.to_owned(),
            _writing: Some(lock),
        };
        let marker = root.join("oci-layout");
        if !marker.exists() {
            replace_file(&marker, br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        if !root.join("index.json").exists() {
            layout.write_index(&json!({"schemaVersion": 2, "mediaType": oci_client::manifest::OCI_IMAGE_INDEX_MEDIA_TYPE, "manifests": []}))?;
        }
        Ok(layout)
    }

    /// Opens an existing layout for reading.
    pub fn open(root: &Path) -> Result<Layout, Error> {
        if !root.join("oci-layout").is_file() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "{}: not an OCI image layout (no oci-layout file)",
                    root.display()
                ),
            ));
        }
        Ok(Layout {
            root: root.to_owned(),
            _writing: None,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn blob_path(&self, digest: &str) -> Result<PathBuf, Error> {
        Ok(self.root.join("blobs/sha256").join(sha256_hex(digest)?))
    }

    fn record_path(&self, digest: &str) -> Result<PathBuf, Error> {
        Ok(self.root.join(".verified").join(sha256_hex(digest)?))
    }

    /// Whether the layout holds the blob `digest` (of `size` bytes, when known), intact: see
    /// the module comment. A blob that is not is removed, so that it is fetched again.
    pub fn holds(&self, digest: &str, size: Option<u64>) -> Result<bool, Error> {
        let path = self.blob_path(digest)?;
        let Ok(meta) = fs::symlink_metadata(&path) else {
            return Ok(false);
        };
        let problem = if !meta.is_file() {
            "is not a file".to_owned()
        } else if let Some(size) = size.filter(|s| *s != meta.len()) {
            format!("has {} bytes where {size} are expected", meta.len())
        } else if fs::read_to_string(self.record_path(digest)?).ok() == Some(stamp(&meta)) {
            return Ok(true);
        } else {
            let actual = hash_file(&path)?;
            if actual == digest {
                self.record_verified(digest, &meta);
                return Ok(true);
            }
            format!("does not match its digest (content is {actual})")
        };
        tracing::warn!(
            "blob {digest} in {} {problem}; fetching it again",
            self.root.display()
        );
        let _ = fs::remove_file(self.record_path(digest)?);
        fs::remove_file(&path).map_err(|e| io_err(&path, e))?;
        Ok(false)
    }

    /// Records that the blob, as `meta` describes it, matches its digest. Losing the record
    /// only costs hashing the blob again, so failing to write it is no error.
    fn record_verified(&self, digest: &str, meta: &fs::Metadata) {
        let written = self.record_path(digest).and_then(|path| {
            fs::create_dir_all(path.parent().unwrap_or(&self.root))
                .map_err(|e| io_err(&path, e))?;
            fs::write(&path, stamp(meta)).map_err(|e| io_err(&path, e))
        });
        if let Err(e) = written {
            tracing::debug!("recording that {digest} was verified: {e}");
        }
    }

    /// Hashes a blob as a stream and compares it with its digest.
    pub(crate) fn verify_blob(&self, digest: &str) -> Result<(), Error> {
        let actual = hash_file(&self.blob_path(digest)?)?;
        if actual != digest {
            return Err(Error::invalid(format!(
                "blob {digest} in {} is corrupt (content is {actual})",
                self.root.display()
            )));
        }
        Ok(())
    }

    /// Writes a blob from a stream, verifying it against `digest` before it becomes visible.
    pub fn ingest_blob(&self, digest: &str, mut data: impl Read) -> Result<PathBuf, Error> {
        let mut tmp = self.temp_blob()?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 << 10];
        loop {
            let n = data
                .read(&mut buf)
                .map_err(|e| Error::new(ErrorKind::Io, format!("reading blob {digest}: {e}")))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            tmp.write_all(&buf[..n])
                .map_err(|e| io_err(tmp.path(), e))?;
        }
        let actual = format!("sha256:{:x}", hasher.finalize());
        if actual != digest {
            return Err(Error::invalid(format!(
                "blob {digest} does not match its digest (content is {actual})"
            )));
        }
        self.adopt_verified_blob(digest, tmp)
    }

    /// A temporary file beside the blobs, for a download that is moved into place once
    /// verified.
    pub(crate) fn temp_blob(&self) -> Result<tempfile::NamedTempFile, Error> {
        temp_file(&self.root.join("blobs/sha256"))
    }

    /// Moves a download whose digest the downloader has already checked into place.
    pub(crate) fn adopt_verified_blob(
        &self,
        digest: &str,
        tmp: tempfile::NamedTempFile,
    ) -> Result<PathBuf, Error> {
        let path = self.blob_path(digest)?;
        let file = persist(tmp, &path)?;
        if let Ok(meta) = file.metadata() {
            self.record_verified(digest, &meta);
        }
        Ok(path)
    }

    pub fn write_blob(&self, data: &[u8]) -> Result<String, Error> {
        let digest = digest_of(data);
        if !self.holds(&digest, Some(data.len() as u64))? {
            self.ingest_blob(&digest, data)?;
        }
        Ok(digest)
    }

    /// Reads a small blob (a manifest, a config) whole, refusing one larger than `max`, and
    /// verifies its digest.
    pub fn read_blob(&self, digest: &str, max: u64) -> Result<Vec<u8>, Error> {
        let path = self.blob_path(digest)?;
        let data = read_capped(&path, max)?;
        let actual = digest_of(&data);
        if actual != digest {
            return Err(Error::invalid(format!(
                "blob {digest} in {} is corrupt (content is {actual})",
                self.root.display()
            )));
        }
        Ok(data)
    }

    /// The layout's index.json.
    pub fn index(&self) -> Result<Value, Error> {
        let path = self.root.join("index.json");
        let text = read_capped(&path, MAX_INDEX_BYTES)?;
        serde_json::from_slice(&text)
            .map_err(|e| Error::invalid(format!("{}: {e}", path.display())))
    }

    /// Replaces index.json once every blob it may name is on the disk.
    pub fn write_index(&self, index: &Value) -> Result<(), Error> {
        sync_dir(&self.root.join("blobs/sha256"))?;
        replace_file(&self.root.join("index.json"), index.to_string().as_bytes())
    }

    /// Stores a manifest and lists it in index.json under `tag` (replacing that tag), or
    /// untagged (once).
    pub fn add_manifest(
        &self,
        manifest: &[u8],
        media_type: &str,
        tag: Option<&str>,
    ) -> Result<String, Error> {
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
            .ok_or_else(|| Error::invalid("index.json has no manifests list".to_owned()))?;
        // One entry per tag; an untagged manifest is listed once.
        manifests.retain(|m| match tag {
            Some(tag) => m["annotations"][REF_NAME].as_str() != Some(tag),
            None => m["digest"] != entry["digest"] || m["annotations"].get(REF_NAME).is_some(),
        });
        manifests.push(entry);
        self.write_index(&index)?;
        Ok(digest)
    }

    /// The (digest, media type) of the manifest named `tag`, or of the only one.
    pub fn find_manifest(&self, tag: Option<&str>) -> Result<(String, String), Error> {
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
            ([], Some(tag)) => Err(Error::new(
                ErrorKind::NotFound,
                format!("{}: no image tagged {tag:?}", self.root.display()),
            )),
            ([], None) => Err(Error::new(
                ErrorKind::NotFound,
                format!("{}: the layout holds no image", self.root.display()),
            )),
            (_, _) => Err(Error::new(
                ErrorKind::Other,
                format!(
                    "{}: the layout holds several images; name one with oci:DIR:TAG",
                    self.root.display()
                ),
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
        assert_eq!(layout.read_blob(&d, 5).unwrap(), b"hello");
        assert_eq!(
            layout.read_blob(&d, 4).unwrap_err().message,
            format!(
                "{}: larger than 4 bytes",
                layout.blob_path(&d).unwrap().display()
            )
        );
        let wrong = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        assert_eq!(
            layout
                .ingest_blob(wrong, &b"hello"[..])
                .unwrap_err()
                .message,
            format!("blob {wrong} does not match its digest (content is {d})")
        );
        assert!(!layout.holds(wrong, None).unwrap());
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
                .message
                .ends_with("name one with oci:DIR:TAG")
        );
        assert!(
            layout
                .find_manifest(Some("v3"))
                .unwrap_err()
                .message
                .ends_with("no image tagged \"v3\"")
        );

        std::fs::write(layout.blob_path(&d).unwrap(), b"tampered").unwrap();
        assert!(
            layout
                .read_blob(&d, 100)
                .unwrap_err()
                .message
                .contains("is corrupt")
        );
        assert!(Layout::open(&dir.path().join("nope")).is_err());
    }

    fn temp_files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = [dir.to_owned(), dir.join("blobs/sha256")]
            .iter()
            .flat_map(|d| fs::read_dir(d).unwrap().flatten())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".tmp"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn stale_temp_files_go_but_not_those_of_a_run_in_progress() {
        let dir = tempfile::tempdir().unwrap();
        let running = Layout::create(dir.path()).unwrap();
        let in_progress = running.temp_blob().unwrap();
        let name = in_progress
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        fs::write(dir.path().join(".tmpPLAN"), "x").unwrap();
        // Another writer while the first runs: nothing is removed.
        drop(Layout::create(dir.path()).unwrap());
        let mut expected = [".tmpPLAN".to_owned(), name];
        expected.sort();
        assert_eq!(temp_files(dir.path()), expected);
        // The first run dies without cleaning up; the next writer removes what it left.
        std::mem::forget(in_progress);
        drop(running);
        let _next = Layout::create(dir.path()).unwrap();
        assert!(temp_files(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn files_get_the_usual_modes_and_damaged_blobs_are_fetched_again() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::create(dir.path()).unwrap();
        let d = layout.write_blob(b"hello").unwrap();
        layout.add_manifest(b"{}", "x", Some("t")).unwrap();
        // The umask of this process, without changing it.
        let status = fs::read_to_string("/proc/self/status").unwrap();
        let umask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
            .unwrap();
        for file in [layout.blob_path(&d).unwrap(), dir.path().join("index.json")] {
            let mode = fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o666 & !umask, "{}", file.display());
        }
        assert!(layout.holds(&d, Some(5)).unwrap());
        // Truncated: the size says so.
        fs::write(layout.blob_path(&d).unwrap(), b"hell").unwrap();
        assert!(!layout.holds(&d, Some(5)).unwrap());
        assert!(!layout.blob_path(&d).unwrap().exists());
        // Same size, other bytes (and so another mtime): hashed again.
        layout.write_blob(b"hello").unwrap();
        let path = layout.blob_path(&d).unwrap();
        let written = fs::metadata(&path).unwrap().modified().unwrap();
        fs::write(&path, b"HELLO").unwrap();
        // The clock may not have ticked since the blob was written; a rewrite later would.
        let file = fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(written + std::time::Duration::from_secs(1))
            .unwrap();
        assert!(!layout.holds(&d, Some(5)).unwrap());
        // Verified once, then trusted while size and mtime stay.
        layout.write_blob(b"hello").unwrap();
        fs::remove_dir_all(dir.path().join(".verified")).unwrap();
        assert!(layout.holds(&d, None).unwrap());
        assert!(dir.path().join(".verified").join(&d[7..]).is_file());
        assert!(layout.holds(&d, Some(5)).unwrap());
    }
}
