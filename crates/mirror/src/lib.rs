//! Mirroring catalogs and the images they reference (issue #5): the ImageSetConfiguration
//! that says what to mirror ([`config`]), the graph-correct [`filter`], the [`plan`], the
//! [`copy`], the disk [`archive`], the cluster resources ([`outputs`]), and [`run`], which
//! does a whole workflow ([`workflow`]).
pub mod archive;
pub mod config;
pub mod copy;
pub mod filter;
pub mod outputs;
pub mod plan;
pub mod workflow;

pub use workflow::{Options, run};
