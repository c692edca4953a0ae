//! A bundle directory as the content of the ConfigMap OLM unpacks bundles into: what
//! `opm alpha bundle extract` writes for the unpack Job of OLM's catalog operator, and what
//! that operator reads back (operator-registry `pkg/configmap`: `ConfigMapWriter.Populate`
//! writes, `BundleLoader.Load` reads). The rules, as opm has them:
//!
//! - every entry of `manifests/` then `metadata/` (name order, hidden files too) is one key,
//!   its name with each character outside `[-A-Za-z0-9_.]` turned into `-` (opm 1.57 and
//!   later; earlier ones wrote `~`, which the API server refuses in a key);
//! - a file named `annotations.yaml` is not stored: the six bundle annotations it sets
//!   become the ConfigMap's annotations (replacing the ones it had), an absent one as `""`;
//! - with gzip each file is gzip-compressed then base64-encoded, stored under `binaryData`,
//!   and the ConfigMap is annotated `olm.contentEncoding: gzip+base64`; without, the text is
//!   stored under `data`;
//! - the stored bytes of all files together may not exceed the data limit (annotations do
//!   not count: the API server limits them separately).
//!
//! Where opm would lose or block instead, this module refuses with a message naming the
//! file: two files that would share a key, a subdirectory, a pipe or device, text that is not
//! UTF-8 without gzip.
use base64::Engine;
use catalog::decode::yaml_to_json;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The annotation that tells OLM's reader the files are under `binaryData`, compressed.
pub const ENCODING_ANNOTATION: &str = "olm.contentEncoding";
/// Its only value.
pub const GZIP_BASE64: &str = "gzip+base64";
/// The annotation naming the bundle image, from the unpack Job's `CONTAINER_IMAGE`.
pub const SOURCE_IMAGE_ANNOTATION: &str = "olm.sourceImage";
/// The file whose annotations become the ConfigMap's.
pub const ANNOTATIONS_FILE: &str = "annotations.yaml";
/// opm's `--datalimit` default: 1 MiB, the most a ConfigMap may hold.
pub const DEFAULT_DATA_LIMIT: u64 = 1 << 20;

/// The annotations of `annotations.yaml` that opm copies, in its order.
const COPIED_ANNOTATIONS: [&str; 6] = [
    "operators.operatorframework.io.bundle.manifests.v1",
    "operators.operatorframework.io.bundle.mediatype.v1",
    "operators.operatorframework.io.bundle.metadata.v1",
    "operators.operatorframework.io.bundle.package.v1",
    "operators.operatorframework.io.bundle.channels.v1",
    "operators.operatorframework.io.bundle.channel.default.v1",
];

/// The subdirectories read, in this order (a key of the second replaces nothing of the first:
/// see [`Error::KeyClash`]).
const SUBDIRS: [&str; 2] = ["manifests", "metadata"];

/// The largest single file read. The data limit bounds what is stored, but a file that
/// compresses well may be much larger than what it stores; this keeps the read itself bounded.
const MAX_FILE_SIZE: u64 = 256 << 20;

/// How the content is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// gzip + base64 into `binaryData` (opm's `-z`).
    pub gzip: bool,
    /// The most bytes all stored files may add up to (opm's `-l/--datalimit`).
    pub data_limit: u64,
}

/// What a bundle directory puts in its ConfigMap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Content {
    /// File contents by key, without gzip.
    pub data: BTreeMap<String, String>,
    /// File contents by key, gzip-compressed and base64-encoded, with gzip.
    pub binary_data: BTreeMap<String, Vec<u8>>,
    /// The annotations of `annotations.yaml`, when the bundle has that file: they replace
    /// the ConfigMap's annotations. Without gzip or a source image, only these.
    pub annotations: Option<BTreeMap<String, String>>,
    /// The stored bytes, all files together (what the data limit bounds).
    pub size: u64,
}

impl Content {
    /// The ConfigMap's annotations after this content is written over `existing` ones: the
    /// bundle's when it has an `annotations.yaml` (else `existing`), then the source image,
    /// then the encoding marker with gzip. Without gzip the marker is removed, so a ConfigMap
    /// written again without gzip is not read as compressed (opm leaves a stale one).
    pub fn annotations_over(
        &self,
        existing: BTreeMap<String, String>,
        gzip: bool,
        source_image: Option<&str>,
    ) -> BTreeMap<String, String> {
        let mut annotations = self.annotations.clone().unwrap_or(existing);
        if let Some(image) = source_image.filter(|i| !i.is_empty()) {
            annotations.insert(SOURCE_IMAGE_ANNOTATION.to_owned(), image.to_owned());
        }
        if gzip {
            annotations.insert(ENCODING_ANNOTATION.to_owned(), GZIP_BASE64.to_owned());
        } else {
            annotations.remove(ENCODING_ANNOTATION);
        }
        annotations
    }
}

/// Why a bundle directory cannot become ConfigMap content. Each names the file or directory.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{}: no such directory; a bundle directory holds manifests/ and metadata/",
        path.display()
    )]
    MissingDir { path: PathBuf },
    #[error("reading directory {}: {source}", path.display())]
    ReadDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reading {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {what}; only regular files can be stored in the ConfigMap", path.display())]
    NotAFile { path: PathBuf, what: &'static str },
    #[error("{}: larger than {MAX_FILE_SIZE} bytes, the most one bundle file may hold", path.display())]
    FileTooLarge { path: PathBuf },
    #[error(
        "{}: not UTF-8 text, which ConfigMap data cannot hold (-z/--gzip stores it compressed as binaryData)",
        path.display()
    )]
    NotText { path: PathBuf },
    #[error(
        "bundle files exceeded the data limit of {limit} bytes (-l/--datalimit): {size} bytes with {}",
        path.display()
    )]
    DataLimit {
        path: PathBuf,
        limit: u64,
        size: u64,
    },
    #[error(
        "{} and {} would both be stored under ConfigMap key {key:?}",
        first.display(),
        second.display()
    )]
    KeyClash {
        key: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("{}: {reason}", path.display())]
    Annotations { path: PathBuf, reason: String },
}

/// The ConfigMap key of a file named `name`: opm's translation, each character (each byte
/// that is not UTF-8) outside `[-A-Za-z0-9_.]`, which a key may not hold, becoming `-`.
pub fn config_map_key(name: &[u8]) -> String {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let mut key = String::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        key.extend(
            chunk
                .valid()
                .chars()
                .map(|c| if allowed(c) { c } else { '-' }),
        );
        key.extend(std::iter::repeat_n('-', chunk.invalid().len()));
    }
    key
}

/// Reads the bundle directory `dir` (`manifests/` and `metadata/`) into ConfigMap content.
pub fn read(dir: &Path, options: Options) -> Result<Content, Error> {
    let mut content = Content::default();
    // Which file each key came from, to name both when two would share one.
    let mut sources: BTreeMap<String, PathBuf> = BTreeMap::new();
    for sub in SUBDIRS {
        let sub_dir = dir.join(sub);
        for name in entries(&sub_dir)? {
            let path = sub_dir.join(&name);
            let bytes = read_file(&path)?;
            if name.as_encoded_bytes() == ANNOTATIONS_FILE.as_bytes() {
                content.annotations = Some(annotations(&path, &bytes)?);
                continue;
            }
            let key = config_map_key(name.as_encoded_bytes());
            if let Some(first) = sources.get(&key) {
                return Err(Error::KeyClash {
                    key,
                    first: first.clone(),
                    second: path,
                });
            }
            let stored = if options.gzip {
                gzip_base64(&bytes)
            } else {
                bytes
            };
            content.size += stored.len() as u64;
            if content.size > options.data_limit {
                return Err(Error::DataLimit {
                    path,
                    limit: options.data_limit,
                    size: content.size,
                });
            }
            if options.gzip {
                content.binary_data.insert(key.clone(), stored);
            } else {
                let text =
                    String::from_utf8(stored).map_err(|_| Error::NotText { path: path.clone() })?;
                content.data.insert(key.clone(), text);
            }
            sources.insert(key, path);
        }
    }
    Ok(content)
}

/// The names in `dir`, byte order as Go's directory reading gives them.
fn entries(dir: &Path) -> Result<Vec<std::ffi::OsString>, Error> {
    let unreadable = |source: std::io::Error| {
        if source.kind() == std::io::ErrorKind::NotFound {
            Error::MissingDir {
                path: dir.to_owned(),
            }
        } else {
            Error::ReadDir {
                path: dir.to_owned(),
                source,
            }
        }
    };
    let mut names = std::fs::read_dir(dir)
        .map_err(unreadable)?
        .map(|entry| entry.map(|e| e.file_name()).map_err(unreadable))
        .collect::<Result<Vec<_>, _>>()?;
    names.sort();
    Ok(names)
}

/// A regular file's bytes (symbolic links followed, as opm does). Anything else is refused:
/// a directory cannot be one key, and a pipe or device would block or never end.
fn read_file(path: &Path) -> Result<Vec<u8>, Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let failed = |source| Error::ReadFile {
        path: path.to_owned(),
        source,
    };
    // O_NONBLOCK: opening a pipe for reading would otherwise wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(failed)?;
    let kind = file.metadata().map_err(failed)?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else {
            catalog::file::special_kind(&kind)
        };
        return Err(Error::NotAFile {
            path: path.to_owned(),
            what,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_SIZE + 1)
        .read_to_end(&mut bytes)
        .map_err(failed)?;
    if bytes.len() as u64 > MAX_FILE_SIZE {
        return Err(Error::FileTooLarge {
            path: path.to_owned(),
        });
    }
    Ok(bytes)
}

/// gzip, then standard base64 (with padding): the stored form OLM's reader decodes.
fn gzip_base64(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    gz.write_all(bytes).expect("gzip into memory");
    let compressed = gz.finish().expect("gzip into memory");
    base64::engine::general_purpose::STANDARD
        .encode(compressed)
        .into_bytes()
}

/// The six bundle annotations of an `annotations.yaml`, each `""` when absent or null, as
/// opm decodes the file (into a struct of strings: any other type is an error).
fn annotations(path: &Path, bytes: &[u8]) -> Result<BTreeMap<String, String>, Error> {
    let invalid = |reason: String| Error::Annotations {
        path: path.to_owned(),
        reason,
    };
    // An empty file is an empty document, as for opm.
    let doc = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        yaml_to_json(bytes).map_err(invalid)?
    };
    let map = match &doc {
        Value::Null => None,
        Value::Object(top) => match top.get("annotations") {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => Some(map),
            Some(_) => return Err(invalid("annotations must be a map".to_owned())),
        },
        _ => return Err(invalid("the document must be a map".to_owned())),
    };
    COPIED_ANNOTATIONS
        .iter()
        .map(|&key| {
            let value = match map.and_then(|m| m.get(key)) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(_) => return Err(invalid(format!("annotation {key} must be a string"))),
            };
            Ok((key.to_owned(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_translate_as_opm_does() {
        assert_eq!(config_map_key(b"a-b_c.D9.yaml"), "a-b_c.D9.yaml");
        assert_eq!(config_map_key(b"my file+x:y.yaml"), "my-file-x-y.yaml");
        // One `-` per character, not per byte; one per byte that is not UTF-8.
        assert_eq!(config_map_key("é.yaml".as_bytes()), "-.yaml");
        assert_eq!(config_map_key(b"\xff\xfe.yaml"), "--.yaml");
    }

    #[test]
    fn gzip_base64_decodes_back() {
        let stored = gzip_base64(b"kind: ConfigMap\n");
        let compressed = base64::engine::general_purpose::STANDARD
            .decode(&stored)
            .unwrap();
        let mut text = String::new();
        flate2::read::GzDecoder::new(&compressed[..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "kind: ConfigMap\n");
    }

    #[test]
    fn annotations_take_the_six_keys_only() {
        let path = Path::new("metadata/annotations.yaml");
        let got = annotations(
            path,
            b"annotations:\n  operators.operatorframework.io.bundle.package.v1: cache\n  other: x\n",
        )
        .unwrap();
        assert_eq!(got.len(), 6);
        assert_eq!(
            got["operators.operatorframework.io.bundle.package.v1"],
            "cache"
        );
        assert_eq!(got["operators.operatorframework.io.bundle.channels.v1"], "");
        let err = annotations(
            path,
            b"annotations:\n  operators.operatorframework.io.bundle.channels.v1: 1\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "metadata/annotations.yaml: annotation operators.operatorframework.io.bundle.channels.v1 must be a string"
        );
        assert_eq!(annotations(path, b"").unwrap().len(), 6);
    }

    #[test]
    fn encoding_marker_follows_the_mode() {
        let existing = BTreeMap::from([
            ("keep".to_owned(), "1".to_owned()),
            (ENCODING_ANNOTATION.to_owned(), GZIP_BASE64.to_owned()),
        ]);
        let content = Content::default();
        assert_eq!(
            content.annotations_over(existing.clone(), false, Some("quay.io/x/b:1")),
            BTreeMap::from([
                ("keep".to_owned(), "1".to_owned()),
                (
                    SOURCE_IMAGE_ANNOTATION.to_owned(),
                    "quay.io/x/b:1".to_owned()
                ),
            ])
        );
        assert_eq!(
            content.annotations_over(existing.clone(), true, None),
            existing
        );
    }
}
