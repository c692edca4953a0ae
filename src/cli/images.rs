//! Image options shared by the commands that pull or push.
use clap::Args;
use image::ClientOptions;
use source::image::Images;
use std::path::PathBuf;
use unfinished::Unfinished;

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
    pub fn options(&self, use_http: bool, skip_tls_verify: bool) -> ClientOptions {
        let cache_dir = match &self.image_cache_dir {
            Some(d) => d.clone(),
            None => std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .unwrap_or_else(std::env::temp_dir)
                .join("olm-registry/blobs"),
        };
        ClientOptions {
            insecure_registries: self.insecure_registries.clone(),
            use_http,
            skip_tls_verify,
            ca_file: self.ca_file.clone(),
            registry_config: self.registry_config.clone(),
            platform: self.platform.clone(),
            cache_dir,
        }
    }

    /// The image client of a command that pulls. Its pulls are unpacked onto an unfinished
    /// list of the command's own, which nothing empties early: only `serve` stops before it
    /// is done, and it keeps a list of its own.
    pub fn images(&self, use_http: bool, skip_tls_verify: bool) -> Images {
        Images::new(self.options(use_http, skip_tls_verify), Unfinished::new())
    }
}
