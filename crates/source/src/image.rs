//! Images as inputs: pulled, unpacked into a private directory, and read by what their
//! labels say they hold (a catalog, a bundle, a legacy index).
use super::Error;
use bundle::dir::BundleDir;
use bundle::render::render;
use bundle::sqlite;
use catalog::file::ReadLimits;
use catalog::{self, DeclarativeConfig};
use image::{self, ClientOptions, ImageRef, Registry};
use std::io::Write;
use std::path::PathBuf;
use unfinished::{ScratchDir, Unfinished};

/// A registry client and the runtime that drives it, made on first use: commands that also
/// take local paths start neither unless an image is named. The images it pulls are unpacked
/// into directories on the caller's `unfinished` list.
pub struct Images {
    options: ClientOptions,
    unfinished: Unfinished,
    made: Option<(tokio::runtime::Runtime, Registry)>,
}

impl Images {
    pub fn new(options: ClientOptions, unfinished: Unfinished) -> Images {
        Images {
            options,
            unfinished,
            made: None,
        }
    }

    /// The list pulled images are unpacked onto.
    pub(crate) fn unfinished(&self) -> &Unfinished {
        &self.unfinished
    }

    pub(crate) fn get(&mut self) -> Result<&(tokio::runtime::Runtime, Registry), Error> {
        let made = match self.made.take() {
            Some(made) => made,
            None => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::Io(format!("starting the runtime: {e}")))?;
                (runtime, Registry::new(&self.options)?)
            }
        };
        Ok(self.made.insert(made))
    }
}

/// An image's content as a file-based catalog in a private directory (removed when dropped).
pub struct UnpackedCatalog {
    _dir: ScratchDir,
    /// The FBC root.
    pub root: PathBuf,
}

/// An image's catalog: the FBC directory of a catalog image, or what another kind renders to.
pub enum Fetched {
    Dir(UnpackedCatalog),
    Rendered(DeclarativeConfig),
}

/// Pulls an image and makes an FBC directory of it, whatever its kind: see [`fetch`]; a
/// rendered catalog is written out as `catalog.json`.
pub async fn fetch_as_fbc(
    registry: &Registry,
    reference: &str,
    unfinished: &Unfinished,
    limits: ReadLimits,
) -> Result<UnpackedCatalog, Error> {
    let dc = match fetch(registry, reference, unfinished, limits).await? {
        Fetched::Dir(unpacked) => return Ok(unpacked),
        Fetched::Rendered(dc) => dc,
    };
    let dir = ScratchDir::new(unfinished, "olm-registry-image-")
        .map_err(|e| Error::Io(format!("creating a directory for {reference}: {e}")))?;
    let local =
        |e: std::io::Error, path: &std::path::Path| Error::Io(format!("{}: {e}", path.display()));
    let root = dir.path().join("catalog");
    std::fs::create_dir_all(&root).map_err(|e| local(e, &root))?;
    let file = root.join("catalog.json");
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(&file).map_err(|e| local(e, &file))?);
    catalog::write::write_json(&dc, &mut out)
        .and_then(|()| out.flush())
        .map_err(|e| local(e, &file))?;
    Ok(UnpackedCatalog { _dir: dir, root })
}

/// Pulls an image and reads its catalog by its kind (found by its labels): a catalog image
/// gives the directory its `…index.configs.v1` label names; a bundle image is rendered to an
/// `olm.bundle` whose image is `reference`; a legacy index image's database is converted.
/// The image is unpacked into a directory on `unfinished`; a bundle's files are read within
/// `limits` (a catalog's are read by the caller).
pub async fn fetch(
    registry: &Registry,
    reference: &str,
    unfinished: &Unfinished,
    limits: ReadLimits,
) -> Result<Fetched, Error> {
    let unpacked = pull_unpacked(registry, reference, unfinished).await?;
    read_unpacked(unpacked, reference, limits)
}

/// What [`fetch`] makes of an image once it is unpacked, by its labels.
pub(crate) fn read_unpacked(
    unpacked: Unpacked,
    reference: &str,
    limits: ReadLimits,
) -> Result<Fetched, Error> {
    let Unpacked {
        dir,
        content,
        labels,
    } = unpacked;
    let inside = |label: &str| content.join(label.trim_start_matches('/'));
    let labels = &labels;
    if let Some(configs) = labels.get(image::LABEL_FBC) {
        let root = inside(configs);
        if !root.is_dir() {
            return Err(Error::Invalid(format!(
                "{reference}: its {} label names {configs}, which the image does not contain",
                image::LABEL_FBC
            )));
        }
        return Ok(Fetched::Dir(UnpackedCatalog { _dir: dir, root }));
    }
    let invalid = |e: String| Error::Invalid(format!("{reference}: {e}"));
    let dc = if labels.contains_key(image::LABEL_BUNDLE_PACKAGE) {
        let bundle = BundleDir::read(&content, limits).map_err(|e| invalid(e.to_string()))?;
        DeclarativeConfig {
            bundles: vec![render(&bundle, reference)],
            ..Default::default()
        }
    } else if let Some(db) = labels.get(image::LABEL_INDEX_DB) {
        sqlite::load(&inside(db)).map_err(|e| invalid(e.to_string()))?
    } else if labels.is_empty() {
        return Err(invalid(
            "image type could not be determined: image has no labels".into(),
        ));
    } else {
        let names: Vec<&str> = labels.keys().map(String::as_str).collect();
        return Err(invalid(format!(
            "image type could not be determined, found labels {}",
            names.join(", ")
        )));
    };
    Ok(Fetched::Rendered(dc))
}

/// An image's file system in a private directory (removed when dropped), and its labels.
pub(crate) struct Unpacked {
    pub(crate) dir: ScratchDir,
    pub(crate) content: PathBuf,
    pub(crate) labels: std::collections::BTreeMap<String, String>,
}

/// Pulls an image and unpacks it into a private directory on `unfinished`.
pub(crate) async fn pull_unpacked(
    registry: &Registry,
    reference: &str,
    unfinished: &Unfinished,
) -> Result<Unpacked, Error> {
    let image_ref = ImageRef::parse(reference).map_err(Error::Invalid)?;
    let pulled = registry.pull(&image_ref).await?;
    let dir = ScratchDir::new(unfinished, "olm-registry-image-")
        .map_err(|e| Error::Io(format!("creating a directory for {reference}: {e}")))?;
    let content = dir.path().join("image");
    image::unpack(&pulled, &content)?;
    Ok(Unpacked {
        dir,
        content,
        labels: pulled.labels,
    })
}
