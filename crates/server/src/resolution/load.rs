//! The one way a request's catalogs are loaded, by the command and by the service alike:
//! directories (relative to the request file) and images are read whole, catalog servers
//! through the shared remote cache, and the server's own catalog by its caller. Catalogs
//! the resolution cannot use are not read at all.
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use catalog::decode::describe_load_errors;
use catalog::file::ReadLimits;
use catalog::{DeclarativeConfig, walk};
use image::{ClientOptions, Registry};
use resolve::service::{Catalog, Error, Loaded, ManifestSource, Request, not_loaded};
use source::image::fetch_as_fbc;
use source::{RemoteCatalogs, RemoteManifests};
use unfinished::Unfinished;

/// Where the catalogs of a request are read from.
pub(crate) struct Sources<'a> {
    /// What catalog directories are relative to.
    pub(crate) base: &'a Path,
    /// How to pull images, where requests may name them.
    pub(crate) images: Option<ImagePulls<'a>>,
    pub(crate) remote: &'a RemoteCatalogs<Catalog>,
    /// How much of the files of directories and images may be read.
    pub(crate) limits: ReadLimits,
}

/// How a request's images are pulled: the registry client's options, and the list their
/// unpacked directories are on while they are read.
pub(crate) struct ImagePulls<'a> {
    pub(crate) options: &'a ClientOptions,
    pub(crate) unfinished: &'a Unfinished,
}

/// The manifests of a catalog server's bundles, read on demand.
struct ServerManifests(RemoteManifests);

impl ManifestSource for ServerManifests {
    fn objects(&self, package: &str, channel: &str, bundle: &str) -> Result<Vec<String>, Error> {
        self.0
            .objects(package, channel, bundle)
            .map_err(from_source)
    }
}

/// A catalog read from another server (the [`source::remote::MakeCatalog`] of
/// [`Sources::remote`]).
pub(crate) fn remote_catalog(content: DeclarativeConfig, manifests: RemoteManifests) -> Catalog {
    Catalog::new(
        Arc::new(content),
        Some(Arc::new(ServerManifests(manifests))),
    )
}

/// A resolution's view of an input that could not be read: the request's fault when the input
/// is not what it names, otherwise unavailable for now (or ours, for local files).
pub(crate) fn from_source(e: source::Error) -> Error {
    use image::ErrorKind;
    use source::Error as Source;
    match e {
        Source::Invalid(m) => Error::InvalidRequest(m),
        Source::Image(i) if matches!(i.kind, ErrorKind::NotFound | ErrorKind::InvalidContent) => {
            Error::InvalidRequest(i.message)
        }
        Source::Image(i) => Error::CatalogUnavailable(i.message),
        Source::Unavailable(m) => Error::CatalogUnavailable(m),
        Source::Io(m) => Error::Internal(m),
    }
}

/// The catalogs of `req`, in its order. A catalog server that cannot be read fails only what
/// needs it (its entry is an error); a directory or image that cannot be read, or `own`
/// failing (the server's own catalog, for a catalog without an address, directory or image),
/// fails the request. Every server read starts before any is waited for, and none is waited
/// for past the remote budget.
pub(crate) async fn load_catalogs<F>(
    req: &Request,
    sources: &Sources<'_>,
    own: impl Fn() -> F,
) -> Result<Vec<Loaded>, Error>
where
    F: Future<Output = Result<Catalog, Error>>,
{
    let deadline = Instant::now() + sources.remote.budget();
    let pending: Vec<_> = req
        .catalogs
        .iter()
        .map(|c| match c.address.as_deref() {
            _ if !req.resolves_from(c) => None,
            address => Some(address.map(|a| sources.remote.get(a))),
        })
        .collect();
    let mut registry = None;
    let mut loaded = Vec::with_capacity(pending.len());
    for (i, (c, p)) in req.catalogs.iter().zip(pending).enumerate() {
        let at = |e: Error| e.context(&format!("catalogs[{i}] ({})", c.name));
        loaded.push(match p {
            None => not_loaded(),
            Some(Some(remote)) => remote.wait(deadline).await.map_err(|e| e.to_string()),
            Some(None) => match (&c.directory, &c.image) {
                (Some(dir), _) => {
                    let root = sources.base.join(dir);
                    Ok(read_dir(root, sources.limits, ()).await.map_err(at)?)
                }
                (None, Some(reference)) => {
                    let images = sources.images.as_ref().ok_or_else(|| {
                        at(Error::InvalidRequest("images are not read here".into()))
                    })?;
                    let registry = match &mut registry {
                        Some(r) => r,
                        None => registry.insert(new_registry(images.options).await.map_err(at)?),
                    };
                    let unpacked =
                        fetch_as_fbc(registry, reference, images.unfinished, sources.limits)
                            .await
                            .map_err(|e| at(from_source(e)))?;
                    let root = unpacked.root.clone();
                    Ok(read_dir(root, sources.limits, Some(unpacked))
                        .await
                        .map_err(at)?)
                }
                (None, None) => Ok(own().await?),
            },
        });
    }
    Ok(loaded)
}

/// Made on a blocking thread: it reads the credentials and CA files.
async fn new_registry(options: &ClientOptions) -> Result<Registry, Error> {
    let options = options.clone();
    tokio::task::spawn_blocking(move || Registry::new(&options))
        .await
        .map_err(|e| Error::Internal(format!("the registry client task failed: {e}")))?
        .map_err(|e| from_source(e.into()))
}

/// An FBC directory, parsed on a blocking thread within `limits`; `keep` lives until it is
/// read.
async fn read_dir<K: Send + 'static>(
    root: std::path::PathBuf,
    limits: ReadLimits,
    keep: K,
) -> Result<Catalog, Error> {
    tokio::task::spawn_blocking(move || {
        let _keep = keep;
        walk::load_dir(&root, limits)
            .map(Catalog::of)
            .map_err(|e| Error::InvalidRequest(describe_load_errors(&e)))
    })
    .await
    .map_err(|e| Error::Internal(format!("the catalog read failed: {e}")))?
}
