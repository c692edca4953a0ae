//! One file per package: the layout `migrate` writes and `add` rewrites. Which file holds a
//! package's documents, and writing one package's file or a whole catalog that way.
use catalog::{DeclarativeConfig, write};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// How a catalog file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    Json,
    Yaml,
}

impl FileFormat {
    /// The format a file's name asks for: YAML for `.yaml` and `.yml`, JSON otherwise.
    fn of(file: &Path) -> FileFormat {
        match file.extension() {
            Some(e) if e == "yaml" || e == "yml" => FileFormat::Yaml,
            _ => FileFormat::Json,
        }
    }

    fn extension(self) -> &'static str {
        match self {
            FileFormat::Json => "json",
            FileFormat::Yaml => "yaml",
        }
    }

    fn write(self, dc: &DeclarativeConfig, out: &mut impl Write) -> io::Result<()> {
        match self {
            FileFormat::Json => write::write_json(dc, out),
            FileFormat::Yaml => write::write_yaml(dc, out),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// A file or directory could not be made, written or moved; `doing` says which, as the
    /// start of the message ("creating ", "writing ", or nothing).
    #[error("{doing}{}: {source}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("package name {0:?} cannot be used as a directory name")]
    PackageName(String),
    #[error(
        "package {package:?} shares its files with other packages or is spread over several \
         ({files}); add rewrites one file per package (the layout `migrate` writes)"
    )]
    SharedFiles { package: String, files: String },
}

/// The error of `doing` something to `path`.
fn io_error(doing: &'static str, path: &Path) -> impl FnOnce(io::Error) -> LayoutError {
    let path = path.to_owned();
    move |source| LayoutError::Io {
        doing,
        path,
        source,
    }
}

/// The documents of each package (`""`: documents of no package), in their order.
pub(crate) fn split_by_package(dc: DeclarativeConfig) -> BTreeMap<String, DeclarativeConfig> {
    let mut parts: BTreeMap<String, DeclarativeConfig> = BTreeMap::new();
    for p in dc.packages {
        parts.entry(p.name.clone()).or_default().packages.push(p);
    }
    for c in dc.channels {
        parts.entry(c.package.clone()).or_default().channels.push(c);
    }
    for b in dc.bundles {
        parts.entry(b.package.clone()).or_default().bundles.push(b);
    }
    for d in dc.deprecations {
        let part = parts.entry(d.package.clone()).or_default();
        part.deprecations.push(d);
    }
    for m in dc.others {
        parts.entry(m.package.clone()).or_default().others.push(m);
    }
    parts
}

/// The one file below `root` that holds package `pkg`'s documents of `dc` (and nothing
/// else), or where a new package goes: `<root>/<pkg>/catalog.json`.
pub(crate) fn package_file(
    root: &Path,
    dc: &DeclarativeConfig,
    pkg: &str,
) -> Result<PathBuf, LayoutError> {
    // (owner package, file) of every document.
    let docs = dc
        .packages
        .iter()
        .map(|p| (&p.name, &p.origin))
        .chain(dc.channels.iter().map(|c| (&c.package, &c.origin)))
        .chain(dc.bundles.iter().map(|b| (&b.package, &b.origin)))
        .chain(dc.deprecations.iter().map(|d| (&d.package, &d.origin)))
        .chain(dc.others.iter().map(|m| (&m.package, &m.origin)));
    let (mut mine, mut others) = (BTreeSet::new(), BTreeSet::new());
    for (owner, origin) in docs {
        if owner == pkg {
            mine.insert(&*origin.file);
        } else {
            others.insert(&*origin.file);
        }
    }
    let mine: Vec<&str> = mine.into_iter().collect();
    match mine.as_slice() {
        [] => Ok(root.join(pkg).join("catalog.json")),
        [one] if !others.contains(one) => Ok(root.join(one)),
        _ => Err(LayoutError::SharedFiles {
            package: pkg.to_owned(),
            files: mine.join(", "),
        }),
    }
}

/// Replaces `file` with one package's documents, atomically, in the format its name asks for.
pub(crate) fn write_package(part: &DeclarativeConfig, file: &Path) -> Result<(), LayoutError> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io_error("", dir))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io_error("", dir))?;
    FileFormat::of(file)
        .write(part, &mut tmp)
        .map_err(io_error("", file))?;
    tmp.persist(file).map_err(|e| io_error("", file)(e.error))?;
    Ok(())
}

/// Writes `dc` as a new directory `out` (absent or empty): one `<package>/catalog.<ext>` per
/// package, plus `catalog.<ext>` at the top for documents of no package. The files go into a
/// scratch directory beside `out` that is renamed into place at the end, so `out` is written
/// completely or not at all.
pub(crate) fn write_tree(
    dc: DeclarativeConfig,
    out: &Path,
    format: FileFormat,
) -> Result<(), LayoutError> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent).map_err(io_error("creating ", parent))?;
    let scratch = tempfile::Builder::new()
        .prefix(".migrate-")
        .tempdir_in(parent)
        .map_err(io_error("creating a scratch directory in ", parent))?;
    for (package, part) in split_by_package(dc) {
        write_part(&part, &package_dir(scratch.path(), &package)?, format)?;
    }
    // `out` is absent or an empty directory (checked before loading).
    if out.exists() {
        std::fs::remove_dir(out).map_err(io_error("replacing ", out))?;
    }
    let scratch = scratch.keep();
    std::fs::rename(&scratch, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&scratch);
        io_error("moving the catalog into ", out)(e)
    })
}

/// The directory of a package's file below `root` (`root` itself for no package).
fn package_dir(root: &Path, package: &str) -> Result<PathBuf, LayoutError> {
    if package.is_empty() {
        return Ok(root.to_path_buf());
    }
    if package.contains(['/', '\\']) || package == "." || package == ".." {
        return Err(LayoutError::PackageName(package.to_owned()));
    }
    Ok(root.join(package))
}

/// Writes `part` as `dir/catalog.<ext>`, making `dir`.
fn write_part(part: &DeclarativeConfig, dir: &Path, format: FileFormat) -> Result<(), LayoutError> {
    std::fs::create_dir_all(dir).map_err(io_error("creating ", dir))?;
    let file = dir.join(format!("catalog.{}", format.extension()));
    let created = std::fs::File::create(&file).map_err(io_error("creating ", &file))?;
    let mut w = io::BufWriter::new(created);
    (format.write(part, &mut w))
        .and_then(|()| w.flush())
        .map_err(io_error("writing ", &file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalog::file::ReadLimits;
    use catalog::walk;

    #[test]
    fn a_package_has_its_own_file_or_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("a")).unwrap();
        let package = |name: &str| format!(r#"{{"schema":"olm.package","name":"{name}"}}"#);
        std::fs::write(root.join("a/catalog.yaml"), package("a")).unwrap();
        std::fs::write(root.join("both.json"), package("b") + &package("c")).unwrap();
        let dc = walk::load_dir(root, ReadLimits::DEFAULT).unwrap();

        assert_eq!(
            package_file(root, &dc, "a").unwrap(),
            root.join("a/catalog.yaml")
        );
        assert_eq!(
            package_file(root, &dc, "new").unwrap(),
            root.join("new/catalog.json")
        );
        assert_eq!(
            package_file(root, &dc, "b").unwrap_err().to_string(),
            "package \"b\" shares its files with other packages or is spread over several \
             (both.json); add rewrites one file per package (the layout `migrate` writes)"
        );

        // A package's file keeps its format.
        let mut parts = split_by_package(dc);
        write_package(&parts.remove("a").unwrap(), &root.join("a/catalog.yaml")).unwrap();
        let text = std::fs::read_to_string(root.join("a/catalog.yaml")).unwrap();
        assert!(text.contains("schema: olm.package"), "{text}");
    }

    #[test]
    fn a_tree_is_written_whole_or_not_at_all() {
        let tmp = tempfile::tempdir().unwrap();
        let source = tmp.path().join("source");
        std::fs::create_dir(&source).unwrap();
        std::fs::write(
            source.join("catalog.json"),
            r#"{"schema":"olm.package","name":"a"}{"schema":"olm.package","name":".."}"#,
        )
        .unwrap();
        let dc = walk::load_dir(&source, ReadLimits::DEFAULT).unwrap();
        let out = tmp.path().join("out");
        assert_eq!(
            write_tree(dc, &out, FileFormat::Yaml)
                .unwrap_err()
                .to_string(),
            "package name \"..\" cannot be used as a directory name"
        );
        // Neither `out` nor the scratch directory is left behind.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
