//! `olm-registry mirror`: the three oc-mirror v2 workflows of `mirror::run`.
use super::images::ImageArgs;
use author::list::{Listing, list_reference};
use clap::{Args, Subcommand};
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
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct MirrorArgs {
    #[command(subcommand)]
    command: Option<MirrorCommand>,
    /// The ImageSetConfiguration (needed unless --from names an archive).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where to mirror: docker://REGISTRY[/PREFIX] or file://DIR (an archive for a later --from:
    /// one directory, or with archiveSize (GiB) in the ImageSetConfiguration mirror_000001.tar, …
    /// of at most that size, a later run writing only what earlier archives lacked).
    #[arg(long, value_name = "DEST", required = true)]
    to: Option<String>,
    /// An archive written by `mirror --to file://DIR` (the directory, or its mirror_*.tar files):
    /// mirror it to --to without reaching any source registry.
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

#[derive(Subcommand)]
enum MirrorCommand {
    /// What a catalog offers, to write an ImageSetConfiguration from.
    List {
        #[command(subcommand)]
        what: ListCommand,
    },
}

#[derive(Subcommand)]
enum ListCommand {
    /// List a catalog's packages with their default channel (as oc-mirror's `list operators`):
    /// with --package, that package's channels and their heads; with --package and --channel,
    /// the versions in that channel, oldest first.
    Operators(OperatorsArgs),
}

#[derive(Args)]
struct OperatorsArgs {
    /// The catalog: a catalog image (registry reference or oci:DIR[:TAG], its content cached
    /// by digest) or an FBC directory.
    #[arg(long, value_name = "REF")]
    catalog: String,
    /// List this package's channels and their heads.
    #[arg(long, value_name = "NAME")]
    package: Option<String>,
    /// With --package: list the versions in this channel.
    #[arg(long, value_name = "NAME", requires = "package")]
    channel: Option<String>,
    #[command(flatten)]
    read_limits: super::ReadLimitArgs,
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: MirrorArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    let Some(to) = args.to else {
        return match args.command {
            Some(MirrorCommand::List {
                what: ListCommand::Operators(list),
            }) => super::exit_code(operators(&list, use_http, skip_tls_verify)),
            // clap requires --to when no subcommand is given.
            None => super::exit_code(Err("--to is required")),
        };
    };
    let options = Options {
        config: args.config,
        to,
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

/// `mirror list operators`: the same tables as opm's `alpha list packages` and
/// `alpha list channels PACKAGE`, which is what oc-mirror prints, plus a channel's versions.
fn operators(args: &OperatorsArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    let what = match (&args.package, &args.channel) {
        (Some(package), Some(channel)) => Listing::Versions {
            package: package.clone(),
            channel: channel.clone(),
        },
        (Some(package), None) => Listing::Channels(Some(package.clone())),
        (None, _) => Listing::Packages,
    };
    let mut images = args.image.images(use_http, skip_tls_verify);
    let table = list_reference(&mut images, args.read_limits.limits(), &args.catalog, &what)
        .map_err(|e| format!("catalog {}: {e}", args.catalog))?;
    super::alpha::print_table(&table)
}
