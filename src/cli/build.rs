use super::images::ImageArgs;
use bundle::dir::BundleDir;
use clap::{Args, Subcommand};
use image::{self, ImageRef, build_image};
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
    let (built, tag, image) = match args.what {
        BuildKind::Bundle { dir, tag, image } => {
            // Reading the bundle checks it: an image of a broken bundle helps nobody.
            let bundle = BundleDir::read(&dir).map_err(|e| e.to_string())?;
            let a = &bundle.metadata.annotations;
            let mut labels = BTreeMap::from([
                (
                    format!("{BUNDLE_LABEL_PREFIX}mediatype.v1"),
                    "registry+v1".to_owned(),
                ),
                (
                    format!("{BUNDLE_LABEL_PREFIX}manifests.v1"),
                    "manifests/".to_owned(),
                ),
                (
                    format!("{BUNDLE_LABEL_PREFIX}metadata.v1"),
                    "metadata/".to_owned(),
                ),
                (
                    format!("{BUNDLE_LABEL_PREFIX}package.v1"),
                    a.package.clone(),
                ),
                (
                    format!("{BUNDLE_LABEL_PREFIX}channels.v1"),
                    a.channels.join(","),
                ),
            ]);
            if !a.default_channel.is_empty() {
                labels.insert(
                    format!("{BUNDLE_LABEL_PREFIX}channel.default.v1"),
                    a.default_channel.clone(),
                );
            }
            let contents = [
                (dir.join("manifests"), "/manifests"),
                (dir.join("metadata"), "/metadata"),
            ];
            let contents: Vec<(&std::path::Path, &str)> =
                contents.iter().map(|(p, t)| (p.as_path(), *t)).collect();
            (
                build_image(&contents, &labels).map_err(|e| e.to_string())?,
                tag,
                image,
            )
        }
        BuildKind::Catalog {
            dir,
            tag,
            labels,
            image,
        } => {
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
            (
                build_image(&[(dir.as_path(), "/configs")], &all).map_err(|e| e.to_string())?,
                tag,
                image,
            )
        }
    };
    let target = ImageRef::parse(&tag)?;
    let registry = image.registry(use_http, skip_tls_verify)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let digest = runtime
        .block_on(registry.push(&built, &target))
        .map_err(|e| e.to_string())?;
    println!("{target}@{digest}");
    Ok(())
}

const BUNDLE_LABEL_PREFIX: &str = "operators.operatorframework.io.bundle.";
