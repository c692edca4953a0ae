//! Telling the kinds of catalog input on disk apart, and loading any of them as FBC.
use super::csv;
use super::dir::{BundleDir, is_bundle_dir};
use super::package_manifests::{self, is_package_manifest_tree};
use super::render::render;
use super::sqlite::{self, is_sqlite_file};
use super::template::ImageTemplate;
use crate::catalog::decode::describe_load_errors;
use crate::catalog::{DeclarativeConfig, walk};
use std::path::{Path, PathBuf};

/// A catalog input on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A file-based catalog directory.
    Fbc(PathBuf),
    /// A registry+v1 bundle directory (`manifests/` and `metadata/`).
    BundleDir(PathBuf),
    /// A legacy package-manifest tree.
    PackageManifests(PathBuf),
    /// A legacy SQLite index database.
    IndexDb(PathBuf),
}

impl Source {
    /// What `reference` names. A path that does not exist is an error here: image
    /// references are another module's business.
    pub fn detect(reference: &str) -> Result<Source, String> {
        let path = Path::new(reference);
        if !path.exists() {
            return Err(format!(
                "ref {reference:?}: no such file or directory (container images are not supported here)"
            ));
        }
        let owned = path.to_path_buf();
        if !path.is_dir() {
            return if is_sqlite_file(path) {
                Ok(Source::IndexDb(owned))
            } else {
                // opm's words; SQLite databases are the only files accepted.
                Err(format!("ref {reference:?} is not a directory: not allowed"))
            };
        }
        Ok(if is_bundle_dir(path) {
            Source::BundleDir(owned)
        } else if is_package_manifest_tree(path) {
            Source::PackageManifests(owned)
        } else {
            Source::Fbc(owned)
        })
    }

    /// Loads the input as FBC. `template` names the image of a bundle directory; FBC
    /// documents are parsed, not validated, as `opm render` does.
    pub fn load(&self, template: Option<&ImageTemplate>) -> Result<DeclarativeConfig, String> {
        match self {
            Source::Fbc(path) => {
                walk::load_dir(path).map_err(|errors| describe_load_errors(&errors))
            }
            Source::BundleDir(path) => {
                let b = BundleDir::read(path).map_err(|e| e.to_string())?;
                let image = template.map_or_else(String::new, |t| {
                    t.expand(b.package(), b.name(), &csv::version(b.csv()))
                });
                Ok(DeclarativeConfig {
                    bundles: vec![render(&b, &image)],
                    ..DeclarativeConfig::default()
                })
            }
            Source::PackageManifests(path) => {
                package_manifests::load(path, &package_manifests::Options::default())
            }
            Source::IndexDb(path) => sqlite::load(path),
        }
    }
}
