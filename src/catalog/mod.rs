//! File-based catalogs: the document types, the directory loader, the validated model and
//! the writer. Depends on nothing else in this crate.
pub mod types;

pub use types::*;
