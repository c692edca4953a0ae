//! Catalogs of other catalog servers, read over api.Registry by address (`HOST:PORT`), for
//! resolution.
//!
//! A catalog is read once and cached per address until its TTL runs out or its connection
//! drops (a health Watch stream is held open to notice that; servers without Watch rely on
//! the TTL). A read is bounded in bytes and time ([`RemoteLimits`]) and shared by every
//! caller that needs the address while it runs. What is cached is the caller's own form of
//! the catalog (`C`, made once per read from the content and its [`RemoteManifests`]), so
//! that whatever the caller prepares from it is kept with it. Manifests, which ListBundles
//! leaves out, are fetched with GetBundle for the few bundles that need them.
mod content;
mod read;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::Error;
use catalog::DeclarativeConfig;
pub use content::{from_api, objects_of};
pub use read::RemoteManifests;

/// What a server counts of its remote reads (its metrics).
pub trait ReadCounter: Send + Sync {
    /// A catalog answered from the cache.
    fn cache_hit(&self);
    /// A read that ended, well or not.
    fn fetched(&self, ok: bool);
}

/// Makes the cached form of a catalog from what was read.
pub(crate) type MakeCatalog<C> = fn(DeclarativeConfig, RemoteManifests) -> C;

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
pub struct RemoteCatalogs<C> {
    ttl: Duration,
    limits: RemoteLimits,
    make: MakeCatalog<C>,
    slots: Arc<Mutex<HashMap<String, Slot<C>>>>,
    counter: Option<Arc<dyn ReadCounter>>,
}

/// What a read ends with, shared by everyone waiting for it.
type Reading<C> = watch::Receiver<Option<Result<Cached<C>, Error>>>;

enum Slot<C> {
    Ready(Cached<C>),
    /// A read under way; the value turns `Some` when it ends.
    Reading(Reading<C>),
}

#[derive(Clone)]
struct Cached<C> {
    catalog: C,
    fetched: Instant,
    /// Cleared when the connection the catalog was read over drops.
    connected: Arc<AtomicBool>,
}

/// The map is only touched between awaits, so a plain mutex never holds up a runtime worker.
fn lock<C>(slots: &Mutex<HashMap<String, Slot<C>>>) -> MutexGuard<'_, HashMap<String, Slot<C>>> {
    slots.lock().unwrap_or_else(|p| p.into_inner())
}

fn out_of_time(address: &str, budget: Duration) -> Error {
    Error::Unavailable(format!(
        "catalog server {address} did not answer within the {} time budget (--resolution-timeout)",
        as_flag(budget)
    ))
}

/// `1500ms` or `30s`, as the flags are written.
fn as_flag(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

impl<C: Clone + Send + Sync + 'static> RemoteCatalogs<C> {
    pub fn new(ttl: Duration, limits: RemoteLimits, make: MakeCatalog<C>) -> RemoteCatalogs<C> {
        RemoteCatalogs {
            ttl,
            limits,
            make,
            slots: Arc::new(Mutex::new(HashMap::new())),
            counter: None,
        }
    }

    /// Counts reads and cache hits in `counter`.
    pub fn with_counter(mut self, counter: Option<Arc<dyn ReadCounter>>) -> Self {
        self.counter = counter;
        self
    }

    pub fn budget(&self) -> Duration {
        self.limits.budget
    }

    /// The catalog served at `address` (`HOST:PORT`): from the cache when it is fresh, else
    /// from the read of it under way, else from a read started now. Every read starts before
    /// any is waited for, so that a request's catalogs are read side by side. Called on the
    /// runtime, which runs the read.
    pub fn get(&self, address: &str) -> Pending<C> {
        let mut slots = lock(&self.slots);
        let reading = match slots.get(address) {
            Some(Slot::Ready(c))
                if c.fetched.elapsed() < self.ttl && c.connected.load(Ordering::Acquire) =>
            {
                if let Some(counter) = &self.counter {
                    counter.cache_hit();
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
    fn start(&self, address: &str, slots: &mut HashMap<String, Slot<C>>) -> Reading<C> {
        tracing::info!(address, "reading the catalog of another server");
        let (tx, rx) = watch::channel(None);
        slots.insert(address.to_owned(), Slot::Reading(rx.clone()));
        let (address, limits, slots, counter, make) = (
            address.to_owned(),
            self.limits.clone(),
            self.slots.clone(),
            self.counter.clone(),
            self.make,
        );
        tokio::spawn(async move {
            let result = tokio::time::timeout(limits.budget, read::fetch(&address, &limits, make))
                .await
                .unwrap_or_else(|_| Err(out_of_time(&address, limits.budget)));
            if let Some(counter) = &counter {
                counter.fetched(result.is_ok());
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
pub struct Pending<C>(Found<C>);

enum Found<C> {
    Ready(C),
    Reading {
        address: String,
        budget: Duration,
        reading: Reading<C>,
    },
}

impl<C: Clone> Pending<C> {
    /// The catalog, waiting for its read no later than `deadline`. Errors name the address.
    pub async fn wait(self, deadline: Instant) -> Result<C, Error> {
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
            None => Err(Error::Unavailable(format!(
                "the read of catalog server {address} failed"
            ))),
        }
    }
}
