//! The archive of mirror-to-disk: one content-addressed OCI image layout (`oci-layout`,
//! `index.json`, `blobs/sha256/…`) holding every image of the plan, each listed in
//! `index.json` under its destination (`<repository>:<tag>`), plus `mirror-plan.json`, the
//! plan that disk-to-mirror follows without reaching any source registry. A later run into
//! the same directory adds only the blobs it lacks and replaces the plan.
use super::error::Error;
use super::plan::Plan;
use image::layout::{Layout, replace_file};
use std::path::Path;

pub(crate) const PLAN_FILE: &str = "mirror-plan.json";

pub(crate) fn create(dir: &Path) -> Result<Layout, Error> {
    Ok(Layout::create(dir)?)
}

pub(crate) fn open(dir: &Path) -> Result<(Layout, Plan), Error> {
    let layout = Layout::open(dir)?;
    let path = dir.join(PLAN_FILE);
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(source) => return Err(Error::NoPlan { path, source }),
    };
    let plan = serde_json::from_slice(&text).map_err(|source| Error::Plan { path, source })?;
    Ok((layout, plan))
}

/// Records the plan once its images are in the layout (whose index.json is on the disk by
/// then); an interrupted write leaves the previous plan.
pub(crate) fn write_plan(dir: &Path, plan: &Plan) -> Result<(), Error> {
    let path = dir.join(PLAN_FILE);
    let text = serde_json::to_vec_pretty(plan).map_err(|source| Error::Plan {
        path: path.clone(),
        source,
    })?;
    Ok(replace_file(&path, &text)?)
}

/// The name an image is listed under in the archive's index.json.
pub(crate) fn ref_name(repository: &str, tag: &str) -> String {
    format!("{repository}:{tag}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ImageKind, PlannedImage};

    #[test]
    fn the_plan_round_trips_and_a_foreign_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        create(dir.path()).unwrap();
        let plan = Plan {
            images: vec![PlannedImage {
                source: "quay.io/ns/op:v1".into(),
                kind: ImageKind::RelatedImage,
                digest: "sha256:00".into(),
                repository: "ns/op".into(),
                tag: "v1".into(),
                by_digest: false,
                platforms: Vec::new(),
                subject: None,
            }],
            blocked: vec![],
        };
        write_plan(dir.path(), &plan).unwrap();
        assert_eq!(open(dir.path()).unwrap().1, plan);
        let other = tempfile::tempdir().unwrap();
        assert!(
            open(other.path())
                .unwrap_err()
                .to_string()
                .contains("not an OCI image layout")
        );
        create(other.path()).unwrap();
        assert!(
            open(other.path())
                .unwrap_err()
                .to_string()
                .contains("mirror-plan.json")
        );
    }
}
