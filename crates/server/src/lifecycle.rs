//! A server from the moment its listeners run to its stop: every listener shares one
//! readiness state and one stop signal. Health says NOT_SERVING and registry calls wait until
//! the catalog is published; a stop turns readiness off, closes the listeners and gives the
//! calls and downloads in progress a grace period.
use super::catalogs::Catalogs;
use super::error::Error;
use super::grpc::{self, DESCRIPTOR_SETS, Services};
use super::limits::Limits;
use super::listen::Listeners;
use super::metrics::{CatalogFacts, Metrics};
use super::resolution::ResolutionOptions;
use super::serving::{self, Publisher};
use super::{endpoint, health, http};
use catalog::file::ReadLimits;
use std::sync::Arc;
use std::time::Duration;
use store::cache::OpenIndex;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic_health::pb::health_check_response::ServingStatus;
use tracing::{error, info, warn};
use unfinished::ScratchDir;

/// The listeners' tasks, and the senders that drive them.
pub(crate) struct Running {
    grpc: JoinHandle<Result<(), tonic::transport::Error>>,
    catalogd: JoinHandle<()>,
    /// What the catalogd API serves: the server's own catalog and those loaded beside it.
    catalogs: Catalogs,
    publisher: Publisher,
    health: watch::Sender<ServingStatus>,
    stop: watch::Sender<bool>,
    metrics: Option<Arc<Metrics>>,
}

impl Running {
    /// Starts serving on `listeners` (no catalog yet), every client within `limits`;
    /// `resolution` and `read_limits` bound what the resolution service reads.
    pub(crate) fn start(
        listeners: Listeners,
        resolution: ResolutionOptions,
        limits: Limits,
        read_limits: ReadLimits,
    ) -> Result<Running, Error> {
        let (publisher, catalog) = serving::loading();
        let (health, health_service) = health::health();
        let metrics = listeners
            .metrics
            .as_ref()
            .map(|_| Arc::new(Metrics::new(&DESCRIPTOR_SETS)));
        let (stop, stop_rx) = watch::channel(false);
        let services = Services {
            catalog: catalog.clone(),
            health: health_service,
            metrics: metrics.clone(),
            resolution,
            read_limits,
        };
        let grpc = grpc::start(listeners.grpc, services, limits, stop_rx.clone())?;
        let catalogs = Catalogs::new();
        let catalogd = match listeners.catalogd {
            Some((listener, name, options)) => {
                catalogs.insert(&name, catalog);
                tokio::spawn(http::serve(
                    listener,
                    catalogs.clone(),
                    options,
                    metrics.clone(),
                    stop_rx.clone(),
                ))
            }
            None => tokio::spawn(async {}),
        };
        if let (Some(listener), Some(metrics)) = (listeners.metrics, &metrics) {
            tokio::spawn(endpoint::serve(
                listener,
                metrics.clone(),
                health.subscribe(),
                stop_rx,
            ));
        }
        Ok(Running {
            grpc,
            catalogd,
            catalogs,
            publisher,
            health,
            stop,
            metrics,
        })
    }

    /// Serves `loaded`, described by `facts`; returns the private directory its index lives
    /// in, if any, which must outlive the serving.
    pub(crate) fn publish(&self, loaded: OpenIndex, facts: &CatalogFacts) -> Option<ScratchDir> {
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
        if let Some(m) = &self.metrics {
            m.catalog_loaded(facts);
        }
        self.publisher.publish(Arc::new(loaded.store));
        self.health.send_replace(ServingStatus::Serving);
        info!("serving registry");
        loaded.scratch
    }

    /// Names a catalog served over HTTP only, which answers `503` until [`Self::publish_more`]
    /// serves its index.
    pub(crate) fn announce(&self, name: &str) {
        let (_never, loading) = serving::loading();
        self.catalogs.insert(name, loading);
    }

    /// Serves `loaded`, described by `facts`, over HTTP as `name`.
    pub(crate) fn publish_more(&self, name: &str, loaded: OpenIndex, facts: &CatalogFacts) {
        info!(
            catalog = name,
            digest = %facts.digest,
            bundles = facts.bundles,
            load_ms = facts.load.as_millis() as u64,
            "catalog loaded"
        );
        self.catalogs.publish(name, loaded);
    }

    /// Waits for the gRPC server to end by itself (its transport failed).
    pub(crate) async fn grpc_ended(&mut self) -> Result<(), Error> {
        (&mut self.grpc)
            .await
            .map_err(|e| Error::Task(e.to_string()))??;
        Ok(())
    }

    /// The graceful stop: watchers get NOT_SERVING, then their streams end (the sender goes
    /// away), so that they do not hold the connection open; every listener stops accepting,
    /// and what is in progress gets `grace` to finish before it is cut.
    pub(crate) async fn stop(self, grace: Duration) {
        let Running {
            mut grpc,
            mut catalogd,
            publisher,
            health,
            stop,
            ..
        } = self;
        health.send_replace(ServingStatus::NotServing);
        drop(health);
        stop.send_replace(true);
        // Calls still waiting for a catalog that will now never be published are answered
        // at once (UNAVAILABLE) instead of holding the stop for the whole grace period; calls
        // on a published catalog are not affected.
        drop(publisher);
        let deadline = tokio::time::Instant::now() + grace;
        match tokio::time::timeout_at(deadline, &mut grpc).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => error!("server error while stopping: {e}"),
            Ok(Err(e)) => error!("server task failed: {e}"),
            Err(_) => {
                warn!(
                    grace_secs = grace.as_secs(),
                    "calls still running after the grace period; closing them"
                );
                grpc.abort();
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
    }
}
