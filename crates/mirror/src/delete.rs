//! `mirror delete` (oc-mirror v2's `delete`), in two steps so that nothing is removed by
//! accident:
//!
//!   -c delete-isc.yaml --to docker://REG/PREFIX --generate
//!       plans: the images a `DeleteImageSetConfiguration` names, filtered as mirroring
//!       filters them, each found at the destination by the digest it has there, written to
//!       `<workspace>/working-dir/delete/delete-images.yaml` (oc-mirror's `DeleteImageList`);
//!   --delete-yaml-file FILE --to docker://REG/PREFIX
//!       deletes the manifests that file lists (of an index: its platforms' too), each after
//!       what refers to it ([`crate::attachments`]), and reports them; a manifest that something outside the plan still names (a tag, an index) is
//!       kept and reported. Blobs are the registry's garbage collector's to remove.
use super::attachments::{Attachment, Finder, Link};
use super::config::DeleteImageSetConfiguration;
use super::error::Error;
use super::plan::{ImageKind, PlannedImage, digest_tag};
use super::platforms;
use super::workflow::{Target, make_plan, parse_target};
use image::layout::{Layout, replace_file};
use image::{ClientOptions, ErrorKind, Registry};
use oci_client::Reference;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use unfinished::Unfinished;

/// Where `--generate` writes the plan, below the workspace (as oc-mirror does).
pub(crate) const DELETE_FILE: &str = "working-dir/delete/delete-images.yaml";
const LIST_KIND: &str = "DeleteImageList";

/// What to delete where (the `mirror delete` command's flags).
pub struct DeleteOptions {
    /// The DeleteImageSetConfiguration (with `generate`).
    pub config: Option<PathBuf>,
    /// docker://REGISTRY[/PREFIX]: the mirror the images were mirrored to.
    pub to: String,
    /// Write the delete plan; delete nothing.
    pub generate: bool,
    /// A delete plan written by `generate`: delete what it lists.
    pub delete_yaml_file: Option<PathBuf>,
    /// Where the delete plan goes (default: the current directory).
    pub workspace: Option<String>,
    /// Catalog and tag look-ups at the same time.
    pub parallel: usize,
}

/// oc-mirror v2's delete plan.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct DeleteImageList {
    kind: String,
    api_version: String,
    #[serde(default)]
    items: Vec<DeleteItem>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct DeleteItem {
    /// The image as the catalog or configuration names it (`docker://…`).
    image_name: String,
    /// Where it is in the mirror, by digest (`docker://REG/PREFIX/path[:tag]@sha256:…`).
    image_reference: String,
    /// oc-mirror's image type: operatorCatalog, operatorBundle, operatorRelatedImage, generic.
    #[serde(rename = "type", default)]
    kind: String,
}

fn type_name(kind: ImageKind) -> &'static str {
    match kind {
        ImageKind::Bundle => "operatorBundle",
        ImageKind::RelatedImage => "operatorRelatedImage",
        ImageKind::AdditionalImage => "generic",
        ImageKind::Catalog => "operatorCatalog",
        // Not planned for deletion by name: found at the mirror beside their images.
        ImageKind::Attachment | ImageKind::Referrer => "generic",
    }
}

/// Plans (`generate`) or deletes (`delete_yaml_file`) as `args` say.
pub fn delete(
    args: &DeleteOptions,
    client: &ClientOptions,
    unfinished: &Unfinished,
) -> Result<(), Error> {
    let Target::Registry { root, .. } = parse_target(&args.to)? else {
        return Err(Error::Usage(format!(
            "--to {:?}: images are deleted from a registry (docker://REGISTRY[/PREFIX])",
            args.to
        )));
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::io("starting the runtime"))?;
    let client = Arc::new(Registry::new(client)?);
    match (args.generate, &args.delete_yaml_file) {
        (true, None) => {
            let path = args.config.as_ref().ok_or_else(|| {
                Error::Usage("--generate needs -c/--config: a DeleteImageSetConfiguration".into())
            })?;
            let text = std::fs::read_to_string(path).map_err(Error::io(path.display()))?;
            let config = DeleteImageSetConfiguration::parse(&path.display().to_string(), &text)?;
            let workspace = PathBuf::from(
                args.workspace
                    .as_deref()
                    .map(|w| w.strip_prefix("file://").unwrap_or(w))
                    .unwrap_or("."),
            );
            let staging = tempfile::tempdir().map_err(Error::io("a staging directory"))?;
            let layout = Layout::create(staging.path())?;
            let plan = runtime.block_on(make_plan(
                &config.delete,
                false,
                args.parallel,
                // Attachments are found at the mirror, by their tags, when deleting.
                false,
                &client,
                &layout,
                unfinished,
            ))?;
            let list = runtime.block_on(locate(&client, &plan.images, &root))?;
            let file = workspace.join(DELETE_FILE);
            write_list(&file, &list)?;
            println!(
                "wrote {}: {} images to delete from {root}; nothing deleted \
                 (`mirror delete --delete-yaml-file {} --to {}` deletes them)",
                file.display(),
                list.items.len(),
                file.display(),
                args.to
            );
            Ok(())
        }
        (false, Some(file)) => {
            let items = read_list(file, &root)?;
            let report = runtime.block_on(remove(&client, items));
            print!("{}", report.render(&root));
            if report.failures.is_empty() {
                Ok(())
            } else {
                Err(Error::NotDeleted(report.failures))
            }
        }
        _ => Err(Error::Usage(
            "either --generate (write the delete plan, delete nothing) or --delete-yaml-file FILE \
             (delete what the plan lists)"
                .into(),
        )),
    }
}

/// Finds every planned image at the destination `root` by the digest it has there: the
/// tag's (what was mirrored, a rewritten index included), or its own for an image pulled by
/// digest. An image not there is left out of the plan, with a note.
async fn locate(
    client: &Registry,
    images: &[PlannedImage],
    root: &str,
) -> Result<DeleteImageList, Error> {
    let mut items = Vec::new();
    for image in images {
        let r = image.destination(root);
        let reference: Reference = r.parse().map_err(|source| Error::Reference {
            image: r.clone(),
            source,
        })?;
        let digest = match client.resolve_digest(&reference).await {
            Ok(digest) => digest,
            Err(e) if e.kind == ErrorKind::NotFound => {
                eprintln!("note: {} is not at {r}: nothing to delete", image.source);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let at = if image.by_digest {
            format!("@{digest}")
        } else {
            format!(":{}@{digest}", image.tag)
        };
        items.push(DeleteItem {
            image_name: format!("docker://{}", image.source),
            image_reference: format!("docker://{root}/{}{at}", image.repository),
            kind: type_name(image.kind).to_owned(),
        });
    }
    items.sort_by(|a, b| a.image_reference.cmp(&b.image_reference));
    items.dedup_by(|a, b| a.image_reference == b.image_reference);
    Ok(DeleteImageList {
        kind: LIST_KIND.to_owned(),
        api_version: super::config::API_VERSION.to_owned(),
        items,
    })
}

fn write_list(file: &Path, list: &DeleteImageList) -> Result<(), Error> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(Error::io(dir.display()))?;
    }
    let text = serde_yaml::to_string(list).map_err(Error::Yaml)?;
    Ok(replace_file(file, text.as_bytes())?)
}

/// One manifest the plan names.
struct Planned {
    /// The plan's imageName.
    name: String,
    registry: String,
    repository: String,
    digest: String,
    tag: Option<String>,
}

/// Reads a delete plan and checks every item before anything is deleted: each must name a
/// digest below `root` (the `--to` of this run).
fn read_list(file: &Path, root: &str) -> Result<Vec<Planned>, Error> {
    let shown = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(Error::io(&shown))?;
    let list: DeleteImageList =
        serde_yaml::from_str(&text).map_err(|source| Error::ConfigSyntax {
            file: shown.clone(),
            source,
        })?;
    let mut problems = Vec::new();
    if list.kind != LIST_KIND {
        problems.push(format!(
            "kind: expected {LIST_KIND:?}, found {:?}",
            list.kind
        ));
    }
    let mut planned = Vec::new();
    let below = format!("docker://{root}/");
    for (i, item) in list.items.iter().enumerate() {
        let at = format!("items[{i}].imageReference {:?}", item.image_reference);
        let Some(path) = item.image_reference.strip_prefix(&below) else {
            problems.push(format!(
                "{at}: not in the mirror --to names (docker://{root})"
            ));
            continue;
        };
        let whole = format!("{root}/{path}");
        let r: Reference = match whole.parse() {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("{at}: {e}"));
                continue;
            }
        };
        let Some(digest) = r.digest() else {
            problems.push(format!("{at}: names no digest"));
            continue;
        };
        let has_tag = path
            .split('@')
            .next()
            .is_some_and(|p| p.rsplit('/').next().is_some_and(|last| last.contains(':')));
        planned.push(Planned {
            name: item.image_name.clone(),
            registry: r.registry().to_owned(),
            repository: r.repository().to_owned(),
            digest: digest.to_owned(),
            tag: has_tag.then(|| r.tag().unwrap_or_default().to_owned()),
        });
    }
    if problems.is_empty() {
        Ok(planned)
    } else {
        problems.push("nothing deleted".to_owned());
        Err(Error::Config {
            file: shown,
            kind: LIST_KIND,
            problems,
        })
    }
}

/// What a delete did.
#[derive(Default)]
struct Report {
    /// `repository@digest (what)`, in the order deleted.
    deleted: Vec<String>,
    /// `repository@digest (what): by what it is still named`.
    kept: Vec<String>,
    /// Planned manifests the mirror no longer has.
    absent: Vec<String>,
    failures: Vec<String>,
}

impl Report {
    fn render(&self, root: &str) -> String {
        let mut out = format!(
            "deleted {} manifests from {root}, kept {} still referenced, {} already absent\n",
            self.deleted.len(),
            self.kept.len(),
            self.absent.len()
        );
        for d in &self.deleted {
            out.push_str(&format!("  deleted  {d}\n"));
        }
        for k in &self.kept {
            out.push_str(&format!("  kept     {k}\n"));
        }
        for a in &self.absent {
            out.push_str(&format!("  absent   {a}\n"));
        }
        out
    }
}

async fn remove(client: &Arc<Registry>, planned: Vec<Planned>) -> Report {
    let mut report = Report::default();
    let finder = Finder::new(client.clone());
    let mut by_repository: BTreeMap<(String, String), Vec<Planned>> = BTreeMap::new();
    for p in planned {
        by_repository
            .entry((p.registry.clone(), p.repository.clone()))
            .or_default()
            .push(p);
    }
    for ((registry, repository), planned) in by_repository {
        let repo = Repository {
            client,
            finder: &finder,
            registry,
            repository,
        };
        if let Err(e) = repo.prune(&planned, &mut report).await {
            report.failures.push(format!(
                "{}: {} (nothing more deleted in it)",
                repo.repository, e.message
            ));
        }
    }
    report
}

/// One repository of the mirror.
struct Repository<'a> {
    client: &'a Registry,
    /// What refers to a manifest (signatures, attestations, SBOMs, referrers).
    finder: &'a Finder,
    registry: String,
    repository: String,
}

impl Repository<'_> {
    fn at(&self, digest_or_tag: &str) -> Reference {
        if digest_or_tag.starts_with("sha256:") {
            Reference::with_digest(
                self.registry.clone(),
                self.repository.clone(),
                digest_or_tag.to_owned(),
            )
        } else {
            Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                digest_or_tag.to_owned(),
            )
        }
    }

    /// The manifests of an index (with their platforms), or None for an image manifest.
    async fn children(&self, digest: &str) -> Result<Option<Vec<(String, String)>>, image::Error> {
        let (body, _) = self.client.get_manifest(&self.at(digest)).await?;
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        Ok(v["manifests"].as_array().map(|entries| {
            entries
                .iter()
                .map(|e| {
                    let platform =
                        platforms::platform_of(e).unwrap_or_else(|| "a manifest".to_owned());
                    (
                        e["digest"].as_str().unwrap_or_default().to_owned(),
                        platform,
                    )
                })
                .collect()
        }))
    }

    async fn prune(&self, planned: &[Planned], report: &mut Report) -> Result<(), image::Error> {
        // What the plan removes, children before their index, each with what it is.
        let mut doomed: Vec<(String, String)> = Vec::new();
        let mut children_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in planned {
            match self.children(&p.digest).await {
                Err(e) if e.kind == ErrorKind::NotFound => {
                    report
                        .absent
                        .push(format!("{}@{} ({})", self.repository, p.digest, p.name));
                }
                Err(e) => return Err(e),
                Ok(children) => {
                    let children = children.unwrap_or_default();
                    for (child, platform) in &children {
                        doomed.push((child.clone(), format!("{platform} of {}", p.name)));
                    }
                    children_of.insert(
                        p.digest.clone(),
                        children.into_iter().map(|(d, _)| d).collect(),
                    );
                    doomed.push((p.digest.clone(), p.name.clone()));
                }
            }
        }
        let doomed_digests: BTreeSet<&str> = doomed.iter().map(|(d, _)| d.as_str()).collect();
        // What refers to them, found as mirroring finds it, by the manifest it refers to.
        let mut attachments: BTreeMap<String, Vec<Attachment>> = BTreeMap::new();
        for p in planned {
            if !children_of.contains_key(&p.digest) {
                continue;
            }
            for a in self
                .finder
                .find(&self.registry, &self.repository, &p.digest)
                .await?
            {
                attachments.entry(a.subject.clone()).or_default().push(a);
            }
        }
        // The tags that go with the plan: its own, the digest tags of what it removes, and
        // those of what refers to it.
        let plan_tags: BTreeSet<String> = planned
            .iter()
            .filter_map(|p| p.tag.clone())
            .chain(doomed_digests.iter().map(|d| digest_tag(d)))
            .chain(attachments.values().flatten().map(|a| match &a.link {
                Link::Tag(tag) => tag.clone(),
                Link::Referrer | Link::FallbackIndex => digest_tag(&a.digest),
            }))
            .collect();
        // Whatever another tag names (itself, or as a manifest of its index) stays.
        let mut kept: BTreeMap<String, String> = BTreeMap::new();
        for tag in self.client.list_tags(&self.at("latest")).await? {
            if plan_tags.contains(&tag) {
                continue;
            }
            let digest = match self.client.resolve_digest(&self.at(&tag)).await {
                Ok(d) => d,
                // Deleted since it was listed.
                Err(e) if e.kind == ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let by = format!("{}:{tag}", self.repository);
            let named = match children_of.get(&digest) {
                Some(children) => children.clone(),
                None if doomed_digests.contains(digest.as_str()) => Vec::new(),
                None => match self.children(&digest).await? {
                    Some(children) => children.into_iter().map(|(d, _)| d).collect(),
                    None => Vec::new(),
                },
            };
            for d in std::iter::once(digest).chain(named) {
                if doomed_digests.contains(d.as_str()) {
                    kept.entry(d).or_insert_with(|| by.clone());
                }
            }
        }
        let mut done = BTreeSet::new();
        for (digest, what) in &doomed {
            if !done.insert(digest.clone()) {
                continue;
            }
            let shown = format!("{}@{digest} ({what})", self.repository);
            if let Some(by) = kept.get(digest) {
                report
                    .kept
                    .push(format!("{shown}: still referenced by {by}"));
                continue;
            }
            // What refers to it first: nothing is left referring to nothing.
            for a in attachments.get(digest).into_iter().flatten() {
                if !done.insert(a.digest.clone()) {
                    continue;
                }
                let link = match &a.link {
                    Link::Tag(tag) => format!("{tag}, of"),
                    Link::Referrer => "a referrer of".to_owned(),
                    Link::FallbackIndex => "the referrers index of".to_owned(),
                };
                let shown = format!("{}@{} ({link} {what})", self.repository, a.digest);
                self.delete(&a.digest, shown, report).await?;
            }
            self.delete(digest, shown, report).await?;
        }
        Ok(())
    }

    async fn delete(
        &self,
        digest: &str,
        shown: String,
        report: &mut Report,
    ) -> Result<(), image::Error> {
        match self.client.delete_manifest(&self.at(digest)).await {
            Ok(()) => report.deleted.push(shown),
            Err(e) if e.kind == ErrorKind::NotFound => report.absent.push(shown),
            Err(mut e) => {
                if e.kind == ErrorKind::Other {
                    e.message.push_str(
                        " (does the registry allow deletes? distribution: storage.delete.enabled)",
                    );
                }
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_for_another_mirror_is_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("delete-images.yaml");
        let d = format!("sha256:{}", "c".repeat(64));
        std::fs::write(
            &file,
            format!(
                "kind: DeleteImageList
apiVersion: mirror.openshift.io/v2alpha1
items:
- imageName: docker://quay.io/ns/a:v1
  imageReference: docker://127.0.0.1:5000/m/ns/a:v1@{d}
  type: generic
- imageName: docker://quay.io/ns/b:v1
  imageReference: docker://other.example:5000/m/ns/b:v1@{d}
  type: generic
- imageName: docker://quay.io/ns/c:v1
  imageReference: docker://127.0.0.1:5000/m/ns/c:v1
  type: generic
"
            ),
        )
        .unwrap();
        let planned = |root: &str| read_list(&file, root);
        assert_eq!(
            planned("127.0.0.1:5000/m").err().unwrap().to_string(),
            format!(
                "{}: invalid DeleteImageList:
  items[1].imageReference \"docker://other.example:5000/m/ns/b:v1@{d}\": not in the mirror --to names (docker://127.0.0.1:5000/m)
  items[2].imageReference \"docker://127.0.0.1:5000/m/ns/c:v1\": names no digest
  nothing deleted",
                file.display()
            )
        );
    }
}
