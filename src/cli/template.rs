//! `render-template` and `convert-template` (opm alpha's commands of those names).
use super::images::ImageArgs;
use super::migrate::MigrationFlags;
use author::template::{Kind, convert};
use author::template_render::{TemplateOutput, TemplateRequest, render_template as author_render};
use bundle::template::ImageTemplate;
use clap::Args;
use std::io::{Read, Write};

/// Render a catalog template (basic, semver or substitutes) to a file-based catalog.
///
/// With one argument that is a template type, the template is read from stdin; otherwise
/// the type is taken from the template's `schema`. Bundles are named by image (pulled with
/// the registry options below) or, beyond opm, by bundle directory.
#[derive(Args)]
pub struct RenderTemplateArgs {
    /// [basic|semver|substitutes] [FILE|-]
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

/// Convert a file-based catalog into a template: `basic` (bundles become their image) or
/// `substitutes` (the catalog as it is, with no substitutions yet).
#[derive(Args)]
pub struct ConvertTemplateArgs {
    /// The template type to produce: basic or substitutes.
    #[arg(value_parser = ["basic", "substitutes"])]
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
    let output = match args.output.as_str() {
        "json" => TemplateOutput::Json,
        "yaml" => TemplateOutput::Yaml,
        "mermaid" => TemplateOutput::Mermaid,
        other => {
            return Err(format!(
                "invalid --output value {other:?}, expected (json|yaml|mermaid)"
            ));
        }
    };
    let level = args.migrations.level()?;
    let image_template: Option<ImageTemplate> = args
        .alpha_image_ref_template
        .as_deref()
        .map(str::parse)
        .transpose()?;
    let (kind, file) = kind_and_file(&args.args)?;
    let request = TemplateRequest {
        kind,
        input: &read_input(file)?,
        output,
        level,
        image_template: image_template.as_ref(),
    };
    let mut images = args.image.images(use_http, skip_tls_verify);
    let out = author_render(&request, &mut images).map_err(|e| e.to_string())?;
    std::io::stdout()
        .write_all(&out)
        .map_err(|e| format!("writing output: {e}"))
}

/// The template type the arguments name (None: the input's `schema` says) and the file to
/// read (`-`: stdin).
fn kind_and_file(args: &[String]) -> Result<(Option<Kind>, &str), String> {
    Ok(match args {
        [] => (None, "-"),
        [one] => match Kind::from_type(one) {
            Some(kind) => (Some(kind), "-"),
            None => (None, one.as_str()),
        },
        [kind, file] => {
            let kind = Kind::from_type(kind).ok_or_else(|| {
                format!(
                    "invalid template type {kind:?}, must be one of: [{}]",
                    Kind::NAMES.join(" ")
                )
            })?;
            (Some(kind), file.as_str())
        }
        _ => unreachable!("clap allows at most two arguments"),
    })
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
    let kind = Kind::from_type(&args.kind)
        .ok_or_else(|| format!("unknown template type {:?}", args.kind))?;
    let input = read_input(args.file.as_deref().unwrap_or("-"))?;
    let text = convert(kind, &input, yaml).map_err(|e| e.to_string())?;
    std::io::stdout()
        .write_all(text.as_bytes())
        .map_err(|e| format!("writing output: {e}"))
}
