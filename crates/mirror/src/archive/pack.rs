//! Writing an archive as tar segments of at most `archiveSize` bytes each, from the store the
//! copy filled: the layout's metadata (`oci-layout`, `index.json`, `mirror-plan.json`), every
//! manifest its index reaches, and every blob those name that no earlier archive of the
//! directory carried ([`History`]).
//!
//! Entries are placed largest first into the first segment with room (first-fit decreasing),
//! never split; one larger than the limit gets a segment of its own, with a warning. Segments
//! are written to temporary files, flushed, and only then renamed over the names of the
//! previous archive's segments, whose surplus ones are removed; the archive is recorded last.
//! An interrupted run leaves the previous archive and record in place.
use super::history::History;
use super::segment::{self, DESCRIPTOR, Descriptor, Entry};
use super::{INDEX, LAYOUT_MARKER, PLAN_FILE, contents};
use crate::copy::progress_bar;
use crate::error::Error;
use image::layout::{Layout, persist, sync_dir, temp_file};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What [`pack`] wrote.
#[derive(Debug)]
pub(crate) struct Packed {
    dir: PathBuf,
    pub(crate) id: String,
    pub(crate) segments: u32,
    /// Blobs carried (manifests and the layout's metadata files not counted) and their bytes.
    pub(crate) blobs: usize,
    pub(crate) bytes: u64,
    /// Blobs left out because an earlier archive carried them.
    pub(crate) left_out: usize,
}

impl std::fmt::Display for Packed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "archive {}: {} segments in {}, {} blobs ({:.1} MiB)",
            self.id,
            self.segments,
            self.dir.display(),
            self.blobs,
            self.bytes as f64 / 1048576.0
        )?;
        if self.left_out > 0 {
            write!(
                f,
                "; {} blobs left out that earlier archives carried (a differential archive)",
                self.left_out
            )?;
        }
        Ok(())
    }
}

/// Room kept in every segment for its descriptor's fields besides the entry list.
const DESCRIPTOR_RESERVE: u64 = 512;

struct Item {
    entry: Entry,
    path: PathBuf,
}

/// A segment being filled: its items, the bytes they add to the descriptor and to the tar.
#[derive(Default)]
struct Bin {
    items: Vec<usize>,
    listed: u64,
    data: u64,
    /// Holds one entry larger than the limit.
    oversized: bool,
}

/// The most bytes a segment of this content takes (its descriptor is no larger than this).
fn bound(listed: u64, data: u64) -> u64 {
    segment::entry_bytes(DESCRIPTOR_RESERVE + listed) + data + 1024
}

/// Places entries into segments of at most `limit` bytes (see the module comment).
fn assign(items: &[Item], limit: u64) -> Vec<Bin> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&items[a].entry, &items[b].entry);
        b.size.cmp(&a.size).then_with(|| a.name.cmp(&b.name))
    });
    let mut bins: Vec<Bin> = Vec::new();
    for i in order {
        let listed = segment::listed_bytes(&items[i].entry);
        let data = segment::entry_bytes(items[i].entry.size);
        let bin = match bins
            .iter_mut()
            .position(|b| !b.oversized && bound(b.listed + listed, b.data + data) <= limit)
        {
            Some(at) => &mut bins[at],
            None => {
                bins.push(Bin {
                    oversized: bound(listed, data) > limit,
                    ..Bin::default()
                });
                bins.last_mut().expect("just pushed")
            }
        };
        bin.items.push(i);
        bin.listed += listed;
        bin.data += data;
    }
    bins
}

/// An archive's id: a digest of what it carries and of the archive it follows.
fn archive_id(items: &[Item], after: Option<&str>) -> Result<String, Error> {
    let mut hasher = Sha256::new();
    hasher.update(after.unwrap_or("full"));
    for item in items {
        hasher.update(format!("\n{} {}", item.entry.name, item.entry.size));
        if !item.entry.name.starts_with("blobs/") {
            // The metadata files are not named by their digest: their bytes count.
            let data = std::fs::read(&item.path).map_err(Error::io(item.path.display()))?;
            hasher.update(Sha256::digest(&data));
        }
    }
    Ok(format!("{:x}", hasher.finalize())[..16].to_owned())
}

/// Writes the archive of `store` into `dir` as segments of at most `limit` bytes.
pub(crate) fn pack(dir: &Path, store: &Layout, limit: u64) -> Result<Packed, Error> {
    let mut history = History::read(dir)?;
    let contents = contents(store)?;
    let known = history.blobs();
    let mut items = Vec::new();
    for name in [LAYOUT_MARKER, INDEX, PLAN_FILE] {
        let path = store.root().join(name);
        let size = std::fs::metadata(&path)
            .map_err(Error::io(path.display()))?
            .len();
        items.push(Item {
            entry: Entry {
                name: name.to_owned(),
                size,
            },
            path,
        });
    }
    let (mut blobs, mut bytes, mut left_out) = (0, 0, 0);
    let mut carried = Vec::new();
    let all = contents.manifests.iter().map(|m| (m, true));
    for ((digest, size), manifest) in all.chain(contents.blobs.iter().map(|b| (b, false))) {
        if !manifest && known.contains(digest.as_str()) {
            left_out += 1;
            continue;
        }
        let path = store.blob_path(digest)?;
        if !store.holds(digest, Some(*size))? {
            return Err(Error::Archive {
                path,
                problem: format!("blob {digest} is not in the store (run again to fetch it)"),
            });
        }
        // Manifests travel in every archive: only the other blobs are recorded.
        if !manifest {
            blobs += 1;
            bytes += size;
            carried.push(digest.clone());
        }
        items.push(Item {
            entry: Entry {
                name: format!("blobs/sha256/{}", &digest["sha256:".len()..]),
                size: *size,
            },
            path,
        });
    }
    drop(known);
    let after = history.last().map(str::to_owned);
    let id = archive_id(&items, after.as_deref())?;
    let bins = assign(&items, limit);
    let total = bins.len() as u32;
    let progress = progress_bar("archiving", items.iter().map(|i| i.entry.size).sum());
    let mut written = Vec::new();
    for (n, bin) in (1..).zip(&bins) {
        if bin.oversized {
            let entry = &items[bin.items[0]].entry;
            eprintln!(
                "warning: {} ({} bytes) is larger than archiveSize ({limit} bytes): {} holds it alone and is larger too",
                entry.name,
                entry.size,
                segment::file_name(n)
            );
        }
        let descriptor = Descriptor {
            archive: id.clone(),
            segment: n,
            segments: total,
            after: after.clone(),
            entries: bin.items.iter().map(|&i| items[i].entry.clone()).collect(),
        };
        let members = bin.items.iter().map(|&i| &items[i]);
        written.push(write_segment(dir, &descriptor, members, &progress)?);
    }
    progress.finish_and_clear();
    for (n, tmp) in (1..).zip(written) {
        persist(tmp, &dir.join(segment::file_name(n)))?;
    }
    for (n, path) in segment::segments_in(dir)? {
        if n > total {
            std::fs::remove_file(&path).map_err(Error::io(path.display()))?;
        }
    }
    sync_dir(dir)?;
    history.record(dir, &id, total, carried)?;
    Ok(Packed {
        dir: dir.to_owned(),
        id,
        segments: total,
        blobs,
        bytes,
        left_out,
    })
}

/// Writes one segment into a temporary file in `dir` (flushed when it is persisted).
fn write_segment<'a>(
    dir: &Path,
    descriptor: &Descriptor,
    items: impl Iterator<Item = &'a Item>,
    progress: &indicatif::ProgressBar,
) -> Result<tempfile::NamedTempFile, Error> {
    let name = segment::file_name(descriptor.segment);
    let fail = |e: std::io::Error| Error::Io {
        what: format!("writing {}", dir.join(&name).display()),
        source: e,
    };
    let tmp = temp_file(dir)?;
    let json = serde_json::to_vec(descriptor).map_err(|e| Error::Archive {
        path: dir.join(&name),
        problem: e.to_string(),
    })?;
    let mut out = tmp.as_file();
    segment::write_entry(&mut out, DESCRIPTOR, &json[..], json.len() as u64).map_err(fail)?;
    for item in items {
        let file = std::fs::File::open(&item.path).map_err(Error::io(item.path.display()))?;
        let size = item.entry.size;
        let copied = segment::write_entry(&mut out, &item.entry.name, file, size).map_err(fail)?;
        if copied != size {
            return Err(Error::Archive {
                path: item.path.clone(),
                problem: format!("shorter than its {size} bytes while it was archived"),
            });
        }
        progress.inc(size);
    }
    segment::write_end(&mut out).map_err(fail)?;
    let expected = segment::segment_bytes(json.len() as u64, &descriptor.entries);
    let length = tmp.as_file().metadata().map_err(fail)?.len();
    if length != expected {
        return Err(Error::Archive {
            path: dir.join(&name),
            problem: format!("written with {length} bytes where {expected} were expected"),
        });
    }
    Ok(tmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(name: &str, size: u64) -> Item {
        Item {
            entry: Entry {
                name: name.into(),
                size,
            },
            path: PathBuf::new(),
        }
    }

    #[test]
    fn largest_first_into_the_first_segment_with_room() {
        let items = [
            item("a", 10_000),
            item("b", 30_000),
            item("c", 20_000),
            item("huge", 100_000),
            item("d", 5_000),
        ];
        let limit = 40_000;
        let bins = assign(&items, limit);
        let names: Vec<(Vec<&str>, bool)> = bins
            .iter()
            .map(|b| {
                let names = b.items.iter().map(|&i| items[i].entry.name.as_str());
                (names.collect(), b.oversized)
            })
            .collect();
        assert_eq!(
            names,
            [
                (vec!["huge"], true),
                (vec!["b", "d"], false),
                (vec!["c", "a"], false),
            ]
        );
        for bin in bins.iter().filter(|b| !b.oversized) {
            assert!(bound(bin.listed, bin.data) <= limit);
        }
    }
}
