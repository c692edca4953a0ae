//! The catalogd API served alone, for catalogs published at run time (the ClusterCatalog
//! controller): no gRPC catalog, no readiness to wait for; a catalog not (yet) published
//! answers `404`, as catalogd does.
use super::catalogs::Catalogs;
use super::http::{self, HttpOptions};
use super::listen::{ListenError, bind};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{info, warn};

/// A running catalogd API listener.
pub struct CatalogdServer {
    /// The address it listens on (port 0 given: the one picked).
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Binds `addr` (a port, on every interface, or HOST:PORT) and serves `catalogs` there.
pub async fn serve_catalogs(
    addr: &str,
    catalogs: Catalogs,
    options: HttpOptions,
) -> Result<CatalogdServer, ListenError> {
    let (listener, addr) = bind(addr).await?;
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    info!("serving the catalogd API on {scheme}://{addr}/catalogs/");
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(http::serve(listener, catalogs, options, None, stop_rx));
    Ok(CatalogdServer { addr, stop, task })
}

impl CatalogdServer {
    /// Stops accepting, lets downloads in flight finish for up to `grace`, then cuts them.
    pub async fn stop(self, grace: Duration) {
        let CatalogdServer { stop, mut task, .. } = self;
        stop.send_replace(true);
        if tokio::time::timeout(grace, &mut task).await.is_err() {
            warn!(
                grace_secs = grace.as_secs(),
                "catalogd API downloads still running after the grace period; closing them"
            );
            task.abort();
        }
    }
}
