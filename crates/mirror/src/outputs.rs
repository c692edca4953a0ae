//! What a cluster needs to use a mirror, written as oc-mirror v2 writes it into
//! `<workspace>/working-dir/cluster-resources/`: `idms-oc-mirror.yaml` (images pulled by
//! digest), `itms-oc-mirror.yaml` (by tag) — or `imageContentSourcePolicy.yaml` with
//! `--icsp` — and a `cs-…yaml` CatalogSource and `cc-…yaml` ClusterCatalog per catalog; plus
//! `<workspace>/working-dir/mapping.txt`, one `source=destination` line per image.
//!
//! As oc-mirror: catalogs are not in the mirror sets (clusters reach them through the
//! CatalogSource); a mirror covers the source's namespace when the destination path ends with
//! the source path, else the one repository; sets are split into `operator` and `generic`
//! (additional images) objects; keys come out sorted. Unlike oc-mirror there is no
//! `createdAt` annotation, so that the same mirror writes the same files.
use super::error::Error;
use super::plan::{ImageKind, Plan, PlannedImage, parse_reference};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) const RESOURCES_DIR: &str = "working-dir/cluster-resources";
pub(crate) const MAPPING_FILE: &str = "working-dir/mapping.txt";

/// Writes every output for a plan mirrored below `root` (`REG/PREFIX`); returns the files.
pub(crate) fn write_all(
    plan: &Plan,
    root: &str,
    workspace: &Path,
    icsp: bool,
) -> Result<Vec<PathBuf>, Error> {
    let mut files: Vec<(String, String)> = Vec::new();
    let resources = |name: &str| format!("{RESOURCES_DIR}/{name}");
    if icsp {
        if let Some(text) = mirror_sets(plan, root, Mode::Icsp)? {
            files.push((resources("imageContentSourcePolicy.yaml"), text));
        }
    } else {
        if let Some(text) = mirror_sets(plan, root, Mode::Digest)? {
            files.push((resources("idms-oc-mirror.yaml"), text));
        }
        if let Some(text) = mirror_sets(plan, root, Mode::Tag)? {
            files.push((resources("itms-oc-mirror.yaml"), text));
        }
    }
    for catalog in plan.images.iter().filter(|i| i.kind == ImageKind::Catalog) {
        let reference = catalog.destination(root);
        let suffix = name_suffix(catalog);
        let base = catalog
            .repository
            .rsplit('/')
            .next()
            .unwrap_or(&catalog.repository);
        let cs = format!("cs-{base}-{suffix}").replace('.', "-");
        let cc = format!("cc-{base}-{suffix}").replace('.', "-");
        files.push((
            resources(&format!("{cs}.yaml")),
            to_yaml(&json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "CatalogSource",
                "metadata": {"annotations": annotations(), "name": cs, "namespace": "openshift-marketplace"},
                "spec": {"image": reference, "sourceType": "grpc"},
            }))?,
        ));
        files.push((
            resources(&format!("{cc}.yaml")),
            to_yaml(&json!({
                "apiVersion": "olm.operatorframework.io/v1",
                "kind": "ClusterCatalog",
                "metadata": {"annotations": annotations(), "name": cc},
                "spec": {"source": {"image": {"ref": reference}, "type": "Image"}},
            }))?,
        ));
    }
    let mapping: String = plan
        .images
        .iter()
        .map(|i| format!("{}={}\n", i.source, i.destination(root)))
        .collect();
    files.push((MAPPING_FILE.to_owned(), mapping));

    let mut written = Vec::new();
    for (rel, text) in files {
        let path = workspace.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(Error::io(dir.display()))?;
        }
        std::fs::write(&path, text).map_err(Error::io(path.display()))?;
        written.push(path);
    }
    Ok(written)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Digest,
    Tag,
    Icsp,
}

/// `<tag[:12]>` in RFC 1035 characters, or `<digest[:12]>` hex for a digest-only catalog.
fn name_suffix(catalog: &PlannedImage) -> String {
    let suffix: String = if catalog.by_digest {
        let hex = catalog.digest.trim_start_matches("sha256:");
        hex.chars().take(12).collect()
    } else {
        catalog
            .tag
            .chars()
            .take(12)
            .map(|c| match c.to_ascii_lowercase() {
                c @ ('a'..='z' | '0'..='9' | '-') => c,
                _ => '-',
            })
            .collect()
    };
    if suffix.is_empty() {
        "0".into()
    } else {
        suffix
    }
}

fn annotations() -> Value {
    json!({"createdBy": concat!("olm-registry ", env!("CARGO_PKG_VERSION"))})
}

fn to_yaml(v: &Value) -> Result<String, Error> {
    serde_yaml::to_string(v).map_err(Error::Yaml)
}

/// (source, mirror) scopes of one image: the namespace when the destination path ends with
/// the source path, else the repository.
fn scopes(image: &PlannedImage, root: &str) -> Result<(String, String), Error> {
    let source = parse_reference(&image.source)?;
    let dest = parse_reference(&image.destination(root))?;
    let (src_path, dst_path) = (source.repository(), dest.repository());
    if dst_path.ends_with(src_path) {
        let namespace = |registry: &str, path: &str| match path.rsplit_once('/') {
            Some((ns, _)) => format!("{registry}/{ns}"),
            None => registry.to_owned(),
        };
        Ok((
            namespace(source.registry(), src_path),
            namespace(dest.registry(), dst_path),
        ))
    } else {
        Ok((
            format!("{}/{src_path}", source.registry()),
            format!("{}/{dst_path}", dest.registry()),
        ))
    }
}

fn mirror_sets(plan: &Plan, root: &str, mode: Mode) -> Result<Option<String>, Error> {
    // category → source → mirrors
    let mut by_category: BTreeMap<&str, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for image in &plan.images {
        let category = match image.kind {
            // Pulled beside their image, from the same mirrored repository.
            ImageKind::Catalog | ImageKind::Attachment | ImageKind::Referrer => continue,
            ImageKind::AdditionalImage => "generic",
            ImageKind::Bundle | ImageKind::RelatedImage => "operator",
        };
        let wanted = match mode {
            Mode::Digest | Mode::Icsp => image.by_digest,
            Mode::Tag => !image.by_digest,
        };
        if !wanted {
            continue;
        }
        let (source, mirror) = scopes(image, root)?;
        let mirrors = by_category
            .entry(category)
            .or_default()
            .entry(source)
            .or_default();
        if !mirrors.contains(&mirror) {
            mirrors.push(mirror);
        }
    }
    if by_category.is_empty() {
        return Ok(None);
    }
    let mut out = String::new();
    for (category, sources) in by_category {
        let entries: Vec<Value> = sources
            .into_iter()
            .map(|(source, mirrors)| json!({"mirrors": mirrors, "source": source}))
            .collect();
        let object = match mode {
            Mode::Digest => json!({
                "apiVersion": "config.openshift.io/v1",
                "kind": "ImageDigestMirrorSet",
                "metadata": {"annotations": annotations(), "name": format!("idms-{category}-0")},
                "spec": {"imageDigestMirrors": entries},
            }),
            Mode::Tag => json!({
                "apiVersion": "config.openshift.io/v1",
                "kind": "ImageTagMirrorSet",
                "metadata": {"annotations": annotations(), "name": format!("itms-{category}-0")},
                "spec": {"imageTagMirrors": entries},
            }),
            Mode::Icsp => json!({
                "apiVersion": "operator.openshift.io/v1alpha1",
                "kind": "ImageContentSourcePolicy",
                "metadata": {"annotations": annotations(), "name": format!("{category}-0")},
                "spec": {"repositoryDigestMirrors": entries},
            }),
        };
        out.push_str("---\n");
        out.push_str(&to_yaml(&object)?);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn image(
        source: &str,
        kind: ImageKind,
        repository: &str,
        tag: &str,
        by_digest: bool,
    ) -> PlannedImage {
        PlannedImage {
            source: source.into(),
            kind,
            digest: D.into(),
            repository: repository.into(),
            tag: tag.into(),
            by_digest,
            platforms: Vec::new(),
            subject: None,
        }
    }

    #[test]
    fn writes_the_files_oc_mirror_writes() {
        let plan = Plan {
            images: vec![
                image(
                    &format!("quay.io/ns/op@{D}"),
                    ImageKind::RelatedImage,
                    "ns/op",
                    "sha256-0123",
                    true,
                ),
                image(
                    &format!("quay.io/ns/bundle@{D}"),
                    ImageKind::Bundle,
                    "ns/bundle",
                    "sha256-0123",
                    true,
                ),
                image(
                    "docker.io/library/busybox:1.36",
                    ImageKind::AdditionalImage,
                    "tools/busybox",
                    "1.36",
                    false,
                ),
                image(
                    "quay.io/cat/index:v4.16",
                    ImageKind::Catalog,
                    "cat/index",
                    "v4.16",
                    false,
                ),
            ],
            blocked: vec![],
        };
        let dir = tempfile::tempdir().unwrap();
        let files = write_all(&plan, "mirror.example:5000/pfx", dir.path(), false).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "working-dir/cluster-resources/idms-oc-mirror.yaml",
                "working-dir/cluster-resources/itms-oc-mirror.yaml",
                "working-dir/cluster-resources/cs-index-v4-16.yaml",
                "working-dir/cluster-resources/cc-index-v4-16.yaml",
                "working-dir/mapping.txt",
            ]
        );
        let read = |i: usize| std::fs::read_to_string(&files[i]).unwrap();
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(
            read(0),
            format!(
                "---
apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  annotations:
    createdBy: olm-registry {version}
  name: idms-operator-0
spec:
  imageDigestMirrors:
  - mirrors:
    - mirror.example:5000/pfx/ns
    source: quay.io/ns
"
            )
        );
        assert_eq!(
            read(1),
            format!(
                "---
apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata:
  annotations:
    createdBy: olm-registry {version}
  name: itms-generic-0
spec:
  imageTagMirrors:
  - mirrors:
    - mirror.example:5000/pfx/tools/busybox
    source: docker.io/library/busybox
"
            )
        );
        assert_eq!(
            read(2),
            format!(
                "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  annotations:
    createdBy: olm-registry {version}
  name: cs-index-v4-16
  namespace: openshift-marketplace
spec:
  image: mirror.example:5000/pfx/cat/index:v4.16
  sourceType: grpc
"
            )
        );
        assert_eq!(
            read(3),
            format!(
                "apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  annotations:
    createdBy: olm-registry {version}
  name: cc-index-v4-16
spec:
  source:
    image:
      ref: mirror.example:5000/pfx/cat/index:v4.16
    type: Image
"
            )
        );
        assert_eq!(
            read(4),
            format!(
                "quay.io/ns/op@{D}=mirror.example:5000/pfx/ns/op@{D}
quay.io/ns/bundle@{D}=mirror.example:5000/pfx/ns/bundle@{D}
docker.io/library/busybox:1.36=mirror.example:5000/pfx/tools/busybox:1.36
quay.io/cat/index:v4.16=mirror.example:5000/pfx/cat/index:v4.16
"
            )
        );

        let icsp = tempfile::tempdir().unwrap();
        let files = write_all(&plan, "m:5000", icsp.path(), true).unwrap();
        assert!(files[0].ends_with("working-dir/cluster-resources/imageContentSourcePolicy.yaml"));
        assert_eq!(
            std::fs::read_to_string(&files[0]).unwrap(),
            format!(
                "---
apiVersion: operator.openshift.io/v1alpha1
kind: ImageContentSourcePolicy
metadata:
  annotations:
    createdBy: olm-registry {version}
  name: operator-0
spec:
  repositoryDigestMirrors:
  - mirrors:
    - m:5000/ns
    source: quay.io/ns
"
            )
        );
    }
}
