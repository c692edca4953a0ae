//! Ordering the entries of one channel by their replacement chain (resolution spec §2.4).
use std::collections::{HashMap, HashSet};

use catalog::types::ChannelEntry;

/// What chain sorting reads from an entry: its name and its upgrade edges.
#[derive(Clone, Copy)]
pub struct Links<'a> {
    pub(crate) name: &'a str,
    pub(crate) replaces: &'a str,
    pub(crate) skips: &'a [String],
}

impl<'a> From<&'a ChannelEntry> for Links<'a> {
    fn from(e: &'a ChannelEntry) -> Self {
        Links {
            name: &e.name,
            replaces: &e.replaces,
            skips: &e.skips,
        }
    }
}

/// Why a channel's entries cannot be ordered (OLM's words).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    #[error(
        "no channel heads (entries not replaced by another entry) found in channel {channel:?} of package {package:?}"
    )]
    NoHead { package: String, channel: String },
    #[error(
        "a cycle exists in the chain of replacement beginning with {head:?} in channel {channel:?} of package {package:?}"
    )]
    Cycle {
        package: String,
        channel: String,
        head: String,
    },
    /// Several chains, each written `first...last` (or its only entry).
    #[error(
        "a unique replacement chain within a channel is required to determine the relative order between channel entries, but {} replacement chains were found in channel {channel:?} of package {package:?}: {}",
        chains.len(),
        chains.join(", ")
    )]
    SeveralChains {
        package: String,
        channel: String,
        chains: Vec<String>,
    },
}

/// The channel's chain, head first, as indices into `entries`. Skipped entries and entries
/// off the chain are dropped; zero heads, several heads and cycles are errors.
pub fn sort_channel(
    package: &str,
    channel: &str,
    entries: &[Links<'_>],
) -> Result<Vec<usize>, ChainError> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let by_name: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name, i))
        .collect();
    let mut replaced = vec![false; entries.len()];
    let mut skipped = vec![false; entries.len()];
    for e in entries {
        if let Some(&i) = by_name.get(e.replaces) {
            replaced[i] = true;
        }
        for s in e.skips {
            if let Some(&i) = by_name.get(s.as_str()) {
                replaced[i] = true;
                skipped[i] = true;
            }
        }
    }
    let heads: Vec<usize> = (0..entries.len()).filter(|&i| !replaced[i]).collect();
    if heads.is_empty() {
        return Err(ChainError::NoHead {
            package: package.to_owned(),
            channel: channel.to_owned(),
        });
    }
    let mut chains = Vec::with_capacity(heads.len());
    for &head in &heads {
        let mut chain = vec![head];
        let mut seen = HashSet::from([head]);
        let mut current = head;
        while let Some(&next) = by_name.get(entries[current].replaces) {
            if !seen.insert(next) {
                return Err(ChainError::Cycle {
                    package: package.to_owned(),
                    channel: channel.to_owned(),
                    head: entries[head].name.to_owned(),
                });
            }
            chain.push(next);
            current = next;
        }
        chains.push(chain);
    }
    if let [chain] = chains.as_slice() {
        return Ok(chain.iter().copied().filter(|&i| !skipped[i]).collect());
    }
    Err(ChainError::SeveralChains {
        package: package.to_owned(),
        channel: channel.to_owned(),
        chains: chains
            .iter()
            .map(|c| match c.as_slice() {
                [only] => entries[*only].name.to_owned(),
                [first, .., last] => format!("{}...{}", entries[*first].name, entries[*last].name),
                [] => String::new(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(entries: &[ChannelEntry]) -> Result<Vec<&str>, String> {
        let links: Vec<Links> = entries.iter().map(Links::from).collect();
        sort_channel("package", "channel", &links)
            .map(|order| order.iter().map(|&i| entries[i].name.as_str()).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn chains_drop_skipped_and_off_chain_entries() {
        assert_eq!(
            sorted(&[
                ChannelEntry::linked("b", "", &[]),
                ChannelEntry::linked("a", "b", &[])
            ]),
            Ok(vec!["a", "b"])
        );
        assert_eq!(sorted(&[]), Ok(vec![]));
        assert_eq!(
            sorted(&[
                ChannelEntry::linked("a", "b", &["b"]),
                ChannelEntry::linked("b", "", &[])
            ]),
            Ok(vec!["a"])
        );
        assert_eq!(
            sorted(&[
                ChannelEntry::linked("a", "b", &["c"]),
                ChannelEntry::linked("b", "c", &[]),
                ChannelEntry::linked("c", "", &[])
            ]),
            Ok(vec!["a", "b"])
        );
        // `x` is reachable only through a skip, so it is dropped too.
        assert_eq!(
            sorted(&[
                ChannelEntry::linked("a", "virtual", &["x"]),
                ChannelEntry::linked("x", "", &[])
            ]),
            Ok(vec!["a"])
        );
    }

    #[test]
    fn ordering_errors() {
        assert_eq!(
            sorted(&[ChannelEntry::linked("a", "b", &[]), ChannelEntry::linked("b", "a", &[])]),
            Err(r#"no channel heads (entries not replaced by another entry) found in channel "channel" of package "package""#.into())
        );
        assert_eq!(
            sorted(&[ChannelEntry::linked("a", "b", &[]), ChannelEntry::linked("b", "c", &[]), ChannelEntry::linked("c", "b", &[])]),
            Err(r#"a cycle exists in the chain of replacement beginning with "a" in channel "channel" of package "package""#.into())
        );
        assert_eq!(
            sorted(&[ChannelEntry::linked("a", "", &[]), ChannelEntry::linked("b", "c", &[]), ChannelEntry::linked("c", "", &[])]),
            Err(r#"a unique replacement chain within a channel is required to determine the relative order between channel entries, but 2 replacement chains were found in channel "channel" of package "package": a, b...c"#.into())
        );
    }
}
