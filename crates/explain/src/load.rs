//! The content of the CatalogSources, read as `resolve` reads catalogs (the server crate's one
//! loader): through the catalog's address (`spec.address`, or the Service of its pod) when
//! it answers, else from `spec.image`, pulled and indexed here. Each catalog is read once,
//! however many namespaces see it.
use std::collections::BTreeMap;
use std::path::Path;

use catalog::file::ReadLimits;
use image::ClientOptions;
use resolve::service::request::{CatalogSpec, Mode, Request};
use resolve::service::{Catalog, Loaded};
use server::resolution::{LoadedCatalogs, load_request};
use unfinished::Unfinished;

use crate::Error;
use crate::state::{Source, catalog_spec};

/// Every catalog read, by `namespace/name`, with where it was read from.
pub(crate) struct Contents {
    pub(crate) by_key: BTreeMap<String, Read>,
    /// The runtimes the catalog servers' manifests are fetched on during resolution.
    _kept: Vec<LoadedCatalogs>,
}

pub(crate) struct Read {
    pub(crate) catalog: Loaded,
    /// `address A` or `image I`; empty when neither was tried.
    pub(crate) from: String,
}

impl Contents {
    pub(crate) fn catalog(&self, key: &str) -> Option<&Catalog> {
        self.by_key.get(key).and_then(|r| r.catalog.as_ref().ok())
    }
}

/// How images are pulled.
pub(crate) struct Pulls<'a> {
    pub(crate) options: &'a ClientOptions,
    pub(crate) unfinished: &'a Unfinished,
    pub(crate) limits: ReadLimits,
}

/// Reads every distinct catalog of `sources`: first each through its address (or its image
/// when it has no address), then, for those whose address did not answer, their image. A
/// CatalogSource image that cannot be pulled is an error: explain cannot say what it holds.
pub(crate) fn read_all(sources: &[&Source], pulls: &Pulls<'_>) -> Result<Contents, Error> {
    let mut by_key = BTreeMap::new();
    let mut kept = Vec::new();
    let first: Vec<(&Source, String, CatalogSpec)> = sources
        .iter()
        .filter_map(|s| match (&s.address, &s.image) {
            (Some(a), _) => Some((*s, format!("address {a}"), catalog_spec(s, Some(a), None))),
            (None, Some(i)) => Some((*s, format!("image {i}"), catalog_spec(s, None, Some(i)))),
            (None, None) => {
                by_key.insert(
                    s.key(),
                    Read {
                        catalog: Err("it has neither spec.address nor spec.image \
                                      (configmap sources are not read)"
                            .to_owned()),
                        from: String::new(),
                    },
                );
                None
            }
        })
        .collect();
    // Catalog servers all at once; each image on its own, so that one that cannot be
    // pulled is named.
    let (servers, images): (Vec<_>, Vec<_>) =
        first.into_iter().partition(|(_, _, c)| c.address.is_some());
    let retry = load(&servers, pulls, &mut by_key, &mut kept)?;
    for one in images.into_iter().chain(retry) {
        load(std::slice::from_ref(&one), pulls, &mut by_key, &mut kept)?;
    }
    Ok(Contents {
        by_key,
        _kept: kept,
    })
}

/// Loads `specs`; returns the image specs to try for the addresses that failed.
fn load<'a>(
    specs: &[(&'a Source, String, CatalogSpec)],
    pulls: &Pulls<'_>,
    by_key: &mut BTreeMap<String, Read>,
    kept: &mut Vec<LoadedCatalogs>,
) -> Result<Vec<(&'a Source, String, CatalogSpec)>, Error> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let request = v1_request(specs.iter().map(|(_, _, c)| c.clone()).collect());
    let loaded = load_request(
        &request,
        Path::new("."),
        pulls.options,
        pulls.unfinished,
        pulls.limits,
    )
    .map_err(|e| match specs {
        [(source, from, _)] => Error::Catalog(format!(
            "CatalogSource {} ({from}) cannot be read: {e}",
            source.key()
        )),
        _ => Error::Catalog(e.to_string()),
    })?;
    let mut retry = Vec::new();
    for ((source, from, spec), catalog) in specs.iter().zip(&loaded.loaded) {
        if catalog.is_err()
            && spec.address.is_some()
            && let Some(image) = &source.image
        {
            tracing::debug!(catalog = %source.key(), "address did not answer; pulling the image");
            retry.push((
                *source,
                format!("image {image}"),
                catalog_spec(source, None, Some(image)),
            ));
        }
        by_key.insert(
            source.key(),
            Read {
                catalog: catalog.clone(),
                from: from.clone(),
            },
        );
    }
    kept.push(loaded);
    Ok(retry)
}

/// Loads every catalog of a v1 request (images).
pub(crate) fn read_images(request: &Request, pulls: &Pulls<'_>) -> Result<LoadedCatalogs, Error> {
    load_request(
        request,
        Path::new("."),
        pulls.options,
        pulls.unfinished,
        pulls.limits,
    )
    .map_err(|e| Error::Catalog(format!("a ClusterCatalog cannot be read: {e}")))
}

/// A v1 request for `catalogs` and no extension yet: in v1 mode every catalog is loaded,
/// whatever namespace it is in.
pub(crate) fn v1_request(catalogs: Vec<CatalogSpec>) -> Request {
    Request {
        mode: Mode::V1,
        namespace: String::new(),
        upgrade_strategy: Default::default(),
        global_namespace: String::new(),
        exclude_global_namespace_resolution: false,
        catalogs,
        installed: Vec::new(),
        subscriptions: Vec::new(),
        requests: Vec::new(),
        cluster: None,
    }
}
