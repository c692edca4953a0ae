//! Reading the catalog's files on worker threads and handing them, in file order, to the
//! writer: each bundle's manifests split off, catalogd lines taken as the documents go by,
//! and each file hashed for the digest from the same read when no digest was given.
use super::write::Writer;
use super::{IngestError, RENDERED_FILE, Rendered};
use crate::content::{ContentWriter, Line};
use crate::digest::{DigestOfReads, FileDigest, catalog_digest};
use crate::schema;
use catalog::decode::LoadError;
use catalog::file::ReadLimits;
use catalog::property;
use catalog::walk::{CatalogFile, decode_file_seeing, read_file_seeing, read_in_order};
use catalog::{Bundle, Document};
use std::path::Path;

/// A bundle as a worker hands it to the writer: manifests already decoded and split off.
pub(super) struct ParsedBundle {
    pub(super) light: Bundle,
    pub(super) objects: Vec<String>,
    pub(super) csv_index: Option<usize>,
}

/// A document as a worker hands it to the writer.
pub(super) enum Parsed {
    Bundle(ParsedBundle),
    Other(Document),
}

/// A file as the writer takes it.
pub(super) struct ParsedFile {
    rel: String,
    /// The digest of what was read, when the ingest computes the catalog's.
    digest: Option<FileDigest>,
    bytes: u64,
    documents: Vec<Parsed>,
    /// The documents' catalogd lines, one per document in the same order (or none).
    lines: Vec<Line>,
}

/// Reads the files of the catalog at `root` in order into `sink`; returns the catalog's
/// digest, `digest` or computed from the same reads (within the same `limits`).
pub(super) fn read_dir(
    root: &Path,
    limits: ReadLimits,
    files: &[CatalogFile],
    sink: &mut Sink<'_>,
    digest: Option<&str>,
) -> Result<String, IngestError> {
    let mut reads = match digest {
        Some(_) => None,
        None => Some(
            DigestOfReads::new(root, limits, schema::CURRENT_VERSION, files)
                .map_err(IngestError::Load)?,
        ),
    };
    let hash = reads.is_some();
    let lines = sink.content.is_some();
    let parse = |file: &CatalogFile| parse_file(file, hash, lines);
    read_in_order(files, parse, |result| {
        match result {
            Ok(mut file) => {
                if let (Some(reads), Some(digest)) = (&mut reads, file.digest.take()) {
                    reads.add(&file.rel, digest);
                }
                sink.take(file)?;
            }
            Err(e) => sink.errors.extend(e),
        }
        Ok::<_, IngestError>(())
    })?;
    // The caller reports the problems; a catalog that has some has no digest worth computing.
    if !sink.errors.is_empty() {
        return Ok(String::new());
    }
    Ok(match reads {
        None => digest.unwrap_or_default().to_owned(),
        Some(reads) => match reads.finish().map_err(IngestError::Load)? {
            Some(digest) => digest,
            // A file the ingest was to read never came: read again.
            None => {
                catalog_digest(root, limits, schema::CURRENT_VERSION).map_err(IngestError::Load)?
            }
        },
    })
}

/// Where parsed files go: documents to the writer, catalogd lines to the content, problems
/// collected to be reported together.
pub(super) struct Sink<'c> {
    pub(super) writer: Writer<'c>,
    /// Absent when the index is built without catalogd content.
    pub(super) content: Option<ContentWriter<'c>>,
    pub(super) errors: Vec<LoadError>,
    pub(super) bytes: u64,
}

impl Sink<'_> {
    pub(super) fn take(&mut self, file: ParsedFile) -> Result<(), IngestError> {
        self.bytes += file.bytes;
        // A line's splices refer to the manifest row of its document.
        let mut manifests = Vec::with_capacity(file.lines.len());
        for doc in file.documents {
            manifests.push(self.writer.add(doc, &mut self.errors)?);
        }
        if let Some(content) = &mut self.content {
            for (i, line) in file.lines.iter().enumerate() {
                content.add(line, manifests.get(i).copied().flatten())?;
            }
        }
        Ok(())
    }
}

/// A file as the writer takes it, with its digest when `hash` is set and its documents'
/// catalogd lines when `lines` is.
fn parse_file(file: &CatalogFile, hash: bool, lines: bool) -> Result<ParsedFile, Vec<LoadError>> {
    let mut seen = Vec::new();
    let read = read_file_seeing(file, &mut |doc| {
        if lines {
            seen.push(Line::of(doc))
        }
    })?;
    let lines = derive_lines(seen, &read.documents);
    Ok(ParsedFile {
        rel: file.rel.clone(),
        bytes: read.data.len() as u64,
        digest: hash.then(|| FileDigest::of(&read.data)),
        documents: split_manifests(read.documents),
        lines,
    })
}

/// [`parse_file`] for a rendered catalog.
pub(super) fn parse_rendered(
    rendered: &Rendered,
    lines: bool,
) -> Result<ParsedFile, Vec<LoadError>> {
    let mut seen = Vec::new();
    let documents = decode_file_seeing(&rendered.name(), &rendered.json, &mut |doc| {
        if lines {
            seen.push(Line::of(doc))
        }
    })?;
    let lines = derive_lines(seen, &documents);
    Ok(ParsedFile {
        rel: RENDERED_FILE.to_owned(),
        bytes: rendered.json.len() as u64,
        digest: None,
        documents: split_manifests(documents),
        lines,
    })
}

/// The lines of `documents` with the base64 of each bundle's manifests left out where it can
/// be derived (on the worker, where both are at hand). The decoder makes one document per
/// value it shows, in order; were that ever not so, the lines are kept whole.
fn derive_lines(mut lines: Vec<Line>, documents: &[(Document, Vec<String>)]) -> Vec<Line> {
    if lines.len() == documents.len() {
        for (line, (_, objects)) in lines.iter_mut().zip(documents) {
            line.derive(objects);
        }
    }
    lines
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
