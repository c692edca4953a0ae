//! The content digest of a catalog directory, kept in the index so that a restart with an
//! unchanged catalog can reuse it without re-ingesting.
//!
//! It covers every regular file below the root (ignored ones too: editing `.indexignore` or an
//! ignored file must not leave a stale index), by relative path, size and content, plus the
//! index format version so that a new schema never reads an old index.
//!
//! Each file's content is hashed on its own ([`FileDigest`]) and the digest covers those
//! hashes, so a cold start (no usable index to compare with) does not read the catalog for
//! the digest: the ingest's workers hash each file as they read it, and [`DigestOfReads`]
//! puts the hashes in the digest's order, holding a few bytes per file instead of the files.
use catalog::decode::LoadError;
use catalog::file::ReadLimits;
use catalog::walk::{CatalogFile, all_files};
use std::collections::HashMap;
use std::path::Path;
use xxhash_rust::xxh3::{Xxh3, xxh3_128};

/// A file's content as the digest covers it: its hash and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileDigest {
    hash: u128,
    len: u64,
}

impl FileDigest {
    pub(crate) fn of(data: &[u8]) -> FileDigest {
        FileDigest {
            hash: xxh3_128(data),
            len: data.len() as u64,
        }
    }

    /// Reads `file` (as the loader does) into its digest.
    fn read(file: &CatalogFile) -> Result<FileDigest, LoadError> {
        let mut hasher = Xxh3::new();
        let len = file.read_with(|chunk| hasher.update(chunk))?;
        Ok(FileDigest {
            hash: hasher.digest128(),
            len,
        })
    }
}

/// The bytes a digest covers, in the order it covers them.
struct Hasher(Xxh3);

impl Hasher {
    fn new(format_version: u32) -> Hasher {
        let mut hasher = Xxh3::new();
        hasher.update(b"olm-registry index format ");
        hasher.update(&format_version.to_le_bytes());
        Hasher(hasher)
    }

    /// A file: its name, then its content's digest, closed by its length so that moving
    /// bytes across files changes the digest.
    fn file(&mut self, rel: &str, file: FileDigest) {
        self.0.update(rel.as_bytes());
        self.0.update(&[0]);
        self.0.update(&file.hash.to_le_bytes());
        self.0.update(&file.len.to_le_bytes());
    }

    fn finish(self) -> String {
        format!("{:032x}", self.0.digest128())
    }
}

/// Reads the files as the loader does (the same links followed, the same files refused), so
/// that a catalog the loader would refuse is refused here with the loader's words; every
/// file that cannot be read is named, as the loader names them (within the same `limits`).
pub(crate) fn catalog_digest(
    root: &Path,
    limits: ReadLimits,
    format_version: u32,
) -> Result<String, Vec<LoadError>> {
    let mut hasher = Hasher::new(format_version);
    let mut errors = Vec::new();
    for file in all_files(root, limits)? {
        match FileDigest::read(&file) {
            Ok(digest) => hasher.file(&file.rel, digest),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(hasher.finish())
    } else {
        Err(errors)
    }
}

/// [`catalog_digest`] of a directory holding one file, `rel`, whose content is `data`: a
/// catalog made in memory digests as the directory it would once have been written to.
pub(crate) fn one_file_digest(rel: &str, data: &[u8], format_version: u32) -> String {
    let mut hasher = Hasher::new(format_version);
    hasher.file(rel, FileDigest::of(data));
    hasher.finish()
}

/// [`catalog_digest`] from the reads of an ingest. The ingest takes the catalog files in walk
/// order, the digest takes every file (ignored ones too) in path order, and the two differ
/// where a name sorts before `/` (a directory `a` is walked before its sibling `a-b`, whose
/// path sorts first): the digest of a file that arrives before its turn is held until then,
/// and a file the ingest does not read is read here at its turn.
pub(crate) struct DigestOfReads {
    hasher: Hasher,
    /// Every file, in digest order.
    files: Vec<CatalogFile>,
    /// The next file to hash.
    next: usize,
    /// For each file the ingest reads, where it is in `files`.
    turn: HashMap<String, usize>,
    held: HashMap<usize, FileDigest>,
    errors: Vec<LoadError>,
}

impl DigestOfReads {
    /// For the catalog at `root`, whose ingest reads `ingested` within `limits`.
    pub(crate) fn new(
        root: &Path,
        limits: ReadLimits,
        format_version: u32,
        ingested: &[CatalogFile],
    ) -> Result<DigestOfReads, Vec<LoadError>> {
        let files = all_files(root, limits)?;
        let position: HashMap<&str, usize> = files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.rel.as_str(), i))
            .collect();
        // A file reached by several paths is in `files` by its first; the ingest may read it
        // by another, which the digest does not cover.
        let turn = ingested
            .iter()
            .filter_map(|f| Some((f.rel.clone(), *position.get(f.rel.as_str())?)))
            .collect();
        let mut digest = DigestOfReads {
            hasher: Hasher::new(format_version),
            files,
            next: 0,
            turn,
            held: HashMap::new(),
            errors: Vec::new(),
        };
        digest.advance();
        Ok(digest)
    }

    /// The digest of the file at `rel` as the ingest read it.
    pub(crate) fn add(&mut self, rel: &str, file: FileDigest) {
        let Some(&i) = self.turn.get(rel) else {
            return;
        };
        self.held.insert(i, file);
        if i == self.next {
            self.advance();
        }
    }

    /// Hashes every file whose turn has come and whose digest is here or read here.
    fn advance(&mut self) {
        while let Some(file) = self.files.get(self.next) {
            if let Some(digest) = self.held.remove(&self.next) {
                self.hasher.file(&file.rel, digest);
            } else if self.turn.contains_key(&file.rel) {
                return;
            } else {
                match FileDigest::read(file) {
                    Ok(digest) => self.hasher.file(&file.rel, digest),
                    Err(e) => self.errors.push(e),
                }
            }
            self.next += 1;
        }
    }

    /// The digest, once the ingest has added every file it read; `None` when a file the
    /// ingest was to read never came.
    pub(crate) fn finish(self) -> Result<Option<String>, Vec<LoadError>> {
        if !self.errors.is_empty() {
            Err(self.errors)
        } else if self.next < self.files.len() {
            Ok(None)
        } else {
            Ok(Some(self.hasher.finish()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_changes_with_content_names_and_format() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/catalog.json"), "{}").unwrap();
        let d1 = catalog_digest(dir.path(), ReadLimits::default(), 1).unwrap();
        assert_eq!(d1.len(), 32);
        assert_eq!(
            d1,
            catalog_digest(dir.path(), ReadLimits::default(), 1).unwrap()
        );
        assert_ne!(
            d1,
            catalog_digest(dir.path(), ReadLimits::default(), 2).unwrap()
        );
        std::fs::write(dir.path().join("a/catalog.json"), "{ }").unwrap();
        let d2 = catalog_digest(dir.path(), ReadLimits::default(), 1).unwrap();
        assert_ne!(d1, d2);
        std::fs::write(dir.path().join(".indexignore"), "").unwrap();
        assert_ne!(
            d2,
            catalog_digest(dir.path(), ReadLimits::default(), 1).unwrap()
        );
    }

    #[test]
    fn one_file_in_memory_digests_as_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("catalog.json"), "{\"a\": 1}\n").unwrap();
        assert_eq!(
            one_file_digest("catalog.json", b"{\"a\": 1}\n", 3),
            catalog_digest(dir.path(), ReadLimits::default(), 3).unwrap()
        );
        assert_ne!(
            one_file_digest("catalog.json", b"{\"a\": 2}\n", 3),
            catalog_digest(dir.path(), ReadLimits::default(), 3).unwrap()
        );
    }

    #[test]
    fn the_reads_of_an_ingest_give_the_same_digest() {
        let dir = tempfile::tempdir().unwrap();
        // Walk order: a/x.json, a/z/y.json, a-b.json, a.json; path order puts a-b.json and
        // a.json first. The ignored file and .indexignore are read by the digest alone.
        for (path, text) in [
            ("a/x.json", "{}"),
            ("a/z/y.json", "[1]"),
            ("a-b.json", "{\"b\":1}"),
            ("a.json", ""),
            ("notes.md", "ignored"),
            (".indexignore", "*.md\n"),
        ] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let files = catalog::walk::catalog_files(dir.path(), ReadLimits::default()).unwrap();
        let walked: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(walked, ["a/x.json", "a/z/y.json", "a-b.json", "a.json"]);
        let mut reads = DigestOfReads::new(dir.path(), ReadLimits::default(), 7, &files).unwrap();
        for file in &files {
            reads.add(&file.rel, FileDigest::of(&file.read().unwrap()));
        }
        assert_eq!(
            reads.finish(),
            Ok(Some(
                catalog_digest(dir.path(), ReadLimits::default(), 7).unwrap()
            ))
        );
    }

    #[test]
    fn a_file_only_the_digest_reads_fails_it_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("catalog.json"), "{}").unwrap();
        std::fs::write(dir.path().join(".indexignore"), "fifo\n").unwrap();
        let fifo = dir.path().join("fifo");
        let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let files = catalog::walk::catalog_files(dir.path(), ReadLimits::default()).unwrap();
        let mut reads = DigestOfReads::new(dir.path(), ReadLimits::default(), 1, &files).unwrap();
        for file in &files {
            reads.add(&file.rel, FileDigest::of(&file.read().unwrap()));
        }
        let expected = catalog_digest(dir.path(), ReadLimits::default(), 1).unwrap_err();
        assert_eq!(expected.len(), 1);
        assert_eq!(expected[0].file, "fifo");
        assert_eq!(reads.finish(), Err(expected));
    }
}
