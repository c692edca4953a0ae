//! olm-registry: ingest, serve, resolve and mirror Operator Lifecycle Manager catalogs.
pub mod api;
pub mod author;
pub mod bundle;
pub mod catalog;
pub mod cli;
pub mod image;
pub mod mirror;
pub mod progress;
pub mod resolve;
pub mod server;
pub mod source;
pub mod store;
pub mod unfinished;

/// The target of spans only traces record (see `cli::telemetry`): logs leave it out, so
/// they cost nothing when tracing is off.
pub const SPAN_TARGET: &str = "olm_registry::span";
