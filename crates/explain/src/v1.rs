//! OLM v1: one ClusterExtension explained. Its `spec.source.catalog` and installed bundle,
//! the ClusterCatalogs (labels, priority, availability), each selected catalog's content
//! pulled from its image, the v1 resolver's pick, and, when there is none, the filter that
//! left nothing: the selector, the package, the channels, the version range, the upgrade
//! constraint policy.
use std::collections::BTreeMap;

use catalog::semver::Version;
use catalog::version_constraint::VersionConstraint;
use resolve::service::request::{CatalogSpec, ExtensionSpec, Policy};
use resolve::service::{Loaded, resolve_request};
use resolve::v1::NAME_LABEL;
use serde_json::{Value, json};

use crate::Error;
use crate::diagnose::Finding;
use crate::facts::{Content, upgrades_from};
use crate::load::Pulls;
use crate::report::{CauseKind, Condition, ExtensionReport, NextBundle, Verdict};
use crate::state::field;

/// A ClusterCatalog as the v1 resolver sees it.
pub(crate) struct ClusterCatalog {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) priority: i32,
    pub(crate) available: bool,
    pub(crate) image: String,
}

impl ClusterCatalog {
    pub(crate) fn from_object(o: &Value) -> ClusterCatalog {
        let name = field(o, "/metadata/name").to_owned();
        let mut labels: BTreeMap<String, String> = o
            .pointer("/metadata/labels")
            .and_then(|l| serde_json::from_value(l.clone()).ok())
            .unwrap_or_default();
        labels.insert(NAME_LABEL.to_owned(), name.clone());
        let image = match field(o, "/status/resolvedSource/image/ref") {
            "" => field(o, "/spec/source/image/ref"),
            resolved => resolved,
        };
        ClusterCatalog {
            name,
            labels,
            priority: o
                .pointer("/spec/priority")
                .and_then(Value::as_i64)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0),
            available: field(o, "/spec/availabilityMode") != "Unavailable",
            image: image.to_owned(),
        }
    }
}

/// The resolver's request for a ClusterExtension object; a spec it cannot read is bad input.
pub(crate) fn extension_spec(ext: &Value) -> Result<ExtensionSpec, Error> {
    let name = field(ext, "/metadata/name");
    let mut spec = ext
        .pointer("/spec/source/catalog")
        .cloned()
        .unwrap_or_else(|| json!({}));
    spec["name"] = json!(name);
    if let Some(bundle) = ext.pointer("/status/install/bundle") {
        spec["installedBundle"] = bundle.clone();
    }
    serde_json::from_value(spec).map_err(|e| Error::Api {
        path: format!("clusterextensions/{name}"),
        message: format!("spec.source.catalog: {e}"),
    })
}

/// Explains ClusterExtension `ext` against `catalogs`.
pub(crate) fn explain(
    ext: &Value,
    catalogs: &[ClusterCatalog],
    pulls: &Pulls<'_>,
) -> Result<ExtensionReport, Error> {
    let spec = extension_spec(ext)?;
    let selector = spec.selector.as_ref().map(|s| s.to_selector());
    let selected: Vec<&ClusterCatalog> = catalogs
        .iter()
        .filter(|c| selector.as_ref().is_none_or(|s| s.matches(&c.labels)))
        .collect();
    let specs: Vec<CatalogSpec> = selected
        .iter()
        .map(|c| CatalogSpec {
            name: c.name.clone(),
            priority: c.priority,
            image: Some(c.image.clone()),
            labels: c.labels.clone(),
            availability_mode: if c.available {
                Default::default()
            } else {
                resolve::service::request::Availability::Unavailable
            },
            ..CatalogSpec::default()
        })
        .collect();
    let mut request = crate::load::v1_request(specs);
    request.requests = vec![spec.clone()];
    let loaded = crate::load::read_images(&request, pulls)?;
    let outcome =
        resolve_request(&request, &loaded.loaded).map_err(|e| Error::Catalog(e.to_string()))?;
    let contents: Vec<(&ClusterCatalog, Content<'_>)> = selected
        .iter()
        .zip(&loaded.loaded)
        .filter(|(c, _)| c.available)
        .filter_map(|(c, l): (&&ClusterCatalog, &Loaded)| {
            Some((*c, Content(l.as_ref().ok()?.content())))
        })
        .collect();
    let result = outcome.results.first();
    let finding = match result.and_then(|r| r.bundle.as_ref()) {
        Some(b) => Finding {
            verdict: if spec
                .installed_bundle
                .as_ref()
                .is_some_and(|i| i.name == b.name)
            {
                Verdict::Current
            } else {
                Verdict::Progress
            },
            cause: None,
            summary: match &spec.installed_bundle {
                Some(i) if i.name == b.name => format!("{} is the bundle it resolves to", b.name),
                Some(i) => format!(
                    "operator-controller will upgrade {} to {} {}",
                    i.name, b.name, b.version
                ),
                None => format!("operator-controller will install {} {}", b.name, b.version),
            },
            facts: [format!(
                "catalog {} offers {} in channel {}",
                b.catalog, b.name, b.channel
            )]
            .into_iter()
            .chain((!b.deprecation.is_empty()).then(|| format!("deprecated: {}", b.deprecation)))
            .collect(),
            next: vec![NextBundle {
                name: b.name.clone(),
                version: b.version.clone(),
                channel: b.channel.clone(),
                catalog: b.catalog.clone(),
                from: b.from.clone(),
                because: Vec::new(),
            }],
        },
        None => why_none(
            &spec,
            catalogs,
            &selected,
            &contents,
            result.and_then(|r| r.error.clone()).unwrap_or_default(),
        ),
    };
    Ok(ExtensionReport {
        name: spec.name.clone(),
        package: spec.package_name.clone(),
        verdict: finding.verdict,
        summary: finding.summary,
        cause: finding.cause,
        facts: finding.facts,
        next: finding.next,
        conditions: Condition::all_of(ext),
    })
}

/// The first filter that leaves no bundle, in the order operator-controller applies them.
fn why_none(
    spec: &ExtensionSpec,
    all: &[ClusterCatalog],
    selected: &[&ClusterCatalog],
    contents: &[(&ClusterCatalog, Content<'_>)],
    error: String,
) -> Finding {
    let package = spec.package_name.as_str();
    if selected.is_empty() {
        return selector_excludes_all(spec, all);
    }
    let with_package: Vec<&(&ClusterCatalog, Content<'_>)> = contents
        .iter()
        .filter(|(_, c)| c.has_package(package))
        .collect();
    let names: Vec<&str> = contents.iter().map(|(c, _)| c.name.as_str()).collect();
    if with_package.is_empty() {
        return Finding::stuck(
            CauseKind::PackageGone,
            format!("no available selected catalog has package {package}"),
            vec![format!(
                "the available catalogs it selects ({}) have no package {package}",
                names.join(", ")
            )],
        );
    }
    // The bundles of the channels asked for (all when none), by catalog.
    let mut versions: Vec<(String, Version)> = Vec::new();
    let mut channels_found = false;
    for (_, content) in &with_package {
        for ch in content.channels(package) {
            if !spec.channels.is_empty() && !spec.channels.contains(&ch.name) {
                continue;
            }
            channels_found = true;
            for e in &ch.entries {
                if let Some(v) = content.version(package, &e.name) {
                    versions.push((e.name.clone(), v));
                }
            }
        }
    }
    if !channels_found {
        return channel_gone(spec, &with_package);
    }
    versions.sort_by(|a, b| b.1.cmp(&a.1));
    versions.dedup();
    let in_channels = match spec.channels.as_slice() {
        [] => String::new(),
        list => format!(" in channels {}", list.join(", ")),
    };
    let listed = |vs: &[(String, Version)]| -> String {
        vs.iter()
            .map(|(_, v)| v.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let range = (!spec.version.is_empty())
        .then(|| VersionConstraint::parse(&spec.version).ok())
        .flatten();
    let in_range: Vec<(String, Version)> = versions
        .iter()
        .filter(|(_, v)| range.as_ref().is_none_or(|r| r.matches(v)))
        .cloned()
        .collect();
    if in_range.is_empty() {
        return Finding::stuck(
            CauseKind::VersionRange,
            format!(
                "no bundle of package {package} has a version in {}",
                spec.version
            ),
            vec![
                format!(
                    "ClusterExtension {} asks for package {package} version {}{in_channels}",
                    spec.name, spec.version
                ),
                format!("the versions there{in_channels}: {}", listed(&versions)),
            ],
        );
    }
    if let Some(installed) = &spec.installed_bundle
        && spec.upgrade_constraint_policy == Policy::CatalogProvided
    {
        let iv = Version::parse(&installed.version).ok();
        let reachable = with_package.iter().any(|(_, content)| {
            content.channels(package).iter().any(|ch| {
                upgrades_from(ch, &installed.name, iv.as_ref())
                    .iter()
                    .any(|e| in_range.iter().any(|(n, _)| *n == e.name))
            })
        });
        if !reachable {
            return Finding::stuck(
                CauseKind::UpgradeGap,
                format!("no bundle in range is a successor of the installed {}", installed.name),
                vec![
                    format!("{} (version {}) is installed", installed.name, installed.version),
                    format!("the versions in range{in_channels}: {}", listed(&in_range)),
                    "upgradeConstraintPolicy CatalogProvided allows only bundles that replace, skip or skipRange the installed one, and none of these does".to_owned(),
                ],
            );
        }
    }
    Finding::stuck(
        CauseKind::Unsatisfiable,
        "the v1 resolver finds no single bundle".to_owned(),
        vec![error],
    )
}

/// No ClusterCatalog has the labels the selector asks for: the selector, and every catalog
/// with its labels.
fn selector_excludes_all(spec: &ExtensionSpec, all: &[ClusterCatalog]) -> Finding {
    let listed: Vec<String> = all
        .iter()
        .map(|c| {
            let labels: Vec<String> = c.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{} ({})", c.name, labels.join(", "))
        })
        .collect();
    Finding::stuck(
        CauseKind::SelectorExcludesAll,
        "its catalog selector matches no ClusterCatalog".to_owned(),
        vec![
            format!(
                "ClusterExtension {} selects catalogs by {}",
                spec.name,
                selector_text(spec)
            ),
            format!(
                "no ClusterCatalog has those labels; the catalogs: {}",
                listed.join("; ")
            ),
        ],
    )
}

/// The package is there but has none of the channels asked for: which it has instead.
fn channel_gone(spec: &ExtensionSpec, with_package: &[&(&ClusterCatalog, Content<'_>)]) -> Finding {
    let package = spec.package_name.as_str();
    // What the user may write instead.
    let mut there: Vec<String> = with_package
        .iter()
        .flat_map(|(_, content)| content.channels(package))
        .map(|ch| ch.name.clone())
        .collect();
    there.sort();
    there.dedup();
    Finding::stuck(
        CauseKind::ChannelGone,
        format!(
            "package {package} has none of the channels {}",
            spec.channels.join(", ")
        ),
        vec![
            format!(
                "ClusterExtension {} asks for channels {} of package {package}, which the selected catalogs do not have",
                spec.name,
                spec.channels.join(", ")
            ),
            format!("the channels there: {}", there.join(", ")),
        ],
    )
}

fn selector_text(spec: &ExtensionSpec) -> String {
    let Some(s) = &spec.selector else {
        return "nothing".to_owned();
    };
    let mut terms: Vec<String> = s
        .match_labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    terms.extend(
        s.match_expressions
            .iter()
            .map(|e| format!("{} {} ({})", e.key, e.operator, e.values.join(", "))),
    );
    terms.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use catalog::types::{Bundle, Channel, ChannelEntry, DeclarativeConfig, Property};

    fn bundle(version: &str) -> Bundle {
        Bundle {
            name: format!("p.v{version}"),
            package: "p".into(),
            properties: vec![Property {
                kind: "olm.package".into(),
                value: format!(r#"{{"packageName":"p","version":"{version}"}}"#),
            }],
            ..Bundle::default()
        }
    }

    fn entry(version: &str, replaces: &str) -> ChannelEntry {
        ChannelEntry {
            name: format!("p.v{version}"),
            replaces: replaces.into(),
            ..ChannelEntry::default()
        }
    }

    /// Package p: channel stable 1.0.0 <- 1.1.0, channel fast 2.0.0 (no edge).
    fn content() -> DeclarativeConfig {
        DeclarativeConfig {
            channels: vec![
                Channel {
                    name: "stable".into(),
                    package: "p".into(),
                    entries: vec![entry("1.0.0", ""), entry("1.1.0", "p.v1.0.0")],
                    ..Channel::default()
                },
                Channel {
                    name: "fast".into(),
                    package: "p".into(),
                    entries: vec![entry("2.0.0", "")],
                    ..Channel::default()
                },
            ],
            bundles: ["1.0.0", "1.1.0", "2.0.0"].map(bundle).into(),
            ..DeclarativeConfig::default()
        }
    }

    fn why(spec: serde_json::Value) -> Finding {
        let config = content();
        let catalog = ClusterCatalog::from_object(&json!({"metadata": {"name": "c"}}));
        let spec: ExtensionSpec = serde_json::from_value(spec).unwrap();
        why_none(
            &spec,
            std::slice::from_ref(&catalog),
            &[&catalog],
            &[(&catalog, Content(&config))],
            "resolver".into(),
        )
    }

    #[test]
    fn the_filter_that_leaves_nothing_is_named() {
        let f = why(json!({"name": "e", "packageName": "q"}));
        assert_eq!(f.cause, Some(CauseKind::PackageGone));
        let f = why(json!({"name": "e", "packageName": "p", "channels": ["beta"]}));
        assert_eq!(f.cause, Some(CauseKind::ChannelGone));
        assert_eq!(f.facts[1], "the channels there: fast, stable");
        let f = why(
            json!({"name": "e", "packageName": "p", "channels": ["stable"], "version": ">=2.0.0"}),
        );
        assert_eq!(f.cause, Some(CauseKind::VersionRange));
        assert_eq!(
            f.facts[1],
            "the versions there in channels stable: 1.1.0, 1.0.0"
        );
        // Installed 1.0.0: 2.0.0 in fast replaces nothing; under SelfCertified it would do.
        let installed = json!({"name": "p.v1.0.0", "version": "1.0.0"});
        let f = why(
            json!({"name": "e", "packageName": "p", "channels": ["fast"],
                           "installedBundle": installed}),
        );
        assert_eq!(f.cause, Some(CauseKind::UpgradeGap));
        assert_eq!(f.facts[1], "the versions in range in channels fast: 2.0.0");
        let f = why(
            json!({"name": "e", "packageName": "p", "channels": ["fast"],
                           "installedBundle": installed, "upgradeConstraintPolicy": "SelfCertified"}),
        );
        assert_eq!(
            (f.cause, f.facts),
            (Some(CauseKind::Unsatisfiable), vec!["resolver".to_owned()])
        );
        // A selector no catalog matches.
        let spec: ExtensionSpec = serde_json::from_value(json!({"name": "e", "packageName": "p",
            "selector": {"matchLabels": {"tier": "x"}}}))
        .unwrap();
        let catalog = ClusterCatalog::from_object(
            &json!({"metadata": {"name": "c", "labels": {"tier": "y"}}}),
        );
        let f = why_none(
            &spec,
            std::slice::from_ref(&catalog),
            &[],
            &[],
            String::new(),
        );
        assert_eq!(f.cause, Some(CauseKind::SelectorExcludesAll));
        assert_eq!(
            f.facts[1],
            "no ClusterCatalog has those labels; the catalogs: c (olm.operatorframework.io/metadata.name=c, tier=y)"
        );
    }
}
