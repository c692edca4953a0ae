use super::images::ImageArgs;
use catalog::file::ReadLimits;
use clap::{Args, Subcommand};
use source::build::{ImageSource, ServerImage, build_and_push};
use std::path::{Path, PathBuf};
use store::cache::{CacheOptions, open_or_build};
use store::ingest::Input;

/// Build images without a container engine and push them to a registry (or write an OCI
/// layout with --tag oci:DIR[:TAG]).
#[derive(Args)]
pub struct BuildArgs {
    #[command(subcommand)]
    what: BuildKind,
}

#[derive(Subcommand)]
enum BuildKind {
    /// A bundle image: manifests/ and metadata/ at the image root, labelled from
    /// metadata/annotations.yaml as upstream's bundle images are.
    Bundle {
        /// The bundle directory (with manifests/ and metadata/).
        dir: PathBuf,
        /// Where to push: a registry reference, or oci:DIR[:TAG].
        #[arg(short, long)]
        tag: String,
        #[command(flatten)]
        image: ImageArgs,
    },
    /// A catalog image: the FBC directory at /configs, labelled for OLM. With --server, an
    /// image that serves it by itself, as opm's catalog images do.
    #[command(
        after_help = "With --server the image holds, beside /configs: the server binary at /bin/opm \
            (also answering as /bin/grpc_health_probe, /bin/olm-registry, and /bin/copy-content, \
            /bin/cpb and /bin/cp, so that the image can be OLM's --util-image for extractContent and \
            bundle unpack Jobs, whose cpb runs in the bundle image and so must be a static build; \
            no cp on a base image), with the dynamic loader \
            and shared libraries it needs and the CA bundle copied from this machine (no libraries \
            for a static build); the \
            index pre-built at /tmp/cache (what `serve --cache-dir --cache-only` writes), so that it \
            starts warm, even on a read-only root; a world-writable /tmp (1777); ENTRYPOINT \
            [\"/bin/opm\"], CMD [\"serve\", \"/configs\", \"--cache-dir=/tmp/cache\"], user 1001, port \
            50051. With --base-image only the binary is added to the base (where its /bin really is). \
            The catalog must load: the index is built from it before anything is pushed."
    )]
    Catalog {
        /// The FBC root directory.
        dir: PathBuf,
        /// Where to push: a registry reference, or oci:DIR[:TAG].
        #[arg(short, long)]
        tag: String,
        /// Extra labels, KEY=VALUE; repeatable.
        #[arg(short = 'l', long = "extra-labels", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        /// Put the server into the image with the catalog's index pre-built, so that the image
        /// runs by itself (on nothing, or on --base-image; no container engine needed).
        #[arg(long)]
        server: bool,
        /// The server executable to put into the image. Default: this olm-registry binary
        /// itself (the running executable).
        #[arg(long, value_name = "PATH", requires = "server")]
        server_binary: Option<PathBuf>,
        /// Build on this image (a registry reference) instead of on nothing: it must be able to
        /// run the server binary (a glibc at least as new as the build machine's, for a
        /// dynamically linked one; CA certificates for pulls over TLS). Only the binary is added
        /// then, not its libraries; the base's environment and user are kept.
        #[arg(long, value_name = "REF", requires = "server")]
        base_image: Option<String>,
        #[command(flatten)]
        image: ImageArgs,
    },
}

pub fn run(args: BuildArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    super::exit_code(build(args, use_http, skip_tls_verify))
}

fn build(args: BuildArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    // The pre-built index lives here until it is in the image.
    let index_dir;
    let binary;
    let (source, tag, image) = match &args.what {
        BuildKind::Bundle { dir, tag, image } => (ImageSource::Bundle(dir), tag, image),
        BuildKind::Catalog {
            dir,
            tag,
            labels,
            server,
            server_binary,
            base_image,
            image,
        } => {
            let labels = labels
                .iter()
                .map(|l| parse_label(l))
                .collect::<Result<_, _>>()?;
            let server = if *server {
                binary = match server_binary {
                    Some(path) => path.clone(),
                    None => std::env::current_exe().map_err(|e| {
                        format!("finding this executable to put into the image: {e}")
                    })?,
                };
                index_dir = prebuild_index(dir)?;
                Some(ServerImage {
                    binary: &binary,
                    cache_dir: index_dir.path(),
                    base_image: base_image.as_deref(),
                })
            } else {
                None
            };
            (
                ImageSource::Catalog {
                    dir,
                    labels,
                    server,
                },
                tag,
                image,
            )
        }
    };
    let mut images = image.images(use_http, skip_tls_verify);
    let pushed = build_and_push(&source, tag, &mut images).map_err(|e| e.to_string())?;
    println!("{pushed}");
    Ok(())
}

/// The index `serve --cache-dir D --cache-only` would write for `dir`, in a temporary D: what
/// lets the image start warm. A catalog that does not load fails here, before any push.
fn prebuild_index(dir: &Path) -> Result<tempfile::TempDir, String> {
    let cache = tempfile::tempdir().map_err(|e| format!("a directory for the index: {e}"))?;
    let unfinished = unfinished::Unfinished::new();
    open_or_build(&CacheOptions {
        catalog: Input::Dir(dir, ReadLimits::default()),
        cache_dir: Some(cache.path()),
        enforce_integrity: false,
        require_cache: true,
        catalogd_content: false,
        unfinished: &unfinished,
    })
    .map_err(|e| e.to_string())?;
    Ok(cache)
}

/// One `--extra-labels` value, KEY=VALUE.
fn parse_label(label: &str) -> Result<(String, String), String> {
    let (k, v) = label
        .split_once('=')
        .ok_or_else(|| format!("invalid label {label:?}"))?;
    Ok((k.to_owned(), v.to_owned()))
}
