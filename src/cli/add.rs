use super::images::ImageArgs;
use author::add::add_bundles;
use catalog::add::Mode;
use clap::Args;
use std::path::PathBuf;

/// Add bundles (directories or images) to a file-based catalog.
///
/// Each bundle goes into the channels its annotations name. `--mode replaces` takes the
/// upgrade edges from the CSV (replaces, skips, olm.skipRange); `--mode semver` places the
/// bundle between the nearest lower and higher versions of each channel. The default channel
/// follows the annotation of the highest version. A conflict (the bundle or its version is
/// already there, a replaces target is missing, the result would not validate) is an error
/// and the catalog is left as it was. The package's file is rewritten normalised; a new
/// package gets `<catalog>/<package>/catalog.json`.
#[derive(Args)]
pub struct AddArgs {
    /// The FBC root directory to add to.
    catalog: PathBuf,
    /// Bundle directories or bundle image references.
    #[arg(required = true)]
    bundles: Vec<String>,
    /// How the bundle is placed in its channels.
    #[arg(long, default_value = "replaces", value_parser = ["replaces", "semver"])]
    mode: String,
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: AddArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    let mode = if args.mode == "semver" {
        Mode::Semver
    } else {
        Mode::Replaces
    };
    let mut images = args.image.images(use_http, skip_tls_verify);
    let added = add_bundles(&args.catalog, &args.bundles, mode, &mut images, |w| {
        eprintln!("wrote package {:?} to {}", w.package, w.file.display());
    });
    super::exit_code(added.map_err(|e| e.to_string()))
}
