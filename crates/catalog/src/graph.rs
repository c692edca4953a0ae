//! The upgrade graph of one channel (catalog-formats.md §A.5): its head, its replaces chain,
//! and the problems that make a channel unusable.
use super::types::ChannelEntry;
use std::collections::{HashMap, HashSet};

/// The channel's head if it has exactly one, and every problem with its graph.
pub fn check(entries: &[ChannelEntry]) -> (Option<&str>, Vec<String>) {
    // Every name that something replaces or skips has an incoming edge; names outside the
    // channel take part harmlessly.
    let mut incoming: HashSet<&str> = HashSet::new();
    let mut skipped: HashSet<&str> = HashSet::new();
    for e in entries {
        if !e.replaces.is_empty() {
            incoming.insert(&e.replaces);
        }
        for s in &e.skips {
            incoming.insert(s);
            skipped.insert(s);
        }
    }
    let mut heads: Vec<&str> = entries
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| !incoming.contains(n))
        .collect();
    let head = match heads.len() {
        0 => return (None, vec!["no channel head found in graph".to_owned()]),
        1 => heads[0],
        _ => {
            heads.sort_unstable();
            return (
                None,
                vec![format!(
                    "multiple channel heads found in graph: {}",
                    heads.join(", ")
                )],
            );
        }
    };

    let by_name: HashMap<&str, &ChannelEntry> =
        entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut chain = vec![head];
    let mut on_chain: HashSet<&str> = HashSet::from([head]);
    let mut current = by_name[head];
    // Follow `replaces` while it names a bundle of the channel that nothing skips: a
    // skipped bundle ends the chain (it is reachable through the skip instead).
    while let Some(next) = by_name.get(current.replaces.as_str()) {
        let name = next.name.as_str();
        if skipped.contains(name) {
            break;
        }
        if !on_chain.insert(name) {
            let start = chain.iter().position(|n| *n == name).unwrap_or(0);
            let mut cycle = chain[start..].to_vec();
            cycle.push(name);
            return (
                Some(head),
                vec![format!(
                    "detected cycle in replaces chain of upgrade graph: {}",
                    cycle.join(" -> ")
                )],
            );
        }
        chain.push(name);
        current = next;
    }

    let mut stranded: Vec<&str> = entries
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| !on_chain.contains(n) && !skipped.contains(n))
        .collect();
    if stranded.is_empty() {
        return (Some(head), Vec::new());
    }
    stranded.sort_unstable();
    (
        Some(head),
        vec![format!(
            "channel contains one or more stranded bundles: {}",
            stranded.join(", ")
        )],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_is_valid() {
        let entries = [
            ChannelEntry::linked("v1", "", &[]),
            ChannelEntry::linked("v1.1", "v1", &[]),
            ChannelEntry::linked("v2", "v1.1", &["v1", "v1.5"]),
        ];
        assert_eq!(check(&entries), (Some("v2"), vec![]));
    }

    #[test]
    fn tail_may_replace_a_missing_bundle() {
        let entries = [
            ChannelEntry::linked("b", "a", &[]),
            ChannelEntry::linked("c", "b", &[]),
        ];
        assert_eq!(check(&entries), (Some("c"), vec![]));
    }

    #[test]
    fn head_count_problems() {
        let entries = [
            ChannelEntry::linked("b", "", &[]),
            ChannelEntry::linked("a", "", &[]),
        ];
        assert_eq!(
            check(&entries),
            (
                None,
                vec!["multiple channel heads found in graph: a, b".to_owned()]
            )
        );
        let entries = [
            ChannelEntry::linked("a", "b", &[]),
            ChannelEntry::linked("b", "a", &[]),
        ];
        assert_eq!(
            check(&entries),
            (None, vec!["no channel head found in graph".to_owned()])
        );
    }

    #[test]
    fn cycles_are_reported_from_the_revisited_bundle() {
        let entries = [
            ChannelEntry::linked("h", "a", &[]),
            ChannelEntry::linked("a", "b", &[]),
            ChannelEntry::linked("b", "c", &[]),
            ChannelEntry::linked("c", "a", &[]),
        ];
        assert_eq!(
            check(&entries),
            (
                Some("h"),
                vec![
                    "detected cycle in replaces chain of upgrade graph: a -> b -> c -> a"
                        .to_owned()
                ]
            )
        );
    }

    #[test]
    fn stranded_bundles_are_listed_sorted() {
        let entries = [
            ChannelEntry::linked("d", "c", &[]),
            ChannelEntry::linked("c", "", &[]),
            ChannelEntry::linked("y", "x", &[]),
            ChannelEntry::linked("x", "", &[]),
            ChannelEntry::linked("z", "w", &[]),
        ];
        // y and z are heads too unless something points at them; make d skip them.
        let mut entries = entries.to_vec();
        entries[0].skips = vec!["y".into(), "z".into()];
        assert_eq!(
            check(&entries),
            (
                Some("d"),
                vec!["channel contains one or more stranded bundles: x".to_owned()]
            )
        );
        let entries = [
            ChannelEntry::linked("c", "b", &["q"]),
            ChannelEntry::linked("b", "", &[]),
            ChannelEntry::linked("a", "", &[]),
            ChannelEntry::linked("q", "a", &[]),
        ];
        // a is only reachable through the skipped q, whose own edges are not followed.
        assert_eq!(
            check(&entries),
            (
                Some("c"),
                vec!["channel contains one or more stranded bundles: a".to_owned()]
            )
        );
    }

    #[test]
    fn a_skipped_replaces_target_ends_the_chain() {
        let entries = [
            ChannelEntry::linked("c", "b", &["b"]),
            ChannelEntry::linked("b", "a", &[]),
            ChannelEntry::linked("a", "", &[]),
        ];
        assert_eq!(
            check(&entries),
            (
                Some("c"),
                vec!["channel contains one or more stranded bundles: a".to_owned()]
            )
        );
    }
}
