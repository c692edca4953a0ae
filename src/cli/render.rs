use super::Format;
use crate::bundle::dir::{BundleDir, is_bundle_dir};
use crate::bundle::migrate::{MigrationLevel, migrate};
use crate::bundle::template::ImageTemplate;
use crate::bundle::{csv, render as bundle_render};
use crate::catalog::decode::describe_load_errors;
use crate::catalog::{self, DeclarativeConfig};
use clap::Args;
use std::io::Write;
use std::path::Path;

/// Render catalogs and bundles as one file-based catalog on stdout.
///
/// Each reference is an FBC directory (its documents are parsed, not validated) or a
/// registry+v1 bundle directory (one with manifests/ and metadata/, rendered to an
/// olm.bundle). The result is written normalised: sorted per package, canonical JSON.
#[derive(Args)]
pub struct RenderArgs {
    /// FBC or bundle directories to render (images: not supported yet).
    #[arg(required = true)]
    refs: Vec<String>,
    #[arg(short, long, value_enum, default_value = "json")]
    output: Format,
    /// Run migrations up to and including this one: `none`, `bundle-object-to-csv-metadata`.
    #[arg(long, conflicts_with = "migrate")]
    migrate_level: Option<String>,
    /// Run all migrations.
    #[arg(long)]
    migrate: bool,
    /// Image of bundles rendered from directories, as a template over {{.Package}}, {{.Name}}
    /// and {{.Version}}.
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
    let level = match (&args.migrate_level, args.migrate) {
        (Some(level), _) => level.parse()?,
        (None, true) => MigrationLevel::LATEST,
        (None, false) => MigrationLevel::None,
    };
    let template: Option<ImageTemplate> = args
        .alpha_image_ref_template
        .as_deref()
        .map(str::parse)
        .transpose()?;
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
        if is_bundle_dir(path) {
            let b = BundleDir::read(path).map_err(|e| e.to_string())?;
            let image = template.as_ref().map_or_else(String::new, |t| {
                t.expand(b.package(), b.name(), &csv::version(b.csv()))
            });
            dc.bundles.push(bundle_render::render(&b, &image));
            continue;
        }
        let loaded =
            catalog::walk::load_dir(path).map_err(|errors| describe_load_errors(&errors))?;
        dc.packages.extend(loaded.packages);
        dc.channels.extend(loaded.channels);
        dc.bundles.extend(loaded.bundles);
        dc.deprecations.extend(loaded.deprecations);
        dc.others.extend(loaded.others);
    }
    migrate(&mut dc, level)?;
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
