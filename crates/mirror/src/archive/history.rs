//! The record of the tar archives written into a directory, `working-dir/history.json` beside
//! the segments (as oc-mirror keeps `working-dir/.history`): each archive's id and the blobs it
//! carried. The next run leaves those blobs out, so its archive carries only what the earlier
//! ones lack. An archive is recorded once all its segments are on the disk; deleting the file
//! makes the next archive a full one again.
use crate::error::Error;
use image::layout::replace_file;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Serialize, Deserialize, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct History {
    archives: Vec<Record>,
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Record {
    id: String,
    segments: u32,
    /// Every blob the archive carried besides manifests (which every archive carries).
    blobs: Vec<String>,
}

fn path(dir: &Path) -> PathBuf {
    dir.join(super::WORKING_DIR).join("history.json")
}

impl History {
    /// The record kept in `dir`, empty when there is none yet.
    pub(crate) fn read(dir: &Path) -> Result<History, Error> {
        let path = path(dir);
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(History::default()),
            Err(e) => return Err(Error::io(path.display())(e)),
        };
        serde_json::from_slice(&text).map_err(|e| Error::Archive {
            path,
            problem: format!(
                "not a record of archives written ({e}); delete it to write a full archive"
            ),
        })
    }

    /// Every blob an earlier archive carried.
    pub(crate) fn blobs(&self) -> BTreeSet<&str> {
        self.archives
            .iter()
            .flat_map(|a| a.blobs.iter().map(String::as_str))
            .collect()
    }

    /// The id of the last archive written.
    pub(crate) fn last(&self) -> Option<&str> {
        self.archives.last().map(|a| a.id.as_str())
    }

    /// Adds an archive once its segments are on the disk, and writes the record.
    pub(crate) fn record(
        &mut self,
        dir: &Path,
        id: &str,
        segments: u32,
        blobs: Vec<String>,
    ) -> Result<(), Error> {
        self.archives.push(Record {
            id: id.to_owned(),
            segments,
            blobs,
        });
        let path = path(dir);
        let parent = path.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent).map_err(Error::io(parent.display()))?;
        let text = serde_json::to_vec_pretty(self).map_err(|e| Error::Archive {
            path: path.clone(),
            problem: e.to_string(),
        })?;
        Ok(replace_file(&path, &text)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_accumulate_and_a_damaged_record_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::read(dir.path()).unwrap();
        assert_eq!(history.last(), None);
        history
            .record(dir.path(), "a1", 2, vec!["sha256:1".into()])
            .unwrap();
        let mut history = History::read(dir.path()).unwrap();
        history
            .record(dir.path(), "b2", 1, vec!["sha256:2".into()])
            .unwrap();
        let history = History::read(dir.path()).unwrap();
        assert_eq!(history.last(), Some("b2"));
        assert_eq!(history.blobs(), BTreeSet::from(["sha256:1", "sha256:2"]));
        std::fs::write(path(dir.path()), "{").unwrap();
        let err = History::read(dir.path()).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "{}: not a record of archives written (",
                path(dir.path()).display()
            )),
            "{err}"
        );
    }
}
