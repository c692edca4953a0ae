use author::init::{InitRequest, init_package};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Write the olm.package document a new file-based catalog starts from, as `opm init` does.
///
/// The package name is taken as given (validate checks it once the catalog is complete).
#[derive(Args)]
pub struct InitArgs {
    /// The package's name.
    package: String,
    /// The channel that subscriptions will default to if unspecified.
    #[arg(short = 'c', long, default_value = "")]
    default_channel: String,
    /// An image file for the package's icon; its type is told from its first bytes (PNG,
    /// JPEG, GIF, WebP, TIFF, BMP, ICO, HEIF, ...), and anything else is refused, SVG
    /// included, as opm refuses it.
    #[arg(short = 'i', long, value_name = "FILE")]
    icon: Option<PathBuf>,
    /// A file (the operator's README.md, say) whose text becomes the package description.
    #[arg(short = 'd', long, value_name = "FILE")]
    description: Option<PathBuf>,
    /// Output format: json or yaml.
    // Checked by `run` rather than by clap, for opm's message and exit code 1.
    #[arg(short = 'o', long, default_value = "json", value_name = "json|yaml")]
    output: String,
}

pub fn run(args: InitArgs) -> i32 {
    super::exit_code(init(&args))
}

fn init(args: &InitArgs) -> Result<(), String> {
    let yaml = match args.output.as_str() {
        "json" => false,
        "yaml" => true,
        other => {
            return Err(format!(
                "invalid --output value {}, expected (json|yaml)",
                catalog::quote::go_quote(other)
            ));
        }
    };
    let request = InitRequest {
        package: &args.package,
        default_channel: &args.default_channel,
        description: args.description.as_deref(),
        icon: args.icon.as_deref(),
    };
    let dc = init_package(&request).map_err(|e| e.to_string())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = if yaml {
        catalog::write::write_yaml(&dc, &mut out)
    } else {
        catalog::write::write_json(&dc, &mut out)
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing output: {e}"))
}
