//! What classic resolution needs from one catalog snapshot, computed once: entries with their
//! parsed versions, ranges and requirements, the (package, channel) groups in
//! dependency-candidate order (§2.4) with their chains, the provider index, and the providers of
//! every requirement the catalog itself states. A snapshot prepared once serves any number of
//! requests, whatever name, namespace and priority they give the catalog.
use std::collections::{HashMap, HashSet};

use serde_json::json;

use crate::predicate::{Predicate, Subject, decode};
use catalog::Gvk;
use catalog::property::{BUNDLE_OBJECT, GVK, PACKAGE};
use catalog::semver::{Range, Version};
use catalog::types::{Bundle, ChannelEntry, DeclarativeConfig, Property};

use super::chain::{Links, sort_channel};
use super::index::ProviderIndex;
use super::requirements::requirements;

/// Property types that state a requirement; identical ones are deduplicated (deviation D3).
pub(crate) const REQUIREMENT_TYPES: [&str; 4] = [
    catalog::property::GVK_REQUIRED,
    catalog::property::PACKAGE_REQUIRED,
    "olm.label.required",
    "olm.constraint",
];
const DEPRECATED: &str = "olm.deprecated";

pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) package: String,
    pub(crate) channel: String,
    pub(crate) default_channel: bool,
    pub(crate) replaces: String,
    pub(crate) skips: Vec<String>,
    pub(crate) skip_range: String,
    /// `skip_range` parsed; a range that does not parse counts as absent (§2.6).
    pub(crate) skip_range_parsed: Option<Range>,
    pub(crate) version: Option<Version>,
    pub(crate) version_text: String,
    pub(crate) properties: Vec<Property>,
    /// `properties`' values, decoded once (see [`Subject::values`]).
    pub(crate) values: Vec<Option<serde_json::Value>>,
    /// The requirement properties as predicates, or the error that makes any resolution
    /// reaching this entry fail (§2.7).
    pub(crate) requirements: Result<Vec<Predicate>, String>,
    /// The uniqueness groups (§2.5 invariants) the entry belongs to.
    pub(crate) unique: Vec<UniqueKey>,
    pub(crate) deprecated: bool,
    pub(crate) bundle_path: String,
    /// For installed CSVs: whether a subscription owns the CSV.
    pub(crate) owned: bool,
}

impl Entry {
    pub(crate) fn links(&self) -> Links<'_> {
        Links {
            name: &self.name,
            replaces: &self.replaces,
            skips: &self.skips,
        }
    }

    pub(crate) fn subject(&self) -> Subject<'_> {
        Subject {
            package: &self.package,
            version: self.version.as_ref(),
            properties: &self.properties,
            values: &self.values,
        }
    }
}

/// A uniqueness group: an exact GVK (as its identifier `Kind (group/version)`) or a package.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum UniqueKey {
    Gvk(String),
    Package(String),
}

/// The entries of one (package, channel), or one installed CSV.
pub(crate) struct Group {
    pub(crate) package: String,
    pub(crate) channel: String,
    pub(crate) default_channel: bool,
    pub(crate) entries: Vec<usize>,
    /// The entries in chain order, or the channel's ordering error; reported only for
    /// groups that are actually consulted.
    pub(crate) chain: Result<Vec<usize>, String>,
}

/// A GVK, package-range or label requirement, compared structurally.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) enum SimpleRequirement {
    Gvk(Gvk),
    Package(String, String),
    Label(String),
}

impl SimpleRequirement {
    pub(crate) fn of(predicate: &Predicate) -> Option<SimpleRequirement> {
        match predicate {
            Predicate::Gvk(gvk) => Some(SimpleRequirement::Gvk(gvk.clone())),
            Predicate::Package {
                name, range_text, ..
            } => Some(SimpleRequirement::Package(name.clone(), range_text.clone())),
            Predicate::Label(label) => Some(SimpleRequirement::Label(label.clone())),
            _ => None,
        }
    }
}

/// One catalog snapshot prepared for classic resolution; see the module documentation.
pub struct PreparedCatalog {
    pub(crate) entries: Vec<Entry>,
    pub(crate) groups: Vec<Group>,
    /// Per entry, its group.
    pub(crate) group_of: Vec<usize>,
    /// Per group, its position in dependency-candidate order (§2.4): default channels
    /// first, then package name, then channel name. Installed CSVs are grouped by package.
    pub(crate) group_rank: Vec<usize>,
    /// Per package, its groups in that order.
    pub(crate) package_groups: HashMap<String, Vec<usize>>,
    index: ProviderIndex,
    /// The providers (in candidate order) of each simple requirement stated by an entry of
    /// this catalog.
    providers: HashMap<SimpleRequirement, Result<Vec<usize>, String>>,
    /// Whether some name or property value holds a character that could make two solver
    /// identifiers spell the same (then the request is checked the slow, exact way).
    pub(crate) unusual_names: bool,
    /// Whether this is the `@existing` pseudo-catalog.
    installed: bool,
}

impl PreparedCatalog {
    /// Prepares a catalog's content. Problems of individual entries (bad requirements,
    /// unorderable channels) are kept and reported by the resolutions that reach them.
    pub fn new(dc: &DeclarativeConfig) -> PreparedCatalog {
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
        let mut entries = Vec::new();
        let mut groups = Vec::new();
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
                members.push(entries.len());
                entries.push(catalog_entry(&channel.name, default_channel, ce, bundle));
            }
            let links: Vec<Links> = members.iter().map(|&m| entries[m].links()).collect();
            let chain = sort_channel(&channel.package, &channel.name, &links)
                .map(|order| order.into_iter().map(|i| members[i]).collect())
                .map_err(|e| e.to_string());
            groups.push(Group {
                package: channel.package.clone(),
                channel: channel.name.clone(),
                default_channel,
                entries: members,
                chain,
            });
        }
        let mut ranked: Vec<usize> = (0..groups.len()).collect();
        ranked.sort_by(|&a, &b| {
            let (a, b) = (&groups[a], &groups[b]);
            b.default_channel
                .cmp(&a.default_channel)
                .then_with(|| a.package.cmp(&b.package))
                .then_with(|| a.channel.cmp(&b.channel))
        });
        let mut prepared = PreparedCatalog::assemble(entries, groups, ranked);
        let mut providers = HashMap::new();
        for entry in &prepared.entries {
            for predicate in entry.requirements.iter().flatten() {
                if let Some(key) = SimpleRequirement::of(predicate)
                    && !providers.contains_key(&key)
                {
                    providers.insert(key, prepared.find_providers(predicate));
                }
            }
        }
        prepared.providers = providers;
        prepared
    }

    /// The installed CSVs as a catalog: one group per package (`""` for CSVs without
    /// one), ranked by package name as OLM ranks dependency candidates; a group's chain is
    /// its members in the given order, ordered for real only among the providers of a
    /// requirement.
    pub(crate) fn of_installed(entries: Vec<Entry>) -> PreparedCatalog {
        let mut groups: Vec<Group> = Vec::new();
        for (e, entry) in entries.iter().enumerate() {
            match groups.iter_mut().find(|g| g.package == entry.package) {
                Some(g) => g.entries.push(e),
                None => groups.push(Group {
                    package: entry.package.clone(),
                    channel: String::new(),
                    default_channel: false,
                    entries: vec![e],
                    chain: Ok(Vec::new()),
                }),
            }
        }
        for g in &mut groups {
            g.chain = Ok(g.entries.clone());
        }
        let mut ranked: Vec<usize> = (0..groups.len()).collect();
        ranked.sort_by(|&a, &b| groups[a].package.cmp(&groups[b].package));
        let mut prepared = PreparedCatalog::assemble(entries, groups, ranked);
        prepared.installed = true;
        prepared
    }

    fn assemble(entries: Vec<Entry>, groups: Vec<Group>, ranked: Vec<usize>) -> PreparedCatalog {
        let mut group_of = vec![0; entries.len()];
        let mut group_rank = vec![0; groups.len()];
        let mut package_groups: HashMap<String, Vec<usize>> = HashMap::new();
        for (rank, &g) in ranked.iter().enumerate() {
            group_rank[g] = rank;
            for &e in &groups[g].entries {
                group_of[e] = g;
            }
            package_groups
                .entry(groups[g].package.clone())
                .or_default()
                .push(g);
        }
        let unusual_names = has_unusual_names(&entries);
        PreparedCatalog {
            index: ProviderIndex::build(&entries),
            entries,
            groups,
            group_of,
            group_rank,
            package_groups,
            providers: HashMap::new(),
            unusual_names,
            installed: false,
        }
    }

    /// The entries of this catalog satisfying `predicate`, in candidate order (§2.4), or the
    /// ordering error of the first consulted channel.
    pub(crate) fn providers(&self, predicate: &Predicate) -> Result<Vec<usize>, String> {
        match SimpleRequirement::of(predicate).and_then(|k| self.providers.get(&k)) {
            Some(found) => found.clone(),
            None => self.find_providers(predicate),
        }
    }

    /// `members`, entries of group `g`, ordered as a channel holding only them.
    pub(crate) fn chain_of(&self, g: usize, members: Vec<usize>) -> Result<Vec<usize>, String> {
        let group = &self.groups[g];
        let links: Vec<Links> = members.iter().map(|&e| self.entries[e].links()).collect();
        let order =
            sort_channel(&group.package, &group.channel, &links).map_err(|e| e.to_string())?;
        Ok(order.into_iter().map(|i| members[i]).collect())
    }

    fn find_providers(&self, predicate: &Predicate) -> Result<Vec<usize>, String> {
        let satisfies = |e: &usize| predicate.matches(&self.entries[*e].subject());
        let mut groups: Vec<usize> = match self.index.candidates(predicate) {
            Some(candidates) => candidates
                .iter()
                .filter(|e| satisfies(e))
                .map(|&e| self.group_of[e])
                .collect(),
            None => (0..self.entries.len())
                .filter(satisfies)
                .map(|e| self.group_of[e])
                .collect(),
        };
        groups.sort_by_key(|&g| self.group_rank[g]);
        groups.dedup();
        let mut providers = Vec::new();
        for g in groups {
            let chain = self.groups[g].chain.as_ref().map_err(Clone::clone)?;
            let found = chain.iter().copied().filter(satisfies).collect();
            if self.installed {
                // OLM orders the installed providers of one package as a channel of their
                // own, without upgrade edges: two of them cannot be ordered.
                providers.extend(self.chain_of(g, found)?);
            } else {
                providers.extend(found);
            }
        }
        Ok(providers)
    }
}

/// An entry with the given properties; `properties` must already be free of bundle objects.
#[allow(clippy::too_many_arguments)]
pub(crate) fn entry(
    name: String,
    package: String,
    channel: String,
    default_channel: bool,
    version_text: String,
    version: Option<Version>,
    properties: Vec<Property>,
    links: (String, Vec<String>, String),
    bundle_path: String,
    owned: bool,
) -> Entry {
    let properties = dedup_requirements(properties);
    let values = decode(&properties);
    let (replaces, skips, skip_range) = links;
    Entry {
        requirements: requirements(&properties),
        unique: unique_keys(&properties, &values),
        deprecated: properties.iter().any(|p| p.kind == DEPRECATED),
        skip_range_parsed: Range::parse(&skip_range).ok(),
        name,
        package,
        channel,
        default_channel,
        replaces,
        skips,
        skip_range,
        version,
        version_text,
        values,
        properties,
        bundle_path,
        owned,
    }
}

fn catalog_entry(
    channel: &str,
    default_channel: bool,
    ce: &ChannelEntry,
    bundle: &Bundle,
) -> Entry {
    let mut properties: Vec<Property> = bundle
        .properties
        .iter()
        .filter(|p| p.kind != BUNDLE_OBJECT)
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
    entry(
        ce.name.clone(),
        bundle.package.clone(),
        channel.to_owned(),
        default_channel,
        version_text.clone(),
        Version::parse_tolerant(&version_text).ok(),
        properties,
        (ce.replaces.clone(), ce.skips.clone(), ce.skip_range.clone()),
        bundle.image.clone(),
        false,
    )
}

fn json_str(value: &str, key: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(value)
        .ok()?
        .get(key)?
        .as_str()
        .map(str::to_owned)
}

/// The package named by the last `olm.package` property, as OLM reads an installed CSV's
/// properties annotation (each one overwrites the package read before it).
pub(crate) fn package_of(properties: &[Property]) -> Option<String> {
    properties
        .iter()
        .rev()
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

/// One key per `olm.gvk` and per `olm.package` property that decodes, in property order.
fn unique_keys(properties: &[Property], values: &[Option<serde_json::Value>]) -> Vec<UniqueKey> {
    let mut keys = Vec::new();
    for (p, value) in properties.iter().zip(values) {
        let Some(value) = value else {
            continue;
        };
        let field = |k: &str| value.get(k).and_then(|v| v.as_str()).unwrap_or_default();
        if p.kind == GVK {
            keys.push(UniqueKey::Gvk(format!(
                "{} ({}/{})",
                field("kind"),
                field("group"),
                field("version")
            )));
        } else if p.kind == PACKAGE {
            keys.push(UniqueKey::Package(field("packageName").to_owned()));
        }
    }
    keys
}

/// Whether identifiers built from these entries could coincide with each other or with
/// other kinds of identifier: a `/` inside a channel or CSV name, the same CSV twice in a
/// channel, or a uniqueness key holding one of `/:() `.
fn has_unusual_names(entries: &[Entry]) -> bool {
    let mut seen = HashSet::new();
    entries.iter().any(|e| {
        e.name.contains('/')
            || e.channel.contains('/')
            || !seen.insert((e.channel.as_str(), e.name.as_str()))
            || e.unique.iter().any(|k| match k {
                UniqueKey::Gvk(id) => {
                    id.matches(['/', '(', ')', ':']).count() != 3 || id.matches(' ').count() != 1
                }
                UniqueKey::Package(name) => name.contains(['/', ':', '(', ')', ' ']),
            })
    })
}
