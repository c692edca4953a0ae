//! The FBC document types (catalog-formats.md §A.3, §B) as they are loaded from disk.
//!
//! Every document keeps where it came from ([`Origin`]) so that validation can name the
//! file as well as the object.
//!
//! The serde derives of the documents other than [`Icon`] are not the FBC format (that is
//! [`crate::decode`] and [`crate::write`]): they let an ingest set the documents aside on disk
//! and read them back unchanged.
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

pub const SCHEMA_PACKAGE: &str = "olm.package";
pub const SCHEMA_CHANNEL: &str = "olm.channel";
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
pub(crate) const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// Where a document came from: the file (relative to the catalog root, `/`-separated) and the
/// 1-based line its document starts on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    #[serde(with = "arc_str")]
    pub file: Arc<str>,
    pub line: usize,
}

/// `Arc<str>` as a string, without serde's `rc` feature (a feature of the whole tree's serde).
mod arc_str {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::sync::Arc;

    pub(super) fn serialize<S: Serializer>(s: &Arc<str>, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
        String::deserialize(d).map(Arc::from)
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A group/version/kind: what an `olm.gvk` property provides and an `olm.gvk.required` one
/// asks for, and how a resolution request names an installed CSV's APIs.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    /// The property value text (keys already in byte order, as canonical JSON wants).
    pub fn value_text(&self) -> String {
        super::json::canonical(&serde_json::json!({
            "group": self.group, "kind": self.kind, "version": self.version
        }))
    }
}

/// A property: its type and its value as canonical compact JSON text (registry-api.md §4.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Property {
    pub kind: String,
    pub value: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Icon {
    #[serde(default)]
    pub base64data: String,
    #[serde(default)]
    pub mediatype: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Package {
    pub name: String,
    pub default_channel: String,
    pub icon: Option<Icon>,
    pub description: String,
    pub properties: Vec<Property>,
    pub origin: Origin,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelEntry {
    pub name: String,
    pub replaces: String,
    pub skips: Vec<String>,
    pub skip_range: String,
}

impl ChannelEntry {
    /// An entry without a skipRange, as the upgrade-graph tests write them.
    pub fn linked(name: &str, replaces: &str, skips: &[&str]) -> ChannelEntry {
        ChannelEntry {
            name: name.into(),
            replaces: replaces.into(),
            skips: skips.iter().map(|s| (*s).to_owned()).collect(),
            skip_range: String::new(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Channel {
    pub name: String,
    pub package: String,
    pub entries: Vec<ChannelEntry>,
    pub properties: Vec<Property>,
    pub origin: Origin,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelatedImage {
    pub name: String,
    pub image: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    pub name: String,
    pub package: String,
    pub image: String,
    /// In document order, including `olm.bundle.object` and `olm.csv.metadata`.
    pub properties: Vec<Property>,
    pub related_images: Vec<RelatedImage>,
    pub origin: Origin,
    /// Number of `olm.bundle.object` properties a streaming consumer moved out of
    /// `properties`; they still count as objects for validation.
    pub external_objects: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeprecationReference {
    pub schema: String,
    pub name: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeprecationEntry {
    pub reference: DeprecationReference,
    pub message: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Deprecations {
    pub package: String,
    pub entries: Vec<DeprecationEntry>,
    pub origin: Origin,
}

/// A document of any other schema, kept whole (canonicalised) for the experimental RPC and
/// for `render`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meta {
    pub schema: String,
    pub package: String,
    pub name: String,
    pub blob: Value,
    pub origin: Origin,
}

/// One FBC document, as the loader hands it over.
#[derive(Clone, Debug, PartialEq)]
pub enum Document {
    Package(Package),
    Channel(Channel),
    Bundle(Bundle),
    Deprecations(Deprecations),
    Meta(Meta),
}

/// A whole catalog held in memory (render, validate, small catalogs). Serving large catalogs
/// streams [`Document`]s instead, so that manifests never pile up in memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeclarativeConfig {
    pub packages: Vec<Package>,
    pub channels: Vec<Channel>,
    pub bundles: Vec<Bundle>,
    pub deprecations: Vec<Deprecations>,
    pub others: Vec<Meta>,
}

impl DeclarativeConfig {
    /// Adds every document of `other` (no de-duplication, as opm render concatenates).
    pub fn append(&mut self, other: DeclarativeConfig) {
        self.packages.extend(other.packages);
        self.channels.extend(other.channels);
        self.bundles.extend(other.bundles);
        self.deprecations.extend(other.deprecations);
        self.others.extend(other.others);
    }

    pub fn push(&mut self, doc: Document) {
        match doc {
            Document::Package(p) => self.packages.push(p),
            Document::Channel(c) => self.channels.push(c),
            Document::Bundle(b) => self.bundles.push(b),
            Document::Deprecations(d) => self.deprecations.push(d),
            Document::Meta(m) => self.others.push(m),
        }
    }
}
