//! Mirroring catalogs and the images they reference (issue #5): the ImageSetConfiguration
//! that says what to mirror ([`config`]), the graph-correct [`filter`], the [`plan`], the
//! [`copy`], the disk [`archive`], the cluster resources ([`outputs`]), and [`run`], which
//! does a whole workflow ([`workflow`]) or says why it stopped ([`Error`]); [`delete()`]
//! plans and removes what an earlier image set mirrored.
mod archive;
mod attachments;
pub mod config;
mod copy;
mod delete;
mod error;
pub mod filter;
mod outputs;
mod plan;
mod platforms;
mod workflow;

pub use delete::{DeleteOptions, delete};
pub use error::Error;
pub use workflow::{Options, run};
