//! catalogd's place in OLM v1, from our index: watches `ClusterCatalog` objects
//! (`olm.operatorframework.io/v1`), pulls and indexes each one's image, serves it over the
//! catalogd HTTP API under `/catalogs/NAME/`, and writes the status catalogd writes
//! (catalogd-http.md §8), including `urls.base`, which is how operator-controller finds it.
//!
//! Every replica serves every catalog (an index is immutable per digest, built by each replica
//! for itself, off the serving path); only writes to the API server (status, finalizer) are
//! left to the replica holding a Lease.
//!
//! - `clustercatalog` reads the object; `status` computes the status to write; `worker`
//!   reconciles one catalog; `watcher` lists and watches them; `lease` elects the writer.
mod clustercatalog;
mod lease;
mod status;
mod watcher;
mod worker;

use catalog::file::ReadLimits;
use cluster::Connection;
use image::{ClientOptions, Registry};
use kube::api::{Api, ApiResource, GroupVersionKind};
use server::http::HttpOptions;
use server::{Catalogs, serve_catalogs};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use tracing::info;
use unfinished::Unfinished;

/// How the controller runs.
pub struct Options {
    /// Where the catalogd HTTP API listens (a port, or HOST:PORT).
    pub http_addr: String,
    /// What goes before `/catalogs/NAME` in `status.urls.base` (catalogd's external address,
    /// with its scheme).
    pub base_url: String,
    pub http: HttpOptions,
    /// How catalog images are pulled.
    pub image: ClientOptions,
    pub connection: Connection,
    pub lease: LeaseOptions,
    /// How much of a catalog's files is read.
    pub read_limits: ReadLimits,
    /// How long downloads in flight may run after the stop.
    pub grace: Duration,
}

/// The Lease that says which replica writes status.
pub struct LeaseOptions {
    pub namespace: String,
    pub name: String,
    /// This replica's name in the Lease (unique among the replicas).
    pub identity: String,
}

/// Why the controller could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Cluster(#[from] cluster::Error),
    #[error("image registry client: {0}")]
    Registry(#[from] image::Error),
    #[error(transparent)]
    Listen(#[from] server::ListenError),
}

/// An API call that failed, as one line: the API server's own message and code (kube's text
/// adds a debug dump of the same Status); a 403 also says where the missing rule belongs.
pub(crate) struct ApiFailure<'a>(pub(crate) &'a kube::Error);

impl ApiFailure<'_> {
    /// A refusal for want of a permission: the deployment is wrong, not the moment.
    pub(crate) fn forbidden(&self) -> bool {
        matches!(self.0, kube::Error::Api(status) if status.code == 403)
    }
}

impl std::fmt::Display for ApiFailure<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            kube::Error::Api(status) if status.code == 403 => write!(
                f,
                "{} (403 Forbidden: the ServiceAccount lacks this permission; deploy/catalogd.yaml \
                 lists the rules catalogd needs)",
                status.message
            ),
            kube::Error::Api(status) => {
                write!(f, "{} ({} {})", status.message, status.code, status.reason)
            }
            other => write!(f, "{other}"),
        }
    }
}

/// Logs a failed API call: an error when a permission is missing (it will not mend itself),
/// a warning otherwise (it is retried).
macro_rules! api_failure {
    ($error:expr, $($field:ident = %$value:expr,)* $context:literal) => {{
        let failure = $crate::ApiFailure($error);
        if failure.forbidden() {
            tracing::error!($($field = %$value,)* concat!($context, ": {}"), failure);
        } else {
            tracing::warn!($($field = %$value,)* concat!($context, ": {}"), failure);
        }
    }};
}
pub(crate) use api_failure;

/// Pulls and index builds at once.
const CONCURRENT_LOADS: usize = 2;

/// Runs the controller and its HTTP API until `shutdown` resolves; a held Lease is then
/// released and downloads in flight get `grace` to finish.
pub async fn run(options: Options, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
    let client = options.connection.client().await?;
    let registry = Arc::new(Registry::new(&options.image)?);
    let catalogs = Catalogs::new();
    let server = serve_catalogs(&options.http_addr, catalogs.clone(), options.http).await?;
    let (leader, leader_rx) = watch::channel(false);
    let (stop, stop_rx) = watch::channel(false);
    let election = lease::Election::new(
        client.clone(),
        &options.lease.namespace,
        &options.lease.name,
        &options.lease.identity,
    );
    let election = tokio::spawn(election.run(leader, stop_rx));
    let gvk = GroupVersionKind::gvk("olm.operatorframework.io", "v1", "ClusterCatalog");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "clustercatalogs");
    let unfinished = Unfinished::new();
    let shared = Arc::new(worker::Shared {
        api: Api::all_with(client, &resource),
        catalogs,
        registry,
        base_url: options.base_url,
        leader: leader_rx,
        loads: Semaphore::new(CONCURRENT_LOADS),
        read_limits: options.read_limits,
        unfinished: unfinished.clone(),
    });
    let controller = tokio::spawn(watcher::run(shared));
    shutdown.await;
    info!("stopping");
    // Reconcilers stop first, so that no status is written once the Lease is given up.
    controller.abort();
    let _ = controller.await;
    stop.send_replace(true);
    let _ = election.await;
    server.stop(options.grace).await;
    unfinished.remove_all();
    info!("stopped");
    Ok(())
}
