//! Container images: references, registry access (auth, TLS, retries), OCI layout
//! directories, safe layer unpacking, and building images without a container engine.
//! Depends on nothing else in this crate.
mod auth;
mod create;
mod download;
pub mod elf;
mod error;
pub mod layout;
mod manifest;
pub mod progress;
mod reference;
pub mod registry;
pub mod remote;
pub mod unpack;

pub use create::{
    BaseImage, BaseLayer, BuiltImage, Layer, LayerBuilder, RunConfig, assemble, build_image,
};
pub use error::{Error, ErrorKind};
pub use reference::ImageRef;
pub use registry::{ClientOptions, Pulled, Registry, unpack};

/// Image labels that say what an image holds.
pub const LABEL_FBC: &str = "operators.operatorframework.io.index.configs.v1";
pub const LABEL_INDEX_DB: &str = "operators.operatorframework.io.index.database.v1";
pub const LABEL_BUNDLE_PACKAGE: &str = "operators.operatorframework.io.bundle.package.v1";
