//! The catalogs the catalogd HTTP API serves, by name. Each entry is one index, immutable once
//! published (a new digest is a new index, built beforehand off the serving path); adding,
//! replacing or removing a catalog swaps its entry in one step. A request takes its catalog's
//! entry once and reads only that to its end, so a replacement never shows it a mix of old and
//! new content; the old index goes away when its last reader does.
use super::http::{Loaded, Schema};
use super::serving::ServedCatalog;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use store::cache::OpenIndex;
use tokio::sync::OnceCell;

/// The served catalogs; clones share them.
#[derive(Clone, Default)]
pub struct Catalogs(Arc<RwLock<BTreeMap<String, Arc<Served>>>>);

/// One catalog as requests see it: its index and, read once, the facts its responses carry
/// and its GraphQL schema (or why it cannot be built).
pub(crate) struct Served {
    pub(crate) catalog: ServedCatalog,
    pub(crate) content: OnceCell<Arc<Loaded>>,
    pub(crate) schema: OnceCell<Result<Arc<Schema>, String>>,
}

impl Catalogs {
    pub fn new() -> Catalogs {
        Catalogs::default()
    }

    /// Serves `index` as `name` from now on, in place of what was served under that name. The
    /// index's private directory (if any) lives as long as a request reads it.
    pub fn publish(&self, name: &str, index: OpenIndex) {
        self.insert(name, ServedCatalog::ready(index.store, index.scratch));
    }

    /// Stops serving `name` (requests already reading it finish); false when it was not served.
    pub fn remove(&self, name: &str) -> bool {
        self.write().remove(name).is_some()
    }

    /// True when `name` is served.
    pub fn contains(&self, name: &str) -> bool {
        self.read().contains_key(name)
    }

    /// Serves `catalog` (which may still be loading) as `name`.
    pub(crate) fn insert(&self, name: &str, catalog: ServedCatalog) {
        let served = Arc::new(Served {
            catalog,
            content: OnceCell::new(),
            schema: OnceCell::new(),
        });
        self.write().insert(name.to_owned(), served);
    }

    /// What `name` serves now: one snapshot, for one request.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Served>> {
        self.read().get(name).cloned()
    }

    // The lock is held only to clone or swap an `Arc`, never across an await or a query; a
    // writer that panicked cannot have left the map half-changed, so poisoning is ignored.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Served>>> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<Served>>> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }
}
