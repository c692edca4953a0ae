//! What a resolution answers, in the shape of the CLI's `-o json|yaml` (the gRPC response
//! carries the same fields), and the readable report.
use std::fmt::Write as _;

use serde::Serialize;

use super::request::Mode;
use crate::classic::InstallPlan;

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub mode: Mode,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Classic: the whole namespace resolves or nothing does; these are the conflicting
    /// facts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsatisfiable: Option<Vec<String>>,
    pub results: Vec<Resolution>,
    /// About the whole resolution (a catalog that could not be reached, a path cut short).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// With a cluster version: whether the operators after this resolution block the
    /// cluster's next minor upgrade.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openshift: Option<OpenShift>,
    /// Classic, when the namespace resolves: what OLM's InstallPlan would hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install_plan: Option<InstallPlan>,
}

impl Outcome {
    pub fn resolved(&self) -> bool {
        self.unsatisfiable.is_none() && self.results.iter().all(|r| r.error.is_none())
    }
}

/// One subscription or v1 request, or one dependency the resolution adds.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    /// The subscription or v1 request; empty for a dependency.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub request: String,
    pub package: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<Chosen>,
    /// Classic: the installed CSV a subscription keeps because nothing newer fits.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub unchanged: String,
    /// Why no bundle was chosen (v1, or a catalog that could not be reached).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The upgrades that follow one another from the installed state, this one first, as
    /// long as each new resolution moves on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<Step>,
    /// Bundles of this package the safety checks ruled out, with the reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Chosen {
    pub name: String,
    pub version: String,
    /// Classic: the entry's channel; v1: the matching channels of the winning catalog.
    pub channel: String,
    pub catalog: String,
    pub image: String,
    /// The installed bundle this step upgrades from.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub from: String,
    #[serde(skip_serializing_if = "String::is_empty", rename = "startingCSV")]
    pub starting_csv: String,
    /// Classic dependencies: the requirements of chosen bundles it satisfies.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deprecation: String,
}

/// One step of an upgrade path.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Empty for an install.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub from: String,
    pub to: String,
    pub version: String,
    pub image: String,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OpenShift {
    pub cluster_version: String,
    pub upgrade_blocked: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<String>,
}

/// The readable report of the CLI.
pub fn report(outcome: &Outcome) -> String {
    let mut out = String::new();
    let scope = match outcome.mode {
        Mode::Classic => format!("classic resolution of namespace {}", outcome.namespace),
        Mode::V1 => "v1 resolution".to_string(),
    };
    for w in &outcome.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if let Some(messages) = &outcome.unsatisfiable {
        let _ = writeln!(
            out,
            "{scope}: no consistent set of operators exists, because:"
        );
        for m in messages {
            let _ = writeln!(out, "  - {m}");
        }
    } else if outcome.results.is_empty() {
        let _ = writeln!(out, "{scope}: nothing to install or upgrade");
    } else {
        let _ = writeln!(out, "{scope}:");
    }
    for r in &outcome.results {
        resolution_report(&mut out, outcome.mode, r);
    }
    if let Some(plan) = &outcome.install_plan {
        plan_report(&mut out, plan);
    }
    if let Some(o) = &outcome.openshift {
        let verdict = if o.upgrade_blocked {
            "blocked"
        } else {
            "not blocked"
        };
        let _ = writeln!(
            out,
            "\nOpenShift {}: the next minor upgrade is {verdict}",
            o.cluster_version
        );
        for b in &o.blockers {
            let _ = writeln!(out, "  - {b}");
        }
    }
    out
}

fn resolution_report(out: &mut String, mode: Mode, r: &Resolution) {
    let what = match (r.request.as_str(), mode) {
        ("", _) => "dependency".to_string(),
        (name, Mode::Classic) => format!("subscription {name}"),
        (name, Mode::V1) => format!("request {name}"),
    };
    let _ = writeln!(out, "\n{what} (package {})", r.package);
    if let Some(e) = &r.error {
        let _ = writeln!(out, "  no bundle: {e}");
    }
    if !r.unchanged.is_empty() {
        let _ = writeln!(out, "  no change:  stays at {}", r.unchanged);
    }
    if let Some(b) = &r.bundle {
        let _ = writeln!(out, "  bundle:     {} (version {})", b.name, b.version);
        let _ = writeln!(out, "  channel:    {}", b.channel);
        let _ = writeln!(out, "  catalog:    {}", b.catalog);
        let _ = writeln!(out, "  image:      {}", b.image);
        let step = if b.from.is_empty() {
            "install".to_string()
        } else {
            format!("upgrade {} -> {}", b.from, b.name)
        };
        let _ = writeln!(out, "  step:       {step}");
        if !b.starting_csv.is_empty() {
            let _ = writeln!(out, "  startingCSV: {}", b.starting_csv);
        }
        if r.path.len() > 1 {
            let names: Vec<&str> = r
                .path
                .first()
                .filter(|s| !s.from.is_empty())
                .map(|s| s.from.as_str())
                .into_iter()
                .chain(r.path.iter().map(|s| s.to.as_str()))
                .collect();
            let _ = writeln!(out, "  path:       {}", names.join(" -> "));
        }
        for why in &b.required_by {
            let _ = writeln!(out, "  because:    {why}");
        }
        if !b.deprecation.is_empty() {
            let _ = writeln!(out, "  deprecated: {}", b.deprecation);
        }
    }
    for refused in &r.refused {
        let _ = writeln!(out, "  refused:    {refused}");
    }
    for w in &r.warnings {
        let _ = writeln!(out, "  warning:    {w}");
    }
}

fn plan_report(out: &mut String, plan: &InstallPlan) {
    if plan.steps.is_empty() && plan.bundle_lookups.is_empty() {
        return;
    }
    let _ = writeln!(out, "\ninstall plan:");
    for l in &plan.bundle_lookups {
        let replaces = match l.replaces.as_str() {
            "" => String::new(),
            r => format!(", replaces {r}"),
        };
        let _ = writeln!(
            out,
            "  bundle lookup: {} from {} (catalog {}{replaces})",
            l.identifier, l.path, l.catalog
        );
    }
    for s in &plan.steps {
        let api = match s.group.as_str() {
            "" => s.version.clone(),
            group => format!("{group}/{}", s.version),
        };
        let _ = writeln!(
            out,
            "  step: {} {} ({api}) for {}",
            s.kind, s.name, s.resolving
        );
    }
    for u in &plan.updated_subscriptions {
        let installed = match u.installed_csv.as_str() {
            "" => String::new(),
            i => format!(" (installedCSV {i})"),
        };
        let _ = writeln!(
            out,
            "  subscription {}: currentCSV {}{installed}",
            u.name, u.current_csv
        );
    }
}
