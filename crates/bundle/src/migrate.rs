//! FBC migrations (`--migrate-level`, `--migrate`; opm-cli.md §2): rewrites applied to a
//! rendered catalog, in order, up to the level asked for.
use super::csv::KIND as CSV_KIND;
use super::error::Error;
use catalog::json::canonical;
use catalog::{Bundle, DeclarativeConfig, Property, property};
use serde_json::{Map, Value};
use std::str::FromStr;

/// How far to migrate. Levels are ordered: a level includes every earlier one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum MigrationLevel {
    #[default]
    None,
    /// Replace the manifests of bundles that have an image by one `olm.csv.metadata`.
    BundleObjectToCsvMetadata,
}

impl MigrationLevel {
    /// What `--migrate` asks for: every migration.
    pub(crate) const LATEST: MigrationLevel = MigrationLevel::BundleObjectToCsvMetadata;

    /// The level asked for by `--migrate-level` or `--migrate` (clap keeps them exclusive).
    pub fn from_flags(level: Option<&str>, all: bool) -> Result<MigrationLevel, String> {
        match (level, all) {
            (Some(level), _) => level.parse(),
            (None, true) => Ok(MigrationLevel::LATEST),
            (None, false) => Ok(MigrationLevel::None),
        }
    }
}

impl FromStr for MigrationLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "" | "none" => Ok(MigrationLevel::None),
            "bundle-object-to-csv-metadata" => Ok(MigrationLevel::BundleObjectToCsvMetadata),
            other => Err(format!("unknown migration level {other:?}")),
        }
    }
}

/// Applies the migrations up to `level` to `dc`.
pub fn migrate(dc: &mut DeclarativeConfig, level: MigrationLevel) -> Result<(), Error> {
    if level >= MigrationLevel::BundleObjectToCsvMetadata {
        for b in &mut dc.bundles {
            bundle_object_to_csv_metadata(b)?;
        }
    }
    Ok(())
}

/// Bundles that have an image (so clients can pull the manifests) and a CSV among their
/// objects, and no `olm.csv.metadata` yet, lose every `olm.bundle.object` and gain one
/// `olm.csv.metadata` made from the CSV.
fn bundle_object_to_csv_metadata(b: &mut Bundle) -> Result<(), Error> {
    if b.image.is_empty()
        || b.properties
            .iter()
            .any(|p| p.kind == property::CSV_METADATA)
    {
        return Ok(());
    }
    let mut csv = None;
    for p in b
        .properties
        .iter()
        .filter(|p| p.kind == property::BUNDLE_OBJECT)
    {
        let Ok(property::Typed::BundleObject { data }) = property::parse(p) else {
            continue;
        };
        let undecodable = |reason: String| Error::BundleObject {
            bundle: b.name.clone(),
            reason,
        };
        let text = property::decode_bundle_object(&data).map_err(undecodable)?;
        let object: Value = serde_json::from_str(&text).map_err(|e| undecodable(e.to_string()))?;
        if object.get("kind").and_then(Value::as_str) == Some(CSV_KIND) {
            csv = Some(object);
            break;
        }
    }
    let Some(csv) = csv else { return Ok(()) };
    b.properties.retain(|p| p.kind != property::BUNDLE_OBJECT);
    b.properties.push(Property {
        kind: property::CSV_METADATA.to_owned(),
        value: canonical(&csv_metadata(&csv)),
    });
    Ok(())
}

/// The `olm.csv.metadata` value of a CSV (catalog-formats.md §B): the CSV fields OLM's
/// package server displays. The three struct-typed fields are always present, as Go's
/// encoder writes them even when empty.
pub(crate) fn csv_metadata(csv: &Value) -> Value {
    let mut out = Map::new();
    let mut put = |key: &str, v: Option<&Value>, always: bool| match v {
        Some(v) if !is_empty(v) => {
            out.insert(key.to_owned(), v.clone());
        }
        _ if always => {
            out.insert(key.to_owned(), Value::Object(Map::new()));
        }
        _ => {}
    };
    put("annotations", csv.pointer("/metadata/annotations"), false);
    put(
        "apiServiceDefinitions",
        csv.pointer("/spec/apiservicedefinitions"),
        true,
    );
    put(
        "crdDescriptions",
        csv.pointer("/spec/customresourcedefinitions"),
        true,
    );
    put("description", csv.pointer("/spec/description"), false);
    put("displayName", csv.pointer("/spec/displayName"), false);
    put("installModes", csv.pointer("/spec/installModes"), false);
    put("keywords", csv.pointer("/spec/keywords"), false);
    put("labels", csv.pointer("/metadata/labels"), false);
    put("links", csv.pointer("/spec/links"), false);
    put("maintainers", csv.pointer("/spec/maintainers"), false);
    put("maturity", csv.pointer("/spec/maturity"), false);
    put("minKubeVersion", csv.pointer("/spec/minKubeVersion"), false);
    put("nativeAPIs", csv.pointer("/spec/nativeAPIs"), false);
    put("provider", csv.pointer("/spec/provider"), true);
    Value::Object(out)
}

/// Go's `omitempty`: null, `""`, `[]`, `{}` and `false` are left out.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(_) => false,
    }
}
