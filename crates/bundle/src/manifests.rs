//! The Kubernetes objects of a bundle (catalog-formats.md §C.5): reading a directory of
//! manifests, the APIs a CRD provides, and the `olm.bundle.object` encoding of an object.
use super::csv;
use super::error::Error;
use base64::Engine;
use catalog::Gvk;
use catalog::decode::yaml_to_json;
use catalog::file::ReadLimits;
use catalog::json::canonical;
use catalog::{Property, property};
use serde_json::Value;
use std::path::Path;

pub(crate) const CRD_KIND: &str = "CustomResourceDefinition";

/// One object and the file (name within its directory) it was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    pub(crate) file: String,
    pub(crate) object: Value,
}

impl Manifest {
    pub(crate) fn kind(&self) -> &str {
        csv::str_at(&self.object, "/kind")
    }

    pub(crate) fn name(&self) -> &str {
        csv::str_at(&self.object, "/metadata/name")
    }

    pub(crate) fn is_csv(&self) -> bool {
        self.kind() == csv::KIND
    }

    pub(crate) fn is_crd(&self) -> bool {
        self.kind() == CRD_KIND
    }
}

/// Reads the first document of every regular, non-hidden file directly in `dir`, in file
/// name order, keeping the Kubernetes objects. Sub-directories and hidden files (whiteouts
/// such as `.wh..wh..opq`) are not read; files that are not an object with a `kind` are
/// skipped with a warning, as upstream does. Files are read within `limits`.
pub fn read_objects(dir: &Path, limits: ReadLimits) -> Result<Vec<Manifest>, Error> {
    let mut objects = read_documents(dir, limits)?;
    objects.retain(|m| {
        let keep = !m.kind().is_empty();
        if !keep {
            tracing::warn!(file = %dir.join(&m.file).display(), "skipping a file that is not a Kubernetes object (no kind)");
        }
        keep
    });
    Ok(objects)
}

/// The first document of every regular, non-hidden file directly in `dir` that decodes to a
/// JSON object, in file name order; undecodable files are skipped with a warning. Files are
/// read within `limits`.
pub(crate) fn read_documents(dir: &Path, limits: ReadLimits) -> Result<Vec<Manifest>, Error> {
    let mut docs = Vec::new();
    for file in regular_files(dir)? {
        let path = dir.join(&file);
        let data = read_file(&path, limits)?;
        match yaml_to_json(&data) {
            Ok(object @ Value::Object(_)) => docs.push(Manifest {
                file: file.to_string_lossy().into_owned(),
                object,
            }),
            Ok(_) => {
                tracing::warn!(file = %path.display(), "skipping a file that is not a YAML or JSON object")
            }
            Err(e) => tracing::warn!(file = %path.display(), "skipping an undecodable file: {e}"),
        }
    }
    Ok(docs)
}

/// A bundle file's bytes, never more than the catalog file cap (`--max-file-size`): a bundle
/// image's manifest could otherwise be as large as the unpacked image.
pub(super) fn read_file(path: &Path, limits: ReadLimits) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let cap = limits.max_file_size;
    let mut data = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(cap + 1).read_to_end(&mut data))
        .map_err(|source| Error::ReadFile {
            path: path.to_owned(),
            source,
        })?;
    if data.len() as u64 > cap {
        return Err(Error::TooLarge {
            path: path.to_owned(),
            limits,
        });
    }
    Ok(data)
}

/// Names of the regular files (symlinks followed) directly in `dir` that do not start with
/// `.`, sorted byte-wise as Go's directory reading sorts them; names need not be UTF-8.
pub(super) fn regular_files(dir: &Path) -> Result<Vec<std::ffi::OsString>, Error> {
    let unreadable = |source| Error::ReadDir {
        path: dir.to_owned(),
        source,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let entry = entry.map_err(unreadable)?;
        let name = entry.file_name();
        if name.as_encoded_bytes().starts_with(b".") || !entry.path().is_file() {
            continue;
        }
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// A CRD object's API versions: every `spec.versions[].name` plus the v1beta1 `spec.version`.
pub(crate) fn crd_versions(crd: &Value) -> Vec<String> {
    let mut versions: Vec<String> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|v| csv::str_at(v, "/name").to_owned())
        .collect();
    let legacy = csv::str_at(crd, "/spec/version");
    if !legacy.is_empty() && !versions.iter().any(|v| v == legacy) {
        versions.push(legacy.to_owned());
    }
    versions
}

/// The group/version/kinds a CRD object serves.
pub(crate) fn crd_gvks(crd: &Value) -> Vec<Gvk> {
    let group = csv::str_at(crd, "/spec/group");
    let kind = csv::str_at(crd, "/spec/names/kind");
    crd_versions(crd)
        .into_iter()
        .map(|version| Gvk {
            group: group.to_owned(),
            version,
            kind: kind.to_owned(),
        })
        .collect()
}

/// The JSON text opm stores for a manifest: Go's `json.Marshal` of the decoded object, i.e.
/// canonical JSON with `<`, `>` and `&` escaped. Those characters can only occur inside
/// strings of canonical JSON, so replacing them everywhere is exact.
pub(crate) fn object_json(object: &Value) -> String {
    let text = canonical(object);
    if !text.contains(['<', '>', '&']) {
        return text;
    }
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The `olm.bundle.object` property of a manifest.
pub(crate) fn object_property(object: &Value) -> Property {
    let data = base64::engine::general_purpose::STANDARD.encode(object_json(object));
    Property {
        kind: property::BUNDLE_OBJECT.to_owned(),
        value: format!("{{\"data\":\"{data}\"}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn manifests_are_encoded_as_go_marshals_them() {
        let object = json!({"b": "<a & b>", "a": 1.0});
        assert_eq!(
            object_json(&object),
            r#"{"a":1,"b":"\u003ca \u0026 b\u003e"}"#
        );
        assert_eq!(
            object_property(&json!({"kind": "X"})).value,
            r#"{"data":"eyJraW5kIjoiWCJ9"}"#
        );
    }

    #[test]
    fn crd_versions_include_the_v1beta1_field_once() {
        let crd = json!({"spec": {"group": "g", "names": {"kind": "K"}, "version": "v1",
                                  "versions": [{"name": "v1"}, {"name": "v2"}]}});
        assert_eq!(crd_versions(&crd), ["v1", "v2"]);
    }
}
