//! What `render` and `migrate` make of their inputs: references read as one file-based
//! catalog, migrated up to the level asked for. The migrations and the image templates of
//! bundle directories are `bundle`'s; they are named here for the layers that reach bundles
//! only through this crate.
use super::Error;
use super::disk::Local;
use super::image::Images;
use super::reference::load_reference;
use catalog::DeclarativeConfig;

pub use bundle::migrate::{MigrationLevel, migrate};
pub use bundle::template::ImageTemplate;

/// Every reference `render` accepts (see [`load_reference`]) as one catalog, in order,
/// migrated to `level`. `template` names the image of a bundle directory.
pub fn render_references(
    images: &mut Images,
    references: &[String],
    template: Option<&ImageTemplate>,
    level: MigrationLevel,
) -> Result<DeclarativeConfig, Error> {
    let mut dc = DeclarativeConfig::default();
    for r in references {
        dc.append(load_reference(images, r, template)?);
    }
    migrate(&mut dc, level).map_err(Error::Invalid)?;
    Ok(dc)
}

/// A catalog on disk of any kind `migrate` converts (FBC, package-manifest tree, index.db,
/// bundle directory), migrated to `level`.
pub fn render_local(reference: &str, level: MigrationLevel) -> Result<DeclarativeConfig, Error> {
    let mut dc = Local::detect(reference)?.load(None)?;
    migrate(&mut dc, level).map_err(Error::Invalid)?;
    Ok(dc)
}
