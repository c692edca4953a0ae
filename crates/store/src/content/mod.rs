//! The catalog as catalogd's HTTP API (OLM v1) serves it: every document, in walk order, as
//! one line of compact key-sorted JSON (catalogd-http.md §2), stored at ingest with its byte
//! offset in `/api/v1/all` and its `schema`, `package` and `name` for `/api/v1/metas`. A line is
//! stored once: the base64 of its bundle's manifests, which the gRPC index holds decoded, is
//! left out of it and encoded again when it is read ([`line`], [`stored`]). Nothing scans the
//! catalog for a filter, and nothing is stored compressed: responses are compressed as they are
//! sent.
use super::QueryError;
use rusqlite::{Connection, params};
use stored::{COLUMNS, MANIFESTS, StoredLine};

mod base64;
mod line;
mod stored;
mod write;

pub(crate) use line::Line;
pub(crate) use write::ContentWriter;

const CONTENT_BYTES: &str = "content_bytes";
const BUILT_AT: &str = "built_at";

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
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT c.offset, {COLUMNS} FROM content_line c {MANIFESTS}
         WHERE c.offset >= (SELECT coalesce(max(offset), 0) FROM content_line WHERE offset <= ?1)
           AND c.offset < ?2
         ORDER BY c.offset"
    ))?;
    let mut rows = stmt.query(params![from as i64, to as i64])?;
    while let Some(row) = rows.next()? {
        let offset = row.get::<_, i64>(0)? as u64;
        let line = StoredLine::read(row, 1)?;
        let end = offset + line.len() as u64;
        let lo = from.saturating_sub(offset) as usize;
        let hi = (end.min(to) - offset) as usize;
        line.append(lo, hi, out);
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

/// The `WHERE` conditions of `filter` after `first` (the first of the filter's placeholders
/// is `?{first + 1}`), and the values they bind, in order. One statement per combination of
/// filters, so that each can use its index (a `?1 IS NULL OR schema = ?1` form could use none).
fn filter_sql(filter: &MetasFilter, first: usize) -> (String, Vec<&str>) {
    let fields = [
        ("schema", &filter.schema),
        ("package", &filter.package),
        ("name", &filter.name),
    ];
    let mut sql = String::new();
    let mut values: Vec<&str> = Vec::new();
    for (column, value) in fields {
        if let Some(value) = value {
            values.push(value);
            sql.push_str(&format!(" AND c.{column} = ?{}", first + values.len()));
        }
    }
    (sql, values)
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
    let (conditions, values) = filter_sql(filter, 1);
    let sql = format!(
        "SELECT c.offset, {COLUMNS} FROM content_line c {MANIFESTS} WHERE c.offset > ?1{conditions} ORDER BY c.offset"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut bound: Vec<&dyn rusqlite::ToSql> = vec![&after];
    bound.extend(values.iter().map(|v| v as &dyn rusqlite::ToSql));
    let mut rows = stmt.query(bound.as_slice())?;
    let mut last = None;
    while let Some(row) = rows.next()? {
        last = Some(row.get::<_, i64>(0)?);
        StoredLine::read(row, 1)?.append_all(out);
        if out.len() - start >= budget {
            break;
        }
    }
    Ok(last)
}

/// What [`documents`] calls with each document (its `schema` and its text); it answers whether
/// to go on.
pub type EachDocument<'a> = dyn FnMut(&str, &[u8]) -> Result<bool, QueryError> + 'a;

/// The documents matching `filter`, in catalog order: skips the first `skip` of them, then
/// calls `each` with the `schema` and the canonical JSON text (with its `\n`) of each until
/// `limit` have been given or `each` returns `false`. The one way documents are read one by
/// one (GraphQL's pages and its schema derivation), so that how lines are stored is known
/// here only.
pub fn documents(
    conn: &Connection,
    filter: &MetasFilter,
    skip: u64,
    limit: u64,
    each: &mut EachDocument<'_>,
) -> Result<(), QueryError> {
    let (conditions, values) = filter_sql(filter, 2);
    // The page is chosen first, from the filter's index alone: joined in one query, the rows
    // skipped by OFFSET had their manifests read too (216 ms instead of 4 for a page deep in
    // the 8,000-bundle catalog).
    let sql = format!(
        "SELECT c.schema, {COLUMNS} FROM
           (SELECT c.offset FROM content_line c WHERE 1{conditions} ORDER BY c.offset LIMIT ?1 OFFSET ?2) AS page
           JOIN content_line c ON c.offset = page.offset {MANIFESTS}
         ORDER BY c.offset"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let (limit, skip) = (
        i64::try_from(limit).unwrap_or(i64::MAX),
        i64::try_from(skip).unwrap_or(i64::MAX),
    );
    let mut bound: Vec<&dyn rusqlite::ToSql> = vec![&limit, &skip];
    bound.extend(values.iter().map(|v| v as &dyn rusqlite::ToSql));
    let mut rows = stmt.query(bound.as_slice())?;
    let mut text = Vec::new();
    while let Some(row) = rows.next()? {
        let schema = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        text.clear();
        StoredLine::read(row, 1)?.append_all(&mut text);
        if !each(schema, &text)? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Stage, migrate};
    use serde_json::Value;

    fn store(docs: &[Value]) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn, Stage::Complete).unwrap();
        let mut writer = ContentWriter::new(&conn).unwrap();
        for doc in docs {
            writer.add(&Line::of(doc), None).unwrap();
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

    #[test]
    fn documents_are_paged_in_catalog_order() {
        let conn = store(&[
            serde_json::json!({"schema": "olm.package", "name": "p"}),
            serde_json::json!({"schema": "olm.bundle", "package": "p", "name": "b1"}),
            serde_json::json!({"name": "no schema"}),
            serde_json::json!({"schema": "olm.bundle", "package": "p", "name": "b2"}),
            serde_json::json!({"schema": "olm.bundle", "package": "q", "name": "b3"}),
        ]);
        let read = |filter: &MetasFilter, skip, limit, stop_after: usize| {
            let mut seen = Vec::new();
            documents(&conn, filter, skip, limit, &mut |schema, line| {
                seen.push(format!(
                    "{schema} {}",
                    String::from_utf8_lossy(line).trim_end()
                ));
                Ok(seen.len() < stop_after)
            })
            .unwrap();
            seen
        };
        let bundles = MetasFilter {
            schema: Some("olm.bundle".into()),
            ..Default::default()
        };
        assert_eq!(
            read(&bundles, 1, 5, usize::MAX),
            [
                "olm.bundle {\"name\":\"b2\",\"package\":\"p\",\"schema\":\"olm.bundle\"}",
                "olm.bundle {\"name\":\"b3\",\"package\":\"q\",\"schema\":\"olm.bundle\"}"
            ]
        );
        assert_eq!(read(&bundles, 0, 1, usize::MAX).len(), 1);
        assert_eq!(read(&bundles, 3, 100, usize::MAX).len(), 0);
        let all = read(&MetasFilter::default(), 0, u64::MAX, usize::MAX);
        assert_eq!(all.len(), 5);
        assert_eq!(all[2], " {\"name\":\"no schema\"}");
        assert_eq!(read(&MetasFilter::default(), 0, u64::MAX, 2).len(), 2);
        let p_bundles = MetasFilter {
            package: Some("p".into()),
            ..bundles
        };
        assert_eq!(read(&p_bundles, 0, 100, usize::MAX).len(), 2);
    }

    /// A catalog whose manifests' base64 is written every way a source may write it, built
    /// by the real ingest: every line reads back as its canonical text byte for byte, whole,
    /// in any range, through metas and through `documents`, and only a text that encoding the
    /// stored manifest gives back exactly is left out of the stored line.
    #[test]
    fn derived_lines_read_back_byte_for_byte() {
        use ::base64::Engine;
        use ::base64::engine::general_purpose::STANDARD as B64;
        let manifest = |n: usize| {
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm{n}"}},"data":{{"a":"<&>\u2028{}"}}}}"#,
                "x".repeat(100 + n)
            )
        };
        let canonical = |n: usize| B64.encode(manifest(n));
        // The last symbol with its unused bits set: Go decodes it to the same bytes.
        let mut loose = canonical(2).into_bytes();
        assert_ne!(
            manifest(2).len() % 3,
            0,
            "a manifest that leaves unused bits"
        );
        let last = loose.iter().rposition(|&c| c != b'=').unwrap();
        loose[last] = b'B';
        let loose = String::from_utf8(loose).unwrap();
        // Line breaks inside the base64 (decoded alike; escaped in the JSON text).
        let wrapped = canonical(3)
            .as_bytes()
            .chunks(76)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        // YAML: the index holds it as canonical JSON, which this text does not encode.
        let yaml = B64.encode(format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: {}\n",
            "y".repeat(100)
        ));
        let object =
            |data: &str| serde_json::json!({"type": "olm.bundle.object", "value": {"data": data}});
        let bundle = |name: &str, properties: Vec<Value>| {
            let mut all = vec![
                serde_json::json!({"type": "olm.package", "value": {"packageName": "p", "version": name.trim_start_matches("p.v")}}),
            ];
            all.extend(properties);
            serde_json::json!({"schema": "olm.bundle", "package": "p", "name": name, "image": format!("example.com/{name}"), "properties": all})
        };
        let docs = [
            serde_json::json!({"schema": "olm.package", "name": "p", "defaultChannel": "stable", "description": "<&>\u{2028}"}),
            serde_json::json!({"schema": "olm.channel", "package": "p", "name": "stable", "entries": [{"name": "p.v1.0.0"}, {"name": "p.v2.0.0", "replaces": "p.v1.0.0"}]}),
            bundle(
                "p.v1.0.0",
                vec![
                    serde_json::json!({"type": "acme.note", "value": "<&>\u{2028}"}),
                    object(&canonical(1)),
                    object(&loose),
                    object(&wrapped),
                    object(&yaml),
                    object(&canonical(1)),
                    // Not an olm.bundle.object: its data is no manifest of the bundle.
                    serde_json::json!({"type": "acme.copy", "value": {"data": canonical(4)}}),
                ],
            ),
            bundle(
                "p.v2.0.0",
                vec![object(&canonical(5)), object(&canonical(6))],
            ),
            serde_json::json!({"schema": "acme.extra", "package": "p", "data": canonical(1)}),
        ];
        let dir = tempfile::tempdir().unwrap();
        let catalog = dir.path().join("catalog");
        std::fs::create_dir(&catalog).unwrap();
        let text: String = docs
            .iter()
            .map(|d| serde_json::to_string_pretty(d).unwrap() + "\n")
            .collect();
        std::fs::write(catalog.join("p.json"), text).unwrap();
        let index = dir.path().join("index.db");
        crate::ingest::build_index(
            crate::ingest::Input::Dir(&catalog, catalog::file::ReadLimits::default()),
            &index,
            None,
            true,
            &unfinished::Unfinished::new(),
        )
        .unwrap();
        let conn = Connection::open(&index).unwrap();
        let expected: String = docs
            .iter()
            .map(|d| catalog::json::canonical(d) + "\n")
            .collect();
        let expected = expected.as_bytes();

        // What is stored: only the exact encodings of the bundles' manifests are left out.
        let skeleton = |name: &str| -> (String, bool) {
            conn.query_row(
                "SELECT skeleton, splices IS NOT NULL FROM content_line WHERE name = ?1",
                [name],
                |r| Ok((String::from_utf8(r.get(0)?).unwrap(), r.get(1)?)),
            )
            .unwrap()
        };
        let (v1, spliced) = skeleton("p.v1.0.0");
        assert!(spliced);
        assert!(!v1.contains(&canonical(1)), "{v1}");
        for kept in [
            loose.clone(),
            wrapped.replace('\n', "\\n"),
            yaml.clone(),
            canonical(4),
        ] {
            assert!(v1.contains(&kept), "{kept} is not in {v1}");
        }
        let (v2, spliced) = skeleton("p.v2.0.0");
        assert!(spliced);
        assert!(
            !v2.contains(&canonical(5)) && !v2.contains(&canonical(6)),
            "{v2}"
        );
        assert!(v2.len() < 600, "{v2}");
        // Another document's copy of a manifest is not one of its own manifests.
        assert!(!skeleton("").1);

        assert_eq!(facts(&conn).unwrap().length, expected.len() as u64);
        let mut all = Vec::new();
        read_range(&conn, 0, expected.len() as u64, usize::MAX, &mut all).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&all),
            String::from_utf8_lossy(expected)
        );
        for from in (0..expected.len()).step_by(37) {
            for len in [1, 2, 3, 4, 5, 77, 1000] {
                let to = (from + len).min(expected.len());
                let mut out = Vec::new();
                read_range(&conn, from as u64, to as u64, usize::MAX, &mut out).unwrap();
                assert_eq!(out, &expected[from..to], "{from}..{to}");
            }
        }
        let mut metas = Vec::new();
        let filter = MetasFilter {
            schema: Some("olm.bundle".into()),
            ..Default::default()
        };
        read_metas(&conn, &filter, -1, usize::MAX, &mut metas).unwrap();
        let bundles: String = docs[2..4]
            .iter()
            .map(|d| catalog::json::canonical(d) + "\n")
            .collect();
        assert_eq!(String::from_utf8(metas).unwrap(), bundles);
        let mut each = Vec::new();
        documents(&conn, &filter, 1, 1, &mut |_, text| {
            each.extend_from_slice(text);
            Ok(true)
        })
        .unwrap();
        assert_eq!(each, (catalog::json::canonical(&docs[3]) + "\n").as_bytes());
    }
}
