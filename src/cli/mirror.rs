//! `olm-registry mirror`: the three oc-mirror v2 workflows of `mirror::run`.
use super::images::ImageArgs;
use author::list::{Listing, list_reference};
use clap::{Args, Subcommand};
use mirror::{self, DeleteOptions, Options};
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
/// <workspace>/working-dir/mapping.txt. Signatures, attestations, SBOMs and other OCI
/// referrers of each image travel with it unless --remove-signatures.
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
    /// Leave behind what refers to each image: cosign signatures, attestations and SBOMs
    /// (tags sha256-<hex>.sig/.att/.sbom) and OCI 1.1 referrers. By default they travel with
    /// their images on every path (to a registry, to disk, from disk).
    #[arg(long)]
    remove_signatures: bool,
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
    Delete(DeleteArgs),
}

/// Remove from a mirror registry what an earlier image set put there, as oc-mirror v2's
/// `delete` does, in two steps.
///
/// 1. `-c delete-isc.yaml --to docker://REG/PREFIX --generate` reads a
///    DeleteImageSetConfiguration (mirror.openshift.io/v2alpha1; `delete.operators` and
///    `delete.additionalImages`, filtered exactly as mirroring filters them), finds each image
///    in the mirror by the digest it has there, and writes the plan to
///    <workspace>/working-dir/delete/delete-images.yaml. Nothing is deleted.
///
/// 2. `--delete-yaml-file FILE --to docker://REG/PREFIX` deletes the manifests the plan
///    lists (of a multi-platform image: every platform's too) with their cosign signatures,
///    attestations and SBOMs and their OCI referrers, and reports each. A manifest that something outside the plan
///    still names (another tag, an index that is kept) is kept and reported. The registry's
///    garbage collector then frees the blobs (docker-registry: `garbage-collect`); the
///    registry must allow deletes (distribution: storage.delete.enabled).
#[derive(Args)]
#[command(group = clap::ArgGroup::new("step").required(true).args(["generate", "delete_yaml_file"]))]
struct DeleteArgs {
    /// The DeleteImageSetConfiguration (with --generate).
    #[arg(
        short = 'c',
        long = "config",
        value_name = "FILE",
        requires = "generate"
    )]
    config: Option<PathBuf>,
    /// The mirror: docker://REGISTRY[/PREFIX], as the images were mirrored to.
    #[arg(long, value_name = "docker://REG/PREFIX")]
    to: String,
    /// Write the delete plan (working-dir/delete/delete-images.yaml); delete nothing.
    #[arg(long, requires = "config")]
    generate: bool,
    /// Delete what this plan (written by --generate) lists; every item must be below --to.
    #[arg(long, value_name = "FILE")]
    delete_yaml_file: Option<PathBuf>,
    /// Where the plan goes (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<String>,
    /// Catalog and tag look-ups at the same time.
    #[arg(long, value_name = "N", default_value_t = 4)]
    parallel: usize,
    #[command(flatten)]
    image: ImageArgs,
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
            Some(MirrorCommand::Delete(delete)) => {
                let options = DeleteOptions {
                    config: delete.config,
                    to: delete.to,
                    generate: delete.generate,
                    delete_yaml_file: delete.delete_yaml_file,
                    workspace: delete.workspace,
                    parallel: delete.parallel,
                };
                super::exit_code(mirror::delete(
                    &options,
                    &delete.image.options(use_http, skip_tls_verify),
                    &Unfinished::new(),
                ))
            }
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
        remove_signatures: args.remove_signatures,
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
