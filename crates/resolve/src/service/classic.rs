//! A classic request: one resolution of the namespace, with bundles the cluster's state
//! rules out refused, then the same resolution repeated on the state each round leaves
//! behind, for the upgrade paths.
use std::collections::BTreeMap;

use crate::classic::{
    self, CatalogSource, ClassicError, ClassicRequest, InstalledCsv, PlanError, PreparedCatalog,
    Refusal, ResolvedOperator, Subscription, UpgradeStrategy,
};
use crate::predicate::{Subject, decode};
use crate::safety::{self, ClusterCrd, ClusterFacts};
use crate::solver::SolveError;
use catalog::semver::Version;
use catalog::types::Property;

use super::request::{CsvSpec, Request};
use super::{
    Catalog, Chosen, Error, Loaded, MAX_PATH_STEPS, Mode, OpenShift, Outcome, Resolution, Step,
};

/// The namespace as a round of resolution sees it.
#[derive(Clone)]
struct State {
    installed: Vec<InstalledCsv>,
    subscriptions: Vec<Subscription>,
    crds: Vec<ClusterCrd>,
}

/// The reachable catalogs, by (name, namespace).
struct Catalogs<'a> {
    sources: Vec<CatalogSource<'a>>,
    loaded: Vec<&'a Catalog>,
}

impl Catalogs<'_> {
    fn get(&self, name: &str, namespace: &str) -> Option<&Catalog> {
        self.sources
            .iter()
            .position(|s| s.name == name && s.namespace == namespace)
            .map(|i| self.loaded[i])
    }
}

/// One round's answer.
enum Round {
    Resolved {
        operators: Vec<ResolvedOperator>,
        /// (package, sentence) for every bundle the checks refused.
        refused: Vec<(String, String)>,
        /// (bundle, sentence) for checks that could not run.
        unchecked: Vec<(String, String)>,
    },
    Unsatisfiable(Vec<String>),
}

/// Resolves a classic request: the first round gives the answer and the install plan, the
/// rounds after it the upgrade paths.
pub(super) fn resolve_subscriptions(req: &Request, loaded: &[Loaded]) -> Result<Outcome, Error> {
    let mut outcome = Outcome {
        mode: Mode::Classic,
        namespace: req.namespace.clone(),
        unsatisfiable: None,
        results: Vec::new(),
        warnings: Vec::new(),
        openshift: None,
        install_plan: None,
    };
    let (catalogs, unavailable) = reachable_catalogs(req, loaded, &mut outcome.warnings);
    let (mut state, cut_off) = first_state(req, &unavailable);
    let facts = req.cluster.as_ref();
    let ctx = Context {
        namespace: &req.namespace,
        strategy: req.upgrade_strategy,
        facts,
        catalogs: &catalogs,
    };
    let (operators, refused, unchecked) = match ctx.round(&state).map_err(Error::Unresolvable)? {
        Round::Unsatisfiable(messages) => {
            outcome.unsatisfiable = Some(messages);
            outcome.results = cut_off;
            return Ok(outcome);
        }
        Round::Resolved {
            operators,
            refused,
            unchecked,
        } => (operators, refused, unchecked),
    };
    let plan = classic::install_plan(
        &req.namespace,
        &state.subscriptions,
        &state.installed,
        &operators,
        |op| match catalogs.get(&op.catalog, &op.catalog_namespace) {
            Some(c) => c.objects(&op.package, &op.channel, &op.name),
            None => Ok(Vec::new()),
        },
    )
    // Manifests that could not be fetched keep their kind (a catalog server that fails to
    // send them is no fault of the request or of the catalogs).
    .map_err(|e| match &e {
        PlanError::Objects(cause) => cause.reworded(e.to_string()),
        PlanError::Manifests(_) => Error::Unresolvable(e.to_string()),
    })?;
    outcome.install_plan = Some(plan);
    let followed = ctx
        .results(req, &state, &operators, &mut outcome.results)
        .map_err(Error::Unresolvable)?;
    for s in &state.subscriptions {
        if !outcome.results.iter().any(|r| r.request == s.name) {
            outcome.results.push(Resolution {
                request: s.name.clone(),
                package: s.package.clone(),
                unchanged: s.installed_csv.clone(),
                ..Resolution::default()
            });
        }
    }
    outcome.results.extend(cut_off);
    attach_findings(&mut outcome, refused, unchecked);

    let mut paths: BTreeMap<String, Vec<Step>> = BTreeMap::new();
    ctx.apply(&mut state, &operators, &mut paths);
    // The cluster's upgrade is judged on the state this resolution leaves, before the
    // later rounds.
    if let Some(version) = facts.map(|f| f.openshift_version.as_str())
        && !version.is_empty()
    {
        outcome.openshift = Some(openshift(version, &state.installed)?);
    }
    ctx.later_rounds(&mut state, &mut paths, &mut outcome.warnings);
    for (r, sub) in outcome.results.iter_mut().zip(&followed) {
        r.path = paths.remove(sub).unwrap_or_default();
    }
    Ok(outcome)
}

/// The catalogs the request may resolve from and could load, and, by (name, namespace),
/// why the others that it may resolve from could not be loaded; a warning for each left out.
fn reachable_catalogs<'a>(
    req: &Request,
    loaded: &'a [Loaded],
    warnings: &mut Vec<String>,
) -> (Catalogs<'a>, BTreeMap<(String, String), String>) {
    let mut catalogs = Catalogs {
        sources: Vec::new(),
        loaded: Vec::new(),
    };
    let mut unavailable = BTreeMap::new();
    for (spec, catalog) in req.catalogs.iter().zip(loaded) {
        let namespace = req.catalog_namespace(spec);
        if !req.resolves_from(spec) {
            warnings.push(format!(
                "catalog {}/{namespace} is not visible from namespace {}: {}",
                spec.name,
                req.namespace,
                visibility_rule(req)
            ));
            continue;
        }
        match catalog {
            Ok(c) => {
                catalogs.sources.push(CatalogSource {
                    name: spec.name.clone(),
                    namespace,
                    priority: spec.priority,
                    content: &c.content,
                });
                catalogs.loaded.push(c);
            }
            Err(e) => {
                warnings.push(format!(
                    "catalog {}/{namespace} is left out: {e}",
                    spec.name
                ));
                unavailable.insert((spec.name.clone(), namespace), e.clone());
            }
        }
    }
    (catalogs, unavailable)
}

/// The namespace as the request gives it, and a result for each subscription whose catalog
/// could not be read: it is not resolved, its CSV stays as it is (unowned, hence kept), and
/// the others go ahead.
fn first_state(
    req: &Request,
    unavailable: &BTreeMap<(String, String), String>,
) -> (State, Vec<Resolution>) {
    let mut state = State {
        installed: req.installed.iter().map(installed_csv).collect(),
        subscriptions: Vec::new(),
        crds: req
            .cluster
            .as_ref()
            .map(|c| c.crds.clone())
            .unwrap_or_default(),
    };
    let mut cut_off = Vec::new();
    for s in &req.subscriptions {
        let sub = Subscription {
            name: s.name.clone(),
            package: s.package.clone(),
            channel: s.channel.clone(),
            source: s.source.clone(),
            source_namespace: if s.source_namespace.is_empty() {
                req.namespace.clone()
            } else {
                s.source_namespace.clone()
            },
            starting_csv: s.starting_csv.clone(),
            installed_csv: s.installed_csv.clone(),
            current_csv: s.current_csv.clone(),
        };
        match unavailable.get(&(sub.source.clone(), sub.source_namespace.clone())) {
            Some(e) => cut_off.push(Resolution {
                request: s.name.clone(),
                package: s.package.clone(),
                unchanged: s.installed_csv.clone(),
                error: Some(format!(
                    "its catalog {}/{} cannot be read: {e}",
                    sub.source, sub.source_namespace
                )),
                ..Resolution::default()
            }),
            None => state.subscriptions.push(sub),
        }
    }
    (state, cut_off)
}

/// Files each refusal under the result of its package and each check that could not run
/// under the result of its bundle; what has no result goes to the outcome's warnings.
fn attach_findings(
    outcome: &mut Outcome,
    refused: Vec<(String, String)>,
    unchecked: Vec<(String, String)>,
) {
    for (package, sentence) in refused {
        match outcome.results.iter_mut().find(|r| r.package == package) {
            Some(r) => r.refused.push(sentence),
            None => outcome.warnings.push(sentence),
        }
    }
    for (bundle, sentence) in unchecked {
        match outcome
            .results
            .iter_mut()
            .find(|r| r.bundle.as_ref().is_some_and(|b| b.name == bundle))
        {
            Some(r) => r.warnings.push(sentence),
            None => outcome.warnings.push(sentence),
        }
    }
}

struct Context<'a> {
    namespace: &'a str,
    strategy: UpgradeStrategy,
    facts: Option<&'a ClusterFacts>,
    catalogs: &'a Catalogs<'a>,
}

impl Context<'_> {
    /// Resolves the namespace in `state`; with cluster facts, a chosen bundle that fails a
    /// check is refused and the namespace resolved again, until every chosen bundle passes
    /// (refusing a bundle the resolver did not choose would not change its answer).
    fn round(&self, state: &State) -> Result<Round, String> {
        let mut refusals: Vec<Refusal> = Vec::new();
        let mut refused = Vec::new();
        let mut unchecked = Vec::new();
        loop {
            let request = ClassicRequest {
                namespace: self.namespace.to_owned(),
                catalogs: self.catalogs.sources.clone(),
                installed: state.installed.clone(),
                subscriptions: state.subscriptions.clone(),
                upgrade_strategy: self.strategy,
                refused: refusals.clone(),
            };
            let prepared: Vec<&PreparedCatalog> =
                self.catalogs.loaded.iter().map(|c| c.prepared()).collect();
            let operators = match classic::resolve_prepared(&request, &prepared) {
                Ok(operators) => operators,
                Err(ClassicError::Unsatisfiable(SolveError::Unsatisfiable { mut messages })) => {
                    // One bundle in several channels is several constraints with the same
                    // words; an admin needs the fact once (the messages come sorted).
                    messages.dedup();
                    return Ok(Round::Unsatisfiable(messages));
                }
                Err(e) => return Err(e.to_string()),
            };
            let Some(facts) = self.facts else {
                return Ok(Round::Resolved {
                    operators,
                    refused,
                    unchecked,
                });
            };
            let new = self.check(facts, state, &operators, &mut refused, &mut unchecked);
            if new.is_empty() {
                return Ok(Round::Resolved {
                    operators,
                    refused,
                    unchecked,
                });
            }
            refusals.extend(new);
        }
    }

    /// Runs the safety checks on the chosen operators: a refusal for each that fails one
    /// (also recorded as a sentence under its package in `refused`), and in `unchecked` a
    /// sentence for each whose manifests could not be read.
    fn check(
        &self,
        facts: &ClusterFacts,
        state: &State,
        operators: &[ResolvedOperator],
        refused: &mut Vec<(String, String)>,
        unchecked: &mut Vec<(String, String)>,
    ) -> Vec<Refusal> {
        let mut new = Vec::new();
        for op in operators {
            let Some(catalog) = self.catalogs.get(&op.catalog, &op.catalog_namespace) else {
                continue;
            };
            let manifests = match catalog.bundle_manifests(&op.package, &op.channel, &op.name) {
                Ok(m) => m,
                Err(e) => {
                    unchecked.push((
                        op.name.clone(),
                        format!(
                            "{}: the safety checks could not read its manifests: {e}",
                            op.name
                        ),
                    ));
                    continue;
                }
            };
            let mut reasons = Vec::new();
            if let Some(og) = &facts.operator_group
                && let Some(r) = safety::install_mode_refusal(&manifests, self.namespace, og)
            {
                reasons.push(r);
            }
            reasons.extend(safety::crd_refusals(&manifests, &state.crds));
            if !reasons.is_empty() {
                let reason = reasons.join("; ");
                refused.push((
                    op.package.clone(),
                    format!(
                        "{} from {}/{}: {reason}",
                        op.name, op.catalog, op.catalog_namespace
                    ),
                ));
                new.push(Refusal {
                    catalog: op.catalog.clone(),
                    catalog_namespace: op.catalog_namespace.clone(),
                    bundle: op.name.clone(),
                    reason,
                });
            }
        }
        new
    }

    /// Installs `operators` into `state` as OLM would: each replaces its subscription's
    /// CSV, and a dependency gets the subscription OLM creates for it. Each step goes to
    /// the path of the subscription that took it.
    fn apply(
        &self,
        state: &mut State,
        operators: &[ResolvedOperator],
        paths: &mut BTreeMap<String, Vec<Step>>,
    ) {
        for op in operators {
            let from = match state.subscriptions.iter_mut().find(|s| op.followed_by(s)) {
                Some(s) => {
                    let from = std::mem::replace(&mut s.installed_csv, op.name.clone());
                    s.current_csv = op.name.clone();
                    s.starting_csv.clear();
                    paths
                        .entry(s.name.clone())
                        .or_default()
                        .push(step(&from, op));
                    from
                }
                None => {
                    let name = op.generated_subscription();
                    paths.entry(name.clone()).or_default().push(step("", op));
                    state.subscriptions.push(Subscription {
                        name,
                        package: op.package.clone(),
                        channel: op.channel.clone(),
                        source: op.catalog.clone(),
                        source_namespace: op.catalog_namespace.clone(),
                        starting_csv: String::new(),
                        installed_csv: op.name.clone(),
                        current_csv: op.name.clone(),
                    });
                    String::new()
                }
            };
            state.installed.retain(|c| c.name != from);
            state.installed.push(InstalledCsv {
                name: op.name.clone(),
                version: op.version.clone(),
                replaces: op.replaces.clone(),
                phase: "Succeeded".to_owned(),
                properties: Some(op.properties.clone()),
                provided_apis: Vec::new(),
                required_apis: Vec::new(),
            });
            if self.facts.is_some()
                && let Some(catalog) = self.catalogs.get(&op.catalog, &op.catalog_namespace)
                && let Ok(manifests) = catalog.bundle_manifests(&op.package, &op.channel, &op.name)
            {
                safety::apply_crds(&mut state.crds, &manifests);
            }
        }
    }

    /// The rounds after the first, for the paths: each starts from the state the previous
    /// one leaves, until nothing moves, a round fails (a warning says where the paths stop)
    /// or the paths reach their length limit.
    fn later_rounds(
        &self,
        state: &mut State,
        paths: &mut BTreeMap<String, Vec<Step>>,
        warnings: &mut Vec<String>,
    ) {
        for round in 1..MAX_PATH_STEPS {
            let operators = match self.round(state) {
                Ok(Round::Resolved { operators, .. }) if operators.is_empty() => break,
                Ok(Round::Resolved { operators, .. }) => operators,
                Ok(Round::Unsatisfiable(messages)) => {
                    warnings.push(format!(
                        "the upgrade paths stop after {round} step(s): the next resolution has no consistent set ({})",
                        messages.join("; ")
                    ));
                    break;
                }
                Err(e) => {
                    warnings.push(format!("the upgrade paths stop after {round} step(s): {e}"));
                    break;
                }
            };
            self.apply(state, &operators, paths);
        }
    }

    /// A result for each chosen operator, with the requirements it satisfies when it is a
    /// dependency and its API conflicts with other operator groups; returns the
    /// subscription each result follows in later rounds.
    fn results(
        &self,
        req: &Request,
        state: &State,
        operators: &[ResolvedOperator],
        results: &mut Vec<Resolution>,
    ) -> Result<Vec<String>, String> {
        let required_by = dependency_reasons(operators)?;
        let mut followed = Vec::new();
        for (op, why) in operators.iter().zip(required_by) {
            let subscription = state.subscriptions.iter().find(|s| op.followed_by(s));
            let mut r = Resolution {
                request: subscription.map(|s| s.name.clone()).unwrap_or_default(),
                package: op.package.clone(),
                bundle: Some(chosen(op, subscription, why)),
                ..Resolution::default()
            };
            if let Some(facts) = self.facts
                && let Some(og) = &facts.operator_group
            {
                let own = safety::OperatorGroup {
                    namespace: if og.namespace.is_empty() {
                        req.namespace.clone()
                    } else {
                        og.namespace.clone()
                    },
                    ..og.clone()
                };
                r.warnings.extend(
                    safety::api_conflicts(&op.properties, &own, &facts.other_operator_groups)
                        .into_iter()
                        .map(|w| format!("{}: {w}", op.name)),
                );
            }
            followed.push(
                subscription
                    .map(|s| s.name.clone())
                    .unwrap_or_else(|| op.generated_subscription()),
            );
            results.push(r);
        }
        Ok(followed)
    }
}

/// The bundle chosen for `op`; `why` are the requirements it satisfies, shown for a
/// dependency (one without a subscription of its own).
fn chosen(op: &ResolvedOperator, subscription: Option<&Subscription>, why: Vec<String>) -> Chosen {
    Chosen {
        name: op.name.clone(),
        version: op.version.clone(),
        channel: op.channel.clone(),
        catalog: format!("{}/{}", op.catalog, op.catalog_namespace),
        image: op.bundle_path.clone(),
        // The resolver reports the installed CSV an upgrade replaces as `replaces`.
        from: subscription
            .filter(|s| !s.installed_csv.is_empty() && s.installed_csv == op.replaces)
            .map(|s| s.installed_csv.clone())
            .unwrap_or_default(),
        starting_csv: op.starting_csv.clone().unwrap_or_default(),
        required_by: if subscription.is_some() {
            Vec::new()
        } else {
            why
        },
        deprecation: String::new(),
    }
}

/// Why OLM sees only some catalogs, for the warning about one it does not see.
fn visibility_rule(req: &Request) -> String {
    if req.exclude_global_namespace_resolution {
        format!(
            "OLM resolves only from catalogs of the namespace itself (its OperatorGroup excludes the global catalog namespace {})",
            req.global_namespace
        )
    } else {
        format!(
            "OLM resolves only from catalogs of the namespace itself and of the global catalog namespace {}",
            req.global_namespace
        )
    }
}

fn step(from: &str, op: &ResolvedOperator) -> Step {
    Step {
        from: from.to_owned(),
        to: op.name.clone(),
        version: op.version.clone(),
        image: op.bundle_path.clone(),
    }
}

fn installed_csv(c: &CsvSpec) -> InstalledCsv {
    InstalledCsv {
        name: c.name.clone(),
        version: c.version.clone(),
        replaces: c.replaces.clone(),
        phase: c.phase.clone(),
        properties: c.properties.as_ref().map(|ps| {
            ps.iter()
                .map(|p| Property {
                    kind: p.kind.clone(),
                    value: p.value.to_string(),
                })
                .collect()
        }),
        provided_apis: c.provided_apis.clone(),
        required_apis: c.required_apis.clone(),
    }
}

/// Whether the namespace's operators, once resolved, block the next minor upgrade.
fn openshift(version: &str, installed: &[InstalledCsv]) -> Result<OpenShift, Error> {
    let operators: Vec<(&str, &[Property])> = installed
        .iter()
        .map(|c| (c.name.as_str(), c.properties.as_deref().unwrap_or_default()))
        .collect();
    OpenShift::judge(Mode::Classic, version, &operators)
}

/// For each operator, the requirements of the other chosen operators it satisfies, worded
/// as the resolver's own messages (§7).
fn dependency_reasons(operators: &[ResolvedOperator]) -> Result<Vec<Vec<String>>, String> {
    let requirements = operators
        .iter()
        .map(|op| classic::requirements(&op.properties))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(operators
        .iter()
        .map(|op| {
            let version = Version::parse_tolerant(&op.version).ok();
            let values = decode(&op.properties);
            let subject = Subject {
                package: &op.package,
                version: version.as_ref(),
                properties: &op.properties,
                values: &values,
            };
            operators
                .iter()
                .zip(&requirements)
                .filter(|(other, _)| other.name != op.name)
                .flat_map(|(other, predicates)| {
                    predicates
                        .iter()
                        .filter(|p| p.matches(&subject))
                        .map(move |p| format!("bundle {} requires an operator {p}", other.name))
                })
                .collect()
        })
        .collect())
}
