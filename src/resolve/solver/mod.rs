//! The preference-first SAT search of classic resolution (resolution spec §2.9, §8) on
//! varisat, and minimal explanations when there is no solution (§2.11).
//!
//! Each candidate is checked with a full solve under assumptions. Then every accepted guess
//! keeps the formula satisfiable, so some alternative of each later choice is always
//! consistent. The search never backtracks, and its answer is the first vector of choices
//! (in queue order) that extends to a full solution, as the spec requires.
mod encoding;
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
            assumptions.push(enc.vars[c]);
            if check(&mut enc, &assumptions)? {
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
