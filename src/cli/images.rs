//! Image options shared by the commands that pull or push, and fetching a catalog image.
use crate::image::{self, ClientOptions, ImageRef, Registry};
use clap::Args;
use std::path::PathBuf;

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

/// A catalog image unpacked into a private directory (removed when dropped).
pub struct UnpackedCatalog {
    _dir: tempfile::TempDir,
    /// The FBC root inside it (the directory the image's configs label names).
    pub root: PathBuf,
}

/// Pulls a catalog image and unpacks it; the FBC root comes from its
/// `operators.operatorframework.io.index.configs.v1` label.
pub async fn fetch_catalog(
    registry: &Registry,
    reference: &str,
) -> Result<UnpackedCatalog, String> {
    let image_ref = ImageRef::parse(reference)?;
    let pulled = registry.pull(&image_ref).await?;
    let Some(configs) = pulled.labels.get(image::LABEL_FBC) else {
        if pulled.labels.contains_key(image::LABEL_INDEX_DB) {
            return Err(format!(
                "{reference}: sqlite-based index images are no longer supported, migrate to a file-based catalog"
            ));
        }
        if pulled.labels.contains_key(image::LABEL_BUNDLE_PACKAGE) {
            return Err(format!(
                "{reference} is a bundle image, not a catalog image"
            ));
        }
        return Err(format!(
            "{reference}: not a catalog image (no {} label)",
            image::LABEL_FBC
        ));
    };
    let dir = tempfile::Builder::new()
        .prefix("olm-registry-image-")
        .tempdir()
        .map_err(|e| format!("creating a directory for {reference}: {e}"))?;
    image::unpack(&pulled, dir.path())?;
    let root = dir.path().join(configs.trim_start_matches('/'));
    if !root.is_dir() {
        return Err(format!(
            "{reference}: its {} label names {configs}, which the image does not contain",
            image::LABEL_FBC
        ));
    }
    Ok(UnpackedCatalog { _dir: dir, root })
}
