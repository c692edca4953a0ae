use super::Format;
use super::images::{ImageArgs, fetch_as_fbc};
use crate::bundle::migrate::{MigrationLevel, migrate};
use crate::bundle::source::Source;
use crate::bundle::template::ImageTemplate;
use crate::catalog::decode::describe_load_errors;
use crate::catalog::{self, DeclarativeConfig, walk};
use crate::image::Registry;
use clap::Args;
use std::io::Write;
use std::path::Path;

/// Render catalogs and bundles as one file-based catalog on stdout.
///
/// Each reference is an FBC directory (its documents are parsed, not validated), a
/// registry+v1 bundle directory (one with manifests/ and metadata/, rendered to an
/// olm.bundle) or a legacy SQLite index database. The result is written normalised: sorted
/// per package, canonical JSON.
#[derive(Args)]
pub struct RenderArgs {
    /// FBC directories, bundle directories, index.db files, or images (catalog, bundle or
    /// legacy index images, by registry reference or oci:DIR[:TAG]).
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
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: RenderArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    match render(&args, use_http, skip_tls_verify) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("error: {message}");
            1
        }
    }
}

fn render(args: &RenderArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    let level = MigrationLevel::from_flags(args.migrate_level.as_deref(), args.migrate)?;
    let template: Option<ImageTemplate> = args
        .alpha_image_ref_template
        .as_deref()
        .map(str::parse)
        .transpose()?;
    let mut dc = DeclarativeConfig::default();
    let mut images: Option<(tokio::runtime::Runtime, Registry)> = None;
    for r in &args.refs {
        if !Path::new(r).exists() {
            if images.is_none() {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("starting the runtime: {e}"))?;
                images = Some((runtime, args.image.registry(use_http, skip_tls_verify)?));
            }
            let (runtime, registry) = images.as_ref().expect("set above");
            let unpacked = runtime.block_on(fetch_as_fbc(registry, r))?;
            dc.append(walk::load_dir(&unpacked.root).map_err(|e| describe_load_errors(&e))?);
            continue;
        }
        let source = Source::detect(r)?;
        if let Source::PackageManifests(_) = source {
            return Err(format!(
                "ref {r:?} is a legacy package-manifest tree: convert it with `migrate {r} <output-dir>`"
            ));
        }
        dc.append(source.load(template.as_ref())?);
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
