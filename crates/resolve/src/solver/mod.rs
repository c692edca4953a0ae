//! The preference-first SAT search of classic resolution (resolution spec §2.9, §8) on
//! varisat, and minimal explanations when there is no solution (§2.11).
//!
//! Each candidate is checked with a full solve under assumptions, skipped when the model of
//! the last successful solve already selects the candidate (that model is a witness that
//! the candidate is consistent). Then every accepted guess
//! keeps the formula satisfiable, so some alternative of each later choice is always
//! consistent. The search never backtracks, and its answer is the first vector of choices
//! (in queue order) that extends to a full solution, as the spec requires.
mod encoding;
pub(crate) mod lazy;
mod problem;

use std::collections::VecDeque;

use varisat::Lit;

pub use problem::{Constraint, ConstraintKind, SolveError, Variable};

use encoding::Encoding;

/// Solves `problem`, returning the identifiers of the selected variables in input order.
/// Anchors (variables with a `Mandatory` constraint) are decided in input order, so callers
/// control determinism through the order of `problem`.
pub fn solve(problem: &[Variable]) -> Result<Vec<String>, SolveError> {
    let mut enc = Encoding::new(problem)?;
    let base: Vec<Lit> = enc.activations.iter().map(|a| a.lit).collect();
    if !check(&mut enc, &base)? {
        return Err(SolveError::Unsatisfiable {
            messages: explain(&mut enc, problem)?,
        });
    }

    let mut witness = model(&enc);
    let mut selected = vec![false; problem.len()];
    let mut assumptions = base;
    let mut queue: VecDeque<Vec<usize>> = problem
        .iter()
        .enumerate()
        .filter(|(_, v)| {
            v.constraints
                .iter()
                .any(|c| c.kind == ConstraintKind::Mandatory)
        })
        .map(|(i, _)| vec![i])
        .collect();
    while let Some(choice) = queue.pop_front() {
        if choice.iter().any(|&c| selected[c]) {
            continue;
        }
        for &c in &choice {
            let lit = enc.vars[c];
            assumptions.push(lit);
            let witnessed = witness.get(lit.var().index()).copied().unwrap_or(false);
            if witnessed || check(&mut enc, &assumptions)? {
                if !witnessed {
                    witness = model(&enc);
                }
                selected[c] = true;
                queue.extend(enc.choices[c].iter().cloned());
                break;
            }
            assumptions.pop();
        }
    }
    Ok(problem
        .iter()
        .zip(&selected)
        .filter(|(_, s)| **s)
        .map(|(v, _)| v.id.clone())
        .collect())
}

/// The last model, as "is variable i true"; empty when there is none.
fn model(enc: &Encoding<'_>) -> Vec<bool> {
    let lits = enc.solver.model().unwrap_or_default();
    let mut values = vec![false; lits.len()];
    for lit in lits {
        if let Some(v) = values.get_mut(lit.var().index()) {
            *v = lit.is_positive();
        }
    }
    values
}

fn check(enc: &mut Encoding<'_>, assumptions: &[Lit]) -> Result<bool, SolveError> {
    enc.solver.assume(assumptions);
    enc.solver
        .solve()
        .map_err(|e| SolveError::Internal(e.to_string()))
}

/// A minimal set of applied constraints that cannot hold together, as sorted messages:
/// varisat's failed core, then deletion in ascending message order (§2.11).
fn explain(enc: &mut Encoding<'_>, problem: &[Variable]) -> Result<Vec<String>, SolveError> {
    let describe = |enc: &Encoding<'_>, k: usize| {
        let a = &enc.activations[k];
        a.constraint.describe(&problem[a.subject].id)
    };
    let failed: Vec<Lit> = enc.solver.failed_core().unwrap_or_default().to_vec();
    let mut core: Vec<(String, usize)> = enc
        .activations
        .iter()
        .enumerate()
        .filter(|(_, a)| failed.iter().any(|l| l.var() == a.lit.var()))
        .map(|(k, _)| (describe(enc, k), k))
        .collect();
    core.sort();
    let mut i = 0;
    while i < core.len() {
        let rest: Vec<Lit> = core
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, (_, k))| enc.activations[*k].lit)
            .collect();
        if check(enc, &rest)? {
            i += 1;
        } else {
            core.remove(i);
        }
    }
    Ok(core.into_iter().map(|(m, _)| m).collect())
}

#[cfg(test)]
mod tests;
