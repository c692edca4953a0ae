//! opm's Mermaid upgrade graph (catalog-templates.md §5), byte for byte: the text authors
//! paste into GitHub or mermaid.live must not change when they switch tools.
use super::bundle_versions;
use super::error::Error;
use catalog::quote::go_quote;
use catalog::semver::{Range, Version};
use catalog::{
    Channel, ChannelEntry, DeclarativeConfig, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE,
};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

#[derive(Clone, Debug, Default)]
pub struct MermaidOptions {
    /// Draw only edges from this bundle's version up (`--minimum-edge`).
    pub minimum_edge: Option<String>,
    /// Draw only this package (`--package-name`).
    pub package: Option<String>,
    /// Mark bundles skipped by a newer entry and the edges that still lead into them.
    pub v0_semantics: bool,
}

/// The graph text and the warnings opm prints to stderr while drawing it.
pub(crate) struct Mermaid {
    pub(crate) text: String,
    pub(crate) warnings: Vec<String>,
}

pub(crate) fn write_mermaid(
    dc: &DeclarativeConfig,
    opts: &MermaidOptions,
) -> Result<Mermaid, Error> {
    let versions = bundle_versions(dc).map_err(Error::Invalid)?;
    let zero = Version::parse("0.0.0").expect("a valid version");
    let version = |name: &str| versions.get(name).unwrap_or(&zero);
    let min_version = match &opts.minimum_edge {
        Some(name) => versions.get(name).ok_or_else(|| {
            Error::Invalid(format!("unknown minimum edge name: {}", go_quote(name)))
        })?,
        None => &zero,
    };
    let min_edge_package = opts.minimum_edge.as_ref().and_then(|name| {
        dc.channels
            .iter()
            .find(|c| c.entries.iter().any(|e| &e.name == name))
            .map(|c| c.package.as_str())
    });

    let Deprecated {
        packages: dep_packages,
        channels: dep_channels,
        bundles: dep_bundles,
    } = Deprecated::of(dc);

    let mut channels: Vec<&Channel> = dc.channels.iter().collect();
    channels.sort_by(|a, b| a.name.cmp(&b.name));
    let mut packages: BTreeMap<&str, String> = BTreeMap::new();
    let mut deprecated_package = None;
    let mut deprecated_channel_ids = Vec::new();
    let mut classes: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut link_id = 0usize;
    let mut skipped_links = Vec::new();
    let mut warnings = Vec::new();
    for c in channels {
        let Some(entries) = filter_channel(c, opts, min_version, min_edge_package, &version) else {
            continue;
        };
        let out = packages.entry(&c.package).or_default();
        let channel_id = format!("{}-{}", c.package, c.name);
        let _ = writeln!(out, "    %% channel {}", go_quote(&c.name));
        let _ = writeln!(out, "    subgraph {channel_id}[{}]", go_quote(&c.name));
        if dep_packages.contains(c.package.as_str()) {
            deprecated_package = Some(c.package.as_str());
        }
        if dep_channels.contains(c.name.as_str()) {
            deprecated_channel_ids.push(channel_id.clone());
        }
        let mut sorted: Vec<&ChannelEntry> = entries.iter().collect();
        sorted.sort_by(|a, b| version(&b.name).cmp(version(&a.name)));
        let mut skipped: HashSet<String> = HashSet::new();
        let node = |name: &str| format!("{channel_id}-{name}[{}]", go_quote(name));
        for e in &sorted {
            let entry_id = format!("{channel_id}-{}", e.name);
            let target = node(&e.name);
            let _ = writeln!(out, "      {target}");
            let deprecated = dep_bundles.contains(e.name.as_str());
            let class = match (deprecated, skipped.contains(&e.name)) {
                (true, true) => Some("deprecatedskipped"),
                (true, false) => Some("deprecated"),
                (false, true) => Some("skipped"),
                (false, false) => None,
            };
            if let Some(class) = class {
                classes.entry(class).or_default().push(entry_id);
            }
            // The first skip of a bundle marks it skipped; every later edge into a skipped
            // bundle is one an upgrade should no longer take.
            let mut mark = |link: usize, name: &str, capture: bool| {
                if !opts.v0_semantics {
                    return;
                }
                if skipped.contains(name) {
                    skipped_links.push(link.to_string());
                } else if capture {
                    skipped.insert(name.to_owned());
                }
            };
            for s in &e.skips {
                let _ = writeln!(out, "      {}-- skip --> {target}", node(s));
                mark(link_id, s, true);
                link_id += 1;
            }
            if !e.skip_range.is_empty() {
                match Range::parse(&e.skip_range) {
                    Ok(range) => {
                        for other in &entries {
                            if range.contains(version(&other.name)) {
                                let _ = writeln!(
                                    out,
                                    "      {}-- \"skipRange({})\" --> {target}",
                                    node(&other.name),
                                    e.skip_range
                                );
                                mark(link_id, &e.name, false);
                                link_id += 1;
                            }
                        }
                    }
                    Err(err) => warnings.push(format!(
                        "warning: ignoring invalid SkipRange for package/edge {}/{}: {err}",
                        go_quote(&c.package),
                        go_quote(&e.name)
                    )),
                }
            }
            // Last, as upstream does: whether a replace is highlighted depends on the skips.
            if !e.replaces.is_empty() {
                let _ = writeln!(out, "      {}-- replace --> {target}", node(&e.replaces));
                mark(link_id, &e.name, false);
                link_id += 1;
            }
        }
        out.push_str("    end\n");
    }

    let text = assemble(
        &packages,
        deprecated_package,
        &deprecated_channel_ids,
        classes,
        &skipped_links,
    );
    Ok(Mermaid { text, warnings })
}

/// What the deprecations name, by kind: packages, channels and bundles by name.
struct Deprecated<'a> {
    packages: HashSet<&'a str>,
    channels: HashSet<&'a str>,
    bundles: HashSet<&'a str>,
}

impl<'a> Deprecated<'a> {
    fn of(dc: &'a DeclarativeConfig) -> Deprecated<'a> {
        let mut d = Deprecated {
            packages: HashSet::new(),
            channels: HashSet::new(),
            bundles: HashSet::new(),
        };
        for dep in &dc.deprecations {
            for e in &dep.entries {
                match e.reference.schema.as_str() {
                    SCHEMA_PACKAGE => d.packages.insert(dep.package.as_str()),
                    SCHEMA_CHANNEL => d.channels.insert(e.reference.name.as_str()),
                    SCHEMA_BUNDLE => d.bundles.insert(e.reference.name.as_str()),
                    _ => false,
                };
            }
        }
        d
    }
}

/// The whole graph: the class definitions, each package's channels, then the styles of
/// what is deprecated or skipped.
fn assemble(
    packages: &BTreeMap<&str, String>,
    deprecated_package: Option<&str>,
    deprecated_channel_ids: &[String],
    mut classes: BTreeMap<&str, Vec<String>>,
    skipped_links: &[String],
) -> String {
    let mut text = String::from(
        "graph LR\n  classDef deprecated fill:#E8960F\n  classDef skipped stroke:#FF0000,stroke-width:4px\n  classDef deprecatedskipped fill:#E8960F,stroke:#FF0000,stroke-width:4px\n",
    );
    for (name, body) in packages {
        let _ = writeln!(text, "  %% package {}", go_quote(name));
        let _ = writeln!(text, "  subgraph {}", go_quote(name));
        text.push_str(body);
        text.push_str("  end\n");
    }
    if let Some(p) = deprecated_package {
        let _ = writeln!(text, "style {p} fill:#989695");
    }
    for id in deprecated_channel_ids {
        let _ = writeln!(text, "style {id} fill:#DCD0FF");
    }
    for (class, ids) in &mut classes {
        ids.sort();
        let _ = writeln!(text, "class {} {class}", ids.join(","));
    }
    if !skipped_links.is_empty() {
        let _ = writeln!(
            text,
            "linkStyle {} stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;",
            skipped_links.join(",")
        );
    }
    text
}

/// The channel's entries as the filters leave them, or None when nothing of it is drawn.
fn filter_channel<'v>(
    c: &Channel,
    opts: &MermaidOptions,
    min_version: &Version,
    min_edge_package: Option<&str>,
    version: &impl Fn(&str) -> &'v Version,
) -> Option<Vec<ChannelEntry>> {
    if opts.minimum_edge.is_none() && opts.package.is_none() {
        return Some(c.entries.clone());
    }
    if opts.package.as_ref().is_some_and(|p| *p != c.package)
        || min_edge_package.is_some_and(|p| p != c.package)
    {
        return None;
    }
    let Some(min_edge) = &opts.minimum_edge else {
        return (!c.entries.is_empty()).then(|| c.entries.clone());
    };
    let mut kept = Vec::new();
    for e in &c.entries {
        let mut filtered = ChannelEntry {
            name: e.name.clone(),
            ..Default::default()
        };
        // The floor itself is drawn without edges: everything it points at is older.
        if e.name != *min_edge {
            if !e.replaces.is_empty() && version(&e.replaces) >= min_version {
                filtered.replaces = e.replaces.clone();
            }
            filtered.skips = (e.skips.iter())
                .filter(|s| version(s) >= min_version)
                .cloned()
                .collect();
            // An unparsable range is not filtered on; the drawing warns about it.
            if !e.skip_range.is_empty()
                && Range::parse(&e.skip_range).is_ok_and(|r| r.contains(min_version))
            {
                filtered.skip_range = e.skip_range.clone();
            }
            let has_edges = !filtered.replaces.is_empty()
                || !filtered.skips.is_empty()
                || !filtered.skip_range.is_empty();
            let never_had_edges =
                e.replaces.is_empty() && e.skips.is_empty() && e.skip_range.is_empty();
            let kept_bare = never_had_edges && version(&e.name) >= min_version;
            if !has_edges && !kept_bare {
                continue;
            }
        }
        kept.push(filtered);
    }
    (!kept.is_empty()).then_some(kept)
}
