//! The gRPC server of a CatalogSource pod: `api.Registry`, `api.ExperimentalRegistry`,
//! `olmregistry.resolution.v1.Resolution`, health and reflection (v1 and v1alpha), with
//! start-up and shutdown as OLM expects.
//!
//! The port is bound before the catalog is loaded, so probes get an answer at once: health
//! says NOT_SERVING until the index is open, and registry calls wait for it. SIGTERM or
//! SIGINT stops accepting, lets in-flight calls and streams finish (up to a grace period)
//! and returns. With a metrics listener, Prometheus metrics and HTTP probes are served
//! there; with a catalogd listener, the OLM v1 catalog HTTP API (see `http`): both are
//! stopped by the same signal and ready at the same moment.
mod calls;
mod connection;
mod endpoint;
mod error;
mod experimental;
mod health;
pub mod http;
mod limits;
mod metrics;
mod process;
mod registry;
pub mod resolution;
pub(crate) mod serving;
pub mod tls;

pub use error::Error;
pub use limits::Limits;
pub use resolution::ResolutionOptions;

use api::resolution::server::resolution_server::ResolutionServer;
use api::server::experimental_registry_server::ExperimentalRegistryServer;
use api::server::registry_server::RegistryServer;
use metrics::{CatalogFacts, Metrics};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::cache::{CacheError, OpenIndex, Outcome};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::HealthServer;
use tracing::{error, info, warn};

/// How often an open connection is pinged, and how long the answer may take before the
/// connection is taken for dead (a peer that vanished without closing it).
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(60);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Largest header block a request may send.
const MAX_HEADER_LIST_BYTES: u32 = 64 << 10;

/// The sockets a server listens on, bound by the caller.
pub struct Listeners {
    pub grpc: TcpListener,
    /// Metrics and HTTP probes (see `endpoint`).
    pub metrics: Option<TcpListener>,
    /// The catalogd HTTP API, and how it is served.
    pub catalogd: Option<(TcpListener, http::HttpOptions)>,
}

/// Serves on `listeners` the catalog that `load` opens (on a blocking thread) until
/// `shutdown` resolves (see `shutdown_signal`), every client within `limits`; `resolution`
/// says which other catalog servers the resolution service may read and how. An error means
/// the catalog could not be loaded.
pub async fn run<L>(
    listeners: Listeners,
    load: L,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
    resolution: ResolutionOptions,
    limits: Limits,
    read_limits: catalog::file::ReadLimits,
) -> Result<(), Error>
where
    L: FnOnce() -> Result<OpenIndex, Error> + Send + 'static,
{
    let (publisher, catalog) = serving::loading();
    let (health_tx, health) = health::health();
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(
                tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
            )
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;

    let Listeners {
        grpc: listener,
        metrics: metrics_listener,
        catalogd,
    } = listeners;
    let metrics = metrics_listener.as_ref().map(|_| {
        Arc::new(Metrics::new(&[
            api::FILE_DESCRIPTOR_SET,
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
        ]))
    });
    // The one shutdown signal of every listener.
    let (stop_tx, stop_rx) = watch::channel(false);
    let max_request = limits.max_request_bytes;
    let router = tonic::transport::Server::builder()
        .max_concurrent_streams(limits.max_streams_per_connection)
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
        .http2_max_header_list_size(MAX_HEADER_LIST_BYTES)
        .layer(calls::CallsLayer {
            metrics: metrics.clone(),
        })
        .add_service(
            RegistryServer::new(registry::RegistryService {
                catalog: catalog.clone(),
            })
            .max_decoding_message_size(max_request)
            .max_encoding_message_size(usize::MAX),
        )
        .add_service(
            ExperimentalRegistryServer::new(experimental::ExperimentalService {
                catalog: catalog.clone(),
            })
            .max_decoding_message_size(max_request),
        )
        .add_service(
            ResolutionServer::new(resolution::ResolutionService::new(
                catalog.clone(),
                resolution,
                read_limits,
                metrics.clone(),
            ))
            .max_decoding_message_size(max_request),
        )
        .add_service(HealthServer::new(health))
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha);
    let incoming = connection::incoming(listener, Arc::new(limits));
    let mut grpc_stop = stop_rx.clone();
    let mut server = tokio::spawn(router.serve_with_incoming_shutdown(incoming, async move {
        let _ = grpc_stop.wait_for(|stopping| *stopping).await;
    }));
    let mut catalogd = match catalogd {
        Some((listener, options)) => tokio::spawn(http::serve(
            listener,
            catalog,
            options,
            metrics.clone(),
            stop_rx.clone(),
        )),
        None => tokio::spawn(async {}),
    };
    if let (Some(listener), Some(metrics)) = (metrics_listener, &metrics) {
        tokio::spawn(endpoint::serve(
            listener,
            metrics.clone(),
            health_tx.subscribe(),
            stop_rx,
        ));
    }

    let signal = shutdown;
    tokio::pin!(signal);
    let mut loading = tokio::task::spawn_blocking(move || {
        let _span = tracing::info_span!(target: store::SPAN_TARGET, "catalog.load").entered();
        let started = Instant::now();
        let loaded = load()?;
        let facts = catalog_facts(&loaded, started.elapsed())?;
        Ok::<_, Error>((loaded, facts))
    });
    let mut _scratch = None;
    tokio::select! {
        loaded = &mut loading => {
            let (OpenIndex { store, scratch, .. }, facts) =
                loaded.map_err(|e| Error::Task(format!("loading task failed: {e}")))??;
            info!(
                digest = %facts.digest,
                packages = facts.packages,
                channels = facts.channels,
                bundles = facts.bundles,
                index_bytes = facts.index_bytes,
                start = if facts.warm { "warm" } else { "cold" },
                load_ms = facts.load.as_millis() as u64,
                "catalog loaded"
            );
            if let Some(m) = &metrics {
                m.catalog_loaded(&facts);
            }
            publisher.publish(Arc::new(store));
            _scratch = scratch;
            health_tx.send_replace(ServingStatus::Serving);
            info!("serving registry");
            tokio::select! {
                _ = &mut signal => {}
                result = &mut server => {
                    return Ok(result.map_err(|e| Error::Task(e.to_string()))??);
                }
            }
        }
        _ = &mut signal => {
            info!("stopping before the catalog finished loading");
        }
    }
    // Watchers get NOT_SERVING, then their streams end (the sender goes away), so that they
    // do not hold the connection open through the graceful stop.
    health_tx.send_replace(ServingStatus::NotServing);
    drop(health_tx);
    stop_tx.send_replace(true);
    let deadline = tokio::time::Instant::now() + grace;
    match tokio::time::timeout_at(deadline, &mut server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => error!("server error while stopping: {e}"),
        Ok(Err(e)) => error!("server task failed: {e}"),
        Err(_) => {
            warn!(
                grace_secs = grace.as_secs(),
                "calls still running after the grace period; closing them"
            );
            server.abort();
        }
    }
    if tokio::time::timeout_at(deadline, &mut catalogd)
        .await
        .is_err()
    {
        warn!(
            grace_secs = grace.as_secs(),
            "catalogd API downloads still running after the grace period; closing them"
        );
        catalogd.abort();
    }
    info!("stopped");
    Ok(())
}

/// What the logs and metrics say about a catalog that `took` to load. Blocking: it counts in
/// the index.
fn catalog_facts(loaded: &OpenIndex, took: Duration) -> Result<CatalogFacts, CacheError> {
    let (packages, channels, bundles) = loaded
        .store
        .with_conn(store::query::counts)
        .map_err(|e| CacheError::Io(format!("counting the catalog: {e:?}")))?;
    let index_bytes = std::fs::metadata(loaded.store.path())
        .map(|m| i64::try_from(m.len()).unwrap_or(i64::MAX))
        .unwrap_or_default();
    Ok(CatalogFacts {
        digest: loaded.store.digest().to_owned(),
        packages,
        channels,
        bundles,
        index_bytes,
        warm: matches!(loaded.outcome, Outcome::Reused),
        load: took,
    })
}

/// Resolves on SIGTERM or SIGINT. The handlers are installed by the call itself, not when
/// the future is first polled, so that a signal sent as soon as the process says it is
/// listening (or loading) is never met by the default action, which kills without cleanup.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    async move {
        match (term, int) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => info!("received SIGTERM"),
                    _ = int.recv() => info!("received SIGINT"),
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                warn!("cannot listen for SIGTERM/SIGINT ({e}); only a kill stops this process");
                std::future::pending::<()>().await;
            }
        }
    }
}
