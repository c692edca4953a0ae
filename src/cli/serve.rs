use super::images::ImageArgs;
use clap::Args;
use server::http::HttpOptions;
use server::tls::TlsConfig;
use server::{
    self, CacheConfig, CatalogSource, CatalogdListen, Limits, ListenConfig, ResolutionOptions,
    ServeConfig,
};
use source::RemoteLimits;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tracing::{error, warn};

/// Serve a file-based catalog over the Operator Registry gRPC API (drop-in for `opm serve`).
///
/// SOURCE is an FBC directory, or a catalog image (registry reference or oci:DIR[:TAG]),
/// which is pulled and unpacked first. The resolution service
/// (olmregistry.resolution.v1.Resolution) is served beside api.Registry.
///
/// With --http-addr, more catalogs can be served over the catalogd HTTP API beside it
/// (--catalog NAME=REF, repeated); SOURCE may then be left out, and the gRPC API serves the
/// first of them.
///
/// The port is bound at once; health reports NOT_SERVING until the catalog is loaded, then
/// SERVING. SIGTERM/SIGINT stop gracefully. The catalog is indexed into SQLite; with
/// --cache-dir the index is kept and reused while the catalog is unchanged.
#[derive(Args)]
pub struct ServeArgs {
    /// The FBC root directory (e.g. /configs), or a catalog image reference.
    #[arg(required_unless_present = "catalog")]
    source_path: Option<PathBuf>,
    /// Port to listen on (all interfaces), or HOST:PORT to listen on one address; port 0 picks a free one.
    #[arg(short, long, default_value = "50051")]
    port: String,
    /// File that receives the error when the server fails to start.
    #[arg(short, long, default_value = "/dev/termination-log")]
    termination_log: PathBuf,
    /// Log at debug level.
    #[arg(long)]
    pub debug: bool,
    /// Address of a pprof endpoint: accepted for opm compatibility, not served.
    #[arg(long, default_value = "localhost:6060")]
    pprof_addr: String,
    /// Accepted for opm compatibility (no pprof endpoint is served).
    #[arg(long)]
    pprof_capture_profiles: bool,
    /// Serve Prometheus metrics (/metrics) and HTTP probes (/healthz, /readyz) on this
    /// HOST:PORT (or port, on all interfaces). Off when not given.
    #[arg(long, value_name = "HOST:PORT")]
    metrics_addr: Option<String>,
    /// Keep the index here and reuse it while the catalog is unchanged.
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// Build or refresh the cache in --cache-dir, then exit without serving.
    #[arg(long, requires = "cache_dir")]
    cache_only: bool,
    /// Fail instead of rebuilding when the cache is missing or does not match the catalog.
    /// Without this flag a stale or corrupt cache is rebuilt with a warning.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    cache_enforce_integrity: Option<bool>,
    /// How long in-flight calls may run after SIGTERM before they are cut.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    shutdown_grace: Duration,
    #[command(flatten)]
    catalogd: CatalogdArgs,
    #[command(flatten)]
    resolution: ResolutionArgs,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    read_limits: super::ReadLimitArgs,
    #[command(flatten)]
    image: ImageArgs,
}

/// The OLM v1 catalog HTTP API (catalogd's), served beside the gRPC API from the same index.
#[derive(Args)]
#[command(next_help_heading = "OLM v1 catalog HTTP API")]
struct CatalogdArgs {
    /// Serve the catalogd API (/catalogs/NAME/api/v1/all, /metas and /graphql) on this HOST:PORT (or
    /// port, on all interfaces). Off when not given. The index then also holds the API's
    /// content (a few percent more: manifests are stored once); give it with --cache-only
    /// too when prebuilding a cache for a server that will serve HTTP, or that server
    /// rebuilds the cache at start.
    #[arg(long, value_name = "HOST:PORT")]
    http_addr: Option<String>,
    /// The catalog's name in the URLs. Default: the catalog image's repository name, or the
    /// catalog directory's name, lower-cased; it must be a DNS-1123 subdomain.
    #[arg(long, value_name = "NAME")]
    catalog_name: Option<String>,
    /// Serve another catalog over the HTTP API only, as NAME (a DNS-1123 subdomain): REF is
    /// an FBC directory or a catalog image, as SOURCE. Repeat for more; each is indexed on its
    /// own (with --cache-dir, into DIR/catalogs/NAME) and answers 503 until it is loaded.
    #[arg(long, value_name = "NAME=REF", requires = "http_addr")]
    catalog: Vec<String>,
    #[command(flatten)]
    http: HttpListenArgs,
}

/// How the catalogd HTTP API is served (by `serve --http-addr` and by `catalogd`).
#[derive(Args)]
pub(super) struct HttpListenArgs {
    /// Do not serve /api/v1/metas (served by default; catalogd keeps it behind an alpha gate).
    #[arg(long)]
    http_disable_metas: bool,
    /// Do not serve POST /api/v1/graphql, the GraphQL query endpoint (served by default;
    /// catalogd keeps it behind its alpha GraphQLCatalogQueries gate). Each catalog's GraphQL
    /// schema is derived from its documents at the first query.
    #[arg(long)]
    http_disable_graphql: bool,
    /// Serve HTTPS with this PEM certificate chain (with --tls-key-file); it is read again
    /// when the files change.
    #[arg(long, value_name = "FILE", requires = "http_addr")]
    tls_cert_file: Option<PathBuf>,
    /// The PEM private key of --tls-cert-file.
    #[arg(long, value_name = "FILE", requires = "http_addr")]
    tls_key_file: Option<PathBuf>,
    /// HTTP connections open at once; further ones wait in the listen backlog.
    #[arg(long, default_value_t = 512)]
    http_max_connections: usize,
}

impl HttpListenArgs {
    pub(super) fn options(&self) -> Result<HttpOptions, String> {
        let tls = match (&self.tls_cert_file, &self.tls_key_file) {
            (Some(_), None) | (None, Some(_)) => {
                return Err("--tls-cert-file and --tls-key-file must be used together".into());
            }
            (Some(cert), Some(key)) => Some(TlsConfig::load(cert, key).map_err(|e| e.to_string())?),
            (None, None) => None,
        };
        Ok(HttpOptions {
            metas: !self.http_disable_metas,
            graphql: !self.http_disable_graphql,
            max_connections: self.http_max_connections.max(1),
            tls,
        })
    }

    /// True when HTTPS is served.
    pub(super) fn tls(&self) -> bool {
        self.tls_cert_file.is_some()
    }
}

impl CatalogdArgs {
    /// How to serve the API, when asked to.
    fn options(&self) -> Result<Option<HttpOptions>, String> {
        self.http_addr
            .as_ref()
            .map(|_| self.http.options())
            .transpose()
    }

    /// The name of SOURCE's catalog in the URLs.
    fn own_name(&self, source: &Path) -> Result<String, String> {
        let (name, from) = match &self.catalog_name {
            Some(name) => (name.clone(), "--catalog-name".to_owned()),
            None => (
                default_catalog_name(source),
                format!("the name of {:?}", source.display().to_string()),
            ),
        };
        let hint = if self.catalog_name.is_none() {
            "; pass --catalog-name"
        } else {
            ""
        };
        checked_name(name, &from, hint)
    }

    /// The --catalog flags as names and references, in order; names checked and unique.
    fn named(&self) -> Result<Vec<(String, PathBuf)>, String> {
        let mut named: Vec<(String, PathBuf)> = Vec::new();
        for given in &self.catalog {
            let (name, reference) = given
                .split_once('=')
                .filter(|(_, r)| !r.is_empty())
                .ok_or_else(|| format!("invalid --catalog {given:?}: expected NAME=REF"))?;
            let name = checked_name(name.to_owned(), &format!("--catalog {given:?}"), "")?;
            named.push((name, PathBuf::from(reference)));
        }
        Ok(named)
    }
}

/// `name` when it is a DNS-1123 subdomain, else an error saying where it came from.
fn checked_name(name: String, from: &str, hint: &str) -> Result<String, String> {
    let problems = server::http::dns1123_problems(&name);
    if problems.is_empty() {
        return Ok(name);
    }
    Err(format!(
        "invalid catalog name {name:?} (from {from}): {}{hint}",
        problems.join("; ")
    ))
}

/// A catalog directory's name, or an image reference's repository name (its last path
/// segment without tag or digest), lower-cased.
fn default_catalog_name(source: &Path) -> String {
    let dir_name = source
        .is_dir()
        .then(|| std::fs::canonicalize(source).ok())
        .flatten()
        .and_then(|dir| dir.file_name().map(|n| n.to_string_lossy().into_owned()));
    let name = dir_name.unwrap_or_else(|| {
        let reference = source.to_string_lossy();
        let without_digest = reference.split('@').next().unwrap_or_default();
        let last = without_digest.rsplit('/').next().unwrap_or_default();
        last.split(':').next().unwrap_or_default().to_owned()
    });
    name.to_lowercase()
}

/// Which other catalog servers a resolution request may make this server read, and what a
/// read may cost.
#[derive(Args)]
#[command(next_help_heading = "Resolution service")]
struct ResolutionArgs {
    /// Catalog servers (HOST:PORT, exactly as requests write them; comma-separated or
    /// repeated) that requests may name besides this server's own catalog. None by default:
    /// a request could otherwise make this pod connect anywhere on the cluster network.
    #[arg(long, value_delimiter = ',', value_name = "HOST:PORT")]
    resolution_allowed_catalogs: Vec<String>,
    /// How long the resolution service keeps a catalog read from another server before
    /// reading it again (it also re-reads after that server's connection drops).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    resolution_catalog_ttl: Duration,
    /// How long one resolution request may wait for the catalog servers it names.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    resolution_timeout: Duration,
    /// Largest message accepted from another catalog server.
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    resolution_max_catalog_message: u64,
    /// Bytes one catalog read from another server may hold (messages plus their in-memory
    /// overhead); a larger catalog fails the subscriptions that need it.
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    resolution_max_catalog_bytes: u64,
}

impl ResolutionArgs {
    fn options(&self) -> ResolutionOptions {
        ResolutionOptions {
            catalog_ttl: self.resolution_catalog_ttl,
            limits: RemoteLimits {
                max_message_bytes: usize::try_from(self.resolution_max_catalog_message)
                    .unwrap_or(usize::MAX),
                max_catalog_bytes: self.resolution_max_catalog_bytes,
                budget: self.resolution_timeout,
            },
            allowed: self.resolution_allowed_catalogs.iter().cloned().collect(),
        }
    }
}

/// Bounds on what one client can make the server hold; the defaults suit OLM, packageserver
/// and grpcurl, and keep a misbehaving client from exhausting the pod.
#[derive(Args)]
#[command(next_help_heading = "Client limits")]
struct LimitArgs {
    /// Connections open at once; further ones wait in the listen backlog.
    #[arg(long, default_value_t = Limits::default().max_connections)]
    max_connections: usize,
    /// Concurrent calls per connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); clients queue
    /// further calls.
    #[arg(long, default_value_t = Limits::default().max_streams_per_connection)]
    max_streams_per_connection: u32,
    /// A connection that has not sent its HTTP/2 preface by then is closed.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    handshake_timeout: Duration,
    /// A connection with no call in progress for this long is closed.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    idle_timeout: Duration,
    /// Answer bytes one connection's calls may hold before its client reads them; further
    /// answers on it wait. Sizes take K, M or G (binary units).
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    max_connection_buffer: u64,
    /// The same, for all connections together.
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    max_total_buffer: u64,
    /// Largest request message accepted.
    #[arg(long, default_value = "4M", value_parser = parse_size)]
    max_request_size: u64,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            max_connections: self.max_connections.max(1),
            max_streams_per_connection: self.max_streams_per_connection.max(1),
            handshake_timeout: self.handshake_timeout,
            idle_timeout: self.idle_timeout,
            connection_buffer: self.max_connection_buffer,
            total_buffer: self.max_total_buffer,
            max_request_bytes: usize::try_from(self.max_request_size).unwrap_or(usize::MAX),
        }
    }
}

pub(super) fn parse_size(s: &str) -> Result<u64, String> {
    let invalid = || format!("invalid size {s:?} (e.g. 4096, 512K, 16M, 1G)");
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = number.parse().map_err(|_| invalid())?;
    let shift = match unit.trim_end_matches("iB").trim_end_matches('i') {
        "" | "B" => 0,
        "K" | "k" => 10,
        "M" => 20,
        "G" => 30,
        _ => return Err(invalid()),
    };
    n.checked_mul(1 << shift).ok_or_else(invalid)
}

pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("invalid duration {s:?} (e.g. 10s, 500ms, 1m)"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" | "" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        _ => Err(format!("invalid duration {s:?} (e.g. 10s, 500ms, 1m)")),
    }
}

pub fn run(args: ServeArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    match serve(&args, use_http, skip_tls_verify) {
        Ok(()) => 0,
        Err(message) => {
            error!("{message}");
            write_termination_log(&args.termination_log, &message);
            1
        }
    }
}

/// Kubernetes keeps at most this much of a termination log.
const TERMINATION_LOG_MAX: usize = 4096;

fn write_termination_log(path: &Path, message: &str) {
    let mut text = format!("{message}\n");
    if text.len() > TERMINATION_LOG_MAX {
        let mut end = TERMINATION_LOG_MAX - "…\n".len();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("…\n");
    }
    if let Err(e) = std::fs::write(path, text) {
        warn!(
            "could not write the termination log {}: {e}",
            path.display()
        );
    }
}

fn serve(args: &ServeArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    if args.cache_enforce_integrity.is_some() && args.cache_dir.is_none() {
        return Err("--cache-dir must be specified with --cache-enforce-integrity".into());
    }
    if args.pprof_addr != "localhost:6060" && !args.pprof_addr.is_empty()
        || args.pprof_capture_profiles
    {
        warn!(
            "pprof is not available in olm-registry; --pprof-addr and --pprof-capture-profiles are ignored"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let config = args.config(use_http, skip_tls_verify)?;
    let result = runtime.block_on(async {
        // Installed before anything is bound or loaded: see `shutdown_signal`.
        let shutdown = server::shutdown_signal();
        if args.cache_only {
            server::build_cache(config, shutdown).await
        } else {
            server::serve(config, shutdown).await
        }
    });
    // A load abandoned by a stop may still be running on a blocking thread: not waited for.
    runtime.shutdown_background();
    result.map_err(|e| e.to_string())
}

impl ServeArgs {
    /// What the server is asked to do.
    fn config(&self, use_http: bool, skip_tls_verify: bool) -> Result<ServeConfig, String> {
        let source = |path: &Path| self.catalog_source(path, use_http, skip_tls_verify);
        let mut named = self.catalogd.named()?.into_iter();
        // The gRPC API serves SOURCE, or (without one) the first --catalog.
        let (own_name, catalog) = match &self.source_path {
            Some(path) => (
                self.catalogd
                    .http_addr
                    .as_ref()
                    .map(|_| self.catalogd.own_name(path))
                    .transpose()?,
                source(path)?,
            ),
            None => {
                let (name, path) = named.next().ok_or("no catalog to serve: give SOURCE")?;
                (Some(name), source(&path)?)
            }
        };
        let mut more: Vec<(String, CatalogSource)> = Vec::new();
        for (name, path) in named {
            if own_name.as_ref() == Some(&name) || more.iter().any(|(n, _)| *n == name) {
                return Err(format!("catalog name {name:?} is given twice"));
            }
            more.push((name, source(&path)?));
        }
        let catalogd = match (self.catalogd.options()?, &self.catalogd.http_addr, own_name) {
            (Some(options), Some(addr), Some(name)) => Some(CatalogdListen {
                addr: addr.clone(),
                name,
                options,
                more,
            }),
            _ => None,
        };
        Ok(ServeConfig {
            catalog,
            cache: CacheConfig {
                dir: self.cache_dir.clone(),
                enforce_integrity: self.cache_enforce_integrity.unwrap_or(false),
            },
            listen: ListenConfig {
                grpc: self.port.clone(),
                metrics: self.metrics_addr.clone(),
                catalogd,
            },
            grace: self.shutdown_grace,
            resolution: self.resolution.options(),
            limits: self.limits.limits(),
            read_limits: self.read_limits.limits(),
        })
    }

    /// What `path` names: an existing directory, or (when nothing exists there) an image.
    fn catalog_source(
        &self,
        path: &Path,
        use_http: bool,
        skip_tls_verify: bool,
    ) -> Result<CatalogSource, String> {
        if path.is_dir() {
            Ok(CatalogSource::Dir(path.to_owned()))
        } else if path.exists() {
            Err(format!(
                "{:?} is not a directory",
                path.display().to_string()
            ))
        } else {
            Ok(CatalogSource::Image {
                reference: path.display().to_string(),
                client: self.image.options(use_http, skip_tls_verify),
            })
        }
    }
}
