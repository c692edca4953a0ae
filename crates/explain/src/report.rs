//! What `explain` answers: the schema of `-o json|yaml` (README, "Explaining a cluster") and
//! the readable text. Field names are part of the schema; new fields may be added, none
//! renamed or removed.
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::state::field;

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Calls made to the API server (all GET).
    pub api_calls: usize,
    pub namespaces: Vec<NamespaceReport>,
    /// OLM v1 (`explain clusterextension NAME`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cluster_extensions: Vec<ExtensionReport>,
}

impl Report {
    /// Whether any Subscription is stuck.
    pub fn stuck(&self) -> bool {
        self.namespaces
            .iter()
            .flat_map(|n| &n.subscriptions)
            .any(|s| s.verdict == Verdict::Stuck)
            || self
                .cluster_extensions
                .iter()
                .any(|e| e.verdict == Verdict::Stuck)
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceReport {
    pub namespace: String,
    /// The OperatorGroup OLM uses (empty: none, or several).
    pub operator_group: String,
    /// The CatalogSources the namespace may resolve from.
    pub catalogs: Vec<CatalogReport>,
    pub subscriptions: Vec<SubscriptionReport>,
    /// What OLM's next InstallPlan for the namespace holds, when it will make one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install_plan: Option<PlannedInstall>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogReport {
    pub name: String,
    pub namespace: String,
    /// `status.connectionState.lastObservedState`.
    pub state: String,
    /// READY: OLM resolves from it.
    pub healthy: bool,
    /// `address HOST:PORT` or `image REF`: where explain read its content (empty: not read).
    pub read_from: String,
    /// Why its content could not be read.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// OLM will install or upgrade (see `next`).
    Progress,
    /// Installed at the newest bundle it can reach; nothing to do.
    Current,
    /// OLM made an InstallPlan that waits for a person to approve it.
    Waiting,
    /// OLM cannot go on until the `cause` is mended.
    Stuck,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum CauseKind {
    /// The Subscription's CatalogSource does not exist, or is not visible from its namespace.
    CatalogMissing,
    /// A catalog OLM needs is not READY.
    CatalogDown,
    /// The package is not in the Subscription's catalog.
    PackageGone,
    /// The channel is not in the package.
    ChannelGone,
    /// `spec.startingCSV` is no bundle of the channel.
    StartingCsvMissing,
    /// The installed CSV has no upgrade edge to any newer bundle of its channel (v1: no
    /// bundle in range is a successor under upgradeConstraintPolicy CatalogProvided).
    UpgradeGap,
    /// A package or API the bundles require that no healthy visible catalog provides.
    DependencyMissing,
    /// Another operator of the namespace already provides an API the bundles provide.
    ApiOwnedTwice,
    /// The bundle's install modes do not allow the OperatorGroup's targets.
    InstallModeForbidden,
    /// The namespace has no OperatorGroup, or several.
    OperatorGroup,
    /// OLM's InstallPlan for the Subscription failed.
    InstallPlanFailed,
    /// Another Subscription's cause fails the whole namespace (OLM resolves it as one).
    BlockedByOther,
    /// The resolution fails for reasons the conflict list names.
    Unsatisfiable,
    /// v1: the catalog selector matches no ClusterCatalog.
    SelectorExcludesAll,
    /// v1: no bundle of the channels asked for has a version in the range.
    VersionRange,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionReport {
    pub name: String,
    pub package: String,
    pub channel: String,
    /// `namespace/name` of its CatalogSource.
    pub catalog: String,
    #[serde(rename = "installedCSV", skip_serializing_if = "String::is_empty")]
    pub installed_csv: String,
    pub verdict: Verdict,
    /// One sentence.
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<CauseKind>,
    /// The chain of facts behind the verdict, in order.
    pub facts: Vec<String>,
    /// The bundles OLM will install or upgrade to for it (dependencies included).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub next: Vec<NextBundle>,
    /// What OLM itself says on the Subscription.
    pub olm: OlmView,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NextBundle {
    pub name: String,
    pub version: String,
    pub channel: String,
    pub catalog: String,
    /// The installed CSV it replaces.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub from: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub because: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OlmView {
    /// `status.state`.
    pub state: String,
    #[serde(rename = "installPlan", skip_serializing_if = "String::is_empty")]
    pub install_plan: String,
    pub conditions: Vec<Condition>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl Condition {
    /// The `status.conditions` of an object.
    pub(crate) fn all_of(o: &Value) -> Vec<Condition> {
        o.pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| Condition {
                kind: field(c, "/type").to_owned(),
                status: field(c, "/status").to_owned(),
                reason: field(c, "/reason").to_owned(),
                message: field(c, "/message").to_owned(),
            })
            .collect()
    }
}

/// One ClusterExtension (OLM v1).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionReport {
    pub name: String,
    pub package: String,
    pub verdict: Verdict,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<CauseKind>,
    pub facts: Vec<String>,
    /// The bundle operator-controller will install or upgrade to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub next: Vec<NextBundle>,
    /// What operator-controller says: the ClusterExtension's conditions.
    pub conditions: Vec<Condition>,
}

/// The InstallPlan OLM will make for a namespace.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PlannedInstall {
    /// `spec.clusterServiceVersionNames`, sorted.
    #[serde(rename = "clusterServiceVersionNames")]
    pub csv_names: Vec<String>,
    /// The Subscriptions it creates for dependencies, sorted.
    pub new_subscriptions: Vec<String>,
    /// Bundle images it unpacks first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bundle_images: Vec<String>,
    /// How many objects it creates.
    pub steps: usize,
}

impl Report {
    /// The readable report.
    pub fn text(&self, verbose: bool) -> String {
        let mut out = String::new();
        for ns in &self.namespaces {
            namespace_text(&mut out, ns, verbose);
        }
        for e in &self.cluster_extensions {
            let _ = writeln!(
                out,
                "clusterextension {} ({}): {}",
                e.name,
                verdict_word(e.verdict),
                e.summary
            );
            for (i, f) in e.facts.iter().enumerate() {
                let _ = writeln!(out, "  {}. {f}", i + 1);
            }
            for c in e.conditions.iter().filter(|c| c.kind == "Progressing") {
                let _ = writeln!(
                    out,
                    "  operator-controller says: {} {}: {}",
                    c.kind, c.reason, c.message
                );
            }
        }
        if self.namespaces.is_empty() && self.cluster_extensions.is_empty() {
            out.push_str("no Subscriptions found\n");
        }
        if verbose {
            let _ = writeln!(out, "API calls: {}", self.api_calls);
        }
        out
    }
}

fn namespace_text(out: &mut String, ns: &NamespaceReport, verbose: bool) {
    let og = match ns.operator_group.as_str() {
        "" => "no single OperatorGroup".to_owned(),
        og => format!("OperatorGroup {og}"),
    };
    let _ = writeln!(out, "namespace {} ({og})", ns.namespace);
    if verbose {
        for c in &ns.catalogs {
            let read = match (c.read_from.as_str(), c.error.as_str()) {
                (_, e) if !e.is_empty() => format!("not read: {e}"),
                ("", _) => "not read".to_owned(),
                (from, _) => format!("read from {from}"),
            };
            let _ = writeln!(
                out,
                "  catalog {}/{}: {} ({read})",
                c.namespace,
                c.name,
                if c.state.is_empty() {
                    "no state"
                } else {
                    &c.state
                }
            );
        }
    }
    for w in &ns.warnings {
        let _ = writeln!(out, "  warning: {w}");
    }
    for s in &ns.subscriptions {
        let _ = writeln!(
            out,
            "\n  subscription {} ({}): {}",
            s.name,
            verdict_word(s.verdict),
            s.summary
        );
        for (i, f) in s.facts.iter().enumerate() {
            let _ = writeln!(out, "    {}. {f}", i + 1);
        }
        for b in &s.next {
            let from = match b.from.as_str() {
                "" => "install".to_owned(),
                f => format!("upgrade from {f}"),
            };
            let _ = writeln!(
                out,
                "    next: {} {} from {} channel {} ({from})",
                b.name, b.version, b.catalog, b.channel
            );
            for why in &b.because {
                let _ = writeln!(out, "      because {why}");
            }
        }
        for c in s.olm.conditions.iter().filter(|c| c.status == "True") {
            let _ = writeln!(out, "    OLM says: {} {}: {}", c.kind, c.reason, c.message);
        }
    }
    if let Some(plan) = &ns.install_plan {
        let _ = writeln!(
            out,
            "\n  next InstallPlan: {} ({} objects{})",
            plan.csv_names.join(", "),
            plan.steps,
            match plan.new_subscriptions.as_slice() {
                [] => String::new(),
                subs => format!("; new Subscriptions {}", subs.join(", ")),
            }
        );
    }
    out.push('\n');
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Progress => "will progress",
        Verdict::Current => "up to date",
        Verdict::Waiting => "waiting",
        Verdict::Stuck => "STUCK",
    }
}
