//! The content digest of a catalog directory, kept in the index so that a restart with an
//! unchanged catalog can reuse it without re-ingesting.
//!
//! It covers every regular file below the root (ignored ones too: editing `.indexignore` or an
//! ignored file must not leave a stale index), by relative path, size and content, plus the
//! index format version so that a new schema never reads an old index.
//!
//! A cold start (no usable index to compare with) does not read the catalog for the digest:
//! the ingest hands its reads to [`DigestOfReads`], which gives the same value.
use catalog::decode::LoadError;
use catalog::file::ReadLimits;
use catalog::walk::{CatalogFile, all_files};
use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc;
use xxhash_rust::xxh3::Xxh3;

/// The bytes a digest covers, in the order it covers them.
struct Hasher(Xxh3);

impl Hasher {
    fn new(format_version: u32) -> Hasher {
        let mut hasher = Xxh3::new();
        hasher.update(b"olm-registry index format ");
        hasher.update(&format_version.to_le_bytes());
        Hasher(hasher)
    }

    fn name(&mut self, rel: &str) {
        self.0.update(rel.as_bytes());
        self.0.update(&[0]);
    }

    /// The length closes the file's bytes, so that moving bytes across files changes the
    /// digest.
    fn close(&mut self, len: u64) {
        self.0.update(&len.to_le_bytes());
    }

    /// Reads `file` into the digest.
    fn read(&mut self, file: &CatalogFile) -> Result<(), LoadError> {
        self.name(&file.rel);
        let len = file.read_with(|chunk| self.0.update(chunk))?;
        self.close(len);
        Ok(())
    }

    fn bytes(&mut self, rel: &str, data: &[u8]) {
        self.name(rel);
        self.0.update(data);
        self.close(data.len() as u64);
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
        if let Err(e) = hasher.read(&file) {
            errors.push(e);
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
    hasher.bytes(rel, data);
    hasher.finish()
}

/// Files on their way to a digest thread at most.
const IN_FLIGHT: usize = 4;

/// Out-of-turn bytes held at most: past this the digest is left to a pass of its own.
const HELD_MAX: usize = 64 << 20;

/// [`catalog_digest`] from the reads of an ingest. The ingest takes the catalog files in walk
/// order, the digest takes every file (ignored ones too) in path order, and the two differ
/// where a name sorts before `/` (a directory `a` is walked before its sibling `a-b`, whose
/// path sorts first): a file that arrives before its turn is held until then, and a file the
/// ingest does not read is read here at its turn.
pub(crate) struct DigestOfReads {
    hasher: Hasher,
    /// Every file, in digest order.
    files: Vec<CatalogFile>,
    /// The next file to hash.
    next: usize,
    /// For each file the ingest reads, where it is in `files`.
    turn: HashMap<String, usize>,
    held: HashMap<usize, Vec<u8>>,
    held_bytes: usize,
    /// [`HELD_MAX`], but for tests.
    held_max: usize,
    errors: Vec<LoadError>,
    /// Too much was held: the bytes were let go and the caller reads the files again.
    overflowed: bool,
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
            held_bytes: 0,
            held_max: HELD_MAX,
            errors: Vec::new(),
            overflowed: false,
        };
        digest.advance();
        Ok(digest)
    }

    /// Moves the hashing to a thread of `scope`, off the path of the ingest's writer.
    pub(crate) fn on_thread<'scope>(
        mut self,
        scope: &'scope std::thread::Scope<'scope, '_>,
    ) -> DigestThread<'scope> {
        let (tx, rx) = mpsc::sync_channel::<(String, Vec<u8>)>(IN_FLIGHT);
        let handle = scope.spawn(move || {
            for (rel, data) in rx {
                self.add(&rel, data);
            }
            self
        });
        DigestThread { tx, handle }
    }

    /// The bytes the ingest read from the file at `rel`.
    pub(crate) fn add(&mut self, rel: &str, data: Vec<u8>) {
        if self.overflowed {
            return;
        }
        let Some(&i) = self.turn.get(rel) else {
            return;
        };
        self.held_bytes += data.len();
        self.held.insert(i, data);
        if i == self.next {
            self.advance();
        } else if self.held_bytes > self.held_max {
            self.overflowed = true;
            self.held = HashMap::new();
        }
    }

    /// Hashes every file whose turn has come and whose bytes are here or read here.
    fn advance(&mut self) {
        while let Some(file) = self.files.get(self.next) {
            if let Some(data) = self.held.remove(&self.next) {
                self.held_bytes -= data.len();
                self.hasher.bytes(&file.rel, &data);
            } else if self.turn.contains_key(&file.rel) {
                return;
            } else if let Err(e) = self.hasher.read(file) {
                self.errors.push(e);
            }
            self.next += 1;
        }
    }

    /// The digest, once the ingest has added every file it read; `None` when it has to be
    /// computed by [`catalog_digest`] after all.
    pub(crate) fn finish(self) -> Result<Option<String>, Vec<LoadError>> {
        if !self.errors.is_empty() {
            Err(self.errors)
        } else if self.overflowed || self.next < self.files.len() {
            Ok(None)
        } else {
            Ok(Some(self.hasher.finish()))
        }
    }
}

/// A [`DigestOfReads`] running on a thread of its own.
pub(crate) struct DigestThread<'scope> {
    tx: mpsc::SyncSender<(String, Vec<u8>)>,
    handle: std::thread::ScopedJoinHandle<'scope, DigestOfReads>,
}

impl DigestThread<'_> {
    /// See [`DigestOfReads::add`].
    pub(crate) fn add(&self, rel: String, data: Vec<u8>) {
        // The thread takes everything until the sender is dropped, so this cannot fail.
        let _ = self.tx.send((rel, data));
    }

    /// See [`DigestOfReads::finish`].
    pub(crate) fn finish(self) -> Result<Option<String>, Vec<LoadError>> {
        drop(self.tx);
        match self.handle.join() {
            Ok(digest) => digest.finish(),
            Err(panic) => std::panic::resume_unwind(panic),
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
            reads.add(&file.rel, file.read().unwrap());
        }
        assert_eq!(
            reads.finish(),
            Ok(Some(
                catalog_digest(dir.path(), ReadLimits::default(), 7).unwrap()
            ))
        );
    }

    #[test]
    fn too_much_out_of_turn_leaves_the_digest_to_a_pass() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/x.json"), "{}").unwrap();
        std::fs::write(dir.path().join("a-b.json"), "{}").unwrap();
        let files = catalog::walk::catalog_files(dir.path(), ReadLimits::default()).unwrap();
        let mut reads = DigestOfReads::new(dir.path(), ReadLimits::default(), 1, &files).unwrap();
        reads.held_max = 1;
        for file in &files {
            reads.add(&file.rel, file.read().unwrap());
        }
        assert_eq!(reads.finish(), Ok(None));
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
            reads.add(&file.rel, file.read().unwrap());
        }
        let expected = catalog_digest(dir.path(), ReadLimits::default(), 1).unwrap_err();
        assert_eq!(expected.len(), 1);
        assert_eq!(expected[0].file, "fifo");
        assert_eq!(reads.finish(), Err(expected));
    }
}
