//! A catalog as api.Registry serves it (ListPackages/GetPackage and the per-channel bundles
//! of ListBundles) turned back into FBC: what remains of it after serving (packages, channel
//! entries, bundle properties and images, deprecations), enough for resolution.
use std::collections::{BTreeMap, HashMap, HashSet};

use catalog::types::{
    Bundle, Channel as FbcChannel, ChannelEntry, DeclarativeConfig, DeprecationEntry,
    DeprecationReference, Deprecations, Package, Property,
};

/// The resolver's model of a catalog served as `packages` and the per-channel `bundles`
/// of ListBundles (in its order).
pub fn from_api(packages: Vec<api::Package>, bundles: Vec<api::Bundle>) -> DeclarativeConfig {
    let mut dc = DeclarativeConfig::default();
    let mut deprecations: BTreeMap<String, Vec<DeprecationEntry>> = BTreeMap::new();
    let entry = |schema: &str, name: &str, message: String| DeprecationEntry {
        reference: DeprecationReference {
            schema: schema.to_owned(),
            name: name.to_owned(),
        },
        message,
    };
    for p in packages {
        let list = deprecations.entry(p.name.clone()).or_default();
        if let Some(d) = p.deprecation {
            list.push(entry("olm.package", "", d.message));
        }
        for c in p.channels {
            if let Some(d) = c.deprecation {
                list.push(entry("olm.channel", &c.name, d.message));
            }
        }
        dc.packages.push(Package {
            name: p.name,
            default_channel: p.default_channel_name,
            ..Package::default()
        });
    }
    let mut channels: HashMap<(String, String), usize> = HashMap::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for b in bundles {
        let key = (b.package_name.clone(), b.channel_name.clone());
        let c = *channels.entry(key).or_insert_with(|| {
            dc.channels.push(FbcChannel {
                name: b.channel_name.clone(),
                package: b.package_name.clone(),
                ..FbcChannel::default()
            });
            dc.channels.len() - 1
        });
        dc.channels[c].entries.push(ChannelEntry {
            name: b.csv_name.clone(),
            replaces: b.replaces,
            skips: b.skips,
            skip_range: b.skip_range,
        });
        if !seen.insert((b.package_name.clone(), b.csv_name.clone())) {
            continue;
        }
        if let Some(d) = b.deprecation {
            deprecations
                .entry(b.package_name.clone())
                .or_default()
                .push(entry("olm.bundle", &b.csv_name, d.message));
        }
        dc.bundles.push(Bundle {
            name: b.csv_name,
            package: b.package_name,
            image: b.bundle_path,
            properties: b
                .properties
                .into_iter()
                .map(|p| Property {
                    kind: p.r#type,
                    value: p.value,
                })
                .collect(),
            ..Bundle::default()
        });
    }
    dc.deprecations = deprecations
        .into_iter()
        .filter(|(_, entries)| !entries.is_empty())
        .map(|(package, entries)| Deprecations {
            package,
            entries,
            ..Deprecations::default()
        })
        .collect();
    dc
}

/// A GetBundle answer's manifests: its objects, or its CSV when it has no objects.
pub fn objects_of(b: api::Bundle) -> Vec<String> {
    if b.object.is_empty() && !b.csv_json.is_empty() {
        vec![b.csv_json]
    } else {
        b.object
    }
}
