//! A request file, as the `resolve` command takes it: read, checked, its catalogs loaded
//! (directories relative to the file), and resolved.
use std::path::Path;
use std::time::Duration;

use super::load::{ImagePulls, Sources, load_catalogs, remote_catalog};
use catalog::file::ReadLimits;
use image::ClientOptions;
use resolve::service::{Error, Loaded, Outcome, Request, resolve_request};
use source::{RemoteCatalogs, RemoteLimits};
use unfinished::Unfinished;

/// The resolution of the request in the file at `path`, images pulled with `images` and
/// unpacked into directories on `unfinished`, catalog files read within `limits`.
pub fn resolve_file(
    path: &Path,
    images: &ClientOptions,
    unfinished: &Unfinished,
    limits: ReadLimits,
) -> Result<Outcome, Error> {
    let req = read_request(path).map_err(Error::InvalidRequest)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let catalogs = load_request(&req, base, images, unfinished, limits)?;
    resolve_request(&req, &catalogs.loaded)
}

/// A request's catalogs, loaded as `resolve` loads them, with the runtime their catalog
/// servers were read on: the manifests of those servers are fetched on demand during the
/// resolution, on this runtime, so it lives as long as the catalogs.
pub struct LoadedCatalogs {
    /// In the order of the request's catalogs.
    pub loaded: Vec<Loaded>,
    _runtime: tokio::runtime::Runtime,
}

/// Loads the catalogs of `req` (directories relative to `base`) on a runtime of one worker;
/// the resolution runs outside it. Every catalog has a directory, image or address.
pub fn load_request(
    req: &Request,
    base: &Path,
    images: &ClientOptions,
    unfinished: &Unfinished,
    limits: ReadLimits,
) -> Result<LoadedCatalogs, Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("starting the runtime: {e}")))?;
    let remote = RemoteCatalogs::new(Duration::MAX, RemoteLimits::default(), remote_catalog);
    let sources = Sources {
        base,
        images: Some(ImagePulls {
            options: images,
            unfinished,
        }),
        remote: &remote,
        limits,
    };
    let own = async || Err(Error::Internal("no catalog of a server here".into()));
    let loaded = runtime.block_on(load_catalogs(req, &sources, own))?;
    Ok(LoadedCatalogs {
        loaded,
        _runtime: runtime,
    })
}

/// JSON is YAML, so one parser reads both; its errors name the field path and line.
fn read_request(path: &Path) -> Result<Request, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading: {e}"))?;
    let req: Request = serde_yaml::from_str(&text).map_err(|e| e.to_string())?;
    req.validate().map_err(|e| e.to_string())?;
    for (i, c) in req.catalogs.iter().enumerate() {
        let given = [&c.directory, &c.image, &c.address]
            .iter()
            .filter(|s| s.is_some())
            .count();
        if given != 1 {
            return Err(format!(
                "catalogs[{i}] ({}): exactly one of directory, image and address is required",
                c.name
            ));
        }
    }
    Ok(req)
}
