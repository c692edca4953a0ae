//! Telling the kinds of catalog input on disk apart, and loading any of them as FBC.
use super::Error;
use super::bundle_ref::ReadBundle;
use bundle::dir::is_bundle_dir;
use bundle::package_manifests::{self, is_package_manifest_tree};
use bundle::sqlite::{self, is_sqlite_file};
use bundle::template::ImageTemplate;
use catalog::decode::describe_load_errors;
use catalog::file::ReadLimits;
use catalog::{DeclarativeConfig, walk};
use std::path::{Path, PathBuf};

/// A catalog input on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Local {
    /// A file-based catalog directory.
    Fbc(PathBuf),
    /// A registry+v1 bundle directory (`manifests/` and `metadata/`).
    BundleDir(PathBuf),
    /// A legacy package-manifest tree.
    PackageManifests(PathBuf),
    /// A legacy SQLite index database.
    IndexDb(PathBuf),
}

impl Local {
    /// What `reference` names. A path that does not exist is an error here: image
    /// references are another module's business.
    pub(crate) fn detect(reference: &str) -> Result<Local, Error> {
        let path = Path::new(reference);
        if !path.exists() {
            return Err(Error::Invalid(format!(
                "ref {reference:?}: no such file or directory (container images are not supported here)"
            )));
        }
        let owned = path.to_path_buf();
        if !path.is_dir() {
            return if is_sqlite_file(path) {
                Ok(Local::IndexDb(owned))
            } else {
                // opm's words; SQLite databases are the only files accepted.
                Err(Error::Invalid(format!(
                    "ref {reference:?} is not a directory: not allowed"
                )))
            };
        }
        Ok(if is_bundle_dir(path) {
            Local::BundleDir(owned)
        } else if is_package_manifest_tree(path) {
            Local::PackageManifests(owned)
        } else {
            Local::Fbc(owned)
        })
    }

    /// Loads the input as FBC, its files read within `limits`. `template` names the image of
    /// a bundle directory; FBC documents are parsed, not validated, as `opm render` does.
    pub(crate) fn load(
        &self,
        template: Option<&ImageTemplate>,
        limits: ReadLimits,
    ) -> Result<DeclarativeConfig, Error> {
        self.read(template, limits).map_err(Error::Invalid)
    }

    fn read(
        &self,
        template: Option<&ImageTemplate>,
        limits: ReadLimits,
    ) -> Result<DeclarativeConfig, String> {
        match self {
            Local::Fbc(path) => {
                walk::load_dir(path, limits).map_err(|errors| describe_load_errors(&errors))
            }
            Local::BundleDir(path) => {
                let b = ReadBundle::read_dir(path, limits).map_err(|e| e.to_string())?;
                let image = template.map_or_else(String::new, |t| b.image_from(t));
                Ok(DeclarativeConfig {
                    bundles: vec![b.render(&image)],
                    ..DeclarativeConfig::default()
                })
            }
            Local::PackageManifests(path) => {
                let options = package_manifests::Options {
                    limits,
                    ..Default::default()
                };
                package_manifests::load(path, &options).map_err(|e| e.to_string())
            }
            Local::IndexDb(path) => sqlite::load(path).map_err(|e| e.to_string()),
        }
    }
}
