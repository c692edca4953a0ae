//! The index schema: the ordered SQL files of `migrations/`, each applied once and recorded
//! in the `schema_migration` table; `PRAGMA user_version` holds the newest applied.
use rusqlite::{Connection, OptionalExtension, params};

/// (version, name, SQL, whether the load writes into what it creates), in the order they
/// apply.
const MIGRATIONS: &[(u32, &str, &str, bool)] = &[
    (
        1,
        "index",
        include_str!("../migrations/0001_index.sql"),
        true,
    ),
    (
        2,
        "lookup_indexes",
        include_str!("../migrations/0002_lookup_indexes.sql"),
        false,
    ),
    (
        3,
        "catalogd_content",
        include_str!("../migrations/0003_catalogd_content.sql"),
        true,
    ),
    (
        4,
        "catalogd_zstd",
        include_str!("../migrations/0004_catalogd_zstd.sql"),
        true,
    ),
    (
        5,
        "catalogd_derived",
        include_str!("../migrations/0005_catalogd_derived.sql"),
        true,
    ),
];

/// The version a complete index has; an index at any other version is rebuilt.
pub(crate) const CURRENT_VERSION: u32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Which migrations to apply.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Those creating what the load writes into. Ingest applies these, loads, then applies
    /// the rest, so that lookup indexes are built once over the loaded rows instead of row by
    /// row.
    Tables,
    /// All of them.
    Complete,
}

/// Applies, in order, every migration of `stage` not applied yet.
pub(crate) fn migrate(conn: &Connection, stage: Stage) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migration (
             version INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    )?;
    for (number, name, sql, tables) in MIGRATIONS {
        if stage == Stage::Tables && !tables {
            continue;
        }
        let applied = conn
            .query_row(
                "SELECT 1 FROM schema_migration WHERE version = ?1",
                [number],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        if applied {
            continue;
        }
        conn.execute_batch(sql)?;
        conn.execute(
            "INSERT INTO schema_migration (version, name) VALUES (?1, ?2)",
            params![number, name],
        )?;
        if *number > version(conn)? {
            conn.pragma_update(None, "user_version", number)?;
        }
    }
    Ok(())
}

pub(crate) fn version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_in_order_and_are_recorded() {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn, Stage::Tables).unwrap();
        assert_eq!(version(&conn).unwrap(), 5);
        migrate(&conn, Stage::Complete).unwrap();
        assert_eq!(version(&conn).unwrap(), CURRENT_VERSION);
        let names: Vec<String> = conn
            .prepare("SELECT name FROM schema_migration ORDER BY version")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            names,
            [
                "index",
                "lookup_indexes",
                "catalogd_content",
                "catalogd_zstd",
                "catalogd_derived"
            ]
        );
        // Applying again is a no-op, not an error.
        migrate(&conn, Stage::Complete).unwrap();
    }
}
