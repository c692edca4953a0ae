//! A registry+v1 bundle directory (catalog-formats.md §C.1): `manifests/` and `metadata/`.
use super::csv;
use super::dependencies;
use super::error::indented;
use super::manifests::{self, Manifest};
use super::metadata::{self, Metadata, REGISTRY_V1};
use catalog::Gvk;
use catalog::file::ReadLimits;
use serde_json::Value;
use std::path::Path;

/// A bundle directory as read: its metadata, and its objects in file order, exactly one of
/// which is the CSV.
#[derive(Clone, Debug, PartialEq)]
pub struct BundleDir {
    /// The directory as the user named it, for messages.
    pub(crate) path: String,
    pub metadata: Metadata,
    pub objects: Vec<Manifest>,
    /// Index of the CSV in `objects`.
    pub(crate) csv: usize,
}

/// Everything wrong with one bundle.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid bundle {bundle:?}:{}", indented(problems))]
pub struct BundleError {
    pub bundle: String,
    pub problems: Vec<String>,
}

/// Whether `path` is laid out as a bundle: both `manifests/` and `metadata/` directories.
pub fn is_bundle_dir(path: &Path) -> bool {
    path.join("manifests").is_dir() && path.join("metadata").is_dir()
}

impl BundleDir {
    /// Reads and checks the bundle at `path`: annotations present and naming a package,
    /// media type (if set) `registry+v1`, dependencies well-formed, at least one object and
    /// a CSV, and every CRD the CSV owns present in the bundle. Files are read within
    /// `limits`.
    pub fn read(path: &Path, limits: ReadLimits) -> Result<BundleDir, BundleError> {
        let fail = |problems: Vec<String>| BundleError {
            bundle: path.display().to_string(),
            problems,
        };
        let metadata =
            metadata::read_dir(&path.join("metadata"), limits).map_err(|p| fail(vec![p]))?;
        let objects = manifests::read_objects(&path.join("manifests"), limits)
            .map_err(|e| fail(vec![e.to_string()]))?;
        let mut problems = Vec::new();
        let media_type = &metadata.annotations.media_type;
        if !media_type.is_empty() && media_type != REGISTRY_V1 {
            problems.push(format!(
                "metadata/{}: {} is {media_type:?}; only {REGISTRY_V1:?} bundles can be rendered",
                metadata.annotations.file,
                metadata::MEDIA_TYPE_KEY
            ));
        }
        problems.extend(
            dependencies::check(&metadata.dependencies.items)
                .into_iter()
                .map(|p| format!("metadata/{}: {p}", metadata.dependencies.file)),
        );
        let (objects, csv) = match pick_csv(objects) {
            Ok(found) => found,
            Err(p) => {
                problems.push(p);
                return Err(fail(problems));
            }
        };
        problems.extend(missing_owned_crds(&objects, &objects[csv].object));
        if !problems.is_empty() {
            return Err(fail(problems));
        }
        Ok(BundleDir {
            path: path.display().to_string(),
            metadata,
            objects,
            csv,
        })
    }

    pub fn csv(&self) -> &Value {
        &self.objects[self.csv].object
    }

    pub fn name(&self) -> &str {
        csv::name(self.csv())
    }

    pub fn package(&self) -> &str {
        &self.metadata.annotations.package
    }
}

/// Keeps the first CSV (file order) and drops any later one, as upstream does.
fn pick_csv(objects: Vec<Manifest>) -> Result<(Vec<Manifest>, usize), String> {
    if objects.is_empty() {
        return Err("manifests/: no bundle objects found".to_owned());
    }
    let Some(csv) = objects.iter().position(Manifest::is_csv) else {
        return Err("manifests/: no csv in bundle".to_owned());
    };
    let kept = objects
        .into_iter()
        .enumerate()
        .filter(|(i, m)| {
            let dropped = *i > csv && m.is_csv();
            if dropped {
                tracing::warn!(file = m.file, "ignoring a second ClusterServiceVersion");
            }
            !dropped
        })
        .map(|(_, m)| m)
        .collect();
    Ok((kept, csv))
}

/// One problem per CRD the CSV owns that no CRD object of the bundle serves.
pub(super) fn missing_owned_crds(objects: &[Manifest], csv_object: &Value) -> Vec<String> {
    let mut served: Vec<(String, Gvk)> = Vec::new();
    for m in objects.iter().filter(|m| m.is_crd()) {
        let plural = csv::str_at(&m.object, "/spec/names/plural");
        for gvk in manifests::crd_gvks(&m.object) {
            served.push((format!("{plural}.{}", gvk.group), gvk));
        }
    }
    csv::owned_crds(csv_object)
        .into_iter()
        .filter(|owned| {
            !served.iter().any(|(name, gvk)| {
                *name == owned.name && gvk.version == owned.version && gvk.kind == owned.kind
            })
        })
        .map(|owned| {
            let found: Vec<String> = served
                .iter()
                .map(|(name, gvk)| format!("{name}/{} {}", gvk.version, gvk.kind))
                .collect();
            format!(
                "CSV {} owns CRD {}/{} {}, but no CustomResourceDefinition in manifests/ serves it (found: [{}])",
                csv::name(csv_object),
                owned.name,
                owned.version,
                owned.kind,
                found.join(", ")
            )
        })
        .collect()
}
