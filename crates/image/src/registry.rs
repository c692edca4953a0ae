//! Talking to OCI registries: pulling images (OCI and Docker schema 2 manifests, indexes
//! resolved to one platform) into a content-addressed cache, and pushing built images.
//!
//! Every blob is verified against its digest before it is used or cached. Transient failures
//! (connection errors, 5xx, 429) are retried as the [`RetryPolicy`] says; the rest become
//! one-line errors that say what failed and why.
use super::auth::Credentials;
use super::create::{BaseImage, BaseLayer, BuiltImage};
use super::error::{Error, ErrorKind};
use super::layout::{Layout, MAX_CONFIG_BYTES, MAX_MANIFEST_BYTES, digest_of};
use super::manifest::ManifestFetcher;
use super::reference::ImageRef;
use super::remote::retry_remote;
use oci_client::client::{
    Certificate, CertificateEncoding, ClientConfig, ClientProtocol, current_platform_resolver,
};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, ImageIndexEntry, OCI_IMAGE_INDEX_MEDIA_TYPE, OciDescriptor,
    OciImageIndex, OciImageManifest, OciManifest,
};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How to reach registries.
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    /// Registries (HOST:PORT) reached over plain HTTP.
    pub insecure_registries: Vec<String>,
    /// Plain HTTP everywhere (opm's --use-http).
    pub use_http: bool,
    /// Accept any certificate (opm's --skip-tls-verify).
    pub skip_tls_verify: bool,
    /// An extra CA bundle (PEM) to trust.
    pub ca_file: Option<PathBuf>,
    /// A docker config.json with credentials.
    pub registry_config: Option<PathBuf>,
    /// `os/arch` to pick from multi-platform images (default linux/amd64).
    pub platform: Option<String>,
    /// Where pulled blobs are kept, by digest.
    pub cache_dir: PathBuf,
    /// How failures another try may fix are retried.
    pub retry: RetryPolicy,
}

/// A pulled image: its manifest digest, labels, and layer files in the cache, in order.
#[derive(Debug)]
pub struct Pulled {
    pub(crate) digest: String,
    pub labels: BTreeMap<String, String>,
    pub layers: Vec<PathBuf>,
}

/// Picks the manifest of the wanted platform from an image index.
type PlatformResolver = Box<dyn Fn(&[ImageIndexEntry]) -> Option<String> + Send + Sync>;

pub struct Registry {
    pub(super) client: Client,
    /// Boxed: a Registry is often held by value beside small things.
    pub(super) manifests: Box<ManifestFetcher>,
    platform: PlatformResolver,
    credentials: Credentials,
    cache: Layout,
    retry: RetryPolicy,
}

/// How registry operations retry what another try may fix (connection errors, 5xx, 429):
/// `times` more attempts after the first, waiting `delay` after the first failure and twice
/// as long after each next one, each wait scaled by a random factor between 0.5 and 1.5 so
/// that parallel copies that failed together do not come back together. A 429 that says
/// when to come back (`Retry-After`) is waited for as it says instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    pub times: u32,
    pub delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            times: 4,
            delay: Duration::from_millis(200),
        }
    }
}

/// The longest a single wait may be, whatever the doubling or a `Retry-After` says: a run
/// should fail with a message rather than sleep for hours.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// The retries left to one registry operation, under a [`RetryPolicy`].
pub struct Backoff {
    policy: RetryPolicy,
    retries: u32,
}

impl Backoff {
    pub fn new(policy: RetryPolicy) -> Backoff {
        Backoff { policy, retries: 0 }
    }

    /// After a failure another try may fix: false when the retries are used up; otherwise
    /// says so, waits, and returns true for the next attempt.
    pub async fn again(&mut self, failure: &Error) -> bool {
        if self.retries >= self.policy.times {
            return false;
        }
        let wait = match failure.retry_after {
            Some(asked) => asked.min(MAX_WAIT),
            None => {
                jittered(self.policy.delay.saturating_mul(1 << self.retries.min(16))).min(MAX_WAIT)
            }
        };
        self.retries += 1;
        // Counted in attempts, the failed one included, so that the last says "of N".
        tracing::warn!(
            "{} (attempt {} of {}, retrying in {} ms)",
            failure.message,
            self.retries,
            self.policy.times.saturating_add(1),
            wait.as_millis()
        );
        tokio::time::sleep(wait).await;
        true
    }
}

/// `d` scaled by a random factor in [0.5, 1.5).
fn jittered(d: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    // A fresh RandomState is randomly keyed: its hash of nothing is a random number, which
    // is all the randomness a backoff needs.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    d.mul_f64(0.5 + random as f64 / u64::MAX as f64)
}

/// One line about what went wrong, in terms of the image.
pub(super) fn describe(e: &OciDistributionError) -> String {
    match e {
        OciDistributionError::AuthenticationFailure(m) => format!("authentication failed: {m}"),
        OciDistributionError::UnauthorizedError { .. } => {
            "unauthorized: check the credentials for this registry".into()
        }
        OciDistributionError::ImageManifestNotFoundError(_) => {
            "manifest unknown: no such image or tag".into()
        }
        OciDistributionError::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .map(|e| {
                // The registry's code (MANIFEST_UNKNOWN …) in words, then its message.
                let code = serde_json::to_value(&e.code)
                    .ok()
                    .and_then(|v| v.as_str().map(|c| c.to_lowercase().replace('_', " ")))
                    .unwrap_or_default();
                match code.as_str() {
                    "manifest unknown" | "name unknown" => format!("{code}: no such image or tag"),
                    _ if e.message.is_empty() || e.message == code => code,
                    _ => format!("{code}: {}", e.message),
                }
            })
            .collect::<Vec<_>>()
            .join("; "),
        OciDistributionError::ServerError { code, message, .. } if message.trim().is_empty() => {
            format!("registry answered {code}")
        }
        OciDistributionError::ServerError { code, message, .. } => {
            format!("registry answered {code}: {message}")
        }
        OciDistributionError::RequestError(r) if r.status().is_some_and(|s| s.as_u16() == 401) => {
            "unauthorized: check the credentials for this registry".into()
        }
        OciDistributionError::RequestError(r) if r.status().is_some_and(|s| s.as_u16() == 403) => {
            "forbidden: these credentials may not do this".into()
        }
        OciDistributionError::RequestError(r) if r.status().is_some_and(|s| s.as_u16() == 404) => {
            "not found: no such repository or blob".into()
        }
        OciDistributionError::RequestError(r) => {
            let mut text = r.to_string();
            let mut source = std::error::Error::source(r);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        }
        other => other.to_string(),
    }
}

async fn retry<T, F, Fut>(policy: RetryPolicy, what: &str, mut op: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, OciDistributionError>>,
{
    retry_remote(policy, || {
        let call = op();
        async move { call.await.map_err(|e| Error::from_oci(what, &e)) }
    })
    .await
}

/// Local files (the cache, a layout): their messages name the file. A layout's own error
/// counts as one of these here, whatever its kind.
fn local(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, message.to_string())
}

/// A layout or image whose content is not what it should be. A layout that cannot be
/// pulled, for whatever reason, is reported as this: it is what the reference names.
fn invalid(message: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::InvalidContent, message.to_string())
}

impl Registry {
    pub fn new(opts: &ClientOptions) -> Result<Registry, Error> {
        Registry::configure(opts).map_err(|e| Error::new(ErrorKind::Other, e))
    }

    fn configure(opts: &ClientOptions) -> Result<Registry, String> {
        // rustls needs a process-wide crypto provider; a second install is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut extra_root_certificates = Vec::new();
        if let Some(ca) = &opts.ca_file {
            let data = std::fs::read(ca).map_err(|e| format!("--ca-file {}: {e}", ca.display()))?;
            extra_root_certificates.push(Certificate {
                encoding: CertificateEncoding::Pem,
                data,
            });
        }
        let protocol = if opts.use_http {
            ClientProtocol::Http
        } else {
            ClientProtocol::HttpsExcept(opts.insecure_registries.clone())
        };
        let (connect_timeout, read_timeout) = (Duration::from_secs(10), Duration::from_secs(60));
        let manifests = ManifestFetcher::new(
            opts,
            &extra_root_certificates,
            connect_timeout,
            read_timeout,
        )?;
        let config = ClientConfig {
            protocol,
            extra_root_certificates,
            accept_invalid_certificates: opts.skip_tls_verify,
            connect_timeout: Some(connect_timeout),
            read_timeout: Some(read_timeout),
            // One PUT per blob: streamed uploads need no chunk bookkeeping, and loopback or LAN
            // registries take a whole layer per request faster than 4 MiB PATCHes.
            use_monolithic_push: true,
            ..Default::default()
        };
        let platform: PlatformResolver = match &opts.platform {
            Some(platform) => {
                let (os, arch) = platform.split_once('/').ok_or_else(|| {
                    format!("--platform {platform:?}: expected OS/ARCH, e.g. linux/arm64")
                })?;
                let (os, arch) = (os.to_owned(), arch.to_owned());
                Box::new(move |entries| {
                    entries
                        .iter()
                        .find(|e| {
                            e.platform.as_ref().is_some_and(|p| {
                                p.os.to_string() == os && p.architecture.to_string() == arch
                            })
                        })
                        .map(|e| e.digest.clone())
                })
            }
            None => Box::new(current_platform_resolver),
        };
        Ok(Registry {
            client: Client::new(config),
            manifests: Box::new(manifests),
            platform,
            credentials: Credentials::load(opts.registry_config.as_deref())?,
            cache: Layout::create(&opts.cache_dir).map_err(|e| e.message)?,
            retry: opts.retry,
        })
    }

    /// How this client retries.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    pub(super) fn auth(&self, r: &Reference) -> RegistryAuth {
        self.credentials.for_registry(r.resolve_registry())
    }

    /// Pulls an image's manifest, config and layers (layers already cached are not fetched).
    pub async fn pull(&self, image: &ImageRef) -> Result<Pulled, Error> {
        match image {
            ImageRef::Registry(r) => self.pull_remote(r).await,
            ImageRef::Layout { dir, tag } => {
                let layout = Layout::open(dir)?;
                pull_layout(&layout, tag.as_deref()).map_err(invalid)
            }
        }
    }

    async fn pull_remote(&self, r: &Reference) -> Result<Pulled, Error> {
        let what = format!("pull {}", r.whole());
        // A digest names content exactly: what was pulled once is served from the cache.
        if let Some(digest) = r.digest()
            && let Some(cached) = self.cached(digest)
        {
            return Ok(cached);
        }
        let (manifest, digest) =
            match retry_remote(self.retry, || self.image_manifest(r, &what)).await {
                Ok(found) => found,
                Err(e) => {
                    // Offline, a tag pulled before still resolves to what it was then.
                    let Some(cached) = self.cached_tag(r) else {
                        return Err(e);
                    };
                    tracing::warn!(
                        "{}; using the copy cached when it was last pulled ({})",
                        e.message,
                        cached.digest
                    );
                    return Ok(cached);
                }
            };
        // The config is downloaded like a layer, which refuses more bytes than its
        // descriptor says; the descriptor may not say more than the cap.
        if u64::try_from(manifest.config.size).is_ok_and(|size| size > MAX_CONFIG_BYTES) {
            return Err(invalid(format!(
                "{what}: the image config is larger than {MAX_CONFIG_BYTES} bytes ({} by its descriptor)",
                manifest.config.size
            )));
        }
        self.fetch_blob(r, &manifest.config, &what).await?;
        let config = self
            .cache
            .read_blob(&manifest.config.digest, MAX_CONFIG_BYTES)
            .map_err(|e| local(format!("{what}: {e}")))?;
        let labels = labels_of(&config).map_err(|e| invalid(format!("{what}: {e}")))?;
        let mut layers = Vec::new();
        for layer in &manifest.layers {
            layers.push(self.fetch_blob(r, layer, &what).await?);
        }
        let layer_digests: Vec<&str> = manifest.layers.iter().map(|l| l.digest.as_str()).collect();
        self.remember(r, &digest, &labels, &layer_digests);
        Ok(Pulled {
            digest,
            labels,
            layers,
        })
    }

    /// The image manifest `r` names (for an index, the one of our platform) and its digest.
    async fn image_manifest(
        &self,
        r: &Reference,
        what: &str,
    ) -> Result<(OciImageManifest, String), Error> {
        let fatal = |message: String| invalid(format!("{what}: {message}"));
        let parse = |body: &[u8]| {
            serde_json::from_slice::<OciImageManifest>(body)
                .map_err(|e| fatal(format!("image manifest: {e}")))
        };
        let is_index =
            |t: &str| t == OCI_IMAGE_INDEX_MEDIA_TYPE || t == IMAGE_MANIFEST_LIST_MEDIA_TYPE;
        let (body, media_type) = self.manifest(r, what).await?;
        if !is_index(&media_type) {
            let digest = r.digest().map_or_else(|| digest_of(&body), str::to_owned);
            return Ok((parse(&body)?, digest));
        }
        let index: OciImageIndex =
            serde_json::from_slice(&body).map_err(|e| fatal(format!("image index: {e}")))?;
        let child = (self.platform)(&index.manifests)
            .ok_or_else(|| fatal("the image index has no manifest for this platform".into()))?;
        let (body, media_type) = self
            .manifest(&r.clone_with_digest(child.clone()), what)
            .await?;
        if is_index(&media_type) {
            return Err(fatal(format!(
                "manifest {child} of the index is not an image manifest ({media_type})"
            )));
        }
        Ok((parse(&body)?, child))
    }

    fn record_path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        Some(self.cache.root().join("images").join(format!("{hex}.json")))
    }

    fn tag_path(&self, r: &Reference) -> PathBuf {
        self.cache
            .root()
            .join("tags")
            .join(digest_of(r.whole().as_bytes()).trim_start_matches("sha256:"))
    }

    /// Records what an image is made of, and which digest its tag had. Failing to write the
    /// record only costs the offline fallback, so it is not an error.
    fn remember(
        &self,
        r: &Reference,
        digest: &str,
        labels: &BTreeMap<String, String>,
        layers: &[&str],
    ) {
        let record = serde_json::json!({"digest": digest, "labels": labels, "layers": layers});
        let written = self.record_path(digest).map(|path| {
            std::fs::create_dir_all(path.parent()?).ok()?;
            std::fs::write(&path, record.to_string()).ok()?;
            let tag = self.tag_path(r);
            std::fs::create_dir_all(tag.parent()?).ok()?;
            std::fs::write(tag, digest).ok()
        });
        if written.flatten().is_none() {
            tracing::debug!("could not record {digest} in the image cache");
        }
    }

    /// A pulled image rebuilt from the cache, when its record and every layer are there.
    fn cached(&self, digest: &str) -> Option<Pulled> {
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.record_path(digest)?).ok()?).ok()?;
        let labels = serde_json::from_value(record["labels"].clone()).ok()?;
        let layers = record["layers"]
            .as_array()?
            .iter()
            .map(|d| {
                let d = d.as_str()?;
                self.cache
                    .holds(d, None)
                    .ok()?
                    .then(|| self.cache.blob_path(d).ok())
                    .flatten()
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Pulled {
            digest: digest.to_owned(),
            labels,
            layers,
        })
    }

    fn cached_tag(&self, r: &Reference) -> Option<Pulled> {
        let digest = std::fs::read_to_string(self.tag_path(r)).ok()?;
        self.cached(digest.trim())
    }

    async fn fetch_blob(
        &self,
        r: &Reference,
        layer: &OciDescriptor,
        what: &str,
    ) -> Result<PathBuf, Error> {
        if self
            .cache
            .holds(&layer.digest, u64::try_from(layer.size).ok())
            .map_err(|e| local(format!("{what}: {e}")))?
        {
            return self.cache.blob_path(&layer.digest).map_err(invalid);
        }
        let progress = progress_bar(layer);
        let path = self
            .download_blob(r, layer, &self.cache, &progress)
            .await
            .map_err(|e| e.context(what));
        progress.finish_and_clear();
        path
    }

    /// An image to build on: its manifest (of our platform), config and layers, pulled into
    /// the blob cache. Only from a registry: the layers are pushed from the cache.
    pub async fn pull_base(&self, image: &ImageRef) -> Result<BaseImage, Error> {
        let ImageRef::Registry(r) = image else {
            return Err(Error::new(
                ErrorKind::Other,
                format!("base image {image}: give a registry reference, not an OCI layout"),
            ));
        };
        let what = format!("pull base image {}", r.whole());
        let (manifest, _) = retry_remote(self.retry, || self.image_manifest(r, &what)).await?;
        if u64::try_from(manifest.config.size).is_ok_and(|size| size > MAX_CONFIG_BYTES) {
            return Err(invalid(format!(
                "{what}: the image config is larger than {MAX_CONFIG_BYTES} bytes"
            )));
        }
        self.fetch_blob(r, &manifest.config, &what).await?;
        let config = self
            .cache
            .read_blob(&manifest.config.digest, MAX_CONFIG_BYTES)
            .map_err(|e| local(format!("{what}: {e}")))?;
        let config: serde_json::Value = serde_json::from_slice(&config)
            .ok()
            .filter(serde_json::Value::is_object)
            .ok_or_else(|| invalid(format!("{what}: the image config is not a JSON object")))?;
        let mut layers = Vec::new();
        for layer in &manifest.layers {
            let path = self.fetch_blob(r, layer, &what).await?;
            layers.push(BaseLayer {
                // The same bytes under OCI's name: the manifest we write is an OCI one.
                media_type: match layer.media_type.as_str() {
                    "application/vnd.docker.image.rootfs.diff.tar.gzip" => {
                        oci_client::manifest::IMAGE_LAYER_GZIP_MEDIA_TYPE.to_owned()
                    }
                    other => other.to_owned(),
                },
                digest: layer.digest.clone(),
                size: layer.size,
                path,
            });
        }
        Ok(BaseImage { config, layers })
    }

    /// Pushes a built image; returns its manifest digest.
    pub async fn push(&self, image: &BuiltImage, to: &ImageRef) -> Result<String, Error> {
        match to {
            ImageRef::Layout { dir, tag } => {
                let layout = Layout::create(dir).map_err(local)?;
                for blob in std::iter::once(&image.config).chain(&image.layers) {
                    layout.write_blob(blob).map_err(local)?;
                }
                for layer in &image.base_layers {
                    layout.write_blob(&read_base_layer(layer)?).map_err(local)?;
                }
                layout
                    .add_manifest(
                        &image.manifest,
                        oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
                        tag.as_deref(),
                    )
                    .map_err(local)
            }
            ImageRef::Registry(r) => {
                let what = format!("push {}", r.whole());
                let auth = self.auth(r);
                // Authenticate for pushing before the first upload.
                retry(self.retry, &what, || {
                    self.client
                        .auth(r, &auth, oci_client::RegistryOperation::Push)
                })
                .await?;
                for layer in &image.base_layers {
                    if !retry(self.retry, &what, || {
                        self.client.blob_exists(r, &layer.digest)
                    })
                    .await?
                    {
                        let blob = read_base_layer(layer)?;
                        retry(self.retry, &what, || {
                            self.client.push_blob(r, blob.clone(), &layer.digest)
                        })
                        .await?;
                    }
                }
                for blob in std::iter::once(&image.config).chain(&image.layers) {
                    let digest = digest_of(blob);
                    if !retry(self.retry, &what, || self.client.blob_exists(r, &digest)).await? {
                        retry(self.retry, &what, || {
                            self.client.push_blob(r, blob.clone(), &digest)
                        })
                        .await?;
                    }
                }
                let manifest: OciImageManifest = serde_json::from_slice(&image.manifest)
                    .map_err(|e| invalid(format!("{what}: encoding the manifest: {e}")))?;
                let manifest = OciManifest::Image(manifest);
                retry(self.retry, &what, || {
                    self.client.push_manifest(r, &manifest)
                })
                .await?;
                retry(self.retry, &what, || {
                    self.client.fetch_manifest_digest(r, &auth)
                })
                .await
            }
        }
    }
}

/// A byte counter for one blob download (see [`crate::progress`]).
fn progress_bar(layer: &OciDescriptor) -> indicatif::ProgressBar {
    crate::progress::bytes(
        "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}",
        layer.digest.chars().take(19).collect(),
        layer.size.max(0) as u64,
    )
}

fn labels_of(config: &[u8]) -> Result<BTreeMap<String, String>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(config).map_err(|e| format!("image config: {e}"))?;
    Ok(v["config"]["Labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default())
}

fn pull_layout(layout: &Layout, tag: Option<&str>) -> Result<Pulled, Error> {
    let (digest, _) = layout.find_manifest(tag)?;
    let manifest: OciImageManifest =
        serde_json::from_slice(&layout.read_blob(&digest, MAX_MANIFEST_BYTES)?)
            .map_err(|e| invalid(format!("manifest {digest}: {e}")))?;
    let labels = labels_of(&layout.read_blob(&manifest.config.digest, MAX_CONFIG_BYTES)?)
        .map_err(invalid)?;
    let layers = manifest
        .layers
        .iter()
        .map(|l| {
            // Layers are verified here, as a stream; they are read again when unpacked.
            layout.verify_blob(&l.digest)?;
            layout.blob_path(&l.digest)
        })
        .collect::<Result<_, _>>()?;
    Ok(Pulled {
        digest,
        labels,
        layers,
    })
}

fn read_base_layer(layer: &BaseLayer) -> Result<Vec<u8>, Error> {
    std::fs::read(&layer.path).map_err(|e| local(format!("{}: {e}", layer.path.display())))
}

/// Unpacks a pulled image's layers, in order, into `dest`.
pub fn unpack(image: &Pulled, dest: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dest).map_err(|e| local(format!("{}: {e}", dest.display())))?;
    let mut usage = super::unpack::Usage::default();
    for layer in &image.layers {
        let file =
            std::fs::File::open(layer).map_err(|e| local(format!("{}: {e}", layer.display())))?;
        // Layers are stored under their digest's hex.
        let name = layer.file_name().unwrap_or_default().to_string_lossy();
        super::unpack::unpack_layer(file, dest, Default::default(), &mut usage).map_err(|e| {
            invalid(format!(
                "unpacking {}: layer sha256:{name}: {e}",
                image.digest
            ))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::jittered;
    use std::time::Duration;

    #[test]
    fn jitter_stays_within_half_and_one_and_a_half_times() {
        let waits: Vec<Duration> = (0..200)
            .map(|_| jittered(Duration::from_millis(1000)))
            .collect();
        assert!(
            waits
                .iter()
                .all(|w| *w >= Duration::from_millis(500) && *w < Duration::from_millis(1500)),
            "{waits:?}"
        );
        // Random, not one fixed factor.
        assert!(waits.iter().any(|w| *w != waits[0]), "{waits:?}");
    }
}
