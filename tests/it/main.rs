//! The integration tests, one binary: each module drives the real `olm-registry` binary or
//! server over real sockets (see `common`).

mod common;

mod add;
mod alpha_list;
mod author;
mod blob_download;
mod broken;
mod bundle_extract;
mod bundle_package_manifests;
mod bundle_render;
mod bundle_validation;
mod cache;
mod catalogd_controller;
mod catalogd_http;
mod conformance;
mod container;
mod control_plane;
mod deploy;
mod extra_vectors;
mod generate_dockerfile;
mod hostile_files;
mod images;
mod layers;
mod lifecycle;
mod migrate;
mod mirror;
mod mirror_filter;
mod mirror_list;
mod mirror_retry;
mod observability;
mod olm_e2e;
mod opm_init;
mod probe_http;
mod real_catalogs;
mod render;
mod resolution_grpc;
mod resolution_remote;
mod resolution_scenarios;
mod resolve_cli;
mod serving_under_load;
mod substitutes_cycle;
mod tls_reload;
mod traces;
