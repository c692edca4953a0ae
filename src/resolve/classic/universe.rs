//! Everything a classic resolution can choose from: the entries of the visible catalogs and
//! the installed operators as the `@existing` pseudo-catalog (resolution spec §1, §2.2),
//! grouped by (catalog, package, channel) with their chain order computed on first use.
use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

use serde_json::json;

use crate::catalog::property::{GVK, GVK_REQUIRED, PACKAGE};
use crate::catalog::semver::Version;
use crate::catalog::types::{Bundle, Property};
use crate::resolve::predicate::{Subject, decode};

use super::chain::sort_channel;
use super::index::ProviderIndex;
use super::request::{ClassicRequest, Gvk, InstalledCsv, UpgradeStrategy};

/// Property types that state a requirement; identical ones are deduplicated (deviation D3).
pub const REQUIREMENT_TYPES: [&str; 4] = [
    GVK_REQUIRED,
    crate::catalog::property::PACKAGE_REQUIRED,
    "olm.label.required",
    "olm.constraint",
];
pub const DEPRECATED: &str = "olm.deprecated";
pub const EXISTING: &str = "@existing";

pub struct CatalogInfo {
    pub name: String,
    pub namespace: String,
    pub priority: i32,
}

pub struct Entry {
    pub id: String,
    pub catalog: usize,
    pub name: String,
    pub package: String,
    pub channel: String,
    pub default_channel: bool,
    pub replaces: String,
    pub skips: Vec<String>,
    pub skip_range: String,
    pub version: Option<Version>,
    pub version_text: String,
    pub properties: Vec<Property>,
    /// `properties`' values, decoded once (see [`Subject::values`]).
    pub values: Vec<Option<serde_json::Value>>,
    pub bundle_path: String,
    /// For `@existing` entries: whether a subscription owns the CSV.
    pub owned: bool,
}

impl Entry {
    pub fn subject(&self) -> Subject<'_> {
        Subject {
            package: &self.package,
            version: self.version.as_ref(),
            properties: &self.properties,
            values: &self.values,
        }
    }

    pub fn is_existing(&self) -> bool {
        self.catalog == 0
    }
}

/// The entries of one (catalog, package, channel), or one installed CSV.
pub struct Group {
    pub catalog: usize,
    pub package: String,
    pub channel: String,
    pub default_channel: bool,
    pub entries: Vec<usize>,
    chain: OnceCell<Result<Vec<usize>, String>>,
}

pub struct Universe {
    /// Index 0 is `@existing/<namespace>`.
    pub catalogs: Vec<CatalogInfo>,
    pub entries: Vec<Entry>,
    pub groups: Vec<Group>,
    /// Per catalog, its groups in dependency-candidate order (§2.4): default channels
    /// first, then package name, then channel name.
    pub catalog_groups: Vec<Vec<usize>>,
    /// Per entry, its group.
    pub group_of: Vec<usize>,
    /// Per group, its position in its catalog's `catalog_groups`.
    pub group_rank: Vec<usize>,
    pub index: ProviderIndex,
}

impl Universe {
    pub fn build(req: &ClassicRequest<'_>) -> Result<Universe, String> {
        let mut u = Universe {
            catalogs: vec![CatalogInfo {
                name: EXISTING.to_owned(),
                namespace: req.namespace.clone(),
                priority: 0,
            }],
            entries: Vec::new(),
            groups: Vec::new(),
            catalog_groups: vec![Vec::new()],
            group_of: Vec::new(),
            group_rank: Vec::new(),
            index: ProviderIndex::default(),
        };
        for csv in installed_after_pruning(req)? {
            u.add_installed(req, csv);
        }
        for source in &req.catalogs {
            u.add_catalog(source);
        }
        for (c, groups) in u.catalog_groups.iter_mut().enumerate().skip(1) {
            groups.extend((0..u.groups.len()).filter(|&g| u.groups[g].catalog == c));
            groups.sort_by(|&a, &b| {
                let (a, b) = (&u.groups[a], &u.groups[b]);
                b.default_channel
                    .cmp(&a.default_channel)
                    .then_with(|| a.package.cmp(&b.package))
                    .then_with(|| a.channel.cmp(&b.channel))
            });
        }
        u.group_of = vec![0; u.entries.len()];
        u.group_rank = vec![0; u.groups.len()];
        for groups in &u.catalog_groups {
            for (rank, &g) in groups.iter().enumerate() {
                u.group_rank[g] = rank;
                for &e in &u.groups[g].entries {
                    u.group_of[e] = g;
                }
            }
        }
        u.index = ProviderIndex::build(&u.entries);
        Ok(u)
    }

    /// The group's entries in chain order; channel ordering errors are reported only for
    /// groups that are actually consulted.
    pub fn chain(&self, group: usize) -> Result<&[usize], String> {
        let g = &self.groups[group];
        let result = g.chain.get_or_init(|| {
            if g.catalog == 0 {
                return Ok(g.entries.clone());
            }
            let entries: Vec<_> = g
                .entries
                .iter()
                .map(|&e| {
                    let e = &self.entries[e];
                    crate::catalog::types::ChannelEntry {
                        name: e.name.clone(),
                        replaces: e.replaces.clone(),
                        skips: e.skips.clone(),
                        skip_range: e.skip_range.clone(),
                    }
                })
                .collect();
            let refs: Vec<_> = entries.iter().collect();
            sort_channel(&g.package, &g.channel, &refs)
                .map(|order| order.into_iter().map(|i| g.entries[i]).collect())
        });
        result.as_deref().map_err(Clone::clone)
    }

    fn push_group(&mut self, group: Group) -> usize {
        self.groups.push(group);
        self.groups.len() - 1
    }

    fn add_installed(&mut self, req: &ClassicRequest<'_>, csv: &InstalledCsv) {
        let owners: Vec<_> = req
            .subscriptions
            .iter()
            .filter(|s| s.installed_csv == csv.name)
            .collect();
        let version = if csv.version.is_empty() {
            Some(Version {
                major: 0,
                minor: 0,
                patch: 0,
                pre: Vec::new(),
                build: Vec::new(),
            })
        } else {
            Version::parse_tolerant(&csv.version).ok()
        };
        let properties = match &csv.properties {
            Some(annotation) => annotation.clone(),
            None => {
                let gvk = |kind: &str, api: &Gvk| Property {
                    kind: kind.to_owned(),
                    value: json!({"group": api.group, "kind": api.kind, "version": api.version})
                        .to_string(),
                };
                let mut props: Vec<Property> = csv
                    .provided_apis
                    .iter()
                    .map(|api| gvk(GVK, api))
                    .chain(csv.required_apis.iter().map(|api| gvk(GVK_REQUIRED, api)))
                    .collect();
                if let [owner] = owners.as_slice() {
                    let is_zero = version.as_ref().is_some_and(|v| {
                        (v.major, v.minor, v.patch) == (0, 0, 0) && v.pre.is_empty()
                    });
                    let text = if is_zero { "" } else { csv.version.as_str() };
                    props.push(Property {
                        kind: PACKAGE.to_owned(),
                        value: json!({"packageName": owner.package, "version": text}).to_string(),
                    });
                }
                props
            }
        };
        let properties = dedup_requirements(properties);
        let package = package_of(&properties).unwrap_or_default();
        let entry = self.entries.len();
        let group = self.push_group(Group {
            catalog: 0,
            package: package.clone(),
            channel: String::new(),
            default_channel: false,
            entries: vec![entry],
            chain: OnceCell::new(),
        });
        self.catalog_groups[0].push(group);
        self.entries.push(Entry {
            id: format!("{EXISTING}/{}//{}", req.namespace, csv.name),
            catalog: 0,
            name: csv.name.clone(),
            package,
            channel: String::new(),
            default_channel: false,
            replaces: csv.replaces.clone(),
            skips: Vec::new(),
            skip_range: String::new(),
            version_text: csv.version.clone(),
            version,
            values: decode(&properties),
            properties,
            bundle_path: String::new(),
            owned: !owners.is_empty(),
        });
    }

    fn add_catalog(&mut self, source: &super::request::CatalogSource<'_>) {
        let catalog = self.catalogs.len();
        self.catalogs.push(CatalogInfo {
            name: source.name.clone(),
            namespace: source.namespace.clone(),
            priority: source.priority,
        });
        self.catalog_groups.push(Vec::new());
        let dc = source.content;
        let bundles: HashMap<(&str, &str), &Bundle> = dc
            .bundles
            .iter()
            .map(|b| ((b.package.as_str(), b.name.as_str()), b))
            .collect();
        let defaults: HashMap<&str, &str> = dc
            .packages
            .iter()
            .map(|p| (p.name.as_str(), p.default_channel.as_str()))
            .collect();
        for channel in &dc.channels {
            let default_channel =
                defaults.get(channel.package.as_str()) == Some(&channel.name.as_str());
            let mut members = Vec::with_capacity(channel.entries.len());
            for ce in &channel.entries {
                // A channel entry without its bundle cannot be installed; the catalog's
                // validation reports it, resolution just cannot offer it.
                let Some(bundle) = bundles.get(&(channel.package.as_str(), ce.name.as_str()))
                else {
                    continue;
                };
                members.push(self.entries.len());
                self.entries.push(catalog_entry(
                    source,
                    catalog,
                    &channel.name,
                    default_channel,
                    ce,
                    bundle,
                ));
            }
            self.push_group(Group {
                catalog,
                package: channel.package.clone(),
                channel: channel.name.clone(),
                default_channel,
                entries: members,
                chain: OnceCell::new(),
            });
        }
    }
}

fn catalog_entry(
    source: &super::request::CatalogSource<'_>,
    catalog: usize,
    channel: &str,
    default_channel: bool,
    ce: &crate::catalog::types::ChannelEntry,
    bundle: &Bundle,
) -> Entry {
    let mut properties: Vec<Property> = bundle
        .properties
        .iter()
        .filter(|p| p.kind != crate::catalog::property::BUNDLE_OBJECT)
        .cloned()
        .collect();
    let version_text = properties
        .iter()
        .filter(|p| p.kind == PACKAGE)
        .find_map(|p| json_str(&p.value, "version"))
        .unwrap_or_default();
    if package_of(&properties).is_none() {
        properties.push(Property {
            kind: PACKAGE.to_owned(),
            value: json!({"packageName": bundle.package, "version": version_text}).to_string(),
        });
    }
    let properties = dedup_requirements(properties);
    Entry {
        id: format!("{}/{}/{channel}/{}", source.name, source.namespace, ce.name),
        catalog,
        name: ce.name.clone(),
        package: bundle.package.clone(),
        channel: channel.to_owned(),
        default_channel,
        replaces: ce.replaces.clone(),
        skips: ce.skips.clone(),
        skip_range: ce.skip_range.clone(),
        version: Version::parse_tolerant(&version_text).ok(),
        version_text,
        values: decode(&properties),
        properties,
        bundle_path: bundle.image.clone(),
        owned: false,
    }
}

fn json_str(value: &str, key: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(value)
        .ok()?
        .get(key)?
        .as_str()
        .map(str::to_owned)
}

fn package_of(properties: &[Property]) -> Option<String> {
    properties
        .iter()
        .filter(|p| p.kind == PACKAGE)
        .find_map(|p| json_str(&p.value, "packageName"))
}

/// Drops repeated identical requirement properties, keeping the first of each.
fn dedup_requirements(properties: Vec<Property>) -> Vec<Property> {
    let mut seen = HashSet::new();
    properties
        .into_iter()
        .filter(|p| {
            !REQUIREMENT_TYPES.contains(&p.kind.as_str())
                || seen.insert((p.kind.clone(), p.value.clone()))
        })
        .collect()
}

/// The installed CSVs that take part, after fail-forward pruning (§2.13).
fn installed_after_pruning<'r>(
    req: &'r ClassicRequest<'_>,
) -> Result<Vec<&'r InstalledCsv>, String> {
    if req.upgrade_strategy != UpgradeStrategy::UnsafeFailForward {
        return Ok(req.installed.iter().collect());
    }
    let wrap = |e: String| {
        format!(
            "error using catalogsource {}/{EXISTING}: {e}",
            req.namespace
        )
    };
    let replaced_by: HashMap<&str, &InstalledCsv> = req
        .installed
        .iter()
        .filter(|c| !c.replaces.is_empty())
        .map(|c| (c.replaces.as_str(), c))
        .collect();
    let mut keep = Vec::with_capacity(req.installed.len());
    for csv in &req.installed {
        let mut last = csv;
        let mut seen = HashSet::from([csv.name.as_str()]);
        while let Some(next) = replaced_by.get(last.name.as_str()) {
            if last.phase != "Replacing" {
                return Err(wrap(format!(
                    "csv {}/{} in phase {} instead of Replacing",
                    req.namespace, last.name, last.phase
                )));
            }
            if !seen.insert(next.name.as_str()) {
                return Err(wrap(format!(
                    "csv {}/{} has already been seen",
                    req.namespace, next.name
                )));
            }
            last = next;
        }
        if !(csv.phase == "Replacing" && last.phase == "Failed") {
            keep.push(csv);
        }
    }
    Ok(keep)
}
