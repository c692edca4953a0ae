//! Clauses for the applied constraints (resolution spec §8.1). Every applied constraint gets
//! its own activation literal, so an unsatisfiable result can name the constraints involved
//! and cores can be shrunk by switching single constraints off.
use std::collections::HashMap;

use varisat::{ExtendFormula, Lit, Solver};

use super::problem::{Constraint, ConstraintKind, SolveError, Variable};

/// The encoded problem: one literal per variable and per applied constraint.
pub(crate) struct Encoding<'p> {
    pub(crate) solver: Solver<'static>,
    /// `vars[i]` is the literal of `problem[i]`.
    pub(crate) vars: Vec<Lit>,
    /// One entry per applied constraint, in problem order.
    pub(crate) activations: Vec<Activation<'p>>,
    /// Per variable, the candidate indices of each of its `Dependency` constraints, in
    /// constraint order: the choices the search queues once the variable is selected.
    pub(crate) choices: Vec<Vec<Vec<usize>>>,
}

pub(crate) struct Activation<'p> {
    pub(crate) lit: Lit,
    pub(crate) subject: usize,
    pub(crate) constraint: &'p Constraint,
}

impl<'p> Encoding<'p> {
    pub(crate) fn new(problem: &'p [Variable]) -> Result<Encoding<'p>, SolveError> {
        let mut solver = Solver::new();
        let mut index = HashMap::with_capacity(problem.len());
        let mut vars = Vec::with_capacity(problem.len());
        for (i, v) in problem.iter().enumerate() {
            if index.insert(v.id.as_str(), i).is_some() {
                return Err(SolveError::DuplicateIdentifier(v.id.clone()));
            }
            vars.push(solver.new_lit());
        }
        // Every missing reference is reported, in problem order, as OLM's solver does.
        let unknown: Vec<String> = problem
            .iter()
            .flat_map(|v| &v.constraints)
            .flat_map(|c| c.kind.references())
            .filter(|id| !index.contains_key(id.as_str()))
            .cloned()
            .collect();
        if !unknown.is_empty() {
            return Err(SolveError::UnknownIdentifiers(unknown));
        }
        let position = |id: &str| index[id];
        let lookup = |id: &str| vars[position(id)];
        let mut activations = Vec::new();
        let mut choices = vec![Vec::new(); problem.len()];
        for (i, v) in problem.iter().enumerate() {
            let x = vars[i];
            for constraint in &v.constraints {
                let a = solver.new_lit();
                match &constraint.kind {
                    ConstraintKind::Mandatory => solver.add_clause(&[!a, x]),
                    ConstraintKind::Prohibited => solver.add_clause(&[!a, !x]),
                    ConstraintKind::Dependency(ids) => {
                        let candidates: Vec<usize> = ids.iter().map(|id| position(id)).collect();
                        let mut clause = vec![!a, !x];
                        clause.extend(candidates.iter().map(|&c| vars[c]));
                        solver.add_clause(&clause);
                        choices[i].push(candidates);
                    }
                    ConstraintKind::Conflict(y) => {
                        let y = lookup(y);
                        solver.add_clause(&[!a, !x, !y]);
                    }
                    ConstraintKind::AtMost(n, ids) => {
                        let mut lits: Vec<Lit> = ids.iter().map(|id| lookup(id)).collect();
                        // A variable listed twice is still one selection.
                        lits.sort_unstable_by_key(|l| l.code());
                        lits.dedup();
                        at_most(&mut solver, a, *n, &lits);
                    }
                }
                activations.push(Activation {
                    lit: a,
                    subject: i,
                    constraint,
                });
            }
        }
        Ok(Encoding {
            solver,
            vars,
            activations,
            choices,
        })
    }
}

/// "At most `n` of `xs`" guarded by `a`. Pairwise clauses for small at-most-one sets, a
/// sequential counter otherwise (linear in `n * |xs|` instead of quadratic in `|xs|`).
fn at_most(solver: &mut Solver<'static>, a: Lit, n: usize, xs: &[Lit]) {
    let m = xs.len();
    if m <= n {
        return;
    }
    if n == 0 {
        for &x in xs {
            solver.add_clause(&[!a, !x]);
        }
        return;
    }
    if n == 1 && m <= 6 {
        for (i, &x) in xs.iter().enumerate() {
            for &y in &xs[i + 1..] {
                solver.add_clause(&[!a, !x, !y]);
            }
        }
        return;
    }
    // s[i][j]: at least j+1 of xs[0..=i] are selected.
    let s: Vec<Vec<Lit>> = (0..m - 1)
        .map(|_| (0..n).map(|_| solver.new_lit()).collect())
        .collect();
    solver.add_clause(&[!a, !xs[0], s[0][0]]);
    // The first variable alone never counts past one.
    for &count in &s[0][1..] {
        solver.add_clause(&[!a, !count]);
    }
    for i in 1..m - 1 {
        solver.add_clause(&[!a, !xs[i], s[i][0]]);
        solver.add_clause(&[!a, !s[i - 1][0], s[i][0]]);
        for j in 1..n {
            solver.add_clause(&[!a, !xs[i], !s[i - 1][j - 1], s[i][j]]);
            solver.add_clause(&[!a, !s[i - 1][j], s[i][j]]);
        }
        solver.add_clause(&[!a, !xs[i], !s[i - 1][n - 1]]);
    }
    solver.add_clause(&[!a, !xs[m - 1], !s[m - 2][n - 1]]);
}
