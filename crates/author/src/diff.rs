//! What a catalog update changes for clusters: packages, channels and bundles added or
//! removed, channel heads that moved, upgrade edges added or removed, and — what authors
//! most need before publishing — the installed versions that could upgrade to a channel's
//! head before and can no longer reach the new head.
use super::bundle_package_version;
use catalog::graph;
use catalog::semver::{Range, Version};
use catalog::{Channel, ChannelEntry, DeclarativeConfig};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Write;

#[derive(Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogDiff {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) packages_added: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) packages_removed: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) packages_changed: Vec<PackageDiff>,
}

#[derive(Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PackageDiff {
    pub(crate) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) default_channel: Option<Change>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) channels_added: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) channels_removed: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) bundles_added: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) bundles_removed: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) channels_changed: Vec<ChannelDiff>,
}

#[derive(Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ChannelDiff {
    pub(crate) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) head: Option<Change>,
    /// Edges as `<bundle> replaces <bundle>`, `<bundle> skips <bundle>` or
    /// `<bundle> skipRange <range>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) edges_added: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) edges_removed: Vec<String>,
    /// Bundles that could upgrade to the old head and cannot reach the new one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) lost_upgrade_paths: Vec<String>,
}

#[derive(Debug, Default, PartialEq, Serialize)]
pub(crate) struct Change {
    pub(crate) old: String,
    pub(crate) new: String,
}

impl CatalogDiff {
    /// Whether some channel strands a bundle that used to reach its head.
    pub fn has_broken_paths(&self) -> bool {
        (self.packages_changed.iter())
            .flat_map(|p| &p.channels_changed)
            .any(|c| !c.lost_upgrade_paths.is_empty())
    }

    /// The diff as lines a person reads in a terminal or a CI log.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.packages_added {
            let _ = writeln!(out, "+ package {p}");
        }
        for p in &self.packages_removed {
            let _ = writeln!(out, "- package {p}");
        }
        for p in &self.packages_changed {
            let _ = writeln!(out, "~ package {}", p.name);
            if let Some(c) = &p.default_channel {
                let _ = writeln!(out, "    default channel {} -> {}", c.old, c.new);
            }
            let lists = [
                ("+ channel", &p.channels_added),
                ("- channel", &p.channels_removed),
                ("+ bundle", &p.bundles_added),
                ("- bundle", &p.bundles_removed),
            ];
            for (sign, names) in lists {
                for n in names {
                    let _ = writeln!(out, "    {sign} {n}");
                }
            }
            for c in &p.channels_changed {
                let _ = writeln!(out, "    ~ channel {}", c.name);
                if let Some(h) = &c.head {
                    let _ = writeln!(out, "        head {} -> {}", h.old, h.new);
                }
                for e in &c.edges_added {
                    let _ = writeln!(out, "        + edge {e}");
                }
                for e in &c.edges_removed {
                    let _ = writeln!(out, "        - edge {e}");
                }
                for b in &c.lost_upgrade_paths {
                    let _ = writeln!(out, "        ! {b} can no longer upgrade to the head");
                }
            }
        }
        out
    }
}

/// Compares two catalogs.
pub(crate) fn diff(old: &DeclarativeConfig, new: &DeclarativeConfig) -> CatalogDiff {
    let old_pkgs = packages(old);
    let new_pkgs = packages(new);
    let mut out = CatalogDiff::default();
    let (added, removed) = added_removed(old_pkgs.keys(), new_pkgs.keys());
    out.packages_added = added;
    out.packages_removed = removed;
    let old_versions = versions(old);
    let new_versions = versions(new);
    for (name, o) in &old_pkgs {
        let Some(n) = new_pkgs.get(name) else {
            continue;
        };
        let mut p = PackageDiff {
            name: name.to_string(),
            default_channel: change(o.default_channel, n.default_channel),
            ..Default::default()
        };
        (p.channels_added, p.channels_removed) =
            added_removed(o.channels.keys(), n.channels.keys());
        (p.bundles_added, p.bundles_removed) = added_removed(o.bundles.iter(), n.bundles.iter());
        for (channel, oc) in &o.channels {
            let Some(nc) = n.channels.get(channel) else {
                continue;
            };
            let c = channel_diff(oc, nc, &o.bundles, [&old_versions, &new_versions]);
            if c != (ChannelDiff {
                name: c.name.clone(),
                ..Default::default()
            }) {
                p.channels_changed.push(c);
            }
        }
        if p != (PackageDiff {
            name: p.name.clone(),
            ..Default::default()
        }) {
            out.packages_changed.push(p);
        }
    }
    out
}

struct PackageView<'a> {
    default_channel: &'a str,
    channels: BTreeMap<&'a str, &'a Channel>,
    bundles: BTreeSet<&'a str>,
}

fn packages(dc: &DeclarativeConfig) -> BTreeMap<&str, PackageView<'_>> {
    let mut out: BTreeMap<&str, PackageView> = BTreeMap::new();
    for p in &dc.packages {
        entry(&mut out, &p.name).default_channel = &p.default_channel;
    }
    for c in &dc.channels {
        entry(&mut out, &c.package).channels.insert(&c.name, c);
    }
    for b in &dc.bundles {
        entry(&mut out, &b.package).bundles.insert(&b.name);
    }
    out
}

fn entry<'m, 'a>(
    map: &'m mut BTreeMap<&'a str, PackageView<'a>>,
    name: &'a str,
) -> &'m mut PackageView<'a> {
    map.entry(name).or_insert_with(|| PackageView {
        default_channel: "",
        channels: BTreeMap::new(),
        bundles: BTreeSet::new(),
    })
}

/// Bundle versions by name; bundles without a readable version take no part in skipRanges.
fn versions(dc: &DeclarativeConfig) -> HashMap<&str, Version> {
    (dc.bundles.iter())
        .filter_map(|b| Some((b.name.as_str(), bundle_package_version(b).ok()?.1)))
        .collect()
}

fn added_removed<'a>(
    old: impl Iterator<Item = &'a &'a str>,
    new: impl Iterator<Item = &'a &'a str>,
) -> (Vec<String>, Vec<String>) {
    let old: BTreeSet<&str> = old.copied().collect();
    let new: BTreeSet<&str> = new.copied().collect();
    (
        new.difference(&old).map(|s| s.to_string()).collect(),
        old.difference(&new).map(|s| s.to_string()).collect(),
    )
}

fn change(old: &str, new: &str) -> Option<Change> {
    (old != new).then(|| Change {
        old: old.to_owned(),
        new: new.to_owned(),
    })
}

fn edges(c: &Channel) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in &c.entries {
        if !e.replaces.is_empty() {
            out.insert(format!("{} replaces {}", e.name, e.replaces));
        }
        for s in &e.skips {
            out.insert(format!("{} skips {s}", e.name));
        }
        if !e.skip_range.is_empty() {
            out.insert(format!("{} skipRange {}", e.name, e.skip_range));
        }
    }
    out
}

/// `installable` are the old package's bundles: a cluster may run any of them, installed
/// through this channel or another, and upgrade through this one.
fn channel_diff(
    old: &Channel,
    new: &Channel,
    installable: &BTreeSet<&str>,
    [old_versions, new_versions]: [&HashMap<&str, Version>; 2],
) -> ChannelDiff {
    let (old_head, _) = graph::check(&old.entries);
    let (new_head, _) = graph::check(&new.entries);
    let old_edges = edges(old);
    let new_edges = edges(new);
    let mut lost = Vec::new();
    if let (Some(old_head), Some(new_head)) = (old_head, new_head) {
        let (before_versions, after_versions) = ([old_versions], [new_versions, old_versions]);
        let before = Upgrades::new(&old.entries, &before_versions);
        let after = Upgrades::new(&new.entries, &after_versions);
        let candidates: BTreeSet<&str> = (old.entries.iter().map(|e| e.name.as_str()))
            .chain(installable.iter().copied())
            .collect();
        for from in candidates {
            if before.reaches(from, old_head) && !after.reaches(from, new_head) {
                lost.push(from.to_owned());
            }
        }
    }
    ChannelDiff {
        name: new.name.clone(),
        head: change(old_head.unwrap_or("(none)"), new_head.unwrap_or("(none)")),
        edges_added: new_edges.difference(&old_edges).cloned().collect(),
        edges_removed: old_edges.difference(&new_edges).cloned().collect(),
        lost_upgrade_paths: lost,
    }
}

/// The upgrades one channel offers: from a bundle to every entry that replaces or skips
/// it, or whose skipRange holds its version (looked up in `versions`, first map first).
struct Upgrades<'a> {
    entries: &'a [ChannelEntry],
    ranges: Vec<Option<Range>>,
    versions: &'a [&'a HashMap<&'a str, Version>],
}

impl<'a> Upgrades<'a> {
    fn new(entries: &'a [ChannelEntry], versions: &'a [&'a HashMap<&'a str, Version>]) -> Self {
        let ranges = entries
            .iter()
            .map(|e| {
                (!e.skip_range.is_empty())
                    .then(|| Range::parse(&e.skip_range).ok())
                    .flatten()
            })
            .collect();
        Upgrades {
            entries,
            ranges,
            versions,
        }
    }

    fn reaches(&self, from: &str, to: &str) -> bool {
        let mut seen: HashSet<&str> = HashSet::from([from]);
        let mut queue = VecDeque::from([from]);
        while let Some(n) = queue.pop_front() {
            if n == to {
                return true;
            }
            let version = self.versions.iter().find_map(|m| m.get(n));
            for (e, range) in self.entries.iter().zip(&self.ranges) {
                let upgrades = e.replaces == n
                    || e.skips.iter().any(|s| s == n)
                    || range
                        .as_ref()
                        .zip(version)
                        .is_some_and(|(r, v)| r.contains(v));
                if upgrades && seen.insert(&e.name) {
                    queue.push_back(&e.name);
                }
            }
        }
        false
    }
}
