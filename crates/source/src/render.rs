//! What `render` and `migrate` make of their inputs: references read as one file-based
//! catalog, migrated up to the level asked for. The migrations and the image templates of
//! bundle directories are `bundle`'s; they are named here for the layers that reach bundles
//! only through this crate.
use super::Error;
use super::disk::Local;
use super::image::Images;
use super::reference::load_reference;
use catalog::DeclarativeConfig;
use catalog::file::ReadLimits;

pub use bundle::migrate::{MigrationLevel, migrate};
pub use bundle::template::ImageTemplate;

/// Every reference `render` accepts (see [`load_reference`]) as one catalog, in order,
/// migrated to `level`. `template` names the image of a bundle directory. Files are read
/// within `limits`.
pub fn render_references(
    images: &mut Images,
    limits: ReadLimits,
    references: &[String],
    template: Option<&ImageTemplate>,
    level: MigrationLevel,
) -> Result<DeclarativeConfig, Error> {
    let mut dc = DeclarativeConfig::default();
    for r in references {
        dc.append(load_reference(images, limits, r, template)?);
    }
    migrate(&mut dc, level).map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(dc)
}

/// A catalog on disk of any kind `migrate` converts (FBC, package-manifest tree, index.db,
/// bundle directory), migrated to `level`. Files are read within `limits`.
pub fn render_local(
    reference: &str,
    limits: ReadLimits,
    level: MigrationLevel,
) -> Result<DeclarativeConfig, Error> {
    let mut dc = Local::detect(reference)?.load(None, limits)?;
    migrate(&mut dc, level).map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(dc)
}
