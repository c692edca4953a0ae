//! The gRPC listener: `api.Registry`, `api.ExperimentalRegistry`, the resolution service,
//! health and reflection (v1 and v1alpha) behind one tower layer (see `calls`), each
//! connection within the client limits.
use super::calls::CallsLayer;
use super::connection;
use super::error::Error;
use super::experimental::ExperimentalService;
use super::health::HealthService;
use super::limits::Limits;
use super::metrics::Metrics;
use super::registry::RegistryService;
use super::resolution::{ResolutionOptions, ResolutionService};
use super::serving::ServedCatalog;
use api::resolution::server::resolution_server::ResolutionServer;
use api::server::experimental_registry_server::ExperimentalRegistryServer;
use api::server::registry_server::RegistryServer;
use catalog::file::ReadLimits;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic_health::pb::health_server::HealthServer;

/// How often an open connection is pinged, and how long the answer may take before the
/// connection is taken for dead (a peer that vanished without closing it).
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(60);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Largest header block a request may send.
const MAX_HEADER_LIST_BYTES: u32 = 64 << 10;

/// The encoded descriptors of every service served: reflection describes them, and the
/// metrics create each of their methods' series at start.
pub(crate) const DESCRIPTOR_SETS: [&[u8]; 4] = [
    api::FILE_DESCRIPTOR_SET,
    tonic_health::pb::FILE_DESCRIPTOR_SET,
    tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
    tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
];

/// What the services answer from.
pub(crate) struct Services {
    pub(crate) catalog: ServedCatalog,
    pub(crate) health: HealthService,
    pub(crate) metrics: Option<Arc<Metrics>>,
    pub(crate) resolution: ResolutionOptions,
    pub(crate) read_limits: ReadLimits,
}

/// Serves the gRPC services on `listener` until `stop` turns true, then lets the calls in
/// progress finish (the caller bounds that wait).
pub(crate) fn start(
    listener: TcpListener,
    services: Services,
    limits: Limits,
    stop: watch::Receiver<bool>,
) -> Result<JoinHandle<Result<(), tonic::transport::Error>>, Error> {
    let reflection = || {
        DESCRIPTOR_SETS.iter().fold(
            tonic_reflection::server::Builder::configure(),
            |builder, set| builder.register_encoded_file_descriptor_set(set),
        )
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;
    let Services {
        catalog,
        health,
        metrics,
        resolution,
        read_limits,
    } = services;
    let max_request = limits.max_request_bytes;
    let router = tonic::transport::Server::builder()
        .max_concurrent_streams(limits.max_streams_per_connection)
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
        .http2_max_header_list_size(MAX_HEADER_LIST_BYTES)
        .layer(CallsLayer {
            metrics: metrics.clone(),
        })
        .add_service(
            RegistryServer::new(RegistryService {
                catalog: catalog.clone(),
            })
            .max_decoding_message_size(max_request)
            .max_encoding_message_size(usize::MAX),
        )
        .add_service(
            ExperimentalRegistryServer::new(ExperimentalService {
                catalog: catalog.clone(),
            })
            .max_decoding_message_size(max_request),
        )
        .add_service(
            ResolutionServer::new(ResolutionService::new(
                catalog,
                resolution,
                read_limits,
                metrics,
            ))
            .max_decoding_message_size(max_request),
        )
        .add_service(HealthServer::new(health))
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha);
    // The stop reaches tonic as the end of the incoming stream, not as a shutdown signal of
    // its own: tonic stops taking connections the moment its signal fires, so one accepted
    // just before would wait unserved (a client with no HTTP/2 preface) until the last call
    // ended. Ending the stream hands over every accepted connection first; tonic then shuts
    // all of them down gracefully (its signal, which never fires, only turns that on).
    let incoming = connection::incoming(listener, Arc::new(limits), stop);
    Ok(tokio::spawn(router.serve_with_incoming_shutdown(
        incoming,
        std::future::pending::<()>(),
    )))
}
