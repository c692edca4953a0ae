//! Storing the lines during an ingest, in walk order.
use super::line::Line;
use super::{BUILT_AT, CONTENT_BYTES};
use crate::ingest::IngestError;
use prost::encoding::encode_varint;
use rusqlite::{Connection, Statement, params};

pub(crate) struct ContentWriter<'c> {
    insert: Statement<'c>,
    /// Where the next line starts in `/api/v1/all`.
    offset: i64,
    /// The splices of the line being added, encoded (reused).
    splices: Vec<u8>,
}

impl<'c> ContentWriter<'c> {
    pub(crate) fn new(conn: &'c Connection) -> rusqlite::Result<Self> {
        Ok(ContentWriter {
            insert: conn.prepare(
                "INSERT INTO content_line (offset, schema, package, name, skeleton, manifest_id, splices)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?,
            offset: 0,
            splices: Vec::new(),
        })
    }

    /// Stores `line`; `manifest` is the `manifest` row holding its bundle's manifests, which
    /// a line with splices must have.
    pub(crate) fn add(&mut self, line: &Line, manifest: Option<i64>) -> Result<(), IngestError> {
        self.splices.clear();
        let mut at = 0;
        for &(place, index) in &line.splices {
            encode_varint((place - at) as u64, &mut self.splices);
            encode_varint(index as u64, &mut self.splices);
            at = place;
        }
        let spliced = !self.splices.is_empty();
        if spliced && manifest.is_none() {
            return Err(IngestError::Storage(format!(
                "the catalogd line of {:?} refers to manifests that were not stored",
                line.name
            )));
        }
        self.insert.execute(params![
            self.offset,
            line.schema,
            line.package,
            line.name,
            line.skeleton.as_bytes(),
            manifest.filter(|_| spliced),
            spliced.then_some(&self.splices[..]),
        ])?;
        self.offset += line.length as i64;
        Ok(())
    }

    /// Stores the length of `/api/v1/all` and when it was built (what `Last-Modified` says,
    /// kept with the index so that a warm start says the same).
    pub(crate) fn finish(self, conn: &Connection) -> Result<(), IngestError> {
        let built = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut info = conn.prepare("INSERT INTO info (key, value) VALUES (?1, ?2)")?;
        info.execute(params![CONTENT_BYTES, self.offset.to_string()])?;
        info.execute(params![BUILT_AT, built.to_string()])?;
        Ok(())
    }
}
