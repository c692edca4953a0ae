//! A bundle's `metadata/` directory (catalog-formats.md §C.2, §C.3). Files are recognised by
//! content, not by name: real bundles carry stray files (backups, whiteouts, test configs)
//! next to `annotations.yaml`.
use super::manifests::{read_file, regular_files};
use catalog::decode::yaml_to_json;
use catalog::file::ReadLimits;
use catalog::json::canonical;
use serde_json::Value;
use std::path::Path;

pub(crate) const PACKAGE_KEY: &str = "operators.operatorframework.io.bundle.package.v1";
pub(crate) const CHANNELS_KEY: &str = "operators.operatorframework.io.bundle.channels.v1";
pub(crate) const DEFAULT_CHANNEL_KEY: &str =
    "operators.operatorframework.io.bundle.channel.default.v1";
pub(crate) const MEDIA_TYPE_KEY: &str = "operators.operatorframework.io.bundle.mediatype.v1";
pub(crate) const REGISTRY_V1: &str = "registry+v1";

/// What `annotations.yaml` says about the bundle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Annotations {
    /// The file the annotations were found in.
    pub(crate) file: String,
    pub package: String,
    pub channels: Vec<String>,
    pub default_channel: String,
    pub(crate) media_type: String,
}

/// A `dependencies.yaml` or `properties.yaml` item: its type and value (canonical JSON).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    pub(crate) kind: String,
    pub(crate) value: String,
}

/// Items and the file they came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Items {
    pub(crate) file: String,
    pub(crate) items: Vec<Item>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    pub annotations: Annotations,
    pub(crate) dependencies: Items,
    pub(crate) properties: Items,
}

/// Reads `dir` (a bundle's `metadata/`): the first file (name order) whose `annotations` set
/// the package, channels or default channel; the first with a non-empty `dependencies` list;
/// the first with a non-empty `properties` list. Only a file's first document counts.
/// Files are read within `limits`.
pub(crate) fn read_dir(dir: &Path, limits: ReadLimits) -> Result<Metadata, String> {
    let mut annotations = None;
    let mut dependencies = None;
    let mut properties = None;
    for file in regular_files(dir).map_err(|e| e.to_string())? {
        let path = dir.join(&file);
        let data = read_file(&path, limits).map_err(|e| e.to_string())?;
        let Ok(doc) = yaml_to_json(&data) else {
            tracing::debug!(file = %path.display(), "skipping an undecodable metadata file");
            continue;
        };
        let file = file.to_string_lossy();
        if annotations.is_none() {
            annotations = read_annotations(&file, &doc);
        }
        if dependencies.is_none() {
            dependencies = read_items(&file, &doc, "dependencies")?;
        }
        if properties.is_none() {
            properties = read_items(&file, &doc, "properties")?;
        }
    }
    let annotations = annotations.ok_or_else(|| {
        format!(
            "Could not find annotations file in {}: no file sets {PACKAGE_KEY}",
            dir.display()
        )
    })?;
    if annotations.package.is_empty() {
        return Err(format!(
            "metadata/{}: annotation {PACKAGE_KEY} is missing or empty",
            annotations.file
        ));
    }
    Ok(Metadata {
        annotations,
        dependencies: dependencies.unwrap_or_default(),
        properties: properties.unwrap_or_default(),
    })
}

fn read_annotations(file: &str, doc: &Value) -> Option<Annotations> {
    let map = doc.get("annotations")?.as_object()?;
    let get = |key: &str| -> String {
        match map.get(key) {
            Some(Value::String(s)) => s.trim().to_owned(),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => canonical(v),
            _ => String::new(),
        }
    };
    let found = Annotations {
        file: file.to_owned(),
        package: get(PACKAGE_KEY),
        channels: get(CHANNELS_KEY)
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect(),
        default_channel: get(DEFAULT_CHANNEL_KEY),
        media_type: get(MEDIA_TYPE_KEY),
    };
    let relevant = !found.package.is_empty()
        || !found.channels.is_empty()
        || !found.default_channel.is_empty();
    relevant.then_some(found)
}

/// The `key` list of `doc` if it is a non-empty list; its items must be `{type, value}`.
fn read_items(file: &str, doc: &Value, key: &str) -> Result<Option<Items>, String> {
    let Some(list) = doc.get(key).and_then(Value::as_array) else {
        return Ok(None);
    };
    if list.is_empty() {
        return Ok(None);
    }
    let mut items = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        let Some(kind) = entry.get("type").and_then(Value::as_str) else {
            return Err(format!(
                "metadata/{file}: {key}[{i}]: type must be a string"
            ));
        };
        items.push(Item {
            kind: kind.to_owned(),
            value: canonical(entry.get("value").unwrap_or(&Value::Null)),
        });
    }
    Ok(Some(Items {
        file: file.to_owned(),
        items,
    }))
}
