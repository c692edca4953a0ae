//! Building an index from an FBC directory, or from a catalog rendered in memory (a bundle
//! or legacy index image) by the same writer.
//!
//! Files are read and parsed on worker threads and handed to one writer in file order. The
//! writer moves each bundle's manifests straight into the database and keeps only the light
//! rest in memory for validation, so memory is bounded by the largest file, not the catalog.
//! Everything happens in one transaction on a new file that replaces the target only when
//! complete: a failed ingest leaves nothing behind.
use super::content::{ContentWriter, Line};
use super::digest::{DigestOfReads, DigestThread, catalog_digest, one_file_digest};
use super::encode::{encode_edges, encode_objects, encode_tail};
use super::schema::{self, Stage};
use catalog::decode::{LoadError, describe_load_errors};
use catalog::file::ReadLimits;
use catalog::model::{Model, ModelPackage, ValidationError};
use catalog::property::{self, Typed};
use catalog::walk::{CatalogFile, decode_file_seeing, read_file_seeing, read_in_order};
use catalog::{self, Bundle, ChannelEntry, DeclarativeConfig, Document, Gvk, Meta};
use prost::Message;
use rusqlite::{Connection, params};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub enum IngestError {
    /// Files that could not be read or parsed, every one of them.
    Load(Vec<LoadError>),
    /// The catalog parsed but is not a valid catalog.
    Invalid(ValidationError),
    /// Writing the index failed.
    Storage(String),
}

impl std::fmt::Display for IngestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IngestError::Load(errors) => f.write_str(&describe_load_errors(errors)),
            IngestError::Invalid(e) => write!(f, "{e}"),
            IngestError::Storage(e) => write!(f, "writing the index: {e}"),
        }
    }
}

impl std::error::Error for IngestError {}

impl From<rusqlite::Error> for IngestError {
    fn from(e: rusqlite::Error) -> Self {
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
            IngestError::Storage(format!("disk full ({e})"))
        } else {
            IngestError::Storage(e.to_string())
        }
    }
}

/// What an ingest did, for logs and benchmarks.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub(crate) bytes: u64,
    pub(crate) packages: usize,
    pub(crate) bundles: usize,
    pub(crate) entries: usize,
    pub(crate) custom_documents: usize,
    pub(crate) elapsed: Duration,
}

/// A bundle as a worker hands it to the writer: manifests already decoded and split off.
struct ParsedBundle {
    light: Bundle,
    objects: Vec<String>,
    csv_index: Option<usize>,
}

enum Parsed {
    Bundle(ParsedBundle),
    Other(Document),
}

/// A file as the writer takes it.
struct ParsedFile {
    rel: String,
    /// What was read, when the writer digests it.
    data: Option<Vec<u8>>,
    bytes: u64,
    documents: Vec<Parsed>,
    /// The documents' catalogd lines.
    lines: Vec<Line>,
}

/// What an index is built from.
#[derive(Clone, Copy)]
pub enum Input<'a> {
    /// An FBC directory, and how much of its files may be read.
    Dir(&'a Path, ReadLimits),
    Rendered(&'a Rendered),
}

/// A catalog made in memory (from a bundle image or a legacy index image): the JSON stream
/// `render` writes, ingested from memory rather than written out and read back. It is
/// digested as a directory holding it as its one file [`RENDERED_FILE`], which is what these
/// images were unpacked to before, so that indexes built then are still reused.
pub struct Rendered {
    /// Where it came from (an image reference), for messages and the index's `source`.
    source: String,
    json: Vec<u8>,
}

/// The one file of a rendered catalog, as the digest sees it.
const RENDERED_FILE: &str = "catalog.json";

impl Rendered {
    pub fn new(source: &str, dc: &DeclarativeConfig) -> Rendered {
        let mut json = Vec::new();
        catalog::write::write_json(dc, &mut json).expect("writing to a Vec<u8> does not fail");
        Rendered {
            source: source.to_owned(),
            json,
        }
    }

    pub(crate) fn digest(&self, format_version: u32) -> String {
        one_file_digest(RENDERED_FILE, &self.json, format_version)
    }

    /// The name its documents' origins and messages give: the image, not a file nobody sees.
    fn name(&self) -> String {
        format!("render of {}", self.source)
    }
}

impl Input<'_> {
    fn source(&self) -> String {
        match self {
            Input::Dir(root, _) => root.display().to_string(),
            Input::Rendered(r) => r.source.clone(),
        }
    }
}

/// The name of the file an ingest writes before renaming it into place: `.index-*.db.partial`,
/// locked (`flock`) by the process writing it.
pub(crate) const PARTIAL_PREFIX: &str = ".index-";
pub(crate) const PARTIAL_SUFFIX: &str = ".db.partial";

/// Builds the index for `input` into `target`, replacing it only on success. The index
/// records `digest`, the catalog's content digest; without one, it is computed from the
/// ingest's own reads. With `catalogd_content` it also holds what the catalogd HTTP API
/// serves (every document's line and the compressed `/all`): that costs a share of the
/// ingest's CPU and more than doubles the index, so only a server that answers HTTP asks.
/// The partial file is on `unfinished` while it is written.
pub(crate) fn build_index(
    input: Input<'_>,
    target: &Path,
    digest: Option<&str>,
    catalogd_content: bool,
    unfinished: &unfinished::Unfinished,
) -> Result<Summary, IngestError> {
    let started = Instant::now();
    let files = match input {
        Input::Dir(root, limits) => {
            catalog::walk::catalog_files(root, limits).map_err(IngestError::Load)?
        }
        Input::Rendered(_) => Vec::new(),
    };
    let dir = target.parent().unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(PARTIAL_PREFIX)
        .suffix(PARTIAL_SUFFIX)
        .tempfile_in(dir)
        .map_err(|e| IngestError::Storage(format!("{}: {e}", dir.display())))?;
    // Held until the file is renamed or removed: a start beside us (same cache directory)
    // tells our partial index from the leftover of a killed ingest by this lock.
    tmp.as_file()
        .try_lock()
        .map_err(|e| IngestError::Storage(format!("locking {}: {e}", tmp.path().display())))?;
    let _unfinished = unfinished.track(tmp.path());
    let written = || -> Result<Summary, IngestError> {
        let mut conn = Connection::open(tmp.path())?;
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 8192;
             PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY;",
        )?;
        let tx = conn.transaction()?;
        schema::migrate(&tx, Stage::Tables)?;
        let summary = load(input, &files, &tx, digest, catalogd_content)?;
        schema::migrate(&tx, Stage::Complete)?;
        tx.commit()?;
        conn.close().map_err(|(_, e)| IngestError::from(e))?;
        Ok(summary)
    };
    // Name where the index was being written: a full disk is that directory's.
    let mut summary = written().map_err(|e| match e {
        IngestError::Storage(e) => IngestError::Storage(format!("{}: {e}", dir.display())),
        other => other,
    })?;
    tmp.persist(target)
        .map_err(|e| IngestError::Storage(format!("{}: {}", target.display(), e.error)))?;
    summary.elapsed = started.elapsed();
    release_freed_memory();
    Ok(summary)
}

/// An ingest allocates and frees a lot; glibc keeps freed memory in its arenas, which would
/// show as resident for the life of the server. Hand it back.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap pages; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn load(
    input: Input<'_>,
    files: &[CatalogFile],
    conn: &Connection,
    digest: Option<&str>,
    catalogd_content: bool,
) -> Result<Summary, IngestError> {
    let mut sink = Sink {
        writer: Writer::new(conn)?,
        content: catalogd_content
            .then(|| ContentWriter::new(conn))
            .transpose()?,
        errors: Vec::new(),
        bytes: 0,
    };
    let digest = match input {
        Input::Dir(root, limits) => read_dir(root, limits, files, &mut sink, digest)?,
        Input::Rendered(rendered) => {
            match parse_rendered(rendered, catalogd_content) {
                Ok(file) => sink.take(file)?,
                Err(e) => sink.errors.extend(e),
            }
            digest.map_or_else(|| rendered.digest(schema::CURRENT_VERSION), str::to_owned)
        }
    };
    let Sink {
        writer,
        content,
        errors,
        bytes,
    } = sink;
    if !errors.is_empty() {
        return Err(IngestError::Load(errors));
    }
    let mut summary = Summary {
        bytes,
        ..Default::default()
    };
    if let Some(content) = content {
        content.finish(conn)?;
    }
    let Writer {
        dc,
        manifests,
        custom_documents,
        ..
    } = writer;
    let model = Model::build(dc).map_err(IngestError::Invalid)?;
    let counts = write_model(conn, &model, &manifests)?;
    summary.packages = model.packages.len();
    summary.bundles = counts.0;
    summary.entries = counts.1;
    summary.custom_documents = custom_documents;
    let mut info = conn.prepare("INSERT INTO info (key, value) VALUES (?1, ?2)")?;
    for (key, value) in [
        ("digest", digest),
        ("source", input.source()),
        ("packages", summary.packages.to_string()),
        ("bundles", summary.bundles.to_string()),
        ("entries", summary.entries.to_string()),
        (
            "writer",
            format!("olm-registry {}", env!("CARGO_PKG_VERSION")),
        ),
    ] {
        info.execute(params![key, value])?;
    }
    if catalogd_content {
        info.execute(params![super::CATALOGD_CONTENT_KEY, "1"])?;
    }
    Ok(summary)
}

/// Reads the files of the catalog at `root` in order into `sink`; returns the catalog's
/// digest, `digest` or computed from the same reads (within the same `limits`).
fn read_dir(
    root: &Path,
    limits: ReadLimits,
    files: &[CatalogFile],
    sink: &mut Sink<'_>,
    digest: Option<&str>,
) -> Result<String, IngestError> {
    let reads = match digest {
        Some(_) => None,
        None => Some(
            DigestOfReads::new(root, limits, schema::CURRENT_VERSION, files)
                .map_err(IngestError::Load)?,
        ),
    };
    let keep_data = reads.is_some();
    let lines = sink.content.is_some();
    let parse = |file: &CatalogFile| parse_file(file, keep_data, lines);
    let (read, reads) = std::thread::scope(|scope| {
        let reads = reads.map(|r| r.on_thread(scope));
        let read = read_in_order(files, parse, |result| {
            match result {
                Ok(mut file) => {
                    if let (Some(reads), Some(data)) = (&reads, file.data.take()) {
                        reads.add(file.rel.clone(), data);
                    }
                    sink.take(file)?;
                }
                Err(e) => sink.errors.extend(e),
            }
            Ok::<_, IngestError>(())
        });
        (read, reads.map(DigestThread::finish))
    });
    read?;
    // The caller reports the problems; a catalog that has some has no digest worth computing.
    if !sink.errors.is_empty() {
        return Ok(String::new());
    }
    Ok(match reads {
        None => digest.unwrap_or_default().to_owned(),
        Some(reads) => match reads.map_err(IngestError::Load)? {
            Some(digest) => digest,
            // The reads came in too far from the digest's order: read again.
            None => {
                catalog_digest(root, limits, schema::CURRENT_VERSION).map_err(IngestError::Load)?
            }
        },
    })
}

/// Where parsed files go: documents to the writer, catalogd lines to the content, problems
/// collected to be reported together.
struct Sink<'c> {
    writer: Writer<'c>,
    /// Absent when the index is built without catalogd content.
    content: Option<ContentWriter<'c>>,
    errors: Vec<LoadError>,
    bytes: u64,
}

impl Sink<'_> {
    fn take(&mut self, file: ParsedFile) -> Result<(), IngestError> {
        self.bytes += file.bytes;
        for doc in file.documents {
            self.writer.add(doc, &mut self.errors)?;
        }
        if let Some(content) = &mut self.content {
            for line in &file.lines {
                content.add(line)?;
            }
        }
        Ok(())
    }
}

/// A file as the writer takes it, with its documents' catalogd lines when `lines` is set.
fn parse_file(
    file: &CatalogFile,
    keep_data: bool,
    lines: bool,
) -> Result<ParsedFile, Vec<LoadError>> {
    let mut seen = Vec::new();
    let read = read_file_seeing(file, &mut |doc| {
        if lines {
            seen.push(Line::of(doc))
        }
    })?;
    let lines = seen;
    Ok(ParsedFile {
        rel: file.rel.clone(),
        bytes: read.data.len() as u64,
        data: keep_data.then_some(read.data),
        documents: split_manifests(read.documents),
        lines,
    })
}

/// [`parse_file`] for a rendered catalog.
fn parse_rendered(rendered: &Rendered, lines: bool) -> Result<ParsedFile, Vec<LoadError>> {
    let mut seen = Vec::new();
    let documents = decode_file_seeing(&rendered.name(), &rendered.json, &mut |doc| {
        if lines {
            seen.push(Line::of(doc))
        }
    })?;
    let lines = seen;
    Ok(ParsedFile {
        rel: RENDERED_FILE.to_owned(),
        bytes: rendered.json.len() as u64,
        data: None,
        documents: split_manifests(documents),
        lines,
    })
}

/// Each bundle's manifests split off its properties.
fn split_manifests(documents: Vec<(Document, Vec<String>)>) -> Vec<Parsed> {
    documents
        .into_iter()
        .map(|(doc, objects)| match doc {
            Document::Bundle(mut light) => {
                light
                    .properties
                    .retain(|p| p.kind != property::BUNDLE_OBJECT);
                light.external_objects = objects.len();
                Parsed::Bundle(ParsedBundle {
                    light,
                    csv_index: objects.iter().position(|json| is_csv(json)),
                    objects,
                })
            }
            other => Parsed::Other(other),
        })
        .collect()
}

fn is_csv(json: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    serde_json::from_str::<Kind>(json)
        .is_ok_and(|k| k.kind.as_deref() == Some("ClusterServiceVersion"))
}

/// Takes documents in file order: manifests and custom documents go to the database at
/// once, the rest is kept for validation.
struct Writer<'c> {
    dc: DeclarativeConfig,
    /// (package, bundle) → manifest row and where the CSV is in it. The last one wins for
    /// duplicates, which validation rejects anyway.
    manifests: HashMap<(String, String), (i64, bool)>,
    insert_manifest: rusqlite::Statement<'c>,
    insert_custom: rusqlite::Statement<'c>,
    custom_documents: usize,
}

impl<'c> Writer<'c> {
    fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(Writer {
            dc: DeclarativeConfig::default(),
            manifests: HashMap::new(),
            insert_manifest: conn.prepare(
                "INSERT INTO manifest (objects, csv_start, csv_len) VALUES (?1, ?2, ?3)",
            )?,
            insert_custom: conn
                .prepare("INSERT INTO custom_doc (schema, package, message) VALUES (?1, ?2, ?3)")?,
            custom_documents: 0,
        })
    }

    /// Adds one document; a document that cannot be stored is added to `errors`, while a
    /// failure of the database itself (a full disk) ends the ingest.
    fn add(&mut self, doc: Parsed, errors: &mut Vec<LoadError>) -> rusqlite::Result<()> {
        match doc {
            Parsed::Bundle(b) => {
                let (objects, csv_range) = encode_objects(&b.objects, b.csv_index);
                let (start, len) =
                    csv_range.map_or((None, None), |(s, l)| (Some(s as i64), Some(l as i64)));
                let id = self.insert_manifest.insert(params![objects, start, len])?;
                self.manifests.insert(
                    (b.light.package.clone(), b.light.name.clone()),
                    (id, csv_range.is_some()),
                );
                self.dc.bundles.push(b.light);
            }
            Parsed::Other(Document::Meta(meta)) => {
                let message = match custom_document(&meta) {
                    Ok(message) => message,
                    Err(e) => {
                        errors.push(e);
                        return Ok(());
                    }
                };
                self.insert_custom
                    .execute(params![meta.schema, meta.package, message])?;
                self.custom_documents += 1;
            }
            Parsed::Other(doc) => self.dc.push(doc),
        }
        Ok(())
    }
}

/// Custom-schema documents are served by schema and package, both of which must be simple
/// names (upstream refuses to serve a catalog otherwise).
fn custom_document(meta: &Meta) -> Result<Vec<u8>, LoadError> {
    let fail = |what: &str, value: &str| LoadError {
        file: meta.origin.file.to_string(),
        line: meta.origin.line,
        message: format!(
            "invalid custom schema meta: invalid {what} {value:?}: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]*$"
        ),
    };
    if !is_simple_name(&meta.schema) {
        return Err(fail("schema", &meta.schema));
    }
    if !meta.package.is_empty() && !is_simple_name(&meta.package) {
        return Err(fail("package", &meta.package));
    }
    Ok(to_struct(&meta.blob).encode_to_vec())
}

/// `^[a-zA-Z0-9][a-zA-Z0-9._-]*$`
pub fn is_simple_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn to_struct(v: &serde_json::Value) -> prost_types::Struct {
    let fields = match v {
        serde_json::Value::Object(map) => {
            map.iter().map(|(k, v)| (k.clone(), to_value(v))).collect()
        }
        _ => Default::default(),
    };
    prost_types::Struct { fields }
}

fn to_value(v: &serde_json::Value) -> prost_types::Value {
    use prost_types::value::Kind;
    use serde_json::Value as J;
    let kind = match v {
        J::Null => Kind::NullValue(0),
        J::Bool(b) => Kind::BoolValue(*b),
        J::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(f64::NAN)),
        J::String(s) => Kind::StringValue(s.clone()),
        J::Array(a) => Kind::ListValue(prost_types::ListValue {
            values: a.iter().map(to_value).collect(),
        }),
        J::Object(_) => Kind::StructValue(to_struct(v)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// Writes the validated model: packages, channels, bundles and one entry per (channel,
/// bundle) in ListBundles order. Returns (bundles, entries).
/// Writes the validated graph; returns how many bundles and entries it holds.
fn write_model(
    conn: &Connection,
    model: &Model,
    manifests: &HashMap<(String, String), (i64, bool)>,
) -> Result<(usize, usize), IngestError> {
    let (bundle_ids, mut entries) = write_packages(conn, model, manifests)?;
    entries.sort_by(|a, b| {
        (a.channel, a.package, &a.entry.name).cmp(&(b.channel, b.package, &b.entry.name))
    });
    write_entries(conn, &bundle_ids, &entries)?;
    Ok((bundle_ids.len(), entries.len()))
}

/// A channel entry as the entry table holds it.
struct EntryRow<'m> {
    channel: &'m str,
    package: &'m str,
    entry: &'m ChannelEntry,
    is_head: bool,
}

/// Bundle row ids by (package, bundle).
type BundleIds<'m> = HashMap<(&'m str, &'m str), i64>;

/// Writes packages, channels and bundles; returns the bundles' row ids and the channels'
/// entries, which are written once every bundle has its id.
fn write_packages<'m>(
    conn: &Connection,
    model: &'m Model,
    manifests: &HashMap<(String, String), (i64, bool)>,
) -> Result<(BundleIds<'m>, Vec<EntryRow<'m>>), IngestError> {
    let mut insert_package =
        conn.prepare("INSERT INTO package (name, default_channel, message) VALUES (?1, ?2, ?3)")?;
    let mut insert_channel =
        conn.prepare("INSERT INTO channel (package, name, head) VALUES (?1, ?2, ?3)")?;
    let mut insert_bundle = conn.prepare(
        "INSERT INTO bundle (package, name, has_image, manifest_id, common, csv_synth) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut insert_api =
        conn.prepare("INSERT OR IGNORE INTO provided_api (grp, version, kind, bundle_id) VALUES (?1, ?2, ?3, ?4)")?;
    let mut bundle_ids = HashMap::new();
    let mut entries = Vec::new();
    for pkg in model.packages.values() {
        insert_package.execute(params![
            pkg.name,
            pkg.default_channel,
            encode_package(pkg).encode_to_vec()
        ])?;
        for ch in pkg.channels.values() {
            insert_channel.execute(params![pkg.name, ch.name, ch.head])?;
            for e in &ch.entries {
                entries.push(EntryRow {
                    channel: &ch.name,
                    package: &pkg.name,
                    entry: e,
                    is_head: ch.head == e.name,
                });
            }
        }
        for b in pkg.bundles.values() {
            let (manifest_id, has_csv) = manifests
                .get(&(pkg.name.clone(), b.name.clone()))
                .copied()
                .ok_or_else(|| {
                    IngestError::Storage(format!("bundle {:?} lost its manifests", b.name))
                })?;
            let bundle = BundleFacts::of(b);
            let csv_synth = match (&bundle.csv_metadata, has_csv) {
                (Some(meta), false) => {
                    Some(catalog::csv::synthesize_csv(b, &bundle.version, meta, pkg).into_bytes())
                }
                _ => None,
            };
            let provided = bundle.provided.clone();
            let common = bundle.encode_common(b, model.bundle_deprecation(&pkg.name, &b.name));
            let id = insert_bundle.insert(params![
                pkg.name,
                b.name,
                !b.image.is_empty(),
                manifest_id,
                common,
                csv_synth
            ])?;
            for gvk in &provided {
                insert_api.execute(params![gvk.group, gvk.version, gvk.kind, id])?;
            }
            bundle_ids.insert((pkg.name.as_str(), b.name.as_str()), id);
        }
    }
    Ok((bundle_ids, entries))
}

fn write_entries(
    conn: &Connection,
    bundle_ids: &BundleIds<'_>,
    entries: &[EntryRow<'_>],
) -> Result<(), IngestError> {
    let mut insert_entry = conn.prepare(
        "INSERT INTO entry (package, channel, bundle, bundle_id, replaces, is_head, tail, edges)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut insert_skip =
        conn.prepare("INSERT INTO skip (entry_id, ord, name) VALUES (?1, ?2, ?3)")?;
    for row in entries {
        let (channel, pkg, e) = (row.channel, row.package, row.entry);
        let bundle_id = bundle_ids
            .get(&(pkg, e.name.as_str()))
            .ok_or_else(|| IngestError::Storage(format!("entry {:?} has no bundle", e.name)))?;
        let id = insert_entry.insert(params![
            pkg,
            channel,
            e.name,
            bundle_id,
            e.replaces,
            row.is_head,
            encode_tail(channel, &e.skip_range),
            encode_edges(&e.replaces, &e.skips)
        ])?;
        for (ord, skip) in e.skips.iter().enumerate() {
            insert_skip.execute(params![id, ord as i64, skip])?;
        }
    }
    Ok(())
}

fn encode_package(pkg: &ModelPackage) -> api::Package {
    api::Package {
        name: pkg.name.clone(),
        default_channel_name: pkg.default_channel.clone(),
        channels: pkg
            .channels
            .values()
            .map(|ch| api::Channel {
                name: ch.name.clone(),
                csv_name: ch.head.clone(),
                deprecation: ch
                    .deprecation
                    .clone()
                    .map(|message| api::Deprecation { message }),
            })
            .collect(),
        deprecation: pkg
            .deprecation
            .clone()
            .map(|message| api::Deprecation { message }),
    }
}

/// What the served fields of a bundle derive from its properties (registry-api.md §4.1).
struct BundleFacts {
    version: String,
    provided: Vec<api::GroupVersionKind>,
    required: Vec<api::GroupVersionKind>,
    dependencies: Vec<api::Dependency>,
    properties: Vec<api::Property>,
    csv_metadata: Option<serde_json::Value>,
}

impl BundleFacts {
    /// The model has validated every property already; one that still fails to parse is
    /// served as an opaque property.
    fn of(b: &Bundle) -> BundleFacts {
        let mut facts = BundleFacts {
            version: String::new(),
            provided: Vec::new(),
            required: Vec::new(),
            dependencies: Vec::new(),
            properties: Vec::new(),
            csv_metadata: None,
        };
        let gvk = |g: Gvk| api::GroupVersionKind {
            group: g.group,
            version: g.version,
            kind: g.kind,
            plural: String::new(),
        };
        for p in &b.properties {
            match property::parse(p) {
                Ok(Typed::CsvMetadata(v)) => {
                    facts.csv_metadata = Some(v);
                    continue;
                }
                Ok(Typed::BundleObject { .. }) => continue,
                Ok(Typed::Package { version, .. }) => facts.version = version,
                Ok(Typed::Gvk(g)) => facts.provided.push(gvk(g)),
                Ok(Typed::GvkRequired(g)) => {
                    facts.required.push(gvk(g));
                    facts.dependencies.push(api::Dependency {
                        r#type: "olm.gvk".to_owned(),
                        value: p.value.clone(),
                    });
                }
                Ok(Typed::PackageRequired {
                    package_name,
                    version_range,
                }) => {
                    let value =
                        serde_json::json!({"packageName": package_name, "version": version_range});
                    facts.dependencies.push(api::Dependency {
                        r#type: "olm.package".to_owned(),
                        value: catalog::json::canonical(&value),
                    });
                }
                _ => {}
            }
            facts.properties.push(api::Property {
                r#type: p.kind.clone(),
                value: p.value.clone(),
            });
        }
        facts
    }

    fn encode_common(self, b: &Bundle, deprecation: Option<&str>) -> Vec<u8> {
        api::Bundle {
            csv_name: b.name.clone(),
            package_name: b.package.clone(),
            bundle_path: b.image.clone(),
            version: self.version,
            provided_apis: self.provided,
            required_apis: self.required,
            dependencies: self.dependencies,
            properties: self.properties,
            deprecation: deprecation.map(|m| api::Deprecation {
                message: m.to_owned(),
            }),
            ..Default::default()
        }
        .encode_to_vec()
    }
}
