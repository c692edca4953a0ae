//! Unpacking image layers into a directory without trusting them.
//!
//! A layer is a tar stream (optionally gzip-compressed) written by someone else. Nothing in
//! it may land, or point, outside the target directory (the unpack root):
//!
//! - entry names with `..` or an absolute path are refused;
//! - nothing is written through a symlink;
//! - symlinks are **rewritten** the way a container runtime reads them inside the image: an
//!   absolute target counts from the image root, `..` at the root stays at the root, and links
//!   met on the way are followed inside the image. The link is stored as `../…` up to the root
//!   followed by that resolved path, which has no `..` and no absolute part, so every link,
//!   and every chain of links, stays inside the root whatever later entries do;
//! - hard links must name a regular file of the image (a hard link to a symlink would carry
//!   its target to another directory, where it could mean something else), else refused;
//! - devices, FIFOs and sockets are skipped (a catalog has no use for them).
//!
//! Sizes are capped while reading: file content per image, entries per image, and how far
//! one compressed layer may expand. OCI whiteouts are honoured so that stacking layers gives
//! the image's real file system.
use flate2::read::GzDecoder;
use std::cell::Cell;
use std::ffi::OsString;
use std::fs;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

/// Limits on what one image may unpack to.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Total bytes of file content.
    pub max_bytes: u64,
    /// Number of entries.
    pub max_entries: u64,
    /// How many times its compressed size one layer may expand to...
    pub max_ratio: u64,
    /// ...once it has expanded past this many bytes (small layers of tar padding compress
    /// far better than real content).
    pub ratio_grace: u64,
}

impl Default for Limits {
    fn default() -> Self {
        // A real catalog image (base layers included) unpacks to a few hundred MB at most, from
        // layers that compress JSON/YAML and binaries 3-20 times: these are far above that.
        Limits {
            max_bytes: 4 << 30,
            max_entries: 1_000_000,
            max_ratio: 100,
            ratio_grace: 64 << 20,
        }
    }
}
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UnpackError(pub String);

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE_WHITEOUT: &str = ".wh..wh..opq";

/// Symlinks followed while resolving one target, as Linux allows (MAXSYMLINKS).
const MAX_HOPS: usize = 40;

/// Running totals across the layers of one image.
#[derive(Default, Debug)]
pub struct Usage {
    bytes: u64,
    entries: u64,
}

/// Counts the bytes read through it.
struct Counted<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// Decompressed bytes, failing as soon as they outgrow the compressed bytes read so far by
/// more than the limits allow: a small layer never gets to write gigabytes first.
struct Expansion<R> {
    inner: R,
    compressed: Rc<Cell<u64>>,
    expanded: u64,
    limits: Limits,
    exceeded: Rc<Cell<bool>>,
}

impl<R: Read> Read for Expansion<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.expanded += n as u64;
        let allowed = (self.compressed.get().saturating_mul(self.limits.max_ratio))
            .max(self.limits.ratio_grace);
        if self.expanded > allowed {
            self.exceeded.set(true);
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "layer expands too far",
            ));
        }
        Ok(n)
    }
}

/// Unpacks one layer (plain or gzip tar, detected from its first bytes) over `root`.
pub fn unpack_layer(
    layer: impl Read,
    root: &Path,
    limits: Limits,
    usage: &mut Usage,
) -> Result<(), UnpackError> {
    let compressed = Rc::new(Cell::new(0));
    let mut reader = BufReader::new(Counted {
        inner: layer,
        count: compressed.clone(),
    });
    let gzip = reader
        .fill_buf()
        .map_err(|e| UnpackError(format!("reading layer: {e}")))?
        .starts_with(&[0x1f, 0x8b]);
    if !gzip {
        return unpack_tar(reader, root, limits, usage);
    }
    let exceeded = Rc::new(Cell::new(false));
    let expanded = Expansion {
        inner: GzDecoder::new(reader),
        compressed,
        expanded: 0,
        limits,
        exceeded: exceeded.clone(),
    };
    unpack_tar(expanded, root, limits, usage).map_err(|e| {
        if exceeded.get() {
            UnpackError(format!(
                "layer expands to more than {} times its compressed size (and past {} bytes)",
                limits.max_ratio, limits.ratio_grace
            ))
        } else {
            e
        }
    })
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
            // `.wh..` and `.wh...` would remove the directory itself or its parent.
            if matches!(hidden, "" | "." | "..") {
                return Err(UnpackError(format!(
                    "{}: whiteout of {hidden:?} is not a file name",
                    raw.display()
                )));
            }
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
                    let inside = resolve(root, parent, &target, &raw)?;
                    let mut stored: PathBuf = parent.components().map(|_| "..").collect();
                    if !inside.as_os_str().is_empty() {
                        stored.push(&inside);
                    } else if stored.as_os_str().is_empty() {
                        stored.push(".");
                    }
                    symlink(&stored, &dest).map_err(|e| io(&dest.display().to_string(), e))?;
                } else {
                    // Hard link names count from the image root.
                    let inside = resolve(root, Path::new(""), &target, &raw)?;
                    let source = root.join(&inside);
                    if !fs::symlink_metadata(&source).is_ok_and(|m| m.is_file()) {
                        return Err(UnpackError(format!(
                            "{}: hard link to {}, which is not a regular file of the image",
                            raw.display(),
                            target.display()
                        )));
                    }
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

/// Where `target`, written in directory `from` (both relative to `root`), leads inside the
/// image, as a path relative to `root` with neither `..` nor symlinks in its directories: an
/// absolute target starts at the root, `..` at the root stays there, and symlinks on the way
/// (already confined) are followed. The last component is not followed, so a link to a link
/// stays one. Parts that do not exist yet are taken as written.
fn resolve(root: &Path, from: &Path, target: &Path, entry: &Path) -> Result<PathBuf, UnpackError> {
    enum Step {
        Root,
        Up,
        Name(OsString),
    }
    fn steps(path: &Path) -> impl DoubleEndedIterator<Item = Step> + '_ {
        path.components().filter_map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Some(Step::Root),
            Component::ParentDir => Some(Step::Up),
            Component::Normal(n) => Some(Step::Name(n.to_owned())),
            Component::CurDir => None,
        })
    }
    let mut out = from.to_path_buf();
    // Steps still to take, the next one last.
    let mut pending: Vec<Step> = steps(target).rev().collect();
    let mut hops = 0;
    while let Some(step) = pending.pop() {
        match step {
            Step::Root => out.clear(),
            Step::Up => {
                out.pop();
            }
            Step::Name(name) => {
                out.push(name);
                if pending.is_empty() {
                    break;
                }
                let here = root.join(&out);
                if !fs::symlink_metadata(&here).is_ok_and(|m| m.file_type().is_symlink()) {
                    continue;
                }
                hops += 1;
                if hops > MAX_HOPS {
                    return Err(UnpackError(format!(
                        "{}: link to {} goes through more than {MAX_HOPS} symlinks",
                        entry.display(),
                        target.display()
                    )));
                }
                let link = fs::read_link(&here)
                    .map_err(|e| UnpackError(format!("{}: {e}", here.display())))?;
                out.pop();
                pending.extend(steps(&link).rev());
            }
        }
    }
    Ok(out)
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
        fn link(mut self, kind: tar::EntryType, name: &str, target: &str) -> Self {
            let mut h = Self::header(name, kind, 0);
            let t = target.as_bytes();
            h.as_old_mut().linkname[..t.len()].copy_from_slice(t);
            h.set_cksum();
            self.0.append(&h, io::empty()).unwrap();
            self
        }
        fn symlink(self, name: &str, target: &str) -> Self {
            self.link(tar::EntryType::Symlink, name, target)
        }
        fn hard_link(self, name: &str, target: &str) -> Self {
            self.link(tar::EntryType::Link, name, target)
        }
        fn special(mut self, name: &str, kind: tar::EntryType) -> Self {
            let mut h = Self::header(name, kind, 0);
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

    fn stored_link(root: &Path, name: &str) -> String {
        fs::read_link(root.join(name))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn symlinks_are_rewritten_to_stay_inside_the_image() {
        let (dir, result) = unpack(&[Tar::new()
            .file("configs/a.json", "{}")
            .symlink("latest", "configs")
            .symlink("configs/p/x.json", "/etc/passwd")
            .symlink("zero", "/dev/zero")
            .symlink("abs", "/configs/a.json")
            .symlink("up", "../../etc")
            .symlink("a/b/c", "../..")
            .symlink("a/b/d", "c/../../../etc")
            .symlink("a/b/e", "../../../a/b/..")
            .bytes()]);
        result.unwrap();
        let root = dir.path().join("root");
        // Absolute targets count from the image root; `..` stops at the root.
        for (name, stored) in [
            ("latest", "configs"),
            ("configs/p/x.json", "../../etc/passwd"),
            ("zero", "dev/zero"),
            ("abs", "configs/a.json"),
            ("up", "etc"),
            ("a/b/c", "../.."),
            // Through a/b/c (the root) and up: still the root.
            ("a/b/d", "../../etc"),
            ("a/b/e", "../../a"),
        ] {
            assert_eq!(stored_link(&root, name), stored, "{name}");
        }
        assert_eq!(fs::read_to_string(root.join("abs")).unwrap(), "{}");
        assert_eq!(
            fs::read_to_string(root.join("configs/p/x.json"))
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs::canonicalize(root.join("a/b/c/a/b/e")).unwrap(),
            fs::canonicalize(root.join("a")).unwrap()
        );
    }

    #[test]
    fn nothing_is_written_through_a_symlink_and_links_replace_what_was_there() {
        let (dir, result) = unpack(&[Tar::new().symlink("d", "sub").file("d/x", "x").bytes()]);
        assert_eq!(result.unwrap_err().0, "d/x: writes through a symlink");
        assert!(!dir.path().join("root/sub/x").exists());
        // A link over a directory replaces it; a directory over a link replaces that.
        let (dir, result) = unpack(&[
            Tar::new()
                .file("configs/a.json", "{}")
                .file("d/keep", "k")
                .bytes(),
            Tar::new()
                .symlink("configs", "/etc")
                .symlink("d", "/etc")
                .dir("d/")
                .file("d/passwd", "mine")
                .bytes(),
        ]);
        result.unwrap();
        let root = dir.path().join("root");
        assert_eq!(stored_link(&root, "configs"), "etc");
        assert_eq!(files(&root), ["configs", "d/passwd"]);
        assert_eq!(fs::read_to_string(root.join("d/passwd")).unwrap(), "mine");
    }

    #[test]
    fn hard_links_must_name_a_regular_file_of_the_image() {
        let (dir, result) = unpack(&[Tar::new()
            .file("configs/a.json", "{}")
            .hard_link("configs/b.json", "/configs/a.json")
            .bytes()]);
        result.unwrap();
        let root = dir.path().join("root");
        assert_eq!(
            fs::read_to_string(root.join("configs/b.json")).unwrap(),
            "{}"
        );
        for (layer, message) in [
            (
                Tar::new().hard_link("h", "/etc/passwd"),
                "h: hard link to /etc/passwd, which is not a regular file of the image",
            ),
            (
                Tar::new().symlink("d", "/etc").hard_link("h", "d/passwd"),
                "h: hard link to d/passwd, which is not a regular file of the image",
            ),
            (
                Tar::new()
                    .file("x", "x")
                    .symlink("l", "x")
                    .hard_link("sub/h", "l"),
                "sub/h: hard link to l, which is not a regular file of the image",
            ),
            (
                Tar::new().dir("d/").hard_link("h", "d"),
                "h: hard link to d, which is not a regular file of the image",
            ),
        ] {
            let (_, result) = unpack(&[layer.bytes()]);
            assert_eq!(result.unwrap_err().0, message);
        }
    }

    #[test]
    fn link_loops_devices_and_odd_whiteouts() {
        let (_, result) = unpack(&[Tar::new()
            .symlink("a", "b")
            .symlink("b", "a")
            .symlink("c", "a/x")
            .bytes()]);
        assert_eq!(
            result.unwrap_err().0,
            "c: link to a/x goes through more than 40 symlinks"
        );
        let (dir, result) = unpack(&[Tar::new()
            .special("dev/zero", tar::EntryType::Char)
            .special("dev/sda", tar::EntryType::Block)
            .special("configs/fifo.json", tar::EntryType::Fifo)
            .file("configs/a.json", "{}")
            .bytes()]);
        result.unwrap();
        assert_eq!(files(&dir.path().join("root")), ["configs/a.json"]);
        for name in ["sub/.wh...", "sub/.wh.."] {
            let (dir, result) = unpack(&[Tar::new().file("sub/keep", "k").file(name, "").bytes()]);
            let hidden = &name[8..];
            assert_eq!(
                result.unwrap_err().0,
                format!("{name}: whiteout of {hidden:?} is not a file name")
            );
            assert_eq!(files(&dir.path().join("root")), ["sub/keep"]);
        }
    }

    #[test]
    fn caps_how_far_a_layer_expands() {
        let dir = tempfile::tempdir().unwrap();
        let zeros = String::from_utf8(vec![0; 4 << 20]).unwrap();
        let layer = Tar::new().file("zeros", &zeros).gzip();
        let limits = Limits {
            max_ratio: 10,
            ratio_grace: 1 << 20,
            ..Limits::default()
        };
        let err =
            unpack_layer(layer.as_slice(), dir.path(), limits, &mut Usage::default()).unwrap_err();
        assert_eq!(
            err.0,
            "layer expands to more than 10 times its compressed size (and past 1048576 bytes)"
        );
        // The same layer uncompressed is only as big as it is.
        let plain = Tar::new().file("zeros", &zeros).bytes();
        unpack_layer(plain.as_slice(), dir.path(), limits, &mut Usage::default()).unwrap();
    }

    #[test]
    fn caps_the_content_size_of_the_whole_image() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_bytes: 8,
            ..Limits::default()
        };
        let mut usage = Usage::default();
        // Each layer is within the cap; the image is not.
        let first = Tar::new().file("a", "12345").bytes();
        unpack_layer(first.as_slice(), dir.path(), limits, &mut usage).unwrap();
        let second = Tar::new().file("b", "67890").bytes();
        let err = unpack_layer(second.as_slice(), dir.path(), limits, &mut usage).unwrap_err();
        assert_eq!(err.0, "image content exceeds 8 bytes");
        // Refused before anything of it was written.
        assert!(!dir.path().join("b").exists());
    }
}
