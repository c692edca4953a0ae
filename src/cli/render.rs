use super::Format;
use crate::bundle::migrate::{MigrationLevel, migrate};
use crate::bundle::source::Source;
use crate::bundle::template::ImageTemplate;
use crate::catalog::{self, DeclarativeConfig};
use clap::Args;
use std::io::Write;

/// Render catalogs and bundles as one file-based catalog on stdout.
///
/// Each reference is an FBC directory (its documents are parsed, not validated), a
/// registry+v1 bundle directory (one with manifests/ and metadata/, rendered to an
/// olm.bundle) or a legacy SQLite index database. The result is written normalised: sorted
/// per package, canonical JSON.
#[derive(Args)]
pub struct RenderArgs {
    /// FBC directories, bundle directories or index.db files to render (images: not supported yet).
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
    let level = MigrationLevel::from_flags(args.migrate_level.as_deref(), args.migrate)?;
    let template: Option<ImageTemplate> = args
        .alpha_image_ref_template
        .as_deref()
        .map(str::parse)
        .transpose()?;
    let mut dc = DeclarativeConfig::default();
    for r in &args.refs {
        let source = Source::detect(r)?;
        if let Source::PackageManifests(_) = source {
            return Err(format!(
                "ref {r:?} is a legacy package-manifest tree: convert it with `migrate {r} <output-dir>`"
            ));
        }
        let loaded = source.load(template.as_ref())?;
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
