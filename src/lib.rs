//! olm-registry: ingest, serve, resolve and mirror Operator Lifecycle Manager catalogs.
pub mod api;
pub mod catalog;
pub mod cli;
pub mod server;
pub mod store;
