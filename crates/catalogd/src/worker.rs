//! One ClusterCatalog's reconciler: each replica runs one per catalog, serving what the
//! object asks for; the replica holding the Lease also writes its status and finalizer.
//! It runs again whenever the object changes, leadership changes, or its timer (a retry
//! after a failure, the next poll of a tag) comes due.
use super::clustercatalog::{ClusterCatalog, FINALIZER, ImageSource};
use super::status::{self, Progress, Served, Wanted};
use catalog::file::ReadLimits;
use image::{ImageRef, Registry};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;
use server::Catalogs;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use tracing::{info, warn};
use unfinished::Unfinished;

/// What every reconciler shares.
pub(crate) struct Shared {
    pub(crate) api: Api<DynamicObject>,
    pub(crate) catalogs: Catalogs,
    pub(crate) registry: Arc<Registry>,
    /// What goes before `/catalogs/NAME` in `status.urls.base`.
    pub(crate) base_url: String,
    pub(crate) leader: watch::Receiver<bool>,
    /// Pulls and index builds run at once at most this many (each holds an unpacked image
    /// and an index being written).
    pub(crate) loads: Semaphore,
    pub(crate) read_limits: ReadLimits,
    pub(crate) unfinished: Unfinished,
}

/// A failed write to the API server is tried again this soon (the watch usually brings the
/// object's new version first).
const WRITE_RETRY: Duration = Duration::from_secs(2);
/// Failed pulls are retried after 2 s, doubling up to 5 minutes.
const FIRST_RETRY: Duration = Duration::from_secs(2);
const MAX_RETRY: Duration = Duration::from_secs(300);

#[derive(Default)]
struct State {
    /// What this replica serves for the catalog.
    served: Option<Served>,
    /// The generation last attempted, and how that went.
    attempted: Option<(i64, Progress)>,
    /// When to resolve the image again: a retry, or a tag's next poll.
    next: Option<Instant>,
    failures: u32,
}

/// Reconciles catalog `name` with each version `objects` gives (None: the object is gone)
/// until the sender goes away.
pub(crate) async fn run(
    shared: Arc<Shared>,
    name: String,
    mut objects: watch::Receiver<Option<ClusterCatalog>>,
) {
    let mut leader = shared.leader.clone();
    let mut state = State::default();
    loop {
        let object = objects.borrow_and_update().clone();
        let wake = match &object {
            Some(catalog) => state.reconcile(&shared, catalog).await,
            None => {
                state.forget(&shared, &name);
                None
            }
        };
        tokio::select! {
            changed = objects.changed() => if changed.is_err() { return },
            _ = leader.changed() => {}
            _ = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => {}
        }
    }
}

impl State {
    /// Brings what is served and (as leader) the object's status and finalizer in line with
    /// `catalog`; returns when to run again unasked.
    async fn reconcile(&mut self, shared: &Shared, catalog: &ClusterCatalog) -> Option<Instant> {
        let leader = *shared.leader.borrow();
        if catalog.deleting {
            self.forget(shared, &catalog.name);
            if leader && catalog.has_finalizer() {
                return finalizer(shared, catalog, false).await;
            }
            return None;
        }
        if catalog.unavailable {
            self.forget(shared, &catalog.name);
            if !leader {
                return None;
            }
            let wrote = write_status(shared, catalog, Wanted::Unavailable).await;
            if catalog.has_finalizer() {
                return finalizer(shared, catalog, false).await.or(wrote);
            }
            return wrote;
        }
        let mut retry_write = None;
        if leader && !catalog.has_finalizer() {
            retry_write = finalizer(shared, catalog, true).await;
        }
        let due = self.next.is_some_and(|at| at <= Instant::now());
        if due || self.attempted.as_ref().map(|(g, _)| *g) != Some(catalog.generation) {
            self.attempt(shared, catalog).await;
        }
        if leader && let Some((_, progress)) = &self.attempted {
            let wanted = Wanted::Available {
                progress,
                served: self.served.as_ref(),
            };
            retry_write = retry_write.or(write_status(shared, catalog, wanted).await);
        }
        match (self.next, retry_write) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Resolves the image, and pulls and indexes it when its digest is not the one served.
    async fn attempt(&mut self, shared: &Shared, catalog: &ClusterCatalog) {
        let outcome = match &catalog.source {
            Err(problem) => Err(Progress::Blocked(problem.clone())),
            Ok(source) => self.unpack(shared, &catalog.name, source).await,
        };
        let progress = match outcome {
            Ok(()) => {
                self.failures = 0;
                self.next = catalog
                    .source
                    .as_ref()
                    .ok()
                    .and_then(|s| s.poll)
                    .map(|poll| Instant::now() + poll);
                Progress::Succeeded
            }
            Err(progress) => {
                if let Progress::Retrying(message) = &progress {
                    warn!(catalog = %catalog.name, "{message}; retrying");
                    self.failures += 1;
                    let backoff = FIRST_RETRY
                        .saturating_mul(1u32 << self.failures.min(10).saturating_sub(1))
                        .min(MAX_RETRY);
                    self.next = Some(Instant::now() + backoff);
                } else {
                    self.next = None;
                }
                progress
            }
        };
        self.attempted = Some((catalog.generation, progress));
    }

    async fn unpack(
        &mut self,
        shared: &Shared,
        name: &str,
        source: &ImageSource,
    ) -> Result<(), Progress> {
        let reference = resolve(&shared.registry, &source.reference).await?;
        let current = self.served.as_ref().map(|s| &s.reference);
        if current == Some(&reference) && shared.catalogs.contains(name) {
            return Ok(());
        }
        let _load = shared.loads.acquire().await;
        info!(catalog = name, image = %reference, "unpacking");
        let (registry, limits, unfinished) = (
            shared.registry.clone(),
            shared.read_limits,
            shared.unfinished.clone(),
        );
        let pulled = reference.clone();
        let index = tokio::task::spawn_blocking(move || {
            server::index_image(registry, &pulled, limits, &unfinished)
        })
        .await
        .map_err(|e| Progress::Retrying(format!("source catalog content: {e}")))?
        .map_err(|e| Progress::Retrying(format!("source catalog content: {e}")))?;
        shared.catalogs.publish(name, index);
        info!(catalog = name, image = %reference, "serving");
        self.served = Some(Served {
            reference,
            unpacked: now_to_the_second(),
        });
        Ok(())
    }

    /// Stops serving the catalog and forgets it.
    fn forget(&mut self, shared: &Shared, name: &str) {
        if shared.catalogs.remove(name) {
            info!(catalog = name, "no longer served");
        }
        *self = State::default();
    }
}

/// The image `reference` names now, by digest, as `REGISTRY/REPOSITORY@DIGEST` (what catalogd
/// writes: no tag).
async fn resolve(registry: &Registry, reference: &str) -> Result<String, Progress> {
    let parsed = ImageRef::parse(reference).map_err(|e| {
        Progress::Blocked(format!("error parsing image reference {reference:?}: {e}"))
    })?;
    let ImageRef::Registry(r) = parsed else {
        return Err(Progress::Blocked(format!(
            "error parsing image reference {reference:?}: not a registry reference"
        )));
    };
    let digest = match r.digest() {
        Some(digest) => digest.to_owned(),
        None => registry
            .resolve_digest(&r)
            .await
            .map_err(|e| Progress::Retrying(format!("source catalog content: {e}")))?,
    };
    Ok(format!("{}/{}@{digest}", r.registry(), r.repository()))
}

/// The time now in RFC 3339, whole seconds (as Kubernetes stores condition times).
fn now_to_the_second() -> String {
    let now = Timestamp::now();
    Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

/// Writes the status `wanted` when it differs from the stored one; when to try again if the
/// write failed.
async fn write_status(
    shared: &Shared,
    catalog: &ClusterCatalog,
    wanted: Wanted<'_>,
) -> Option<Instant> {
    let base = format!(
        "{}/catalogs/{}",
        shared.base_url.trim_end_matches('/'),
        catalog.name
    );
    let desired = status::desired(
        &catalog.status,
        wanted,
        catalog.generation,
        &base,
        &now_to_the_second(),
    );
    if !status::differs(&catalog.status, &desired) {
        return None;
    }
    let patch = Patch::Merge(json!({ "status": desired }));
    match shared
        .api
        .patch_status(&catalog.name, &PatchParams::default(), &patch)
        .await
    {
        Ok(_) => None,
        Err(e) => {
            crate::api_failure!(&e, catalog = %catalog.name, "writing the status");
            Some(Instant::now() + WRITE_RETRY)
        }
    }
}

/// Adds (`present`) or removes catalogd's finalizer, on the version read (a conflict means a
/// newer one is on its way); when to try again if the write failed.
async fn finalizer(shared: &Shared, catalog: &ClusterCatalog, present: bool) -> Option<Instant> {
    let mut finalizers: Vec<&str> = catalog
        .finalizers
        .iter()
        .map(String::as_str)
        .filter(|f| *f != FINALIZER)
        .collect();
    if present {
        finalizers.push(FINALIZER);
    }
    let patch = Patch::Merge(json!({
        "metadata": {"finalizers": finalizers, "resourceVersion": catalog.resource_version}
    }));
    match shared
        .api
        .patch(&catalog.name, &PatchParams::default(), &patch)
        .await
    {
        Ok(_) => None,
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => None,
        Err(e) => {
            crate::api_failure!(&e, catalog = %catalog.name, "writing the finalizer");
            Some(Instant::now() + WRITE_RETRY)
        }
    }
}
