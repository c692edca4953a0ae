use super::Format;
use crate::catalog::decode::describe_load_errors;
use crate::catalog::{self, DeclarativeConfig};
use clap::Args;
use std::io::Write;
use std::path::Path;

/// Render catalogs as one file-based catalog on stdout.
///
/// Each reference is an FBC directory; its documents are parsed (not validated) and written
/// out normalised: sorted per package, canonical JSON.
#[derive(Args)]
pub struct RenderArgs {
    /// FBC directories to render (bundle directories and images: not supported yet).
    #[arg(required = true)]
    refs: Vec<String>,
    #[arg(short, long, value_enum, default_value = "json")]
    output: Format,
    /// Run migrations up to and including this one: `none` (bundle-object-to-csv-metadata is not supported yet).
    #[arg(long, conflicts_with = "migrate")]
    migrate_level: Option<String>,
    /// Run all migrations.
    #[arg(long)]
    migrate: bool,
    /// Template for the image of bundles rendered from directories (accepted for opm compatibility).
    #[arg(long, hide = true)]
    alpha_image_ref_template: Option<String>,
}

pub fn run(args: RenderArgs) -> i32 {
    match render(&args) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("error: {message}");
            1
        }
    }
}

fn render(args: &RenderArgs) -> Result<(), String> {
    match args.migrate_level.as_deref() {
        None | Some("none") => {}
        Some("bundle-object-to-csv-metadata") => {
            return Err(
                "migration level \"bundle-object-to-csv-metadata\" is not supported yet".into(),
            );
        }
        Some(other) => return Err(format!("unknown migration level {other:?}")),
    }
    let mut dc = DeclarativeConfig::default();
    for r in &args.refs {
        let path = Path::new(r);
        if !path.exists() {
            return Err(format!(
                "ref {r:?}: rendering container images is not supported yet"
            ));
        }
        if !path.is_dir() {
            return Err(format!("ref {r:?} is not a directory: not allowed"));
        }
        if path.join("manifests").is_dir() && path.join("metadata").is_dir() {
            return Err(format!(
                "ref {r:?}: rendering bundle directories is not supported yet"
            ));
        }
        let loaded =
            catalog::walk::load_dir(path).map_err(|errors| describe_load_errors(&errors))?;
        dc.packages.extend(loaded.packages);
        dc.channels.extend(loaded.channels);
        dc.bundles.extend(loaded.bundles);
        dc.deprecations.extend(loaded.deprecations);
        dc.others.extend(loaded.others);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = match args.output {
        Format::Json => catalog::write::write_json(&dc, &mut out),
        Format::Yaml => catalog::write::write_yaml(&dc, &mut out),
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing output: {e}"))
}
