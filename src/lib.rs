//! olm-registry: ingest, serve, resolve and mirror Operator Lifecycle Manager catalogs.
pub mod api;
pub mod bundle;
pub mod catalog;
pub mod cli;
pub mod image;
pub mod mirror;
pub mod progress;
pub mod resolve;
pub mod server;
pub mod store;
pub mod unfinished;
