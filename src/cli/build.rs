use super::images::ImageArgs;
use clap::{Args, Subcommand};
use source::build::{ImageSource, build_and_push};
use std::path::PathBuf;

/// Build images without a container engine and push them to a registry (or write an OCI
/// layout with --tag oci:DIR[:TAG]).
#[derive(Args)]
pub struct BuildArgs {
    #[command(subcommand)]
    what: BuildKind,
}

#[derive(Subcommand)]
enum BuildKind {
    /// A bundle image: manifests/ and metadata/ at the image root, labelled from
    /// metadata/annotations.yaml as upstream's bundle images are.
    Bundle {
        /// The bundle directory (with manifests/ and metadata/).
        dir: PathBuf,
        /// Where to push: a registry reference, or oci:DIR[:TAG].
        #[arg(short, long)]
        tag: String,
        #[command(flatten)]
        image: ImageArgs,
    },
    /// A catalog image: the FBC directory at /configs, labelled for OLM.
    Catalog {
        /// The FBC root directory.
        dir: PathBuf,
        /// Where to push: a registry reference, or oci:DIR[:TAG].
        #[arg(short, long)]
        tag: String,
        /// Extra labels, KEY=VALUE; repeatable.
        #[arg(short = 'l', long = "extra-labels", value_name = "KEY=VALUE")]
        labels: Vec<String>,
        #[command(flatten)]
        image: ImageArgs,
    },
}

pub fn run(args: BuildArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    super::exit_code(build(args, use_http, skip_tls_verify))
}

fn build(args: BuildArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    let (source, tag, image) = match &args.what {
        BuildKind::Bundle { dir, tag, image } => (ImageSource::Bundle(dir), tag, image),
        BuildKind::Catalog {
            dir,
            tag,
            labels,
            image,
        } => {
            let labels = labels
                .iter()
                .map(|l| parse_label(l))
                .collect::<Result<_, _>>()?;
            (ImageSource::Catalog { dir, labels }, tag, image)
        }
    };
    let mut images = image.images(use_http, skip_tls_verify);
    let pushed = build_and_push(&source, tag, &mut images).map_err(|e| e.to_string())?;
    println!("{pushed}");
    Ok(())
}

/// One `--extra-labels` value, KEY=VALUE.
fn parse_label(label: &str) -> Result<(String, String), String> {
    let (k, v) = label
        .split_once('=')
        .ok_or_else(|| format!("invalid label {label:?}"))?;
    Ok((k.to_owned(), v.to_owned()))
}
