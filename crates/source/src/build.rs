//! What `build` makes: bundle and catalog images built without a container engine (see
//! [`image::build_image`]) and pushed to a registry or written to an OCI layout.
use super::Error;
use super::image::Images;
use bundle::dir::{BundleDir, BundleError};
use catalog::file::ReadLimits;
use image::{BuiltImage, ImageRef, build_image};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The image to build.
pub enum ImageSource<'a> {
    /// A bundle image: `manifests/` and `metadata/` at the image root, labelled from the
    /// annotations as upstream's bundle images are.
    Bundle(&'a Path),
    /// A catalog image: the FBC directory at `/configs`, with extra labels (a later one
    /// replaces an earlier one of the same key, and any may replace the catalog label).
    Catalog {
        dir: &'a Path,
        labels: Vec<(String, String)>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The bundle directory is not a valid bundle: an image of it would help nobody.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error("{:?} is not a directory", .0.display().to_string())]
    NotADirectory(PathBuf),
    /// The layer could not be made (a file that cannot be read).
    #[error("{0}")]
    Layer(#[source] ::image::Error),
    /// The tag is not an image reference.
    #[error("{0}")]
    Tag(String),
    /// No registry client could be made.
    #[error(transparent)]
    Client(#[from] Error),
    #[error(transparent)]
    Push(::image::Error),
}

/// Where an image went: displayed as `reference@digest`.
pub struct Pushed {
    target: ImageRef,
    digest: String,
}

impl fmt::Display for Pushed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.target, self.digest)
    }
}

/// Builds the image and pushes it to `tag` (a registry reference or `oci:DIR[:TAG]`).
pub fn build_and_push(
    source: &ImageSource,
    tag: &str,
    images: &mut Images,
) -> Result<Pushed, BuildError> {
    let built = match source {
        ImageSource::Bundle(dir) => build_bundle(dir)?,
        ImageSource::Catalog { dir, labels } => build_catalog(dir, labels)?,
    };
    let target = ImageRef::parse(tag).map_err(BuildError::Tag)?;
    let (runtime, registry) = images.get()?;
    let digest = runtime
        .block_on(registry.push(&built, &target))
        .map_err(BuildError::Push)?;
    Ok(Pushed { target, digest })
}

const BUNDLE_LABEL_PREFIX: &str = "operators.operatorframework.io.bundle.";

fn build_bundle(dir: &Path) -> Result<BuiltImage, BuildError> {
    // Reading the bundle checks it (`build` has no --max-file-size: within the default cap).
    let bundle = BundleDir::read(dir, ReadLimits::default())?;
    let a = &bundle.metadata.annotations;
    let mut labels: BTreeMap<String, String> = [
        ("mediatype.v1", "registry+v1".to_owned()),
        ("manifests.v1", "manifests/".to_owned()),
        ("metadata.v1", "metadata/".to_owned()),
        ("package.v1", a.package.clone()),
        ("channels.v1", a.channels.join(",")),
    ]
    .into_iter()
    .map(|(key, value)| (format!("{BUNDLE_LABEL_PREFIX}{key}"), value))
    .collect();
    if !a.default_channel.is_empty() {
        labels.insert(
            format!("{BUNDLE_LABEL_PREFIX}channel.default.v1"),
            a.default_channel.clone(),
        );
    }
    let (manifests, metadata) = (dir.join("manifests"), dir.join("metadata"));
    let contents = [(&*manifests, "/manifests"), (&*metadata, "/metadata")];
    build_image(&contents, &labels).map_err(BuildError::Layer)
}

fn build_catalog(dir: &Path, extra: &[(String, String)]) -> Result<BuiltImage, BuildError> {
    if !dir.is_dir() {
        return Err(BuildError::NotADirectory(dir.to_owned()));
    }
    let mut labels = BTreeMap::from([(image::LABEL_FBC.to_owned(), "/configs".to_owned())]);
    labels.extend(extra.iter().cloned());
    build_image(&[(dir, "/configs")], &labels).map_err(BuildError::Layer)
}
