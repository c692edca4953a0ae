//! Walking a catalog directory (catalog-formats.md §A.1): which files hold documents, and
//! loading them all.
use super::decode::{LoadError, parse_documents_seeing};
pub use super::file::CatalogFile;
use super::file::ReadLimits;
use super::property;
use super::types::{DeclarativeConfig, Document};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, mpsc};

const IGNORE_FILE: &str = ".indexignore";

/// One catalog file, read and decoded.
pub struct ReadFile {
    /// The file as read, for a caller that digests what it reads.
    pub data: Vec<u8>,
    /// The documents in file order, each bundle with its `olm.bundle.object` manifests
    /// decoded (see [`property::bundle_objects`]), other documents with none.
    pub documents: Vec<(Document, Vec<String>)>,
}

/// Reads and decodes one catalog file, bundle manifests included: every command that reads a
/// catalog reads it here, so that they all accept and refuse the same catalogs.
pub(crate) fn read_file(file: &CatalogFile) -> Result<ReadFile, Vec<LoadError>> {
    read_file_seeing(file, &mut |_| {})
}

/// [`read_file`], showing `seen` each document's generic value before it is decoded.
pub fn read_file_seeing(
    file: &CatalogFile,
    seen: &mut dyn FnMut(&serde_json::Value),
) -> Result<ReadFile, Vec<LoadError>> {
    let data = file.read().map_err(|e| vec![e])?;
    let documents = decode_file_seeing(&file.rel, &data, seen)?;
    Ok(ReadFile { data, documents })
}

/// The documents of [`read_file_seeing`] from a file's bytes already in memory; `name` is the
/// file's name in origins and messages.
pub fn decode_file_seeing(
    name: &str,
    data: &[u8],
    seen: &mut dyn FnMut(&serde_json::Value),
) -> Result<Vec<(Document, Vec<String>)>, Vec<LoadError>> {
    let mut errors = Vec::new();
    let documents = parse_documents_seeing(name, data, seen)?
        .into_iter()
        .filter_map(|doc| {
            let objects = match &doc {
                Document::Bundle(b) => property::bundle_objects(b)
                    .map_err(|e| errors.push(e))
                    .ok()?,
                _ => Vec::new(),
            };
            Some((doc, objects))
        })
        .collect();
    if errors.is_empty() {
        Ok(documents)
    } else {
        Err(errors)
    }
}

/// The catalog files under `root` in walk order: recursive, entries of each directory in
/// byte order, nothing skipped but directories, `.indexignore` files and what they exclude.
/// Hidden files are catalog files too. See [`all_files`] for how links are followed. The files
/// are read within `limits` (the `.indexignore` files already were).
pub fn catalog_files(root: &Path, limits: ReadLimits) -> Result<Vec<CatalogFile>, Vec<LoadError>> {
    let tree = Tree::walk(root, limits)?;
    let rules = tree
        .ignore_files
        .iter()
        .map(IgnoreFile::read)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| vec![e])?;
    let mut files = tree.files;
    files.retain(|f| !is_ignored(&rules, &f.rel));
    Ok(distinct(files))
}

/// Every file under `root`, `.indexignore` files and ignored files included, sorted by path.
///
/// Symbolic links are followed when what they point to is inside the root (a Kubernetes
/// ConfigMap volume is made of such links), and refused otherwise; a directory link that
/// leads back to a directory containing it is refused too. A file or directory reachable by
/// several paths is taken once, by the first path in walk order. The files are read within
/// `limits`.
pub fn all_files(root: &Path, limits: ReadLimits) -> Result<Vec<CatalogFile>, Vec<LoadError>> {
    let tree = Tree::walk(root, limits)?;
    let mut files = distinct(tree.files.into_iter().chain(tree.ignore_files).collect());
    files.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
    Ok(files)
}

/// Keeps the first of the files that are one file reached by several paths.
fn distinct(mut files: Vec<CatalogFile>) -> Vec<CatalogFile> {
    let mut seen = HashSet::new();
    files.retain(|f| seen.insert(f.path.clone()));
    files
}

/// Reads and decodes every catalog file under `root` (files in parallel, documents kept in
/// walk order) within `limits`, collecting the errors of all files.
pub fn load_dir(root: &Path, limits: ReadLimits) -> Result<DeclarativeConfig, Vec<LoadError>> {
    let files = catalog_files(root, limits)?;
    let mut dc = DeclarativeConfig::default();
    let mut errors = Vec::new();
    read_in_order(&files, read_file, |result| {
        match result {
            Ok(file) => file.documents.into_iter().for_each(|(d, _)| dc.push(d)),
            Err(e) => errors.extend(e),
        }
        Ok::<_, std::convert::Infallible>(())
    })
    .unwrap_or_else(|never| match never {});
    if errors.is_empty() {
        Ok(dc)
    } else {
        Err(errors)
    }
}

/// Runs `read` on every file on worker threads and calls `consume` with the results in file
/// order, stopping at its first error. At most [`Window`] files are read and not yet consumed,
/// however unevenly the workers progress (a worker held up on a large file, or descheduled on
/// a busy machine, does not let the others read the catalog ahead into memory), so memory is
/// bounded by the largest files, not the catalog.
pub fn read_in_order<T: Send, E>(
    files: &[CatalogFile],
    read: impl Fn(&CatalogFile) -> T + Sync,
    mut consume: impl FnMut(T) -> Result<(), E>,
) -> Result<(), E> {
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(files.len().max(1));
    let next = AtomicUsize::new(0);
    // One file being consumed or ready beside each worker's: the consumer (one writer) is the
    // slower side, and each place holds a whole parsed file.
    let window = Window::new(workers + 1);
    let (tx, rx) = mpsc::sync_channel::<(usize, T)>(workers * 2);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (next, read, window) = (&next, &read, &window);
            scope.spawn(move || {
                // A place in the window is taken before a file, so files are taken in
                // order by the holders of places: the one the consumer waits for is always
                // being read, and the window cannot fill with files read after it.
                while window.enter() {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    if tx.send((i, read(file))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        // Workers waiting for a place stop when the consumer does, even on an error.
        let _closing = window.closing();
        let mut pending = BTreeMap::new();
        let mut want = 0;
        for (i, result) in rx {
            pending.insert(i, result);
            while let Some(result) = pending.remove(&want) {
                consume(result)?;
                window.leave();
                want += 1;
            }
        }
        Ok(())
    })
}

/// Places for files read and not yet consumed.
struct Window {
    /// (free places, closed)
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Window {
    fn new(places: usize) -> Window {
        Window {
            state: Mutex::new((places, false)),
            changed: Condvar::new(),
        }
    }

    /// Waits for a free place and takes it; false once the window is closed.
    fn enter(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.0 == 0 && !state.1 {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.1 {
            return false;
        }
        state.0 -= 1;
        true
    }

    fn leave(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0 += 1;
        self.changed.notify_one();
    }

    /// Closes the window when dropped.
    fn closing(&self) -> impl Drop + '_ {
        struct Closing<'w>(&'w Window);
        impl Drop for Closing<'_> {
            fn drop(&mut self) {
                self.0.state.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
                self.0.changed.notify_all();
            }
        }
        Closing(self)
    }
}

/// A directory being walked: its entries not yet taken.
struct OpenDir {
    /// Canonical.
    dir: PathBuf,
    rel: String,
    entries: std::vec::IntoIter<(OsString, fs::FileType)>,
}

fn error(file: &str, message: String) -> LoadError {
    LoadError {
        file: file.to_owned(),
        line: 0,
        message,
    }
}

/// What a walk found.
struct Tree {
    /// Canonical root.
    root: PathBuf,
    files: Vec<CatalogFile>,
    ignore_files: Vec<CatalogFile>,
    /// Canonical paths of the directories walked so far.
    walked: HashSet<PathBuf>,
    errors: Vec<LoadError>,
    /// Given to every file found.
    limits: ReadLimits,
}

impl Tree {
    fn walk(root: &Path, limits: ReadLimits) -> Result<Tree, Vec<LoadError>> {
        if !root.is_dir() {
            let message = format!("{:?} is not a directory", root.display().to_string());
            return Err(vec![error("", message)]);
        }
        let root = fs::canonicalize(root).map_err(|e| {
            vec![LoadError {
                file: String::new(),
                line: 0,
                message: format!("{:?}: {e}", root.display().to_string()),
            }]
        })?;
        let mut tree = Tree {
            root: root.clone(),
            files: Vec::new(),
            ignore_files: Vec::new(),
            walked: HashSet::from([root.clone()]),
            errors: Vec::new(),
            limits,
        };
        tree.dirs(root);
        if tree.errors.is_empty() {
            Ok(tree)
        } else {
            Err(tree.errors)
        }
    }

    /// Walks the tree depth first, each directory's entries in byte order, with a stack of
    /// its own rather than the thread's: directories can nest thousands deep.
    fn dirs(&mut self, root: PathBuf) {
        let mut stack = vec![self.open_dir(root, String::new())];
        while let Some(top) = stack.last_mut() {
            let Some((name, kind)) = top.entries.next() else {
                stack.pop();
                continue;
            };
            let (dir, rel) = (&top.dir, &top.rel);
            let path = format!("{rel}{}", name.to_string_lossy());
            let mut real = dir.join(&name);
            let link = kind.is_symlink();
            let is_dir = if link {
                match self.resolve(&real) {
                    Ok((target, is_dir)) => {
                        real = target;
                        is_dir
                    }
                    Err(message) => {
                        self.errors.push(error(&path, message));
                        continue;
                    }
                }
            } else {
                kind.is_dir()
            };
            if !is_dir {
                let file = CatalogFile {
                    rel: path,
                    path: real,
                    limits: self.limits,
                };
                if name == IGNORE_FILE {
                    self.ignore_files.push(file);
                } else {
                    self.files.push(file);
                }
                continue;
            }
            // Only a link can lead back into a directory being walked.
            let outer = link
                .then(|| stack.iter().find(|open| open.dir == real))
                .flatten();
            if let Some(outer) = outer {
                let outer = match outer.rel.trim_end_matches('/') {
                    "" => ".",
                    rel => rel,
                };
                self.errors.push(error(
                    &path,
                    format!("symbolic link loop: it leads back to {outer:?}, which contains it"),
                ));
            } else if self.walked.insert(real.clone()) {
                let open = self.open_dir(real, format!("{path}/"));
                stack.push(open);
            }
        }
    }

    /// Lists `dir` (canonical), whose path from the root is `rel` (empty or ending in `/`).
    fn open_dir(&mut self, dir: PathBuf, rel: String) -> OpenDir {
        let entries = fs::read_dir(&dir).and_then(|entries| {
            entries
                .map(|entry| entry.and_then(|e| Ok((e.file_name(), e.file_type()?))))
                .collect::<Result<Vec<_>, _>>()
        });
        let mut entries = entries.unwrap_or_else(|e| {
            let message = format!("read directory: {e}");
            self.errors.push(error(rel.trim_end_matches('/'), message));
            Vec::new()
        });
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        OpenDir {
            dir,
            rel,
            entries: entries.into_iter(),
        }
    }

    /// Where the link at `path` leads, if inside the root, and whether that is a directory.
    fn resolve(&self, path: &Path) -> Result<(PathBuf, bool), String> {
        let target = fs::read_link(path).map_err(|e| format!("read error: {e}"))?;
        let real = fs::canonicalize(path).map_err(|e| {
            format!(
                "symbolic link to {:?} cannot be followed: {e}",
                target.display().to_string()
            )
        })?;
        if !real.starts_with(&self.root) {
            return Err(format!(
                "symbolic link to {:?} leads outside the catalog directory; only links to files inside it are followed",
                target.display().to_string()
            ));
        }
        let meta = fs::metadata(&real).map_err(|e| format!("read error: {e}"))?;
        Ok((real, meta.is_dir()))
    }
}

/// The rules of one `.indexignore`: they apply below its directory only.
struct IgnoreFile {
    /// The directory, relative to the root, empty or ending in `/`.
    dir: String,
    /// One matcher per pattern line, in file order: upstream tries patterns one at a time,
    /// last first, and a pattern that matches a parent directory decides like one that
    /// matches the file itself.
    patterns: Vec<Gitignore>,
}

impl IgnoreFile {
    fn read(file: &CatalogFile) -> Result<IgnoreFile, LoadError> {
        let rel = file.rel.as_str();
        let text = String::from_utf8_lossy(&file.read()?).into_owned();
        let dir = rel[..rel.len() - IGNORE_FILE.len()].to_owned();
        let mut patterns = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut builder = GitignoreBuilder::new("");
            let matcher = builder
                .add_line(None, line)
                .and_then(|b| b.build())
                .map_err(|e| LoadError {
                    file: rel.to_owned(),
                    line: i + 1,
                    message: format!("invalid pattern {line:?}: {e}"),
                })?;
            patterns.push(matcher);
        }
        Ok(IgnoreFile { dir, patterns })
    }
}

/// Later `.indexignore` files (in walk order) and later lines win; the first pattern that
/// matches, searching backwards, decides.
fn is_ignored(rules: &[IgnoreFile], file: &str) -> bool {
    for rule in rules.iter().rev() {
        let Some(below) = file.strip_prefix(rule.dir.as_str()) else {
            continue;
        };
        for pattern in rule.patterns.iter().rev() {
            match pattern.matched_path_or_any_parents(below, false) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, content) in files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            fs::write(p, content).expect("write");
        }
        dir
    }

    const PKG: &str = "{\"schema\":\"olm.package\",\"name\":\"p\"}";

    #[test]
    fn reads_run_at_most_a_window_ahead_of_a_slow_file() {
        let dir = tree(
            &(0..40)
                .map(|i| (format!("f{i:02}"), String::new()))
                .collect::<Vec<_>>()
                .iter()
                .map(|(p, c)| (p.as_str(), c.as_str()))
                .collect::<Vec<_>>(),
        );
        let files = catalog_files(dir.path(), ReadLimits::default()).expect("walk");
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        let places = workers + 1;
        let started = AtomicUsize::new(0);
        let consumed = AtomicUsize::new(0);
        let order = files.iter().map(|f| f.rel.clone()).collect::<Vec<_>>();
        let mut seen = Vec::new();
        read_in_order(
            &files,
            |file| {
                let i = order
                    .iter()
                    .position(|r| *r == file.rel)
                    .expect("known file");
                started.fetch_add(1, Ordering::SeqCst);
                if i == 0 {
                    // Give the other workers every chance to read ahead while the first
                    // file is slow; a bounded window stops them at its size.
                    let until = std::time::Instant::now() + std::time::Duration::from_millis(500);
                    while started.load(Ordering::SeqCst) <= places
                        && std::time::Instant::now() < until
                    {
                        std::thread::yield_now();
                    }
                }
                // File i may start only once files 0..=i-places are consumed.
                let done = consumed.load(Ordering::SeqCst);
                (i, done)
            },
            |(i, done_when_read)| {
                assert!(
                    i < places + done_when_read,
                    "file {i} was read with only {done_when_read} consumed ({places} places)"
                );
                seen.push(i);
                consumed.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ()>(())
            },
        )
        .expect("consumed");
        assert_eq!(seen, (0..40).collect::<Vec<_>>());
    }

    #[test]
    fn an_error_of_the_consumer_stops_the_workers() {
        let dir = tree(&[
            ("a", ""),
            ("b", ""),
            ("c", ""),
            ("d", ""),
            ("e", ""),
            ("f", ""),
        ]);
        let files = catalog_files(dir.path(), ReadLimits::default()).expect("walk");
        let mut consumed = 0;
        let result = read_in_order(
            &files,
            |file| file.rel.clone(),
            |rel| {
                consumed += 1;
                if rel == "b" { Err(rel) } else { Ok(()) }
            },
        );
        assert_eq!(result, Err("b".to_owned()));
        assert_eq!(consumed, 2);
    }

    fn names(root: &Path) -> Vec<String> {
        catalog_files(root, ReadLimits::default())
            .expect("walk")
            .into_iter()
            .map(|f| f.rel)
            .collect()
    }

    #[test]
    fn walk_is_recursive_lexical_and_keeps_hidden_files() {
        let dir = tree(&[
            ("b/x.json", PKG),
            ("a.yaml", ""),
            (".hidden", ""),
            ("a/z/y", ""),
            ("A", ""),
            ("a-b", ""),
        ]);
        let files = names(dir.path());
        // Directory `a` is entered where its name sorts, before its sibling `a-b`.
        assert_eq!(
            files,
            [".hidden", "A", "a/z/y", "a-b", "a.yaml", "b/x.json"]
        );
    }

    #[test]
    fn upstream_indexignore_example() {
        let dir = tree(&[
            (
                ".indexignore",
                "*\n!*.json\n!*.yaml\n*.clusterserviceversion.yaml\n",
            ),
            ("cockroachdb.json", ""),
            ("etcd.yaml", ""),
            ("deprecations.yaml", ""),
            ("README.md", ""),
            ("etcdoperator.v0.6.1.clusterserviceversion.yaml", ""),
        ]);
        let files = names(dir.path());
        assert_eq!(
            files,
            ["cockroachdb.json", "deprecations.yaml", "etcd.yaml"]
        );
    }

    #[test]
    fn indexignore_patterns_are_scoped_to_their_directory() {
        let dir = tree(&[
            (
                "a/.indexignore",
                "# comment\n\n  *.md  \n/sub/\nlocal.json\n",
            ),
            ("a/x.json", ""),
            ("a/notes.md", ""),
            ("a/deep/more.md", ""),
            ("a/sub/s.json", ""),
            ("a/other/sub/kept.json", ""),
            ("a/local.json", ""),
            ("b/notes.md", ""),
            ("b/local.json", ""),
            ("b/.indexignore", "!*.md\n"),
            (".indexignore", "*.md\nbuild/\n"),
            ("build/out.json", ""),
            ("c/build/out.json", ""),
            ("top.md", ""),
        ]);
        let files = names(dir.path());
        assert_eq!(
            files,
            [
                "a/other/sub/kept.json",
                "a/x.json",
                "b/local.json",
                "b/notes.md"
            ]
        );
    }

    #[test]
    fn later_patterns_and_deeper_files_win() {
        let dir = tree(&[
            (".indexignore", "!keep/x.json\nkeep/\n"),
            ("keep/x.json", ""),
            ("d/.indexignore", "!*.json\n"),
            ("d/.x/.indexignore", "y.json\n"),
            ("d/.x/y.json", ""),
            ("d/z.json", ""),
        ]);
        // `keep/` (the later line) matches x.json's parent and wins over the negation.
        let files = names(dir.path());
        assert_eq!(files, ["d/z.json"]);
    }

    #[test]
    fn load_dir_reads_every_file_and_collects_all_errors() {
        let dir = tree(&[
            (
                "p/catalog.json",
                "{\"schema\":\"olm.package\",\"name\":\"p\",\"defaultChannel\":\"a\"}\n{\"schema\":\"custom\"}",
            ),
            (
                "q/catalog.yaml",
                "schema: olm.channel\npackage: p\nname: a\n",
            ),
        ]);
        let dc = load_dir(dir.path(), ReadLimits::default()).expect("loads");
        assert_eq!(
            (dc.packages.len(), dc.channels.len(), dc.others.len()),
            (1, 1, 1)
        );
        assert_eq!(dc.channels[0].origin.to_string(), "q/catalog.yaml:1");

        let dir = tree(&[
            ("a.json", "{\"name\":\"x\"}"),
            ("b.yaml", "schema: [\n"),
            ("c.yaml", PKG),
        ]);
        let errors: Vec<String> = load_dir(dir.path(), ReadLimits::default())
            .expect_err("fails")
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(
            errors[0],
            r#"a.json:1: object '{"name":"x"}' is missing root schema field"#
        );
        assert!(
            errors[1].starts_with("b.yaml:2: invalid YAML: "),
            "{}",
            errors[1]
        );
    }

    #[test]
    fn each_walk_reads_within_the_limits_it_is_given() {
        let big = format!("{PKG:<100}");
        let dir = tree(&[("small.json", PKG), ("big.json", &big)]);
        let tight = ReadLimits { max_file_size: 99 };
        let errors: Vec<String> = load_dir(dir.path(), tight)
            .expect_err("over the cap")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                "big.json: larger than 99 bytes, the most a catalog file may hold (see --max-file-size)"
            ]
        );
        // A walk beside it with its own limits is not affected.
        let roomy = ReadLimits { max_file_size: 100 };
        assert_eq!(
            load_dir(dir.path(), roomy).expect("loads").packages.len(),
            2
        );
    }

    #[test]
    fn load_dir_needs_a_directory() {
        let dir = tree(&[("f.json", PKG)]);
        let file = dir.path().join("f.json");
        let errors = load_dir(&file, ReadLimits::default()).expect_err("not a directory");
        assert_eq!(
            errors[0].to_string(),
            format!("{:?} is not a directory", file.display().to_string())
        );
        let missing = PathBuf::from("/nonexistent/catalog");
        assert!(load_dir(&missing, ReadLimits::default()).is_err());
    }

    fn link(target: &str, at: &Path) {
        std::os::unix::fs::symlink(target, at).expect("symlink");
    }

    #[test]
    fn links_inside_the_root_are_followed_once_per_file() {
        // A Kubernetes ConfigMap volume: visible names are links through `..data`.
        let dir = tree(&[
            ("..2026_11_26_01_02_03.1/catalog.json", PKG),
            ("d/x.json", PKG),
        ]);
        link("..2026_11_26_01_02_03.1", &dir.path().join("..data"));
        link("..data/catalog.json", &dir.path().join("catalog.json"));
        link("d", &dir.path().join("e"));
        link("../d/x.json", &dir.path().join("d/y.json"));
        assert_eq!(
            names(dir.path()),
            ["..2026_11_26_01_02_03.1/catalog.json", "d/x.json"]
        );
        let all: Vec<String> = all_files(dir.path(), ReadLimits::default())
            .expect("walk")
            .into_iter()
            .map(|f| f.rel)
            .collect();
        assert_eq!(all, names(dir.path()));
        assert_eq!(
            load_dir(dir.path(), ReadLimits::default())
                .expect("loads")
                .packages
                .len(),
            2
        );
    }

    #[test]
    fn links_leaving_the_root_and_loops_are_refused() {
        let dir = tree(&[("d/x.json", PKG)]);
        let outside = tree(&[("x.json", PKG)]);
        let target = outside.path().join("x.json").display().to_string();
        link(&target, &dir.path().join("d/out.json"));
        link("../..", &dir.path().join("d/parent"));
        link("..", &dir.path().join("d/up"));
        link("missing", &dir.path().join("d/z.json"));
        let errors: Vec<String> = catalog_files(dir.path(), ReadLimits::default())
            .expect_err("refused")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            [
                format!("d/out.json: symbolic link to {target:?} leads outside the catalog directory; only links to files inside it are followed"),
                r#"d/parent: symbolic link to "../.." leads outside the catalog directory; only links to files inside it are followed"#.to_owned(),
                r#"d/up: symbolic link loop: it leads back to ".", which contains it"#.to_owned(),
                r#"d/z.json: symbolic link to "missing" cannot be followed: No such file or directory (os error 2)"#.to_owned(),
            ]
        );
    }
}
