//! Mirroring catalogs and the images they reference (issue #5). So far: the
//! ImageSetConfiguration that says what to mirror.
pub mod archive;
pub mod config;
pub mod copy;
pub mod filter;
pub mod outputs;
pub mod plan;
