//! Which entries of one channel a filter keeps: the head, everything, or a version range
//! taken along the upgrade graph.
//!
//! The range walk is the one of the catalog filter oc-mirror v2 delegates to
//! (`github.com/sherine-k/catalog-filter`, `mirror-config/v1alpha1/channel.go`,
//! `filterByVersionRange`): keep a stretch of the replaces chain that reaches every in-range
//! bundle the chain and its skips lead to, and nothing above or below it that is not needed.
//! Bundles are compared by the `olm.package` version; those without one are never in range.
use catalog::ChannelEntry;
use catalog::semver::Version;
use catalog::version_constraint::VersionConstraint;
use std::collections::{HashMap, HashSet};

/// Why an entry is kept (printed by `mirror --dry-run`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Heads only: the channel's head.
    Head,
    /// `full: true`.
    Full,
    /// On the kept stretch of the replaces chain, version in range.
    InRange,
    /// On the kept stretch of the replaces chain but outside the range: without it the
    /// in-range bundles below would not be reachable from the kept head.
    Bridge,
    /// In range and skipped by this kept entry (reachable by that skip, not by replaces).
    SkippedBy(String),
    /// `minVersion` equal to `maxVersion`: exactly that version.
    ExactVersion,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kept {
    pub(crate) name: String,
    pub(crate) reason: Reason,
}

/// A version range from `minVersion`/`maxVersion`.
pub(crate) enum Range {
    /// oc-mirror's `>=MIN <=MAX` constraint (Masterminds grammar, so pre-releases are out
    /// unless a bound is one).
    Between(VersionConstraint),
    /// oc-mirror answers equal bounds with exactly that version (OCPBUGS-61497).
    Exactly(Version),
}

impl Range {
    pub(crate) fn new(min: Option<&Version>, max: Option<&Version>) -> Result<Range, String> {
        if let (Some(lo), Some(hi)) = (min, max)
            && lo == hi
        {
            return Ok(Range::Exactly(lo.clone()));
        }
        let mut text = String::new();
        if let Some(lo) = min {
            text.push_str(&format!(">={lo}"));
        }
        if let Some(hi) = max {
            text.push_str(&format!(" <={hi}"));
        }
        VersionConstraint::parse(text.trim_start()).map(Range::Between)
    }

    fn contains(&self, v: &Version) -> bool {
        match self {
            Range::Between(c) => c.matches(v),
            Range::Exactly(x) => v == x,
        }
    }
}

/// The one entry that no other entry of the channel replaces or skips. Names outside the
/// channel do not count, as in catalog validation.
pub(crate) fn head(entries: &[ChannelEntry]) -> Result<&ChannelEntry, String> {
    let incoming: HashSet<&str> = entries
        .iter()
        .flat_map(|e| {
            std::iter::once(e.replaces.as_str()).chain(e.skips.iter().map(String::as_str))
        })
        .collect();
    let heads: Vec<&ChannelEntry> = entries
        .iter()
        .filter(|e| !incoming.contains(e.name.as_str()))
        .collect();
    match heads.as_slice() {
        [one] => Ok(one),
        [] => Err("no channel head (every entry is replaced or skipped)".to_owned()),
        many => {
            let mut names: Vec<&str> = many.iter().map(|e| e.name.as_str()).collect();
            names.sort_unstable();
            Err(format!("several channel heads: {}", names.join(", ")))
        }
    }
}

pub(crate) fn heads_only(entries: &[ChannelEntry]) -> Result<Vec<Kept>, String> {
    Ok(vec![Kept {
        name: head(entries)?.name.clone(),
        reason: Reason::Head,
    }])
}

pub(crate) fn everything(entries: &[ChannelEntry]) -> Vec<Kept> {
    entries
        .iter()
        .map(|e| Kept {
            name: e.name.clone(),
            reason: Reason::Full,
        })
        .collect()
}

/// The entries a range keeps, head first; empty when no entry is in range.
pub(crate) fn in_range(
    entries: &[ChannelEntry],
    versions: &HashMap<&str, Version>,
    range: &Range,
) -> Result<Vec<Kept>, String> {
    let top = head(entries)?;
    let inside = |name: &str| versions.get(name).is_some_and(|v| range.contains(v));
    if let Range::Exactly(_) = range {
        return Ok(entries
            .iter()
            .filter(|e| inside(&e.name))
            .map(|e| Kept {
                name: e.name.clone(),
                reason: Reason::ExactVersion,
            })
            .collect());
    }
    let by_name: HashMap<&str, &ChannelEntry> =
        entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let chain = replaces_chain(top, &by_name);

    // Bottom-up: how many in-range bundles each chain entry leads to (itself, its skips, and
    // everything below it), each bundle counted once, at the lowest entry that reaches it.
    let mut counted: HashSet<&str> = HashSet::new();
    let mut reach = vec![0usize; chain.len()];
    let mut below = 0;
    for (i, e) in chain.iter().enumerate().rev() {
        let mut n = below;
        if inside(&e.name) && counted.insert(&e.name) {
            n += 1;
        }
        for s in &e.skips {
            if by_name.contains_key(s.as_str()) && inside(s) && counted.insert(s) {
                n += 1;
            }
        }
        reach[i] = n;
        below = n;
    }
    // The kept stretch starts at the lowest entry that still reaches all of them and ends
    // above the first entry that reaches none.
    let total = reach.first().copied().unwrap_or(0);
    let start = reach.iter().rposition(|&n| n == total).unwrap_or(0);
    let end = reach.iter().position(|&n| n == 0).unwrap_or(chain.len());
    if start >= end {
        return Ok(Vec::new());
    }

    let stretch = &chain[start..end];
    let mut seen: HashSet<&str> = stretch.iter().map(|e| e.name.as_str()).collect();
    let mut kept: Vec<Kept> = stretch
        .iter()
        .map(|e| Kept {
            name: e.name.clone(),
            reason: if inside(&e.name) {
                Reason::InRange
            } else {
                Reason::Bridge
            },
        })
        .collect();
    for e in stretch {
        for s in &e.skips {
            if by_name.contains_key(s.as_str()) && inside(s) && seen.insert(s) {
                kept.push(Kept {
                    name: s.clone(),
                    reason: Reason::SkippedBy(e.name.clone()),
                });
            }
        }
    }
    Ok(kept)
}

/// From the head down along `replaces`, while the named entry is in the channel; a cycle
/// ends the walk where it closes (validation reports it).
fn replaces_chain<'a>(
    head: &'a ChannelEntry,
    by_name: &HashMap<&str, &'a ChannelEntry>,
) -> Vec<&'a ChannelEntry> {
    let mut chain = vec![head];
    let mut on_chain = HashSet::from([head.name.as_str()]);
    let mut current = head;
    while let Some(&next) = by_name.get(current.replaces.as_str()) {
        if !on_chain.insert(next.name.as_str()) {
            break;
        }
        chain.push(next);
        current = next;
    }
    chain
}

/// `skips` without repeats, first occurrences in order (real entries list the same name
/// dozens of times).
pub(crate) fn dedupe(skips: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    skips
        .iter()
        .filter(|s| seen.insert(s.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    /// `a.vX.Y.Z` entries versioned X.Y.Z.
    fn versions(entries: &[ChannelEntry]) -> HashMap<&str, Version> {
        entries
            .iter()
            .map(|e| (e.name.as_str(), v(e.name.trim_start_matches("a.v"))))
            .collect()
    }

    fn kept(k: &[Kept]) -> Vec<(&str, Reason)> {
        k.iter()
            .map(|k| (k.name.as_str(), k.reason.clone()))
            .collect()
    }

    #[test]
    fn head_ignores_names_outside_the_channel_and_reports_ambiguity() {
        let entries = [
            ChannelEntry::linked("a.v2.0.0", "a.v1.0.0", &["gone"]),
            ChannelEntry::linked("a.v1.0.0", "older", &[]),
        ];
        assert_eq!(head(&entries).unwrap().name, "a.v2.0.0");
        let two = [
            ChannelEntry::linked("b", "", &[]),
            ChannelEntry::linked("a", "", &[]),
        ];
        assert_eq!(head(&two).unwrap_err(), "several channel heads: a, b");
        let cycle = [
            ChannelEntry::linked("a", "b", &[]),
            ChannelEntry::linked("b", "a", &[]),
        ];
        assert_eq!(
            head(&cycle).unwrap_err(),
            "no channel head (every entry is replaced or skipped)"
        );
    }

    #[test]
    fn a_range_below_the_head_keeps_an_out_of_range_bridge() {
        // a.v1.3.0 skips a.v1.2.1, the only in-range bundle: it must stay to reach it.
        let entries = [
            ChannelEntry::linked("a.v1.3.0", "a.v1.2.0", &["a.v1.2.1", "a.v1.2.1"]),
            ChannelEntry::linked("a.v1.2.1", "a.v1.2.0", &[]),
            ChannelEntry::linked("a.v1.2.0", "", &[]),
        ];
        let range = Range::new(Some(&v("1.2.1")), Some(&v("1.2.5"))).unwrap();
        let k = in_range(&entries, &versions(&entries), &range).unwrap();
        assert_eq!(
            kept(&k),
            [
                ("a.v1.3.0", Reason::Bridge),
                ("a.v1.2.1", Reason::SkippedBy("a.v1.3.0".into()))
            ]
        );
    }

    #[test]
    fn the_kept_stretch_starts_at_the_lowest_entry_reaching_everything() {
        let entries = [
            ChannelEntry::linked("a.v3.0.0", "a.v2.0.0", &[]),
            ChannelEntry::linked("a.v2.0.0", "a.v1.0.0", &[]),
            ChannelEntry::linked("a.v1.0.0", "a.v0.9.0", &[]),
            ChannelEntry::linked("a.v0.9.0", "", &[]),
        ];
        let range = Range::new(Some(&v("1.0.0")), Some(&v("2.0.0"))).unwrap();
        let k = in_range(&entries, &versions(&entries), &range).unwrap();
        assert_eq!(
            kept(&k),
            [("a.v2.0.0", Reason::InRange), ("a.v1.0.0", Reason::InRange)]
        );
        let none = Range::new(Some(&v("5.0.0")), None).unwrap();
        assert!(
            in_range(&entries, &versions(&entries), &none)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn pre_releases_are_outside_a_plain_range_and_inside_an_exact_one() {
        let entries = [
            ChannelEntry::linked("a.v1.1.0-rc.1", "a.v1.0.0", &[]),
            ChannelEntry::linked("a.v1.0.0", "", &[]),
        ];
        let plain = Range::new(Some(&v("1.0.0")), None).unwrap();
        let k = in_range(&entries, &versions(&entries), &plain).unwrap();
        assert_eq!(kept(&k), [("a.v1.0.0", Reason::InRange)]);
        let exact = Range::new(Some(&v("1.1.0-rc.1")), Some(&v("1.1.0-rc.1"))).unwrap();
        let k = in_range(&entries, &versions(&entries), &exact).unwrap();
        assert_eq!(kept(&k), [("a.v1.1.0-rc.1", Reason::ExactVersion)]);
    }

    #[test]
    fn dedupe_keeps_first_occurrences_in_order() {
        let skips: Vec<String> = ["b", "a", "b", "c", "a"].map(String::from).to_vec();
        assert_eq!(dedupe(&skips), ["b", "a", "c"]);
    }
}
