//! An independent reading of a file-based catalog and of bundle directories, straight from
//! their files with serde: what the test expects OLM to show, worked out without our catalog
//! code.
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub(super) struct Fbc {
    docs: Vec<Value>,
}

pub(super) struct Package {
    pub(super) name: String,
    pub(super) default_channel: String,
    /// Channel name -> its head.
    pub(super) channels: BTreeMap<String, String>,
}

impl Fbc {
    pub(super) fn read(dir: &Path) -> Fbc {
        let mut docs = Vec::new();
        for file in files_below(dir) {
            let text = std::fs::read(&file).unwrap();
            match file.extension().and_then(|e| e.to_str()) {
                Some("json") => {
                    for doc in serde_json::Deserializer::from_slice(&text).into_iter::<Value>() {
                        docs.push(doc.unwrap_or_else(|e| panic!("{}: {e}", file.display())));
                    }
                }
                Some("yaml" | "yml") => docs.extend(yaml_documents(&text, &file)),
                _ => {}
            }
        }
        Fbc { docs }
    }

    fn of_schema<'a>(&'a self, schema: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.docs.iter().filter(move |d| d["schema"] == schema)
    }

    /// Every package, by name, with each channel's head: the one entry that no other entry
    /// of the channel replaces or skips.
    pub(super) fn packages(&self) -> Vec<Package> {
        let mut packages: Vec<Package> = self
            .of_schema("olm.package")
            .map(|p| {
                let name = p["name"].as_str().unwrap().to_owned();
                let channels = self
                    .of_schema("olm.channel")
                    .filter(|c| c["package"] == name.as_str())
                    .map(|c| (c["name"].as_str().unwrap().to_owned(), channel_head(c)))
                    .collect();
                Package {
                    default_channel: p["defaultChannel"].as_str().unwrap_or_default().to_owned(),
                    name,
                    channels,
                }
            })
            .collect();
        packages.sort_by(|a, b| a.name.cmp(&b.name));
        packages
    }

    fn bundle(&self, package: &str, name: &str) -> &Value {
        self.of_schema("olm.bundle")
            .find(|b| b["package"] == package && b["name"] == name)
            .unwrap_or_else(|| panic!("no bundle {name} in package {package}"))
    }
}

fn channel_head(channel: &Value) -> String {
    let entries = channel["entries"].as_array().unwrap();
    let mut replaced = BTreeSet::new();
    for e in entries {
        replaced.extend(e["replaces"].as_str());
        replaced.extend(
            e["skips"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str),
        );
    }
    let heads: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["name"].as_str())
        .filter(|n| !replaced.contains(n))
        .collect();
    assert_eq!(heads.len(), 1, "channel {channel}: heads {heads:?}");
    heads[0].to_owned()
}

/// What a PackageManifest describes a bundle with: its CSV's `spec` (from the bundle's
/// `olm.bundle.object` properties) or its `olm.csv.metadata`; `{}` when it has neither.
pub(super) fn head_csv(fbc: &Fbc, package: &str, bundle: &str) -> Value {
    let properties = fbc.bundle(package, bundle)["properties"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for p in &properties {
        if p["type"] == "olm.csv.metadata" {
            return p["value"].clone();
        }
    }
    for p in &properties {
        if p["type"] != "olm.bundle.object" {
            continue;
        }
        let data = base64::engine::general_purpose::STANDARD
            .decode(p["value"]["data"].as_str().unwrap())
            .unwrap();
        let object: Value = serde_json::from_slice(&data).unwrap();
        if object["kind"] == "ClusterServiceVersion" {
            return object["spec"].clone();
        }
    }
    Value::Object(Default::default())
}

/// (kind, name) of every object in a bundle directory's manifests/.
pub(super) fn bundle_objects(dir: &Path) -> BTreeSet<(String, String)> {
    let mut objects = BTreeSet::new();
    for file in files_below(&dir.join("manifests")) {
        for doc in yaml_documents(&std::fs::read(&file).unwrap(), &file) {
            if doc.is_null() {
                continue;
            }
            objects.insert((
                doc["kind"].as_str().unwrap().to_owned(),
                doc["metadata"]["name"].as_str().unwrap().to_owned(),
            ));
        }
    }
    objects
}

fn yaml_documents(text: &[u8], file: &Path) -> Vec<Value> {
    serde_yaml::Deserializer::from_slice(text)
        .map(|d| Value::deserialize(d).unwrap_or_else(|e| panic!("{}: {e}", file.display())))
        .collect()
}

/// Files below `dir`, sorted.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    crate::common::files_below(dir)
        .into_iter()
        .map(|relative| dir.join(relative))
        .collect()
}
