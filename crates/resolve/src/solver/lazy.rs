//! The preference search of §2.9 over a problem whose clauses are added only for the
//! variables the search reaches, so that a large catalog costs what the answer touches, not
//! what the catalog holds.
//!
//! A variable's own constraints (prohibitions, conflicts, uniqueness) are encoded when it is
//! first mentioned; its dependencies only once it is true in a model or chosen. The encoded
//! formula is thus implied by the full one: "unsatisfiable" is exact, and a model in which
//! every true variable has its dependencies encoded extends, with every other variable false,
//! to a model of the full formula (a false variable satisfies all its constraints, and only
//! anchors are mandatory). Each check encodes the dependencies of the true variables that
//! lack them and solves again until that holds, so every check answers exactly as a check of
//! the full formula would, and the search returns the same selection. Unsatisfiable problems
//! are left to [`super::solve`], whose explanation needs the whole problem.
//!
//! Most checks need no solver call at all: giving every open dependency its first candidate
//! that fits (not prohibited, no conflict, its uniqueness groups still free) usually ends in
//! a selection that satisfies every constraint, which proves the check. Where plain first-fit
//! gets stuck (say two dependents want different versions of one package), the same walk
//! preferring the candidates of the last witness, which already settles that conflict,
//! usually succeeds; and a solver model whose true variables still lack their dependencies is
//! completed the same way before anything more is encoded. Only when every walk gets stuck
//! does the solver decide.
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use varisat::{ExtendFormula, Lit, Solver};

use super::SolveError;

/// A problem seen variable by variable; variables are numbered `0..size()`.
pub(crate) trait Source {
    /// Names an at-most-one group.
    type Key: Hash + Eq + Clone;
    fn size(&self) -> usize;
    /// The mandatory variables, in the order the search decides them.
    fn anchors(&self) -> Vec<usize>;
    fn prohibited(&self, v: usize) -> bool;
    /// Variables that may not be selected together with `v`.
    fn conflicts(&self, v: usize) -> &[usize];
    /// `v`'s dependencies, in constraint order, each with its candidates in preference order.
    fn dependencies(&self, v: usize) -> Vec<&[usize]>;
    /// The groups `v` belongs to, of which at most one member may be selected.
    fn keys(&self, v: usize) -> &[Self::Key];
}

/// The selected variables, in number order, or `None` when no selection satisfies the
/// problem.
pub(crate) fn solve<S: Source>(source: &S) -> Result<Option<Vec<usize>>, SolveError> {
    let mut enc = Lazy {
        source,
        solver: Solver::new(),
        lits: vec![None; source.size()],
        expanded: vec![false; source.size()],
        mentioned: Vec::new(),
        last: HashMap::new(),
        witness: Vec::new(),
    };
    let anchors = source.anchors();
    for &a in &anchors {
        let x = enc.lit(a);
        enc.solver.add_clause(&[x]);
        enc.expand(a);
    }
    if !enc.greedy(&anchors) && !enc.check(&[], &anchors)? {
        return Ok(None);
    }
    let mut selected = vec![false; source.size()];
    let mut assumed = anchors.clone();
    let mut assumptions = Vec::new();
    let mut queue: VecDeque<Vec<usize>> = anchors.iter().map(|&a| vec![a]).collect();
    while let Some(choice) = queue.pop_front() {
        if choice.iter().any(|&c| selected[c]) {
            continue;
        }
        for &c in &choice {
            let lit = enc.lit(c);
            assumptions.push(lit);
            assumed.push(c);
            // The last witness, or a new one, shows that the candidate is consistent.
            if enc.witness[c] || enc.greedy(&assumed) || enc.check(&assumptions, &assumed)? {
                selected[c] = true;
                queue.extend(source.dependencies(c).into_iter().map(<[usize]>::to_vec));
                break;
            }
            assumptions.pop();
            assumed.pop();
        }
    }
    Ok(Some((0..source.size()).filter(|&v| selected[v]).collect()))
}

struct Lazy<'s, S: Source> {
    source: &'s S,
    solver: Solver<'static>,
    lits: Vec<Option<Lit>>,
    /// Whether the variable's dependencies are encoded.
    expanded: Vec<bool>,
    /// Variables with a literal, in order of first mention.
    mentioned: Vec<usize>,
    /// Per at-most-one group, the "some member so far is selected" literal of the sequential
    /// counter, extended one member at a time.
    last: HashMap<S::Key, Lit>,
    /// A selection satisfying the full problem with every assumption so far, as "is
    /// variable v selected".
    witness: Vec<bool>,
}

impl<S: Source> Lazy<'_, S> {
    /// The literal of `v`, encoding its own constraints on first mention.
    fn lit(&mut self, v: usize) -> Lit {
        if let Some(x) = self.lits[v] {
            return x;
        }
        let x = self.solver.new_lit();
        self.lits[v] = Some(x);
        self.mentioned.push(v);
        if self.source.prohibited(v) {
            self.solver.add_clause(&[!x]);
        }
        for &y in self.source.conflicts(v) {
            let y = self.lit(y);
            self.solver.add_clause(&[!x, !y]);
        }
        let mut keys: Vec<&S::Key> = Vec::new();
        for key in self.source.keys(v) {
            // A variable listed twice in a group is still one selection.
            if keys.contains(&key) {
                continue;
            }
            keys.push(key);
            let some = self.solver.new_lit();
            self.solver.add_clause(&[!x, some]);
            if let Some(&before) = self.last.get(key) {
                self.solver.add_clause(&[!before, some]);
                self.solver.add_clause(&[!before, !x]);
            }
            self.last.insert(key.clone(), some);
        }
        x
    }

    fn expand(&mut self, v: usize) {
        if std::mem::replace(&mut self.expanded[v], true) {
            return;
        }
        let x = self.lit(v);
        for candidates in self.source.dependencies(v) {
            let mut clause = Vec::with_capacity(candidates.len() + 1);
            clause.push(!x);
            for &c in candidates {
                clause.push(self.lit(c));
            }
            self.solver.add_clause(&clause);
        }
    }

    /// Looks for a selection containing `seeds` in which every selected variable has a
    /// selected candidate for each dependency, first taking for each open dependency its
    /// first candidate that fits, then, if that gets stuck, its first fitting candidate
    /// selected by the last witness (which already settles the conflicts that first-fit
    /// runs into). On success the selection becomes the witness; failure proves nothing.
    fn greedy(&mut self, seeds: &[usize]) -> bool {
        let found = complete(self.source, seeds, None)
            .or_else(|| complete(self.source, seeds, Some(&self.witness)));
        match found {
            Some(found) => {
                self.witness = found;
                true
            }
            None => false,
        }
    }

    /// Whether the full formula holds together with `assumptions` (the literals of `seeds`
    /// that are not anchors); on success the model, or a completion of it, becomes the
    /// witness.
    fn check(&mut self, assumptions: &[Lit], seeds: &[usize]) -> Result<bool, SolveError> {
        loop {
            self.solver.assume(assumptions);
            let sat = self
                .solver
                .solve()
                .map_err(|e| SolveError::Internal(e.to_string()))?;
            if !sat {
                return Ok(false);
            }
            let mut values = Vec::new();
            for lit in self.solver.model().unwrap_or_default() {
                let i = lit.index();
                if values.len() <= i {
                    values.resize(i + 1, false);
                }
                values[i] = lit.is_positive();
            }
            let mut model = vec![false; self.source.size()];
            for &v in &self.mentioned {
                model[v] =
                    self.lits[v].is_some_and(|x| values.get(x.index()).copied().unwrap_or(false));
            }
            let open: Vec<usize> = self
                .mentioned
                .iter()
                .copied()
                .filter(|&v| model[v] && !self.expanded[v])
                .collect();
            if open.is_empty() {
                self.witness = model;
                return Ok(true);
            }
            // The model settles the conflicts met so far: completing its open part first-fit
            // usually proves the check without encoding more and solving again.
            if let Some(found) = complete(self.source, seeds, Some(&model)) {
                self.witness = found;
                return Ok(true);
            }
            for v in open {
                self.expand(v);
            }
        }
    }
}

/// A selection containing `seeds` in which every selected variable has a selected candidate
/// for each dependency, found by taking for each open dependency its first candidate that
/// fits (not prohibited, no conflict, its groups still free), trying first the ones `guide`
/// selects; `None` when that gets stuck, which proves nothing.
fn complete<S: Source>(source: &S, seeds: &[usize], guide: Option<&[bool]>) -> Option<Vec<bool>> {
    let mut chosen = vec![false; source.size()];
    // Variables in conflict with a chosen one.
    let mut excluded = vec![false; source.size()];
    let mut taken: HashMap<&S::Key, usize> = HashMap::new();
    let mut order = Vec::new();
    let mut take = |v: usize, chosen: &mut Vec<bool>, order: &mut Vec<usize>| -> bool {
        if chosen[v] {
            return true;
        }
        let fits = !source.prohibited(v)
            && !excluded[v]
            && !source.conflicts(v).iter().any(|&y| chosen[y])
            && source
                .keys(v)
                .iter()
                .all(|k| taken.get(k).is_none_or(|&other| other == v));
        if fits {
            chosen[v] = true;
            for &y in source.conflicts(v) {
                excluded[y] = true;
            }
            for k in source.keys(v) {
                taken.insert(k, v);
            }
            order.push(v);
        }
        fits
    };
    for &v in seeds {
        if !take(v, &mut chosen, &mut order) {
            return None;
        }
    }
    let guided = |c: usize| guide.is_some_and(|g| g.get(c).copied().unwrap_or(false));
    let mut next = 0;
    while let Some(&v) = order.get(next) {
        next += 1;
        for candidates in source.dependencies(v) {
            if candidates.iter().any(|&c| chosen[c]) {
                continue;
            }
            let found = candidates
                .iter()
                .any(|&c| guided(c) && take(c, &mut chosen, &mut order))
                || candidates.iter().any(|&c| take(c, &mut chosen, &mut order));
            if !found {
                return None;
            }
        }
    }
    Some(chosen)
}
