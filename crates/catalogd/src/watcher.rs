//! ClusterCatalogs as the API server has them: listed, then watched from the list's version,
//! each version handed to its catalog's reconciler (started on first sight). A watch that
//! ends or fails is followed by a new list, so a missed event costs at most a re-list.
use super::clustercatalog::ClusterCatalog;
use super::worker::{self, Shared};
use kube::api::{ListParams, WatchEvent, WatchParams};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_stream::StreamExt;
use tracing::warn;

/// The API server ends a watch after this long (it may end it sooner).
const WATCH_SECONDS: u32 = 290;
/// Pause before listing again after the API server failed.
const RELIST_BACKOFF: Duration = Duration::from_secs(2);

/// The reconcilers, by catalog name; dropping this stops them.
struct Reconcilers {
    shared: Arc<Shared>,
    objects: BTreeMap<String, watch::Sender<Option<ClusterCatalog>>>,
    tasks: JoinSet<()>,
}

impl Reconcilers {
    fn give(&mut self, name: &str, object: Option<ClusterCatalog>) {
        if let Some(sender) = self.objects.get(name) {
            sender.send_replace(object);
            return;
        }
        if object.is_none() {
            return;
        }
        let (sender, receiver) = watch::channel(object);
        self.tasks
            .spawn(worker::run(self.shared.clone(), name.to_owned(), receiver));
        self.objects.insert(name.to_owned(), sender);
    }
}

/// Lists and watches ClusterCatalogs until the task is dropped.
pub(crate) async fn run(shared: Arc<Shared>) {
    let mut reconcilers = Reconcilers {
        shared,
        objects: BTreeMap::new(),
        tasks: JoinSet::new(),
    };
    loop {
        if let Err(e) = list_and_watch(&mut reconcilers).await {
            crate::api_failure!(&e, "reading ClusterCatalogs (listing again)");
            tokio::time::sleep(RELIST_BACKOFF).await;
        }
    }
}

async fn list_and_watch(reconcilers: &mut Reconcilers) -> Result<(), kube::Error> {
    let api = reconcilers.shared.api.clone();
    let list = api.list(&ListParams::default()).await?;
    let mut listed = BTreeSet::new();
    for object in &list.items {
        if let Some(catalog) = ClusterCatalog::read(object) {
            listed.insert(catalog.name.clone());
            reconcilers.give(&catalog.name.clone(), Some(catalog));
        }
    }
    let gone: Vec<String> = reconcilers
        .objects
        .keys()
        .filter(|name| !listed.contains(*name))
        .cloned()
        .collect();
    for name in gone {
        reconcilers.give(&name, None);
    }
    let mut version = list.metadata.resource_version.unwrap_or_default();
    loop {
        let params = WatchParams::default().timeout(WATCH_SECONDS);
        let events = api.watch(&params, &version).await?;
        tokio::pin!(events);
        while let Some(event) = events.next().await {
            let (object, present) = match event? {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, true),
                WatchEvent::Deleted(o) => (o, false),
                WatchEvent::Bookmark(b) => {
                    version = b.metadata.resource_version;
                    continue;
                }
                // Most often 410 Gone: the version is too old to watch from.
                WatchEvent::Error(status) => {
                    warn!("watching ClusterCatalogs: {}", status.message);
                    return Ok(());
                }
            };
            if let Some(v) = &object.metadata.resource_version {
                version = v.clone();
            }
            if let Some(catalog) = ClusterCatalog::read(&object) {
                let name = catalog.name.clone();
                reconcilers.give(&name, present.then_some(catalog));
            }
        }
    }
}
