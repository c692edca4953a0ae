//! The mirror plan: every image to copy — the rebuilt catalogs, the bundle images, every
//! relatedImage of the kept bundles, the additional images — each with the digest it was
//! resolved to and where it goes below the destination, with blocked images set aside.
//!
//! Destinations follow oc-mirror v2: the source repository path below the destination root
//! (`docker://REG/PREFIX/<source path>`), the source tag kept; an image named by digest only
//! keeps its digest and is also tagged `sha256-<hex>` so that registries which collect
//! untagged manifests keep it; a catalog goes to `targetCatalog` (else its source path) with
//! `targetTag` (else its source tag, else `sha256-<hex of the rebuilt catalog>`).
use super::attachments::{Finder, Link};
use super::config::{AdditionalImage, BlockedImage, Operators, Platform};
use super::error::Error;
use catalog::DeclarativeConfig;
use image::remote::retry_remote;
use image::{Registry, build_image, layout::Layout};
use oci_client::Reference;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub(crate) enum ImageKind {
    Bundle,
    RelatedImage,
    AdditionalImage,
    /// A catalog rebuilt from its filtered FBC (copied last, after everything it names).
    Catalog,
    /// A cosign tag-scheme attachment (`sha256-<hex>.sig`, `.att`, `.sbom`) of an image.
    Attachment,
    /// An OCI 1.1 referrer of an image (a manifest whose `subject` is the image), copied by
    /// digest and listed by the destination's referrers API or fallback tag.
    Referrer,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PlannedImage {
    /// The image as the catalog or configuration names it.
    pub(crate) source: String,
    pub(crate) kind: ImageKind,
    /// The manifest digest copied (for a catalog: of the rebuilt image).
    pub(crate) digest: String,
    /// The repository path below the destination root.
    pub(crate) repository: String,
    /// The destination tag.
    pub(crate) tag: String,
    /// The source named a digest only: clusters pull it by digest (IDMS), else by tag (ITMS).
    pub(crate) by_digest: bool,
    /// The platforms to copy of a multi-platform image (none: every platform).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) platforms: Vec<Platform>,
    /// For an attachment or referrer: the manifest it refers to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) subject: Option<String>,
}

impl PlannedImage {
    /// The full destination reference below `root` (`REG/PREFIX`), as clusters will pull it.
    pub(crate) fn destination(&self, root: &str) -> String {
        let at = if self.by_digest {
            format!("@{}", self.digest)
        } else {
            format!(":{}", self.tag)
        };
        format!("{}/{}{at}", root.trim_end_matches('/'), self.repository)
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Blocked {
    pub(crate) image: String,
    /// The blockedImages pattern that matched.
    pub(crate) pattern: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) images: Vec<PlannedImage>,
    #[serde(default)]
    pub(crate) blocked: Vec<Blocked>,
}

impl Plan {
    /// The plan as `--dry-run` shows it: one line per image, source → destination.
    pub(crate) fn render(&self, root: &str) -> String {
        let mut out = format!("{} images to mirror:\n", self.images.len());
        for i in &self.images {
            let platforms: Vec<String> = i.platforms.iter().map(Platform::to_string).collect();
            let only = if platforms.is_empty() {
                String::new()
            } else {
                format!(" [only {}]", platforms.join(", "))
            };
            out.push_str(&format!(
                "  {:<16} {} ({}) -> {}{only}\n",
                kind_name(i.kind),
                i.source,
                i.digest,
                i.destination(root)
            ));
        }
        for b in &self.blocked {
            out.push_str(&format!(
                "  blocked          {} (matches blockedImages {:?})\n",
                b.image, b.pattern
            ));
        }
        out
    }
}

pub(crate) fn kind_name(kind: ImageKind) -> &'static str {
    match kind {
        ImageKind::Bundle => "bundle",
        ImageKind::RelatedImage => "relatedImage",
        ImageKind::AdditionalImage => "additionalImage",
        ImageKind::Catalog => "catalog",
        ImageKind::Attachment => "attachment",
        ImageKind::Referrer => "referrer",
    }
}

/// An image wanted before its digest is known.
#[derive(Clone, Debug)]
pub(crate) struct Wanted {
    pub(crate) source: String,
    pub(crate) kind: ImageKind,
    pub(crate) target_repo: Option<String>,
    pub(crate) target_tag: Option<String>,
    pub(crate) platforms: Vec<Platform>,
}

/// The bundle images and every relatedImage of a (filtered) catalog, each once, in catalog
/// order; a bundle image listed again as a relatedImage stays a bundle. `platforms` are
/// those of the catalog's `operators[]` entry.
pub(crate) fn catalog_images(fbc: &DeclarativeConfig, platforms: &[Platform]) -> Vec<Wanted> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut add = |image: &str, kind| {
        if !image.is_empty() && seen.insert(image.to_owned()) {
            out.push(Wanted {
                source: image.to_owned(),
                kind,
                target_repo: None,
                target_tag: None,
                platforms: platforms.to_vec(),
            });
        }
    };
    for b in &fbc.bundles {
        add(&b.image, ImageKind::Bundle);
    }
    for b in &fbc.bundles {
        for r in &b.related_images {
            add(&r.image, ImageKind::RelatedImage);
        }
    }
    out
}

pub(crate) fn additional_images(images: &[AdditionalImage]) -> Vec<Wanted> {
    images
        .iter()
        .map(|a| Wanted {
            source: a.name.clone(),
            kind: ImageKind::AdditionalImage,
            target_repo: a.target_repo.clone(),
            target_tag: a.target_tag.clone(),
            platforms: a.platforms.clone(),
        })
        .collect()
}

/// Splits off the images a blockedImages pattern matches (against the whole reference).
pub(crate) fn block(wanted: Vec<Wanted>, patterns: &[BlockedImage]) -> (Vec<Wanted>, Vec<Blocked>) {
    let compiled: Vec<(regex::Regex, &str)> = patterns
        .iter()
        .filter_map(|p| Some((regex::Regex::new(&p.name).ok()?, p.name.as_str())))
        .collect();
    let mut kept = Vec::new();
    let mut blocked = Vec::new();
    for w in wanted {
        match compiled.iter().find(|(re, _)| re.is_match(&w.source)) {
            Some((_, pattern)) => blocked.push(Blocked {
                image: w.source,
                pattern: (*pattern).to_owned(),
            }),
            None => kept.push(w),
        }
    }
    (kept, blocked)
}

pub(crate) fn parse_reference(image: &str) -> Result<Reference, Error> {
    image
        .strip_prefix("docker://")
        .unwrap_or(image)
        .parse::<Reference>()
        .map_err(|source| Error::Reference {
            image: image.to_owned(),
            source,
        })
}

/// Resolves every tag to the digest it names now (a few requests at a time) and places each
/// image below the destination. Images are deduplicated by reference, first kind wins; an
/// image wanted with different platform filters gets all of their platforms (every platform
/// when one of them wants every platform).
pub(crate) async fn resolve(
    registry: Arc<Registry>,
    wanted: Vec<Wanted>,
    parallel: usize,
) -> Result<Vec<PlannedImage>, Error> {
    let mut unique: Vec<Wanted> = Vec::new();
    let mut seen = BTreeMap::new();
    for w in wanted {
        match seen.get(&w.source) {
            Some(&at) => {
                let first: &mut Wanted = &mut unique[at];
                if first.platforms.is_empty() || w.platforms.is_empty() {
                    first.platforms.clear();
                } else {
                    first.platforms.extend(w.platforms);
                    first.platforms.sort();
                    first.platforms.dedup();
                }
            }
            None => {
                seen.insert(w.source.clone(), unique.len());
                unique.push(w);
            }
        }
    }
    let limit = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (index, w) in unique.into_iter().enumerate() {
        let (registry, limit) = (registry.clone(), limit.clone());
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            (index, place(&registry, w).await)
        });
    }
    let mut placed = BTreeMap::new();
    let mut problems = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done? {
            (index, Ok(image)) => {
                placed.insert(index, image);
            }
            (_, Err(e)) => problems.push(e.to_string()),
        }
    }
    if !problems.is_empty() {
        problems.sort();
        return Err(Error::Unresolved(problems));
    }
    Ok(placed.into_values().collect())
}

async fn place(registry: &Registry, w: Wanted) -> Result<PlannedImage, Error> {
    let r = parse_reference(&w.source)?;
    let digest = match r.digest() {
        Some(d) => d.to_owned(),
        None => retry_remote(registry.retry_policy(), || registry.resolve_digest(&r)).await?,
    };
    let by_digest = r.digest().is_some() && !has_tag(&w.source);
    let tag = match (&w.target_tag, r.tag()) {
        (Some(t), _) => t.clone(),
        (None, Some(t)) if has_tag(&w.source) => t.to_owned(),
        _ => digest_tag(&digest),
    };
    Ok(PlannedImage {
        repository: w
            .target_repo
            .clone()
            .unwrap_or_else(|| r.repository().to_owned()),
        tag,
        by_digest: by_digest && w.target_tag.is_none(),
        digest,
        source: w.source,
        kind: w.kind,
        platforms: w.platforms,
        subject: None,
    })
}

/// The attachments of every planned image (cosign tags and OCI referrers, see
/// [`crate::attachments`]), each placed beside its image, a few images at a time. Fails,
/// before anything is copied, when a signature or referrer claims another manifest than the
/// one it is attached to.
pub(crate) async fn attachments(
    registry: Arc<Registry>,
    images: &[PlannedImage],
    parallel: usize,
) -> Result<Vec<PlannedImage>, Error> {
    let finder = Arc::new(Finder::new(registry.clone()));
    let limit = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (index, image) in images.iter().enumerate() {
        if image.kind == ImageKind::Catalog {
            continue;
        }
        let (finder, limit, image) = (finder.clone(), limit.clone(), image.clone());
        let client = registry.clone();
        tasks.spawn(async move {
            let _permit = limit.acquire_owned().await;
            (index, attachments_of(&finder, &client, &image).await)
        });
    }
    let mut found = BTreeMap::new();
    let mut problems = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done? {
            (index, Ok(placed)) => {
                found.insert(index, placed);
            }
            (_, Err(Error::Image(e))) => problems.push(e.message),
            (_, Err(e)) => return Err(e),
        }
    }
    if !problems.is_empty() {
        problems.sort();
        return Err(Error::Unresolved(problems));
    }
    let mut seen = BTreeSet::new();
    Ok(found
        .into_values()
        .flatten()
        .filter(|a| seen.insert((a.repository.clone(), a.tag.clone(), a.digest.clone())))
        .collect())
}

async fn attachments_of(
    finder: &Finder,
    client: &Registry,
    image: &PlannedImage,
) -> Result<Vec<PlannedImage>, Error> {
    let r = parse_reference(&image.source)?;
    let (registry, repository) = (r.registry(), r.repository());
    let mut placed = Vec::new();
    let found = finder.find(registry, repository, &image.digest).await?;
    let kept = match found.iter().any(|a| a.subject != image.digest) {
        true => kept_subjects(client, &r, image).await?,
        false => None,
    };
    for a in found {
        if kept.as_ref().is_some_and(|k| !k.contains(&a.subject)) {
            continue;
        }
        if let Some(claimed) = finder.claims_other(registry, repository, &a).await? {
            let attachment = match &a.link {
                Link::Tag(tag) => format!("{registry}/{repository}:{tag} ({})", a.digest),
                _ => format!("{registry}/{repository}@{}", a.digest),
            };
            return Err(Error::Mismatch {
                attachment,
                subject: a.subject,
                claimed,
            });
        }
        let (source, kind, tag) = match a.link {
            Link::Tag(tag) => (
                format!("{registry}/{repository}:{tag}"),
                ImageKind::Attachment,
                tag,
            ),
            Link::Referrer => (
                format!("{registry}/{repository}@{}", a.digest),
                ImageKind::Referrer,
                digest_tag(&a.digest),
            ),
            // Written anew at the destination, for the referrers copied there.
            Link::FallbackIndex => continue,
        };
        placed.push(PlannedImage {
            source,
            kind,
            by_digest: kind == ImageKind::Referrer,
            digest: a.digest,
            repository: image.repository.clone(),
            tag,
            subject: Some(a.subject),
            platforms: Vec::new(),
        });
    }
    Ok(placed)
}

/// Under a platform filter, the manifests whose attachments travel: the kept platforms',
/// and the index's own unless the filter rewrites it (a new digest that nothing signed).
/// None when everything travels.
async fn kept_subjects(
    client: &Registry,
    r: &Reference,
    image: &PlannedImage,
) -> Result<Option<BTreeSet<String>>, Error> {
    if image.platforms.is_empty() {
        return Ok(None);
    }
    let at = Reference::with_digest(
        r.registry().to_owned(),
        r.repository().to_owned(),
        image.digest.clone(),
    );
    let (body, _) = retry_remote(client.retry_policy(), || client.get_manifest(&at)).await?;
    // No platform kept is the copy's error to report, with the image's name.
    let Ok(selection) = super::platforms::select(&body, &image.platforms) else {
        return Ok(None);
    };
    let mut kept: BTreeSet<String> = selection.kept.into_iter().collect();
    if !selection.partial || r.digest().is_some() {
        kept.insert(image.digest.clone());
    }
    Ok(Some(kept))
}

/// Whether a reference names a tag itself (the parser fills in `latest` when it has none).
fn has_tag(image: &str) -> bool {
    let name = image.split('@').next().unwrap_or(image);
    let last = name.rsplit('/').next().unwrap_or(name);
    last.contains(':')
}

/// The tag oc-mirror v2 gives an image that has only a digest: `sha256-<hex>` (also the
/// form of OCI's referrers fallback tag and cosign's attachment tags).
pub(crate) fn digest_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1)
}

/// Rebuilds a catalog image from its filtered FBC (as `build catalog` does) into `staging`
/// and places it: `targetCatalog` or the source path, `targetTag` or the source tag or
/// `sha256-<hex>` of the rebuilt image.
pub(crate) fn rebuild_catalog(
    op: &Operators,
    filtered: &DeclarativeConfig,
    staging: &Layout,
) -> Result<PlannedImage, Error> {
    let source = parse_reference(&op.catalog)?;
    let dir = tempfile::tempdir().map_err(Error::io("a directory for the catalog"))?;
    let file = dir.path().join("catalog.json");
    let mut out = Vec::new();
    catalog::write::write_json(filtered, &mut out)
        .map_err(Error::io("writing the filtered catalog"))?;
    std::fs::write(&file, out).map_err(Error::io(file.display()))?;
    let labels = BTreeMap::from([(image::LABEL_FBC.to_owned(), "/configs".to_owned())]);
    let built = build_image(&[(dir.path(), "/configs")], &labels)?;
    staging.write_blob(&built.config)?;
    for layer in &built.layers {
        staging.write_blob(layer)?;
    }
    let digest = staging.write_blob(&built.manifest)?;
    let tag = match (&op.target_tag, source.tag()) {
        (Some(t), _) => t.clone(),
        (None, Some(t)) if has_tag(&op.catalog) => t.to_owned(),
        _ => digest_tag(&digest),
    };
    Ok(PlannedImage {
        source: op.catalog.clone(),
        kind: ImageKind::Catalog,
        repository: op
            .target_catalog
            .clone()
            .unwrap_or_else(|| source.repository().to_owned()),
        tag,
        by_digest: false,
        digest,
        platforms: Vec::new(),
        subject: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_follow_oc_mirror() {
        let d = "sha256:0123456789012345678901234567890123456789012345678901234567890123";
        let image = |source: &str, tag: &str, by_digest| PlannedImage {
            source: source.into(),
            kind: ImageKind::RelatedImage,
            digest: d.into(),
            repository: parse_reference(source).unwrap().repository().into(),
            tag: tag.into(),
            by_digest,
            platforms: Vec::new(),
            subject: None,
        };
        assert_eq!(
            image("quay.io/ns/op:v1", "v1", false).destination("mirror.example:5000/pfx/"),
            "mirror.example:5000/pfx/ns/op:v1"
        );
        assert_eq!(
            image(&format!("quay.io/ns/op@{d}"), &digest_tag(d), true).destination("m:5000"),
            format!("m:5000/ns/op@{d}")
        );
        assert_eq!(digest_tag(d), format!("sha256-{}", &d[7..]));
        assert!(has_tag("127.0.0.1:5000/ns/op:v1"));
        assert!(!has_tag("127.0.0.1:5000/ns/op"));
        assert!(!has_tag(&format!("127.0.0.1:5000/ns/op@{d}")));
        assert!(has_tag(&format!("quay.io/ns/op:v2@{d}")));
    }

    #[test]
    fn blocked_images_are_set_aside_with_their_pattern() {
        let wanted = |s: &str| Wanted {
            source: s.into(),
            kind: ImageKind::RelatedImage,
            target_repo: None,
            target_tag: None,
            platforms: Vec::new(),
        };
        let (kept, blocked) = block(
            vec![
                wanted("quay.io/ns/keep:v1"),
                wanted("quay.io/unwanted/x:v1"),
            ],
            &[BlockedImage {
                name: ".*/unwanted/.*".into(),
            }],
        );
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].source, "quay.io/ns/keep:v1");
        assert_eq!(
            blocked,
            vec![Blocked {
                image: "quay.io/unwanted/x:v1".into(),
                pattern: ".*/unwanted/.*".into()
            }]
        );
    }
}
