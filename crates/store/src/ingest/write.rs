//! The SQL side of an ingest: manifests and custom documents as they arrive, then the
//! validated model's packages, channels, bundles and entries.
use super::IngestError;
use super::read::Parsed;
use crate::encode::{
    BundleFacts, encode_edges, encode_objects, encode_package, encode_tail, to_struct,
};
use catalog::decode::LoadError;
use catalog::model::Model;
use catalog::substitutes::{SubstitutesFor, csv_substitutes_for, substitutes_for};
use catalog::{ChannelEntry, DeclarativeConfig, Document, Meta};
use prost::Message;
use rusqlite::{Connection, params};
use std::collections::HashMap;

/// Takes documents in file order: manifests and custom documents go to the database at
/// once, the rest is kept for validation.
pub(super) struct Writer<'c> {
    pub(super) dc: DeclarativeConfig,
    /// (package, bundle) → manifest row and where the CSV is in it. The last one wins for
    /// duplicates, which validation rejects anyway.
    pub(super) manifests: HashMap<(String, String), (i64, bool)>,
    insert_manifest: rusqlite::Statement<'c>,
    insert_custom: rusqlite::Statement<'c>,
    pub(super) custom_documents: usize,
    /// The bundles' `olm.substitutesFor` links, read while their CSV is at hand.
    pub(super) substitutes: SubstitutesFor,
}

impl<'c> Writer<'c> {
    pub(super) fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(Writer {
            dc: DeclarativeConfig::default(),
            manifests: HashMap::new(),
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
                self.manifests.insert(
                    (b.light.package.clone(), b.light.name.clone()),
                    (id, csv_range.is_some()),
                );
                self.dc.bundles.push(kept(&b.light));
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
            Parsed::Other(doc) => self.dc.push(kept(&doc)),
        }
        Ok(None)
    }
}

/// A copy, made on the writer's thread, of what is kept until the whole catalog is read. The
/// original was allocated by a reading worker among the large buffers of its file (text,
/// values, manifests, lines), which are freed as soon as the file is handed over: glibc
/// gives each thread an arena of its own, and small survivors scattered through a worker's
/// arena keep it from reusing or returning that space, so resident memory grew with the
/// catalog (about 35 MiB over the 8,000-bundle one). The copy leaves the workers' arenas
/// holding only what is freed; the writer's own transient buffers are few and alike in size.
fn kept<T: Clone>(original: &T) -> T {
    original.clone()
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

/// Writes the validated model: packages, channels, bundles and one entry per (channel,
/// bundle) in ListBundles order. Returns (bundles, entries).
pub(super) fn write_model(
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
