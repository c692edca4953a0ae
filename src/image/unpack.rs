//! Unpacking image layers into a directory without trusting them.
//!
//! A layer is a tar stream (optionally gzip-compressed) written by someone else. Nothing in
//! it may land outside the target directory: absolute paths and `..` are refused, and so are
//! links whose target would leave the directory. Sizes are capped. OCI whiteouts are honoured
//! so that stacking layers gives the image's real file system.
use flate2::read::GzDecoder;
use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};

/// Limits on what one image may unpack to.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Total bytes of file content.
    pub max_bytes: u64,
    /// Number of entries.
    pub max_entries: u64,
}

impl Default for Limits {
    fn default() -> Self {
        // Catalog images hold YAML/JSON; a few GiB is far beyond any real one.
        Limits {
            max_bytes: 8 << 30,
            max_entries: 1_000_000,
        }
    }
}

#[derive(Debug)]
pub struct UnpackError(pub String);

impl std::fmt::Display for UnpackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnpackError {}

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE_WHITEOUT: &str = ".wh..wh..opq";

/// Running totals across the layers of one image.
#[derive(Default, Debug)]
pub struct Usage {
    bytes: u64,
    entries: u64,
}

/// Unpacks one layer (plain or gzip tar, detected from its first bytes) over `root`.
pub fn unpack_layer(
    layer: impl Read,
    root: &Path,
    limits: Limits,
    usage: &mut Usage,
) -> Result<(), UnpackError> {
    let mut reader = BufReader::new(layer);
    let gzip = reader
        .fill_buf()
        .map_err(|e| UnpackError(format!("reading layer: {e}")))?
        .starts_with(&[0x1f, 0x8b]);
    if gzip {
        unpack_tar(GzDecoder::new(reader), root, limits, usage)
    } else {
        unpack_tar(reader, root, limits, usage)
    }
}

fn unpack_tar(
    data: impl Read,
    root: &Path,
    limits: Limits,
    usage: &mut Usage,
) -> Result<(), UnpackError> {
    let io = |what: &str, e: io::Error| UnpackError(format!("{what}: {e}"));
    let mut archive = tar::Archive::new(data);
    for entry in archive.entries().map_err(|e| io("reading layer", e))? {
        let mut entry = entry.map_err(|e| io("reading layer", e))?;
        usage.entries += 1;
        if usage.entries > limits.max_entries {
            return Err(UnpackError(format!(
                "image has more than {} files",
                limits.max_entries
            )));
        }
        let raw = entry
            .path()
            .map_err(|e| io("reading entry name", e))?
            .into_owned();
        let rel = safe_relative(&raw)?;
        let Some(name) = rel.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue; // the root itself ("./")
        };
        let parent = rel.parent().unwrap_or(Path::new(""));
        ensure_real_dir(root, parent, &raw)?;
        if name == OPAQUE_WHITEOUT {
            clear_dir(&root.join(parent))?;
            continue;
        }
        if let Some(hidden) = name.strip_prefix(WHITEOUT_PREFIX) {
            remove_any(&root.join(parent).join(hidden))?;
            continue;
        }
        let dest = root.join(&rel);
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Directory => {
                if fs::symlink_metadata(&dest).is_ok_and(|m| !m.is_dir()) {
                    remove_any(&dest)?;
                }
                fs::create_dir_all(&dest).map_err(|e| io(&dest.display().to_string(), e))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry
                    .header()
                    .size()
                    .map_err(|e| io("reading entry size", e))?;
                usage.bytes += size;
                if usage.bytes > limits.max_bytes {
                    return Err(UnpackError(format!(
                        "image content exceeds {} bytes",
                        limits.max_bytes
                    )));
                }
                remove_any(&dest)?;
                let mut file =
                    fs::File::create(&dest).map_err(|e| io(&dest.display().to_string(), e))?;
                io::copy(&mut (&mut entry).take(size), &mut file)
                    .map_err(|e| io(&dest.display().to_string(), e))?;
            }
            tar::EntryType::Symlink | tar::EntryType::Link => {
                let target = entry
                    .link_name()
                    .map_err(|e| io("reading link target", e))?
                    .ok_or_else(|| {
                        UnpackError(format!("{}: link without a target", raw.display()))
                    })?
                    .into_owned();
                remove_any(&dest)?;
                if kind == tar::EntryType::Symlink {
                    // Resolved relative to the link's directory (absolute targets relative to the
                    // image root), the target must stay inside the image.
                    let base = if target.is_absolute() {
                        PathBuf::new()
                    } else {
                        parent.to_path_buf()
                    };
                    confine(&base.join(&target)).ok_or_else(|| {
                        UnpackError(format!(
                            "{}: symlink to {} escapes the image",
                            raw.display(),
                            target.display()
                        ))
                    })?;
                    symlink(&target, &dest).map_err(|e| io(&dest.display().to_string(), e))?;
                } else {
                    let source = root.join(safe_relative(&target)?);
                    fs::hard_link(&source, &dest)
                        .map_err(|e| io(&dest.display().to_string(), e))?;
                }
            }
            // Devices, FIFOs and the like have no place in a catalog or bundle image.
            _ => continue,
        }
    }
    Ok(())
}

/// The entry path as a plain relative path, or an error for absolute paths and `..`.
fn safe_relative(path: &Path) -> Result<PathBuf, UnpackError> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(UnpackError(format!(
                    "{}: path leaves the image",
                    path.display()
                )));
            }
        }
    }
    Ok(out)
}

/// Normalises `a/b/../c` lexically; None when it climbs above the start.
fn confine(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::ParentDir if !out.pop() => return None,
            _ => {}
        }
    }
    Some(out)
}

/// Creates `rel`'s directories under `root`, refusing to go through a symlink: a layer could
/// otherwise plant `dir -> /etc` and then write `dir/passwd`.
fn ensure_real_dir(root: &Path, rel: &Path, entry: &Path) -> Result<(), UnpackError> {
    let mut current = root.to_path_buf();
    for c in rel.components() {
        current.push(c);
        match fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(UnpackError(format!(
                    "{}: writes through a symlink",
                    entry.display()
                )));
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                remove_any(&current)?;
                fs::create_dir(&current)
                    .map_err(|e| UnpackError(format!("{}: {e}", current.display())))?;
            }
            Err(_) => fs::create_dir(&current)
                .map_err(|e| UnpackError(format!("{}: {e}", current.display())))?,
        }
    }
    Ok(())
}

fn remove_any(path: &Path) -> Result<(), UnpackError> {
    let result = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(_) => return Ok(()),
    };
    result.map_err(|e| UnpackError(format!("{}: {e}", path.display())))
}

fn clear_dir(dir: &Path) -> Result<(), UnpackError> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.filter_map(Result::ok) {
        remove_any(&entry.path())?;
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_: &Path, link: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{}: symlinks are not supported here", link.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar stream built entry by entry; names and link targets are written raw so that
    /// hostile archives can be made.
    struct Tar(tar::Builder<Vec<u8>>);

    impl Tar {
        fn new() -> Self {
            Tar(tar::Builder::new(Vec::new()))
        }
        fn header(name: &str, kind: tar::EntryType, size: u64) -> tar::Header {
            let mut h = tar::Header::new_gnu();
            let bytes = name.as_bytes();
            h.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            h.set_entry_type(kind);
            h.set_size(size);
            h.set_mode(0o644);
            h
        }
        fn file(mut self, name: &str, data: &str) -> Self {
            let mut h = Self::header(name, tar::EntryType::Regular, data.len() as u64);
            h.set_cksum();
            self.0.append(&h, data.as_bytes()).unwrap();
            self
        }
        fn dir(mut self, name: &str) -> Self {
            let mut h = Self::header(name, tar::EntryType::Directory, 0);
            h.set_cksum();
            self.0.append(&h, io::empty()).unwrap();
            self
        }
        fn symlink(mut self, name: &str, target: &str) -> Self {
            let mut h = Self::header(name, tar::EntryType::Symlink, 0);
            let t = target.as_bytes();
            h.as_old_mut().linkname[..t.len()].copy_from_slice(t);
            h.set_cksum();
            self.0.append(&h, io::empty()).unwrap();
            self
        }
        fn bytes(self) -> Vec<u8> {
            self.0.into_inner().unwrap()
        }
        fn gzip(self) -> Vec<u8> {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&self.bytes()).unwrap();
            gz.finish().unwrap()
        }
    }

    fn unpack(layers: &[Vec<u8>]) -> (tempfile::TempDir, Result<(), UnpackError>) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs::create_dir(&root).unwrap();
        let mut usage = Usage::default();
        let result = layers
            .iter()
            .try_for_each(|l| unpack_layer(l.as_slice(), &root, Limits::default(), &mut usage));
        (dir, result)
    }

    fn files(root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for e in walk(root) {
            out.push(e.strip_prefix(root).unwrap().to_string_lossy().into_owned());
        }
        out.sort();
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
        out
    }

    #[test]
    fn unpacks_plain_and_gzip_layers_with_whiteouts() {
        let base = Tar::new()
            .dir("manifests/")
            .file("manifests/csv.yaml", "kind: ClusterServiceVersion")
            .file("manifests/old.yaml", "old")
            .file("metadata/annotations.yaml", "annotations: {}")
            .file("junk/a", "a")
            .bytes();
        let top = Tar::new()
            .file("manifests/.wh.old.yaml", "")
            .file("junk/.wh..wh..opq", "")
            .file("junk/b", "b")
            .gzip();
        let (dir, result) = unpack(&[base, top]);
        result.unwrap();
        let root = dir.path().join("root");
        assert_eq!(
            files(&root),
            ["junk/b", "manifests/csv.yaml", "metadata/annotations.yaml"]
        );
        assert_eq!(
            fs::read_to_string(root.join("manifests/csv.yaml")).unwrap(),
            "kind: ClusterServiceVersion"
        );
    }

    #[test]
    fn refuses_paths_that_leave_the_image() {
        for name in ["../evil", "a/../../evil", "/etc/evil"] {
            let (dir, result) = unpack(&[Tar::new().file(name, "x").bytes()]);
            assert_eq!(
                result.unwrap_err().0,
                format!("{name}: path leaves the image")
            );
            assert!(files(&dir.path().join("root")).is_empty());
            assert!(!dir.path().join("evil").exists());
        }
    }

    #[test]
    fn refuses_symlinks_that_escape_and_writes_through_symlinks() {
        let (_, result) = unpack(&[Tar::new().symlink("link", "../../etc").bytes()]);
        assert_eq!(
            result.unwrap_err().0,
            "link: symlink to ../../etc escapes the image"
        );
        // An in-image symlink is fine, absolute ones count from the image root.
        let (dir, result) = unpack(&[Tar::new()
            .file("configs/a.json", "{}")
            .symlink("latest", "configs")
            .symlink("abs", "/configs/a.json")
            .bytes()]);
        result.unwrap();
        assert_eq!(
            fs::read_link(dir.path().join("root/latest")).unwrap(),
            Path::new("configs")
        );
        // But nothing is written through a link, even one that stays inside.
        let (dir, result) = unpack(&[Tar::new().symlink("d", "sub").file("d/x", "x").bytes()]);
        assert_eq!(result.unwrap_err().0, "d/x: writes through a symlink");
        assert!(!dir.path().join("root/sub/x").exists());
    }

    #[test]
    fn caps_the_content_size() {
        let dir = tempfile::tempdir().unwrap();
        let layer = Tar::new().file("a", "12345").file("b", "67890").bytes();
        let err = unpack_layer(
            layer.as_slice(),
            dir.path(),
            Limits {
                max_bytes: 8,
                max_entries: 10,
            },
            &mut Usage::default(),
        )
        .unwrap_err();
        assert_eq!(err.0, "image content exceeds 8 bytes");
    }
}
