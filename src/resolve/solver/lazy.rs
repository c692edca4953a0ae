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
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use varisat::{ExtendFormula, Lit, Solver};

use super::SolveError;

/// A problem seen variable by variable; variables are numbered `0..size()`.
pub trait Source {
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
pub fn solve<S: Source>(source: &S) -> Result<Option<Vec<usize>>, SolveError> {
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
    if !enc.check(&[])? {
        return Ok(None);
    }
    let mut selected = vec![false; source.size()];
    let mut assumptions = Vec::new();
    let mut queue: VecDeque<Vec<usize>> = anchors.iter().map(|&a| vec![a]).collect();
    while let Some(choice) = queue.pop_front() {
        if choice.iter().any(|&c| selected[c]) {
            continue;
        }
        for &c in &choice {
            let lit = enc.lit(c);
            assumptions.push(lit);
            // The last model is a witness that the candidate is consistent.
            let witnessed = enc.witness.get(lit.index()).copied().unwrap_or(false);
            if witnessed || enc.check(&assumptions)? {
                selected[c] = true;
                queue.extend(source.dependencies(c).into_iter().map(<[usize]>::to_vec));
                break;
            }
            assumptions.pop();
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
    /// The last model of the full formula, as "is solver variable i true".
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

    /// Whether the full formula holds together with `assumptions`; on success the model
    /// becomes the witness.
    fn check(&mut self, assumptions: &[Lit]) -> Result<bool, SolveError> {
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
            let open: Vec<usize> = self
                .mentioned
                .iter()
                .copied()
                .filter(|&v| !self.expanded[v])
                .filter(|&v| {
                    self.lits[v].is_some_and(|x| values.get(x.index()).copied().unwrap_or(false))
                })
                .collect();
            if open.is_empty() {
                self.witness = values;
                return Ok(true);
            }
            for v in open {
                self.expand(v);
            }
        }
    }
}
