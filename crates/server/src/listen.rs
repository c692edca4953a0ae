//! Binding the server's addresses, before its catalog is loaded so that probes get an answer
//! at once. Each address is opm's `--port` form: a bare port listens on every interface
//! (opm's `:PORT`); HOST:PORT, our extension, on that address only.
use super::config::{CatalogdListen, ListenConfig};
use super::http::HttpOptions;
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tracing::info;

/// Why an address could not be listened on.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Neither a port number nor a HOST:PORT that resolves.
    #[error("invalid --port {given:?}: expected a port number or HOST:PORT ({source})")]
    Address {
        given: String,
        source: std::io::Error,
    },
    /// The address resolved to nothing.
    #[error("no address to listen on")]
    NoAddress,
    /// Binding failed (the error of the last address tried).
    #[error("failed to listen: {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// The bound socket's own address could not be read.
    #[error(transparent)]
    LocalAddr(std::io::Error),
}

/// The sockets a server listens on.
pub(crate) struct Listeners {
    pub(crate) grpc: TcpListener,
    /// Metrics and HTTP probes (see `endpoint`).
    pub(crate) metrics: Option<TcpListener>,
    /// The catalogd HTTP API, and how it is served.
    /// The catalogd HTTP API, the name of the server's own catalog there, and how it is served.
    pub(crate) catalogd: Option<(TcpListener, String, HttpOptions)>,
}

impl Listeners {
    /// Binds every address of `listen`, logging where each is served.
    pub(crate) async fn bind(listen: ListenConfig) -> Result<Listeners, ListenError> {
        let (grpc, addr) = bind(&listen.grpc).await?;
        info!("listening on {addr}");
        let metrics = match &listen.metrics {
            Some(metrics_addr) => {
                let (listener, addr) = bind(metrics_addr).await?;
                info!("serving metrics on http://{addr}/metrics");
                Some(listener)
            }
            None => None,
        };
        let catalogd = match listen.catalogd {
            Some(CatalogdListen {
                addr,
                name,
                options,
                more,
            }) => {
                let (listener, addr) = bind(&addr).await?;
                let scheme = if options.tls.is_some() {
                    "https"
                } else {
                    "http"
                };
                for name in std::iter::once(&name).chain(more.iter().map(|(name, _)| name)) {
                    info!(
                        "serving the catalogd API on {scheme}://{addr}/catalogs/{name}/api/v1/all"
                    );
                }
                Some((listener, name, options))
            }
            None => None,
        };
        Ok(Listeners {
            grpc,
            metrics,
            catalogd,
        })
    }
}

/// A listener on `port` (a port number or HOST:PORT), and the address it got (port 0 picks
/// a free one).
pub(crate) async fn bind(port: &str) -> Result<(TcpListener, SocketAddr), ListenError> {
    let candidates: Vec<SocketAddr> = if let Ok(n) = port.parse::<u16>() {
        // Both families where the host has IPv6 (a dual-stack socket), IPv4 otherwise.
        vec![
            SocketAddr::from(([0u16; 8], n)),
            SocketAddr::from(([0u8; 4], n)),
        ]
    } else {
        tokio::net::lookup_host(port)
            .await
            .map_err(|source| ListenError::Address {
                given: port.to_owned(),
                source,
            })?
            .collect()
    };
    let mut last = ListenError::NoAddress;
    for addr in candidates {
        match TcpListener::bind(addr).await {
            Ok(listener) => {
                let local = listener.local_addr().map_err(ListenError::LocalAddr)?;
                return Ok((listener, local));
            }
            Err(source) => last = ListenError::Bind { addr, source },
        }
    }
    Err(last)
}
