//! `render-template` and `convert-template` (opm alpha's commands of those names).
use super::images::ImageArgs;
use super::migrate::MigrationFlags;
use author::mermaid::{MermaidOptions, write_mermaid};
use author::template::{Kind, convert_to_basic};
use bundle::csv;
use bundle::dir::BundleDir;
use bundle::migrate::migrate;
use bundle::render::render;
use bundle::template::ImageTemplate;
use catalog::{self, Bundle};
use clap::Args;
use source::image::{Images, pull_unpacked};
use std::io::{Read, Write};
use std::path::Path;

/// Render a catalog template (basic or semver) to a file-based catalog.
///
/// With one argument that is a template type, the template is read from stdin; otherwise
/// the type is taken from the template's `schema`. Bundles are named by image (pulled with
/// the registry options below) or, beyond opm, by bundle directory.
#[derive(Args)]
pub struct RenderTemplateArgs {
    /// [basic|semver] [FILE|-]
    #[arg(num_args = 0..=2, value_name = "TYPE|FILE")]
    args: Vec<String>,
    /// Output format: json, yaml or mermaid.
    #[arg(short, long, default_value = "json")]
    output: String,
    #[command(flatten)]
    migrations: MigrationFlags,
    /// Image of bundles rendered from directories, as a template over {{.Package}}, {{.Name}}
    /// and {{.Version}} (default: the directory as written).
    #[arg(long, value_name = "TEMPLATE")]
    alpha_image_ref_template: Option<String>,
    #[command(flatten)]
    image: ImageArgs,
}

/// Convert a file-based catalog into a basic template: bundles become their image.
#[derive(Args)]
pub struct ConvertTemplateArgs {
    /// The template type to produce; only `basic`.
    #[arg(value_parser = ["basic"])]
    kind: String,
    /// The FBC file, or `-` (the default) for stdin.
    file: Option<String>,
    /// Output format: json or yaml.
    #[arg(short, long, default_value = "json")]
    output: String,
}

pub fn run_render(args: RenderTemplateArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    super::exit_code(render_template(&args, use_http, skip_tls_verify))
}

pub fn run_convert(args: ConvertTemplateArgs) -> i32 {
    super::exit_code(convert_template(&args))
}

fn render_template(
    args: &RenderTemplateArgs,
    use_http: bool,
    skip_tls_verify: bool,
) -> Result<(), String> {
    if !["json", "yaml", "mermaid"].contains(&args.output.as_str()) {
        return Err(format!(
            "invalid --output value {:?}, expected (json|yaml|mermaid)",
            args.output
        ));
    }
    let level = args.migrations.level()?;
    let image_template: Option<ImageTemplate> = args
        .alpha_image_ref_template
        .as_deref()
        .map(str::parse)
        .transpose()?;
    let (kind, file) = match args.args.as_slice() {
        [] => (None, "-"),
        [one] => match Kind::from_type(one) {
            Some(kind) => (Some(kind), "-"),
            None => (None, one.as_str()),
        },
        [kind, file] => (
            Some(Kind::from_type(kind).ok_or_else(|| {
                format!(
                    "invalid template type {kind:?}, must be one of: [{}]",
                    Kind::NAMES.join(" ")
                )
            })?),
            file.as_str(),
        ),
        _ => unreachable!("clap allows at most two arguments"),
    };
    let input = read_input(file)?;
    let kind = match kind {
        Some(kind) => kind,
        None => Kind::detect(&input).map_err(|e| format!("auto-detecting template type: {e}"))?,
    };
    let mut images = Images::new(args.image.options(use_http, skip_tls_verify));
    let mut render_bundle =
        |r: &str| render_bundle(&mut images, r, image_template.as_ref()).map(|b| vec![b]);
    let mut dc = kind
        .render(&input, &mut render_bundle)
        .map_err(|e| format!("rendering template: {e}"))?;
    migrate(&mut dc, level).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    match args.output.as_str() {
        "json" => catalog::write::write_json(&dc, &mut out).map_err(|e| e.to_string()),
        "yaml" => catalog::write::write_yaml(&dc, &mut out).map_err(|e| e.to_string()),
        _ => write_mermaid(
            &dc,
            &MermaidOptions {
                v0_semantics: true,
                ..Default::default()
            },
        )
        .map(|m| out = m.text.into_bytes())
        .map_err(|e| e.to_string()),
    }
    .map_err(|e| format!("writing output: {e}"))?;
    std::io::stdout()
        .write_all(&out)
        .map_err(|e| format!("writing output: {e}"))
}

/// A template's bundle reference as its one `olm.bundle`, whose image is the reference as
/// written: a bundle image, or (beyond opm, for authors working on a checkout) a bundle
/// directory, whose image is `template` expanded when given.
fn render_bundle(
    images: &mut Images,
    r: &str,
    template: Option<&ImageTemplate>,
) -> Result<Bundle, String> {
    let fail = |e: String| format!("render reference {r:?}: {e}");
    let path = Path::new(r);
    if path.exists() {
        if !path.is_dir() {
            return Err(fail(format!("ref {r:?} is not a directory: not allowed")));
        }
        let bundle = BundleDir::read(path).map_err(|e| fail(e.to_string()))?;
        let image = template.map_or_else(
            || r.to_owned(),
            |t| t.expand(bundle.package(), bundle.name(), &csv::version(bundle.csv())),
        );
        return Ok(render(&bundle, &image));
    }
    let (runtime, registry) = images.get().map_err(|e| e.to_string())?;
    let unpacked = runtime
        .block_on(pull_unpacked(registry, r))
        .map_err(|e| fail(e.to_string()))?;
    if !unpacked.labels.contains_key(image::LABEL_BUNDLE_PACKAGE) {
        return Err(fail(
            "cannot render declarative config image: not allowed".into(),
        ));
    }
    let bundle = BundleDir::read(&unpacked.content).map_err(|e| fail(e.to_string()))?;
    Ok(render(&bundle, r))
}

fn read_input(file: &str) -> Result<Vec<u8>, String> {
    let mut input = Vec::new();
    if file == "-" {
        std::io::stdin()
            .read_to_end(&mut input)
            .map_err(|e| format!("reading stdin: {e}"))?;
        return Ok(input);
    }
    std::fs::read(file).map_err(|e| format!("unable to open {file:?}: {e}"))
}

fn convert_template(args: &ConvertTemplateArgs) -> Result<(), String> {
    let yaml = match args.output.as_str() {
        "json" => false,
        "yaml" => true,
        other => {
            return Err(format!(
                "invalid --output value {other:?}, expected (json|yaml)"
            ));
        }
    };
    let input = read_input(args.file.as_deref().unwrap_or("-"))?;
    let text = convert_to_basic(&input, yaml).map_err(|e| e.to_string())?;
    std::io::stdout()
        .write_all(text.as_bytes())
        .map_err(|e| format!("writing output: {e}"))
}
