//! The catalog as catalogd's HTTP API (OLM v1) serves it: every document, in walk order, as
//! one line of compact key-sorted JSON (catalogd-http.md §2), stored at ingest with its byte
//! offset in `/api/v1/all` and its `schema`, `package` and `name` for `/api/v1/metas`. A
//! request reads stored lines; nothing is re-encoded and nothing scans the catalog for a
//! filter.
use super::QueryError;
use super::ingest::IngestError;
use catalog::json::write_canonical;
use catalog::special_field;
use flate2::Compression;
use flate2::write::GzEncoder;
use rusqlite::{Connection, Statement, params};
use serde_json::Value;
use std::io::Write;
use std::sync::{Arc, mpsc};

/// One document as catalogd stores it.
pub(crate) struct Line {
    /// The canonical JSON text and its `\n`.
    text: String,
    schema: String,
    package: String,
    name: String,
}

impl Line {
    /// The line of a decoded document. `schema`, `package` and `name` are found as the
    /// decoder finds them (case-insensitively); the text keeps the source's spelling of keys.
    pub(crate) fn of(doc: &Value) -> Line {
        let mut text = String::new();
        write_canonical(doc, &mut text);
        text.push('\n');
        Line {
            schema: special_field(doc, "schema"),
            package: special_field(doc, "package"),
            name: special_field(doc, "name"),
            text,
        }
    }
}

/// The codings `/api/v1/all` is also stored in, and that responses are compressed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Gzip,
    Zstd,
}

impl Coding {
    const ALL: [Coding; 2] = [Coding::Gzip, Coding::Zstd];

    /// Its name in `Content-Encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Zstd => "zstd",
        }
    }

    fn table(self) -> &'static str {
        match self {
            Coding::Gzip => "content_gzip",
            Coding::Zstd => "content_zstd",
        }
    }
}

/// One compressed stream, fed a piece at a time. Fast levels (gzip's fastest, zstd's
/// default): the catalog is mostly base64 manifests, which the slower levels shrink little
/// more, and the compression must keep up with an ingest or with a waiting client.
pub enum Encoder {
    Gzip(GzEncoder<Vec<u8>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Encoder {
    pub fn new(coding: Coding) -> std::io::Result<Encoder> {
        Ok(match coding {
            Coding::Gzip => Encoder::Gzip(GzEncoder::new(Vec::new(), Compression::fast())),
            Coding::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(
                Vec::new(),
                zstd::DEFAULT_COMPRESSION_LEVEL,
            )?),
        })
    }

    pub fn write(&mut self, input: &[u8]) -> std::io::Result<()> {
        match self {
            Encoder::Gzip(gz) => gz.write_all(input),
            Encoder::Zstd(zs) => zs.write_all(input),
        }
    }

    /// What the stream has produced so far, once that is at least `min` bytes.
    pub fn take(&mut self, min: usize) -> Option<Vec<u8>> {
        let out = match self {
            Encoder::Gzip(gz) => gz.get_mut(),
            Encoder::Zstd(zs) => zs.get_mut(),
        };
        (out.len() >= min).then(|| std::mem::take(out))
    }

    /// Ends the stream, returning its last bytes.
    pub fn finish(self) -> std::io::Result<Vec<u8>> {
        match self {
            Encoder::Gzip(gz) => gz.finish(),
            Encoder::Zstd(zs) => zs.finish(),
        }
    }
}

/// Appends lines in walk order during an ingest, and compresses `/api/v1/all` in every
/// [`Coding`] beside it, each on a thread of its own, so that the compression overlaps the
/// reading of the catalog.
pub(super) struct ContentWriter<'c> {
    insert: Statement<'c>,
    offset: i64,
    compressors: Vec<Compressor<'c>>,
    /// Compressed chunks, by index in `compressors`.
    compressed: mpsc::Receiver<(usize, Vec<u8>)>,
}

/// One coding's thread and where its chunks go.
struct Compressor<'c> {
    insert: Statement<'c>,
    chunks: i64,
    lines: Option<mpsc::SyncSender<Arc<[u8]>>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

/// Size of the stored compressed chunks (the last one is shorter).
const CHUNK: usize = 256 << 10;

impl<'c> ContentWriter<'c> {
    pub(super) fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        // Lines waiting for a compressor are bounded; compressed chunks are taken by every
        // `add`, so neither side holds more than a few chunks.
        let (chunks, compressed) = mpsc::channel();
        let compressors = Coding::ALL
            .into_iter()
            .enumerate()
            .map(|(index, coding)| {
                // A bundle's line is tens of KiB: a few are enough to keep a compressor busy.
                let (to_compress, lines) = mpsc::sync_channel::<Arc<[u8]>>(16);
                let chunks = chunks.clone();
                let thread = std::thread::spawn(move || compress(coding, lines, index, chunks));
                Ok(Compressor {
                    insert: conn.prepare(&format!(
                        "INSERT INTO {} (seq, data) VALUES (?1, ?2)",
                        coding.table()
                    ))?,
                    chunks: 0,
                    lines: Some(to_compress),
                    thread: Some(thread),
                })
            })
            .collect::<rusqlite::Result<_>>()?;
        Ok(ContentWriter {
            insert: conn.prepare(
                "INSERT INTO content_line (offset, schema, package, name, line) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?,
            offset: 0,
            compressors,
            compressed,
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
        let text: Arc<[u8]> = Arc::from(line.text.as_bytes());
        for compressor in &self.compressors {
            // A compressor that has stopped has failed; `finish` reports why.
            if let Some(lines) = &compressor.lines {
                let _ = lines.send(text.clone());
            }
        }
        self.store_chunks()
    }

    fn store_chunks(&mut self) -> rusqlite::Result<()> {
        while let Ok((index, chunk)) = self.compressed.try_recv() {
            let compressor = &mut self.compressors[index];
            compressor
                .insert
                .execute(params![compressor.chunks, chunk])?;
            compressor.chunks += 1;
        }
        Ok(())
    }

    /// Stores the rest of the compressed streams, the length of `/api/v1/all`, and when it
    /// was built (what `Last-Modified` says, kept with the index so that a warm start says
    /// the same).
    pub(super) fn finish(mut self, conn: &Connection) -> Result<(), IngestError> {
        for compressor in &mut self.compressors {
            drop(compressor.lines.take());
        }
        let mut failure = None;
        for compressor in &mut self.compressors {
            let failed = match compressor.thread.take().map(|thread| thread.join()) {
                Some(Ok(Ok(()))) | None => None,
                Some(Ok(Err(e))) => Some(format!("compressing the catalog: {e}")),
                Some(Err(_)) => Some("the catalog compressor failed".to_owned()),
            };
            failure = failure.or(failed);
        }
        if let Some(failure) = failure {
            return Err(IngestError::Storage(failure));
        }
        self.store_chunks()?;
        let built = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut info = conn.prepare("INSERT INTO info (key, value) VALUES (?1, ?2)")?;
        info.execute(params![CONTENT_BYTES, self.offset.to_string()])?;
        info.execute(params![BUILT_AT, built.to_string()])?;
        Ok(())
    }
}

/// Compresses the lines it receives into one stream, sending it on in chunks of [`CHUNK`]
/// tagged with `index`.
fn compress(
    coding: Coding,
    lines: mpsc::Receiver<Arc<[u8]>>,
    index: usize,
    chunks: mpsc::Sender<(usize, Vec<u8>)>,
) -> std::io::Result<()> {
    let mut encoder = Encoder::new(coding)?;
    let send = |out: Vec<u8>| {
        for chunk in out.chunks(CHUNK) {
            let _ = chunks.send((index, chunk.to_vec()));
        }
    };
    for line in lines {
        encoder.write(&line)?;
        if let Some(out) = encoder.take(CHUNK) {
            send(out);
        }
    }
    send(encoder.finish()?);
    Ok(())
}

const CONTENT_BYTES: &str = "content_bytes";
const BUILT_AT: &str = "built_at";

fn blob<'r>(row: &'r rusqlite::Row<'_>, column: usize) -> rusqlite::Result<&'r [u8]> {
    row.get_ref(column)?
        .as_blob()
        .map_err(rusqlite::Error::from)
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
        let line = blob(row, 1)?;
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

/// Appends to `out` the stored chunks of `/api/v1/all` in `coding` from chunk `from` on,
/// stopping once `out` has `budget` bytes or more. Returns how many chunks it appended.
pub fn read_compressed(
    conn: &Connection,
    coding: Coding,
    from: i64,
    budget: usize,
    out: &mut Vec<u8>,
) -> Result<i64, QueryError> {
    let start = out.len();
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT data FROM {} WHERE seq >= ?1 ORDER BY seq",
        coding.table()
    ))?;
    let mut rows = stmt.query([from])?;
    let mut read = 0;
    while let Some(row) = rows.next()? {
        out.extend_from_slice(blob(row, 0)?);
        read += 1;
        if out.len() - start >= budget {
            break;
        }
    }
    Ok(read)
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
            sql.push_str(&format!(" AND {column} = ?{}", first + values.len()));
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
        "SELECT offset, line FROM content_line WHERE offset > ?1{conditions} ORDER BY offset"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut bound: Vec<&dyn rusqlite::ToSql> = vec![&after];
    bound.extend(values.iter().map(|v| v as &dyn rusqlite::ToSql));
    let mut rows = stmt.query(bound.as_slice())?;
    let mut last = None;
    while let Some(row) = rows.next()? {
        last = Some(row.get::<_, i64>(0)?);
        out.extend_from_slice(blob(row, 1)?);
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
    let sql = format!(
        "SELECT schema, line FROM content_line WHERE 1{conditions} ORDER BY offset LIMIT ?1 OFFSET ?2"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let (limit, skip) = (
        i64::try_from(limit).unwrap_or(i64::MAX),
        i64::try_from(skip).unwrap_or(i64::MAX),
    );
    let mut bound: Vec<&dyn rusqlite::ToSql> = vec![&limit, &skip];
    bound.extend(values.iter().map(|v| v as &dyn rusqlite::ToSql));
    let mut rows = stmt.query(bound.as_slice())?;
    while let Some(row) = rows.next()? {
        let schema = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        if !each(schema, blob(row, 1)?)? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Stage, migrate};
    use serde_json::json;

    #[test]
    fn a_lines_fields_are_the_ones_the_decoder_reads() {
        // Go's case folding: "ſ" (long s) is an "s", so this is the document's schema.
        let line = Line::of(&json!({"ſchema": "olm.package", "NAME": "a", "package": 1}));
        assert_eq!(
            (
                line.schema.as_str(),
                line.package.as_str(),
                line.name.as_str()
            ),
            ("olm.package", "", "a")
        );
    }

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
    fn the_stored_compressed_streams_inflate_to_the_whole() {
        let docs: Vec<Value> = (0..5000)
            .map(|i| serde_json::json!({"schema": "s", "name": format!("n{i}"), "x": i * 7919 % 1000}))
            .collect();
        let conn = store(&docs);
        let facts = facts(&conn).unwrap();
        let mut all = Vec::new();
        read_range(&conn, 0, facts.length, usize::MAX, &mut all).unwrap();
        assert_eq!(all.len() as u64, facts.length);
        for coding in Coding::ALL {
            let mut stored = Vec::new();
            let mut next = 0;
            loop {
                let read = read_compressed(&conn, coding, next, 1, &mut stored).unwrap();
                if read == 0 {
                    break;
                }
                next += read;
            }
            let mut inflated = Vec::new();
            match coding {
                Coding::Gzip => std::io::Read::read_to_end(
                    &mut flate2::read::GzDecoder::new(&stored[..]),
                    &mut inflated,
                )
                .map(drop)
                .unwrap(),
                Coding::Zstd => inflated = zstd::decode_all(&stored[..]).unwrap(),
            }
            assert_eq!(inflated, all, "{coding:?}");
        }
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
}
