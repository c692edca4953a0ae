use super::Format;
use super::images::ImageArgs;
use super::migrate::MigrationFlags;
use bundle::migrate::migrate;
use bundle::template::ImageTemplate;
use catalog::{self, DeclarativeConfig};
use clap::Args;
use source::image::Images;
use source::reference::load_reference;
use std::io::Write;

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
    #[command(flatten)]
    migrations: MigrationFlags,
    /// Image of bundles rendered from directories, as a template over {{.Package}}, {{.Name}}
    /// and {{.Version}}.
    #[arg(long, hide = true)]
    alpha_image_ref_template: Option<String>,
    #[command(flatten)]
    read_limits: super::ReadLimitArgs,
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: RenderArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    args.read_limits.apply();
    super::exit_code(render(&args, use_http, skip_tls_verify))
}

fn render(args: &RenderArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    let level = args.migrations.level()?;
    let template: Option<ImageTemplate> = args
        .alpha_image_ref_template
        .as_deref()
        .map(str::parse)
        .transpose()?;
    let mut dc = DeclarativeConfig::default();
    let mut images = Images::new(args.image.options(use_http, skip_tls_verify));
    for r in &args.refs {
        dc.append(load_reference(&mut images, r, template.as_ref()).map_err(|e| e.to_string())?);
    }
    migrate(&mut dc, level).map_err(|e| e.to_string())?;
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
