use super::images::ImageArgs;
use bundle::csv;
use bundle::dir::BundleDir;
use bundle::render::render;
use catalog::add::{Mode, NewBundle, add_bundle};
use catalog::decode::describe_load_errors;
use catalog::file::ReadLimits;
use catalog::{DeclarativeConfig, walk, write};
use clap::Args;
use source::image::{Images, pull_unpacked};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use unfinished::Unfinished;

/// Add bundles (directories or images) to a file-based catalog.
///
/// Each bundle goes into the channels its annotations name. `--mode replaces` takes the
/// upgrade edges from the CSV (replaces, skips, olm.skipRange); `--mode semver` places the
/// bundle between the nearest lower and higher versions of each channel. The default channel
/// follows the annotation of the highest version. A conflict (the bundle or its version is
/// already there, a replaces target is missing, the result would not validate) is an error
/// and the catalog is left as it was. The package's file is rewritten normalised; a new
/// package gets `<catalog>/<package>/catalog.json`.
#[derive(Args)]
pub struct AddArgs {
    /// The FBC root directory to add to.
    catalog: PathBuf,
    /// Bundle directories or bundle image references.
    #[arg(required = true)]
    bundles: Vec<String>,
    /// How the bundle is placed in its channels.
    #[arg(long, default_value = "replaces", value_parser = ["replaces", "semver"])]
    mode: String,
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: AddArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    super::exit_code(add(args, use_http, skip_tls_verify))
}

fn add(args: AddArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    let mode = if args.mode == "semver" {
        Mode::Semver
    } else {
        Mode::Replaces
    };
    // `add` has no --max-file-size: the catalog and bundles are read within the default cap.
    let limits = ReadLimits::default();
    let original = walk::load_dir(&args.catalog, limits).map_err(|e| describe_load_errors(&e))?;
    let mut dc = original.clone();
    let mut touched = BTreeSet::new();
    let mut images = Images::new(args.image.options(use_http, skip_tls_verify));
    let unfinished = Unfinished::new();
    for reference in &args.bundles {
        let new = if Path::new(reference).is_dir() {
            new_bundle(
                &BundleDir::read(Path::new(reference), limits).map_err(|e| e.to_string())?,
                "",
            )
        } else {
            let (runtime, registry) = images.get().map_err(|e| e.to_string())?;
            let image = runtime
                .block_on(pull_unpacked(registry, reference, &unfinished))
                .map_err(|e| e.to_string())?;
            let bundle =
                BundleDir::read(&image.content, limits).map_err(|e| format!("{reference}: {e}"))?;
            new_bundle(&bundle, reference)
        };
        touched.insert(new.bundle.package.clone());
        let name = new.bundle.name.clone();
        add_bundle(&mut dc, new, mode).map_err(|e| format!("adding {name}: {e}"))?;
    }
    // Work out every file first, so that a package we cannot write leaves all untouched.
    let targets: Vec<(String, PathBuf)> = touched
        .into_iter()
        .map(|pkg| package_file(&args.catalog, &original, &pkg).map(|f| (pkg, f)))
        .collect::<Result<_, _>>()?;
    for (pkg, file) in targets {
        write_package(&dc, &pkg, &file)?;
        eprintln!("wrote package {pkg:?} to {}", file.display());
    }
    Ok(())
}

fn new_bundle(b: &BundleDir, image: &str) -> NewBundle {
    let a = &b.metadata.annotations;
    NewBundle {
        bundle: render(b, image),
        channels: a.channels.clone(),
        default_channel: (!a.default_channel.is_empty()).then(|| a.default_channel.clone()),
        replaces: csv::replaces(b.csv()).to_owned(),
        skips: csv::skips(b.csv()),
        skip_range: csv::skip_range(b.csv()).to_owned(),
    }
}

/// The one file that holds a package's documents (and nothing else), or where a new
/// package goes.
fn package_file(root: &Path, dc: &DeclarativeConfig, pkg: &str) -> Result<PathBuf, String> {
    // (owner package, file) of every document.
    let docs = dc
        .packages
        .iter()
        .map(|p| (&p.name, &p.origin))
        .chain(dc.channels.iter().map(|c| (&c.package, &c.origin)))
        .chain(dc.bundles.iter().map(|b| (&b.package, &b.origin)))
        .chain(dc.deprecations.iter().map(|d| (&d.package, &d.origin)))
        .chain(dc.others.iter().map(|m| (&m.package, &m.origin)));
    let (mut mine, mut others) = (BTreeSet::new(), BTreeSet::new());
    for (owner, origin) in docs {
        if owner == pkg {
            mine.insert(&*origin.file);
        } else {
            others.insert(&*origin.file);
        }
    }
    let mine: Vec<&str> = mine.into_iter().collect();
    match mine.as_slice() {
        [] => Ok(root.join(pkg).join("catalog.json")),
        [one] if !others.contains(one) => Ok(root.join(one)),
        _ => Err(format!(
            "package {pkg:?} shares its files with other packages or is spread over several ({}); \
             add rewrites one file per package (the layout `migrate` writes)",
            mine.join(", ")
        )),
    }
}

/// Rewrites `file` with the package's documents, atomically.
fn write_package(dc: &DeclarativeConfig, pkg: &str, file: &Path) -> Result<(), String> {
    let only = DeclarativeConfig {
        packages: dc
            .packages
            .iter()
            .filter(|p| p.name == pkg)
            .cloned()
            .collect(),
        channels: dc
            .channels
            .iter()
            .filter(|c| c.package == pkg)
            .cloned()
            .collect(),
        bundles: dc
            .bundles
            .iter()
            .filter(|b| b.package == pkg)
            .cloned()
            .collect(),
        deprecations: dc
            .deprecations
            .iter()
            .filter(|d| d.package == pkg)
            .cloned()
            .collect(),
        others: dc
            .others
            .iter()
            .filter(|m| m.package == pkg)
            .cloned()
            .collect(),
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let yaml = file.extension().is_some_and(|e| e == "yaml" || e == "yml");
    let written = if yaml {
        write::write_yaml(&only, &mut tmp)
    } else {
        write::write_json(&only, &mut tmp)
    };
    written.map_err(|e| format!("{}: {e}", file.display()))?;
    tmp.persist(file)
        .map_err(|e| format!("{}: {}", file.display(), e.error))?;
    Ok(())
}
