//! The catalog as catalogd's HTTP API (OLM v1) serves it: every document, in walk order, as
//! one line of compact key-sorted JSON (catalogd-http.md §2), stored at ingest with its byte
//! offset in `/api/v1/all` and its `schema`, `package` and `name` for `/api/v1/metas`. A
//! request reads stored lines; nothing is re-encoded and nothing scans the catalog for a
//! filter.
use super::QueryError;
use crate::catalog::json::write_canonical;
use rusqlite::{Connection, Statement, params};
use serde_json::Value;

/// One document as catalogd stores it.
pub struct Line {
    /// The canonical JSON text and its `\n`.
    text: String,
    schema: String,
    package: String,
    name: String,
}

impl Line {
    /// The line of a decoded document. `schema`, `package` and `name` are found as the
    /// decoder finds them (case-insensitively); the text keeps the source's spelling of keys.
    pub fn of(doc: &Value) -> Line {
        let mut text = String::new();
        write_canonical(doc, &mut text);
        text.push('\n');
        let field = |key: &str| {
            doc.as_object()
                .and_then(|map| {
                    map.iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(key))
                        .and_then(|(_, v)| v.as_str())
                })
                .unwrap_or_default()
                .to_owned()
        };
        Line {
            schema: field("schema"),
            package: field("package"),
            name: field("name"),
            text,
        }
    }
}

/// Appends lines in walk order during an ingest.
pub(super) struct ContentWriter<'c> {
    insert: Statement<'c>,
    offset: i64,
}

impl<'c> ContentWriter<'c> {
    pub(super) fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(ContentWriter {
            insert: conn.prepare(
                "INSERT INTO content_line (offset, schema, package, name, line) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?,
            offset: 0,
        })
    }

    pub(super) fn add(&mut self, line: &Line) -> rusqlite::Result<()> {
        self.insert.execute(params![
            self.offset,
            line.schema,
            line.package,
            line.name,
            line.text.as_bytes()
        ])?;
        self.offset += line.text.len() as i64;
        Ok(())
    }

    /// The length of `/api/v1/all`, and when it was built (what `Last-Modified` says, kept
    /// with the index so that a warm start says the same).
    pub(super) fn finish(self, conn: &Connection) -> rusqlite::Result<()> {
        let built = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut info = conn.prepare("INSERT INTO info (key, value) VALUES (?1, ?2)")?;
        info.execute(params![CONTENT_BYTES, self.offset.to_string()])?;
        info.execute(params![BUILT_AT, built.to_string()])?;
        Ok(())
    }
}

const CONTENT_BYTES: &str = "content_bytes";
const BUILT_AT: &str = "built_at";

fn blob<'r>(row: &'r rusqlite::Row<'_>) -> rusqlite::Result<&'r [u8]> {
    row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)
}

/// What every response about the content says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentFacts {
    /// The length of `/api/v1/all`.
    pub length: u64,
    /// When the index was built, in seconds since the Unix epoch.
    pub built_at: u64,
}

pub fn facts(conn: &Connection) -> Result<ContentFacts, QueryError> {
    let number = |key: &str| -> Result<u64, QueryError> {
        let text: String = conn
            .query_row("SELECT value FROM info WHERE key = ?1", [key], |r| r.get(0))
            .map_err(|e| QueryError::Storage(format!("index info {key}: {e}")))?;
        text.parse()
            .map_err(|_| QueryError::Storage(format!("index info {key}: not a number: {text:?}")))
    };
    Ok(ContentFacts {
        length: number(CONTENT_BYTES)?,
        built_at: number(BUILT_AT)?,
    })
}

/// Appends to `out` the bytes of `/api/v1/all` from `from` up to `to` (exclusive), stopping
/// after the line that brings `out` to `budget` bytes or more. Returns how many bytes it
/// appended; fewer than asked for only when the budget ran out.
pub fn read_range(
    conn: &Connection,
    from: u64,
    to: u64,
    budget: usize,
    out: &mut Vec<u8>,
) -> Result<usize, QueryError> {
    let start = out.len();
    // The line holding `from` starts at the greatest offset not after it.
    let mut stmt = conn.prepare_cached(
        "SELECT offset, line FROM content_line
         WHERE offset >= (SELECT coalesce(max(offset), 0) FROM content_line WHERE offset <= ?1)
           AND offset < ?2
         ORDER BY offset",
    )?;
    let mut rows = stmt.query(params![from as i64, to as i64])?;
    while let Some(row) = rows.next()? {
        let offset = row.get::<_, i64>(0)? as u64;
        let line = blob(row)?;
        let end = offset + line.len() as u64;
        let lo = from.saturating_sub(offset) as usize;
        let hi = (end.min(to) - offset) as usize;
        if lo < hi {
            out.extend_from_slice(&line[lo..hi]);
        }
        if out.len() - start >= budget {
            break;
        }
    }
    Ok(out.len() - start)
}

/// A `/api/v1/metas` filter: the documents whose fields equal every value given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetasFilter {
    pub schema: Option<String>,
    pub package: Option<String>,
    pub name: Option<String>,
}

impl MetasFilter {
    pub fn is_empty(&self) -> bool {
        self.schema.is_none() && self.package.is_none() && self.name.is_none()
    }
}

/// Appends to `out` the lines matching `filter` after offset `after` (exclusive), in offset
/// order, stopping after the line that brings `out` to `budget` bytes or more. Returns the
/// offset of the last line appended, or `None` when there are no more.
pub fn read_metas(
    conn: &Connection,
    filter: &MetasFilter,
    after: i64,
    budget: usize,
    out: &mut Vec<u8>,
) -> Result<Option<i64>, QueryError> {
    let start = out.len();
    let fields = [
        ("schema", &filter.schema),
        ("package", &filter.package),
        ("name", &filter.name),
    ];
    // One statement per combination of filters, so that each can use its index (a
    // `?1 IS NULL OR schema = ?1` form could use none).
    let mut sql = String::from("SELECT offset, line FROM content_line WHERE offset > ?1");
    let mut values: Vec<&str> = Vec::new();
    for (column, value) in fields {
        if let Some(value) = value {
            values.push(value);
            sql.push_str(&format!(" AND {column} = ?{}", values.len() + 1));
        }
    }
    sql.push_str(" ORDER BY offset");
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut bound: Vec<&dyn rusqlite::ToSql> = vec![&after];
    bound.extend(values.iter().map(|v| v as &dyn rusqlite::ToSql));
    let mut rows = stmt.query(bound.as_slice())?;
    let mut last = None;
    while let Some(row) = rows.next()? {
        last = Some(row.get::<_, i64>(0)?);
        out.extend_from_slice(blob(row)?);
        if out.len() - start >= budget {
            break;
        }
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::{Stage, migrate};

    fn store(docs: &[Value]) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn, Stage::Complete).unwrap();
        let mut writer = ContentWriter::new(&conn).unwrap();
        for doc in docs {
            writer.add(&Line::of(doc)).unwrap();
        }
        writer.finish(&conn).unwrap();
        conn
    }

    #[test]
    fn ranges_cross_lines_and_stop_at_the_budget() {
        let conn = store(&[
            serde_json::json!({"schema": "a", "name": "x"}),
            serde_json::json!({"Schema": "b", "package": "p", "z": "<&>"}),
        ]);
        let all = "{\"name\":\"x\",\"schema\":\"a\"}\n{\"Schema\":\"b\",\"package\":\"p\",\"z\":\"<&>\"}\n";
        let facts = facts(&conn).unwrap();
        assert_eq!(facts.length, all.len() as u64);
        let mut out = Vec::new();
        assert_eq!(
            read_range(&conn, 0, facts.length, 1 << 20, &mut out).unwrap(),
            all.len()
        );
        assert_eq!(out, all.as_bytes());
        out.clear();
        read_range(&conn, 20, 40, 1 << 20, &mut out).unwrap();
        assert_eq!(out, &all.as_bytes()[20..40]);
        // A budget of one byte still appends the whole first line (from where it starts).
        out.clear();
        let first_end = all.find('\n').unwrap() + 1;
        assert_eq!(
            read_range(&conn, 3, facts.length, 1, &mut out).unwrap(),
            first_end - 3
        );
        assert_eq!(out, &all.as_bytes()[3..first_end]);
        out.clear();
        assert_eq!(
            read_range(&conn, facts.length, facts.length, 1, &mut out).unwrap(),
            0
        );
    }

    #[test]
    fn metas_filters_are_anded_and_case_insensitive_keys_are_found() {
        let conn = store(&[
            serde_json::json!({"schema": "olm.package", "name": "p"}),
            serde_json::json!({"Schema": "olm.channel", "PACKAGE": "p", "name": "s"}),
            serde_json::json!({"schema": "olm.bundle", "package": "p", "name": "b"}),
        ]);
        let query = |filter: MetasFilter| {
            let mut out = Vec::new();
            read_metas(&conn, &filter, -1, 1 << 20, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            query(MetasFilter {
                package: Some("p".into()),
                ..Default::default()
            }),
            "{\"PACKAGE\":\"p\",\"Schema\":\"olm.channel\",\"name\":\"s\"}\n{\"name\":\"b\",\"package\":\"p\",\"schema\":\"olm.bundle\"}\n"
        );
        assert_eq!(
            query(MetasFilter {
                schema: Some("olm.package".into()),
                name: Some("p".into()),
                ..Default::default()
            }),
            "{\"name\":\"p\",\"schema\":\"olm.package\"}\n"
        );
        assert_eq!(
            query(MetasFilter {
                schema: Some("olm.package".into()),
                package: Some("p".into()),
                ..Default::default()
            }),
            ""
        );
    }
}
