//! A document's line as an ingest makes it: the canonical text (catalogd-http.md §2) with
//! the base64 of its bundle's manifests left out wherever encoding the manifest the gRPC index
//! stores gives back that text byte for byte. Nothing is assumed about where such a text is
//! or how the source wrote it: each long string value is compared with the encoding itself,
//! and whatever does not match (non-canonical base64, a `data` that decoded to something else,
//! a manifest read as YAML, an escaped string) stays in the line as it is.
use super::base64::is_base64_of;
use catalog::json::write_canonical_noting;
use catalog::special_field;
use serde_json::Value;
use std::ops::Range;

/// String values shorter than this are never looked at: leaving them out saves little.
const MIN_DERIVED: usize = 64;

/// One document as the content stores it.
pub(crate) struct Line {
    /// The canonical JSON text and its `\n`, less the parts left out.
    pub(super) skeleton: String,
    /// Where each part left out goes in `skeleton`, and which of the bundle's manifests (by
    /// index in its `manifest.objects`) it is the base64 of; in order.
    pub(super) splices: Vec<(usize, usize)>,
    /// The length of the whole line.
    pub(super) length: usize,
    /// The long string values of the text, until [`Line::derive`] looks at them.
    long: Vec<Range<usize>>,
    pub(super) schema: String,
    pub(super) package: String,
    pub(super) name: String,
}

impl Line {
    /// The line of a decoded document. `schema`, `package` and `name` are found as the
    /// decoder finds them (case-insensitively); the text keeps the source's spelling of keys.
    pub(crate) fn of(doc: &Value) -> Line {
        let mut text = String::new();
        let mut long = Vec::new();
        write_canonical_noting(doc, &mut text, MIN_DERIVED, &mut long);
        text.push('\n');
        Line {
            schema: special_field(doc, "schema"),
            package: special_field(doc, "package"),
            name: special_field(doc, "name"),
            length: text.len(),
            skeleton: text,
            splices: Vec::new(),
            long,
        }
    }

    /// Leaves out of the text every long string value that is exactly the base64 of one of
    /// `objects` (the document's bundle manifests, in property order): each such value is
    /// matched with the first manifest after the previous match whose encoding it is.
    pub(crate) fn derive(&mut self, objects: &[String]) {
        let long = std::mem::take(&mut self.long);
        if objects.is_empty() || long.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.skeleton);
        let mut skeleton = String::with_capacity(text.len().min(64 << 10));
        let (mut copied, mut next) = (0, 0);
        for span in long {
            let value = text[span.clone()].as_bytes();
            let found = objects[next..]
                .iter()
                .position(|object| is_base64_of(value, object.as_bytes()));
            if let Some(found) = found {
                skeleton.push_str(&text[copied..span.start]);
                self.splices.push((skeleton.len(), next + found));
                copied = span.end;
                next += found + 1;
                if next == objects.len() {
                    break;
                }
            }
        }
        skeleton.push_str(&text[copied..]);
        self.skeleton = skeleton;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
