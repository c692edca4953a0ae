use super::images::ImageArgs;
use crate::image::{self, ImageRef, build_image};
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
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
    match build(args, use_http, skip_tls_verify) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("error: {message}");
            1
        }
    }
}

fn build(args: BuildArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    let BuildKind::Catalog {
        dir,
        tag,
        labels,
        image,
    } = args.what;
    if !dir.is_dir() {
        return Err(format!(
            "{:?} is not a directory",
            dir.display().to_string()
        ));
    }
    let mut all = BTreeMap::from([(image::LABEL_FBC.to_owned(), "/configs".to_owned())]);
    for label in labels {
        let (k, v) = label
            .split_once('=')
            .ok_or_else(|| format!("invalid label {label:?}"))?;
        all.insert(k.to_owned(), v.to_owned());
    }
    let built = build_image(&[(dir.as_path(), "/configs")], &all)?;
    let target = ImageRef::parse(&tag)?;
    let registry = image.registry(use_http, skip_tls_verify)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let digest = runtime.block_on(registry.push(&built, &target))?;
    println!("{target}@{digest}");
    Ok(())
}
