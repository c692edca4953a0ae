//! The content digest of a catalog directory, kept in the index so that a restart with an
//! unchanged catalog can reuse it without re-ingesting.
//!
//! It covers every regular file below the root (ignored ones too: editing `.indexignore` or an
//! ignored file must not leave a stale index), by relative path, size and content, plus the
//! index format version so that a new schema never reads an old index.
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use xxhash_rust::xxh3::Xxh3;

pub fn catalog_digest(root: &Path, format_version: u32) -> io::Result<String> {
    let mut hasher = Xxh3::new();
    hasher.update(b"olm-registry index format ");
    hasher.update(&format_version.to_le_bytes());
    let mut files = Vec::new();
    collect_files(root, "", &mut files)?;
    files.sort();
    let mut buf = vec![0u8; 1 << 20];
    for rel in files {
        let mut file = File::open(root.join(&rel))?;
        hasher.update(rel.as_bytes());
        hasher.update(&[0]);
        let mut len = 0u64;
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            len += n as u64;
            hasher.update(&buf[..n]);
        }
        // The length closes the file's bytes, so that moving bytes across files changes the digest.
        hasher.update(&len.to_le_bytes());
    }
    Ok(format!("{:032x}", hasher.digest128()))
}

fn collect_files(dir: &Path, prefix: &str, out: &mut Vec<String>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        // Follow symlinks as the loader does; a dangling one is the loader's error to report.
        // Anything else that is not a directory (a pipe, a device) is read like a file.
        match std::fs::metadata(entry.path()) {
            Ok(meta) if meta.is_dir() => collect_files(&entry.path(), &rel, out)?,
            Ok(_) => out.push(rel),
            Err(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_changes_with_content_names_and_format() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/catalog.json"), "{}").unwrap();
        let d1 = catalog_digest(dir.path(), 1).unwrap();
        assert_eq!(d1.len(), 32);
        assert_eq!(d1, catalog_digest(dir.path(), 1).unwrap());
        assert_ne!(d1, catalog_digest(dir.path(), 2).unwrap());
        std::fs::write(dir.path().join("a/catalog.json"), "{ }").unwrap();
        let d2 = catalog_digest(dir.path(), 1).unwrap();
        assert_ne!(d1, d2);
        std::fs::write(dir.path().join(".indexignore"), "").unwrap();
        assert_ne!(d2, catalog_digest(dir.path(), 1).unwrap());
    }
}
