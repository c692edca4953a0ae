//! `olm-registry mirror`: the three oc-mirror v2 workflows of `mirror::run`.
use super::images::ImageArgs;
use clap::Args;
use mirror::{self, Options};
use std::path::PathBuf;
use unfinished::Unfinished;

/// Mirror operator catalogs, every image they reference and additional images to a registry
/// or to disk, as oc-mirror v2 does for an ImageSetConfiguration (mirror.openshift.io/v2alpha1).
///
/// Catalogs are filtered as configured and rebuilt; tags are resolved to digests; images keep
/// their digests. Blobs the destination has are not copied again, so a rerun after an
/// interruption copies only what is missing. After mirroring to a registry the cluster
/// resources (ImageDigestMirrorSet, ImageTagMirrorSet, CatalogSource, ClusterCatalog) are
/// written to <workspace>/working-dir/cluster-resources/ and a source=destination mapping to
/// <workspace>/working-dir/mapping.txt.
#[derive(Args)]
pub struct MirrorArgs {
    /// The ImageSetConfiguration (needed unless --from names an archive).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where to mirror: docker://REGISTRY[/PREFIX] or file://DIR (an archive for a later --from).
    #[arg(long, value_name = "DEST")]
    to: String,
    /// An archive written by `mirror --to file://DIR`: mirror it to --to without reaching any source registry.
    #[arg(long, value_name = "file://DIR")]
    from: Option<String>,
    /// Where the cluster resources and the mapping file go (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<String>,
    /// Blobs copied at the same time.
    #[arg(long, value_name = "N", default_value_t = 4)]
    parallel: usize,
    /// Print what the filters keep and the plan (source -> destination); copy nothing.
    #[arg(long)]
    dry_run: bool,
    /// Write a legacy ImageContentSourcePolicy instead of ImageDigestMirrorSet/ImageTagMirrorSet.
    #[arg(long)]
    icsp: bool,
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: MirrorArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    let options = Options {
        config: args.config,
        to: args.to,
        from: args.from,
        workspace: args.workspace,
        parallel: args.parallel,
        dry_run: args.dry_run,
        icsp: args.icsp,
    };
    super::exit_code(mirror::run(
        &options,
        &args.image.options(use_http, skip_tls_verify),
        &Unfinished::new(),
    ))
}
