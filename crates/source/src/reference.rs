//! A reference as `render` takes it (and `render-graph` and `diff` with it): an existing path
//! by what it holds, anything else an image.
use super::Error;
use super::disk::Local;
use super::image::{Fetched, Images, fetch_as_fbc, pull_unpacked, read_unpacked};
use bundle::template::ImageTemplate;
use catalog::decode::describe_load_errors;
use catalog::file::ReadLimits;
use catalog::{DeclarativeConfig, walk};
use std::path::Path;

/// Any reference `render` accepts, as FBC: an existing path by what it holds (FBC, bundle
/// or index.db; a package-manifest tree is refused with the command that converts it),
/// anything else as an image. `template` names the image of a bundle directory. Files are
/// read within `limits`.
pub fn load_reference(
    images: &mut Images,
    limits: ReadLimits,
    r: &str,
    template: Option<&ImageTemplate>,
) -> Result<DeclarativeConfig, Error> {
    if !Path::new(r).exists() {
        let unfinished = images.unfinished().clone();
        let (runtime, registry) = images.get()?;
        let unpacked = runtime.block_on(fetch_as_fbc(registry, r, &unfinished, limits))?;
        return walk::load_dir(&unpacked.root, limits)
            .map_err(|e| Error::Invalid(describe_load_errors(&e)));
    }
    let local = Local::detect(r)?;
    if let Local::PackageManifests(_) = local {
        return Err(Error::Invalid(format!(
            "ref {r:?} is a legacy package-manifest tree: convert it with `migrate {r} <output-dir>`"
        )));
    }
    local.load(template, limits)
}

/// What [`load_catalog`] found a reference to hold.
pub enum Held {
    /// A catalog: an FBC directory, an index.db, a catalog image or a legacy index image.
    Catalog(DeclarativeConfig),
    /// A bundle directory or bundle image, left unread.
    Bundle,
}

/// A reference that should name a catalog, read as [`load_reference`] reads it, except that a
/// bundle (directory or image) is told apart before it is read, for the caller to refuse in
/// its own words (opm's `alpha list` names the reference "non-index"). Files are read within
/// `limits`.
pub fn load_catalog(images: &mut Images, limits: ReadLimits, r: &str) -> Result<Held, Error> {
    if Path::new(r).exists() {
        return match Local::detect(r)? {
            Local::BundleDir(_) => Ok(Held::Bundle),
            _ => load_reference(images, limits, r, None).map(Held::Catalog),
        };
    }
    let unfinished = images.unfinished().clone();
    let (runtime, registry) = images.get()?;
    let unpacked = runtime.block_on(pull_unpacked(registry, r, &unfinished))?;
    // The same test `fetch` reads a bundle image by: a bundle label and no catalog label.
    let labels = &unpacked.labels;
    if !labels.contains_key(::image::LABEL_FBC)
        && labels.contains_key(::image::LABEL_BUNDLE_PACKAGE)
    {
        return Ok(Held::Bundle);
    }
    match read_unpacked(unpacked, r, limits)? {
        Fetched::Dir(catalog) => walk::load_dir(&catalog.root, limits)
            .map_err(|e| Error::Invalid(describe_load_errors(&e))),
        Fetched::Rendered(dc) => Ok(dc),
    }
    .map(Held::Catalog)
}
