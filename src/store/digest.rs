//! The content digest of a catalog directory, kept in the index so that a restart with an
//! unchanged catalog can reuse it without re-ingesting.
//!
//! It covers every regular file below the root (ignored ones too: editing `.indexignore` or an
//! ignored file must not leave a stale index), by relative path, size and content, plus the
//! index format version so that a new schema never reads an old index.
use crate::catalog::decode::LoadError;
use crate::catalog::walk::all_files;
use std::path::Path;
use xxhash_rust::xxh3::Xxh3;

/// Reads the files as the loader does (the same links followed, the same files refused), so
/// that a catalog the loader would refuse is refused here with the loader's words.
pub fn catalog_digest(root: &Path, format_version: u32) -> Result<String, Vec<LoadError>> {
    let mut hasher = Xxh3::new();
    hasher.update(b"olm-registry index format ");
    hasher.update(&format_version.to_le_bytes());
    for file in all_files(root)? {
        hasher.update(file.rel.as_bytes());
        hasher.update(&[0]);
        let len = file
            .read_with(|chunk| hasher.update(chunk))
            .map_err(|e| vec![e])?;
        // The length closes the file's bytes, so that moving bytes across files changes the digest.
        hasher.update(&len.to_le_bytes());
    }
    Ok(format!("{:032x}", hasher.digest128()))
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
