//! Mirroring catalogs and the images they reference (issue #5). So far: the
//! ImageSetConfiguration that says what to mirror.
pub mod config;
