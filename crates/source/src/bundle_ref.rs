//! One bundle named by a directory or a bundle image, for the commands that place bundles
//! themselves (`add`, the catalog templates): read and checked, rendered as an `olm.bundle`,
//! with what its annotations and CSV say about where it goes.
//!
//! Pulling and reading are separate steps because the callers differ in between: a template
//! refuses an image whose labels do not say it is a bundle before looking inside, `add` reads
//! whatever the image holds.
use super::Error;
use super::image::{Images, Unpacked, pull_unpacked};
use bundle::csv;
use bundle::dir::{BundleDir, BundleError};
use bundle::render::render;
use bundle::template::ImageTemplate;
use catalog::Bundle;
use catalog::add::NewBundle;
use catalog::file::ReadLimits;
use std::path::Path;

/// Why a bundle could not be read. The texts do not repeat the reference: each caller says
/// which one it was in its own words.
#[derive(Debug, thiserror::Error)]
pub enum BundleRefError {
    /// No registry client could be made: the client options are at fault, not the reference.
    #[error(transparent)]
    Client(Error),
    /// The image could not be pulled or unpacked.
    #[error(transparent)]
    Pull(Error),
    /// The directory, or the image's content, is not a valid bundle.
    #[error(transparent)]
    Invalid(#[from] BundleError),
}

/// A bundle read and checked.
pub struct ReadBundle(BundleDir);

impl ReadBundle {
    /// Reads and checks the bundle directory at `path`, its files within `limits`.
    pub fn read_dir(path: &Path, limits: ReadLimits) -> Result<ReadBundle, BundleRefError> {
        Ok(ReadBundle(BundleDir::read(path, limits)?))
    }

    /// The bundle as an `olm.bundle` whose image is `image`.
    pub fn render(&self, image: &str) -> Bundle {
        render(&self.0, image)
    }

    /// The image `template` names for this bundle.
    pub fn image_from(&self, template: &ImageTemplate) -> String {
        let b = &self.0;
        template.expand(b.package(), b.name(), &csv::version(b.csv()))
    }

    /// What `add` places: the bundle rendered with `image`, the channels and default channel
    /// its annotations name, and the upgrade edges its CSV declares.
    pub fn to_new_bundle(&self, image: &str) -> NewBundle {
        let (b, annotations) = (&self.0, &self.0.metadata.annotations);
        NewBundle {
            bundle: render(b, image),
            channels: annotations.channels.clone(),
            default_channel: (!annotations.default_channel.is_empty())
                .then(|| annotations.default_channel.clone()),
            replaces: csv::replaces(b.csv()).to_owned(),
            skips: csv::skips(b.csv()),
            skip_range: csv::skip_range(b.csv()).to_owned(),
        }
    }
}

/// An image pulled and unpacked into a private directory (removed when dropped), not yet
/// read as a bundle.
pub struct PulledImage(Unpacked);

impl PulledImage {
    /// Pulls and unpacks `reference`, making the registry client on first use.
    pub fn pull(images: &mut Images, reference: &str) -> Result<PulledImage, BundleRefError> {
        let unfinished = images.unfinished().clone();
        let (runtime, registry) = images.get().map_err(BundleRefError::Client)?;
        let unpacked = runtime.block_on(pull_unpacked(registry, reference, &unfinished));
        unpacked.map(PulledImage).map_err(BundleRefError::Pull)
    }

    /// Whether the image's labels say it is a bundle image.
    pub fn is_bundle_image(&self) -> bool {
        self.0.labels.contains_key(::image::LABEL_BUNDLE_PACKAGE)
    }

    /// Reads the image's content as a bundle directory, its files within `limits`.
    pub fn read(&self, limits: ReadLimits) -> Result<ReadBundle, BundleRefError> {
        ReadBundle::read_dir(&self.0.content, limits)
    }
}
