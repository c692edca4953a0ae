//! Reading an archive of tar segments for `--from`: every segment is checked against its
//! descriptor before anything is extracted (all present, of one archive, each whole), then
//! extracted into the store: each blob verified against its digest as it is written (one the
//! store already holds intact is skipped, so an interrupted extraction resumes), the index and
//! the plan written last.
use super::segment::{self, DESCRIPTOR, Descriptor};
use super::{INDEX, LAYOUT_MARKER, PLAN_FILE, write_plan};
use crate::copy::progress_bar;
use crate::error::Error;
use crate::plan::Plan;
use image::layout::Layout;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest descriptor, index.json or plan read from a segment.
const MAX_METADATA_BYTES: u64 = 64 << 20;

/// A complete set of segments of one archive.
#[derive(Debug)]
pub(crate) struct Segments {
    pub(crate) archive: String,
    pub(crate) after: Option<String>,
    files: Vec<(PathBuf, Descriptor)>,
}

fn problem(path: &Path, problem: impl Into<String>) -> Error {
    Error::Archive {
        path: path.to_owned(),
        problem: problem.into(),
    }
}

/// Reads an entry whole, refusing one larger than [`MAX_METADATA_BYTES`].
fn read_small(path: &Path, name: &str, entry: impl Read) -> Result<Vec<u8>, Error> {
    let mut data = Vec::new();
    entry
        .take(MAX_METADATA_BYTES + 1)
        .read_to_end(&mut data)
        .map_err(Error::io(path.display()))?;
    if data.len() as u64 > MAX_METADATA_BYTES {
        return Err(problem(
            path,
            format!("{name} is larger than {MAX_METADATA_BYTES} bytes"),
        ));
    }
    Ok(data)
}

/// A segment's descriptor and its own length.
fn descriptor(path: &Path) -> Result<(Descriptor, u64), Error> {
    let file = std::fs::File::open(path).map_err(Error::io(path.display()))?;
    let mut tar = tar::Archive::new(file);
    let not_ours =
        |why: String| problem(path, format!("not a segment of a mirror archive ({why})"));
    let mut entries = tar.entries().map_err(|e| not_ours(e.to_string()))?;
    let first = match entries.next() {
        Some(Ok(first)) => first,
        Some(Err(e)) => return Err(not_ours(e.to_string())),
        None => return Err(not_ours("it is empty".to_owned())),
    };
    let name = first.path_bytes().into_owned();
    if name != DESCRIPTOR.as_bytes() {
        let name = String::from_utf8_lossy(&name).into_owned();
        return Err(not_ours(format!(
            "its first entry is {name:?}, not {DESCRIPTOR}"
        )));
    }
    let data = read_small(path, DESCRIPTOR, first)?;
    let parsed = serde_json::from_slice(&data)
        .map_err(|e| not_ours(format!("its {DESCRIPTOR} does not parse: {e}")))?;
    Ok((parsed, data.len() as u64))
}

/// Checks the segments `found` in `dir` (by number) before anything is extracted: each is a
/// segment, of the same archive as the lowest-numbered one, under its own number, with the
/// length its descriptor accounts for; and none of the archive's segments is missing.
pub(crate) fn check(dir: &Path, found: Vec<(u32, PathBuf)>) -> Result<Segments, Error> {
    let mut files: Vec<(PathBuf, Descriptor)> = Vec::new();
    for (n, path) in found {
        let (d, descriptor_bytes) = descriptor(&path)?;
        if let Some((first, reference)) = files.first()
            && d.archive != reference.archive
        {
            return Err(problem(
                &path,
                format!(
                    "a segment of archive {}, not of archive {} like {} (carry each archive in its own directory)",
                    d.archive,
                    reference.archive,
                    first.file_name().unwrap_or_default().to_string_lossy()
                ),
            ));
        }
        if d.segment != n || d.segment == 0 || d.segment > d.segments {
            return Err(problem(
                &path,
                format!(
                    "holds segment {} of {} of archive {} (renamed?)",
                    d.segment, d.segments, d.archive
                ),
            ));
        }
        let expected = segment::segment_bytes(descriptor_bytes, &d.entries);
        let length = std::fs::metadata(&path)
            .map_err(Error::io(path.display()))?
            .len();
        if length < expected {
            return Err(problem(
                &path,
                format!(
                    "truncated: it has {length} bytes of the {expected} its entries take (copy it again)"
                ),
            ));
        } else if length > expected {
            return Err(problem(
                &path,
                format!(
                    "has {length} bytes where its entries take {expected}: not a segment as it was written"
                ),
            ));
        }
        files.push((path, d));
    }
    let Some((_, first)) = files.first() else {
        return Err(problem(dir, "no mirror_*.tar segments"));
    };
    let (archive, total, after) = (first.archive.clone(), first.segments, first.after.clone());
    let missing: Vec<String> = (1..=total)
        .filter(|n| !files.iter().any(|(_, d)| d.segment == *n))
        .map(segment::file_name)
        .collect();
    if !missing.is_empty() {
        return Err(Error::MissingSegments {
            dir: dir.to_owned(),
            archive,
            total,
            missing,
        });
    }
    Ok(Segments {
        archive,
        after,
        files,
    })
}

/// Extracts checked segments into `store`.
pub(crate) fn extract(segments: &Segments, store: &Layout) -> Result<(), Error> {
    let (mut index, mut plan) = (None, None);
    let sizes = segments.files.iter().flat_map(|(_, d)| &d.entries);
    let progress = progress_bar("extracting", sizes.map(|e| e.size).sum());
    for (path, d) in &segments.files {
        let file = std::fs::File::open(path).map_err(Error::io(path.display()))?;
        let mut tar = tar::Archive::new(std::io::BufReader::with_capacity(1 << 20, file));
        let damaged = |e: std::io::Error| problem(path, format!("damaged: {e}"));
        let mut entries = tar.entries().map_err(damaged)?.skip(1);
        for listed in &d.entries {
            let entry = match entries.next() {
                Some(entry) => entry.map_err(damaged)?,
                None => return Err(problem(path, format!("ends before {}", listed.name))),
            };
            let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
            if name != listed.name || entry.size() != listed.size {
                return Err(problem(
                    path,
                    format!(
                        "holds {name} ({} bytes) where its descriptor lists {} ({} bytes)",
                        entry.size(),
                        listed.name,
                        listed.size
                    ),
                ));
            }
            match name.as_str() {
                LAYOUT_MARKER => {}
                INDEX => index = Some(read_small(path, INDEX, entry)?),
                PLAN_FILE => plan = Some(read_small(path, PLAN_FILE, entry)?),
                blob => {
                    let Some(hex) = blob.strip_prefix("blobs/sha256/") else {
                        return Err(problem(path, format!("holds an unexpected entry {blob:?}")));
                    };
                    let digest = format!("sha256:{hex}");
                    let held = store
                        .holds(&digest, Some(listed.size))
                        .map_err(|e| problem(path, e.message))?;
                    if !held {
                        store
                            .ingest_blob(&digest, entry)
                            .map_err(|e| problem(path, e.message))?;
                    }
                }
            }
            progress.inc(listed.size);
        }
        if entries.next().is_some() {
            return Err(problem(path, "holds entries its descriptor does not list"));
        }
    }
    progress.finish_and_clear();
    let first = &segments.files[0].0;
    let missing = |name: &str| {
        problem(
            first,
            format!("archive {} carries no {name}", segments.archive),
        )
    };
    let index = index.ok_or_else(|| missing(INDEX))?;
    let plan = plan.ok_or_else(|| missing(PLAN_FILE))?;
    let index = serde_json::from_slice(&index)
        .map_err(|e| problem(first, format!("the archive's {INDEX} does not parse: {e}")))?;
    let plan: Plan = serde_json::from_slice(&plan).map_err(|e| {
        problem(
            first,
            format!("the archive's {PLAN_FILE} does not parse: {e}"),
        )
    })?;
    store.write_index(&index)?;
    write_plan(store.root(), &plan)
}
