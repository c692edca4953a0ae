use super::images::ImageArgs;
use author::mermaid::{MermaidOptions, write_mermaid};
use author::svg::write_svg;
use catalog::DeclarativeConfig;
use clap::Args;
use source::image::Images;
use source::reference::load_reference;

/// Draw the upgrade graph of catalogs as Mermaid text (opm alpha render-graph).
///
/// References are FBC directories or catalog images (anything `render` reads); several are
/// merged into one graph. Edges point from the older bundle to the one that upgrades it.
#[derive(Args)]
pub struct RenderGraphArgs {
    #[arg(required = true)]
    refs: Vec<String>,
    /// Draw only edges from this bundle's version up, within its package.
    #[arg(long, value_name = "BUNDLE")]
    minimum_edge: Option<String>,
    /// Draw only this package.
    #[arg(short = 'p', long, value_name = "PACKAGE")]
    package_name: Option<String>,
    /// Mark bundles skipped by a newer entry and the edges that still lead into them.
    #[arg(long)]
    draw_v0_semantics: bool,
    /// Output format: mermaid (opm's text) or svg (a picture any browser opens).
    #[arg(short, long, value_parser = ["mermaid", "svg"], default_value = "mermaid")]
    output: String,
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: RenderGraphArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    super::exit_code(render_graph(&args, use_http, skip_tls_verify))
}

fn render_graph(
    args: &RenderGraphArgs,
    use_http: bool,
    skip_tls_verify: bool,
) -> Result<(), String> {
    let mut images = Images::new(args.image.options(use_http, skip_tls_verify));
    let mut dc = DeclarativeConfig::default();
    for r in &args.refs {
        dc.append(load_reference(&mut images, r, None).map_err(|e| e.to_string())?);
    }
    if args.output == "svg" {
        if args.minimum_edge.is_some() || args.draw_v0_semantics {
            return Err(
                "--minimum-edge and --draw-v0-semantics apply to mermaid output only".into(),
            );
        }
        let svg = write_svg(&dc, args.package_name.as_deref()).map_err(|e| e.to_string())?;
        print!("{svg}");
        return Ok(());
    }
    let graph = write_mermaid(
        &dc,
        &MermaidOptions {
            minimum_edge: args.minimum_edge.clone(),
            package: args.package_name.clone(),
            v0_semantics: args.draw_v0_semantics,
        },
    )
    .map_err(|e| e.to_string())?;
    for w in &graph.warnings {
        eprintln!("{w}");
    }
    print!("{}", graph.text);
    Ok(())
}
