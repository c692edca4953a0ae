//! `add`: bundles, named by directory or image, placed into a file-based catalog on disk
//! (see [`catalog::add`] for where each one goes), and the packages they touched rewritten
//! one file each. All or nothing up to the writing: a bundle that does not fit, or a package
//! whose file cannot be told, leaves every file as it was.
use super::layout::{self, LayoutError};
use catalog::add::{Mode, NewBundle, add_bundle};
use catalog::decode::describe_load_errors;
use catalog::file::ReadLimits;
use catalog::walk;
use source::bundle_ref::{BundleRefError, PulledImage, ReadBundle};
use source::image::Images;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `add` has no --max-file-size: the catalog and the bundles are read within the default cap.
const LIMITS: ReadLimits = ReadLimits::DEFAULT;

/// A package's file, rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenPackage {
    pub package: String,
    pub file: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum AddError {
    /// The catalog has documents that cannot be read.
    #[error("{0}")]
    Load(String),
    /// A bundle directory is invalid, or a bundle image cannot be pulled.
    #[error(transparent)]
    Bundle(#[from] BundleRefError),
    /// A bundle image's content is not a valid bundle.
    #[error("{reference}: {source}")]
    BundleImage {
        reference: String,
        source: BundleRefError,
    },
    /// The bundle does not fit (already there, a missing replaces target, an invalid result).
    #[error("adding {bundle}: {reason}")]
    Conflict {
        bundle: String,
        reason: catalog::add::AddError,
    },
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// Adds the bundles `references` name (a directory, else an image) to the catalog at
/// `catalog_dir`, in order, and rewrites the file of each package they went into, calling
/// `written` after each file. A new package gets `<catalog_dir>/<package>/catalog.json`.
pub fn add_bundles(
    catalog_dir: &Path,
    references: &[String],
    mode: Mode,
    images: &mut Images,
    mut written: impl FnMut(&WrittenPackage),
) -> Result<(), AddError> {
    let original = walk::load_dir(catalog_dir, LIMITS)
        .map_err(|e| AddError::Load(describe_load_errors(&e)))?;
    let mut dc = original.clone();
    let mut touched = BTreeSet::new();
    for reference in references {
        let new = read_bundle(images, reference)?;
        touched.insert(new.bundle.package.clone());
        let bundle = new.bundle.name.clone();
        add_bundle(&mut dc, new, mode).map_err(|reason| AddError::Conflict { bundle, reason })?;
    }
    // Every file is worked out first, so that a package we cannot write leaves all untouched.
    let targets: Vec<(String, PathBuf)> = touched
        .into_iter()
        .map(|pkg| layout::package_file(catalog_dir, &original, &pkg).map(|f| (pkg, f)))
        .collect::<Result<_, _>>()?;
    let mut parts = layout::split_by_package(dc);
    for (package, file) in targets {
        layout::write_package(&parts.remove(&package).unwrap_or_default(), &file)?;
        written(&WrittenPackage { package, file });
    }
    Ok(())
}

/// The bundle `reference` names: a directory (its bundle has no image), else an image.
fn read_bundle(images: &mut Images, reference: &str) -> Result<NewBundle, AddError> {
    let path = Path::new(reference);
    if path.is_dir() {
        return Ok(ReadBundle::read_dir(path, LIMITS)?.to_new_bundle(""));
    }
    let pulled = PulledImage::pull(images, reference)?;
    let bundle = pulled
        .read(LIMITS)
        .map_err(|source| AddError::BundleImage {
            reference: reference.to_owned(),
            source,
        })?;
    Ok(bundle.to_new_bundle(reference))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes bundle `foo.v<version>` of channel beta, replacing `replaces`, below `root`.
    fn bundle(root: &Path, version: &str, replaces: &str) -> String {
        let dir = root.join(format!("foo-{version}"));
        std::fs::create_dir_all(dir.join("manifests")).unwrap();
        std::fs::create_dir_all(dir.join("metadata")).unwrap();
        let prefix = "operators.operatorframework.io.bundle";
        std::fs::write(
            dir.join("metadata/annotations.yaml"),
            format!("annotations:\n  {prefix}.package.v1: foo\n  {prefix}.channels.v1: beta\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("manifests/csv.yaml"),
            format!(
                "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n\
                 metadata: {{name: foo.v{version}}}\nspec: {{version: {version}, replaces: {replaces:?}}}\n"
            ),
        )
        .unwrap();
        dir.display().to_string()
    }

    /// Every file below `dir` with its bytes.
    fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(files(&path));
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
        out.sort();
        out
    }

    fn add(catalog: &Path, references: &[String]) -> Result<Vec<WrittenPackage>, AddError> {
        let mut images = Images::new(Default::default(), Default::default());
        let mut written = Vec::new();
        add_bundles(catalog, references, Mode::Replaces, &mut images, |w| {
            written.push(w.clone())
        })?;
        Ok(written)
    }

    #[test]
    fn bundles_go_into_one_file_per_package_or_nothing_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let catalog = tmp.path().join("catalog");
        std::fs::create_dir(&catalog).unwrap();
        let v1 = bundle(tmp.path(), "0.1.0", "");
        let v2 = bundle(tmp.path(), "0.2.0", "foo.v0.1.0");
        let v3 = bundle(tmp.path(), "0.3.0", "foo.v0.2.5");

        let written = add(&catalog, &[v1.clone(), v2]).unwrap();
        let file = catalog.join("foo/catalog.json");
        assert_eq!(
            written,
            [WrittenPackage {
                package: "foo".into(),
                file: file.clone()
            }]
        );
        let dc = walk::load_dir(&catalog, LIMITS).unwrap();
        assert_eq!(dc.bundles.len(), 2);
        assert_eq!(dc.channels[0].entries[1].replaces, "foo.v0.1.0");

        let before = files(&catalog);
        let again = add(&catalog, &[v3, v1]).unwrap_err().to_string();
        assert_eq!(
            again,
            r#"adding foo.v0.3.0: bundle "foo.v0.3.0" replaces "foo.v0.2.5", which is not in package "foo""#
        );
        assert_eq!(files(&catalog), before);
    }
}
