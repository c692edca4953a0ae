//! Acquiring inputs: whatever a command or a request names, read as a file-based catalog
//! ([`catalog::DeclarativeConfig`]) or as a directory of one.
//!
//! - `disk` tells the inputs on disk apart (FBC directory, bundle directory, legacy
//!   package-manifest tree, legacy `index.db`) and loads any of them.
//! - [`image`] pulls images and reads any of them by its labels (catalog, bundle, legacy
//!   index); [`image::Images`] makes a registry client only once an image is named.
//! - [`reference`] is what `render`, `render-graph` and `diff` accept: a path or an image.
//! - [`remote`] reads other catalog servers over api.Registry, cached and shared per address.
//! - [`render`] is what `render` and `migrate` make of their inputs: one catalog, migrated.
//! - [`bundle_ref`] reads one bundle, by directory or image, for `add` and the templates.
//! - [`build`] builds bundle and catalog images and pushes them.
//!
//! Depends on `catalog`, `bundle` and `image`; what a caller makes of the catalog (an index,
//! a resolution, a mirror plan) is the caller's.
pub mod build;
pub mod bundle_ref;
mod disk;
pub mod image;
pub mod reference;
pub mod remote;
pub mod render;

pub use remote::{RemoteCatalogs, RemoteLimits, RemoteManifests};

/// Why an input could not be read, by the kind a caller acts on. Messages name the input.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// The input is missing, malformed, or of a kind this use does not take.
    #[error("{0}")]
    Invalid(String),
    /// An image could not be pulled or unpacked (its kind says why).
    #[error(transparent)]
    Image(#[from] ::image::Error),
    /// A catalog server could not be read: unreachable, too slow, failing, or over the
    /// limits of one read.
    #[error("{0}")]
    Unavailable(String),
    /// Local files: a scratch directory, the catalog written for an image.
    #[error("{0}")]
    Io(String),
}
