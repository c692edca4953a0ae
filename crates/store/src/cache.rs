//! Where the index lives between runs (`serve --cache-dir`), and when it is reused.
//!
//! The index and the digest of the catalog it was built from sit together in
//! `<cache-dir>/olm-registry.v1/index.db`. A start with an unchanged catalog opens it as is.
//! A stale, corrupt or foreign cache is rebuilt with a warning — a CatalogSource pod must
//! never crash-loop on its own cache — unless integrity is enforced, as opm does.
use super::ingest::{IngestError, Input, PARTIAL_PREFIX, PARTIAL_SUFFIX, Summary, build_index};
use super::{Store, digest, schema};
use catalog::decode::LoadError;
use std::path::{Path, PathBuf};
use tracing::{info, warn};
use unfinished::{ScratchDir, Unfinished};

/// The directory inside `--cache-dir` that holds our index.
pub(crate) const CACHE_SUBDIR: &str = "olm-registry.v1";
const INDEX_FILE: &str = "index.db";

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// `--cache-enforce-integrity` and the cache does not match the catalog.
    #[error("integrity check failed: {0}")]
    Integrity(String),
    // The ingest's message is the whole message: callers print this error alone, not a chain.
    #[error("{0}")]
    Ingest(IngestError),
    #[error("{0}")]
    Io(String),
}

/// How an index was obtained.
#[derive(Debug)]
pub enum Outcome {
    /// Reused from the cache directory: nothing was ingested.
    Reused,
    Built(Summary),
}

/// An open index.
pub struct OpenIndex {
    pub store: Store,
    pub outcome: Outcome,
    /// The private directory the index lives in when there is no cache directory; it is
    /// removed when dropped (or when the process stops before the load ends), so keep it as
    /// long as the store is used.
    pub scratch: Option<ScratchDir>,
}

pub struct CacheOptions<'a> {
    pub catalog: Input<'a>,
    pub cache_dir: Option<&'a Path>,
    /// Refuse a missing or stale cache instead of rebuilding it.
    pub enforce_integrity: bool,
    /// The cache directory is the point (`--cache-only`): when it cannot be written, fail
    /// instead of building in a private directory that is thrown away.
    pub require_cache: bool,
    /// The index must hold the catalogd HTTP API's content (`serve --http-addr`); a cached
    /// index without it is rebuilt. One with it serves either kind of server.
    pub catalogd_content: bool,
    /// Where the files being written (the partial index, a private cache directory) are
    /// listed, for a caller that may stop before they are done.
    pub unfinished: &'a Unfinished,
}

/// Opens the index for a catalog, building it when there is no usable one.
///
/// Only an index to compare with needs the catalog's digest before the ingest: without one
/// (a cold start) the ingest computes it from its own reads, so each file is read once. A
/// stale index costs two reads.
pub fn open_or_build(opts: &CacheOptions<'_>) -> Result<OpenIndex, CacheError> {
    let Some(cache_dir) = opts.cache_dir else {
        return build_in_scratch(opts);
    };
    let index = index_path(cache_dir);
    let cached = Store::open(&index);
    // Enforced integrity never rebuilds, so a catalog that cannot be read is refused here;
    // otherwise the ingest refuses it, naming every file it cannot read as the loader does.
    let digest = if opts.enforce_integrity {
        Some(digest_pass(opts.catalog).map_err(|e| CacheError::Ingest(IngestError::Load(e)))?)
    } else if cached.is_ok() {
        digest_pass(opts.catalog).ok()
    } else {
        None
    };
    match cached {
        Ok(store)
            if digest.as_deref() == Some(store.digest())
                && (store.has_catalogd_content() || !opts.catalogd_content) =>
        {
            info!(cache = %index.display(), "catalog unchanged, serving the cached index");
            return Ok(OpenIndex {
                store,
                outcome: Outcome::Reused,
                scratch: None,
            });
        }
        Ok(store) => {
            if let Some(digest) = &digest {
                let problem = if digest == store.digest() {
                    "cache requires rebuild: the cached index holds no catalogd HTTP content (it was built without --http-addr)".to_owned()
                } else {
                    format!(
                        "cache requires rebuild: cache reports digest as {:?}, but computed digest is {digest:?}",
                        store.digest()
                    )
                };
                if opts.enforce_integrity {
                    return Err(CacheError::Integrity(problem));
                }
                warn!(cache = %index.display(), "{problem}; rebuilding");
            }
        }
        Err(e) => {
            if opts.enforce_integrity {
                return Err(CacheError::Integrity(format!(
                    "cache requires rebuild: {e}"
                )));
            }
            if index.exists() {
                warn!("unusable cached index ({e}); rebuilding");
            } else if let Some(foreign) = foreign_contents(cache_dir) {
                warn!(
                    cache = %cache_dir.display(),
                    "cache directory holds another format ({foreign}); building our index beside it"
                );
            }
        }
    }
    let dir = index.parent().unwrap_or(cache_dir);
    match std::fs::create_dir_all(dir).and_then(|()| tempfile::tempfile_in(dir)) {
        Ok(_probe) => {
            remove_partial_indexes(dir);
            build(opts, &index, digest.as_deref(), None)
        }
        Err(e) if opts.require_cache => Err(CacheError::Io(format!(
            "cache directory {} is not writable: {e}",
            dir.display()
        ))),
        // A read-only root filesystem with an outdated cache baked into the image: serving
        // from a private index beats a crash loop.
        Err(e) => {
            warn!(cache = %cache_dir.display(), "cache directory is not writable ({e}); using a private one");
            build_in_scratch(opts)
        }
    }
}

pub(crate) fn index_path(cache_dir: &Path) -> PathBuf {
    cache_dir.join(CACHE_SUBDIR).join(INDEX_FILE)
}

/// The catalog's digest by a pass of its own, to compare with an index.
fn digest_pass(catalog: Input<'_>) -> Result<String, Vec<LoadError>> {
    tracing::info_span!(target: crate::SPAN_TARGET, "catalog.digest").in_scope(|| match catalog {
        Input::Dir(root, limits) => digest::catalog_digest(root, limits, schema::CURRENT_VERSION),
        Input::Rendered(rendered) => Ok(rendered.digest(schema::CURRENT_VERSION)),
    })
}

fn build_in_scratch(opts: &CacheOptions<'_>) -> Result<OpenIndex, CacheError> {
    let scratch = ScratchDir::new(opts.unfinished, "olm-registry-cache-")
        .map_err(|e| CacheError::Io(format!("creating a private cache directory: {e}")))?;
    let index = scratch.path().join(INDEX_FILE);
    build(opts, &index, None, Some(scratch))
}

fn build(
    opts: &CacheOptions<'_>,
    index: &Path,
    digest: Option<&str>,
    scratch: Option<ScratchDir>,
) -> Result<OpenIndex, CacheError> {
    let summary = tracing::info_span!(target: crate::SPAN_TARGET, "catalog.ingest")
        .in_scope(|| {
            build_index(
                opts.catalog,
                index,
                digest,
                opts.catalogd_content,
                opts.unfinished,
            )
        })
        .map_err(CacheError::Ingest)?;
    info!(
        packages = summary.packages,
        bundles = summary.bundles,
        entries = summary.entries,
        bytes = summary.bytes,
        elapsed_ms = summary.elapsed.as_millis() as u64,
        "catalog ingested"
    );
    let store =
        Store::open(index).map_err(|e| CacheError::Io(format!("opening the new index: {e}")))?;
    Ok(OpenIndex {
        store,
        outcome: Outcome::Built(summary),
        scratch,
    })
}

/// An ingest that was killed (SIGKILL, OOM) cannot remove its partial file; the next one does.
/// A partial file still locked belongs to an ingest running beside us on the same cache
/// directory, and is left alone.
fn remove_partial_indexes(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(PARTIAL_PREFIX) && name.ends_with(PARTIAL_SUFFIX) {
            let abandoned = std::fs::File::open(entry.path()).is_ok_and(|f| f.try_lock().is_ok());
            if !abandoned {
                info!(file = %entry.path().display(), "another ingest is writing this partial index; leaving it");
                continue;
            }
            match std::fs::remove_file(entry.path()) {
                Ok(()) => {
                    warn!(file = %entry.path().display(), "removed the partial index of an interrupted ingest")
                }
                Err(e) => {
                    warn!(file = %entry.path().display(), "cannot remove a partial index: {e}")
                }
            }
        }
    }
}

/// Names of entries that are not ours, when the directory has any (an opm cache, say).
fn foreign_contents(dir: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != CACHE_SUBDIR)
        .collect();
    names.sort();
    (!names.is_empty()).then(|| names.join(", "))
}
