//! The three oc-mirror v2 workflows, from options to a finished copy:
//!
//!   -c isc.yaml --to docker://REG/PREFIX          mirror to mirror
//!   -c isc.yaml --to file://DIR                   mirror to disk (a directory, or tar
//!                                                 segments with `archiveSize`)
//!   --from file://DIR --to docker://REG/PREFIX    disk to mirror (no source access)
//!
//! Each catalog is acquired through [`source`], filtered, rebuilt and planned; the
//! plan's images are copied and the target's resources written.
use super::config::{ImageSetConfiguration, Mirror};
use super::copy::{Copier, Job, Location, Summary};
use super::error::Error;
use super::plan::{self, ImageKind, Plan};
use super::{archive, attachments, outputs};
use catalog::file::ReadLimits;
use catalog::walk::load_dir;
use image::layout::Layout;
use image::{ClientOptions, Registry};
use source::image::fetch_as_fbc;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use unfinished::Unfinished;

/// What to mirror where (the `mirror` command's flags).
pub struct Options {
    /// The ImageSetConfiguration (needed unless `from` names an archive).
    pub config: Option<PathBuf>,
    /// docker://REGISTRY[/PREFIX] or file://DIR.
    pub to: String,
    /// An archive (file://DIR) of an earlier run to disk.
    pub from: Option<String>,
    /// Where the cluster resources and the mapping file go (default: the current directory).
    pub workspace: Option<String>,
    /// Blobs copied at the same time.
    pub parallel: usize,
    /// Print what the filters keep and the plan; copy nothing.
    pub dry_run: bool,
    /// A legacy ImageContentSourcePolicy instead of ImageDigestMirrorSet/ImageTagMirrorSet.
    pub icsp: bool,
    /// Leave signatures, attestations, SBOMs and other referrers behind (oc-mirror's flag).
    pub remove_signatures: bool,
}

pub(crate) enum Target {
    Registry {
        root: String,
        registry: String,
        prefix: String,
    },
    Disk(PathBuf),
}

pub(crate) fn parse_target(to: &str) -> Result<Target, Error> {
    if let Some(dir) = to.strip_prefix("file://") {
        if dir.is_empty() {
            return Err(Error::Usage(format!(
                "--to {to:?}: file:// needs a directory"
            )));
        }
        return Ok(Target::Disk(PathBuf::from(dir)));
    }
    let Some(rest) = to.strip_prefix("docker://") else {
        return Err(Error::Usage(format!(
            "--to {to:?}: expected docker://REGISTRY[/PREFIX] or file://DIR"
        )));
    };
    let rest = rest.trim_end_matches('/');
    let (registry, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if registry.is_empty() {
        return Err(Error::Usage(format!("--to {to:?}: no registry named")));
    }
    Ok(Target::Registry {
        root: rest.to_owned(),
        registry: registry.to_owned(),
        prefix: prefix.to_owned(),
    })
}

/// Mirrors as `args` say, reaching registries with `client`; catalog images are unpacked
/// into directories on `unfinished`.
pub fn run(args: &Options, client: &ClientOptions, unfinished: &Unfinished) -> Result<(), Error> {
    let target = parse_target(&args.to)?;
    let workspace = PathBuf::from(
        args.workspace
            .as_deref()
            .map(|w| w.strip_prefix("file://").unwrap_or(w))
            .unwrap_or("."),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::io("starting the runtime"))?;
    let registry = Arc::new(Registry::new(client)?);
    match (&args.from, &target) {
        (Some(from), Target::Registry { .. }) => {
            let dir = from.strip_prefix("file://").ok_or_else(|| {
                Error::Usage(format!(
                    "--from {from:?}: expected file://DIR (an archive of `mirror --to file://DIR`)"
                ))
            })?;
            let (layout, mut plan) = archive::open(Path::new(dir))?;
            if args.remove_signatures {
                plan.images
                    .retain(|i| !matches!(i.kind, ImageKind::Attachment | ImageKind::Referrer));
            }
            runtime.block_on(deliver(args, registry, layout, plan, &target, &workspace))
        }
        (Some(from), Target::Disk(_)) => Err(Error::Usage(format!(
            "--from {from:?} --to {:?}: an archive goes to a registry (docker://…)",
            args.to
        ))),
        (None, _) => {
            let path = args.config.as_ref().ok_or_else(|| {
                Error::Usage("--config is required (unless --from names an archive)".to_owned())
            })?;
            let text = std::fs::read_to_string(path).map_err(Error::io(path.display()))?;
            let config = ImageSetConfiguration::parse(&path.display().to_string(), &text)?;
            let archive_size = config.archive_bytes();
            // Rebuilt catalogs are staged in the archive itself, or in a private layout.
            let staging_dir = tempfile::tempdir().map_err(Error::io("a staging directory"))?;
            // Held while tar segments are written into the directory.
            let mut _writing = None;
            let layout = match (&target, archive_size) {
                (Target::Disk(dir), Some(_)) => {
                    let (store, lock) = archive::create_store(dir)?;
                    _writing = Some(lock);
                    store
                }
                (Target::Disk(dir), None) => archive::create(dir)?,
                (Target::Registry { .. }, size) => {
                    if size.is_some() {
                        eprintln!(
                            "archiveSize applies to archives (--to file://DIR); ignored for a registry"
                        );
                    }
                    Layout::create(staging_dir.path())?
                }
            };
            let plan = runtime.block_on(make_plan(
                &config.mirror,
                args.dry_run,
                args.parallel,
                !args.remove_signatures,
                &registry,
                &layout,
                unfinished,
            ))?;
            runtime.block_on(deliver(args, registry, layout, plan, &target, &workspace))?;
            if let (Target::Disk(dir), Some(limit), false) = (&target, archive_size, args.dry_run) {
                let packed = archive::pack(dir, &archive::open_store(dir)?, limit)?;
                println!("{packed}");
            }
            Ok(())
        }
    }
}

/// Fetches and filters every catalog of `section` (a configuration's `mirror:` or
/// `delete:`), rebuilds it into `staging`, and resolves every image, with its attachments
/// when `with_attachments`.
pub(crate) async fn make_plan(
    section: &Mirror,
    dry_run: bool,
    parallel: usize,
    with_attachments: bool,
    registry: &Arc<Registry>,
    staging: &Layout,
    unfinished: &Unfinished,
) -> Result<Plan, Error> {
    let mut wanted = Vec::new();
    let mut catalogs = Vec::new();
    // `mirror` has no --max-file-size: catalogs are read within the default cap.
    let limits = ReadLimits::default();
    for op in &section.operators {
        let unpacked = fetch_as_fbc(registry, &op.catalog, unfinished, limits).await?;
        let fbc = load_dir(&unpacked.root, limits).map_err(|errors| Error::Catalog {
            catalog: op.catalog.clone(),
            errors,
        })?;
        let filtered = filter_catalog(&fbc, op)?;
        if dry_run {
            println!("catalog {}:\n{}", op.catalog, filtered.1);
        }
        catalogs.push(plan::rebuild_catalog(op, &filtered.0, staging)?);
        wanted.extend(plan::catalog_images(&filtered.0, &op.platforms));
    }
    wanted.extend(plan::additional_images(&section.additional_images));
    let (kept, blocked) = plan::block(wanted, &section.blocked_images);
    let mut images = plan::resolve(registry.clone(), kept, parallel.max(4)).await?;
    if with_attachments {
        let attachments = plan::attachments(registry.clone(), &images, parallel.max(4)).await?;
        images.extend(attachments);
    }
    images.extend(catalogs);
    Ok(Plan { images, blocked })
}

/// The filtered catalog and the report that explains it.
fn filter_catalog(
    fbc: &catalog::DeclarativeConfig,
    op: &super::config::Operators,
) -> Result<(catalog::DeclarativeConfig, String), Error> {
    let filtered = super::filter::filter(fbc, op)?;
    Ok((filtered.config, filtered.report.render()))
}

/// A repository path below the destination's prefix.
fn below(prefix: &str, repository: &str) -> String {
    if prefix.is_empty() {
        repository.to_owned()
    } else {
        format!("{prefix}/{repository}")
    }
}

/// Makes the destination list every copied referrer under its subject (see
/// [`attachments::publish_referrers`]); one line per subject that failed.
async fn list_referrers(registry: &Registry, host: &str, prefix: &str, plan: &Plan) -> Vec<String> {
    let mut by_subject: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for image in plan.images.iter().filter(|i| i.kind == ImageKind::Referrer) {
        if let Some(subject) = &image.subject {
            by_subject
                .entry((below(prefix, &image.repository), subject.clone()))
                .or_default()
                .push(image.digest.clone());
        }
    }
    let mut failures = Vec::new();
    for ((repository, subject), referrers) in by_subject {
        let at = oci_client::Reference::with_digest(host.to_owned(), repository, subject.clone());
        if let Err(e) = attachments::publish_referrers(registry, &at, &subject, &referrers).await {
            failures.push(format!("referrers of {}: {}", at.whole(), e.message));
        }
    }
    failures
}

/// Copies the plan's images to the target and writes what the target needs.
async fn deliver(
    args: &Options,
    registry: Arc<Registry>,
    layout: Layout,
    mut plan: Plan,
    target: &Target,
    workspace: &Path,
) -> Result<(), Error> {
    let root = match target {
        Target::Registry { root, .. } => root.clone(),
        Target::Disk(dir) => format!("file://{}", dir.display()),
    };
    for b in &plan.blocked {
        eprintln!(
            "blocked: {} (matches blockedImages {:?}); not mirrored",
            b.image, b.pattern
        );
    }
    if args.dry_run {
        print!("{}", plan.render(&root));
        return Ok(());
    }
    let jobs = plan
        .images
        .iter()
        .map(|image| {
            let from = match (&args.from, image.kind) {
                (Some(_), _) | (None, ImageKind::Catalog) => Location::Layout,
                (None, _) => {
                    let r = plan::parse_reference(&image.source)?;
                    Location::Registry {
                        registry: r.registry().to_owned(),
                        repository: r.repository().to_owned(),
                    }
                }
            };
            let (to, tag) = match target {
                Target::Registry {
                    registry, prefix, ..
                } => (
                    Location::Registry {
                        registry: registry.clone(),
                        repository: below(prefix, &image.repository),
                    },
                    Some(image.tag.clone()),
                ),
                Target::Disk(_) => (
                    Location::Layout,
                    Some(archive::ref_name(&image.repository, &image.tag)),
                ),
            };
            // A referrer is found by its subject, not by a tag of its own.
            let tag = tag.filter(|_| image.kind != ImageKind::Referrer);
            Ok(Job {
                name: image.source.clone(),
                from,
                to,
                digest: image.digest.clone(),
                tag,
                last: image.kind == ImageKind::Catalog,
                platforms: image.platforms.clone(),
                keep_digest: plan::parse_reference(&image.source)?.digest().is_some(),
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let layout_root = layout.root().to_owned();
    let copier = Arc::new(Copier::new(
        registry.clone(),
        Some(Arc::new(layout)),
        args.parallel,
    ));
    let summary: Summary = copier.run(jobs).await;
    println!("{summary}");
    for note in &summary.notes {
        eprintln!("note: {note}");
    }
    // Images pulled by tag whose index the platform filter rewrote now have another digest.
    for image in &mut plan.images {
        if let Some(digest) = summary.rewritten.get(&image.source) {
            image.digest = digest.clone();
        }
    }
    let mut failures = summary.failures;
    if let Target::Registry {
        registry: host,
        prefix,
        ..
    } = target
        && failures.is_empty()
    {
        failures = list_referrers(&registry, host, prefix, &plan).await;
    }
    if !failures.is_empty() {
        return Err(Error::Incomplete {
            total: plan.images.len(),
            failures,
        });
    }
    match target {
        Target::Disk(_) => archive::write_plan(&layout_root, &plan)?,
        Target::Registry { root, .. } => {
            for file in outputs::write_all(&plan, root, workspace, args.icsp)? {
                eprintln!("wrote {}", file.display());
            }
        }
    }
    Ok(())
}
