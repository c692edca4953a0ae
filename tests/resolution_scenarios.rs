//! Runs every scenario of the resolution fixture catalogue through the public resolver API.
//!
//! The file is `$RESOLUTION_SCENARIOS`, or `../shared/spec/resolution-scenarios.md` next to
//! the crate; each fenced `yaml` block holding a list is a group of scenarios. One line is
//! printed per scenario (`PASS <id>`, `FAIL <id>: reason`, or `SKIP <id>: reason` for a
//! group the resolver does not implement yet); any FAIL fails the test.
use std::path::PathBuf;

use olm_registry::catalog::semver::{Range, Version};
use olm_registry::catalog::types::Property;
use olm_registry::resolve::solver::{self, Constraint, ConstraintKind, SolveError, Variable};
use olm_registry::resolve::{CelRule, OlmConstraint, VersionConstraint};
use serde_yaml::Value;

enum Verdict {
    Pass,
    Fail(String),
    Skip(String),
}

type Check = Result<(), String>;

#[test]
fn resolution_scenarios() {
    let path = std::env::var_os("RESOLUTION_SCENARIOS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/spec/resolution-scenarios.md")
        });
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!(
            "SKIPPED: scenario file {} is absent; set RESOLUTION_SCENARIOS to run the scenarios",
            path.display()
        );
        return;
    };
    let scenarios = yaml_blocks(&text)
        .into_iter()
        .filter_map(|block| match block {
            Value::Sequence(items) => Some(items),
            _ => None,
        })
        .flatten()
        .filter(|s| s.get("id").is_some());
    let (mut passed, mut failed, mut skipped) = (0, Vec::new(), 0);
    for scenario in scenarios {
        let id = text_of(&scenario["id"]);
        match run(&id, &scenario) {
            Verdict::Pass => {
                passed += 1;
                println!("PASS {id}");
            }
            Verdict::Fail(reason) => {
                println!("FAIL {id}: {reason}");
                failed.push(id);
            }
            Verdict::Skip(reason) => {
                skipped += 1;
                println!("SKIP {id}: {reason}");
            }
        }
    }
    println!(
        "{passed} passed, {} failed, {skipped} skipped (from {})",
        failed.len(),
        path.display()
    );
    assert!(failed.is_empty(), "failing scenarios: {failed:?}");
}

/// The YAML of every fenced ```yaml block, in file order.
fn yaml_blocks(markdown: &str) -> Vec<Value> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match current.as_mut() {
            None if line.trim_start().starts_with("```yaml") => current = Some(String::new()),
            Some(_) if line.trim_start().starts_with("```") => {
                let body = current.take().unwrap_or_default();
                match serde_yaml::from_str(&body) {
                    Ok(v) => blocks.push(v),
                    Err(e) => panic!("a yaml block does not parse: {e}"),
                }
            }
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    blocks
}

fn run(id: &str, s: &Value) -> Verdict {
    let group = id.trim_start_matches(|c: char| c.is_ascii_uppercase());
    let letter = &id[..id.len() - group.len()];
    let result = match letter {
        "R" => run_range(s),
        "E" => run_cel(s),
        "P" => run_constraint(s),
        "S" => run_solver(s),
        other => return Verdict::Skip(format!("group {other} is not implemented yet")),
    };
    match result {
        Ok(()) => Verdict::Pass,
        Err(reason) => Verdict::Fail(reason),
    }
}

/// A YAML scalar as text (versions such as `1.2.3` are strings, `1` is a number).
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        other => format!("{other:?}"),
    }
}

fn list(v: &Value) -> Vec<String> {
    v.as_sequence()
        .map(|items| items.iter().map(text_of).collect())
        .unwrap_or_default()
}

fn field<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Check {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

fn strict(v: &str) -> Result<Version, String> {
    Version::parse(v).map_err(|e| format!("bad version {v:?} in fixture: {e}"))
}

// ---- R: version grammars ------------------------------------------------------------------

fn run_range(s: &Value) -> Check {
    if let Some(accept) = field(s, "accept") {
        for c in list(accept) {
            VersionConstraint::admit(&c).map_err(|e| format!("{c:?} refused: {e}"))?;
        }
        for c in list(&s["reject"]) {
            if VersionConstraint::admit(&c).is_ok() {
                return Err(format!("{c:?} admitted"));
            }
        }
        return Ok(());
    }
    let lib = field(s, "lib").map(text_of).unwrap_or_default();
    for row in s["rows"].as_sequence().into_iter().flatten() {
        match lib.as_str() {
            "masterminds" => masterminds_row(row)?,
            "blang" => blang_row(row)?,
            _ => tolerant_row(row)?,
        }
    }
    Ok(())
}

fn masterminds_row(row: &Value) -> Check {
    let c = text_of(&row["c"]);
    let parsed = VersionConstraint::parse(&c);
    if let Some(err) = field(row, "error") {
        return expect_eq(&format!("error of {c:?}"), parsed.err(), Some(text_of(err)));
    }
    let parsed = parsed.map_err(|e| format!("{c:?}: {e}"))?;
    membership(&c, &row["yes"], &row["no"], |v| parsed.matches(v))
}

fn blang_row(row: &Value) -> Check {
    let r = text_of(&row["r"]);
    let parsed = Range::parse(&r);
    if let Some(err) = field(row, "error") {
        return expect_eq(&format!("error of {r:?}"), parsed.err(), Some(text_of(err)));
    }
    let parsed = parsed.map_err(|e| format!("{r:?}: {e}"))?;
    membership(&r, &row["yes"], &row["no"], |v| parsed.contains(v))
}

fn membership(what: &str, yes: &Value, no: &Value, contains: impl Fn(&Version) -> bool) -> Check {
    for v in list(yes) {
        if !contains(&strict(&v)?) {
            return Err(format!("{what:?} should match {v}"));
        }
    }
    for v in list(no) {
        if contains(&strict(&v)?) {
            return Err(format!("{what:?} should not match {v}"));
        }
    }
    Ok(())
}

fn tolerant_row(row: &Value) -> Check {
    let input = text_of(&row["in"]);
    let got = Version::parse_tolerant(&input).map(|v| v.to_string());
    match field(row, "error") {
        Some(err) => expect_eq(&format!("{input:?}"), got, Err(text_of(err))),
        None => expect_eq(&format!("{input:?}"), got, Ok(text_of(&row["out"]))),
    }
}

// ---- E: CEL environment -------------------------------------------------------------------

fn properties(v: Option<&Value>) -> Result<Vec<Property>, String> {
    v.and_then(Value::as_sequence)
        .into_iter()
        .flatten()
        .map(|p| {
            let value = serde_json::to_string(&p["value"]).map_err(|e| e.to_string())?;
            Ok(Property {
                kind: text_of(&p["type"]),
                value,
            })
        })
        .collect()
}

fn run_cel(s: &Value) -> Check {
    let props = properties(field(s, "properties"))?;
    let single;
    let cases: &[Value] = match field(s, "cases").and_then(Value::as_sequence) {
        Some(cases) => cases,
        None => {
            single = [s.clone()];
            &single
        }
    };
    for case in cases {
        let rule = text_of(&case["rule"]);
        let compiled = CelRule::compile(&rule);
        if let Some(want) = field(case, "compile_error") {
            let err = compiled.err().ok_or_else(|| format!("{rule:?} compiled"))?;
            if let Value::String(msg) = want {
                expect_eq(&format!("compile error of {rule:?}"), &err, msg)?;
            }
            continue;
        }
        let rule_ok = compiled.map_err(|e| format!("{rule:?}: {e}"))?;
        let want = field(case, "result")
            .or_else(|| case.get("expect").and_then(|e| field(e, "matches")))
            .and_then(Value::as_bool)
            .ok_or("no expected result")?;
        expect_eq(&format!("{rule:?}"), rule_ok.matches(&props), want)?;
    }
    Ok(())
}

// ---- P: olm.constraint parsing ------------------------------------------------------------

fn run_constraint(s: &Value) -> Check {
    if let Some(cases) = field(s, "cases").and_then(Value::as_sequence) {
        for case in cases {
            if let Some(kind) = field(case, "kind") {
                let raw = text_of(&case["in"]);
                let parsed = OlmConstraint::parse(&raw).map_err(|e| format!("{raw}: {e}"))?;
                expect_eq(&raw, parsed.kind_name().to_owned(), text_of(kind))?;
                parsed.to_predicate().map_err(|e| format!("{raw}: {e}"))?;
            } else {
                predicate_text(&text_of(&case["c"]), &text_of(&case["text"]))?;
            }
        }
        return Ok(());
    }
    let input = text_of(&s["in"]);
    // "any N bytes": a value of that size, whatever its content.
    let raw = match input
        .strip_prefix("any ")
        .and_then(|r| r.strip_suffix(" bytes"))
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(n) => "a".repeat(n),
        None => input,
    };
    if let Some(boundary) = field(s, "boundary") {
        let size: usize = text_of(boundary)
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or("unreadable boundary")?;
        let head = r#"{"gvk":{"group":"g","version":"v","kind":"k"},"failureMessage":""#;
        let json = format!("{head}{}\"}}", "x".repeat(size - head.len() - 2));
        OlmConstraint::parse(&json).map_err(|e| format!("{size} bytes refused: {e}"))?;
    }
    let expect = &s["expect"];
    if let Some(err) = field(expect, "error") {
        return expect_eq(
            "error",
            OlmConstraint::parse(&raw).err(),
            Some(text_of(err)),
        );
    }
    predicate_text(&raw, &text_of(&expect["predicate_text"]))
}

fn predicate_text(raw: &str, want: &str) -> Check {
    let predicate = OlmConstraint::parse(raw)
        .and_then(|c| c.to_predicate())
        .map_err(|e| format!("{raw}: {e}"))?;
    expect_eq(raw, predicate.to_string().as_str(), want)
}

// ---- S: solver core -----------------------------------------------------------------------

fn run_solver(s: &Value) -> Check {
    if let Some(cases) = field(s, "cases").and_then(Value::as_sequence) {
        for case in cases {
            let messages = list(&case["core"]);
            let got = SolveError::Unsatisfiable { messages }.to_string();
            expect_eq("error text", got, text_of(&case["error"]))?;
        }
        return Ok(());
    }
    let problem = s["vars"]
        .as_mapping()
        .into_iter()
        .flatten()
        .map(|(id, constraints)| {
            Ok(Variable {
                id: text_of(id),
                constraints: list(constraints)
                    .iter()
                    .map(|c| solver_constraint(c))
                    .collect::<Result<_, String>>()?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let got = solver::solve(&problem);
    let expect = &s["expect"];
    if let Some(selected) = field(expect, "selected") {
        let mut got = got.map_err(|e| e.to_string())?;
        let mut want = list(selected);
        got.sort();
        want.sort();
        return expect_eq("selected", got, want);
    }
    unsat_matches(got.err(), &expect["unsat"])
}

/// `M`, `P`, `D(x,y)`, `C(x)`, `AM(n; x,y)`.
fn solver_constraint(text: &str) -> Result<Constraint, String> {
    let ids = |args: &str| -> Vec<String> {
        args.split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let kind = match text.split_once('(') {
        None if text == "M" => ConstraintKind::Mandatory,
        None if text == "P" => ConstraintKind::Prohibited,
        Some((op, rest)) => {
            let args = rest
                .strip_suffix(')')
                .ok_or(format!("bad constraint {text}"))?;
            match op {
                "D" => ConstraintKind::Dependency(ids(args)),
                "C" => ConstraintKind::Conflict(args.trim().to_owned()),
                "AM" => {
                    let (n, members) = args.split_once(';').ok_or(format!("bad {text}"))?;
                    let n = n.trim().parse().map_err(|_| format!("bad {text}"))?;
                    ConstraintKind::AtMost(n, ids(members))
                }
                _ => return Err(format!("unknown constraint {text}")),
            }
        }
        None => return Err(format!("unknown constraint {text}")),
    };
    Ok(Constraint::new(kind))
}

/// Checks an unsatisfiable result against `exact`, `exact_derived`, `contains` or `one_of`.
fn unsat_matches(got: Option<SolveError>, unsat: &Value) -> Check {
    let Some(SolveError::Unsatisfiable { messages }) = got else {
        return Err(format!("expected unsatisfiable, got {got:?}"));
    };
    if let Some(exact) = field(unsat, "exact").or_else(|| field(unsat, "exact_derived")) {
        let mut want = list(exact);
        want.sort();
        return expect_eq("core", messages, want);
    }
    if let Some(contains) = field(unsat, "contains") {
        for m in list(contains) {
            if !messages.contains(&m) {
                return Err(format!("core {messages:?} lacks {m:?}"));
            }
        }
        return Ok(());
    }
    if let Some(one_of) = field(unsat, "one_of") {
        return match list(one_of).iter().any(|m| messages.contains(m)) {
            true => Ok(()),
            false => Err(format!("core {messages:?} has none of {one_of:?}")),
        };
    }
    Err("no unsat expectation".to_owned())
}
