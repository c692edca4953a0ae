//! Turning a namespace's state into solver variables and constraints (resolution spec
//! §2.5–§2.7), with the admin-readable messages of §7.
//!
//! The variables reachable from the subscriptions and installed operators are found first,
//! as entry numbers with their provider lists; that walk is where every hard error of
//! §2.11 surfaces. The result is then handed to the solver either lazily (numbers only, for
//! the preference search) or as the full problem with identifiers and messages (for
//! explanations).
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use crate::solver::{self, Constraint, ConstraintKind, Variable};

use super::prepared::{SimpleRequirement, UniqueKey};
use super::request::{ClassicError, ClassicRequest, Subscription};
use super::universe::Universe;

/// A subscription's candidates in preference order (the installed CSV last, as "stay"), or
/// the reason it matches nothing.
enum Candidates {
    Found(Rc<[usize]>),
    None(String),
}

pub(crate) struct Builder<'u, 'p> {
    u: &'u Universe<'p>,
    namespace: &'u str,
    /// Per entry, its position in `order` (`usize::MAX`: not a variable).
    position: Vec<usize>,
    /// Entry variables in creation order; the ones from `next` on still need their
    /// requirements.
    order: Vec<usize>,
    next: usize,
    /// Per position in `order`, the providers of each requirement, in requirement order.
    dependencies: Vec<Vec<Rc<[usize]>>>,
    /// Subscription candidates replacing an installed CSV: that CSV, once per subscription.
    conflicts: HashMap<usize, Vec<usize>>,
    subscriptions: Vec<Candidates>,
    /// Catalog entries offered as an upgrade of an installed CSV: the CSV they replace.
    pub(crate) replaces: HashMap<usize, String>,
    /// Catalog entries offered through a subscription's `startingCSV`.
    pub(crate) starting_csv: HashMap<usize, String>,
    /// Providers of simple requirements by (requiring catalog, requirement): every version
    /// of a package tends to require the same APIs, and the candidates and their order
    /// depend on nothing else.
    provider_cache: HashMap<(usize, SimpleRequirement), Rc<[usize]>>,
}

const NONE: usize = usize::MAX;

impl<'u, 'p> Builder<'u, 'p> {
    /// Every reachable variable (§2.5), or the first hard error met on the way.
    pub(crate) fn build(
        u: &'u Universe<'p>,
        req: &'u ClassicRequest<'_>,
    ) -> Result<Builder<'u, 'p>, ClassicError> {
        let mut b = Builder {
            u,
            namespace: &req.namespace,
            position: vec![NONE; u.len()],
            order: Vec::new(),
            next: 0,
            dependencies: Vec::new(),
            conflicts: HashMap::new(),
            subscriptions: Vec::with_capacity(req.subscriptions.len()),
            replaces: HashMap::new(),
            starting_csv: HashMap::new(),
            provider_cache: HashMap::new(),
        };
        // Like OLM, a subscription whose channels cannot be ordered or whose reachable
        // bundles have broken requirements does not stop the others from being looked at:
        // every such error is reported, once each, in the order found.
        let mut errors: Vec<String> = Vec::new();
        let mut report = |e: ClassicError| match e {
            ClassicError::Invalid(message) if !errors.contains(&message) => errors.push(message),
            _ => {}
        };
        for s in &req.subscriptions {
            let candidates = match b.subscription(s)? {
                Ok(candidates) => candidates,
                Err(e) => {
                    report(e);
                    Candidates::Found(Rc::from([]))
                }
            };
            b.subscriptions.push(candidates);
        }
        for e in 0..u.part(0).entries.len() {
            b.var(e);
        }
        while b.next < b.order.len() {
            let e = b.order[b.next];
            b.next += 1;
            let found = b.requirements(e).unwrap_or_else(|e| {
                report(e);
                Vec::new()
            });
            b.dependencies.push(found);
        }
        match errors.as_slice() {
            [] => Ok(b),
            [one] => Err(ClassicError::Invalid(one.clone())),
            // Kubernetes' error aggregate, as OLM prints it.
            many => Err(ClassicError::Invalid(format!("[{}]", many.join(", ")))),
        }
    }

    /// Makes entry `e` a variable, once.
    fn var(&mut self, e: usize) {
        if self.position[e] == NONE {
            self.position[e] = self.order.len();
            self.order.push(e);
        }
    }

    /// The subscription's candidates (§2.6). The outer error stops the resolution at once;
    /// the inner one (a channel that cannot be ordered) is reported with the others.
    fn subscription(
        &mut self,
        s: &Subscription,
    ) -> Result<Result<Candidates, ClassicError>, ClassicError> {
        if s.source.is_empty() || s.source_namespace.is_empty() {
            return Err(ClassicError::Invalid(format!(
                "subscription {} must name its source catalog and the catalog's namespace",
                s.name
            )));
        }
        let current = self.current(s)?;
        let candidates = match self.candidates(s, current) {
            Ok(Ok(candidates)) => candidates,
            Ok(Err(reason)) => return Ok(Ok(Candidates::None(reason))),
            Err(e) => return Ok(Err(e)),
        };
        for &c in &candidates {
            self.var(c);
            if let Some(cur) = current {
                self.conflicts.entry(c).or_default().push(cur);
                self.replaces.insert(c, self.u.entry(cur).name.clone());
            } else if !s.starting_csv.is_empty() {
                self.starting_csv.insert(c, s.starting_csv.clone());
            }
        }
        let mut all = candidates;
        if let Some(cur) = current {
            self.var(cur);
            all.push(cur);
        }
        Ok(Ok(Candidates::Found(all.into())))
    }

    /// The installed CSV the subscription owns, if it is still there.
    fn current(&self, s: &Subscription) -> Result<Option<usize>, ClassicError> {
        if s.installed_csv.is_empty() {
            return Ok(None);
        }
        let matches: Vec<usize> = (0..self.u.part(0).entries.len())
            .filter(|&e| self.u.entry(e).name == s.installed_csv)
            .collect();
        match matches.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            many => Err(ClassicError::Invalid(format!(
                "multiple name matches for status.installedCSV of subscription {}/{}: {}",
                self.namespace,
                s.name,
                many.iter()
                    .map(|&e| self.u.entry(e).name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The catalog entries a subscription may select, in preference order, or the reason
    /// it matches nothing (the inner `Err`).
    fn candidates(
        &self,
        s: &Subscription,
        current: Option<usize>,
    ) -> Result<Result<Vec<usize>, String>, ClassicError> {
        let catalog = (1..self.u.catalogs.len()).find(|&c| {
            let info = &self.u.catalogs[c];
            info.name == s.source && info.namespace == s.source_namespace
        });
        let Some(catalog) = catalog.filter(|&c| !self.u.part(c).entries.is_empty()) else {
            return Ok(Err(format!(
                "no operators found from catalog {} in namespace {} referenced by subscription {}",
                s.source, s.source_namespace, s.name
            )));
        };
        let part = self.u.part(catalog);
        let in_package: Vec<usize> = part
            .package_groups
            .get(&s.package)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&g| !part.groups[g].entries.is_empty())
            .collect();
        if in_package.is_empty() {
            return Ok(Err(format!(
                "no operators found in package {} in the catalog referenced by subscription {}",
                s.package, s.name
            )));
        }
        let mut in_channel: Vec<usize> = in_package
            .into_iter()
            .filter(|&g| s.channel.is_empty() || part.groups[g].channel == s.channel)
            .collect();
        if in_channel.is_empty() {
            return Ok(Err(format!(
                "no operators found in channel {} of package {} in the catalog referenced by subscription {}",
                s.channel, s.package, s.name
            )));
        }
        let starting = (current.is_none() && !s.starting_csv.is_empty()).then_some(&s.starting_csv);
        if let Some(name) = starting
            && !in_channel
                .iter()
                .flat_map(|&g| &part.groups[g].entries)
                .any(|&e| part.entries[e].name == *name)
        {
            return Ok(Err(format!(
                "no operators found with name {name} in channel {} of package {} in the catalog referenced by subscription {}",
                s.channel, s.package, s.name
            )));
        }
        in_channel.sort_by(|&a, &b| {
            let (a, b) = (&part.groups[a], &part.groups[b]);
            b.default_channel
                .cmp(&a.default_channel)
                .then_with(|| a.channel.cmp(&b.channel))
        });
        let mut ordered = Vec::new();
        for g in in_channel {
            match starting {
                // OLM narrows the channel to the starting CSV before ordering it, so an
                // entry that a later one skips can still be started from.
                Some(name) => {
                    let named = part.groups[g]
                        .entries
                        .iter()
                        .copied()
                        .filter(|&e| part.entries[e].name == *name)
                        .collect();
                    ordered.extend(part.chain_of(g, named).map_err(ClassicError::Invalid)?);
                }
                None => ordered.extend_from_slice(
                    part.groups[g]
                        .chain
                        .as_ref()
                        .map_err(|e| ClassicError::Invalid(e.clone()))?,
                ),
            }
        }
        let kept: Vec<usize> = match current {
            Some(cur) => {
                let cur = self.u.entry(cur);
                ordered
                    .into_iter()
                    .filter(|&e| {
                        let e = &part.entries[e];
                        e.replaces == cur.name
                            || e.skips.contains(&cur.name)
                            || cur.version.as_ref().is_some_and(|v| {
                                e.skip_range_parsed.as_ref().is_some_and(|r| r.contains(v))
                            })
                    })
                    .collect()
            }
            None => ordered,
        };
        Ok(Ok(kept
            .into_iter()
            .map(|e| self.u.global(catalog, e))
            .collect()))
    }

    /// The providers of each requirement of entry `e` (§2.7), which become variables.
    fn requirements(&mut self, e: usize) -> Result<Vec<Rc<[usize]>>, ClassicError> {
        let u = self.u;
        let (own, _) = u.locate(e);
        let predicates = u
            .entry(e)
            .requirements
            .as_ref()
            .map_err(|err| ClassicError::Invalid(err.clone()))?;
        let mut found = Vec::with_capacity(predicates.len());
        for predicate in predicates {
            let key = SimpleRequirement::of(predicate).map(|r| (own, r));
            let providers = match key.as_ref().and_then(|k| self.provider_cache.get(k)) {
                Some(cached) => cached.clone(),
                None => {
                    let providers: Rc<[usize]> = u
                        .providers(own, predicate)
                        .map_err(ClassicError::Invalid)?
                        .into();
                    if let Some(key) = key {
                        self.provider_cache.insert(key, providers.clone());
                    }
                    providers
                }
            };
            for &p in providers.iter() {
                self.var(p);
            }
            found.push(providers);
        }
        Ok(found)
    }

    /// Variable number of subscription `i` in [`solver::lazy::Source`] terms.
    fn subscription_var(&self, i: usize) -> usize {
        self.u.len() + i
    }

    /// The selected catalog entries of a lazy solve, in variable creation order.
    pub(crate) fn selected_entries(&self, selected: &[usize]) -> Vec<usize> {
        let mut entries: Vec<usize> = selected
            .iter()
            .copied()
            .filter(|&v| v < self.u.len() && !self.u.is_existing(v))
            .collect();
        entries.sort_by_key(|&e| self.position[e]);
        entries
    }

    /// The whole problem in anchor order (§2.9): subscriptions in request order, then
    /// installed CSVs and uniqueness variables by identifier, then everything else; and
    /// the entry of every catalog variable's identifier.
    pub(crate) fn problem(
        &self,
        req: &ClassicRequest<'_>,
    ) -> (Vec<Variable>, HashMap<String, usize>) {
        let u = self.u;
        // Identifiers are named once per variable: dependency lists repeat them many times.
        let ids: Vec<String> = self.order.iter().map(|&e| u.id(e)).collect();
        let id_of = |e: usize| ids[self.position[e]].clone();
        let mut problem: Vec<Variable> = req
            .subscriptions
            .iter()
            .zip(&self.subscriptions)
            .map(|(s, candidates)| subscription_variable(&id_of, s, candidates))
            .collect();
        let mut installed = Vec::new();
        let mut others = Vec::new();
        let mut entries = HashMap::new();
        for (position, &e) in self.order.iter().enumerate() {
            let entry = u.entry(e);
            let id = id_of(e);
            let mut constraints = Vec::new();
            if u.is_existing(e) && !entry.owned {
                constraints.push(Constraint::with_message(
                    ConstraintKind::Mandatory,
                    format!(
                        "clusterserviceversion {} exists and is not referenced by a subscription",
                        entry.name
                    ),
                ));
            }
            if let Some(refusal) = u.refusal(e) {
                constraints.push(Constraint::with_message(
                    ConstraintKind::Prohibited,
                    refusal,
                ));
            }
            if entry.deprecated {
                constraints.push(Constraint::with_message(
                    ConstraintKind::Prohibited,
                    format!("bundle {id} is deprecated"),
                ));
            }
            let predicates = entry.requirements.iter().flatten();
            for (predicate, providers) in predicates.zip(&self.dependencies[position]) {
                constraints.push(Constraint::with_message(
                    ConstraintKind::Dependency(providers.iter().map(|&p| id_of(p)).collect()),
                    format!("bundle {} requires an operator {predicate}", entry.name),
                ));
            }
            for &cur in self.conflicts.get(&e).into_iter().flatten() {
                constraints.push(Constraint::new(ConstraintKind::Conflict(id_of(cur))));
            }
            if u.is_existing(e) {
                installed.push(Variable { id, constraints });
            } else {
                entries.insert(id.clone(), e);
                others.push(Variable { id, constraints });
            }
        }
        installed.sort_by(|a, b| a.id.cmp(&b.id));
        problem.extend(installed);
        problem.extend(self.uniqueness(&id_of));
        problem.extend(others);
        (problem, entries)
    }

    /// At most one provider per exact GVK and one entry per package (§2.5 invariants), for
    /// every group of two or more, in identifier order.
    fn uniqueness(&self, id_of: &impl Fn(usize) -> String) -> Vec<Variable> {
        let mut gvks: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        let mut packages: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for &e in &self.order {
            for key in &self.u.entry(e).unique {
                let (map, name) = match key {
                    UniqueKey::Gvk(id) => (&mut gvks, id),
                    UniqueKey::Package(name) => (&mut packages, name),
                };
                map.entry(name.as_str()).or_default().push(id_of(e));
            }
        }
        let group = |id: &str, mandatory: String, members: Vec<String>, verb: &str| {
            let mut members = members;
            members.sort();
            members.dedup();
            if members.len() < 2 {
                return None;
            }
            let (init, last) = members.split_at(members.len() - 1);
            let at_most = format!("{} and {} {verb}", init.join(", "), last[0]);
            Some(Variable {
                id: id.to_owned(),
                constraints: vec![
                    Constraint::with_message(ConstraintKind::Mandatory, mandatory),
                    Constraint::with_message(ConstraintKind::AtMost(1, members), at_most),
                ],
            })
        };
        let mut vars: Vec<Variable> = gvks
            .into_iter()
            .filter_map(|(id, members)| {
                let mandatory = format!("there can be only one provider of {id}");
                let verb = format!("provide {id}");
                group(id, mandatory, members, &verb)
            })
            .chain(packages.into_iter().filter_map(|(pkg, members)| {
                let mandatory = format!("there can be only one operator from package {pkg}");
                let verb = format!("originate from package {pkg}");
                group(pkg, mandatory, members, &verb)
            }))
            .collect();
        vars.sort_by(|a, b| a.id.cmp(&b.id));
        vars
    }
}

fn subscription_variable(
    id_of: &impl Fn(usize) -> String,
    s: &Subscription,
    candidates: &Candidates,
) -> Variable {
    let exists = Constraint::with_message(
        ConstraintKind::Mandatory,
        format!("subscription {} exists", s.name),
    );
    let requirement = match candidates {
        Candidates::None(reason) => {
            Constraint::with_message(ConstraintKind::Prohibited, reason.clone())
        }
        Candidates::Found(found) => {
            let ids: Vec<String> = found.iter().map(|&c| id_of(c)).collect();
            let message = match ids.as_slice() {
                [] => format!(
                    "no operators found matching the criteria of subscription {}",
                    s.name
                ),
                [only] => format!("subscription {} requires {only}", s.name),
                [init @ .., last] => format!(
                    "subscription {} requires at least one of {} or {last}",
                    s.name,
                    init.join(", ")
                ),
            };
            Constraint::with_message(ConstraintKind::Dependency(ids), message)
        }
    };
    Variable {
        id: format!("subscription:{}", s.name),
        constraints: vec![exists, requirement],
    }
}

/// Variables are numbered as entries (`0..u.len()`), then subscriptions in request order.
impl solver::lazy::Source for Builder<'_, '_> {
    type Key = UniqueKey;

    fn size(&self) -> usize {
        self.u.len() + self.subscriptions.len()
    }

    fn anchors(&self) -> Vec<usize> {
        let mut unowned: Vec<usize> = (0..self.u.part(0).entries.len())
            .filter(|&e| !self.u.entry(e).owned)
            .collect();
        // Installed identifiers differ only in the CSV name.
        unowned.sort_by(|&a, &b| self.u.entry(a).name.cmp(&self.u.entry(b).name));
        (0..self.subscriptions.len())
            .map(|i| self.subscription_var(i))
            .chain(unowned)
            .collect()
    }

    fn prohibited(&self, v: usize) -> bool {
        match v.checked_sub(self.u.len()) {
            Some(i) => matches!(self.subscriptions[i], Candidates::None(_)),
            None => self.u.entry(v).deprecated || self.u.is_refused(v),
        }
    }

    fn conflicts(&self, v: usize) -> &[usize] {
        self.conflicts.get(&v).map_or(&[], Vec::as_slice)
    }

    fn dependencies(&self, v: usize) -> Vec<&[usize]> {
        match v.checked_sub(self.u.len()) {
            Some(i) => match &self.subscriptions[i] {
                Candidates::Found(found) => vec![found],
                Candidates::None(_) => Vec::new(),
            },
            None => self.dependencies[self.position[v]]
                .iter()
                .map(|p| &p[..])
                .collect(),
        }
    }

    fn keys(&self, v: usize) -> &[UniqueKey] {
        if v < self.u.len() {
            &self.u.entry(v).unique
        } else {
            &[]
        }
    }
}
