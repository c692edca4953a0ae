//! Per Subscription: what OLM will do next, or the shortest chain of facts that keeps it from
//! going on. Facts that need no resolution come first (the catalog, the package, the
//! channel, the starting CSV, the OperatorGroup); then the resolver's answer for the whole
//! namespace, read against the catalogs' content to name what forces a failure.
use catalog::Gvk;
use catalog::types::ChannelEntry;
use resolve::service::{Outcome, Resolution};
use serde_json::Value;

use crate::facts::{self, Content, Requirement, api, edges, upgrades_from};
use crate::report::{CauseKind, NextBundle, Verdict};
use crate::state::{Namespace, Source, apis, field};

/// A verdict with its reasons.
#[derive(Clone)]
pub(crate) struct Finding {
    pub(crate) verdict: Verdict,
    pub(crate) cause: Option<CauseKind>,
    pub(crate) summary: String,
    pub(crate) facts: Vec<String>,
    pub(crate) next: Vec<NextBundle>,
}

impl Finding {
    pub(crate) fn stuck(cause: CauseKind, summary: String, facts: Vec<String>) -> Finding {
        Finding {
            verdict: Verdict::Stuck,
            cause: Some(cause),
            summary,
            facts,
            next: Vec::new(),
        }
    }
}

/// A Subscription's fields the diagnosis reads.
pub(crate) struct Sub<'a> {
    pub(crate) object: &'a Value,
    pub(crate) name: &'a str,
    pub(crate) package: &'a str,
    pub(crate) channel: &'a str,
    pub(crate) source: &'a str,
    pub(crate) source_namespace: &'a str,
    pub(crate) starting_csv: &'a str,
    pub(crate) installed_csv: &'a str,
}

impl<'a> Sub<'a> {
    pub(crate) fn new(object: &'a Value, namespace: &'a str) -> Sub<'a> {
        Sub {
            object,
            name: field(object, "/metadata/name"),
            package: field(object, "/spec/name"),
            channel: field(object, "/spec/channel"),
            source: field(object, "/spec/source"),
            source_namespace: match field(object, "/spec/sourceNamespace") {
                "" => namespace,
                ns => ns,
            },
            starting_csv: field(object, "/spec/startingCSV"),
            installed_csv: field(object, "/status/installedCSV"),
        }
    }

    pub(crate) fn catalog_key(&self) -> String {
        format!("{}/{}", self.source_namespace, self.source)
    }

    fn takes(&self) -> String {
        format!(
            "subscription {} takes package {} from catalog {}",
            self.name,
            self.package,
            self.catalog_key()
        )
    }
}

/// A catalog the namespace may resolve from, with its content when it was read.
pub(crate) struct Visible<'a> {
    pub(crate) source: &'a Source,
    pub(crate) content: Option<Content<'a>>,
}

impl Visible<'_> {
    /// OLM resolves from it and explain read it.
    fn usable(&self) -> bool {
        self.source.healthy() && self.content.is_some()
    }
}

/// What the diagnosis of a namespace reads.
pub(crate) struct Context<'a> {
    pub(crate) ns: &'a Namespace,
    pub(crate) visible: Vec<Visible<'a>>,
}

impl<'a> Context<'a> {
    /// The facts about `s` that need no resolution, or None when they are all fine.
    pub(crate) fn precheck(&self, s: &Sub<'_>) -> Option<Finding> {
        let key = s.catalog_key();
        let takes = format!(
            "subscription {} takes package {} from catalog {key}{}",
            s.name,
            s.package,
            match s.channel {
                "" => String::new(),
                c => format!(", channel {c}"),
            }
        );
        let Some(v) = self.visible.iter().find(|v| v.source.key() == key) else {
            let why = if self.ns.catalogs.iter().any(|c| c.key() == key) {
                format!(
                    "namespace {} does not see catalogs of namespace {} (only its own and the global catalog namespace's)",
                    self.ns.name, s.source_namespace
                )
            } else {
                format!("no CatalogSource {key} exists")
            };
            return Some(Finding::stuck(
                CauseKind::CatalogMissing,
                format!("its catalog {key} is not there"),
                vec![takes, why],
            ));
        };
        if !v.source.healthy() {
            let mut facts = vec![takes, down(v.source)];
            if let Some(c) = &v.content {
                facts.push(holds(c, s.package));
            }
            return Some(Finding::stuck(
                CauseKind::CatalogDown,
                format!("its catalog {key} is not READY"),
                facts,
            ));
        }
        let content = v.content?;
        if !content.has_package(s.package) {
            let mut facts = vec![takes, format!("catalog {key} has no package {}", s.package)];
            facts.extend(self.elsewhere(s.package, &key));
            return Some(Finding::stuck(
                CauseKind::PackageGone,
                format!("package {} is not in catalog {key}", s.package),
                facts,
            ));
        }
        let Some(channel) = content.channel(s.package, s.channel) else {
            let names: Vec<&str> = content
                .channels(s.package)
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            let wanted = match s.channel {
                "" => format!(
                    "its default channel {:?}",
                    content.default_channel(s.package)
                ),
                c => format!("channel {c}"),
            };
            return Some(Finding::stuck(
                CauseKind::ChannelGone,
                format!("package {} has no {wanted} in catalog {key}", s.package),
                vec![
                    takes,
                    format!(
                        "package {} in catalog {key} has no {wanted}; its channels: {} (default {})",
                        s.package,
                        names.join(", "),
                        content.default_channel(s.package)
                    ),
                ],
            ));
        };
        if s.installed_csv.is_empty()
            && !s.starting_csv.is_empty()
            && !channel.entries.iter().any(|e| e.name == s.starting_csv)
        {
            let names: Vec<&str> = channel.entries.iter().map(|e| e.name.as_str()).collect();
            return Some(Finding::stuck(
                CauseKind::StartingCsvMissing,
                format!(
                    "startingCSV {} is not in channel {} of package {}",
                    s.starting_csv, channel.name, s.package
                ),
                vec![
                    format!("{takes}, starting at {}", s.starting_csv),
                    format!(
                        "channel {} of package {} in catalog {key} has no bundle {}; its bundles: {}",
                        channel.name,
                        s.package,
                        s.starting_csv,
                        names.join(", ")
                    ),
                ],
            ));
        }
        None
    }

    /// Where else a package is: "package P is in catalog K (READY)".
    fn elsewhere(&self, package: &str, except: &str) -> Vec<String> {
        self.visible
            .iter()
            .filter(|v| v.source.key() != except)
            .filter(|v| v.content.is_some_and(|c| c.has_package(package)))
            .map(|v| {
                format!(
                    "package {package} is in catalog {} ({})",
                    v.source.key(),
                    state_word(v.source)
                )
            })
            .collect()
    }

    /// The namespace-wide reasons OLM resolves nothing here: not exactly one OperatorGroup,
    /// or a catalog it dials that cannot be listed.
    pub(crate) fn namespace_block(&self) -> Option<Finding> {
        if self.ns.operator_group().is_none() {
            let names: Vec<&str> = self
                .ns
                .operator_groups
                .iter()
                .map(|o| field(o, "/metadata/name"))
                .collect();
            let fact = match names.as_slice() {
                [] => format!("namespace {} has no OperatorGroup", self.ns.name),
                many => format!(
                    "namespace {} has {} OperatorGroups: {}",
                    self.ns.name,
                    many.len(),
                    many.join(", ")
                ),
            };
            return Some(Finding::stuck(
                CauseKind::OperatorGroup,
                "OLM resolves nothing in a namespace without exactly one OperatorGroup".into(),
                vec![
                    fact,
                    "OLM's catalog operator needs exactly one to resolve the namespace's Subscriptions".into(),
                ],
            ));
        }
        let blocking = self
            .visible
            .iter()
            .find(|v| !v.source.healthy() && v.source.dialed())?;
        Some(Finding::stuck(
            CauseKind::CatalogDown,
            format!(
                "catalog {} is not READY, and OLM resolves nothing that sees it until it is",
                blocking.source.key()
            ),
            vec![
                down(blocking.source),
                format!(
                    "namespace {} sees catalog {}, so OLM's resolution of it fails as a whole",
                    self.ns.name,
                    blocking.source.key()
                ),
            ],
        ))
    }

    /// A namespace held up by a catalog that is down: when `s` needs something only a
    /// catalog that is not READY provides, that is the fact to name first.
    pub(crate) fn blocked(&self, s: &Sub<'_>, block: &Finding) -> Finding {
        if block.cause == Some(CauseKind::CatalogDown)
            && let Some(mut dependency) = self.missing_dependency(s, &self.candidates(s))
            && dependency
                .facts
                .iter()
                .any(|f| f.contains(" would provide it "))
        {
            dependency.facts.extend(block.facts.iter().cloned());
            return dependency;
        }
        block.clone()
    }

    /// The verdict from the resolution of the namespace.
    pub(crate) fn after_resolution(&self, s: &Sub<'_>, outcome: &Outcome) -> Option<Finding> {
        if outcome.unsatisfiable.is_some() {
            return self.why_unsatisfiable(s, outcome);
        }
        let result = outcome.results.iter().find(|r| r.request == s.name);
        if let Some(r) = result
            && let Some(b) = &r.bundle
            && b.name != s.installed_csv
        {
            let summary = if b.from.is_empty() {
                format!("OLM will install {} {}", b.name, b.version)
            } else {
                format!("OLM will upgrade {} to {} {}", b.from, b.name, b.version)
            };
            let mut next = vec![next_bundle(r)];
            next.extend(
                outcome
                    .results
                    .iter()
                    .filter(|d| d.request.is_empty() && d.bundle.is_some())
                    .map(next_bundle),
            );
            let mut facts = vec![format!(
                "channel {} of package {} in catalog {} offers {}",
                b.channel, r.package, b.catalog, b.name
            )];
            facts.extend(r.warnings.iter().cloned());
            return Some(Finding {
                verdict: Verdict::Progress,
                cause: None,
                summary,
                facts,
                next,
            });
        }
        if let Some(e) = result.and_then(|r| r.error.as_ref()) {
            return Some(Finding::stuck(
                CauseKind::CatalogDown,
                format!("its catalog {} cannot be read", s.catalog_key()),
                vec![e.clone()],
            ));
        }
        if !s.installed_csv.is_empty() {
            return Some(self.gap_or_current(s));
        }
        None
    }

    /// An installed CSV that nothing newer of its channel upgrades from is stuck there
    /// (OLM says AtLatestKnown); one at the newest bundle is current.
    fn gap_or_current(&self, s: &Sub<'_>) -> Finding {
        let current = Finding {
            verdict: Verdict::Current,
            cause: None,
            summary: format!("{} is the newest bundle it can reach", s.installed_csv),
            facts: Vec::new(),
            next: Vec::new(),
        };
        let Some((content, channel)) = self.followed(s) else {
            return current;
        };
        let version = self.installed_version(s.installed_csv);
        let Some((newest, newest_version)) = content.newest(channel) else {
            return current;
        };
        let ahead = version.as_ref().is_none_or(|v| newest_version > *v);
        if newest.name == s.installed_csv
            || !ahead
            || !upgrades_from(channel, s.installed_csv, version.as_ref()).is_empty()
        {
            return current;
        }
        let shown = version.map_or("unknown".to_owned(), |v| v.to_string());
        let mut entries: Vec<&ChannelEntry> = channel.entries.iter().collect();
        entries.sort_by_key(|e| std::cmp::Reverse(content.version(s.package, &e.name)));
        let listed: Vec<String> = entries.iter().take(6).map(|e| edges(e)).collect();
        Finding::stuck(
            CauseKind::UpgradeGap,
            format!(
                "no upgrade edge from {} to any newer bundle of channel {}: OLM stays at it",
                s.installed_csv, channel.name
            ),
            vec![
                format!(
                    "{} (version {shown}) is installed by subscription {}, channel {} of package {} in catalog {}",
                    s.installed_csv,
                    s.name,
                    channel.name,
                    s.package,
                    s.catalog_key()
                ),
                format!(
                    "the channel's newest bundle is {} (version {newest_version})",
                    newest.name
                ),
                format!(
                    "no bundle of the channel replaces {}, skips it, or has a skipRange holding {shown}; the channel's edges: {}",
                    s.installed_csv,
                    listed.join("; ")
                ),
            ],
        )
    }

    fn installed_version(&self, csv: &str) -> Option<catalog::semver::Version> {
        self.ns
            .own_csvs()
            .find(|c| field(c, "/metadata/name") == csv)
            .and_then(|c| catalog::semver::Version::parse(field(c, "/spec/version")).ok())
    }

    /// The content of `s`'s catalog and the channel it follows, when both are there.
    fn followed(&self, s: &Sub<'_>) -> Option<(Content<'a>, &'a catalog::types::Channel)> {
        let key = s.catalog_key();
        let content = self
            .visible
            .iter()
            .find(|v| v.source.key() == key)
            .and_then(|v| v.content)?;
        Some((content, content.channel(s.package, s.channel)?))
    }

    /// The bundles `s` may take, newest first: those upgrading from its installed CSV, or
    /// its starting CSV, or its whole channel.
    fn candidates(&self, s: &Sub<'_>) -> Vec<&'a catalog::types::Bundle> {
        let Some((content, channel)) = self.followed(s) else {
            return Vec::new();
        };
        let entries: Vec<&ChannelEntry> = if !s.installed_csv.is_empty() {
            let version = self.installed_version(s.installed_csv);
            upgrades_from(channel, s.installed_csv, version.as_ref())
        } else if !s.starting_csv.is_empty() {
            channel
                .entries
                .iter()
                .filter(|e| e.name == s.starting_csv)
                .collect()
        } else {
            channel.entries.iter().collect()
        };
        let mut bundles: Vec<_> = entries
            .iter()
            .filter_map(|e| content.bundle(s.package, &e.name))
            .collect();
        bundles.sort_by_key(|b| std::cmp::Reverse(facts::bundle_version(b)));
        bundles
    }

    /// The specific reason the namespace's resolution fails for `s`, if it has one.
    fn why_unsatisfiable(&self, s: &Sub<'_>, outcome: &Outcome) -> Option<Finding> {
        let candidates = self.candidates(s);
        let messages = outcome.unsatisfiable.as_deref().unwrap_or_default();
        let refusals: Vec<&String> = messages
            .iter()
            .filter(|m| {
                m.contains("install modes do not support")
                    && candidates
                        .iter()
                        .any(|b| m.ends_with(&b.name) || m.contains(&format!("/{}", b.name)))
            })
            .collect();
        if let Some(first) = refusals.first() {
            return Some(Finding::stuck(
                CauseKind::InstallModeForbidden,
                format!(
                    "the bundles of package {} cannot run under this namespace's OperatorGroup",
                    s.package
                ),
                vec![s.takes(), (*first).clone()],
            ));
        }
        self.missing_dependency(s, &candidates)
            .or_else(|| self.api_owned_twice(s, &candidates))
    }

    /// Every candidate requires something no usable catalog (nor an installed CSV) provides.
    fn missing_dependency(
        &self,
        s: &Sub<'_>,
        candidates: &[&catalog::types::Bundle],
    ) -> Option<Finding> {
        let mut first = None;
        for b in candidates {
            let missing = facts::requirements(b)
                .into_iter()
                .find(|r| !self.provided(r))?;
            first.get_or_insert((b, missing));
        }
        let (bundle, requirement) = first?;
        let mut facts = vec![
            s.takes(),
            format!(
                "{} requires {}{}",
                bundle.name,
                requirement.describe(),
                match candidates.len() {
                    1 => String::new(),
                    n => format!(
                        ", and each of the {} other bundles it may take requires something missing too",
                        n - 1
                    ),
                }
            ),
            format!(
                "no READY catalog visible from namespace {} provides {}",
                self.ns.name,
                requirement.describe()
            ),
        ];
        for v in self.visible.iter().filter(|v| !v.usable()) {
            if let Some(provider) = v.content.and_then(|c| c.provider(&requirement)) {
                facts.push(format!(
                    "catalog {} would provide it ({provider}) but is {}",
                    v.source.key(),
                    state_word(v.source)
                ));
            }
        }
        Some(Finding::stuck(
            CauseKind::DependencyMissing,
            format!(
                "{} requires {}, which no READY catalog provides",
                bundle.name,
                requirement.describe()
            ),
            facts,
        ))
    }

    fn provided(&self, r: &Requirement) -> bool {
        let in_catalogs = self
            .visible
            .iter()
            .filter(|v| v.usable())
            .any(|v| v.content.is_some_and(|c| c.provider(r).is_some()));
        in_catalogs
            || matches!(r, Requirement::Api(g) if self.ns.own_csvs().any(|c| apis(c, "owned").contains(g)))
    }

    /// Every candidate provides an API that another operator of the namespace provides.
    fn api_owned_twice(
        &self,
        s: &Sub<'_>,
        candidates: &[&catalog::types::Bundle],
    ) -> Option<Finding> {
        let others = self.other_owners(s);
        let mut first: Option<(&str, Gvk, &str)> = None;
        for b in candidates {
            let provided = facts::provided(b);
            let (g, owner) = others.iter().find_map(|(owner, apis)| {
                provided
                    .iter()
                    .find(|g| apis.contains(g))
                    .map(|g| (g.clone(), owner.as_str()))
            })?;
            first.get_or_insert((b.name.as_str(), g, owner));
        }
        let (bundle, g, owner) = first?;
        Some(Finding::stuck(
            CauseKind::ApiOwnedTwice,
            format!(
                "{owner} already provides {}, which {bundle} provides too",
                api(&g)
            ),
            vec![
                s.takes(),
                format!("{bundle} provides {}", api(&g)),
                format!(
                    "{owner} provides {} in namespace {} too",
                    api(&g),
                    self.ns.name
                ),
                "OLM lets only one operator of a namespace provide an API".to_owned(),
            ],
        ))
    }

    /// The other providers of APIs in the namespace: installed CSVs that are not `s`'s, and
    /// the newest bundle each other Subscription may take.
    fn other_owners(&self, s: &Sub<'_>) -> Vec<(String, Vec<Gvk>)> {
        let mut owners: Vec<(String, Vec<Gvk>)> = self
            .ns
            .own_csvs()
            .filter(|c| field(c, "/metadata/name") != s.installed_csv)
            .map(|c| {
                (
                    format!("CSV {}", field(c, "/metadata/name")),
                    apis(c, "owned"),
                )
            })
            .collect();
        for other in &self.ns.subscriptions {
            let t = Sub::new(other, &self.ns.name);
            if t.name == s.name || t.package == s.package || !t.installed_csv.is_empty() {
                continue;
            }
            if let Some(b) = self.candidates(&t).first() {
                owners.push((
                    format!("{} (subscription {})", b.name, t.name),
                    facts::provided(b),
                ));
            }
        }
        owners
    }
}

/// Why a catalog is not READY, in OLM's terms.
fn down(s: &Source) -> String {
    let state = if s.state.is_empty() {
        "has no connection state".to_owned()
    } else {
        format!("is {}, not READY", s.state)
    };
    let olm = if s.dialed() {
        "OLM fails every resolution that sees it while it cannot list it"
    } else {
        "OLM has no address for it yet, so its resolutions leave it out"
    };
    format!("catalog {} {state}: {olm}", s.key())
}

fn state_word(s: &Source) -> String {
    match s.state.as_str() {
        "" => "without a connection state".to_owned(),
        "READY" => "READY".to_owned(),
        other => format!("{other}, not READY"),
    }
}

/// What a catalog read while down holds of a package.
fn holds(c: &Content<'_>, package: &str) -> String {
    if !c.has_package(package) {
        return format!("its content has no package {package} either");
    }
    let channel = c.default_channel(package);
    let head = c
        .channel(package, "")
        .and_then(|ch| c.newest(ch))
        .map_or(String::new(), |(e, _)| format!(", newest {}", e.name));
    format!("its content has package {package} (default channel {channel}{head})")
}

fn next_bundle(r: &Resolution) -> NextBundle {
    let b = r.bundle.clone().unwrap_or_default();
    NextBundle {
        name: b.name,
        version: b.version,
        channel: b.channel,
        catalog: b.catalog,
        from: b.from,
        because: b.required_by,
    }
}
