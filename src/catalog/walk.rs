//! Walking a catalog directory (catalog-formats.md §A.1): which files hold documents, and
//! loading them all.
use super::decode::{LoadError, parse_documents};
use super::types::{DeclarativeConfig, Document};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

const IGNORE_FILE: &str = ".indexignore";

type FileResult = Result<Vec<Document>, Vec<LoadError>>;

/// The catalog files under `root`, relative and `/`-separated, in walk order: recursive,
/// entries of each directory in byte order, nothing skipped but directories, `.indexignore`
/// files and what they exclude. Hidden files are catalog files too.
pub fn catalog_files(root: &Path) -> Result<Vec<String>, LoadError> {
    let mut files = Vec::new();
    let mut ignore_files = Vec::new();
    walk(root, "", &mut files, &mut ignore_files)?;
    let rules = ignore_files
        .iter()
        .map(|rel| IgnoreFile::read(root, rel))
        .collect::<Result<Vec<_>, _>>()?;
    files.retain(|f| !is_ignored(&rules, f));
    Ok(files)
}

/// Reads and decodes every catalog file under `root` (files in parallel, documents kept in
/// walk order), collecting the errors of all files.
pub fn load_dir(root: &Path) -> Result<DeclarativeConfig, Vec<LoadError>> {
    if !root.is_dir() {
        return Err(vec![LoadError {
            file: String::new(),
            line: 0,
            message: format!("{:?} is not a directory", root.display().to_string()),
        }]);
    }
    let files = catalog_files(root).map_err(|e| vec![e])?;
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().max(1));
    let read = |rel: &String| -> FileResult {
        match fs::read(root.join(rel)) {
            Ok(data) => parse_documents(rel, &data),
            Err(e) => Err(vec![LoadError {
                file: rel.clone(),
                line: 0,
                message: format!("read error: {e}"),
            }]),
        }
    };
    let mut done: Vec<(usize, FileResult)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(rel) = files.get(i) else { break };
                        done.push((i, read(rel)));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    let mut dc = DeclarativeConfig::default();
    let mut errors = Vec::new();
    for (_, result) in done {
        match result {
            Ok(docs) => docs.into_iter().for_each(|d| dc.push(d)),
            Err(e) => errors.extend(e),
        }
    }
    if errors.is_empty() {
        Ok(dc)
    } else {
        Err(errors)
    }
}

/// Collects files and `.indexignore` files below `dir` (`rel` is its path from the root,
/// empty or ending in `/`). Only real directories are entered: a symlink to a directory is
/// listed like a file, and reading it fails later, as upstream's walk does.
fn walk(
    root: &Path,
    rel: &str,
    files: &mut Vec<String>,
    ignore_files: &mut Vec<String>,
) -> Result<(), LoadError> {
    let dir = root.join(rel);
    let read_error = |e: std::io::Error| LoadError {
        file: rel.trim_end_matches('/').to_owned(),
        line: 0,
        message: format!("read directory: {e}"),
    };
    let mut entries = Vec::new();
    for entry in fs::read_dir(&dir).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        let is_dir = entry.file_type().map_err(read_error)?.is_dir();
        let name = entry.file_name().into_string().map_err(|name| LoadError {
            file: format!("{rel}{}", name.to_string_lossy()),
            line: 0,
            message: "file name is not valid UTF-8".to_owned(),
        })?;
        entries.push((name, is_dir));
    }
    entries.sort_unstable();
    for (name, is_dir) in entries {
        let path = format!("{rel}{name}");
        if is_dir {
            walk(root, &format!("{path}/"), files, ignore_files)?;
        } else if name == IGNORE_FILE {
            ignore_files.push(path);
        } else {
            files.push(path);
        }
    }
    Ok(())
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
    fn read(root: &Path, rel: &str) -> Result<IgnoreFile, LoadError> {
        let error = |message: String| LoadError {
            file: rel.to_owned(),
            line: 0,
            message,
        };
        let text =
            fs::read_to_string(root.join(rel)).map_err(|e| error(format!("read error: {e}")))?;
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
    fn walk_is_recursive_lexical_and_keeps_hidden_files() {
        let dir = tree(&[
            ("b/x.json", PKG),
            ("a.yaml", ""),
            (".hidden", ""),
            ("a/z/y", ""),
            ("A", ""),
            ("a-b", ""),
        ]);
        let files = catalog_files(dir.path()).expect("walk");
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
        let files = catalog_files(dir.path()).expect("walk");
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
        let files = catalog_files(dir.path()).expect("walk");
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
        let files = catalog_files(dir.path()).expect("walk");
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
        let dc = load_dir(dir.path()).expect("loads");
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
        let errors: Vec<String> = load_dir(dir.path())
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
    fn load_dir_needs_a_directory_and_fails_on_directory_symlinks() {
        let dir = tree(&[("f.json", PKG), ("d/x.json", PKG)]);
        let file = dir.path().join("f.json");
        let errors = load_dir(&file).expect_err("not a directory");
        assert_eq!(
            errors[0].to_string(),
            format!("{:?} is not a directory", file.display().to_string())
        );
        let missing = PathBuf::from("/nonexistent/catalog");
        assert!(load_dir(&missing).is_err());

        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("f.json"), dir.path().join("link.json"))
                .expect("symlink");
            assert_eq!(
                load_dir(dir.path())
                    .expect("file symlinks load")
                    .packages
                    .len(),
                3
            );
            std::os::unix::fs::symlink(dir.path().join("d"), dir.path().join("dirlink"))
                .expect("symlink");
            let errors = load_dir(dir.path()).expect_err("directory symlink");
            assert_eq!(errors.len(), 1);
            assert!(
                errors[0].to_string().starts_with("dirlink: read error: "),
                "{}",
                errors[0]
            );
        }
    }
}
