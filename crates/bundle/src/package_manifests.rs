//! Legacy package-manifest trees (catalog-formats.md §D) converted to FBC, with the rules of
//! upstream's conversion (registry-api.md §10.1): each `*.package.yaml` names a package and
//! its channel heads; every CSV below it is a bundle made of the CSV and the other objects of
//! its directory; channels follow `spec.replaces` down from each head.
use super::csv;
use super::error::{Error, PackageManifestError};
use super::manifests::{
    CRD_KIND, Manifest, crd_gvks, object_property, read_documents, regular_files,
};
use super::render::{
    finish_properties, gvk_property, gvk_required_property, keep_last_package, package_property,
    related_images, required_gvks,
};
use catalog::decode::yaml_to_json;
use catalog::file::ReadLimits;
use catalog::{Bundle, Channel, ChannelEntry, DeclarativeConfig, Origin, Package, Property};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Property marking a bundle deprecated in the SQLite era; such bundles are not converted.
const DEPRECATED: &str = "olm.deprecated";

/// A `*.package.yaml`: the package, its channels and their heads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageManifest {
    pub package_name: String,
    /// (channel name, current CSV), in file order.
    pub channels: Vec<(String, String)>,
    pub default_channel: String,
}

/// Reads a package manifest from a decoded document; `None` if it is not one (no
/// `packageName`), an error if it is one but malformed.
pub fn package_manifest(doc: &Value) -> Option<Result<PackageManifest, PackageManifestError>> {
    let name = doc.get("packageName")?.as_str().filter(|n| !n.is_empty())?;
    let mut channels = Vec::new();
    let list = doc.get("channels").and_then(Value::as_array);
    for (i, c) in list.map_or(&[][..], Vec::as_slice).iter().enumerate() {
        let field = |k: &str| csv::str_at(c, &format!("/{k}")).to_owned();
        let (channel, head) = (field("name"), field("currentCSV"));
        if channel.is_empty() || head.is_empty() {
            return Some(Err(PackageManifestError::IncompleteChannel {
                package: name.to_owned(),
                index: i,
            }));
        }
        channels.push((channel, head));
    }
    if channels.is_empty() {
        return Some(Err(PackageManifestError::NoChannels {
            package: name.to_owned(),
        }));
    }
    Some(Ok(PackageManifest {
        package_name: name.to_owned(),
        channels,
        default_channel: csv::str_at(doc, "/defaultChannel").to_owned(),
    }))
}

/// Package manifests are a few lines; larger files are not read when sniffing a tree, so
/// that telling a big FBC directory apart costs next to nothing.
const MAX_PACKAGE_MANIFEST_BYTES: u64 = 64 * 1024;

/// Whether `root` looks like a package-manifest tree: a package manifest directly in it or
/// in one of its sub-directories.
pub fn is_package_manifest_tree(root: &Path) -> bool {
    let mut dirs = vec![root.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(root) {
        dirs.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir() && !is_hidden(p)),
        );
    }
    dirs.iter().any(|dir| {
        regular_files(dir).is_ok_and(|files| {
            files.iter().any(|file| {
                let path = dir.join(file);
                let small =
                    std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_PACKAGE_MANIFEST_BYTES);
                small
                    && std::fs::read(&path)
                        .ok()
                        .and_then(|data| yaml_to_json(&data).ok())
                        .is_some_and(|doc| package_manifest(&doc).is_some())
            })
        })
    })
}

fn is_hidden(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

/// A CSV found in the tree with the objects of its directory.
struct LegacyBundle {
    /// The CSV's file, relative to the root.
    file: String,
    csv: Value,
    objects: Vec<Value>,
}

/// What one directory holds.
struct DirContents {
    dir: PathBuf,
    package: Option<(String, PackageManifest)>,
    bundles: Vec<LegacyBundle>,
}

/// Where a converted bundle's `olm.gvk` properties come from. The two upstream conversions
/// differ when a directory holds CRDs its CSV does not own, or CRDs with several versions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProvidedApis {
    /// Every version of every CRD object of the bundle's directory, plus the CSV's owned API
    /// services: what v1.26.4 loaded into SQLite and `opm migrate` wrote out.
    #[default]
    CrdObjects,
    /// The CSV's `spec.customresourcedefinitions.owned`, the group taken from each name:
    /// upstream's HEAD test harness, which Dataset M's expected answers come from.
    OwnedCrds,
}

/// How to convert a tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    pub provided_apis: ProvidedApis,
    /// Pull specs of bundles (by CSV name) that have one; a tree on disk has none, so every
    /// other bundle's image is `""`.
    pub images: BTreeMap<String, String>,
    /// How much of the tree's files may be read.
    pub limits: ReadLimits,
}

/// Converts the tree at `root`.
pub fn load(root: &Path, options: &Options) -> Result<DeclarativeConfig, Error> {
    let mut dirs = Vec::new();
    walk(root, root, options.limits, &mut dirs)?;
    // Each bundle belongs to the package manifest of its nearest enclosing directory.
    let mut packages: Vec<(PathBuf, String, PackageManifest)> = dirs
        .iter_mut()
        .filter_map(|d| d.package.take().map(|(file, p)| (d.dir.clone(), file, p)))
        .collect();
    packages.sort_by_key(|(dir, _, _)| std::cmp::Reverse(dir.components().count()));
    let mut by_package: Vec<BTreeMap<String, LegacyBundle>> =
        packages.iter().map(|_| BTreeMap::new()).collect();
    let mut problems = Vec::new();
    for d in dirs {
        let Some(owner) = packages.iter().position(|(p, _, _)| d.dir.starts_with(p)) else {
            for b in d.bundles {
                tracing::warn!(file = b.file, "skipping a CSV outside of any package");
            }
            continue;
        };
        for b in d.bundles {
            let name = csv::name(&b.csv).to_owned();
            if let Some(first) = by_package[owner].get(&name) {
                problems.push(format!(
                    "package {:?}: CSV {name:?} is defined twice, in {} and {}",
                    packages[owner].2.package_name, first.file, b.file
                ));
            } else {
                by_package[owner].insert(name, b);
            }
        }
    }
    let mut dc = DeclarativeConfig::default();
    let mut names = BTreeSet::new();
    for ((_, file, manifest), bundles) in packages.iter().zip(&by_package) {
        if !names.insert(&manifest.package_name) {
            problems.push(format!(
                "package {:?} is defined twice (again in {file})",
                manifest.package_name
            ));
            continue;
        }
        if let Err(e) = convert_package(file, manifest, bundles, options, &mut dc) {
            problems.push(e);
        }
    }
    if !problems.is_empty() {
        return Err(Error::PackageManifests {
            root: root.to_owned(),
            problems,
        });
    }
    Ok(dc)
}

/// Reads `dir` and, recursively, its non-hidden sub-directories in name order, within `limits`.
fn walk(
    root: &Path,
    dir: &Path,
    limits: ReadLimits,
    out: &mut Vec<DirContents>,
) -> Result<(), Error> {
    let rel = |file: &str| {
        dir.join(file)
            .strip_prefix(root)
            .map_or_else(|_| file.to_owned(), |p| p.display().to_string())
    };
    let docs = read_documents(dir, limits)?;
    let mut package = None;
    for m in docs.iter().filter(|m| m.kind().is_empty()) {
        if let Some(parsed) = package_manifest(&m.object) {
            let parsed = parsed.map_err(|source| Error::PackageManifest {
                file: rel(&m.file),
                source,
            })?;
            if package.is_some() {
                return Err(Error::SecondPackageManifest { file: rel(&m.file) });
            }
            package = Some((rel(&m.file), parsed));
        }
    }
    let objects: Vec<&Manifest> = docs.iter().filter(|m| !m.kind().is_empty()).collect();
    let others: Vec<Value> = objects
        .iter()
        .filter(|m| !m.is_csv())
        .map(|m| m.object.clone())
        .collect();
    let bundles = objects
        .iter()
        .filter(|m| m.is_csv())
        .map(|m| {
            let mut all = vec![m.object.clone()];
            all.extend(others.iter().cloned());
            LegacyBundle {
                file: rel(&m.file),
                csv: m.object.clone(),
                objects: all,
            }
        })
        .collect();
    out.push(DirContents {
        dir: dir.to_path_buf(),
        package,
        bundles,
    });
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| Error::ReadDir {
            path: dir.to_owned(),
            source,
        })?
        .flatten()
        // Not following symlinked directories: a link to an ancestor would never end.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| !is_hidden(p))
        .collect();
    subdirs.sort();
    for sub in subdirs {
        walk(root, &sub, limits, out)?;
    }
    Ok(())
}

fn convert_package(
    file: &str,
    manifest: &PackageManifest,
    bundles: &BTreeMap<String, LegacyBundle>,
    options: &Options,
    dc: &mut DeclarativeConfig,
) -> Result<(), String> {
    let pkg = &manifest.package_name;
    let default_channel = match (&manifest.default_channel, manifest.channels.as_slice()) {
        (d, _) if !d.is_empty() => d.clone(),
        (_, [(only, _)]) => only.clone(),
        _ => return Err(format!("no default channel specified for {pkg}")),
    };
    let rendered: BTreeMap<&str, Bundle> = bundles
        .iter()
        .map(|(name, b)| (name.as_str(), bundle(pkg, b, options)))
        .filter(|(_, b)| !b.properties.iter().any(|p| p.kind == DEPRECATED))
        .collect();
    let origin = Origin {
        file: file.into(),
        line: 0,
    };
    let mut in_channels = BTreeSet::new();
    let mut channels = Vec::new();
    for (channel, head) in &manifest.channels {
        let entries = channel_entries(pkg, channel, head, bundles, &rendered)?;
        in_channels.extend(entries.iter().map(|e| e.name.clone()));
        channels.push(Channel {
            name: channel.clone(),
            package: pkg.clone(),
            entries,
            properties: Vec::new(),
            origin: origin.clone(),
        });
    }
    let icon = manifest
        .channels
        .iter()
        .find(|(c, _)| *c == default_channel)
        .and_then(|(_, head)| bundles.get(head))
        .and_then(|b| csv::package_icon(&b.csv));
    dc.packages.push(Package {
        name: pkg.clone(),
        default_channel,
        icon,
        description: String::new(),
        properties: Vec::new(),
        origin,
    });
    dc.channels.extend(channels);
    for (name, b) in rendered {
        if in_channels.contains(name) {
            dc.bundles.push(b);
        } else {
            tracing::warn!(
                package = pkg,
                bundle = name,
                "skipping a CSV that no channel reaches"
            );
        }
    }
    Ok(())
}

/// The entries of one channel, sorted by name: the head, every bundle its `replaces` chain
/// reaches, and every existing bundle a bundle of that chain skips.
fn channel_entries(
    pkg: &str,
    channel: &str,
    head: &str,
    bundles: &BTreeMap<String, LegacyBundle>,
    kept: &BTreeMap<&str, Bundle>,
) -> Result<Vec<ChannelEntry>, String> {
    if !bundles.contains_key(head) {
        return Err(format!(
            "package {pkg:?}, channel {channel:?}: currentCSV {head:?} not found"
        ));
    }
    let mut entries: BTreeMap<String, ChannelEntry> = BTreeMap::new();
    let mut chain = BTreeSet::new();
    let mut current = head.to_owned();
    loop {
        chain.insert(current.clone());
        let csv_object = &bundles[&current].csv;
        entries.insert(current.clone(), entry(&current, csv_object));
        for skipped in csv::skips(csv_object) {
            if let Some(b) = bundles.get(&skipped) {
                entries.insert(skipped.clone(), entry(&skipped, &b.csv));
            }
        }
        let replaces = csv::replaces(csv_object);
        if replaces.is_empty() {
            break;
        }
        if chain.contains(replaces) {
            return Err(format!("Cycle detected, {current} replaces {replaces}"));
        }
        if !bundles.contains_key(replaces) {
            return Err(format!(
                "Invalid bundle {current}, replaces nonexistent bundle {replaces}"
            ));
        }
        current = replaces.to_owned();
    }
    Ok(entries
        .into_values()
        .filter(|e| kept.contains_key(e.name.as_str()))
        .collect())
}

fn entry(name: &str, csv_object: &Value) -> ChannelEntry {
    ChannelEntry {
        name: name.to_owned(),
        replaces: csv::replaces(csv_object).to_owned(),
        skips: csv::skips(csv_object),
        skip_range: csv::skip_range(csv_object).to_owned(),
    }
}

fn bundle(pkg: &str, b: &LegacyBundle, options: &Options) -> Bundle {
    let name = csv::name(&b.csv);
    let image = options.images.get(name).cloned().unwrap_or_default();
    let mut props: Vec<Property> = vec![package_property(pkg, &csv::version(&b.csv), "")];
    props.extend(csv::annotation_properties(&b.csv));
    keep_last_package(&mut props);
    match options.provided_apis {
        ProvidedApis::CrdObjects => {
            for crd in b
                .objects
                .iter()
                .filter(|o| csv::str_at(o, "/kind") == CRD_KIND)
            {
                props.extend(crd_gvks(crd).iter().map(gvk_property));
            }
            props.extend(csv::owned_api_services(&b.csv).iter().map(gvk_property));
        }
        ProvidedApis::OwnedCrds => props.extend(
            csv::owned_crds(&b.csv)
                .iter()
                .map(|c| gvk_property(&c.gvk())),
        ),
    }
    props.extend(required_gvks(&b.csv).iter().map(gvk_required_property));
    props.extend(b.objects.iter().map(object_property));
    Bundle {
        name: name.to_owned(),
        package: pkg.to_owned(),
        related_images: related_images(&b.csv, &image),
        image,
        properties: finish_properties(props),
        origin: Origin {
            file: b.file.as_str().into(),
            line: 0,
        },
        external_objects: 0,
    }
}
