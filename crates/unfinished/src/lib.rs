//! Files and directories this process is still writing, so that a stop before they are done
//! can remove them. A SIGTERM during a load must end the process within its grace period, and
//! the thread doing the load may be stuck in a read that nothing can interrupt; the process
//! exits without waiting for it, and what that thread would have cleaned up on its way out is
//! removed here instead.
use std::path::{Path, PathBuf};
use std::sync::Mutex;

static TRACKED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Keeps `path` on the list until dropped (the owner then has finished with it, or removed it
/// itself).
#[must_use = "the path is untracked as soon as the guard is dropped"]
pub struct Tracked(PathBuf);

pub fn track(path: &Path) -> Tracked {
    TRACKED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(path.to_owned());
    Tracked(path.to_owned())
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut tracked = TRACKED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = tracked.iter().rposition(|p| *p == self.0) {
            tracked.swap_remove(i);
        }
    }
}

/// Removes everything still tracked. Called when the process stops early; the threads that
/// own these paths are abandoned, so a path vanishing under them does no harm.
pub fn remove_all() {
    let tracked = std::mem::take(&mut *TRACKED.lock().unwrap_or_else(|p| p.into_inner()));
    for path in tracked {
        let removed = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
            Err(_) => continue,
        };
        match removed {
            Ok(()) => tracing::info!(path = %path.display(), "removed unfinished work"),
            Err(e) => tracing::warn!(path = %path.display(), "cannot remove unfinished work: {e}"),
        }
    }
}

/// A private temporary directory that is also removed when the process stops early.
pub struct ScratchDir {
    dir: tempfile::TempDir,
    _tracked: Tracked,
}

impl ScratchDir {
    pub fn new(prefix: &str) -> std::io::Result<ScratchDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        let _tracked = track(dir.path());
        Ok(ScratchDir { dir, _tracked })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}
