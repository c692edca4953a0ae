//! The serving index: a SQLite file built from a catalog in one transaction, then opened
//! read-only by the server. Responses are stored encoded (see `encode`), so serving is a
//! lookup plus a write.
pub mod cache;
mod cached_reads;
pub mod content;
mod digest;
mod encode;
pub mod ingest;
pub mod query;
mod schema;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

pub use query::QueryError;

/// The target of spans only traces record (the command's telemetry): logs leave it out, so
/// they cost nothing when tracing is off. Every crate that opens such spans uses this one.
pub const SPAN_TARGET: &str = "olm_registry::span";

/// How many read connections serve requests at once. Each connection keeps a small page
/// cache (filled only as it is used); more connections than cores only adds memory.
pub const MAX_CONNECTIONS: usize = 4;

/// Per-connection page cache, in KiB. Kept small so that memory stays flat however large the
/// catalog is: the OS page cache does the real caching.
const PAGE_CACHE_KIB: i64 = 2048;

/// The most a query run by [`Store::try_cached`] may read: a point lookup of a bundle of up to
/// about this size (most are tens of KiB) is answered without leaving the calling thread; a
/// larger one goes to a blocking thread, so that no caller holds an async worker for longer
/// than copying this much from memory takes (tens of microseconds).
pub const CACHED_READ_BUDGET: usize = 256 << 10;

/// The `info` key an index built with the catalogd HTTP API's content records.
const CATALOGD_CONTENT_KEY: &str = "catalogd_content";

/// An open, complete index.
pub struct Store {
    path: PathBuf,
    digest: String,
    catalogd_content: bool,
    /// Whether the connections read through [`cached_reads`], so that
    /// [`Store::try_cached`] can run queries.
    cached_reads: bool,
    /// Connections not in use; all `MAX_CONNECTIONS` are opened with the store.
    idle: Mutex<Vec<Connection>>,
    returned: Condvar,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct OpenError(pub String);

impl Store {
    /// Opens an index and checks that it is complete and of the current format; anything
    /// else (a foreign file, a truncated or corrupt one, an older schema) is an error, and
    /// the caller rebuilds.
    ///
    /// Another server sharing the cache directory may rename a new index over `path` at any
    /// moment. Every connection must read the file that was checked, so all of them are
    /// opened here and the path is checked to name the same file before and after; a file
    /// replaced in between is opened again.
    pub(crate) fn open(path: &Path) -> Result<Store, OpenError> {
        let fail = |e: &dyn std::fmt::Display| OpenError(format!("{}: {e}", path.display()));
        for _ in 0..3 {
            let before = identity(path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => fail(&"no such index file"),
                _ => fail(&e),
            })?;
            let cached_reads = cached_reads::register();
            let connections = (0..MAX_CONNECTIONS)
                .map(|_| open_read_only(path, cached_reads))
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(|e| fail(&e))?;
            if identity(path).map_err(|e| fail(&e))? != before {
                continue;
            }
            let digest = check(&connections[0], before.2).map_err(|e| fail(&e))?;
            let catalogd_content =
                has_info(&connections[0], CATALOGD_CONTENT_KEY).map_err(|e| fail(&e))?;
            return Ok(Store {
                path: path.to_owned(),
                digest,
                catalogd_content,
                cached_reads,
                idle: Mutex::new(connections),
                returned: Condvar::new(),
            });
        }
        Err(fail(&"the index kept being replaced while it was opened"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the index holds what the catalogd HTTP API serves.
    pub(crate) fn has_catalogd_content(&self) -> bool {
        self.catalogd_content
    }

    /// The digest of the catalog this index was built from.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Runs `f` with a read connection, waiting for one when all are busy. Blocking: call it
    /// from a blocking thread.
    pub fn with_conn<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, QueryError>,
    ) -> Result<T, QueryError> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let conn = loop {
            match idle.pop() {
                Some(conn) => break conn,
                None => idle = self.returned.wait(idle).unwrap_or_else(|p| p.into_inner()),
            }
        };
        drop(idle);
        let result = f(&conn);
        self.give_back(conn);
        result
    }

    fn give_back(&self, conn: Connection) {
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(conn);
        self.returned.notify_one();
    }

    /// Runs `f` at once if a connection is idle and everything it reads is in the OS page
    /// cache, reading at most `budget` bytes of the file; never waits for a connection or the
    /// disk, so it may run on an async worker. `None` when it could not (no idle connection,
    /// a read that would have waited or gone over budget, or reads that cannot be made
    /// without waiting on this platform): then run `f` with [`Store::with_conn`] on a blocking
    /// thread. `f` must be a lookup, whose work apart from reading is small.
    pub fn try_cached<T>(
        &self,
        budget: usize,
        f: impl FnOnce(&Connection) -> Result<T, QueryError>,
    ) -> Option<Result<T, QueryError>> {
        if !self.cached_reads {
            return None;
        }
        let conn = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()?;
        let result = cached_reads::within(budget, || f(&conn));
        self.give_back(conn);
        result
    }
}

/// Which file a path names (device, inode) and its length.
fn identity(path: &Path) -> std::io::Result<(u64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok((meta.dev(), meta.ino(), meta.len()))
}

/// Checks an opened index of `file_len` bytes, returning the digest it records.
fn check(conn: &Connection, file_len: u64) -> Result<String, String> {
    let version = schema::version(conn).map_err(|e| e.to_string())?;
    if version != schema::CURRENT_VERSION {
        return Err(format!(
            "index schema version {version}, expected {}",
            schema::CURRENT_VERSION
        ));
    }
    // A truncated file opens fine; make SQLite read its last page to notice.
    let (pages, size): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT page_count FROM pragma_page_count), (SELECT page_size FROM pragma_page_size)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| e.to_string())?;
    if pages * size != file_len as i64 {
        return Err(format!(
            "index file is {file_len} bytes but its header says {}",
            pages * size
        ));
    }
    conn.query_row("SELECT value FROM info WHERE key = 'digest'", [], |r| {
        r.get(0)
    })
    .map_err(|e| e.to_string())
}

fn has_info(conn: &Connection, key: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM info WHERE key = ?1)",
        [key],
        |r| r.get(0),
    )
}

/// Opens an index for serving. The file never changes once built (a rebuild writes a new
/// file and renames it over), so it is opened `immutable`: no file locks and no change checks
/// on every query. The query planner is told to keep its plans, so that binding new values
/// does not recompile cached statements (it otherwise does, with STAT4 compiled in).
/// With `cached_reads`, reads go through [`cached_reads`]' VFS.
fn open_read_only(path: &Path, cached_reads: bool) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let uri = immutable_uri(path);
    let conn = if cached_reads {
        Connection::open_with_flags_and_vfs(uri, flags, cached_reads::NAME)?
    } else {
        Connection::open_with_flags(uri, flags)?
    };
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' | '?' | '#' => uri.push_str(&format!("%{:02X}", c as u32)),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immutable_uri_escapes_what_uris_treat_specially() {
        assert_eq!(
            immutable_uri(Path::new("/tmp/a b/index.db")),
            "file:/tmp/a b/index.db?immutable=1"
        );
        assert_eq!(
            immutable_uri(Path::new("/tmp/50%?#/i.db")),
            "file:/tmp/50%25%3F%23/i.db?immutable=1"
        );
    }

    #[test]
    fn a_file_that_is_not_an_index_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        let missing = Store::open(&path).err().unwrap().0;
        assert!(missing.ends_with("no such index file"), "{missing}");
        std::fs::write(&path, b"not a database at all, just text").unwrap();
        assert!(Store::open(&path).is_err());
        // A valid SQLite file of another schema.
        std::fs::remove_file(&path).unwrap();
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE t (x)")
            .unwrap();
        let err = Store::open(&path).err().unwrap().0;
        assert!(
            err.ends_with(&format!(
                "index schema version 0, expected {}",
                schema::CURRENT_VERSION
            )),
            "{err}"
        );
    }
}
