use super::images::ImageArgs;
use author::references::diff_references;
use clap::Args;

/// Show what updating a catalog from OLD to NEW changes for clusters.
///
/// Packages, channels and bundles added or removed, default channels and channel heads that
/// moved, upgrade edges added or removed, and per channel the bundles that could upgrade to
/// the old head but cannot reach the new one. Each reference is anything `render` reads.
/// Exit status: 0, or 1 with --fail-on-broken-paths when an upgrade path is lost, 2 on error.
#[derive(Args)]
pub struct DiffArgs {
    old: String,
    new: String,
    /// Output format: text, json or yaml.
    #[arg(short, long, value_parser = ["text", "json", "yaml"], default_value = "text")]
    output: String,
    /// Exit 1 when a bundle loses its upgrade path to its channel's head (for CI).
    #[arg(long)]
    fail_on_broken_paths: bool,
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: DiffArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    match run_diff(&args, use_http, skip_tls_verify) {
        Ok(broken) => i32::from(broken && args.fail_on_broken_paths),
        Err(message) => {
            eprintln!("error: {message}");
            2
        }
    }
}

/// Prints the diff; true when an upgrade path is lost.
fn run_diff(args: &DiffArgs, use_http: bool, skip_tls_verify: bool) -> Result<bool, String> {
    let mut images = args.image.images(use_http, skip_tls_verify);
    let d = diff_references(&mut images, &args.old, &args.new).map_err(|e| e.to_string())?;
    let text = match args.output.as_str() {
        "json" => serde_json::to_string_pretty(&d).map_err(|e| e.to_string())? + "\n",
        "yaml" => serde_yaml::to_string(&d).map_err(|e| e.to_string())?,
        _ => d.text(),
    };
    print!("{text}");
    Ok(d.has_broken_paths())
}
