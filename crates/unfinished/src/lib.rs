//! Files and directories a load is still writing, so that a stop before they are done can
//! remove them. A SIGTERM during a load must end the process within its grace period, and
//! the thread doing the load may be stuck in a read that nothing can interrupt; the process
//! exits without waiting for it, and what that thread would have cleaned up on its way out is
//! removed here instead.
//!
//! The list is a value, not a process-wide one: whoever may stop early (the server) makes an
//! [`Unfinished`], hands it to the code that writes, and calls [`Unfinished::remove_all`] when
//! it stops. A command that never stops early passes a handle of its own that nobody empties.
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A shared list of the paths being written; clones are handles to the same list.
#[derive(Clone, Debug, Default)]
pub struct Unfinished(Arc<Mutex<Vec<PathBuf>>>);

impl Unfinished {
    pub fn new() -> Unfinished {
        Unfinished::default()
    }

    /// Keeps `path` on the list until the guard is dropped (the owner then has finished
    /// with it, or removed it itself).
    pub fn track(&self, path: &Path) -> Tracked {
        self.paths().push(path.to_owned());
        Tracked {
            list: self.clone(),
            path: path.to_owned(),
        }
    }

    /// Removes everything still tracked. Called when a load is abandoned; the threads that
    /// own these paths are left running, so a path vanishing under them does no harm.
    pub fn remove_all(&self) {
        let tracked = std::mem::take(&mut *self.paths());
        for path in tracked {
            let removed = match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path),
                Ok(_) => std::fs::remove_file(&path),
                Err(_) => continue,
            };
            match removed {
                Ok(()) => tracing::info!(path = %path.display(), "removed unfinished work"),
                Err(e) => {
                    tracing::warn!(path = %path.display(), "cannot remove unfinished work: {e}")
                }
            }
        }
    }

    /// The list, even if a thread panicked while holding it: a path list cannot be left
    /// half-updated by a push or a removal.
    fn paths(&self) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A path on an [`Unfinished`] list, taken off when dropped.
#[must_use = "the path is untracked as soon as the guard is dropped"]
pub struct Tracked {
    list: Unfinished,
    path: PathBuf,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut tracked = self.list.paths();
        if let Some(i) = tracked.iter().rposition(|p| *p == self.path) {
            tracked.swap_remove(i);
        }
    }
}

/// A private temporary directory that is also removed when its list is emptied early.
pub struct ScratchDir {
    dir: tempfile::TempDir,
    _tracked: Tracked,
}

impl ScratchDir {
    pub fn new(unfinished: &Unfinished, prefix: &str) -> std::io::Result<ScratchDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        let _tracked = unfinished.track(dir.path());
        Ok(ScratchDir { dir, _tracked })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_all_takes_what_is_still_tracked_and_only_from_its_own_list() {
        let (ours, theirs) = (Unfinished::new(), Unfinished::new());
        let kept = ScratchDir::new(&theirs, "unfinished-test-").unwrap();
        let abandoned = ScratchDir::new(&ours, "unfinished-test-").unwrap();
        let done = ScratchDir::new(&ours, "unfinished-test-").unwrap();
        let done_path = done.path().to_owned();
        drop(done);
        let clone = ours.clone();
        clone.remove_all();
        assert!(!abandoned.path().exists());
        assert!(kept.path().exists());
        assert!(!done_path.exists());
        assert!(ours.paths().is_empty());
        assert_eq!(theirs.paths().len(), 1);
    }
}
