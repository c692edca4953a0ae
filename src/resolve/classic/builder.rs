//! Turning a namespace's state into solver variables and constraints (resolution spec
//! §2.5–§2.7), with the admin-readable messages of §7.
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::catalog::property::{GVK, PACKAGE};
use crate::catalog::semver::Range;
use crate::resolve::predicate::Predicate;
use crate::resolve::solver::{Constraint, ConstraintKind, Variable};

use super::request::{ClassicError, ClassicRequest, Subscription};
use super::requirements::requirements;
use super::universe::{DEPRECATED, Universe};

/// The constraints of one entry variable, kept apart so they can be emitted in the order of
/// §2.5 whatever order they were found in.
#[derive(Default)]
struct EntryConstraints {
    fixed: Vec<Constraint>,
    dependencies: Vec<Constraint>,
    conflicts: Vec<Constraint>,
}

pub struct Builder<'u> {
    u: &'u Universe,
    namespace: &'u str,
    vars: HashMap<usize, EntryConstraints>,
    /// Entry variables in creation order.
    order: Vec<usize>,
    pending: VecDeque<usize>,
    replaces: HashMap<usize, String>,
    starting_csv: HashMap<usize, String>,
    /// Providers of simple requirements by (requiring catalog, requirement): every version
    /// of a package tends to require the same APIs, and the candidates and their order
    /// depend on nothing else.
    provider_cache: HashMap<(usize, SimpleRequirement), (Vec<usize>, Vec<String>)>,
}

/// A GVK, package-range or label requirement, compared structurally.
#[derive(PartialEq, Eq, Hash)]
enum SimpleRequirement {
    Gvk(String, String, String),
    Package(String, String),
    Label(String),
}

impl SimpleRequirement {
    fn of(predicate: &Predicate) -> Option<SimpleRequirement> {
        match predicate {
            Predicate::Gvk {
                group,
                version,
                kind,
            } => Some(SimpleRequirement::Gvk(
                group.clone(),
                version.clone(),
                kind.clone(),
            )),
            Predicate::Package {
                name, range_text, ..
            } => Some(SimpleRequirement::Package(name.clone(), range_text.clone())),
            Predicate::Label(label) => Some(SimpleRequirement::Label(label.clone())),
            _ => None,
        }
    }
}

/// The problem in anchor order (§2.9): subscriptions in request order, then installed CSVs
/// and uniqueness variables by identifier, then everything else.
pub struct Built {
    pub problem: Vec<Variable>,
    /// Solver identifier → entry index, for the entries of real catalogs.
    pub entries: HashMap<String, usize>,
    /// Catalog entries offered as an upgrade of an installed CSV: the CSV they replace.
    pub replaces: HashMap<usize, String>,
    /// Catalog entries offered through a subscription's `startingCSV`.
    pub starting_csv: HashMap<usize, String>,
}

impl<'u> Builder<'u> {
    pub fn build(u: &'u Universe, req: &'u ClassicRequest<'_>) -> Result<Built, ClassicError> {
        let b = Builder {
            u,
            namespace: &req.namespace,
            vars: HashMap::new(),
            order: Vec::new(),
            pending: VecDeque::new(),
            replaces: HashMap::new(),
            starting_csv: HashMap::new(),
            provider_cache: HashMap::new(),
        };
        b.problem(req)
    }

    fn problem(mut self, req: &ClassicRequest<'_>) -> Result<Built, ClassicError> {
        let subscriptions = req
            .subscriptions
            .iter()
            .map(|s| self.subscription(s))
            .collect::<Result<Vec<_>, _>>()?;
        for e in 0..self.u.entries.len() {
            if self.u.entries[e].is_existing() {
                self.var(e);
            }
        }
        while let Some(e) = self.pending.pop_front() {
            self.dependencies(e)?;
        }
        let mut problem = subscriptions;
        let mut installed = Vec::new();
        let mut others = Vec::new();
        let mut entries = HashMap::new();
        for &e in &self.order {
            let entry = &self.u.entries[e];
            let c = self.vars.remove(&e).unwrap_or_default();
            let variable = Variable {
                id: entry.id.clone(),
                constraints: c
                    .fixed
                    .into_iter()
                    .chain(c.dependencies)
                    .chain(c.conflicts)
                    .collect(),
            };
            if entry.is_existing() {
                installed.push(variable);
            } else {
                entries.insert(entry.id.clone(), e);
                others.push(variable);
            }
        }
        installed.sort_by(|a, b| a.id.cmp(&b.id));
        problem.extend(installed);
        problem.extend(self.uniqueness());
        problem.extend(others);
        Ok(Built {
            problem,
            entries,
            replaces: self.replaces,
            starting_csv: self.starting_csv,
        })
    }

    /// Creates the variable of entry `e` once, with its fixed constraints, and queues its
    /// requirements.
    fn var(&mut self, e: usize) -> &mut EntryConstraints {
        if !self.vars.contains_key(&e) {
            let entry = &self.u.entries[e];
            let mut fixed = Vec::new();
            if entry.is_existing() && !entry.owned {
                fixed.push(Constraint::with_message(
                    ConstraintKind::Mandatory,
                    format!(
                        "clusterserviceversion {} exists and is not referenced by a subscription",
                        entry.name
                    ),
                ));
            }
            if entry.properties.iter().any(|p| p.kind == DEPRECATED) {
                fixed.push(Constraint::with_message(
                    ConstraintKind::Prohibited,
                    format!("bundle {} is deprecated", entry.id),
                ));
            }
            self.vars.insert(
                e,
                EntryConstraints {
                    fixed,
                    ..Default::default()
                },
            );
            self.order.push(e);
            self.pending.push_back(e);
        }
        self.vars.entry(e).or_default()
    }

    /// The subscription's variable and its candidates (§2.6).
    fn subscription(&mut self, s: &Subscription) -> Result<Variable, ClassicError> {
        if s.source.is_empty() || s.source_namespace.is_empty() {
            return Err(ClassicError::Invalid(format!(
                "subscription {} must name its source catalog and the catalog's namespace",
                s.name
            )));
        }
        let exists = Constraint::with_message(
            ConstraintKind::Mandatory,
            format!("subscription {} exists", s.name),
        );
        let current = self.current(s)?;
        let candidates = match self.candidates(s, current)? {
            Ok(candidates) => candidates,
            Err(reason) => {
                return Ok(Variable {
                    id: format!("subscription:{}", s.name),
                    constraints: vec![
                        exists,
                        Constraint::with_message(ConstraintKind::Prohibited, reason),
                    ],
                });
            }
        };
        let mut ids = Vec::with_capacity(candidates.len() + 1);
        for &c in &candidates {
            ids.push(self.u.entries[c].id.clone());
            if let Some(cur) = current {
                let cur_id = self.u.entries[cur].id.clone();
                self.var(c)
                    .conflicts
                    .push(Constraint::new(ConstraintKind::Conflict(cur_id)));
                self.replaces.insert(c, self.u.entries[cur].name.clone());
            } else {
                self.var(c);
                if !s.starting_csv.is_empty() {
                    self.starting_csv.insert(c, s.starting_csv.clone());
                }
            }
        }
        if let Some(cur) = current {
            self.var(cur);
            ids.push(self.u.entries[cur].id.clone());
        }
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
        Ok(Variable {
            id: format!("subscription:{}", s.name),
            constraints: vec![
                exists,
                Constraint::with_message(ConstraintKind::Dependency(ids), message),
            ],
        })
    }

    /// The installed CSV the subscription owns, if it is still there.
    fn current(&self, s: &Subscription) -> Result<Option<usize>, ClassicError> {
        if s.installed_csv.is_empty() {
            return Ok(None);
        }
        let matches: Vec<usize> = (0..self.u.entries.len())
            .filter(|&e| {
                let entry = &self.u.entries[e];
                entry.is_existing() && entry.name == s.installed_csv
            })
            .collect();
        match matches.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            many => Err(ClassicError::Invalid(format!(
                "multiple name matches for status.installedCSV of subscription {}/{}: {}",
                self.namespace,
                s.name,
                many.iter()
                    .map(|&e| self.u.entries[e].name.as_str())
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
        let groups: Vec<usize> = catalog
            .map(|c| self.u.catalog_groups[c].clone())
            .unwrap_or_default();
        let non_empty = |g: &&usize| !self.u.groups[**g].entries.is_empty();
        if !groups.iter().any(|g| non_empty(&g)) {
            return Ok(Err(format!(
                "no operators found from catalog {} in namespace {} referenced by subscription {}",
                s.source, s.source_namespace, s.name
            )));
        }
        let in_package: Vec<usize> = groups
            .into_iter()
            .filter(|&g| self.u.groups[g].package == s.package)
            .filter(|g| non_empty(&g))
            .collect();
        if in_package.is_empty() {
            return Ok(Err(format!(
                "no operators found in package {} in the catalog referenced by subscription {}",
                s.package, s.name
            )));
        }
        let mut in_channel: Vec<usize> = in_package
            .into_iter()
            .filter(|&g| s.channel.is_empty() || self.u.groups[g].channel == s.channel)
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
                .flat_map(|&g| &self.u.groups[g].entries)
                .any(|&e| self.u.entries[e].name == *name)
        {
            return Ok(Err(format!(
                "no operators found with name {name} in channel {} of package {} in the catalog referenced by subscription {}",
                s.channel, s.package, s.name
            )));
        }
        in_channel.sort_by(|&a, &b| {
            let (a, b) = (&self.u.groups[a], &self.u.groups[b]);
            b.default_channel
                .cmp(&a.default_channel)
                .then_with(|| a.channel.cmp(&b.channel))
        });
        let mut ordered = Vec::new();
        for g in in_channel {
            ordered.extend_from_slice(self.u.chain(g).map_err(ClassicError::Invalid)?);
        }
        Ok(Ok(match (current, starting) {
            (Some(cur), _) => {
                let cur = &self.u.entries[cur];
                ordered
                    .into_iter()
                    .filter(|&e| {
                        let e = &self.u.entries[e];
                        e.replaces == cur.name
                            || e.skips.contains(&cur.name)
                            || cur.version.as_ref().is_some_and(|v| {
                                Range::parse(&e.skip_range).is_ok_and(|r| r.contains(v))
                            })
                    })
                    .collect()
            }
            (None, Some(name)) => ordered
                .into_iter()
                .filter(|&e| self.u.entries[e].name == *name)
                .collect(),
            (None, None) => ordered,
        }))
    }

    /// One `Dependency` per requirement of entry `e` (§2.7).
    fn dependencies(&mut self, e: usize) -> Result<(), ClassicError> {
        let entry = &self.u.entries[e];
        let predicates = requirements(&entry.properties).map_err(ClassicError::Invalid)?;
        for predicate in predicates {
            let key = SimpleRequirement::of(&predicate).map(|r| (entry.catalog, r));
            let (providers, ids) = match key.as_ref().and_then(|k| self.provider_cache.get(k)) {
                Some(cached) => cached.clone(),
                None => {
                    let providers = self.providers(e, &predicate)?;
                    let ids: Vec<String> = providers
                        .iter()
                        .map(|&p| self.u.entries[p].id.clone())
                        .collect();
                    if let Some(key) = key {
                        self.provider_cache
                            .insert(key, (providers.clone(), ids.clone()));
                    }
                    (providers, ids)
                }
            };
            let message = format!("bundle {} requires an operator {predicate}", entry.name);
            for &p in &providers {
                self.var(p);
            }
            self.var(e).dependencies.push(Constraint::with_message(
                ConstraintKind::Dependency(ids),
                message,
            ));
        }
        Ok(())
    }

    /// Every visible entry satisfying `predicate`, in the candidate order of §2.3–§2.4
    /// seen from entry `x`.
    fn providers(&self, x: usize, predicate: &Predicate) -> Result<Vec<usize>, ClassicError> {
        let own = self.u.entries[x].catalog;
        let mut catalogs: Vec<usize> = (0..self.u.catalogs.len()).collect();
        catalogs.sort_by_key(|&c| {
            let info = &self.u.catalogs[c];
            (
                c != 0,
                c != own,
                Reverse(info.priority),
                info.namespace != self.namespace,
                info.name.as_str(),
                info.namespace.as_str(),
            )
        });
        let mut rank = vec![0; catalogs.len()];
        for (position, &c) in catalogs.iter().enumerate() {
            rank[c] = position;
        }
        let satisfies = |e: &usize| predicate.matches(&self.u.entries[*e].subject());
        let mut groups: Vec<usize> = match self.u.index.candidates(predicate) {
            Some(candidates) => candidates
                .iter()
                .filter(|e| satisfies(e))
                .map(|&e| self.u.group_of[e])
                .collect(),
            None => (0..self.u.entries.len())
                .filter(satisfies)
                .map(|e| self.u.group_of[e])
                .collect(),
        };
        groups.sort_by_key(|&g| (rank[self.u.groups[g].catalog], self.u.group_rank[g]));
        groups.dedup();
        let mut providers = Vec::new();
        for g in groups {
            let chain = self.u.chain(g).map_err(ClassicError::Invalid)?;
            providers.extend(chain.iter().copied().filter(satisfies));
        }
        Ok(providers)
    }

    /// At most one provider per exact GVK and one entry per package (§2.5 invariants), for
    /// every group of two or more, in identifier order.
    fn uniqueness(&self) -> Vec<Variable> {
        let mut gvks: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
        let mut packages: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for &e in &self.order {
            let entry = &self.u.entries[e];
            for (p, value) in entry.properties.iter().zip(&entry.values) {
                let Some(value) = value else {
                    continue;
                };
                let field = |k: &str| value.get(k).and_then(|v| v.as_str()).unwrap_or_default();
                if p.kind == GVK {
                    let id = format!(
                        "{} ({}/{})",
                        field("kind"),
                        field("group"),
                        field("version")
                    );
                    gvks.entry(id.clone())
                        .or_insert_with(|| (id, Vec::new()))
                        .1
                        .push(entry.id.clone());
                } else if p.kind == PACKAGE {
                    packages
                        .entry(field("packageName").to_owned())
                        .or_default()
                        .push(entry.id.clone());
                }
            }
        }
        let group = |id: String, mandatory: String, members: Vec<String>, verb: &str| {
            let mut members = members;
            members.sort();
            members.dedup();
            if members.len() < 2 {
                return None;
            }
            let (init, last) = members.split_at(members.len() - 1);
            let at_most = format!("{} and {} {verb}", init.join(", "), last[0]);
            Some(Variable {
                id,
                constraints: vec![
                    Constraint::with_message(ConstraintKind::Mandatory, mandatory),
                    Constraint::with_message(ConstraintKind::AtMost(1, members), at_most),
                ],
            })
        };
        let mut vars: Vec<Variable> = gvks
            .into_values()
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
