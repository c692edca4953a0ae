//! Building an index from an FBC directory, or from a catalog rendered in memory (a bundle
//! or legacy index image) by the same writer.
//!
//! Files are read and parsed on worker threads and handed to one writer in file order. The
//! writer moves each bundle's manifests straight into the database and sets the light rest
//! aside in a spill file, from which it is validated and written one package at a time, so
//! memory is bounded by the largest file and the largest package, not the catalog.
//! Everything happens in one transaction on a new file that replaces the target only when
//! complete: a failed ingest leaves nothing behind (the spill file is removed either way).
use super::content::ContentWriter;
use super::digest::one_file_digest;
use super::schema::{self, Stage};
use catalog::decode::{LoadError, describe_load_errors};
use catalog::file::ReadLimits;
use catalog::model::ValidationError;
use catalog::walk::CatalogFile;
use catalog::{self, DeclarativeConfig};
use read::{Sink, parse_rendered, read_dir};
use rusqlite::{Connection, params};
use std::path::Path;
use std::time::{Duration, Instant};
use write::{Writer, write_model};

mod read;
mod spill;
mod write;

pub use write::is_simple_name;

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// Files that could not be read or parsed, every one of them.
    #[error("{}", describe_load_errors(.0))]
    Load(Vec<LoadError>),
    /// The catalog parsed but is not a valid catalog.
    #[error("{0}")]
    Invalid(ValidationError),
    /// Writing the index failed.
    #[error("writing the index: {0}")]
    Storage(String),
}

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
/// The spill file beside it (`.index-*.spill.db.partial`), locked and left behind the same way.
const SPILL_SUFFIX: &str = ".spill.db.partial";

/// Builds the index for `input` into `target`, replacing it only on success. The index
/// records `digest`, the catalog's content digest; without one, it is computed from the
/// ingest's own reads. With `catalogd_content` it also holds what the catalogd HTTP API
/// serves (every document's line, the base64 of its manifests left out where it can be
/// derived): that costs a share of the ingest's CPU and space, so only a server that answers
/// HTTP asks.
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
    let tmp = partial_file(dir, PARTIAL_SUFFIX)?;
    let spill = partial_file(dir, SPILL_SUFFIX)?;
    let _unfinished = unfinished.track(tmp.path());
    let _unfinished_spill = unfinished.track(spill.path());
    let written = || -> Result<Summary, IngestError> {
        let mut conn = Connection::open(tmp.path())?;
        // 4 MiB of page cache: rows are appended in rowid order and the b-trees written at
        // random (content lines by name, the model's tables) are a few MiB at most, so a
        // larger cache only held more of the peak memory of a cold start (16 MiB did).
        conn.execute_batch(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 8192;
             PRAGMA cache_size = -4096; PRAGMA temp_store = MEMORY;",
        )?;
        spill::attach(&conn, spill.path())?;
        let tx = conn.transaction()?;
        schema::migrate(&tx, Stage::Tables)?;
        let summary = load(input, &files, &tx, digest, catalogd_content)?;
        schema::migrate(&tx, Stage::Complete)?;
        tx.commit()?;
        spill::detach(&conn)?;
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

/// A new file in `dir` named `.index-*` + `suffix`, locked (`flock`) until it is renamed or
/// removed: a start beside us (same cache directory) tells the files of our ingest from
/// the leftovers of a killed one by this lock.
fn partial_file(dir: &Path, suffix: &str) -> Result<tempfile::NamedTempFile, IngestError> {
    let file = tempfile::Builder::new()
        .prefix(PARTIAL_PREFIX)
        .suffix(suffix)
        .tempfile_in(dir)
        .map_err(|e| IngestError::Storage(format!("{}: {e}", dir.display())))?;
    file.as_file()
        .try_lock()
        .map_err(|e| IngestError::Storage(format!("locking {}: {e}", file.path().display())))?;
    Ok(file)
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
        custom_documents,
        substitutes,
        ..
    } = writer;
    // The reading workers are done: what their arenas hold is free but still resident, and
    // the lookup indexes built after the model are sorted in memory (`temp_store`) on top of
    // it. Handed back, the end of the ingest no longer sets the peak (83 -> 67 MiB on the
    // 64,000-bundle catalog).
    release_freed_memory();
    let counts = write_model(conn)?;
    // Served all the same, as opm serves it; nothing here follows the links.
    for cycle in substitutes.cycles() {
        tracing::warn!(package = %cycle.package, "{cycle}");
    }
    summary.packages = counts.packages;
    summary.bundles = counts.bundles;
    summary.entries = counts.entries;
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
