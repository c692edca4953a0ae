//! Adding a bundle to a catalog, as `opm registry add` / `opm index add` placed bundles into
//! channels (opm-cli.md §8.2), but on a file-based catalog.
//!
//! `Replaces` mode takes the upgrade edges from the bundle's CSV (replaces, skips,
//! skipRange); `Semver` mode ignores the CSV's replaces and slots the bundle between its
//! nearest lower and higher versions in each channel. Either way the result must still be a
//! valid catalog, or nothing changes.
use super::model::{Model, ValidationError};
use super::property;
use super::semver::Version;
use super::types::{Bundle, Channel, ChannelEntry, DeclarativeConfig, Package};
use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Replaces,
    Semver,
}

/// A rendered bundle with what its image or directory says about its place in the graph.
#[derive(Clone, Debug)]
pub struct NewBundle {
    pub bundle: Bundle,
    pub channels: Vec<String>,
    pub default_channel: Option<String>,
    pub replaces: String,
    pub skips: Vec<String>,
    pub skip_range: String,
}

/// The bundle's version from its `olm.package` property.
pub fn version_of(b: &Bundle) -> Option<Version> {
    let mut packages = b.properties.iter().filter(|p| p.kind == property::PACKAGE);
    packages.find_map(|p| match property::parse(p) {
        Ok(property::Typed::Package { version, .. }) => Version::parse(&version).ok(),
        _ => None,
    })
}

/// Semver order, with build metadata breaking ties (no build id sorts first), as opm orders
/// channel heads.
fn order(a: &Version, b: &Version) -> Ordering {
    a.cmp(b).then_with(|| a.build.cmp(&b.build))
}

/// Why a bundle cannot be added; the catalog is left as it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddError {
    #[error("bundle {bundle:?} has no valid olm.package version")]
    NoVersion { bundle: String },
    #[error("bundle {bundle:?} names no channels")]
    NoChannels { bundle: String },
    #[error(
        "bundle {bundle:?} is for package {package:?} but its olm.package property says {property:?}"
    )]
    OtherPackage {
        bundle: String,
        package: String,
        property: String,
    },
    #[error("bundle {bundle:?} is already in package {package:?}")]
    NamePresent { bundle: String, package: String },
    /// opm's words, capital and all.
    #[error("Bundle version {version} already added to index (as {existing:?})")]
    VersionPresent { version: Version, existing: String },
    #[error("bundle {bundle:?} replaces {replaces:?}, which is not in package {package:?}")]
    ReplacesMissing {
        bundle: String,
        replaces: String,
        package: String,
    },
    /// opm's wording for a new package whose default channel cannot be chosen.
    #[error(
        "Default channel is missing and can't be inferred: bundle {bundle:?} names several channels and no default"
    )]
    NoDefaultChannel { bundle: String },
    /// Placed as asked, the catalog fails validation (a second head, a broken edge).
    #[error("the catalog would not be valid after adding the bundle:\n{0}")]
    Invalid(ValidationError),
}

/// Adds `new` to `dc`. On error `dc` is unchanged.
pub fn add_bundle(dc: &mut DeclarativeConfig, new: NewBundle, mode: Mode) -> Result<(), AddError> {
    let mut next = dc.clone();
    place(&mut next, new, mode)?;
    Model::build(next.clone()).map_err(AddError::Invalid)?;
    *dc = next;
    Ok(())
}

fn place(dc: &mut DeclarativeConfig, new: NewBundle, mode: Mode) -> Result<(), AddError> {
    let b = &new.bundle;
    let pkg = b.package.clone();
    let version = version_of(b).ok_or_else(|| AddError::NoVersion {
        bundle: b.name.clone(),
    })?;
    if new.channels.is_empty() {
        return Err(AddError::NoChannels {
            bundle: b.name.clone(),
        });
    }
    if let Some(p) = b.properties.iter().find_map(|p| match property::parse(p) {
        Ok(property::Typed::Package { package_name, .. }) if package_name != pkg => {
            Some(package_name)
        }
        _ => None,
    }) {
        return Err(AddError::OtherPackage {
            bundle: b.name.clone(),
            package: pkg,
            property: p,
        });
    }
    let existing: Vec<&Bundle> = dc.bundles.iter().filter(|x| x.package == pkg).collect();
    if existing.iter().any(|x| x.name == b.name) {
        return Err(AddError::NamePresent {
            bundle: b.name.clone(),
            package: pkg,
        });
    }
    if let Some(same) = existing
        .iter()
        .find(|x| version_of(x).is_some_and(|v| order(&v, &version) == Ordering::Equal))
    {
        return Err(AddError::VersionPresent {
            version,
            existing: same.name.clone(),
        });
    }
    if mode == Mode::Replaces
        && !new.replaces.is_empty()
        && !existing.iter().any(|x| x.name == new.replaces)
    {
        return Err(AddError::ReplacesMissing {
            bundle: b.name.clone(),
            replaces: new.replaces.clone(),
            package: pkg,
        });
    }
    let highest = existing
        .iter()
        .filter_map(|x| version_of(x))
        .all(|v| order(&v, &version) == Ordering::Less);

    for name in &new.channels {
        let channel = match dc
            .channels
            .iter_mut()
            .position(|c| c.package == pkg && &c.name == name)
        {
            Some(i) => &mut dc.channels[i],
            None => {
                dc.channels.push(Channel {
                    name: name.clone(),
                    package: pkg.clone(),
                    ..Default::default()
                });
                dc.channels.last_mut().expect("just pushed")
            }
        };
        let mut entry = ChannelEntry {
            name: b.name.clone(),
            replaces: new.replaces.clone(),
            skips: new.skips.clone(),
            skip_range: new.skip_range.clone(),
        };
        if mode == Mode::Semver {
            entry.replaces = slot_by_version(channel, &dc.bundles, &b.name, &version);
        }
        channel.entries.push(entry);
    }

    match dc.packages.iter_mut().find(|p| p.name == pkg) {
        Some(p) => {
            let wanted = match mode {
                // The default channel follows the highest version's annotation.
                Mode::Replaces if highest => new.default_channel.clone(),
                Mode::Replaces => None,
                Mode::Semver => new.default_channel.clone(),
            };
            if let Some(d) = wanted {
                p.default_channel = d;
            }
        }
        None => {
            let default = match (&new.default_channel, new.channels.as_slice(), mode) {
                (Some(d), _, _) => d.clone(),
                (None, [only], _) => only.clone(),
                (None, _, Mode::Semver) => new.channels.iter().min().cloned().unwrap_or_default(),
                (None, _, Mode::Replaces) => {
                    return Err(AddError::NoDefaultChannel {
                        bundle: b.name.clone(),
                    });
                }
            };
            dc.packages.push(Package {
                name: pkg.clone(),
                default_channel: default,
                ..Default::default()
            });
        }
    }
    dc.bundles.push(new.bundle);
    Ok(())
}

/// Semver placement in one channel: the new bundle replaces the nearest lower version, and
/// the nearest higher version now replaces the new bundle. Returns what the new one replaces.
fn slot_by_version(
    channel: &mut Channel,
    bundles: &[Bundle],
    name: &str,
    version: &Version,
) -> String {
    let version_in_channel = |entry: &ChannelEntry| {
        bundles
            .iter()
            .find(|b| b.package == channel.package && b.name == entry.name)
            .and_then(version_of)
    };
    let mut lower: Option<(Version, String)> = None;
    let mut higher: Option<(Version, usize)> = None;
    for (i, entry) in channel.entries.iter().enumerate() {
        let Some(v) = version_in_channel(entry) else {
            continue;
        };
        match order(&v, version) {
            Ordering::Less
                if lower
                    .as_ref()
                    .is_none_or(|(l, _)| order(&v, l) == Ordering::Greater) =>
            {
                lower = Some((v, entry.name.clone()));
            }
            Ordering::Greater
                if higher
                    .as_ref()
                    .is_none_or(|(h, _)| order(&v, h) == Ordering::Less) =>
            {
                higher = Some((v, i));
            }
            _ => {}
        }
    }
    if let Some((_, i)) = higher {
        channel.entries[i].replaces = name.to_owned();
    }
    lower.map(|(_, n)| n).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Property;

    fn bundle(name: &str, version: &str) -> Bundle {
        Bundle {
            name: name.into(),
            package: "foo".into(),
            image: format!("quay.io/foo/bundle:{version}"),
            properties: vec![Property {
                kind: "olm.package".into(),
                value: format!(r#"{{"packageName":"foo","version":"{version}"}}"#),
            }],
            ..Default::default()
        }
    }

    fn new(name: &str, version: &str, channels: &[&str], replaces: &str) -> NewBundle {
        NewBundle {
            bundle: bundle(name, version),
            channels: channels.iter().map(|c| c.to_string()).collect(),
            default_channel: None,
            replaces: replaces.into(),
            skips: vec![],
            skip_range: String::new(),
        }
    }

    fn entries(dc: &DeclarativeConfig, channel: &str) -> Vec<(String, String)> {
        let c = dc.channels.iter().find(|c| c.name == channel).unwrap();
        let mut v: Vec<_> = c
            .entries
            .iter()
            .map(|e| (e.name.clone(), e.replaces.clone()))
            .collect();
        v.sort();
        v
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.into(), b.into())
    }

    #[test]
    fn replaces_mode_follows_the_csv_and_creates_package_and_channels() {
        let mut dc = DeclarativeConfig::default();
        add_bundle(
            &mut dc,
            new("foo.v1", "1.0.0", &["stable"], ""),
            Mode::Replaces,
        )
        .unwrap();
        assert_eq!(dc.packages[0].default_channel, "stable");
        let mut v2 = new("foo.v2", "2.0.0", &["stable", "fast"], "foo.v1");
        v2.default_channel = Some("fast".into());
        add_bundle(&mut dc, v2, Mode::Replaces).unwrap();
        assert_eq!(
            entries(&dc, "stable"),
            [pair("foo.v1", ""), pair("foo.v2", "foo.v1")]
        );
        assert_eq!(entries(&dc, "fast"), [pair("foo.v2", "foo.v1")]);
        // The highest version's default annotation wins.
        assert_eq!(dc.packages[0].default_channel, "fast");
    }

    #[test]
    fn conflicts_leave_the_catalog_unchanged() {
        let mut dc = DeclarativeConfig::default();
        add_bundle(
            &mut dc,
            new("foo.v1", "1.0.0", &["stable"], ""),
            Mode::Replaces,
        )
        .unwrap();
        let before = dc.clone();
        assert_eq!(
            add_bundle(
                &mut dc,
                new("foo.v1", "1.0.1", &["stable"], ""),
                Mode::Replaces
            )
            .unwrap_err()
            .to_string(),
            "bundle \"foo.v1\" is already in package \"foo\""
        );
        assert_eq!(
            add_bundle(
                &mut dc,
                new("foo.v3", "3.0.0", &["stable"], "foo.v2"),
                Mode::Replaces
            )
            .unwrap_err()
            .to_string(),
            "bundle \"foo.v3\" replaces \"foo.v2\", which is not in package \"foo\""
        );
        assert_eq!(
            add_bundle(
                &mut dc,
                new("foo.again", "1.0.0", &["stable"], ""),
                Mode::Semver
            )
            .unwrap_err()
            .to_string(),
            "Bundle version 1.0.0 already added to index (as \"foo.v1\")"
        );
        let mut mismatch = new("foo.v2", "2.0.0", &["stable"], "foo.v1");
        mismatch.bundle.properties[0].value = r#"{"packageName":"bar","version":"2.0.0"}"#.into();
        assert_eq!(
            add_bundle(&mut dc, mismatch, Mode::Replaces)
                .unwrap_err()
                .to_string(),
            "bundle \"foo.v2\" is for package \"foo\" but its olm.package property says \"bar\""
        );
        // A second head is caught by validation.
        let err = add_bundle(
            &mut dc,
            new("foo.v2", "2.0.0", &["stable"], ""),
            Mode::Replaces,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("multiple channel heads found in graph: foo.v1, foo.v2"),
            "{err}"
        );
        assert_eq!(dc, before);
    }

    #[test]
    fn semver_mode_slots_bundles_between_versions() {
        let mut dc = DeclarativeConfig::default();
        for (name, version) in [
            ("foo.v1", "1.0.0"),
            ("foo.v3", "3.0.0"),
            ("foo.v2", "2.0.0"),
        ] {
            add_bundle(
                &mut dc,
                new(name, version, &["stable"], "ignored-in-semver-mode"),
                Mode::Semver,
            )
            .unwrap();
        }
        assert_eq!(
            entries(&dc, "stable"),
            [
                pair("foo.v1", ""),
                pair("foo.v2", "foo.v1"),
                pair("foo.v3", "foo.v2")
            ]
        );
    }
}
