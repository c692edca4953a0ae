//! What `build` makes: bundle and catalog images built without a container engine (see
//! [`image::LayerBuilder`]) and pushed to a registry or written to an OCI layout. A catalog
//! image may also carry the server, so that it runs by itself as opm's catalog images do.
use super::Error;
use super::image::Images;
use bundle::dir::{BundleDir, BundleError};
use catalog::file::ReadLimits;
use image::{BuiltImage, ImageRef, LayerBuilder, RunConfig, assemble, build_image};
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
        /// Also the server, to run the catalog.
        server: Option<ServerImage<'a>>,
    },
}

/// What makes a catalog image run by itself: the server executable, shipped as `/bin/opm`
/// (also answering as the names of [`SERVER_NAMES`], and `cp`), with the loader and shared
/// libraries it needs when it is not static, and the catalog's index pre-built at
/// `/tmp/cache`, where the image's command (opm's) looks for it.
pub struct ServerImage<'a> {
    pub binary: &'a Path,
    /// A directory holding the index built for the catalog, as `serve --cache-dir DIR
    /// --cache-only` leaves it.
    pub cache_dir: &'a Path,
    /// An image to build on (a registry reference), which then supplies what the binary needs
    /// to run (its C library, CA certificates): only the binary is added.
    pub base_image: Option<&'a str>,
}

/// Where things are in a server image: opm's places, so that a CatalogSource, a Dockerfile
/// `FROM` it or a person who knows opm's images finds them.
pub const SERVER_PATH: &str = "/bin/opm";
pub const CONFIGS_DIR: &str = "/configs";
pub const CACHE_DIR: &str = "/tmp/cache";
/// The names the server binary also answers to, linked beside it: the probe OLM's registry
/// pods run, and the tools OLM's utility image provides for `grpcPodConfig.extractContent`
/// and for the bundle unpack Job, so that a server image can be OLM's `--util-image` too. An
/// image built on nothing also links `cp` (the utility image's init container runs it); one
/// on a base keeps the base's.
const SERVER_NAMES: [&str; 4] = ["grpc_health_probe", "olm-registry", "copy-content", "cpb"];
/// The user opm's images run as when the pod does not say: not root.
pub const SERVER_USER: &str = "1001";

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The bundle directory is not a valid bundle: an image of it would help nobody.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error("{:?} is not a directory", .0.display().to_string())]
    NotADirectory(PathBuf),
    /// The server executable cannot be read, or what it needs to start cannot be found.
    #[error("server binary {}: {message}", .binary.display())]
    Server { binary: PathBuf, message: String },
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
    #[error(transparent)]
    Base(::image::Error),
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
    let target = ImageRef::parse(tag).map_err(BuildError::Tag)?;
    let (runtime, registry) = images.get()?;
    let built = match source {
        ImageSource::Bundle(dir) => build_bundle(dir)?,
        ImageSource::Catalog {
            dir,
            labels,
            server,
        } => {
            let base = match server.as_ref().and_then(|s| s.base_image) {
                Some(base) => {
                    let base = ImageRef::parse(base).map_err(BuildError::Tag)?;
                    let pulled = runtime.block_on(registry.pull_base(&base));
                    Some(pulled.map_err(BuildError::Base)?)
                }
                None => None,
            };
            build_catalog(dir, labels, server.as_ref(), base)?
        }
    };
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

fn build_catalog(
    dir: &Path,
    extra: &[(String, String)],
    server: Option<&ServerImage>,
    base: Option<image::BaseImage>,
) -> Result<BuiltImage, BuildError> {
    if !dir.is_dir() {
        return Err(BuildError::NotADirectory(dir.to_owned()));
    }
    let mut labels = BTreeMap::from([(image::LABEL_FBC.to_owned(), CONFIGS_DIR.to_owned())]);
    labels.extend(extra.iter().cloned());
    let Some(server) = server else {
        return build_image(&[(dir, CONFIGS_DIR)], &labels).map_err(BuildError::Layer);
    };
    // Two layers: the server, the same in every catalog image made from one binary (so a
    // registry stores it once), then the catalog and its index.
    let bin_dir = match &base {
        Some(base) => Some(base.real_dir("/bin").map_err(BuildError::Base)?),
        None => None,
    };
    let runtime = server_layer(server.binary, bin_dir.as_deref())?;
    let mut catalog = LayerBuilder::default();
    catalog.tree(dir, CONFIGS_DIR).map_err(BuildError::Layer)?;
    // Written again in this layer, so that /tmp stays world-writable and sticky whatever is
    // below: with 0755 an arbitrary UID cannot write there (a tmpfs that podman copies up
    // from the image keeps the mode).
    catalog.dir("/tmp", 0o1777).map_err(BuildError::Layer)?;
    catalog
        .tree(server.cache_dir, CACHE_DIR)
        .map_err(BuildError::Layer)?;
    let layers = vec![runtime, catalog.finish().map_err(BuildError::Layer)?];
    let run = RunConfig {
        entrypoint: vec![SERVER_PATH.to_owned()],
        cmd: ["serve", CONFIGS_DIR, &format!("--cache-dir={CACHE_DIR}")]
            .map(str::to_owned)
            .to_vec(),
        env: vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_owned()],
        user: SERVER_USER.to_owned(),
        exposed_ports: vec!["50051/tcp".to_owned()],
    };
    Ok(assemble(base, layers, &labels, &run))
}

/// Where distributions keep the CA bundle: Debian and its kin, Fedora and RHEL, openSUSE,
/// Alpine.
const CA_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];
const CA_BUNDLE_IN_IMAGE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The server executable at [`SERVER_PATH`], the names it answers to, and what it needs to
/// start with nothing else in the image: its loader and shared libraries (none for a static
/// build), `/etc/nsswitch.conf` (host names from `/etc/hosts`, then DNS, as opm's images say),
/// this machine's CA certificates, and a `/tmp` anyone may write.
///
/// On a base image only the binary and its links are added, in the directory the base's `/bin`
/// really is (`base_bin`), and no directory entry: `/bin` is then still the base's.
fn server_layer(binary: &Path, base_bin: Option<&str>) -> Result<image::Layer, BuildError> {
    let alone = base_bin.is_none();
    let fail = |e: &dyn std::fmt::Display| BuildError::Server {
        binary: binary.to_owned(),
        message: e.to_string(),
    };
    let data = std::fs::read(binary).map_err(|e| fail(&e))?;
    let runtime = match alone {
        true => image::elf::runtime_files(binary, &data).map_err(|e| fail(&e))?,
        false => Vec::new(),
    };
    let mut files = vec![(SERVER_PATH.to_owned(), data)];
    if !alone {
        let mut layer = LayerBuilder::default();
        let err = BuildError::Layer;
        let bin = base_bin.unwrap_or("/bin");
        layer
            .file(&format!("{bin}/opm"), &files[0].1, 0o755)
            .map_err(err)?;
        for name in SERVER_NAMES {
            layer
                .symlink(&format!("{bin}/{name}"), "opm")
                .map_err(err)?;
        }
        return layer.finish().map_err(err);
    }
    for f in runtime {
        let bytes =
            std::fs::read(&f.host).map_err(|e| fail(&format!("{}: {e}", f.host.display())))?;
        files.push((f.in_image, bytes));
    }
    files.push((
        "/etc/nsswitch.conf".to_owned(),
        b"hosts: files dns\n".to_vec(),
    ));
    // The registry client will not start without CA certificates (even for plain HTTP): this
    // machine's bundle, where its distribution keeps it, goes where ours is looked for.
    if let Some(bundle) = CA_BUNDLES.iter().find_map(|p| std::fs::read(p).ok()) {
        files.push((CA_BUNDLE_IN_IMAGE.to_owned(), bundle));
    }
    // Every directory above a file, parents first.
    let mut dirs = std::collections::BTreeSet::new();
    for (path, _) in &files {
        let mut dir = Path::new(path).parent();
        while let Some(d) = dir.filter(|d| *d != Path::new("/")) {
            dirs.insert(d.to_string_lossy().into_owned());
            dir = d.parent();
        }
    }
    let mut layer = LayerBuilder::default();
    let err = BuildError::Layer;
    for d in &dirs {
        layer.dir(d, 0o755).map_err(err)?;
    }
    layer.dir("/tmp", 0o1777).map_err(err)?;
    files.sort();
    for (path, bytes) in &files {
        let mode = if path.starts_with("/etc/") {
            0o644
        } else {
            0o755
        };
        layer.file(path, bytes, mode).map_err(err)?;
    }
    for name in SERVER_NAMES.iter().chain(&["cp"]) {
        layer.symlink(&format!("/bin/{name}"), "opm").map_err(err)?;
    }
    layer.finish().map_err(err)
}
