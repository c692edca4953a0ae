//! Copying images, blob by blob, between registries and an OCI layout on disk.
//!
//! - A blob the destination already has is not copied (HEAD); one the destination registry
//!   holds in another repository of this run is mounted instead of uploaded.
//! - Blobs stream through: at most a few chunks of one are in memory.
//! - Every blob is checked against its digest before the destination may commit it: the last
//!   chunk is held back until the whole blob is verified, so a corrupt blob never lands.
//! - Transient failures (connection reset, EOF, TLS, 5xx, 429) cost a retry of that blob only;
//!   a download into the archive continues where it stopped.
//! - Manifests go last, children before their index, so an interrupted run leaves no image
//!   whose blobs are missing, and a rerun copies only what is not there yet.
//! - A platform filter copies only the kept platforms of an index (see [`crate::platforms`]);
//!   a destination that refuses the sparse index of an image pulled by digest gets every
//!   platform of it instead, with a note saying why.
use crate::config::Platform;
use crate::platforms;
use bytes::Bytes;
use image::layout::{Layout, MAX_MANIFEST_BYTES};
use image::registry::Backoff;
use image::remote::{BlobStream, MANIFEST_MEDIA_TYPES, is_digest_mismatch, retry_remote as retry};
use image::{Error, ErrorKind, Registry};
use oci_client::Reference;
use oci_client::manifest::OciDescriptor;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tokio_stream::Stream;

/// Where an image is read from or written to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Location {
    Registry {
        registry: String,
        repository: String,
    },
    /// The run's OCI layout (the archive, or the staging area of rebuilt catalogs).
    Layout,
}

impl Location {
    fn reference(&self, at: &str) -> Option<Reference> {
        match self {
            Location::Registry {
                registry,
                repository,
            } => Some(if at.starts_with("sha256:") {
                Reference::with_digest(registry.clone(), repository.clone(), at.to_owned())
            } else {
                Reference::with_tag(registry.clone(), repository.clone(), at.to_owned())
            }),
            Location::Layout => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Location::Registry {
                registry,
                repository,
            } => format!("{registry}/{repository}"),
            Location::Layout => "the archive".to_owned(),
        }
    }
}

/// One image to copy.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    /// How the user knows it (for messages).
    pub(crate) name: String,
    pub(crate) from: Location,
    pub(crate) to: Location,
    pub(crate) digest: String,
    /// The destination tag (a registry tag, or the layout's ref name); none for a referrer,
    /// which is found by its subject.
    pub(crate) tag: Option<String>,
    /// Copied only when every other job succeeded (catalogs: a cluster must not see a
    /// catalog whose images are missing).
    pub(crate) last: bool,
    /// The platforms to copy of an index (none: every platform).
    pub(crate) platforms: Vec<Platform>,
    /// The image is pulled by this digest: a platform filter must leave its index as it is.
    pub(crate) keep_digest: bool,
}

/// What a run did.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    pub(crate) images: usize,
    pub(crate) blobs_copied: usize,
    pub(crate) blobs_reused: usize,
    pub(crate) blobs_mounted: usize,
    pub(crate) bytes_copied: u64,
    pub(crate) elapsed: Duration,
    /// One line per image that was not copied, saying why.
    pub(crate) failures: Vec<String>,
    /// One line per image copied otherwise than asked, saying why.
    pub(crate) notes: Vec<String>,
    /// The new digest of each image (by job name) whose index the platform filter rewrote.
    pub(crate) rewritten: BTreeMap<String, String>,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        write!(
            f,
            "mirrored {} images: {} blobs copied ({:.1} MiB, {:.0} MiB/s), {} reused, {} mounted, in {:.1} s",
            self.images,
            self.blobs_copied,
            self.bytes_copied as f64 / 1048576.0,
            self.bytes_copied as f64 / 1048576.0 / secs.max(1e-3),
            self.blobs_reused,
            self.blobs_mounted,
            secs
        )
    }
}

pub(crate) struct Copier {
    pub(crate) registry: Arc<Registry>,
    pub(crate) layout: Option<Arc<Layout>>,
    pub(crate) parallel: usize,
    progress: indicatif::ProgressBar,
}

/// An image's manifests (children first, the top one last) and the blobs they name.
struct Tree {
    manifests: Vec<(String, Bytes, String)>,
    blobs: Vec<(String, u64)>,
    /// The top index is the original, but some of its manifests are left out.
    sparse: bool,
}

/// Why an image's manifests were not stored.
enum PutError {
    /// The destination refuses a sparse index.
    Sparse,
    Failed(String),
}

impl Copier {
    pub(crate) fn new(
        registry: Arc<Registry>,
        layout: Option<Arc<Layout>>,
        parallel: usize,
    ) -> Copier {
        Copier {
            registry,
            layout,
            parallel: parallel.max(1),
            progress: progress_bar("mirroring", 0),
        }
    }

    fn layout(&self) -> Result<&Layout, Error> {
        self.layout
            .as_deref()
            .ok_or_else(|| Error::new(ErrorKind::Other, "no OCI layout for this run"))
    }

    pub(crate) async fn run(self: Arc<Self>, jobs: Vec<Job>) -> Summary {
        let start = Instant::now();
        let mut summary = Summary::default();
        let mut trees = Vec::new();
        for job in &jobs {
            match self.tree(job, &job.platforms).await {
                Ok(tree) => trees.push((job.clone(), tree)),
                Err(e) => summary
                    .failures
                    .push(format!("{}: {}", job.name, e.message)),
            }
        }
        let destinations: BTreeSet<&Location> = trees.iter().map(|(j, _)| &j.to).collect();
        for to in destinations {
            if let Some(r) = to.reference("latest")
                && let Err(e) = self.registry.authorize_push(&r).await
            {
                summary.failures.push(e.message);
                self.progress.finish_and_clear();
                summary.elapsed = start.elapsed();
                return summary;
            }
        }
        let failed_blobs = self.place_blobs(&trees, &mut summary).await;
        let (first, last): (Vec<_>, Vec<_>) = trees.into_iter().partition(|(j, _)| !j.last);
        let mut refused = Vec::new();
        for (job, tree) in first {
            match self.finish(&job, &tree, &failed_blobs, &mut summary).await {
                Err(PutError::Sparse) => refused.push(job),
                Err(PutError::Failed(why)) => summary.failures.push(why),
                Ok(()) => {}
            }
        }
        self.copy_whole(refused, &mut summary).await;
        for (job, tree) in last {
            if !summary.failures.is_empty() {
                summary.failures.push(format!(
                    "{}: not copied, because other images failed",
                    job.name
                ));
                continue;
            }
            if let Err(PutError::Failed(why)) =
                self.finish(&job, &tree, &failed_blobs, &mut summary).await
            {
                summary.failures.push(why);
            }
        }
        self.progress.finish_and_clear();
        summary.elapsed = start.elapsed();
        summary
    }

    /// Makes every blob of `trees` present at its destinations; the blobs that could not
    /// be, with why.
    async fn place_blobs(
        self: &Arc<Self>,
        trees: &[(Job, Tree)],
        summary: &mut Summary,
    ) -> BTreeMap<String, String> {
        // Each blob once per destination repository; the first destination that gets it is
        // where the others mount it from.
        let mut wanted: BTreeMap<String, (u64, Location, BTreeSet<Location>)> = BTreeMap::new();
        for (job, tree) in trees {
            for (digest, size) in &tree.blobs {
                wanted
                    .entry(digest.clone())
                    .or_insert_with(|| (*size, job.from.clone(), BTreeSet::new()))
                    .2
                    .insert(job.to.clone());
            }
        }
        let total: u64 = wanted
            .values()
            .map(|(size, _, to)| size * to.len() as u64)
            .sum();
        self.progress.inc_length(total);
        let limit = Arc::new(tokio::sync::Semaphore::new(self.parallel));
        let mut tasks = tokio::task::JoinSet::new();
        for (digest, (size, from, to)) in wanted {
            let (copier, limit) = (self.clone(), limit.clone());
            tasks.spawn(async move {
                let _permit = limit.acquire_owned().await;
                let outcome = copier.place_blob(&digest, size, &from, &to).await;
                (digest, size, outcome)
            });
        }
        let mut failed_blobs: BTreeMap<String, String> = BTreeMap::new();
        while let Some(done) = tasks.join_next().await {
            match done {
                Ok((_, size, Ok(counts))) => {
                    summary.blobs_copied += counts.copied;
                    summary.blobs_reused += counts.reused;
                    summary.blobs_mounted += counts.mounted;
                    summary.bytes_copied += counts.copied as u64 * size;
                }
                Ok((digest, _, Err(e))) => {
                    failed_blobs.insert(digest, e);
                }
                Err(e) => summary.failures.push(format!("a copy task failed: {e}")),
            }
        }
        failed_blobs
    }

    /// Stores an image's manifests once its blobs are in place.
    async fn finish(
        &self,
        job: &Job,
        tree: &Tree,
        failed_blobs: &BTreeMap<String, String>,
        summary: &mut Summary,
    ) -> Result<(), PutError> {
        if let Some((digest, e)) = tree
            .blobs
            .iter()
            .find_map(|(d, _)| failed_blobs.get(d).map(|e| (d, e)))
        {
            return Err(PutError::Failed(format!(
                "{}: blob {digest}: {e}",
                job.name
            )));
        }
        match self.put_manifests(job, tree).await {
            Ok(()) => {
                summary.images += 1;
                if let Some((digest, _, _)) = tree.manifests.last()
                    && *digest != job.digest
                {
                    summary.rewritten.insert(job.name.clone(), digest.clone());
                }
                Ok(())
            }
            // distribution 2.8 answers MANIFEST_BLOB_UNKNOWN for an index whose manifests
            // are not all present.
            Err(e) if tree.sparse && e.kind == ErrorKind::NotFound => Err(PutError::Sparse),
            Err(e) => Err(PutError::Failed(format!("{}: {}", job.name, e.message))),
        }
    }

    /// Copies every platform of the images whose sparse index the destination refused, so
    /// that they keep the digest clusters pull them by.
    async fn copy_whole(self: &Arc<Self>, refused: Vec<Job>, summary: &mut Summary) {
        let mut trees = Vec::new();
        for job in refused {
            let kept: Vec<String> = job.platforms.iter().map(Platform::to_string).collect();
            if job.from == Location::Layout {
                summary.failures.push(format!(
                    "{}: {} refuses an index whose platforms are not all present (a sparse index), \
                     and the archive holds only {} of it: mirror it to disk again without `platforms`, \
                     or mirror the archive to a registry that takes sparse indexes",
                    job.name,
                    job.to.describe(),
                    kept.join(", ")
                ));
                continue;
            }
            summary.notes.push(format!(
                "{}: {} refuses an index whose platforms are not all present (a sparse index); \
                 copied every platform instead of only {}, so that the digest clusters pull it by \
                 ({}) stays the same",
                job.name,
                job.to.describe(),
                kept.join(", "),
                job.digest
            ));
            match self.tree(&job, &[]).await {
                Ok(tree) => trees.push((job, tree)),
                Err(e) => summary
                    .failures
                    .push(format!("{}: {}", job.name, e.message)),
            }
        }
        let failed_blobs = self.place_blobs(&trees, summary).await;
        for (job, tree) in trees {
            // Every platform is there now: nothing more to fall back to.
            if let Err(PutError::Failed(why)) =
                self.finish(&job, &tree, &failed_blobs, summary).await
            {
                summary.failures.push(why);
            }
        }
    }

    async fn get_manifest(&self, from: &Location, digest: &str) -> Result<(Bytes, String), Error> {
        match from.reference(digest) {
            Some(r) => {
                retry(self.registry.retry_policy(), || {
                    self.registry.get_manifest(&r)
                })
                .await
            }
            None => {
                let body = self.layout()?.read_blob(digest, MAX_MANIFEST_BYTES)?;
                let media_type = image::remote::manifest_media_type(&body).map_err(fatal)?;
                Ok((Bytes::from(body), media_type))
            }
        }
    }

    /// Reads an image's manifests and the blobs they name: of an index, only the manifests
    /// of `platforms` (every one when empty).
    async fn tree(&self, job: &Job, platforms: &[Platform]) -> Result<Tree, Error> {
        let mut tree = Tree {
            manifests: Vec::new(),
            blobs: Vec::new(),
            sparse: false,
        };
        let (mut body, media_type) = self.get_manifest(&job.from, &job.digest).await?;
        let mut top_digest = job.digest.clone();
        let top: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| fatal(e.to_string()))?;
        let mut images = Vec::new();
        if let Some(children) = top["manifests"].as_array() {
            let mut kept = None;
            if !platforms.is_empty() {
                let s = platforms::select(&body, platforms)
                    .map_err(|e| Error::new(ErrorKind::Other, e))?;
                if s.partial && job.keep_digest {
                    tree.sparse = true;
                } else if s.partial {
                    body = s.rewritten;
                    top_digest = image::layout::digest_of(&body);
                }
                kept = Some(s.kept);
            }
            for child in children {
                let digest = child["digest"].as_str().unwrap_or_default().to_owned();
                if kept.as_ref().is_some_and(|k| !k.contains(&digest)) {
                    continue;
                }
                let (child_body, child_type) = self.get_manifest(&job.from, &digest).await?;
                if !MANIFEST_MEDIA_TYPES[..].contains(&child_type.as_str())
                    || serde_json::from_slice::<serde_json::Value>(&child_body)
                        .is_ok_and(|v| v.get("manifests").is_some())
                {
                    return Err(fatal(format!(
                        "manifest {digest} of the index is not an image manifest ({child_type})"
                    )));
                }
                images.push(child_body.clone());
                tree.manifests.push((digest, child_body, child_type));
            }
        } else {
            images.push(body.clone());
        }
        for image in images {
            let v: serde_json::Value =
                serde_json::from_slice(&image).map_err(|e| fatal(e.to_string()))?;
            let descriptors = v["config"].as_object().into_iter().chain(
                v["layers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l.as_object()),
            );
            for d in descriptors {
                let digest = d.get("digest").and_then(|x| x.as_str()).unwrap_or_default();
                let size = d.get("size").and_then(|x| x.as_u64()).unwrap_or_default();
                if !tree.blobs.iter().any(|(seen, _)| seen == digest) {
                    tree.blobs.push((digest.to_owned(), size));
                }
            }
        }
        tree.manifests.push((top_digest, body, media_type));
        Ok(tree)
    }

    async fn has_blob(&self, at: &Location, digest: &str, size: u64) -> Result<bool, Error> {
        match at.reference(digest) {
            Some(r) => {
                retry(self.registry.retry_policy(), || {
                    self.registry.blob_exists(&r, digest)
                })
                .await
            }
            None => {
                let layout = self
                    .layout
                    .clone()
                    .ok_or_else(|| fatal("no OCI layout for this run".into()))?;
                let digest = digest.to_owned();
                // Checking may hash the blob: not on a runtime worker.
                tokio::task::spawn_blocking(move || layout.holds(&digest, Some(size)))
                    .await
                    .map_err(|e| fatal(format!("checking blob: {e}")))?
            }
        }
    }

    /// Makes a blob present in every destination: reused, mounted or copied.
    async fn place_blob(
        &self,
        digest: &str,
        size: u64,
        from: &Location,
        to: &BTreeSet<Location>,
    ) -> Result<Counts, String> {
        let mut counts = Counts::default();
        let mut holder: Option<&Location> = None;
        for dest in to {
            if self
                .has_blob(dest, digest, size)
                .await
                .map_err(|e| e.message)?
            {
                counts.reused += 1;
                self.progress.inc(size);
            } else if let (
                Some(Location::Registry {
                    registry: held_in,
                    repository: held_repo,
                }),
                Location::Registry { registry, .. },
            ) = (holder, dest)
                && held_in == registry
                && let Some(r) = dest.reference(digest)
                && self.registry.mount_blob(&r, held_repo, digest).await
            {
                counts.mounted += 1;
                self.progress.inc(size);
            } else {
                self.transfer(digest, size, from, dest).await?;
                counts.copied += 1;
            }
            holder.get_or_insert(dest);
        }
        Ok(counts)
    }

    async fn transfer(
        &self,
        digest: &str,
        size: u64,
        from: &Location,
        to: &Location,
    ) -> Result<(), String> {
        // A differential archive leaves out what the destination should have from an earlier
        // one: not worth a retry.
        if *from == Location::Layout
            && !self
                .has_blob(from, digest, size)
                .await
                .map_err(|e| e.message)?
        {
            return Err(format!(
                "blob {digest} is neither in the archive nor at {}",
                to.describe()
            ));
        }
        let dest = match (from.reference(digest), to.reference(digest)) {
            (_, Some(dest)) => dest,
            (Some(source), None) => {
                // Downloads retry, and resume where they stopped, on their own.
                let descriptor = OciDescriptor {
                    digest: digest.to_owned(),
                    size: size as i64,
                    ..Default::default()
                };
                let layout = self.layout().map_err(|e| e.message)?;
                return self
                    .registry
                    .download_blob(&source, &descriptor, layout, &self.progress)
                    .await
                    .map(drop)
                    .map_err(|e| e.message);
            }
            (None, None) => return Err(format!("blob {digest} is missing from the archive")),
        };
        let mut backoff = Backoff::new(self.registry.retry_policy());
        loop {
            let verdict = Arc::new(Mutex::new(None));
            let outcome = self.upload_once(digest, size, from, &dest, &verdict).await;
            let corrupt = verdict.lock().map(|mut v| v.take()).unwrap_or_default();
            match (outcome, corrupt) {
                (Ok(()), _) => return Ok(()),
                (Err(_), Some(why)) => {
                    return Err(format!("{why} (from {}); not copied", from.describe()));
                }
                (Err(e), None) if e.is_transient() && backoff.again(&e).await => {}
                (Err(e), None) => return Err(e.message),
            }
        }
    }

    /// Streams a blob into a registry, from another registry or from the archive.
    async fn upload_once(
        &self,
        digest: &str,
        size: u64,
        from: &Location,
        dest: &Reference,
        verdict: &Arc<Mutex<Option<String>>>,
    ) -> Result<(), Error> {
        let (source, hash_here) = match from.reference(digest) {
            // The registry client checks the digest as the bytes arrive.
            Some(r) => (self.registry.blob_stream(&r, digest, size).await?, false),
            None => (file_stream(self.layout()?.blob_path(digest)?), true),
        };
        let guarded: BlobStream = Box::pin(Guarded {
            inner: source,
            hasher: hash_here.then(Sha256::new),
            digest: digest.to_owned(),
            size,
            seen: 0,
            held: None,
            finished: false,
            verdict: verdict.clone(),
            progress: self.progress.clone(),
        });
        self.registry
            .put_blob_stream(dest, digest, size, guarded)
            .await
    }

    async fn put_manifests(&self, job: &Job, tree: &Tree) -> Result<(), Error> {
        let Some((top, children)) = tree.manifests.split_last() else {
            return Ok(());
        };
        match &job.to {
            Location::Layout => {
                let layout = self.layout()?;
                for (_, body, _) in children {
                    layout.write_blob(body)?;
                }
                layout.add_manifest(&top.1, &top.2, job.tag.as_deref())?;
            }
            to => {
                for (digest, body, media_type) in children.iter().chain([top]) {
                    let r = to.reference(digest).expect("a registry location");
                    retry(self.registry.retry_policy(), || {
                        self.registry.put_manifest(&r, body.clone(), media_type)
                    })
                    .await?;
                }
                if let Some(tag) = &job.tag {
                    let r = to.reference(tag).expect("a registry location");
                    retry(self.registry.retry_policy(), || {
                        self.registry.put_manifest(&r, top.1.clone(), &top.2)
                    })
                    .await?;
                }
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Counts {
    copied: usize,
    reused: usize,
    mounted: usize,
}

/// The archive's own files.
fn fatal(message: String) -> Error {
    Error::new(ErrorKind::Io, message)
}

/// A file's bytes in 1 MiB chunks, read on a blocking thread.
fn file_stream(path: std::path::PathBuf) -> BlobStream {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) => {
                let _ = tx.blocking_send(Err(e));
                return;
            }
        };
        loop {
            let mut buf = vec![0u8; 1 << 20];
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.blocking_send(Ok(Bytes::from(buf))).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    break;
                }
            }
        }
    });
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
}

/// Passes a blob's bytes on, holding the last chunk back until the whole blob is known to
/// match its digest and size: a destination never receives a complete corrupt blob, so it
/// cannot commit one. A mismatch is recorded in `verdict` (it is not worth a retry).
struct Guarded {
    inner: BlobStream,
    /// None when the source stream verifies the digest itself.
    hasher: Option<Sha256>,
    digest: String,
    size: u64,
    seen: u64,
    held: Option<Bytes>,
    finished: bool,
    verdict: Arc<Mutex<Option<String>>>,
    progress: indicatif::ProgressBar,
}

impl Guarded {
    fn condemn(&mut self, why: String) -> std::io::Error {
        self.held = None;
        self.finished = true;
        if let Ok(mut v) = self.verdict.lock() {
            *v = Some(why.clone());
        }
        std::io::Error::new(std::io::ErrorKind::InvalidData, why)
    }
}

impl Stream for Guarded {
    type Item = std::io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.finished {
            return Poll::Ready(this.held.take().map(Ok));
        }
        loop {
            match ready!(this.inner.as_mut().poll_next(cx)) {
                Some(Ok(chunk)) => {
                    if let Some(h) = &mut this.hasher {
                        h.update(&chunk);
                    }
                    this.seen += chunk.len() as u64;
                    this.progress.inc(chunk.len() as u64);
                    if let Some(previous) = this.held.replace(chunk) {
                        return Poll::Ready(Some(Ok(previous)));
                    }
                }
                Some(Err(e)) if is_digest_mismatch(&e) => {
                    let why = format!("blob {} does not match its digest ({e})", this.digest);
                    return Poll::Ready(Some(Err(this.condemn(why))));
                }
                Some(Err(e)) => {
                    this.finished = true;
                    this.held = None;
                    return Poll::Ready(Some(Err(e)));
                }
                None => {
                    if this.seen != this.size {
                        let why = format!(
                            "blob {} has {} bytes where its descriptor says {}",
                            this.digest, this.seen, this.size
                        );
                        return Poll::Ready(Some(Err(this.condemn(why))));
                    }
                    if let Some(h) = this.hasher.take() {
                        let actual = format!("sha256:{:x}", h.finalize());
                        if actual != this.digest {
                            let why = format!(
                                "blob {} does not match its digest (content is {actual})",
                                this.digest
                            );
                            return Poll::Ready(Some(Err(this.condemn(why))));
                        }
                    }
                    this.finished = true;
                    return Poll::Ready(this.held.take().map(Ok));
                }
            }
        }
    }
}

/// A byte counter for a whole copy, archiving or extraction (see [`image::progress`]).
pub(crate) fn progress_bar(message: &str, len: u64) -> indicatif::ProgressBar {
    image::progress::bytes(
        "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {elapsed}",
        message.to_owned(),
        len,
    )
}
