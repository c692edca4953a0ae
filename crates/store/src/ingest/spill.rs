//! What an ingest keeps until every file is read, kept in a file of its own beside the
//! partial index (attached as `spill`) instead of in memory: the light documents (packages,
//! channels, bundles without their manifests, deprecations), handed back one package at a
//! time for validation and writing, and then the channel entries, staged until they can be
//! written in ListBundles order. Memory holds one package, however large the catalog: no
//! validation rule looks beyond one package (`catalog::model::validate_packages`).
use super::IngestError;
use catalog::model::Documents;
use catalog::{Bundle, Channel, ChannelEntry, Deprecations, Document, Package};
use rusqlite::{Connection, Statement, params};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// Attaches the (new, empty) file at `path` as the spill; outside a transaction, as SQLite
/// requires. Nothing in it outlives the ingest, so it is written without a journal.
pub(super) fn attach(conn: &Connection, path: &Path) -> rusqlite::Result<()> {
    let path = path
        .to_str()
        .ok_or_else(|| rusqlite::Error::InvalidPath(path.to_owned()))?;
    conn.execute("ATTACH DATABASE ?1 AS spill", [path])?;
    // 2 MiB of page cache: documents are appended by package mostly in file order, and read
    // back in key order; entries are staged a few channels at a time.
    conn.execute_batch(
        "PRAGMA spill.journal_mode = OFF; PRAGMA spill.synchronous = OFF;
         PRAGMA spill.page_size = 8192; PRAGMA spill.cache_size = -2048;
         CREATE TABLE spill.doc (
             package TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL,
             PRIMARY KEY (package, seq)) WITHOUT ROWID;
         CREATE TABLE spill.entry (
             channel TEXT NOT NULL, package TEXT NOT NULL, bundle TEXT NOT NULL,
             bundle_id INTEGER NOT NULL, is_head INTEGER NOT NULL, body BLOB NOT NULL,
             PRIMARY KEY (channel, package, bundle)) WITHOUT ROWID;",
    )
}

/// Detaches the spill once the ingest's transaction is over; its file is then removed.
pub(super) fn detach(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("DETACH DATABASE spill")
}

/// Where a bundle's manifests were written, and whether they hold a CSV.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(super) struct Manifest {
    pub(super) id: i64,
    pub(super) has_csv: bool,
}

/// A light document as it is set aside.
#[derive(Serialize, Deserialize)]
enum Light {
    Package(Package),
    Channel(Channel),
    Bundle {
        bundle: Bundle,
        manifest: Option<Manifest>,
    },
    /// With its position among the catalog's deprecation documents, which a message names.
    Deprecations(usize, Deprecations),
}

/// Sets documents aside as the writer takes them, in file order.
pub(super) struct Spill<'c> {
    insert: Statement<'c>,
    seq: i64,
    deprecations: usize,
    body: Vec<u8>,
}

impl<'c> Spill<'c> {
    pub(super) fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(Spill {
            insert: conn
                .prepare("INSERT INTO spill.doc (package, seq, body) VALUES (?1, ?2, ?3)")?,
            seq: 0,
            deprecations: 0,
            body: Vec::new(),
        })
    }

    /// A bundle whose manifests were written to `manifest`.
    pub(super) fn bundle(&mut self, bundle: Bundle, manifest: Manifest) -> rusqlite::Result<()> {
        self.add(Light::Bundle {
            bundle,
            manifest: Some(manifest),
        })
    }

    /// Any other document the model is built from; custom documents are not (they are stored
    /// as they come), and are not set aside.
    pub(super) fn document(&mut self, doc: Document) -> rusqlite::Result<()> {
        let light = match doc {
            Document::Package(p) => Light::Package(p),
            Document::Channel(c) => Light::Channel(c),
            // Its manifests were not split off: validation reports it, or writing finds
            // them missing.
            Document::Bundle(bundle) => Light::Bundle {
                bundle,
                manifest: None,
            },
            Document::Deprecations(d) => {
                self.deprecations += 1;
                Light::Deprecations(self.deprecations - 1, d)
            }
            Document::Meta(_) => return Ok(()),
        };
        self.add(light)
    }

    fn add(&mut self, light: Light) -> rusqlite::Result<()> {
        let package = match &light {
            Light::Package(p) => &p.name,
            Light::Channel(c) => &c.package,
            Light::Bundle { bundle, .. } => &bundle.package,
            Light::Deprecations(_, d) => &d.package,
        };
        self.body.clear();
        serde_json::to_writer(&mut self.body, &light)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        self.seq += 1;
        self.insert.execute(params![package, self.seq, self.body])?;
        Ok(())
    }
}

/// Manifest rows of one package's bundles, by bundle name.
pub(super) type Manifests = HashMap<String, Manifest>;

/// In the primary key's order: no sort, nothing held but the current row.
const SELECT_DOCUMENTS: &str = "SELECT package, body FROM spill.doc ORDER BY package, seq";

/// Hands `each` the set-aside documents one package at a time, in package name order (a
/// group without a package document, and the one of documents naming none, included), each
/// group's documents in file order.
pub(super) fn for_each_package(
    conn: &Connection,
    mut each: impl FnMut(Documents, Manifests) -> Result<(), IngestError>,
) -> Result<(), IngestError> {
    let mut select = conn.prepare(SELECT_DOCUMENTS)?;
    let mut rows = select.query([])?;
    let mut current: Option<(String, Documents, Manifests)> = None;
    while let Some(row) = rows.next()? {
        let package = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        if current.as_ref().is_none_or(|(name, ..)| name != package) {
            if let Some((_, docs, manifests)) = current.take() {
                each(docs, manifests)?;
            }
            current = Some((package.to_owned(), Documents::default(), Manifests::new()));
        }
        let Some((_, docs, manifests)) = current.as_mut() else {
            continue;
        };
        match decode(row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?)? {
            Light::Package(p) => docs.packages.push(p),
            Light::Channel(c) => docs.channels.push(c),
            Light::Bundle { bundle, manifest } => {
                if let Some(manifest) = manifest {
                    manifests.insert(bundle.name.clone(), manifest);
                }
                docs.bundles.push(bundle);
            }
            Light::Deprecations(i, d) => docs.deprecations.push((i, d)),
        }
    }
    if let Some((_, docs, manifests)) = current {
        each(docs, manifests)?;
    }
    Ok(())
}

fn decode<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, IngestError> {
    serde_json::from_slice(body)
        .map_err(|e| IngestError::Storage(format!("reading back a set-aside document: {e}")))
}

/// A channel entry staged for writing, with what the entry table needs beside it.
pub(super) struct StagedEntry {
    pub(super) package: String,
    pub(super) channel: String,
    pub(super) bundle_id: i64,
    pub(super) is_head: bool,
    pub(super) entry: ChannelEntry,
}

/// Stages channel entries as packages are written, in any order.
pub(super) struct EntryStage<'c> {
    insert: Statement<'c>,
    body: Vec<u8>,
}

impl<'c> EntryStage<'c> {
    pub(super) fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(EntryStage {
            insert: conn.prepare(
                "INSERT INTO spill.entry (channel, package, bundle, bundle_id, is_head, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?,
            body: Vec::new(),
        })
    }

    pub(super) fn add(
        &mut self,
        package: &str,
        channel: &str,
        bundle_id: i64,
        is_head: bool,
        entry: &ChannelEntry,
    ) -> rusqlite::Result<()> {
        self.body.clear();
        serde_json::to_writer(&mut self.body, entry)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        self.insert.execute(params![
            channel, package, entry.name, bundle_id, is_head, self.body
        ])?;
        Ok(())
    }
}

/// In the primary key's order, as [`SELECT_DOCUMENTS`].
const SELECT_ENTRIES: &str = "SELECT channel, package, bundle_id, is_head, body FROM spill.entry
     ORDER BY channel, package, bundle";

/// Hands `each` every staged entry in ListBundles order: channel, package, bundle name.
pub(super) fn for_each_entry(
    conn: &Connection,
    mut each: impl FnMut(StagedEntry) -> Result<(), IngestError>,
) -> Result<(), IngestError> {
    let mut select = conn.prepare(SELECT_ENTRIES)?;
    let mut rows = select.query([])?;
    while let Some(row) = rows.next()? {
        each(StagedEntry {
            channel: row.get(0)?,
            package: row.get(1)?,
            bundle_id: row.get(2)?,
            is_head: row.get(3)?,
            entry: decode(row.get_ref(4)?.as_blob().map_err(rusqlite::Error::from)?)?,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalog::Meta;

    fn attached() -> (Connection, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("index.db")).unwrap();
        attach(&conn, &dir.path().join("spill.db")).unwrap();
        (conn, dir)
    }

    fn bundle(package: &str, name: &str) -> Bundle {
        Bundle {
            package: package.into(),
            name: name.into(),
            ..Bundle::default()
        }
    }

    fn deprecations(package: &str) -> Document {
        Document::Deprecations(Deprecations {
            package: package.into(),
            ..Deprecations::default()
        })
    }

    #[test]
    fn documents_come_back_one_package_at_a_time_in_file_order() {
        let (conn, _dir) = attached();
        let mut spill = Spill::new(&conn).unwrap();
        let package = Package {
            name: "zed".into(),
            ..Package::default()
        };
        spill.document(Document::Package(package)).unwrap();
        let manifest = |id, has_csv| Manifest { id, has_csv };
        spill
            .bundle(bundle("zed", "zed.v2"), manifest(7, true))
            .unwrap();
        spill.document(deprecations("")).unwrap();
        spill
            .document(Document::Bundle(bundle("abc", "abc.v1")))
            .unwrap();
        spill
            .bundle(bundle("zed", "zed.v1"), manifest(8, false))
            .unwrap();
        spill.document(deprecations("zed")).unwrap();
        let custom = Meta {
            package: "zed".into(),
            ..Meta::default()
        };
        spill.document(Document::Meta(custom)).unwrap();
        drop(spill);

        let mut groups = Vec::new();
        for_each_package(&conn, |docs, manifests| {
            let mut manifests: Vec<(String, i64, bool)> = manifests
                .into_iter()
                .map(|(name, m)| (name, m.id, m.has_csv))
                .collect();
            manifests.sort();
            groups.push((
                docs.packages.len(),
                docs.bundles.into_iter().map(|b| b.name).collect::<Vec<_>>(),
                docs.deprecations
                    .into_iter()
                    .map(|(i, d)| (i, d.package))
                    .collect::<Vec<_>>(),
                manifests,
            ));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            groups,
            [
                (0, vec![], vec![(0, String::new())], vec![]),
                (0, vec!["abc.v1".to_owned()], vec![], vec![]),
                (
                    1,
                    vec!["zed.v2".to_owned(), "zed.v1".to_owned()],
                    vec![(1, "zed".to_owned())],
                    vec![
                        ("zed.v1".to_owned(), 8, false),
                        ("zed.v2".to_owned(), 7, true)
                    ]
                ),
            ]
        );
    }

    #[test]
    fn entries_come_back_in_list_bundles_order() {
        let (conn, _dir) = attached();
        let mut stage = EntryStage::new(&conn).unwrap();
        let entry = |name: &str| ChannelEntry::linked(name, "", &["old"]);
        stage
            .add("foo", "stable", 1, true, &entry("foo.v2"))
            .unwrap();
        stage
            .add("bar", "alpha", 2, false, &entry("bar.v1"))
            .unwrap();
        stage
            .add("foo", "alpha", 3, false, &entry("foo.v1"))
            .unwrap();
        stage
            .add("bar", "stable", 4, true, &entry("bar.v1"))
            .unwrap();
        drop(stage);
        let mut order = Vec::new();
        for_each_entry(&conn, |row| {
            assert_eq!(row.entry.skips, ["old"]);
            order.push((
                row.channel,
                row.package,
                row.entry.name,
                row.bundle_id,
                row.is_head,
            ));
            Ok(())
        })
        .unwrap();
        let row = |c: &str, p: &str, b: &str, id, head| {
            (c.to_owned(), p.to_owned(), b.to_owned(), id, head)
        };
        assert_eq!(
            order,
            [
                row("alpha", "bar", "bar.v1", 2, false),
                row("alpha", "foo", "foo.v1", 3, false),
                row("stable", "bar", "bar.v1", 4, true),
                row("stable", "foo", "foo.v2", 1, true),
            ]
        );
    }

    /// Reading back walks the primary keys: no sort, which SQLite would do in memory here
    /// (`temp_store = MEMORY`), holding the whole catalog again.
    #[test]
    fn reading_back_sorts_nothing() {
        let (conn, _dir) = attached();
        for select in [SELECT_DOCUMENTS, SELECT_ENTRIES] {
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {select}"))
                .unwrap()
                .query_map([], |r| r.get(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(
                plan.iter().all(|step| !step.contains("TEMP B-TREE")),
                "{select}: {plan:?}"
            );
            assert!(
                plan.iter().any(|step| step.starts_with("SCAN")),
                "{select}: {plan:?}"
            );
        }
    }
}
