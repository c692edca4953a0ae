//! What a server is asked to do, as one value: which catalog, where its index is kept, where
//! to listen, and the bounds it works within. The command line fills it in; [`crate::serve`]
//! and [`crate::build_cache`] take it whole.
use super::http::HttpOptions;
use super::limits::Limits;
use super::resolution::ResolutionOptions;
use catalog::file::ReadLimits;
use image::ClientOptions;
use std::path::PathBuf;
use std::time::Duration;

pub struct ServeConfig {
    pub catalog: CatalogSource,
    pub cache: CacheConfig,
    pub listen: ListenConfig,
    /// How long in-flight calls may run after the stop before they are cut.
    pub grace: Duration,
    /// Which other catalog servers the resolution service may read, and how.
    pub resolution: ResolutionOptions,
    /// What one client can make the server hold.
    pub limits: Limits,
    /// How much of the catalog's files (and of directories resolution requests name) is read.
    pub read_limits: ReadLimits,
}

/// Where the catalog comes from.
pub enum CatalogSource {
    /// An FBC directory.
    Dir(PathBuf),
    /// A catalog image (registry reference or `oci:DIR[:TAG]`), pulled and unpacked first.
    Image {
        reference: String,
        client: ClientOptions,
    },
}

/// Where the index is kept between runs, and when it may be rebuilt.
pub struct CacheConfig {
    /// Keep the index here and reuse it while the catalog is unchanged; without it the index
    /// is built in a private directory for this run only.
    pub dir: Option<PathBuf>,
    /// Fail instead of rebuilding a cache that is missing or does not match the catalog.
    pub enforce_integrity: bool,
}

/// The addresses served, each opm's `--port` form: a port (every interface) or HOST:PORT.
pub struct ListenConfig {
    /// The gRPC API.
    pub grpc: String,
    /// Prometheus metrics and HTTP probes, when given.
    pub metrics: Option<String>,
    /// The catalogd HTTP API, when given. The index then holds that API's content too.
    pub catalogd: Option<CatalogdListen>,
}

/// Where and how the catalogd HTTP API is served, and which catalogs.
pub struct CatalogdListen {
    pub addr: String,
    /// The name of the server's own catalog (the one the gRPC API serves) in the URLs.
    pub name: String,
    pub options: HttpOptions,
    /// Further catalogs served over HTTP only, each loaded on its own (with a cache directory,
    /// into `DIR/catalogs/NAME`) and served from the moment it is indexed.
    pub more: Vec<(String, CatalogSource)>,
}
