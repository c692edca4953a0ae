//! Everything that is not already a file-based catalog, rendered to one
//! ([`catalog::DeclarativeConfig`]): registry+v1 bundle directories (catalog-formats.md
//! §C), legacy package-manifest trees (§D) and legacy SQLite `index.db` files (§E).
//! Depends only on [`catalog`].
//!
//! - [`dir`] reads a bundle directory ([`manifests`] + [`metadata`]) into a [`dir::BundleDir`];
//!   [`render`] turns it into an `olm.bundle`, [`template`] names its image.
//! - [`dependencies`] and [`content`] are the bundle checks of `opm alpha bundle validate`.
//! - [`migrate`] holds the FBC migrations (`--migrate-level`).
//! - [`package_manifests`] and [`sqlite`] convert the legacy catalog formats (telling the
//!   input kinds apart is the `source` crate's).
//! - [`configmap`] is a bundle directory as the ConfigMap OLM's unpack Job writes
//!   (`alpha bundle extract`).
//! - [`Error`] says why any of them could not be read.
pub mod configmap;
pub mod content;
pub mod csv;
mod dependencies;
pub mod dir;
mod error;
pub mod manifests;
mod metadata;
pub mod migrate;
pub mod package_manifests;
pub mod render;
pub mod sqlite;
pub mod template;

pub use error::{Error, PackageManifestError};
