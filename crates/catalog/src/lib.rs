//! File-based catalogs: the document types, the directory loader, the validated model and
//! the writer. Depends on no other crate of the workspace.
//!
//! - [`walk`] finds a catalog's files and loads them; [`decode`] turns one file into
//!   [`Document`]s; [`json`] is the Go-compatible canonical JSON all values are kept in.
//! - [`property`] reads typed property values; [`model`] assembles and validates the graph;
//!   [`csv`] synthesises a CSV from `olm.csv.metadata`; [`semver`] is blang's grammar;
//!   [`version_constraint`] the Masterminds grammar of OLM v1 `version`; [`version_release`]
//!   the order key of version plus release; [`substitutes`] reads `olm.substitutesFor` and
//!   finds its cycles.
//! - [`write`] prints a catalog as upstream's `render` does.
pub mod add;
pub mod csv;
pub mod decode;
mod fields;
pub mod file;
pub use fields::kind_name;
pub use typed::special_field;
pub mod graph;
mod image_ref;
pub mod json;
pub mod model;
mod problems;
pub mod property;
pub mod quote;
pub mod semver;
pub mod substitutes;
mod typed;
pub mod types;
pub mod version_constraint;
pub mod version_release;
pub mod walk;
pub mod write;

pub use types::*;
