//! What a catalog's content says about a package: channels, entries, versions, what its
//! bundles provide and require. The diagnosis reads it to name the fact that forces a
//! failure, beside the resolver's answer.
use catalog::Gvk;
use catalog::property::{self, Typed};
use catalog::semver::{Range, Version};
use catalog::types::{Bundle, Channel, ChannelEntry, DeclarativeConfig};

/// One requirement of a bundle.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Requirement {
    Package { name: String, range: String },
    Api(Gvk),
}

impl Requirement {
    pub(crate) fn describe(&self) -> String {
        match self {
            Requirement::Package { name, range } if range.is_empty() => {
                format!("package {name}")
            }
            Requirement::Package { name, range } => format!("package {name} in range {range}"),
            Requirement::Api(g) => format!("API {}", api(g)),
        }
    }
}

/// `Kind (group/version)`, as OLM writes an API.
pub(crate) fn api(g: &Gvk) -> String {
    format!("{} ({}/{})", g.kind, g.group, g.version)
}

/// A catalog's content, asked about packages.
#[derive(Clone, Copy)]
pub(crate) struct Content<'a>(pub(crate) &'a DeclarativeConfig);

impl<'a> Content<'a> {
    pub(crate) fn has_package(&self, package: &str) -> bool {
        self.0.packages.iter().any(|p| p.name == package)
            || self.0.bundles.iter().any(|b| b.package == package)
    }

    pub(crate) fn default_channel(&self, package: &str) -> &'a str {
        self.0
            .packages
            .iter()
            .find(|p| p.name == package)
            .map_or("", |p| p.default_channel.as_str())
    }

    pub(crate) fn channels(&self, package: &str) -> Vec<&'a Channel> {
        self.0
            .channels
            .iter()
            .filter(|c| c.package == package)
            .collect()
    }

    /// The channel a subscription follows: its own, else the package's default.
    pub(crate) fn channel(&self, package: &str, channel: &str) -> Option<&'a Channel> {
        let name = match channel {
            "" => self.default_channel(package),
            c => c,
        };
        self.channels(package).into_iter().find(|c| c.name == name)
    }

    pub(crate) fn bundle(&self, package: &str, name: &str) -> Option<&'a Bundle> {
        self.0
            .bundles
            .iter()
            .find(|b| b.package == package && b.name == name)
    }

    /// The newest entry of a channel by version (entries whose bundle is unknown last).
    pub(crate) fn newest(&self, channel: &'a Channel) -> Option<(&'a ChannelEntry, Version)> {
        channel
            .entries
            .iter()
            .filter_map(|e| Some((e, self.version(&channel.package, &e.name)?)))
            .max_by(|a, b| a.1.cmp(&b.1))
    }

    pub(crate) fn version(&self, package: &str, bundle: &str) -> Option<Version> {
        self.bundle(package, bundle).and_then(bundle_version)
    }

    /// A bundle of any package providing `r`, by name.
    pub(crate) fn provider(&self, r: &Requirement) -> Option<&'a str> {
        self.0
            .bundles
            .iter()
            .find(|b| provides(b, r))
            .map(|b| b.name.as_str())
    }
}

/// A bundle's `olm.package` version.
pub(crate) fn bundle_version(b: &Bundle) -> Option<Version> {
    b.properties.iter().find_map(|p| match property::parse(p) {
        Ok(Typed::Package { version, .. }) => Version::parse(&version).ok(),
        _ => None,
    })
}

/// What a bundle requires (`olm.package.required`, `olm.gvk.required`).
pub(crate) fn requirements(b: &Bundle) -> Vec<Requirement> {
    b.properties
        .iter()
        .filter_map(|p| match property::parse(p) {
            Ok(Typed::PackageRequired {
                package_name,
                version_range,
            }) => Some(Requirement::Package {
                name: package_name,
                range: version_range,
            }),
            Ok(Typed::GvkRequired(g)) => Some(Requirement::Api(g)),
            _ => None,
        })
        .collect()
}

/// The APIs a bundle provides (`olm.gvk`).
pub(crate) fn provided(b: &Bundle) -> Vec<Gvk> {
    b.properties
        .iter()
        .filter_map(|p| match property::parse(p) {
            Ok(Typed::Gvk(g)) => Some(g),
            _ => None,
        })
        .collect()
}

fn provides(b: &Bundle, r: &Requirement) -> bool {
    match r {
        Requirement::Api(g) => provided(b).contains(g),
        Requirement::Package { name, range } => {
            b.package == *name
                && (range.is_empty()
                    || match (Range::parse(range), bundle_version(b)) {
                        (Ok(range), Some(v)) => range.contains(&v),
                        _ => false,
                    })
        }
    }
}

/// The entries of `channel` that upgrade from the installed CSV `name` at `version`: they
/// replace it, skip it, or have a skipRange holding its version.
pub(crate) fn upgrades_from<'a>(
    channel: &'a Channel,
    name: &str,
    version: Option<&Version>,
) -> Vec<&'a ChannelEntry> {
    channel
        .entries
        .iter()
        .filter(|e| {
            e.replaces == name
                || e.skips.iter().any(|s| s == name)
                || (!e.skip_range.is_empty()
                    && version
                        .is_some_and(|v| Range::parse(&e.skip_range).is_ok_and(|r| r.contains(v))))
        })
        .collect()
}

/// An entry's upgrade edges in words: `X (replaces A, skips B, C, skipRange R)`.
pub(crate) fn edges(e: &ChannelEntry) -> String {
    let mut parts = Vec::new();
    if !e.replaces.is_empty() {
        parts.push(format!("replaces {}", e.replaces));
    }
    if !e.skips.is_empty() {
        parts.push(format!("skips {}", e.skips.join(", ")));
    }
    if !e.skip_range.is_empty() {
        parts.push(format!("skipRange {}", e.skip_range));
    }
    if parts.is_empty() {
        e.name.clone()
    } else {
        format!("{} ({})", e.name, parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, replaces: &str, skips: &[&str], skip_range: &str) -> ChannelEntry {
        ChannelEntry {
            name: name.into(),
            replaces: replaces.into(),
            skips: skips.iter().map(|s| s.to_string()).collect(),
            skip_range: skip_range.into(),
        }
    }

    #[test]
    fn an_upgrade_edge_is_a_replaces_a_skip_or_a_skip_range() {
        let channel = Channel {
            name: "stable".into(),
            package: "p".into(),
            entries: vec![
                entry("p.v1.1.0", "p.v1.0.0", &[], ""),
                entry("p.v1.3.0", "p.v1.1.0", &["p.v1.2.0"], ">=1.1.0 <1.3.0"),
            ],
            ..Channel::default()
        };
        let names = |found: Vec<&ChannelEntry>| -> Vec<String> {
            found.iter().map(|e| e.name.clone()).collect()
        };
        let v = |s: &str| Version::parse(s).unwrap();
        assert_eq!(
            names(upgrades_from(&channel, "p.v1.0.0", Some(&v("1.0.0")))),
            ["p.v1.1.0"]
        );
        assert_eq!(
            names(upgrades_from(&channel, "p.v1.2.0", None)),
            ["p.v1.3.0"]
        );
        // Only the range reaches a CSV of another name.
        assert_eq!(
            names(upgrades_from(&channel, "p.v1.2.5", Some(&v("1.2.5")))),
            ["p.v1.3.0"]
        );
        assert!(upgrades_from(&channel, "p.v0.9.0", Some(&v("0.9.0"))).is_empty());
        assert_eq!(
            edges(&channel.entries[1]),
            "p.v1.3.0 (replaces p.v1.1.0, skips p.v1.2.0, skipRange >=1.1.0 <1.3.0)"
        );
        assert_eq!(edges(&entry("p.v1.0.0", "", &[], "")), "p.v1.0.0");
    }

    #[test]
    fn requirements_and_providers_are_read_from_properties() {
        let prop = |kind: &str, value: &str| catalog::types::Property {
            kind: kind.into(),
            value: value.into(),
        };
        let dep = Bundle {
            name: "d.v1.2.0".into(),
            package: "d".into(),
            properties: vec![
                prop("olm.package", r#"{"packageName":"d","version":"1.2.0"}"#),
                prop("olm.gvk", r#"{"group":"g","version":"v1","kind":"K"}"#),
            ],
            ..Bundle::default()
        };
        let needs = Bundle {
            properties: vec![
                prop(
                    "olm.package.required",
                    r#"{"packageName":"d","versionRange":">=2.0.0"}"#,
                ),
                prop(
                    "olm.gvk.required",
                    r#"{"group":"g","version":"v1","kind":"K"}"#,
                ),
            ],
            ..Bundle::default()
        };
        let config = DeclarativeConfig {
            bundles: vec![dep],
            ..DeclarativeConfig::default()
        };
        let content = Content(&config);
        let [package, gvk] = <[Requirement; 2]>::try_from(requirements(&needs)).unwrap();
        assert_eq!(package.describe(), "package d in range >=2.0.0");
        assert_eq!(gvk.describe(), "API K (g/v1)");
        // 1.2.0 is outside the range; the API is there.
        assert_eq!(content.provider(&package), None);
        assert_eq!(content.provider(&gvk), Some("d.v1.2.0"));
        let in_range = Requirement::Package {
            name: "d".into(),
            range: ">=1.0.0".into(),
        };
        assert_eq!(content.provider(&in_range), Some("d.v1.2.0"));
    }
}
