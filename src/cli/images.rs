//! Image options shared by the commands that pull or push, and reading any image as FBC.
use crate::bundle::dir::BundleDir;
use crate::bundle::render::render;
use crate::bundle::source::Source;
use crate::bundle::sqlite;
use crate::bundle::template::ImageTemplate;
use crate::catalog::decode::describe_load_errors;
use crate::catalog::{self, DeclarativeConfig, walk};
use crate::image::{self, ClientOptions, ImageRef, Registry};
use crate::unfinished::ScratchDir;
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Clone, Debug, Default)]
pub struct ImageArgs {
    /// A registry reached over plain HTTP (HOST:PORT); repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST:PORT")]
    pub insecure_registries: Vec<String>,
    /// Extra CA certificates (PEM) to trust for registries.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    /// Docker config.json with registry credentials (default $REGISTRY_AUTH_FILE, then ~/.docker/config.json).
    #[arg(long, value_name = "FILE")]
    pub registry_config: Option<PathBuf>,
    /// Platform to pick from multi-platform images.
    #[arg(long, value_name = "OS/ARCH")]
    pub platform: Option<String>,
    /// Where pulled image content is cached by digest (default $XDG_CACHE_HOME/olm-registry or ~/.cache/olm-registry).
    #[arg(long, value_name = "DIR")]
    pub image_cache_dir: Option<PathBuf>,
}

impl ImageArgs {
    pub fn registry(&self, use_http: bool, skip_tls_verify: bool) -> Result<Registry, String> {
        let cache_dir = match &self.image_cache_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(std::env::temp_dir)
                .join("olm-registry/blobs"),
        };
        Registry::new(&ClientOptions {
            insecure_registries: self.insecure_registries.clone(),
            use_http,
            skip_tls_verify,
            ca_file: self.ca_file.clone(),
            registry_config: self.registry_config.clone(),
            platform: self.platform.clone(),
            cache_dir,
        })
    }
}

/// A registry client and the runtime that drives it, made on first use: commands that also
/// take local paths start neither unless an image is named.
pub struct LazyRegistry<'a> {
    args: &'a ImageArgs,
    use_http: bool,
    skip_tls_verify: bool,
    made: Option<(tokio::runtime::Runtime, Registry)>,
}

impl<'a> LazyRegistry<'a> {
    pub fn new(args: &'a ImageArgs, use_http: bool, skip_tls_verify: bool) -> Self {
        LazyRegistry {
            args,
            use_http,
            skip_tls_verify,
            made: None,
        }
    }

    pub fn get(&mut self) -> Result<&(tokio::runtime::Runtime, Registry), String> {
        let made = match self.made.take() {
            Some(made) => made,
            None => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("starting the runtime: {e}"))?;
                (
                    runtime,
                    self.args.registry(self.use_http, self.skip_tls_verify)?,
                )
            }
        };
        Ok(self.made.insert(made))
    }
}

/// Any reference `render` accepts, as FBC: an existing path by what it holds (FBC, bundle
/// or index.db; a package-manifest tree is refused with the command that converts it),
/// anything else as an image.
pub fn load_reference(
    images: &mut LazyRegistry,
    r: &str,
    template: Option<&ImageTemplate>,
) -> Result<DeclarativeConfig, String> {
    if !Path::new(r).exists() {
        let (runtime, registry) = images.get()?;
        let unpacked = runtime.block_on(fetch_as_fbc(registry, r))?;
        return walk::load_dir(&unpacked.root).map_err(|e| describe_load_errors(&e));
    }
    let source = Source::detect(r)?;
    if let Source::PackageManifests(_) = source {
        return Err(format!(
            "ref {r:?} is a legacy package-manifest tree: convert it with `migrate {r} <output-dir>`"
        ));
    }
    source.load(template)
}

/// An image's content as a file-based catalog in a private directory (removed when dropped).
pub struct UnpackedCatalog {
    _dir: ScratchDir,
    /// The FBC root.
    pub root: PathBuf,
}

/// Pulls an image and makes an FBC directory of it, whatever its kind (found by its labels):
/// a catalog image gives the directory its `…index.configs.v1` label names; a bundle image
/// is rendered to an `olm.bundle` whose image is `reference`; a legacy index image's
/// database is converted.
pub async fn fetch_as_fbc(registry: &Registry, reference: &str) -> Result<UnpackedCatalog, String> {
    let Unpacked {
        dir,
        content,
        labels,
    } = pull_unpacked(registry, reference).await?;
    let inside = |label: &str| content.join(label.trim_start_matches('/'));
    let labels = &labels;
    if let Some(configs) = labels.get(image::LABEL_FBC) {
        let root = inside(configs);
        if !root.is_dir() {
            return Err(format!(
                "{reference}: its {} label names {configs}, which the image does not contain",
                image::LABEL_FBC
            ));
        }
        return Ok(UnpackedCatalog { _dir: dir, root });
    }
    let dc = if labels.contains_key(image::LABEL_BUNDLE_PACKAGE) {
        let bundle = BundleDir::read(&content).map_err(|e| format!("{reference}: {e}"))?;
        DeclarativeConfig {
            bundles: vec![render(&bundle, reference)],
            ..Default::default()
        }
    } else if let Some(db) = labels.get(image::LABEL_INDEX_DB) {
        sqlite::load(&inside(db)).map_err(|e| format!("{reference}: {e}"))?
    } else if labels.is_empty() {
        return Err(format!(
            "{reference}: image type could not be determined: image has no labels"
        ));
    } else {
        let names: Vec<&str> = labels.keys().map(String::as_str).collect();
        return Err(format!(
            "{reference}: image type could not be determined, found labels {}",
            names.join(", ")
        ));
    };
    let root = dir.path().join("catalog");
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let file = root.join("catalog.json");
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&file).map_err(|e| format!("{}: {e}", file.display()))?,
    );
    catalog::write::write_json(&dc, &mut out)
        .and_then(|()| out.flush())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(UnpackedCatalog { _dir: dir, root })
}

/// An image's file system in a private directory (removed when dropped), and its labels.
pub struct Unpacked {
    pub dir: ScratchDir,
    pub content: PathBuf,
    pub labels: std::collections::BTreeMap<String, String>,
}

pub async fn pull_unpacked(registry: &Registry, reference: &str) -> Result<Unpacked, String> {
    let image_ref = ImageRef::parse(reference)?;
    let pulled = registry.pull(&image_ref).await?;
    let dir = ScratchDir::new("olm-registry-image-")
        .map_err(|e| format!("creating a directory for {reference}: {e}"))?;
    let content = dir.path().join("image");
    image::unpack(&pulled, &content)?;
    Ok(Unpacked {
        dir,
        content,
        labels: pulled.labels,
    })
}
