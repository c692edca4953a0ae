//! A reference as `render` takes it (and `render-graph` and `diff` with it): an existing path
//! by what it holds, anything else an image.
use super::Error;
use super::disk::Local;
use super::image::{Images, fetch_as_fbc};
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
