//! Dependency resolution with OLM classic and OLM v1 semantics (resolution spec).
//!
//! Version grammars (blang, Masterminds, version plus release) live in `catalog`, shared with
//! catalog validation and mirror filtering.
//! - [`olm_constraint`], [`predicate`], [`cel_rule`]: requirements and what satisfies them;
//!   [`go_json`] words JSON syntax errors in them as OLM does;
//! - [`solver`]: variables and constraints, the preference search and explanations;
//! - [`classic`]: OLM classic resolution of a namespace's subscriptions;
//! - [`v1`]: OLM v1 resolution of one ClusterExtension;
//! - [`openshift`]: the `olm.maxOpenShiftVersion` upgrade checks;
//! - [`safety`]: OLM's install rules checked against the cluster's state (CRD versions,
//!   OperatorGroups, maxOpenShiftVersion);
//! - [`service`]: a whole request (CLI file or gRPC message) to its answer.
mod cel_rule;
pub mod classic;
mod go_json;
mod olm_constraint;
pub mod openshift;
mod predicate;
pub mod safety;
pub mod service;
pub mod solver;
pub mod v1;

pub use cel_rule::CelRule;
pub use olm_constraint::OlmConstraint;
