//! What a filter kept and why, per package, channel and bundle: the text `mirror --dry-run`
//! prints.
use super::select::Reason;
use std::collections::BTreeSet;
use std::fmt::Write;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterReport {
    pub(crate) catalog: String,
    pub(crate) scope: Scope,
    /// In catalog order.
    pub packages: Vec<PackageReport>,
}

/// What the `operators[]` entry asked for as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// No `packages`, not `full`: every package, the head of every channel.
    EveryHead,
    /// No `packages`, `full: true`: the catalog unchanged.
    Everything,
    /// The listed packages (`full` applies to those without a range).
    Listed { full: bool },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageReport {
    pub(crate) name: String,
    pub(crate) default_channel: String,
    /// The catalog's default channel, when `defaultChannel` replaced it.
    pub replaced_default: Option<String>,
    /// In catalog order.
    pub channels: Vec<ChannelReport>,
    pub dropped_channels: Vec<DroppedChannel>,
    /// `None` when the source package has no deprecations.
    pub(crate) deprecations: Option<DeprecationCount>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelReport {
    pub(crate) name: String,
    pub(crate) selection: Selection,
    pub head: String,
    /// Head first, then as the selection found them.
    pub bundles: Vec<KeptBundle>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    Head,
    Full,
    /// The range as the configuration spelt it, and whether it was set on the package.
    Range {
        range: String,
        package_level: bool,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptBundle {
    pub name: String,
    /// The `olm.package` version, when the bundle has a valid one.
    pub(crate) version: Option<String>,
    pub reason: Reason,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedChannel {
    pub name: String,
    pub range: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeprecationCount {
    pub(crate) kept: usize,
    pub(crate) of: usize,
}

impl FilterReport {
    /// Distinct bundles kept, over all packages.
    pub(crate) fn bundle_count(&self) -> usize {
        self.packages
            .iter()
            .map(|p| {
                p.channels
                    .iter()
                    .flat_map(|c| c.bundles.iter().map(|b| b.name.as_str()))
                    .collect::<BTreeSet<_>>()
                    .len()
            })
            .sum()
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let scope = match self.scope {
            Scope::EveryHead => "no packages listed: the head of every channel of every package",
            Scope::Everything => "full: every bundle of every package",
            Scope::Listed { full: true } => "the listed packages, full",
            Scope::Listed { full: false } => "the listed packages",
        };
        let channels: usize = self.packages.iter().map(|p| p.channels.len()).sum();
        let _ = writeln!(
            out,
            "catalog {}: {scope}\n  kept {} package(s), {channels} channel(s), {} bundle(s)",
            self.catalog,
            self.packages.len(),
            self.bundle_count()
        );
        for p in &self.packages {
            p.render(&mut out);
        }
        out
    }
}

impl PackageReport {
    fn render(&self, out: &mut String) {
        let _ = write!(
            out,
            "package {}: default channel {}",
            self.name, self.default_channel
        );
        if let Some(old) = &self.replaced_default {
            let _ = write!(out, " (set by defaultChannel; the catalog's is {old})");
        }
        out.push('\n');
        for c in &self.channels {
            let selection = match &c.selection {
                Selection::Head => "head only".to_owned(),
                Selection::Full => "full".to_owned(),
                Selection::Range {
                    range,
                    package_level: true,
                } => format!("{range} (package)"),
                Selection::Range {
                    range,
                    package_level: false,
                } => range.clone(),
            };
            let _ = writeln!(out, "  channel {}: {selection}; head {}", c.name, c.head);
            for b in &c.bundles {
                let version = b.version.as_deref().unwrap_or("no version");
                let why = match &b.reason {
                    Reason::Head => "head of the channel".to_owned(),
                    Reason::Full => "full".to_owned(),
                    Reason::InRange => "in range".to_owned(),
                    Reason::Bridge => {
                        "outside the range, kept to connect the head to the bundles below"
                            .to_owned()
                    }
                    Reason::SkippedBy(by) => format!("in range, skipped by {by}"),
                    Reason::ExactVersion => "the exact version asked for".to_owned(),
                };
                let _ = writeln!(out, "    {} ({version}): {why}", b.name);
            }
        }
        for d in &self.dropped_channels {
            let _ = writeln!(
                out,
                "  channel {}: dropped, no bundle in {} (package)",
                d.name, d.range
            );
        }
        if let Some(DeprecationCount { kept, of }) = self.deprecations {
            let _ = if kept == 0 {
                writeln!(
                    out,
                    "  deprecations: dropped (none of the {of} entries refers to a kept object)"
                )
            } else {
                writeln!(out, "  deprecations: {kept} of {of} entries kept")
            };
        }
    }
}
