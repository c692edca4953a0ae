//! Catalog content for the resolver from what api.Registry serves: this server's own index
//! (the same rows ListBundles returns) and other catalog servers reached by address.
//!
//! Both are turned into the resolver's catalog model once and cached: the own catalog per
//! loaded index, a remote one per address until its TTL runs out or its connection drops
//! (a health Watch stream is held open to notice that; servers without Watch rely on the
//! TTL). The cached [`Catalog`] also keeps the content prepared for classic resolution,
//! made by the first classic request that reads it, so later requests skip that work. Manifests, which ListBundles leaves out, are fetched with GetBundle for the few
//! bundles the safety checks look at.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use crate::api::registry_client::RegistryClient;
use crate::api::{
    self, GetBundleRequest, GetPackageRequest, ListBundlesRequest, ListPackageRequest,
};
use crate::catalog::types::{
    Bundle, Channel as FbcChannel, ChannelEntry, DeclarativeConfig, DeprecationEntry,
    DeprecationReference, Deprecations, Package, Property,
};
use crate::resolve::service::{Catalog, ManifestSource};
use crate::store::{QueryError, Store, query};

/// How long a fetch of a remote catalog may take, when the caller set no deadline.
const FETCH_TIMEOUT: Duration = Duration::from_secs(60);

/// The resolver's model of a catalog served as `packages` and the per-channel `bundles`
/// of ListBundles (in its order).
pub fn from_api(packages: Vec<api::Package>, bundles: Vec<api::Bundle>) -> DeclarativeConfig {
    let mut dc = DeclarativeConfig::default();
    let mut deprecations: BTreeMap<String, Vec<DeprecationEntry>> = BTreeMap::new();
    let entry = |schema: &str, name: &str, message: String| DeprecationEntry {
        reference: DeprecationReference {
            schema: schema.to_owned(),
            name: name.to_owned(),
        },
        message,
    };
    for p in packages {
        let list = deprecations.entry(p.name.clone()).or_default();
        if let Some(d) = p.deprecation {
            list.push(entry("olm.package", "", d.message));
        }
        for c in p.channels {
            if let Some(d) = c.deprecation {
                list.push(entry("olm.channel", &c.name, d.message));
            }
        }
        dc.packages.push(Package {
            name: p.name,
            default_channel: p.default_channel_name,
            ..Package::default()
        });
    }
    let mut channels: HashMap<(String, String), usize> = HashMap::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for b in bundles {
        let key = (b.package_name.clone(), b.channel_name.clone());
        let c = *channels.entry(key).or_insert_with(|| {
            dc.channels.push(FbcChannel {
                name: b.channel_name.clone(),
                package: b.package_name.clone(),
                ..FbcChannel::default()
            });
            dc.channels.len() - 1
        });
        dc.channels[c].entries.push(ChannelEntry {
            name: b.csv_name.clone(),
            replaces: b.replaces,
            skips: b.skips,
            skip_range: b.skip_range,
        });
        if !seen.insert((b.package_name.clone(), b.csv_name.clone())) {
            continue;
        }
        if let Some(d) = b.deprecation {
            deprecations
                .entry(b.package_name.clone())
                .or_default()
                .push(entry("olm.bundle", &b.csv_name, d.message));
        }
        dc.bundles.push(Bundle {
            name: b.csv_name,
            package: b.package_name,
            image: b.bundle_path,
            properties: b
                .properties
                .into_iter()
                .map(|p| Property {
                    kind: p.r#type,
                    value: p.value,
                })
                .collect(),
            ..Bundle::default()
        });
    }
    dc.deprecations = deprecations
        .into_iter()
        .filter(|(_, entries)| !entries.is_empty())
        .map(|(package, entries)| Deprecations {
            package,
            entries,
            ..Deprecations::default()
        })
        .collect();
    dc
}

/// A GetBundle answer's manifests: its objects, or its CSV when it has no objects.
fn objects_of(b: api::Bundle) -> Vec<String> {
    if b.object.is_empty() && !b.csv_json.is_empty() {
        vec![b.csv_json]
    } else {
        b.object
    }
}

fn decode<M: Message + Default>(bytes: &[u8]) -> Result<M, QueryError> {
    M::decode(bytes).map_err(|e| QueryError::Storage(format!("decoding a stored message: {e}")))
}

fn query_text(e: QueryError) -> String {
    match e {
        QueryError::NotFound(m) | QueryError::Storage(m) => m,
    }
}

/// This server's catalog, read from its index. Blocking.
pub fn from_store(store: Arc<Store>) -> Result<Catalog, String> {
    let content = store
        .with_conn(|conn| {
            let packages = query::list_packages(conn)?
                .iter()
                .map(|name| decode(&query::get_package(conn, name)?))
                .collect::<Result<Vec<api::Package>, _>>()?;
            let mut bundles = Vec::new();
            let mut failure = None;
            query::list_bundles(conn, i64::MIN, |_, bytes| {
                match decode::<api::Bundle>(&bytes) {
                    Ok(b) => {
                        bundles.push(b);
                        true
                    }
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            })?;
            match failure {
                Some(e) => Err(e),
                None => Ok(from_api(packages, bundles)),
            }
        })
        .map_err(query_text)?;
    Ok(Catalog::new(
        Arc::new(content),
        Some(Arc::new(StoreManifests(store))),
    ))
}

struct StoreManifests(Arc<Store>);

impl ManifestSource for StoreManifests {
    fn objects(&self, package: &str, channel: &str, bundle: &str) -> Result<Vec<String>, String> {
        self.0
            .with_conn(|conn| decode(&query::get_bundle(conn, package, channel, bundle)?))
            .map(objects_of)
            .map_err(query_text)
    }
}

/// Catalogs of other servers, by address.
pub struct RemoteCatalogs {
    ttl: Duration,
    cached: Mutex<HashMap<String, Cached>>,
    metrics: Option<Arc<super::metrics::Metrics>>,
}

#[derive(Clone)]
struct Cached {
    catalog: Catalog,
    fetched: Instant,
    /// Cleared when the connection the catalog was read over drops.
    connected: Arc<AtomicBool>,
}

impl RemoteCatalogs {
    pub fn new(ttl: Duration) -> RemoteCatalogs {
        RemoteCatalogs {
            ttl,
            cached: Mutex::new(HashMap::new()),
            metrics: None,
        }
    }

    /// Counts fetches and cache hits in `metrics`.
    pub(super) fn with_metrics(mut self, metrics: Option<Arc<super::metrics::Metrics>>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The catalog served at `address` (`HOST:PORT`), from the cache when it is fresh.
    /// Errors name the address.
    pub async fn get(&self, address: &str) -> Result<Catalog, String> {
        let fresh = {
            let cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
            cached
                .get(address)
                .cloned()
                .filter(|c| c.fetched.elapsed() < self.ttl && c.connected.load(Ordering::Acquire))
        };
        if let Some(c) = fresh {
            if let Some(m) = &self.metrics {
                m.remote_cache_hit();
            }
            return Ok(c.catalog);
        }
        tracing::info!(address, "reading the catalog of another server");
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, fetch(address))
            .await
            .map_err(|_| {
                format!(
                    "catalog server {address} did not answer within {}s",
                    FETCH_TIMEOUT.as_secs()
                )
            })
            .and_then(|fetched| fetched);
        if let Some(m) = &self.metrics {
            m.remote_fetch(fetched.is_ok());
        }
        let fetched = fetched?;
        self.cached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(address.to_owned(), fetched.clone());
        Ok(fetched.catalog)
    }
}

/// The error with its causes, as tonic's transport errors say little on their own.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

async fn fetch(address: &str) -> Result<Cached, String> {
    let unreachable = |e: &dyn std::error::Error| {
        format!("catalog server {address} cannot be reached: {}", chain(e))
    };
    let failed = |what: &str, e: tonic::Status| {
        format!(
            "catalog server {address} failed {what}: {} ({:?})",
            e.message(),
            e.code()
        )
    };
    let endpoint = Endpoint::from_shared(format!("http://{address}"))
        .map_err(|e| format!("catalog address {address:?} is invalid: {e}"))?
        .connect_timeout(Duration::from_secs(10));
    let channel = endpoint.connect().await.map_err(|e| unreachable(&e))?;
    let mut client = RegistryClient::new(channel.clone()).max_decoding_message_size(usize::MAX);
    let connected = Arc::new(AtomicBool::new(true));
    watch_connection(channel.clone(), connected.clone());

    let mut names = client
        .list_packages(ListPackageRequest {})
        .await
        .map_err(|e| failed("ListPackages", e))?
        .into_inner();
    let mut packages = Vec::new();
    while let Some(p) = names
        .message()
        .await
        .map_err(|e| failed("ListPackages", e))?
    {
        packages.push(
            client
                .get_package(GetPackageRequest { name: p.name })
                .await
                .map_err(|e| failed("GetPackage", e))?
                .into_inner(),
        );
    }
    let mut stream = client
        .list_bundles(ListBundlesRequest {})
        .await
        .map_err(|e| failed("ListBundles", e))?
        .into_inner();
    let mut bundles = Vec::new();
    while let Some(b) = stream
        .message()
        .await
        .map_err(|e| failed("ListBundles", e))?
    {
        bundles.push(b);
    }
    Ok(Cached {
        catalog: Catalog::new(
            Arc::new(from_api(packages, bundles)),
            Some(Arc::new(RemoteManifests {
                address: address.to_owned(),
                client,
                runtime: tokio::runtime::Handle::current(),
            })),
        ),
        fetched: Instant::now(),
        connected,
    })
}

/// Holds a health Watch open on the connection and clears `connected` when it ends, so
/// that the next resolution reconnects and reads the catalog again. A server without
/// Watch (opm answers UNIMPLEMENTED) leaves the flag set: its entry lives until the TTL.
fn watch_connection(channel: Channel, connected: Arc<AtomicBool>) {
    tokio::spawn(async move {
        let mut health = HealthClient::new(channel);
        let stream = health
            .watch(HealthCheckRequest {
                service: String::new(),
            })
            .await;
        let mut stream = match stream {
            Ok(s) => s.into_inner(),
            Err(e) if e.code() == tonic::Code::Unimplemented => return,
            Err(_) => {
                connected.store(false, Ordering::Release);
                return;
            }
        };
        while let Ok(Some(_)) = stream.message().await {}
        connected.store(false, Ordering::Release);
    });
}

struct RemoteManifests {
    address: String,
    client: RegistryClient<Channel>,
    runtime: tokio::runtime::Handle,
}

impl ManifestSource for RemoteManifests {
    /// Called from a blocking thread (the resolution runs on one).
    fn objects(&self, package: &str, channel: &str, bundle: &str) -> Result<Vec<String>, String> {
        let mut client = self.client.clone();
        let request = GetBundleRequest {
            pkg_name: package.to_owned(),
            channel_name: channel.to_owned(),
            csv_name: bundle.to_owned(),
        };
        self.runtime
            .block_on(async move { client.get_bundle(request).await })
            .map(|r| objects_of(r.into_inner()))
            .map_err(|e| {
                format!(
                    "catalog server {} failed GetBundle: {}",
                    self.address,
                    e.message()
                )
            })
    }
}
