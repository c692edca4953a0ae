//! File-based catalogs: the document types, the directory loader, the validated model and
//! the writer. Depends on nothing else in this crate.
pub mod csv;
pub mod decode;
mod fields;
mod graph;
mod image_ref;
pub mod json;
pub mod model;
mod problems;
pub mod property;
pub mod semver;
mod typed;
pub mod types;
pub mod walk;
pub mod write;

pub use types::*;
