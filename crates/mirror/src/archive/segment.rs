//! One tar file of an archive that `archiveSize` splits: `mirror_000001.tar`,
//! `mirror_000002.tar`, … Each is a plain tar whose first entry, `mirror-segment.json`, says
//! which archive it belongs to, which segment of how many it is, and every entry that follows
//! with its size. That is enough to name, before anything is extracted, a segment that is
//! missing, truncated, or from another archive: a tar's length follows from its entries' sizes
//! (one 512-byte header each, data padded to 512 bytes, two zero blocks at the end).
use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The name of every segment's first entry.
pub(crate) const DESCRIPTOR: &str = "mirror-segment.json";
const BLOCK: u64 = 512;
const PREFIX: &str = "mirror_";
const SUFFIX: &str = ".tar";

/// The first entry of a segment.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Descriptor {
    /// The archive's id: every segment of one archive has it.
    pub(crate) archive: String,
    /// This segment's number, from 1.
    pub(crate) segment: u32,
    /// How many segments the archive has.
    pub(crate) segments: u32,
    /// A differential archive: the id of the archive written before it into the same
    /// directory, whose blobs (and those of the archives before it) it leaves out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) after: Option<String>,
    /// The entries after this one, in order.
    pub(crate) entries: Vec<Entry>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Entry {
    /// `oci-layout`, `index.json`, `mirror-plan.json` or `blobs/sha256/<hex>`.
    pub(crate) name: String,
    pub(crate) size: u64,
}

/// The file name of segment `n`: oc-mirror's `mirror_%06d.tar`.
pub(crate) fn file_name(n: u32) -> String {
    format!("{PREFIX}{n:06}{SUFFIX}")
}

/// The segment number a file name carries, if it is a segment's name.
fn number(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    if digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

/// The bytes a tar entry of `size` bytes takes: its header and its data padded to blocks.
pub(crate) fn entry_bytes(size: u64) -> u64 {
    BLOCK + size.div_ceil(BLOCK) * BLOCK
}

/// The bytes of a whole segment whose descriptor has `descriptor` bytes and lists `entries`.
pub(crate) fn segment_bytes(descriptor: u64, entries: &[Entry]) -> u64 {
    entry_bytes(descriptor) + entries.iter().map(|e| entry_bytes(e.size)).sum::<u64>() + 2 * BLOCK
}

/// The bytes one entry adds to a descriptor's JSON (its object and a comma).
pub(crate) fn listed_bytes(entry: &Entry) -> u64 {
    serde_json::to_vec(entry).map_or(0, |v| v.len() as u64) + 1
}

/// The segments in `dir`, by number.
pub(crate) fn segments_in(dir: &Path) -> Result<Vec<(u32, PathBuf)>, Error> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir.display())(e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(Error::io(dir.display()))?;
        if let Some(n) = entry.file_name().to_str().and_then(number) {
            found.push((n, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// A tar header for a regular file: names stay below ustar's 100 bytes, so no entry needs an
/// extension block, and sizes above 8 GiB use GNU's binary size field.
pub(crate) fn header(name: &str, size: u64) -> Result<tar::Header, Error> {
    let mut header = tar::Header::new_gnu();
    header
        .set_path(name)
        .map_err(Error::io(format!("tar entry {name}")))?;
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    Ok(header)
}

/// Writes one entry at the end of a segment: its header, `size` bytes of `data` and zeros up
/// to the next block; returns how many bytes `data` had. The data goes from file to file
/// through `io::copy`, which the kernel does without bringing it into this process.
pub(crate) fn write_entry(
    out: &mut &std::fs::File,
    name: &str,
    data: impl std::io::Read,
    size: u64,
) -> std::io::Result<u64> {
    use std::io::Write;
    let header = header(name, size).map_err(std::io::Error::other)?;
    out.write_all(header.as_bytes())?;
    let copied = std::io::copy(&mut data.take(size), out)?;
    out.write_all(&ZEROS[..(size.next_multiple_of(BLOCK) - size) as usize])?;
    Ok(copied)
}

/// Ends a segment as every tar ends: two zero blocks.
pub(crate) fn write_end(out: &mut &std::fs::File) -> std::io::Result<()> {
    std::io::Write::write_all(out, &ZEROS)
}

const ZEROS: [u8; 2 * BLOCK as usize] = [0; 2 * BLOCK as usize];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sizes() {
        assert_eq!(file_name(1), "mirror_000001.tar");
        assert_eq!(number("mirror_000012.tar"), Some(12));
        for other in ["mirror_12.tar", "mirror_000012.tar.part", "x_000001.tar"] {
            assert_eq!(number(other), None, "{other}");
        }
        assert_eq!(entry_bytes(0), 512);
        assert_eq!(entry_bytes(1), 1024);
        assert_eq!(entry_bytes(512), 1024);
        let entries = [Entry {
            name: "index.json".into(),
            size: 513,
        }];
        // Descriptor (512 + 512), entry (512 + 1024), end (1024).
        assert_eq!(segment_bytes(100, &entries), 1024 + 1536 + 1024);
        // {"name":"index.json","size":513} and a comma.
        assert_eq!(listed_bytes(&entries[0]), 33);
    }

    /// A segment written entry by entry has the computed length and reads as a tar.
    #[test]
    fn a_written_segment_has_the_computed_length() {
        let entries = vec![
            Entry {
                name: "blobs/sha256/".to_owned() + &"a".repeat(64),
                size: 1000,
            },
            Entry {
                name: "oci-layout".into(),
                size: 0,
            },
        ];
        let descriptor = b"{}";
        let file = tempfile::tempfile().unwrap();
        let mut out = &file;
        write_entry(&mut out, DESCRIPTOR, &descriptor[..], 2).unwrap();
        for e in &entries {
            let data = vec![7u8; e.size as usize];
            assert_eq!(
                write_entry(&mut out, &e.name, &data[..], e.size).unwrap(),
                e.size
            );
        }
        write_end(&mut out).unwrap();
        assert_eq!(file.metadata().unwrap().len(), segment_bytes(2, &entries));
        std::io::Seek::rewind(&mut out).unwrap();
        let mut tar = tar::Archive::new(out);
        let read: Vec<(String, u64)> = tar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.path().unwrap().display().to_string(), e.size())
            })
            .collect();
        let mut expected = vec![(DESCRIPTOR.to_owned(), 2)];
        expected.extend(entries.iter().map(|e| (e.name.clone(), e.size)));
        assert_eq!(read, expected);
    }
}
