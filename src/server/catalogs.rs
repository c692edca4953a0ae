//! Catalog content for the resolver from what api.Registry serves: this server's own index
//! (the same rows ListBundles returns) and other catalog servers reached by address.
//!
//! Both are turned into the resolver's catalog model once and cached: the own catalog per
//! loaded index, a remote one per address until its TTL runs out or its connection drops
//! (a health Watch stream is held open to notice that; servers without Watch rely on the
//! TTL). A read is bounded in bytes and time ([`RemoteLimits`]) and shared by every request
//! that needs the address while it runs. The cached [`Catalog`] also keeps the content
//! prepared for classic resolution, made by the first classic request that reads it, so later
//! requests skip that work. Manifests, which ListBundles leaves out, are fetched with
//! GetBundle for the few bundles the safety checks look at.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use prost::Message;
use tokio::sync::watch;
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

/// How long connecting to a catalog server may take: a live server on the cluster network
/// answers in milliseconds, a dead one should not use up a request's whole budget.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

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

/// What reading another server's catalog may cost. A catalog server can be anything a caller
/// names, so each read is bounded in bytes and in time.
#[derive(Clone, Debug)]
pub struct RemoteLimits {
    /// The largest message accepted from a catalog server (a bundle without an image carries
    /// its manifests, which exceed 4 MiB in real catalogs).
    pub max_message_bytes: usize,
    /// Bytes one catalog's read may hold: each message's encoding plus the in-memory size of
    /// its type, so a stream of tiny messages cannot hold more than its bytes suggest.
    pub max_catalog_bytes: u64,
    /// How long one resolution request may wait for the catalogs it names.
    pub budget: Duration,
}

impl Default for RemoteLimits {
    fn default() -> RemoteLimits {
        RemoteLimits {
            max_message_bytes: 16 << 20,
            max_catalog_bytes: 256 << 20,
            budget: Duration::from_secs(30),
        }
    }
}

/// Catalogs of other servers, by address. Each address is read at most once at a time: a
/// request that needs a catalog being read waits for that read, and gets its result or error.
pub struct RemoteCatalogs {
    ttl: Duration,
    limits: RemoteLimits,
    slots: Arc<Mutex<HashMap<String, Slot>>>,
    metrics: Option<Arc<super::metrics::Metrics>>,
}

enum Slot {
    Ready(Cached),
    /// A read under way; the value turns `Some` when it ends.
    Reading(watch::Receiver<Option<Result<Cached, String>>>),
}

#[derive(Clone)]
struct Cached {
    catalog: Catalog,
    fetched: Instant,
    /// Cleared when the connection the catalog was read over drops.
    connected: Arc<AtomicBool>,
}

/// The map is only touched between awaits, so a plain mutex never holds up a runtime worker.
fn lock(slots: &Mutex<HashMap<String, Slot>>) -> MutexGuard<'_, HashMap<String, Slot>> {
    slots.lock().unwrap_or_else(|p| p.into_inner())
}

fn out_of_time(address: &str, budget: Duration) -> String {
    format!(
        "catalog server {address} did not answer within the {} time budget (--resolution-timeout)",
        as_flag(budget)
    )
}

/// `1500ms` or `30s`, as the flags are written.
fn as_flag(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

impl RemoteCatalogs {
    pub fn new(ttl: Duration, limits: RemoteLimits) -> RemoteCatalogs {
        RemoteCatalogs {
            ttl,
            limits,
            slots: Arc::new(Mutex::new(HashMap::new())),
            metrics: None,
        }
    }

    /// Counts reads and cache hits in `metrics`.
    pub(super) fn with_metrics(mut self, metrics: Option<Arc<super::metrics::Metrics>>) -> Self {
        self.metrics = metrics;
        self
    }

    pub fn budget(&self) -> Duration {
        self.limits.budget
    }

    /// The catalog served at `address` (`HOST:PORT`): from the cache when it is fresh, else
    /// from the read of it under way, else from a read started now. Every read starts before
    /// any is waited for, so that a request's catalogs are read side by side. Called on the
    /// runtime, which runs the read.
    pub fn get(&self, address: &str) -> Pending {
        let mut slots = lock(&self.slots);
        let reading = match slots.get(address) {
            Some(Slot::Ready(c))
                if c.fetched.elapsed() < self.ttl && c.connected.load(Ordering::Acquire) =>
            {
                if let Some(m) = &self.metrics {
                    m.remote_cache_hit();
                }
                return Pending(Found::Ready(c.catalog.clone()));
            }
            Some(Slot::Reading(r)) => {
                tracing::info!(address, "waiting for the read of this catalog under way");
                r.clone()
            }
            _ => self.start(address, &mut slots),
        };
        Pending(Found::Reading {
            address: address.to_owned(),
            budget: self.limits.budget,
            reading,
        })
    }

    /// Starts reading `address` on a task of its own, so that the read finishes (and is
    /// cached) even when the request that started it has gone.
    fn start(
        &self,
        address: &str,
        slots: &mut HashMap<String, Slot>,
    ) -> watch::Receiver<Option<Result<Cached, String>>> {
        tracing::info!(address, "reading the catalog of another server");
        let (tx, rx) = watch::channel(None);
        slots.insert(address.to_owned(), Slot::Reading(rx.clone()));
        let (address, limits, slots, metrics) = (
            address.to_owned(),
            self.limits.clone(),
            self.slots.clone(),
            self.metrics.clone(),
        );
        tokio::spawn(async move {
            let result = tokio::time::timeout(limits.budget, fetch(&address, &limits))
                .await
                .unwrap_or_else(|_| Err(out_of_time(&address, limits.budget)));
            if let Some(m) = &metrics {
                m.remote_fetch(result.is_ok());
            }
            {
                let mut slots = lock(&slots);
                match &result {
                    Ok(c) => slots.insert(address, Slot::Ready(c.clone())),
                    // The next request tries again; those waiting now share this error.
                    Err(_) => slots.remove(&address),
                };
            }
            tx.send_replace(Some(result));
        });
        rx
    }
}

/// A remote catalog as [`RemoteCatalogs::get`] found it.
pub struct Pending(Found);

enum Found {
    Ready(Catalog),
    Reading {
        address: String,
        budget: Duration,
        reading: watch::Receiver<Option<Result<Cached, String>>>,
    },
}

impl Pending {
    /// The catalog, waiting for its read no later than `deadline`. Errors name the address.
    pub async fn wait(self, deadline: Instant) -> Result<Catalog, String> {
        let (address, budget, mut reading) = match self.0 {
            Found::Ready(c) => return Ok(c),
            Found::Reading {
                address,
                budget,
                reading,
            } => (address, budget, reading),
        };
        let ended = tokio::time::timeout_at(deadline.into(), reading.wait_for(Option::is_some));
        let result = match ended.await {
            Err(_) => return Err(out_of_time(&address, budget)),
            Ok(Ok(result)) => result.clone(),
            Ok(Err(_)) => None,
        };
        match result {
            Some(Ok(c)) => Ok(c.catalog),
            Some(Err(e)) => Err(e),
            // The reading task ended without a result: only a panic does that.
            None => Err(format!("the read of catalog server {address} failed")),
        }
    }
}

/// The error with its causes, as tonic's transport errors say little on their own.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut last = text.clone();
    let mut source = e.source();
    while let Some(s) = source {
        // Layers that wrap an error often repeat their inner one's words.
        let said = s.to_string();
        if said != last {
            text.push_str(": ");
            text.push_str(&said);
        }
        last = said;
        source = s.source();
    }
    text
}

/// How much of its byte cap one catalog read has used.
struct Tally<'a> {
    address: &'a str,
    limits: &'a RemoteLimits,
    held: u64,
}

impl Tally<'_> {
    /// Counts a received message; an error once the catalog exceeds its cap.
    fn add<M: Message>(&mut self, m: &M) -> Result<(), String> {
        self.held += (m.encoded_len() + std::mem::size_of::<M>()) as u64;
        if self.held > self.limits.max_catalog_bytes {
            return Err(format!(
                "catalog server {} sent more than the {} bytes allowed for one catalog \
                 (--resolution-max-catalog-bytes)",
                self.address, self.limits.max_catalog_bytes
            ));
        }
        Ok(())
    }

    fn failed(&self, what: &str, e: tonic::Status) -> String {
        if e.code() == tonic::Code::OutOfRange {
            // What tonic's decoder says of a message over max_decoding_message_size.
            return format!(
                "catalog server {} sent a {what} message larger than the {} bytes allowed \
                 (--resolution-max-catalog-message)",
                self.address, self.limits.max_message_bytes
            );
        }
        format!(
            "catalog server {} failed {what}: {} ({:?})",
            self.address,
            e.message(),
            e.code()
        )
    }
}

async fn fetch(address: &str, limits: &RemoteLimits) -> Result<Cached, String> {
    let unreachable = |e: &dyn std::error::Error| {
        format!("catalog server {address} cannot be reached: {}", chain(e))
    };
    let endpoint = Endpoint::from_shared(format!("http://{address}"))
        .map_err(|e| format!("catalog address {address:?} is invalid: {e}"))?
        .connect_timeout(CONNECT_TIMEOUT);
    let channel = endpoint.connect().await.map_err(|e| unreachable(&e))?;
    let mut client =
        RegistryClient::new(channel.clone()).max_decoding_message_size(limits.max_message_bytes);
    let connected = Arc::new(AtomicBool::new(true));
    watch_connection(channel.clone(), connected.clone());

    let mut tally = Tally {
        address,
        limits,
        held: 0,
    };
    let mut names = client
        .list_packages(ListPackageRequest {})
        .await
        .map_err(|e| tally.failed("ListPackages", e))?
        .into_inner();
    let mut packages = Vec::new();
    while let Some(p) = names
        .message()
        .await
        .map_err(|e| tally.failed("ListPackages", e))?
    {
        tally.add(&p)?;
        let package = client
            .get_package(GetPackageRequest { name: p.name })
            .await
            .map_err(|e| tally.failed("GetPackage", e))?
            .into_inner();
        tally.add(&package)?;
        packages.push(package);
    }
    let mut stream = client
        .list_bundles(ListBundlesRequest {})
        .await
        .map_err(|e| tally.failed("ListBundles", e))?
        .into_inner();
    let mut bundles = Vec::new();
    while let Some(b) = stream
        .message()
        .await
        .map_err(|e| tally.failed("ListBundles", e))?
    {
        tally.add(&b)?;
        bundles.push(b);
    }
    // Converting a catalog of hundreds of MiB is CPU work: off the runtime's workers.
    let content = tokio::task::spawn_blocking(move || from_api(packages, bundles))
        .await
        .map_err(|e| format!("reading catalog server {address} failed: {e}"))?;
    Ok(Cached {
        catalog: Catalog::new(
            Arc::new(content),
            Some(Arc::new(RemoteManifests {
                address: address.to_owned(),
                client,
                budget: limits.budget,
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
    budget: Duration,
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
        let call = async { tokio::time::timeout(self.budget, client.get_bundle(request)).await };
        match self.runtime.block_on(call) {
            Err(_) => Err(out_of_time(&self.address, self.budget)),
            Ok(Err(e)) => Err(format!(
                "catalog server {} failed GetBundle: {}",
                self.address,
                e.message()
            )),
            Ok(Ok(r)) => Ok(objects_of(r.into_inner())),
        }
    }
}
