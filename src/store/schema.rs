//! The index schema: the ordered SQL files of `migrations/`, applied in order and recorded
//! both in `PRAGMA user_version` and in the `schema_migration` table.
use rusqlite::{Connection, params};

/// (version, name, SQL), in the order they apply.
const MIGRATIONS: &[(u32, &str, &str)] = &[
    (1, "index", include_str!("../../migrations/0001_index.sql")),
    (
        2,
        "lookup_indexes",
        include_str!("../../migrations/0002_lookup_indexes.sql"),
    ),
];

/// The version a complete index has; an index at any other version is rebuilt.
pub const CURRENT_VERSION: u32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

/// Applies, in order, every migration newer than the database's version up to `target`.
/// Ingest stops after the tables (version 1), loads, then applies the rest so that indexes are
/// built once over the loaded rows instead of row by row.
pub fn migrate(conn: &Connection, target: u32) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migration (
             version INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    )?;
    let current: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    for (version, name, sql) in MIGRATIONS {
        if *version <= current || *version > target {
            continue;
        }
        conn.execute_batch(sql)?;
        conn.execute(
            "INSERT INTO schema_migration (version, name) VALUES (?1, ?2)",
            params![version, name],
        )?;
        conn.pragma_update(None, "user_version", version)?;
    }
    Ok(())
}

pub fn version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_in_order_and_are_recorded() {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn, 1).unwrap();
        assert_eq!(version(&conn).unwrap(), 1);
        migrate(&conn, CURRENT_VERSION).unwrap();
        assert_eq!(version(&conn).unwrap(), CURRENT_VERSION);
        let names: Vec<String> = conn
            .prepare("SELECT name FROM schema_migration ORDER BY version")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(names, ["index", "lookup_indexes"]);
        // Applying again is a no-op, not an error.
        migrate(&conn, CURRENT_VERSION).unwrap();
    }
}
