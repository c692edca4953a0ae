//! The server of a CatalogSource pod: `api.Registry`, `api.ExperimentalRegistry`,
//! `olmregistry.resolution.v1.Resolution`, health and reflection (v1 and v1alpha) over gRPC,
//! with start-up and shutdown as OLM expects; optionally metrics and HTTP probes, and the
//! OLM v1 catalog HTTP API (see `http`).
//!
//! [`serve`] takes a [`ServeConfig`] and a shutdown future (see [`shutdown_signal`]). The
//! ports are bound before the catalog is loaded, so probes get an answer at once: health
//! says NOT_SERVING until the index is open, and registry calls wait for it. The shutdown
//! stops accepting, lets in-flight calls and streams finish (up to a grace period) and
//! returns; every listener is stopped by it and ready at the same moment. [`build_cache`]
//! is `--cache-only`: the same load into the cache directory, and no listener.
//!
//! - `config` is what the server is asked to do; `listen` binds its addresses; `load`
//!   acquires the catalog and opens its index; `grpc` starts the gRPC services; `lifecycle`
//!   holds the running listeners until their graceful stop.
mod calls;
mod catalogs;
mod config;
mod connection;
mod endpoint;
mod error;
mod experimental;
mod grpc;
mod health;
pub mod http;
mod lifecycle;
mod limits;
mod listen;
mod load;
mod metrics;
mod process;
mod registry;
pub mod resolution;
pub(crate) mod serving;
mod standalone;
pub mod tls;

pub use catalogs::Catalogs;
pub use config::{CacheConfig, CatalogSource, CatalogdListen, ListenConfig, ServeConfig};
pub use error::Error;
pub use limits::Limits;
pub use listen::ListenError;
pub use load::index_image;
pub use resolution::ResolutionOptions;
pub use standalone::{CatalogdServer, serve_catalogs};

use lifecycle::Running;
use listen::Listeners;
use load::Load;
use metrics::CatalogFacts;
use store::cache::OpenIndex;
use store::cache::Outcome;
use tracing::{info, warn};
use unfinished::Unfinished;

/// Serves the catalog of `config` until `shutdown` resolves (see [`shutdown_signal`]). An
/// error means the server could not start or its catalog could not be loaded.
pub async fn serve(
    config: ServeConfig,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    let unfinished = Unfinished::new();
    let served = serve_until(config, shutdown, &unfinished).await;
    // A load still running after a stop is abandoned rather than waited for (it may be stuck
    // reading a file or a registry); what it was writing goes with it.
    unfinished.remove_all();
    served
}

/// Builds or refreshes the cache of `config` (`--cache-only`) and returns, or stops early
/// when `shutdown` resolves first.
pub async fn build_cache(
    config: ServeConfig,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    let unfinished = Unfinished::new();
    let built = build_until(&config, shutdown, &unfinished).await;
    // As in `serve`: an abandoned load leaves no partial index behind.
    unfinished.remove_all();
    built
}

/// Binds, starts every listener, loads the catalogs meanwhile and serves each from the moment
/// it is open; then stops gracefully on `shutdown`.
async fn serve_until(
    config: ServeConfig,
    shutdown: impl std::future::Future<Output = ()>,
    unfinished: &Unfinished,
) -> Result<(), Error> {
    let load = Load::new(&config, false, unfinished)?;
    let more = Load::more(&config, unfinished)?;
    let listeners = Listeners::bind(config.listen).await?;
    let mut running = Running::start(
        listeners,
        config.resolution,
        config.limits,
        config.read_limits,
    )?;
    let mut extra = tokio::task::JoinSet::new();
    for (name, load) in more {
        running.announce(&name);
        extra.spawn(async move { (name, load.spawn_timed().await) });
    }
    let signal = shutdown;
    tokio::pin!(signal);
    let mut loading = load.spawn_timed();
    let mut own_loaded = false;
    // The private directory of the served index, if any: kept until the server stops.
    let mut _scratch = None;
    loop {
        let event = tokio::select! {
            loaded = &mut loading, if !own_loaded => Event::Own(loaded),
            Some(joined) = extra.join_next() => Event::More(joined),
            ended = running.grpc_ended(), if own_loaded => return ended,
            _ = &mut signal => break,
        };
        match event {
            Event::Own(loaded) => {
                let (index, facts) =
                    loaded.map_err(|e| Error::Task(format!("loading task failed: {e}")))??;
                _scratch = running.publish(index, &facts);
                own_loaded = true;
            }
            Event::More(joined) => {
                let (name, loaded) =
                    joined.map_err(|e| Error::Task(format!("loading task failed: {e}")))?;
                let named = |source| Error::Named {
                    name: name.clone(),
                    source: Box::new(source),
                };
                let (index, facts) = loaded
                    .map_err(|e| Error::Task(format!("loading task failed: {e}")))?
                    .map_err(named)?;
                running.publish_more(&name, index, &facts);
            }
        }
    }
    if !own_loaded {
        info!("stopping before the catalog finished loading");
    }
    running.stop(config.grace).await;
    Ok(())
}

/// A catalog's load as its task ends.
type Loaded = Result<Result<(OpenIndex, CatalogFacts), Error>, tokio::task::JoinError>;

/// What the serving loop waits for: its own catalog loaded, or another one.
enum Event {
    Own(Loaded),
    More(Result<(String, Loaded), tokio::task::JoinError>),
}

/// Loads the catalog into its cache directory, unless `shutdown` comes first.
async fn build_until(
    config: &ServeConfig,
    shutdown: impl std::future::Future<Output = ()>,
    unfinished: &Unfinished,
) -> Result<(), Error> {
    let load = Load::new(config, true, unfinished)?;
    tokio::select! {
        loaded = tokio::task::spawn_blocking(move || load.open()) => {
            let loaded = loaded.map_err(|e| Error::Task(e.to_string()))??;
            match loaded.outcome {
                Outcome::Reused => info!("cache is up to date"),
                Outcome::Built(_) => info!(cache = %loaded.store.path().display(), "cache built"),
            }
            Ok(())
        }
        _ = shutdown => Err(Error::Stopped),
    }
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
