//! The serving index: a SQLite file built from a catalog in one transaction, then opened
//! read-only by the server. Responses are stored encoded (see `encode`), so serving is a
//! lookup plus a write.
pub mod cache;
pub mod digest;
mod encode;
pub mod ingest;
pub mod query;
pub mod schema;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

pub use query::QueryError;

/// How many read connections serve requests at once. Each connection keeps a small page
/// cache; more connections than cores only adds memory.
pub const MAX_CONNECTIONS: usize = 4;

/// Per-connection page cache, in KiB. Kept small so that memory stays flat however large the
/// catalog is: the OS page cache does the real caching.
const PAGE_CACHE_KIB: i64 = 2048;

/// An open, complete index.
pub struct Store {
    path: PathBuf,
    digest: String,
    idle: Mutex<Pool>,
    returned: Condvar,
}

struct Pool {
    connections: Vec<Connection>,
    open: usize,
}

#[derive(Debug)]
pub struct OpenError(pub String);

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OpenError {}

impl Store {
    /// Opens an index and checks that it is complete and of the current format; anything
    /// else (a foreign file, a truncated or corrupt one, an older schema) is an error, and
    /// the caller rebuilds.
    pub fn open(path: &Path) -> Result<Store, OpenError> {
        let fail = |e: &dyn std::fmt::Display| OpenError(format!("{}: {e}", path.display()));
        if !path.is_file() {
            return Err(OpenError(format!("{}: no such index file", path.display())));
        }
        let conn = open_read_only(path).map_err(|e| fail(&e))?;
        let version = schema::version(&conn).map_err(|e| fail(&e))?;
        if version != schema::CURRENT_VERSION {
            return Err(fail(&format!(
                "index schema version {version}, expected {}",
                schema::CURRENT_VERSION
            )));
        }
        // A truncated file opens fine; make SQLite read its last page to notice.
        let (pages, size): (i64, i64) = conn
            .query_row(
                "SELECT (SELECT page_count FROM pragma_page_count), (SELECT page_size FROM pragma_page_size)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| fail(&e))?;
        let file_len = std::fs::metadata(path).map_err(|e| fail(&e))?.len() as i64;
        if pages * size != file_len {
            return Err(fail(&format!(
                "index file is {file_len} bytes but its header says {}",
                pages * size
            )));
        }
        let digest: String = conn
            .query_row("SELECT value FROM info WHERE key = 'digest'", [], |r| {
                r.get(0)
            })
            .map_err(|e| fail(&e))?;
        Ok(Store {
            path: path.to_owned(),
            digest,
            idle: Mutex::new(Pool {
                connections: vec![conn],
                open: 1,
            }),
            returned: Condvar::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
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
        let conn = self.take()?;
        let result = f(&conn);
        let mut pool = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        pool.connections.push(conn);
        drop(pool);
        self.returned.notify_one();
        result
    }

    fn take(&self) -> Result<Connection, QueryError> {
        let mut pool = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(conn) = pool.connections.pop() {
                return Ok(conn);
            }
            if pool.open < MAX_CONNECTIONS {
                pool.open += 1;
                drop(pool);
                return open_read_only(&self.path).map_err(|e| {
                    self.idle.lock().unwrap_or_else(|p| p.into_inner()).open -= 1;
                    QueryError::from(e)
                });
            }
            pool = self.returned.wait(pool).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Opens an index for serving. The file never changes once built (a rebuild writes a new
/// file and renames it over), so it is opened `immutable`: no file locks and no change checks
/// on every query. The query planner is told to keep its plans, so that binding new values
/// does not recompile cached statements (it otherwise does, with STAT4 compiled in).
fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        immutable_uri(path),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )?;
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
