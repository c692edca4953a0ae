use super::*;

fn var(id: &str, constraints: Vec<ConstraintKind>) -> Variable {
    Variable {
        id: id.to_owned(),
        constraints: constraints.into_iter().map(Constraint::new).collect(),
    }
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

use ConstraintKind::{AtMost, Conflict, Dependency, Mandatory, Prohibited};

#[test]
fn preference_order_decides() {
    // S07: preference beats minimality.
    let p = vec![
        var("a", vec![Mandatory, Dependency(ids(&["x", "y"]))]),
        var("b", vec![Mandatory, Dependency(ids(&["y"]))]),
        var("x", vec![]),
        var("y", vec![]),
    ];
    assert_eq!(solve(&p), Ok(ids(&["a", "b", "x", "y"])));
    // S10: a choice already satisfied adds nothing.
    let p = vec![
        var("a", vec![Mandatory, Dependency(ids(&["y"]))]),
        var("b", vec![Mandatory, Dependency(ids(&["x", "y"]))]),
        var("x", vec![]),
        var("y", vec![]),
    ];
    assert_eq!(solve(&p), Ok(ids(&["a", "b", "y"])));
}

#[test]
fn least_preferred_alternatives_when_forced() {
    let p = vec![
        var("a", vec![Mandatory, Dependency(ids(&["a1", "a2"]))]),
        var("a1", vec![Conflict("c1".into()), Conflict("c2".into())]),
        var("a2", vec![Conflict("c1".into())]),
        var("c", vec![Mandatory, Dependency(ids(&["c1", "c2"]))]),
        var("c1", vec![]),
        var("c2", vec![]),
    ];
    assert_eq!(solve(&p), Ok(ids(&["a", "a2", "c", "c2"])));
}

#[test]
fn at_most_counts_beyond_pairwise_sizes() {
    let members: Vec<String> = (0..9).map(|i| format!("m{i}")).collect();
    let mut p = vec![var("g", vec![Mandatory, AtMost(2, members.clone())])];
    for (i, m) in members.iter().enumerate() {
        let kinds = if i % 3 == 0 { vec![Mandatory] } else { vec![] };
        p.push(var(m, kinds));
    }
    let err = solve(&p).expect_err("three mandatory members");
    assert_eq!(
        err.to_string(),
        format!(
            "constraints not satisfiable: g permits at most 2 of {}, m0 is mandatory, m3 is mandatory, m6 is mandatory",
            members.join(", ")
        )
    );
    p[7].constraints.clear();
    assert_eq!(solve(&p), Ok(ids(&["g", "m0", "m3"])));
    // Zero allowed: every member is refused.
    let p = vec![
        var("g", vec![AtMost(0, ids(&["x"]))]),
        var("x", vec![Mandatory]),
    ];
    assert_eq!(
        solve(&p).expect_err("x refused").to_string(),
        "constraints not satisfiable: g permits at most 0 of x, x is mandatory"
    );
}

#[test]
fn minimal_core_with_custom_and_generic_messages() {
    let p = vec![
        Variable {
            id: "s".into(),
            constraints: vec![
                Constraint::with_message(Mandatory, "subscription s exists"),
                Constraint::new(Dependency(ids(&["e"]))),
            ],
        },
        var("e", vec![Dependency(vec![])]),
        var("unrelated", vec![Mandatory, Prohibited]),
    ];
    // Two disjoint conflicts: exactly one of the two minimal sets is reported.
    let SolveError::Unsatisfiable { messages } = solve(&p).expect_err("unsat") else {
        panic!("unsatisfiable expected");
    };
    let dependency = ids(&[
        "e has a dependency without any candidates to satisfy it",
        "s requires at least one of e",
        "subscription s exists",
    ]);
    let unrelated = ids(&["unrelated is mandatory", "unrelated is prohibited"]);
    assert!(
        messages == dependency || messages == unrelated,
        "{messages:?}"
    );
    let p = &p[..2];
    assert_eq!(
        solve(p).expect_err("unsat").to_string(),
        "constraints not satisfiable: e has a dependency without any candidates to satisfy it, s requires at least one of e, subscription s exists"
    );
}

#[test]
fn malformed_input() {
    let p = vec![var("a", vec![]), var("a", vec![])];
    assert_eq!(
        solve(&p).expect_err("dup").to_string(),
        r#"duplicate identifier "a" in input"#
    );
    let p = vec![
        var("a", vec![Conflict("b".into())]),
        var(
            "c",
            vec![Dependency(vec!["a".into(), "d".into(), "b".into()])],
        ),
    ];
    assert_eq!(
        solve(&p).expect_err("unknown").to_string(),
        r#"3 errors encountered: variable "b" referenced but not provided, variable "d" referenced but not provided, variable "b" referenced but not provided"#
    );
    assert_eq!(solve(&[]), Ok(vec![]));
    assert_eq!(
        SolveError::Unsatisfiable { messages: vec![] }.to_string(),
        "constraints not satisfiable"
    );
}
