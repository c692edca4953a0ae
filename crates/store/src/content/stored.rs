//! A line read back: its skeleton with the base64 of its manifests put back where it was
//! left out ([`super::line`]). The one place that knows how a line is stored; `/all`, its
//! ranges, metas and GraphQL all read through it.
use super::QueryError;
use super::base64::{append_encoded, encoded_len};
use prost::encoding::decode_varint;

/// The columns a stored line is read from, in this order, and the join of `content_line c`
/// that gives them.
pub(super) const COLUMNS: &str = "c.skeleton, c.splices, m.objects";
pub(super) const MANIFESTS: &str = "LEFT JOIN manifest m ON m.id = c.manifest_id";

/// The tag of an `object` field of api.Bundle (field 5, length-delimited), as
/// `manifest.objects` holds them one after another.
const OBJECT_TAG: u64 = (5 << 3) | 2;

/// A piece of a line: stored text, or manifest bytes served as their base64.
enum Piece<'r> {
    Text(&'r [u8]),
    Base64(&'r [u8]),
}

impl Piece<'_> {
    fn len(&self) -> usize {
        match self {
            Piece::Text(text) => text.len(),
            Piece::Base64(bytes) => encoded_len(bytes.len()),
        }
    }
}

pub(super) struct StoredLine<'r> {
    pieces: Vec<Piece<'r>>,
}

impl<'r> StoredLine<'r> {
    /// The line of a row whose columns from `first` on are [`COLUMNS`].
    pub(super) fn read(row: &'r rusqlite::Row<'_>, first: usize) -> Result<Self, QueryError> {
        let blob = |column: usize| -> rusqlite::Result<Option<&'r [u8]>> {
            Ok(row.get_ref(first + column)?.as_blob_or_null()?)
        };
        let skeleton = blob(0)?.unwrap_or_default();
        let (Some(mut splices), Some(objects)) = (blob(1)?, blob(2)?) else {
            return Ok(StoredLine {
                pieces: vec![Piece::Text(skeleton)],
            });
        };
        let corrupt = |what: &str| QueryError::Storage(format!("catalogd content: {what}"));
        let objects = split_objects(objects).ok_or_else(|| corrupt("a malformed manifest"))?;
        let mut pieces = Vec::with_capacity(objects.len() * 2 + 1);
        let mut at = 0usize;
        while !splices.is_empty() {
            let step = decode_varint(&mut splices).map_err(|_| corrupt("malformed splices"))?;
            let index = decode_varint(&mut splices).map_err(|_| corrupt("malformed splices"))?;
            let place = at
                .checked_add(step as usize)
                .filter(|&place| place <= skeleton.len())
                .ok_or_else(|| corrupt("a splice past the end of its line"))?;
            let object = objects
                .get(index as usize)
                .ok_or_else(|| corrupt("a splice naming a manifest that is not there"))?;
            pieces.push(Piece::Text(&skeleton[at..place]));
            pieces.push(Piece::Base64(object));
            at = place;
        }
        pieces.push(Piece::Text(&skeleton[at..]));
        Ok(StoredLine { pieces })
    }

    pub(super) fn len(&self) -> usize {
        self.pieces.iter().map(Piece::len).sum()
    }

    /// Appends bytes `from..to` of the line to `out` (`to` at most its length).
    pub(super) fn append(&self, from: usize, to: usize, out: &mut Vec<u8>) {
        let mut start = 0;
        for piece in &self.pieces {
            let end = start + piece.len();
            let (lo, hi) = (from.max(start), to.min(end));
            if lo < hi {
                match piece {
                    Piece::Text(text) => out.extend_from_slice(&text[lo - start..hi - start]),
                    Piece::Base64(bytes) => append_encoded(bytes, lo - start, hi - start, out),
                }
            }
            start = end;
            if start >= to {
                break;
            }
        }
    }

    /// Appends the whole line to `out`.
    pub(super) fn append_all(&self, out: &mut Vec<u8>) {
        self.append(0, usize::MAX, out);
    }
}

/// The payloads of the `object` fields of `objects`, or `None` if it holds anything else.
fn split_objects(mut objects: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    while !objects.is_empty() {
        if decode_varint(&mut objects).ok()? != OBJECT_TAG {
            return None;
        }
        let len = usize::try_from(decode_varint(&mut objects).ok()?).ok()?;
        let (object, rest) = objects.split_at_checked(len)?;
        out.push(object);
        objects = rest;
    }
    Some(out)
}
