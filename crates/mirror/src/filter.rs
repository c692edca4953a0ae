//! Filtering a catalog as oc-mirror v2 does for one `mirror.operators[]` entry: keep exactly
//! the packages, channels and bundles OLM needs to install and upgrade within what was asked,
//! as a catalog that still validates.
//!
//! Semantics, from oc-mirror v2 (`internal/pkg/operator/catalog_handler.go`,
//! `filterCatalog`, which hands the work to `github.com/sherine-k/catalog-filter`'s
//! `mirror-config/v1alpha1` filter) and its acceptance table
//! (`v2/docs/operator-filtering-investigation.md`):
//!
//! - No `packages`, not `full`: every package, and of each package the head of **every**
//!   channel, not only the default channel's (the filter's per-channel head branch; the
//!   table's "1 bundle, corresponding to the head version for each channel"). oc-mirror v1
//!   kept only the default channel; v2 does not.
//! - `full: true`: every bundle of every channel (of the listed packages, if any).
//! - A listed package without a range: the head of each of its channels (of the listed
//!   ones, if any).
//! - `minVersion`/`maxVersion` become the constraint `>=MIN <=MAX` (Masterminds grammar:
//!   pre-releases are outside it unless a bound is one); on the package they apply to each
//!   of its channels, on a channel to that channel. The selection walks the replaces chain
//!   and the skips of its entries (`select.rs`); `skipRange` plays no part in it, as
//!   upstream. Equal bounds keep exactly that version.
//! - A kept entry keeps its `replaces`, `skips` and `skipRange` even when they name bundles
//!   that were not kept, as upstream does: OLM's edges are by name (resolution spec §2.6,
//!   "virtual" graph nodes), so a cluster running an older, unmirrored version still
//!   upgrades into the kept ones, and catalog validation accepts such names. Only repeated
//!   `skips` names are dropped.
//! - Deprecation entries that refer to dropped channels or bundles go; a deprecations object
//!   left empty goes too. Other documents go with their package (and stay when they name no
//!   package).
//!
//! Deliberate differences from upstream, all where upstream would fail later or silently:
//! a listed package or channel missing from the catalog is an error (oc-mirror warns and
//! mirrors nothing for it); a channel-level range that keeps nothing of its channel is an
//! error (upstream drops the channel unless it is the default); a package-level range drops
//! the channels it keeps nothing of and is an error only when it keeps nothing at all; the
//! default-channel rule is checked on the channels actually kept.
mod error;
mod report;
mod select;

pub use error::{FilterError, FilterProblem};
pub use report::{
    ChannelReport, DeprecationCount, DroppedChannel, FilterReport, KeptBundle, PackageReport,
    Scope, Selection,
};
pub use select::Reason;

use crate::config::{Operators, PackageFilter};
use catalog::add::version_of;
use catalog::model::Model;
use catalog::semver::Version;
use catalog::types::*;
use select::{Kept, Range};
use std::collections::{HashMap, HashSet};

/// The filtered catalog and the account of what was kept.
#[derive(Clone, Debug)]
pub struct Filtered {
    /// Validates (`Model::build`).
    pub config: DeclarativeConfig,
    pub report: FilterReport,
}

/// Filters one catalog as oc-mirror v2 would for this `operators` entry.
pub fn filter(fbc: &DeclarativeConfig, op: &Operators) -> Result<Filtered, FilterError> {
    let fail = |problems| FilterError {
        catalog: op.catalog.clone(),
        problems,
    };
    let index = Index::new(fbc);
    let mut problems = Vec::new();
    let requests = requests(&index, op, &mut problems);
    if !problems.is_empty() {
        return Err(fail(problems));
    }

    let mut out = DeclarativeConfig::default();
    let mut reports = Vec::new();
    // By package: the kept channel and bundle names, and the package's report.
    let mut kept: HashMap<&str, (HashSet<String>, HashSet<String>, usize)> = HashMap::new();
    for request in &requests {
        let Some((package, report)) = filter_package(&index, request, &mut problems) else {
            continue;
        };
        let channels: HashSet<String> = report.channels.iter().map(|c| c.name.clone()).collect();
        let bundles: HashSet<String> = report
            .channels
            .iter()
            .flat_map(|c| c.bundles.iter().map(|b| b.name.clone()))
            .collect();
        out.packages.push(package);
        out.channels
            .extend(index.channels_of(request.name).filter_map(|c| {
                let chosen = report.channels.iter().find(|r| r.name == c.name)?;
                Some(filtered_channel(c, chosen))
            }));
        kept.insert(request.name, (channels, bundles, reports.len()));
        reports.push(report);
    }
    if !problems.is_empty() {
        return Err(fail(problems));
    }

    out.bundles = fbc
        .bundles
        .iter()
        .filter(|b| {
            kept.get(b.package.as_str())
                .is_some_and(|(_, names, _)| names.contains(&b.name))
        })
        .cloned()
        .collect();
    for d in &fbc.deprecations {
        let Some((channels, bundles, report)) = kept.get(d.package.as_str()) else {
            continue;
        };
        let entries: Vec<DeprecationEntry> = d
            .entries
            .iter()
            .filter(|e| match e.reference.schema.as_str() {
                SCHEMA_PACKAGE => true,
                SCHEMA_CHANNEL => channels.contains(&e.reference.name),
                SCHEMA_BUNDLE => bundles.contains(&e.reference.name),
                _ => false,
            })
            .cloned()
            .collect();
        // A package has at most one deprecations object in a valid catalog.
        reports[*report].deprecations = Some(DeprecationCount {
            kept: entries.len(),
            of: d.entries.len(),
        });
        if !entries.is_empty() {
            out.deprecations.push(Deprecations {
                entries,
                ..d.clone()
            });
        }
    }
    out.others = fbc
        .others
        .iter()
        .filter(|m| {
            op.packages.is_empty() || m.package.is_empty() || kept.contains_key(m.package.as_str())
        })
        .cloned()
        .collect();

    if let Err(e) = Model::build(out.clone()) {
        return Err(fail(vec![FilterProblem::InvalidResult {
            report: e.to_string(),
        }]));
    }
    let scope = match (op.packages.is_empty(), op.full) {
        (true, false) => Scope::EveryHead,
        (true, true) => Scope::Everything,
        (false, full) => Scope::Listed { full },
    };
    Ok(Filtered {
        config: out,
        report: FilterReport {
            catalog: op.catalog.clone(),
            scope,
            packages: reports,
        },
    })
}

/// The source catalog, looked up by name.
struct Index<'a> {
    /// In catalog order.
    packages: Vec<&'a Package>,
    by_name: HashMap<&'a str, &'a Package>,
    channels: HashMap<&'a str, Vec<&'a Channel>>,
    bundles: HashMap<&'a str, Vec<&'a Bundle>>,
}

impl<'a> Index<'a> {
    fn new(fbc: &'a DeclarativeConfig) -> Index<'a> {
        let mut channels: HashMap<&str, Vec<&Channel>> = HashMap::new();
        for c in &fbc.channels {
            channels.entry(c.package.as_str()).or_default().push(c);
        }
        let mut bundles: HashMap<&str, Vec<&Bundle>> = HashMap::new();
        for b in &fbc.bundles {
            bundles.entry(b.package.as_str()).or_default().push(b);
        }
        Index {
            packages: fbc.packages.iter().collect(),
            by_name: fbc.packages.iter().map(|p| (p.name.as_str(), p)).collect(),
            channels,
            bundles,
        }
    }

    /// The `olm.package` version of each bundle of `package` that has a valid one.
    fn versions_of(&self, package: &str) -> HashMap<&'a str, Version> {
        let bundles = self.bundles.get(package).into_iter().flatten();
        bundles
            .filter_map(|b| Some((b.name.as_str(), version_of(b)?)))
            .collect()
    }

    fn package(&self, name: &str) -> Option<&'a Package> {
        self.by_name.get(name).copied()
    }

    fn channels_of(&self, package: &str) -> impl Iterator<Item = &'a Channel> + '_ {
        self.channels.get(package).into_iter().flatten().copied()
    }
}

/// What to keep of one package.
struct Request<'a> {
    name: &'a str,
    full: bool,
    /// `None`: every channel.
    channels: Option<Vec<ChannelRequest<'a>>>,
    range: Option<RangeRequest>,
    default_channel: Option<&'a str>,
}

struct ChannelRequest<'a> {
    name: &'a str,
    range: Option<RangeRequest>,
}

struct RangeRequest {
    range: Range,
    /// As the configuration spelt it: `minVersion 1.2.0, maxVersion 1.3.0`.
    text: String,
}

/// What each package asks for, or the problems with the request itself.
fn requests<'a>(
    index: &Index<'a>,
    op: &'a Operators,
    problems: &mut Vec<FilterProblem>,
) -> Vec<Request<'a>> {
    if op.packages.is_empty() {
        return index
            .packages
            .iter()
            .map(|p| Request {
                name: &p.name,
                full: op.full,
                channels: None,
                range: None,
                default_channel: None,
            })
            .collect();
    }
    let mut listed = HashSet::new();
    let mut out = Vec::new();
    for p in &op.packages {
        if !listed.insert(p.name.as_str()) {
            problems.push(FilterProblem::DuplicatePackage {
                package: p.name.clone(),
            });
            continue;
        }
        if index.package(&p.name).is_none() {
            problems.push(FilterProblem::UnknownPackage {
                package: p.name.clone(),
            });
            continue;
        }
        let at = format!("package {:?}", p.name);
        let range = range_request(&at, &p.min_version, &p.max_version, problems);
        if range.is_some() && op.full {
            problems.push(FilterProblem::RangeWithFull {
                package: p.name.clone(),
                channel: None,
            });
        }
        let channels = (!p.channels.is_empty())
            .then(|| channel_requests(index, p, op.full, range.is_some(), problems));
        out.push(Request {
            name: &p.name,
            full: op.full,
            channels,
            range,
            default_channel: p.default_channel.as_deref(),
        });
    }
    out
}

fn channel_requests<'a>(
    index: &Index<'a>,
    p: &'a PackageFilter,
    full: bool,
    package_range: bool,
    problems: &mut Vec<FilterProblem>,
) -> Vec<ChannelRequest<'a>> {
    let mut out = Vec::new();
    for c in &p.channels {
        if !index.channels_of(&p.name).any(|ch| ch.name == c.name) {
            let mut available: Vec<String> = index
                .channels_of(&p.name)
                .map(|ch| ch.name.clone())
                .collect();
            available.sort_unstable();
            problems.push(FilterProblem::UnknownChannel {
                package: p.name.clone(),
                channel: c.name.clone(),
                available,
            });
            continue;
        }
        let at = format!("package {:?} channel {:?}", p.name, c.name);
        let range = range_request(&at, &c.min_version, &c.max_version, problems);
        if range.is_some() && package_range {
            problems.push(FilterProblem::RangeOnBothLevels {
                package: p.name.clone(),
                channel: c.name.clone(),
            });
        }
        if range.is_some() && full {
            problems.push(FilterProblem::RangeWithFull {
                package: p.name.clone(),
                channel: Some(c.name.clone()),
            });
        }
        out.push(ChannelRequest {
            name: &c.name,
            range,
        });
    }
    out
}

fn range_request(
    at: &str,
    min: &Option<String>,
    max: &Option<String>,
    problems: &mut Vec<FilterProblem>,
) -> Option<RangeRequest> {
    let mut parse = |field: &'static str, text: &Option<String>| {
        let text = text.as_ref()?;
        Version::parse(text)
            .map_err(|reason| {
                problems.push(FilterProblem::InvalidVersion {
                    at: at.to_owned(),
                    field,
                    value: text.clone(),
                    reason,
                })
            })
            .ok()
    };
    let (lo, hi) = (parse("minVersion", min), parse("maxVersion", max));
    if lo.is_none() && hi.is_none() {
        return None;
    }
    let text = [("minVersion", &lo), ("maxVersion", &hi)]
        .iter()
        .filter_map(|(field, v)| v.as_ref().map(|v| format!("{field} {v}")))
        .collect::<Vec<_>>()
        .join(", ");
    match Range::new(lo.as_ref(), hi.as_ref()) {
        Ok(range) => Some(RangeRequest { range, text }),
        Err(reason) => {
            problems.push(FilterProblem::InvalidVersion {
                at: at.to_owned(),
                field: "minVersion/maxVersion",
                value: text,
                reason,
            });
            None
        }
    }
}

/// The package document (default channel possibly replaced) and its report, or `None` with
/// the problems recorded.
fn filter_package(
    index: &Index,
    request: &Request,
    problems: &mut Vec<FilterProblem>,
) -> Option<(Package, PackageReport)> {
    let source = index.package(request.name)?;
    let versions = &index.versions_of(request.name);
    let before = problems.len();
    let mut channels = Vec::new();
    let mut dropped = Vec::new();
    for c in index.channels_of(request.name) {
        let (channel_range, selected) = match &request.channels {
            None => (None, true),
            Some(listed) => match listed.iter().find(|l| l.name == c.name) {
                Some(l) => (l.range.as_ref(), true),
                None => (None, false),
            },
        };
        if !selected {
            continue;
        }
        let range = channel_range.or(request.range.as_ref());
        let (selection, kept) = match range {
            Some(r) => (
                Selection::Range {
                    range: r.text.clone(),
                    package_level: channel_range.is_none(),
                },
                select::in_range(&c.entries, versions, &r.range),
            ),
            None if request.full => (Selection::Full, Ok(select::everything(&c.entries))),
            None => (Selection::Head, select::heads_only(&c.entries)),
        };
        let kept = match kept {
            Ok(kept) => kept,
            Err(problem) => {
                problems.push(FilterProblem::ChannelGraph {
                    package: request.name.to_owned(),
                    channel: c.name.clone(),
                    problem,
                });
                continue;
            }
        };
        if kept.is_empty() {
            let range = range.map_or_else(String::new, |r| r.text.clone());
            if channel_range.is_some() {
                problems.push(FilterProblem::RangeKeepsNothing {
                    package: request.name.to_owned(),
                    channel: Some(c.name.clone()),
                    range,
                });
            } else {
                dropped.push(DroppedChannel {
                    name: c.name.clone(),
                    range,
                });
            }
            continue;
        }
        channels.push(channel_report(c, selection, kept, versions));
    }
    if problems.len() > before {
        return None;
    }

    let names: Vec<String> = channels
        .iter()
        .map(|c: &ChannelReport| c.name.clone())
        .collect();
    if names.is_empty() {
        problems.push(FilterProblem::RangeKeepsNothing {
            package: request.name.to_owned(),
            channel: None,
            range: request
                .range
                .as_ref()
                .map_or_else(String::new, |r| r.text.clone()),
        });
        return None;
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    let default_channel = match request.default_channel {
        Some(wanted) if names.iter().any(|n| n == wanted) => wanted.to_owned(),
        Some(wanted) => {
            problems.push(FilterProblem::DefaultChannelNotKept {
                package: request.name.to_owned(),
                requested: wanted.to_owned(),
                kept: sorted,
            });
            return None;
        }
        None if names.contains(&source.default_channel) => source.default_channel.clone(),
        None => {
            problems.push(FilterProblem::DefaultChannelFilteredOut {
                package: request.name.to_owned(),
                default_channel: source.default_channel.clone(),
                kept: sorted,
            });
            return None;
        }
    };
    let replaced_default =
        (default_channel != source.default_channel).then(|| source.default_channel.clone());
    let package = Package {
        default_channel: default_channel.clone(),
        ..source.clone()
    };
    let report = PackageReport {
        name: request.name.to_owned(),
        default_channel,
        replaced_default,
        channels,
        dropped_channels: dropped,
        deprecations: None,
    };
    Some((package, report))
}

fn channel_report(
    c: &Channel,
    selection: Selection,
    kept: Vec<Kept>,
    versions: &HashMap<&str, Version>,
) -> ChannelReport {
    let bundles: Vec<KeptBundle> = kept
        .into_iter()
        .map(|k| KeptBundle {
            version: versions.get(k.name.as_str()).map(Version::to_string),
            name: k.name,
            reason: k.reason,
        })
        .collect();
    // The head of what is kept: the kept entry no other kept entry replaces or skips.
    let names: HashSet<&str> = bundles.iter().map(|b| b.name.as_str()).collect();
    let entries: Vec<ChannelEntry> = c
        .entries
        .iter()
        .filter(|e| names.contains(e.name.as_str()))
        .cloned()
        .collect();
    let head = select::head(&entries).map_or_else(|_| bundles[0].name.clone(), |e| e.name.clone());
    ChannelReport {
        name: c.name.clone(),
        selection,
        head,
        bundles,
    }
}

/// The channel with only the kept entries, in their catalog order, repeated skips dropped.
fn filtered_channel(c: &Channel, report: &ChannelReport) -> Channel {
    let names: HashSet<&str> = report.bundles.iter().map(|b| b.name.as_str()).collect();
    let entries = c
        .entries
        .iter()
        .filter(|e| names.contains(e.name.as_str()))
        .map(|e| ChannelEntry {
            skips: select::dedupe(&e.skips),
            ..e.clone()
        })
        .collect();
    Channel {
        entries,
        ..c.clone()
    }
}
