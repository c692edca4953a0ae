//! One namespace explained: its resolution run as OLM's catalog operator would run it, and a
//! finding per Subscription.
use resolve::service::{Loaded, Outcome, resolve_request};
use serde_json::Value;

use crate::Error;
use crate::diagnose::{Context, Finding, Sub, Visible};
use crate::facts::Content;
use crate::load::Contents;
use crate::report::{
    CatalogReport, CauseKind, Condition, NamespaceReport, OlmView, PlannedInstall,
    SubscriptionReport, Verdict,
};
use crate::state::{Namespace, catalog_spec, field, target_namespaces};

/// Explains namespace `ns` (only Subscription `only`, when given).
pub(crate) fn explain(
    ns: &Namespace,
    global: &str,
    contents: &Contents,
    only: Option<&str>,
) -> Result<NamespaceReport, Error> {
    let mut catalogs = Vec::new();
    let mut visible = Vec::new();
    for source in ns.visible_sources(global) {
        let read = contents.by_key.get(&source.key());
        let error = match read.map(|r| &r.catalog) {
            Some(Err(e)) => e.clone(),
            _ => String::new(),
        };
        if source.healthy() && !error.is_empty() {
            return Err(Error::Catalog(format!(
                "CatalogSource {} is READY for OLM but explain cannot read it: {error}",
                source.key()
            )));
        }
        catalogs.push(CatalogReport {
            name: source.name.clone(),
            namespace: source.namespace.clone(),
            state: source.state.clone(),
            healthy: source.healthy(),
            read_from: read.map(|r| r.from.clone()).unwrap_or_default(),
            error,
        });
        visible.push(Visible {
            source,
            content: contents
                .catalog(&source.key())
                .map(|c| Content(c.content())),
        });
    }
    let ctx = Context { ns, visible };
    let block = ctx.namespace_block();
    let mut warnings = Vec::new();
    let outcome = match &block {
        Some(_) => None,
        None => resolve(ns, global, &ctx, contents, &mut warnings),
    };
    let outcome = outcome.as_ref();
    let mut subscriptions = Vec::new();
    for object in &ns.subscriptions {
        let s = Sub::new(object, &ns.name);
        if only.is_some_and(|o| o != s.name) {
            continue;
        }
        let finding = ctx
            .precheck(&s)
            .or_else(|| block.as_ref().map(|b| ctx.blocked(&s, b)))
            .or_else(|| csv_failure(ns, &s))
            .or_else(|| plan_state(ns, &s))
            .or_else(|| outcome.and_then(|o| ctx.after_resolution(&s, o)));
        subscriptions.push(report(&s, finding));
    }
    unexplained(&mut subscriptions, outcome, &warnings);
    let install_plan = outcome.and_then(|o| planned(ns, o));
    Ok(NamespaceReport {
        namespace: ns.name.clone(),
        operator_group: ns
            .operator_group()
            .map(|og| field(og, "/metadata/name").to_owned())
            .unwrap_or_default(),
        catalogs,
        subscriptions,
        install_plan,
        warnings,
    })
}

/// The resolution of the namespace from the catalogs OLM resolves from (READY, visible);
/// None, with a warning, when it cannot run at all.
fn resolve(
    ns: &Namespace,
    global: &str,
    ctx: &Context<'_>,
    contents: &Contents,
    warnings: &mut Vec<String>,
) -> Option<Outcome> {
    let usable: Vec<_> = ctx
        .visible
        .iter()
        .filter(|v| v.source.healthy())
        .filter_map(|v| Some((v.source, contents.catalog(&v.source.key())?)))
        .collect();
    let request = ns.request(
        global,
        usable
            .iter()
            .map(|(s, _)| catalog_spec(s, None, None))
            .collect(),
    );
    let loaded: Vec<Loaded> = usable.iter().map(|(_, c)| Ok((*c).clone())).collect();
    match resolve_request(&request, &loaded) {
        Ok(outcome) => Some(outcome),
        Err(e) => {
            warnings.push(format!("the namespace cannot be resolved: {e}"));
            None
        }
    }
}

/// A CSV of the Subscription that OLM installed and then failed because the OperatorGroup's
/// targets are outside its install modes.
fn csv_failure(ns: &Namespace, s: &Sub<'_>) -> Option<Finding> {
    let current = field(s.object, "/status/currentCSV");
    let csv = ns.own_csvs().find(|c| {
        let name = field(c, "/metadata/name");
        !name.is_empty() && (name == current || name == s.installed_csv)
    })?;
    if field(csv, "/status/reason") != "UnsupportedOperatorGroup" {
        return None;
    }
    let og = ns.operator_group()?;
    let targets = match target_namespaces(og).as_slice() {
        [] => "all namespaces".to_owned(),
        [one] if one.is_empty() => "all namespaces".to_owned(),
        list => format!("namespaces {}", list.join(", ")),
    };
    let modes: Vec<String> = csv
        .pointer("/spec/installModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| m.get("supported").and_then(Value::as_bool) == Some(true))
        .map(|m| field(m, "/type").to_owned())
        .collect();
    let name = field(csv, "/metadata/name");
    Some(Finding {
        verdict: Verdict::Stuck,
        cause: Some(CauseKind::InstallModeForbidden),
        summary: format!(
            "{name} cannot run under OperatorGroup {}: its install modes do not allow {targets}",
            field(og, "/metadata/name")
        ),
        facts: vec![
            format!(
                "OperatorGroup {} of namespace {} targets {targets}",
                field(og, "/metadata/name"),
                ns.name
            ),
            format!(
                "{name} supports only the install modes {}",
                if modes.is_empty() {
                    "(none)".to_owned()
                } else {
                    modes.join(", ")
                }
            ),
            format!("OLM failed {name}: {}", field(csv, "/status/message")),
        ],
        next: Vec::new(),
    })
}

/// The Subscription's InstallPlan, when it waits for approval or failed.
fn plan_state(ns: &Namespace, s: &Sub<'_>) -> Option<Finding> {
    let name = plan_name(s.object);
    let plan = ns
        .install_plans
        .iter()
        .find(|p| !name.is_empty() && field(p, "/metadata/name") == name)?;
    let csvs: Vec<&str> = plan
        .pointer("/spec/clusterServiceVersionNames")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match field(plan, "/status/phase") {
        "RequiresApproval" => Some(Finding {
            verdict: Verdict::Waiting,
            cause: None,
            summary: format!(
                "InstallPlan {name} ({}) waits for approval",
                csvs.join(", ")
            ),
            facts: vec![format!(
                "subscription {} has installPlanApproval Manual, and InstallPlan {name} has spec.approved false",
                s.name
            )],
            next: Vec::new(),
        }),
        "Failed" => {
            let message = plan
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|c| c.last())
                .map(|c| field(c, "/message").to_owned())
                .unwrap_or_default();
            Some(Finding {
                verdict: Verdict::Stuck,
                cause: Some(CauseKind::InstallPlanFailed),
                summary: format!("InstallPlan {name} ({}) failed", csvs.join(", ")),
                facts: vec![format!("OLM's InstallPlan {name} failed: {message}")],
                next: Vec::new(),
            })
        }
        _ => None,
    }
}

fn plan_name(sub: &Value) -> &str {
    match field(sub, "/status/installPlanRef/name") {
        "" => field(sub, "/status/installplan/name"),
        name => name,
    }
}

/// The report of one Subscription; one left without a finding is stuck in the namespace's
/// resolution, and [`unexplained`] fills it in.
fn report(s: &Sub<'_>, finding: Option<Finding>) -> SubscriptionReport {
    let f = finding.unwrap_or(Finding {
        verdict: Verdict::Stuck,
        cause: None,
        summary: String::new(),
        facts: Vec::new(),
        next: Vec::new(),
    });
    let conditions = Condition::all_of(s.object);
    SubscriptionReport {
        name: s.name.to_owned(),
        package: s.package.to_owned(),
        channel: s.channel.to_owned(),
        catalog: s.catalog_key(),
        installed_csv: s.installed_csv.to_owned(),
        verdict: f.verdict,
        summary: f.summary,
        cause: f.cause,
        facts: f.facts,
        next: f.next,
        olm: OlmView {
            state: field(s.object, "/status/state").to_owned(),
            install_plan: plan_name(s.object).to_owned(),
            conditions,
        },
    }
}

/// Subscriptions whose namespace does not resolve and that have no cause of their own: held
/// up by another's, or, when none has one, by the conflicts the resolver lists.
fn unexplained(subs: &mut [SubscriptionReport], outcome: Option<&Outcome>, warnings: &[String]) {
    let named: Vec<String> = subs
        .iter()
        .filter(|s| s.cause.is_some() && s.verdict == Verdict::Stuck)
        .map(|s| format!("subscription {} ({})", s.name, s.summary))
        .collect();
    let conflicts: Vec<String> = outcome
        .and_then(|o| o.unsatisfiable.clone())
        .unwrap_or_else(|| warnings.to_vec());
    for s in subs.iter_mut().filter(|s| s.summary.is_empty()) {
        if named.is_empty() {
            s.cause = Some(CauseKind::Unsatisfiable);
            s.summary = "OLM's resolution of the namespace has no answer".to_owned();
            s.facts = conflicts.clone();
        } else {
            s.cause = Some(CauseKind::BlockedByOther);
            s.summary = "OLM resolves the namespace as a whole, and another Subscription fails it"
                .to_owned();
            s.facts = named.clone();
        }
    }
}

/// The InstallPlan OLM makes next: the bundles the resolution installs or upgrades to.
fn planned(ns: &Namespace, outcome: &Outcome) -> Option<PlannedInstall> {
    let plan = outcome.install_plan.as_ref()?;
    let installed: Vec<&str> = ns.own_csvs().map(|c| field(c, "/metadata/name")).collect();
    let mut csv_names: Vec<String> = outcome
        .results
        .iter()
        .filter_map(|r| r.bundle.as_ref())
        .map(|b| b.name.clone())
        .filter(|n| !installed.contains(&n.as_str()))
        .collect();
    csv_names.sort();
    csv_names.dedup();
    if csv_names.is_empty() {
        return None;
    }
    let mut new_subscriptions: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| s.kind == "Subscription")
        .map(|s| s.name.clone())
        .collect();
    new_subscriptions.sort();
    Some(PlannedInstall {
        csv_names,
        new_subscriptions,
        bundle_images: plan.bundle_lookups.iter().map(|l| l.path.clone()).collect(),
        steps: plan.steps.len(),
    })
}
