//! Image options shared by the commands that pull or push.
use clap::Args;
use image::ClientOptions;
use image::registry::RetryPolicy;
use source::image::Images;
use std::path::PathBuf;
use std::time::Duration;
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
    /// How many times a registry request that failed in a way another try may fix
    /// (connection error, timeout, 5xx, 429) is tried again; 0 never retries. Not-found and
    /// refused requests (4xx) are never retried.
    #[arg(long, value_name = "N", default_value_t = RetryPolicy::default().times)]
    pub retry_times: u32,
    /// The wait before the first retry (e.g. 500ms, 2s, 1m); each next one waits twice as
    /// long, scaled by a random factor between 0.5 and 1.5. A 429's Retry-After wins.
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = parse_delay)]
    pub retry_delay: Duration,
}

/// A duration as a number and a unit: `ms`, `s` or `m` (as Go's durations write them).
fn parse_delay(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: expected a number and a unit, e.g. 500ms, 2s, 1m"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        _ => Err(format!(
            "{text:?}: the unit must be ms, s or m, e.g. 500ms, 2s, 1m"
        )),
    }
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
            retry: RetryPolicy {
                times: self.retry_times,
                delay: self.retry_delay,
            },
        }
    }

    /// The image client of a command that pulls. Its pulls are unpacked onto an unfinished
    /// list of the command's own, which nothing empties early: only `serve` stops before it
    /// is done, and it keeps a list of its own.
    pub fn images(&self, use_http: bool, skip_tls_verify: bool) -> Images {
        Images::new(self.options(use_http, skip_tls_verify), Unfinished::new())
    }
}
