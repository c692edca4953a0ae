use author::dockerfile::{DockerfileRequest, generate_dockerfile};
use clap::{Args, Subcommand};

/// Generate artifacts for file-based catalogs.
#[derive(Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    command: GenerateCommand,
}

#[derive(Subcommand)]
enum GenerateCommand {
    Dockerfile(DockerfileArgs),
}

/// Write a Dockerfile that builds a catalog image from an FBC directory, as `opm generate
/// dockerfile` does.
///
/// The file is written beside the directory, named after it (`catalog/` gives
/// `catalog.Dockerfile`, with `ADD catalog /configs`); an existing file of that name is never
/// overwritten. The builder stage runs `/bin/opm serve /configs --cache-only` to pre-build the
/// serving cache; the final stage serves `/configs` with `/bin/opm serve` (on `scratch` it only
/// holds the catalog, for CatalogSources that extract it).
///
/// The default images are opm's (quay.io/operator-framework/opm:latest): no olm-registry image
/// is published. Any image with this binary at /bin/opm works as both (it answers to that name
/// as opm does); use the same one for both stages, since the cache the builder writes is read
/// only by the server that wrote it. `build catalog DIR --tag REF --server` builds such a
/// catalog image directly, with neither a Dockerfile nor a container engine.
#[derive(Args)]
pub struct DockerfileArgs {
    /// The FBC root directory.
    #[arg(value_name = "fbcRootDir")]
    root: String,
    /// Image of the final stage, which serves the catalog; `scratch` for an image that only
    /// holds it [default: quay.io/operator-framework/opm:latest].
    #[arg(short = 'i', long, value_name = "IMAGE")]
    base_image: Option<String>,
    /// Deprecated: use --base-image. Without --builder-image it names the builder too.
    #[arg(long, value_name = "IMAGE", hide = true)]
    binary_image: Option<String>,
    /// Image of the build stage; it must contain /bin/opm, so it cannot be `scratch`
    /// [default: quay.io/operator-framework/opm:latest].
    #[arg(short = 'b', long, value_name = "IMAGE")]
    builder_image: Option<String>,
    /// Extra image labels, key=value; comma-separated or repeated. Of several values for one
    /// key the last is kept.
    #[arg(short = 'l', long, value_name = "KEY=VALUE,...")]
    extra_labels: Vec<String>,
}

pub fn run(args: GenerateArgs) -> i32 {
    let GenerateCommand::Dockerfile(args) = args.command;
    if args.binary_image.is_some() {
        // pflag's notice, printed as opm prints it.
        eprintln!("Flag --binary-image has been deprecated, use --base-image instead");
    }
    let request = DockerfileRequest {
        root: args.root,
        base_image: args.base_image,
        binary_image: args.binary_image,
        builder_image: args.builder_image,
        extra_labels: args.extra_labels,
    };
    super::exit_code(generate_dockerfile(&request).map(drop))
}
