//! Why a bundle directory, a package-manifest tree or an index database could not be read.
//! Every message names the file, directory or object; the variant says what failed.
use std::io;
use std::path::PathBuf;

use super::dir::BundleError;
use catalog::file::ReadLimits;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading {}: {source}", path.display())]
    ReadFile { path: PathBuf, source: io::Error },
    #[error("reading directory {}: {source}", path.display())]
    ReadDir { path: PathBuf, source: io::Error },
    /// A file over the catalog file cap (`--max-file-size`).
    #[error("{}: {}", path.display(), limits.too_large())]
    TooLarge { path: PathBuf, limits: ReadLimits },
    /// A bundle directory, with everything wrong with it.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// A package manifest (`file`, relative to the tree) that is malformed.
    #[error("{file}: {source}")]
    PackageManifest {
        file: String,
        source: PackageManifestError,
    },
    #[error("{file}: a second package manifest in the same directory")]
    SecondPackageManifest { file: String },
    /// A package-manifest tree whose packages cannot be converted: every problem found.
    #[error("invalid package manifests in {}:{}", root.display(), indented(problems))]
    PackageManifests {
        root: PathBuf,
        problems: Vec<String>,
    },
    /// An index database that SQLite cannot read as one.
    #[error("{}: {source}", path.display())]
    IndexDb {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "{}: not an operator registry index database (no table {table:?})",
        path.display()
    )]
    NotIndexDb { path: PathBuf, table: &'static str },
    /// An `olm.bundle.object` a migration cannot decode.
    #[error("bundle {bundle:?}: olm.bundle.object: {reason}")]
    BundleObject { bundle: String, reason: String },
}

/// Why a document with a `packageName` is not a usable package manifest.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PackageManifestError {
    #[error("package {package:?}: channels[{index}] must set name and currentCSV")]
    IncompleteChannel { package: String, index: usize },
    #[error("package {package:?} has no channels")]
    NoChannels { package: String },
}

/// Problems as the lines below a heading, each on its own line, indented.
pub(crate) fn indented(problems: &[String]) -> String {
    problems.iter().map(|p| format!("\n  {p}")).collect()
}
