//! The SQL side of an ingest: manifests and custom documents as they arrive, the light
//! documents set aside; then, one package at a time, the validated packages, channels and
//! bundles, and last the entries in ListBundles order.
use super::IngestError;
use super::read::Parsed;
use super::spill::{self, EntryStage, Manifest, Manifests, Spill};
use crate::encode::{
    BundleFacts, encode_edges, encode_objects, encode_package, encode_tail, to_struct,
};
use catalog::decode::LoadError;
use catalog::model::{ModelPackage, ValidationError, validate_packages};
use catalog::substitutes::{SubstitutesFor, csv_substitutes_for, substitutes_for};
use catalog::{Document, Meta};
use prost::Message;
use rusqlite::{Connection, params};
use std::collections::HashMap;

/// Takes documents in file order: manifests and custom documents go to the database at
/// once, the rest is set aside for validation.
pub(super) struct Writer<'c> {
    spill: Spill<'c>,
    insert_manifest: rusqlite::Statement<'c>,
    insert_custom: rusqlite::Statement<'c>,
    pub(super) custom_documents: usize,
    /// The bundles' `olm.substitutesFor` links, read while their CSV is at hand.
    pub(super) substitutes: SubstitutesFor,
}

impl<'c> Writer<'c> {
    /// A writer into `conn`, which has the spill attached.
    pub(super) fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(Writer {
            spill: Spill::new(conn)?,
            insert_manifest: conn.prepare(
                "INSERT INTO manifest (objects, csv_start, csv_len) VALUES (?1, ?2, ?3)",
            )?,
            insert_custom: conn
                .prepare("INSERT INTO custom_doc (schema, package, message) VALUES (?1, ?2, ?3)")?,
            custom_documents: 0,
            substitutes: SubstitutesFor::default(),
        })
    }

    /// Adds one document; a document that cannot be stored is added to `errors`, while a
    /// failure of the database itself (a full disk) ends the ingest. Returns the `manifest`
    /// row of a bundle.
    pub(super) fn add(
        &mut self,
        doc: Parsed,
        errors: &mut Vec<LoadError>,
    ) -> rusqlite::Result<Option<i64>> {
        match doc {
            Parsed::Bundle(b) => {
                // The CSV manifest says it when there is one, else `olm.csv.metadata` does.
                let target = match b.csv_index.and_then(|i| b.objects.get(i)) {
                    Some(csv) => csv_substitutes_for(csv),
                    None => substitutes_for(&b.light),
                };
                if let Some(target) = target {
                    self.substitutes
                        .record(&b.light.package, &b.light.name, target);
                }
                let (objects, csv_range) = encode_objects(&b.objects, b.csv_index);
                let (start, len) =
                    csv_range.map_or((None, None), |(s, l)| (Some(s as i64), Some(l as i64)));
                let id = self.insert_manifest.insert(params![objects, start, len])?;
                let manifest = Manifest {
                    id,
                    has_csv: csv_range.is_some(),
                };
                self.spill.bundle(b.light, manifest)?;
                return Ok(Some(id));
            }
            Parsed::Other(Document::Meta(meta)) => {
                let message = match custom_document(&meta) {
                    Ok(message) => message,
                    Err(e) => {
                        errors.push(e);
                        return Ok(None);
                    }
                };
                self.insert_custom
                    .execute(params![meta.schema, meta.package, message])?;
                self.custom_documents += 1;
            }
            Parsed::Other(doc) => self.spill.document(doc)?,
        }
        Ok(None)
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

/// How much of the model an ingest wrote.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) packages: usize,
    pub(super) bundles: usize,
    pub(super) entries: usize,
}

/// Validates the set-aside documents one package at a time and writes each package as it
/// passes (packages, channels, bundles), then the entries in ListBundles order (channel,
/// package, bundle). Rows come out in the order a model of the whole catalog wrote them. A
/// catalog with problems fails with all of them.
pub(super) fn write_model(conn: &Connection) -> Result<Counts, IngestError> {
    let mut problems = ValidationError::default();
    let mut packages = PackageWriter::new(conn)?;
    spill::for_each_package(conn, |docs, manifests| {
        let valid = validate_packages(docs, &mut problems);
        // Once there is a problem nothing written is kept: only look for the others.
        if problems.is_empty() {
            for pkg in valid.values() {
                packages.write(pkg, &manifests)?;
            }
        }
        Ok(())
    })?;
    if !problems.is_empty() {
        return Err(IngestError::Invalid(problems));
    }
    let mut counts = packages.counts;
    counts.entries = write_entries(conn)?;
    Ok(counts)
}

/// Writes packages, channels, bundles and their provided APIs, and stages each channel entry
/// with its bundle's row id.
struct PackageWriter<'c> {
    insert_package: rusqlite::Statement<'c>,
    insert_channel: rusqlite::Statement<'c>,
    insert_bundle: rusqlite::Statement<'c>,
    insert_api: rusqlite::Statement<'c>,
    entries: EntryStage<'c>,
    counts: Counts,
}

impl<'c> PackageWriter<'c> {
    fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(PackageWriter {
            insert_package: conn.prepare(
                "INSERT INTO package (name, default_channel, message) VALUES (?1, ?2, ?3)",
            )?,
            insert_channel: conn
                .prepare("INSERT INTO channel (package, name, head) VALUES (?1, ?2, ?3)")?,
            insert_bundle: conn.prepare(
                "INSERT INTO bundle (package, name, has_image, manifest_id, common, csv_synth) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?,
            insert_api: conn.prepare(
                "INSERT OR IGNORE INTO provided_api (grp, version, kind, bundle_id) VALUES (?1, ?2, ?3, ?4)",
            )?,
            entries: EntryStage::new(conn)?,
            counts: Counts::default(),
        })
    }

    fn write(&mut self, pkg: &ModelPackage, manifests: &Manifests) -> Result<(), IngestError> {
        self.insert_package.execute(params![
            pkg.name,
            pkg.default_channel,
            encode_package(pkg).encode_to_vec()
        ])?;
        for ch in pkg.channels.values() {
            self.insert_channel
                .execute(params![pkg.name, ch.name, ch.head])?;
        }
        let mut bundle_ids = HashMap::new();
        for b in pkg.bundles.values() {
            let Manifest { id, has_csv } = manifests.get(&b.name).copied().ok_or_else(|| {
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
            let common = bundle.encode_common(b, pkg.bundle_deprecation(&b.name));
            let row = self.insert_bundle.insert(params![
                pkg.name,
                b.name,
                !b.image.is_empty(),
                id,
                common,
                csv_synth
            ])?;
            for gvk in &provided {
                self.insert_api
                    .execute(params![gvk.group, gvk.version, gvk.kind, row])?;
            }
            bundle_ids.insert(b.name.as_str(), row);
        }
        for ch in pkg.channels.values() {
            for e in &ch.entries {
                let bundle_id = bundle_ids.get(e.name.as_str()).ok_or_else(|| {
                    IngestError::Storage(format!("entry {:?} has no bundle", e.name))
                })?;
                self.entries
                    .add(&pkg.name, &ch.name, *bundle_id, ch.head == e.name, e)?;
            }
        }
        self.counts.packages += 1;
        self.counts.bundles += pkg.bundles.len();
        Ok(())
    }
}

/// Writes the staged entries in ListBundles order (rowid order is what ListBundles streams),
/// with their skips; returns how many.
fn write_entries(conn: &Connection) -> Result<usize, IngestError> {
    let mut insert_entry = conn.prepare(
        "INSERT INTO entry (package, channel, bundle, bundle_id, replaces, is_head, tail, edges)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut insert_skip =
        conn.prepare("INSERT INTO skip (entry_id, ord, name) VALUES (?1, ?2, ?3)")?;
    let mut count = 0;
    spill::for_each_entry(conn, |row| {
        let e = &row.entry;
        let id = insert_entry.insert(params![
            row.package,
            row.channel,
            e.name,
            row.bundle_id,
            e.replaces,
            row.is_head,
            encode_tail(&row.channel, &e.skip_range),
            encode_edges(&e.replaces, &e.skips)
        ])?;
        for (ord, skip) in e.skips.iter().enumerate() {
            insert_skip.execute(params![id, ord as i64, skip])?;
        }
        count += 1;
        Ok(())
    })?;
    Ok(count)
}
