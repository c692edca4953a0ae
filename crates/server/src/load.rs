//! Loading the catalog: a directory is read as it is, an image is pulled and unpacked (or
//! rendered, for a bundle or legacy index image) first; then the index is opened from the
//! cache directory when it matches the catalog, or built. Blocking work (a pull can take a
//! while), run on a blocking thread while the listeners answer.
use super::config::{CatalogSource, ServeConfig};
use super::error::Error;
use super::metrics::CatalogFacts;
use catalog::file::ReadLimits;
use image::Registry;
use source::image::{Fetched, fetch};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::cache::{self, CacheError, CacheOptions, OpenIndex, Outcome};
use store::ingest::{Input, Rendered};
use tokio::task::JoinHandle;
use tracing::info;
use unfinished::Unfinished;

/// A catalog to load and where its index goes, with all it needs moved onto the thread.
pub(crate) struct Load {
    catalog: Acquire,
    cache_dir: Option<PathBuf>,
    enforce_integrity: bool,
    /// `--cache-only`: the cache directory is the point, so one that cannot be written fails.
    require_cache: bool,
    catalogd_content: bool,
    /// Only a catalog image will do (catalogd's rule), not a bundle or legacy index image.
    catalog_images_only: bool,
    read_limits: ReadLimits,
    /// Where the unpacked image and the index being written are listed while in progress.
    unfinished: Unfinished,
}

/// A [`CatalogSource`] ready to read: an image comes with its registry client.
enum Acquire {
    Dir(PathBuf),
    Image(Arc<Registry>, String),
}

impl Acquire {
    /// An image's registry client is made here, so that options it cannot use (an unreadable
    /// CA file, say) fail before anything starts.
    fn of(source: &CatalogSource) -> Result<Acquire, Error> {
        Ok(match source {
            CatalogSource::Dir(dir) => Acquire::Dir(dir.clone()),
            CatalogSource::Image { reference, client } => {
                let registry = Registry::new(client).map_err(source::Error::from)?;
                Acquire::Image(Arc::new(registry), reference.clone())
            }
        })
    }
}

impl Load {
    /// The load of `config`'s catalog.
    pub(crate) fn new(
        config: &ServeConfig,
        require_cache: bool,
        unfinished: &Unfinished,
    ) -> Result<Load, Error> {
        Ok(Load {
            catalog: Acquire::of(&config.catalog)?,
            cache_dir: config.cache.dir.clone(),
            enforce_integrity: config.cache.enforce_integrity,
            require_cache,
            catalogd_content: config.listen.catalogd.is_some(),
            catalog_images_only: false,
            read_limits: config.read_limits,
            unfinished: unfinished.clone(),
        })
    }

    /// The loads of the catalogs `config` serves over HTTP only, by name; with a cache
    /// directory, each keeps its index in `DIR/catalogs/NAME`.
    pub(crate) fn more(
        config: &ServeConfig,
        unfinished: &Unfinished,
    ) -> Result<Vec<(String, Load)>, Error> {
        let Some(listen) = &config.listen.catalogd else {
            return Ok(Vec::new());
        };
        let mut loads = Vec::new();
        for (name, source) in &listen.more {
            loads.push((
                name.clone(),
                Load {
                    catalog: Acquire::of(source)?,
                    cache_dir: config
                        .cache
                        .dir
                        .as_ref()
                        .map(|dir| dir.join("catalogs").join(name)),
                    enforce_integrity: config.cache.enforce_integrity,
                    require_cache: false,
                    catalogd_content: true,
                    catalog_images_only: false,
                    read_limits: config.read_limits,
                    unfinished: unfinished.clone(),
                },
            ));
        }
        Ok(loads)
    }

    /// The load of catalog image `reference`, indexed with the catalogd API's content in a
    /// private directory.
    fn image(
        registry: Arc<Registry>,
        reference: &str,
        read_limits: ReadLimits,
        unfinished: &Unfinished,
    ) -> Load {
        Load {
            catalog: Acquire::Image(registry, reference.to_owned()),
            cache_dir: None,
            enforce_integrity: false,
            require_cache: false,
            catalogd_content: true,
            catalog_images_only: true,
            read_limits,
            unfinished: unfinished.clone(),
        }
    }

    /// Acquires the catalog and opens its index. Blocking; an image is pulled on the
    /// runtime this thread was started from.
    pub(crate) fn open(&self) -> Result<OpenIndex, Error> {
        // The unpacked or rendered image (if any) is kept only until it is indexed.
        let (mut unpacked, mut rendered) = (None, None);
        let catalog = match &self.catalog {
            Acquire::Dir(dir) => Input::Dir(dir, self.read_limits),
            Acquire::Image(registry, reference) => {
                info!(image = %reference, "pulling catalog image");
                let fetched = tracing::info_span!(target: store::SPAN_TARGET, "catalog.pull")
                    .in_scope(|| {
                        let pull = fetch(registry, reference, &self.unfinished, self.read_limits);
                        tokio::runtime::Handle::current().block_on(pull)
                    })?;
                match fetched {
                    Fetched::Dir(dir) => Input::Dir(&unpacked.insert(dir).root, self.read_limits),
                    Fetched::Rendered(_) if self.catalog_images_only => {
                        return Err(source::Error::Invalid(format!(
                            "catalog image {reference:?} is missing the required label {:?}",
                            image::LABEL_FBC
                        ))
                        .into());
                    }
                    Fetched::Rendered(dc) => {
                        Input::Rendered(rendered.insert(Rendered::new(reference, &dc)))
                    }
                }
            }
        };
        Ok(cache::open_or_build(&CacheOptions {
            catalog,
            cache_dir: self.cache_dir.as_deref(),
            enforce_integrity: self.enforce_integrity,
            require_cache: self.require_cache,
            catalogd_content: self.catalogd_content,
            unfinished: &self.unfinished,
        })?)
    }

    /// [`Load::open`] on a blocking thread, in the `catalog.load` span, with what the logs
    /// and metrics say about the catalog it opened.
    pub(crate) fn spawn_timed(self) -> JoinHandle<Result<(OpenIndex, CatalogFacts), Error>> {
        tokio::task::spawn_blocking(move || {
            let _span = tracing::info_span!(target: store::SPAN_TARGET, "catalog.load").entered();
            let started = Instant::now();
            let loaded = self.open()?;
            let facts = catalog_facts(&loaded, started.elapsed())?;
            Ok((loaded, facts))
        })
    }
}

/// What the logs and metrics say about a catalog that `took` to load. Blocking: it counts in
/// the index.
fn catalog_facts(loaded: &OpenIndex, took: Duration) -> Result<CatalogFacts, CacheError> {
    let (packages, channels, bundles) = loaded
        .store
        .with_conn(store::query::counts)
        .map_err(|e| CacheError::Io(format!("counting the catalog: {e:?}")))?;
    let index_bytes = std::fs::metadata(loaded.store.path())
        .map(|m| i64::try_from(m.len()).unwrap_or(i64::MAX))
        .unwrap_or_default();
    Ok(CatalogFacts {
        digest: loaded.store.digest().to_owned(),
        packages,
        channels,
        bundles,
        index_bytes,
        warm: matches!(loaded.outcome, Outcome::Reused),
        load: took,
    })
}

/// Pulls catalog image `reference` (one with the FBC label; best named by digest: what is indexed is what it names
/// when pulled) and indexes it for the catalogd API in a private directory, which the index
/// returned keeps. Blocking, on a thread of a Tokio runtime (the pull runs on it); files being
/// written are listed on `unfinished` meanwhile.
pub fn index_image(
    registry: Arc<Registry>,
    reference: &str,
    read_limits: ReadLimits,
    unfinished: &Unfinished,
) -> Result<OpenIndex, Error> {
    Load::image(registry, reference, read_limits, unfinished).open()
}
