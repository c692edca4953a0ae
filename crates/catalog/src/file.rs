//! Opening one catalog file. Every reader of catalog directories (the loader, the ingest, the
//! content digest) goes through here, so that they all refuse the same files: anything but a
//! regular file (a FIFO would block the reader for ever, a device would never end), and
//! anything larger than the size cap.
use super::decode::LoadError;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// How much of a catalog's files may be read (`--max-file-size`). Every reader of catalog
/// files is given one: the walk hands it to each file it finds, and bundle directories are
/// read under it too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    /// The largest file read; a larger one is an error naming it.
    pub max_file_size: u64,
}

impl Default for ReadLimits {
    fn default() -> ReadLimits {
        ReadLimits::DEFAULT
    }
}

impl ReadLimits {
    /// 256 MiB files (the commands' `--max-file-size` default): the largest file of the
    /// community catalogs is 3.5 MB and a whole community catalog rendered into one file is
    /// about 21 MB, so real catalogs stay far below it, while a file this size still fits in
    /// memory (decoding holds about twice the file).
    pub const DEFAULT: ReadLimits = ReadLimits {
        max_file_size: 256 << 20,
    };

    /// What is wrong with a file over the cap, for a message that names it.
    pub fn too_large(&self) -> String {
        format!(
            "larger than {} bytes, the most a catalog file may hold (see --max-file-size)",
            self.max_file_size
        )
    }
}

/// A file found by the catalog walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogFile {
    /// The path relative to the catalog root, `/`-separated, as messages, origins and
    /// `.indexignore` patterns see it (bytes that are not UTF-8 shown as U+FFFD).
    pub rel: String,
    /// Where the file is, symbolic links resolved (the walk checked they stay in the root).
    pub(super) path: PathBuf,
    /// What the walk that found it may read.
    pub(super) limits: ReadLimits,
}

impl CatalogFile {
    fn error(&self, message: String) -> LoadError {
        LoadError {
            file: self.rel.clone(),
            line: 0,
            message,
        }
    }

    /// Opens the file if it is a regular file no larger than the cap.
    fn open(&self) -> Result<File, LoadError> {
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        // O_NOFOLLOW: the walk resolved every link; one that appeared since is not followed.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(&self.path)
            .map_err(|e| self.error(format!("read error: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| self.error(format!("read error: {e}")))?;
        let kind = meta.file_type();
        if !kind.is_file() {
            let what = special_kind(&kind);
            return Err(self.error(format!("{what}: only regular files can be catalog files")));
        }
        if meta.len() > self.limits.max_file_size {
            return Err(self.too_large());
        }
        Ok(file)
    }

    fn too_large(&self) -> LoadError {
        self.error(self.limits.too_large())
    }

    /// Hands the file's bytes to `consume` a chunk at a time and returns their count. Never
    /// more than the cap is read, even from a file that grows meanwhile.
    pub fn read_with(&self, mut consume: impl FnMut(&[u8])) -> Result<u64, LoadError> {
        let file = self.open()?;
        let cap = self.limits.max_file_size;
        let mut reader = file.take(cap + 1);
        let mut buf = vec![0u8; 1 << 16];
        let mut len = 0u64;
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => return Ok(len),
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.error(format!("read error: {e}"))),
            };
            len += n as u64;
            if len > cap {
                return Err(self.too_large());
            }
            consume(&buf[..n]);
        }
    }

    /// The whole file, as [`read_with`](Self::read_with) allows.
    pub fn read(&self) -> Result<Vec<u8>, LoadError> {
        let mut data = Vec::new();
        self.read_with(|chunk| data.extend_from_slice(chunk))?;
        Ok(data)
    }
}

/// What a file that is not a regular one is, in words for an error: a pipe or a device would
/// block or never end, so readers refuse them by name.
pub fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}
