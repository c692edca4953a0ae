//! Runs every scenario of the resolution fixture catalogue through the public resolver API.
//!
//! The file is `$RESOLUTION_SCENARIOS`, or `../shared/spec/resolution-scenarios.md` next to
//! the crate; each fenced `yaml` block holding a list is a group of scenarios. One line is
//! printed per scenario (`PASS <id>` or `FAIL <id>: reason`); any FAIL fails the test.
use std::path::PathBuf;

use std::collections::{BTreeSet, HashMap};

use catalog::semver::{Range, Version};
use catalog::types::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, DeprecationEntry, DeprecationReference,
    Deprecations, Gvk, Package, Property,
};
use catalog::version_constraint::VersionConstraint;
use catalog::version_release::VersionRelease;
use resolve::classic::chain::Links;
use resolve::classic::{
    self, CatalogSource, ClassicError, ClassicRequest, InstallPlan, InstalledCsv, PlanStep,
    Subscription, UpgradeStrategy,
};
use resolve::openshift::{self, BlockReason};
use resolve::solver::{self, Constraint, ConstraintKind, SolveError, Variable};
use resolve::v1::{
    self, InstalledBundle, LabelSelector, SelectorRequirement, UpgradePolicy, V1Catalog, V1Request,
};
use resolve::{CelRule, OlmConstraint};
use serde_yaml::Value;

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
    run_scenario_file(&path, &text);
}

/// Scenarios of this repository beyond the spec's catalogue, in its notation (release
/// versions: `rel` on a classic entry, `name@version/release` for a v1 bundle, `release` on
/// an installed bundle).
#[test]
fn resolution_scenarios_of_this_repository() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/resolution/release-scenarios.md");
    let text = std::fs::read_to_string(&path).expect("the repository's scenario file");
    run_scenario_file(&path, &text);
}

fn run_scenario_file(path: &std::path::Path, text: &str) {
    let blocks = yaml_blocks(text);
    // The `GEN(p)` fixture of the v1 scenarios.
    let gen_fixture = blocks.iter().find_map(|b| b.get("GEN")).cloned();
    let (mut passed, mut failed) = (0, Vec::new());
    // A block that is no list of scenarios may only hold the notation or the GEN fixture.
    for (n, block) in blocks.iter().enumerate() {
        if block.is_sequence() {
            continue;
        }
        if let Err(reason) = known_keys(block, &format!("block {n}"), &["notation", "GEN"]) {
            println!("FAIL {reason}");
            failed.push(format!("block {n}"));
        }
    }
    let scenarios = blocks
        .into_iter()
        .filter_map(|block| match block {
            Value::Sequence(items) => Some(items),
            _ => None,
        })
        .flatten();
    let mut ctx = Context {
        seen: HashMap::new(),
        gen_fixture,
    };
    for (n, scenario) in scenarios.enumerate() {
        // A scenario without an id is named by its place among all scenarios.
        let (id, verdict) = match required(&scenario, "id", "").and_then(|id| scalar(id, "id")) {
            Ok(id) => (id.clone(), run(&id, &scenario, &ctx)),
            Err(e) => (format!("#{n}"), Err(e)),
        };
        ctx.seen.insert(id.clone(), scenario);
        match verdict {
            Ok(()) => {
                passed += 1;
                println!("PASS {id}");
            }
            Err(reason) => {
                println!("FAIL {id}: {reason}");
                failed.push(id);
            }
        }
    }
    println!(
        "{passed} passed, {} failed (from {})",
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

/// What scenarios may refer to besides themselves.
struct Context {
    /// Earlier scenarios by id, for fixtures written as "as C14a but ...".
    seen: HashMap<String, Value>,
    gen_fixture: Option<Value>,
}

fn run(id: &str, s: &Value, ctx: &Context) -> Check {
    let group = id.trim_start_matches(|c: char| c.is_ascii_uppercase());
    let letter = &id[..id.len() - group.len()];
    match letter {
        "R" => run_range(s),
        "E" => run_cel(s),
        "P" => run_constraint(s),
        "S" => run_solver(s),
        "C" => run_classic(s, &ctx.seen),
        "V" => run_v1(s, ctx),
        "M" => run_openshift(s),
        _ => Err(format!("id: no group reads {id:?}")),
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

// ---- Strict reading -----------------------------------------------------------------------
//
// Every group is read strictly: a field of the wrong shape, a key the notation does not
// define, or prose no rule covers fails the scenario naming the field, so that no scenario
// passes by being read as empty.

/// Keys that only explain a scenario to its reader.
const PROSE_KEYS: [&str; 4] = ["note", "reasoning", "variant", "title"];

/// `key` under `path` (the scenario itself when `path` is empty).
fn join(path: &str, key: &str) -> String {
    match path {
        "" => key.to_owned(),
        path => format!("{path}.{key}"),
    }
}

/// Fails on a key of mapping `v` (at `path`) outside `keys` and [`PROSE_KEYS`]; a missing or
/// null `v` is an empty mapping.
fn known_keys(v: &Value, path: &str, keys: &[&str]) -> Check {
    match v {
        Value::Null => Ok(()),
        Value::Mapping(m) => {
            for key in m.keys() {
                let key = scalar(key, path)?;
                if !keys.contains(&key.as_str()) && !PROSE_KEYS.contains(&key.as_str()) {
                    return Err(format!("{path}.{key}: not a field of the notation"));
                }
            }
            Ok(())
        }
        other => Err(format!("{path}: a mapping is expected, not {other:?}")),
    }
}

/// The value of `key` in `v` (at `path`), which must be there and not null.
fn required<'v>(v: &'v Value, key: &str, path: &str) -> Result<&'v Value, String> {
    field(v, key).ok_or_else(|| format!("{}: required", join(path, key)))
}

/// Which one of `keys` mapping `v` (at `path`) holds; holding two is an error.
fn which<'v, 'k>(
    v: &'v Value,
    path: &str,
    keys: &[&'k str],
) -> Result<Option<(&'k str, &'v Value)>, String> {
    let mut present = keys.iter().filter_map(|&k| field(v, k).map(|x| (k, x)));
    match (present.next(), present.next()) {
        (Some((a, _)), Some((b, _))) => Err(format!("{} and {b}: only one of them", join(path, a))),
        (first, None) => Ok(first),
        (None, Some(_)) => unreachable!("the second present key comes after the first"),
    }
}

/// The one of `keys` that mapping `v` (at `path`) holds.
fn exactly_one<'v, 'k>(
    v: &'v Value,
    path: &str,
    keys: &[&'k str],
) -> Result<(&'k str, &'v Value), String> {
    which(v, path, keys)?.ok_or_else(|| {
        let at = if path.is_empty() { "scenario" } else { path };
        format!("{at}: one of {} is required", keys.join(", "))
    })
}

/// A scalar as text (null is empty); a mapping or list is an error naming `path`.
fn scalar(v: &Value, path: &str) -> Result<String, String> {
    match v {
        Value::Mapping(_) | Value::Sequence(_) | Value::Tagged(_) => {
            Err(format!("{path}: a scalar is expected, not {v:?}"))
        }
        other => Ok(text_of(other)),
    }
}

/// A scalar that must be one of `words`.
fn word(v: &Value, path: &str, words: &[&str]) -> Result<String, String> {
    let w = scalar(v, path)?;
    match words.contains(&w.as_str()) {
        true => Ok(w),
        false => Err(format!(
            "{path}: one of {} is expected, not {w:?}",
            words.join(", ")
        )),
    }
}

fn boolean(v: &Value, path: &str) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("{path}: true or false is expected, not {v:?}"))
}

/// The items of a list (null is empty).
fn items<'v>(v: &'v Value, path: &str) -> Result<&'v [Value], String> {
    match v {
        Value::Null => Ok(&[]),
        Value::Sequence(s) => Ok(s),
        other => Err(format!("{path}: a list is expected, not {other:?}")),
    }
}

/// Each item of a list (null is empty) read by `read`, which is given the item's path.
fn read_items<'v, T>(
    v: &'v Value,
    path: &str,
    mut read: impl FnMut(&'v Value, &str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    items(v, path)?
        .iter()
        .enumerate()
        .map(|(i, x)| read(x, &format!("{path}[{i}]")))
        .collect()
}

/// The items of list `key` of scenario `v`, which must be there and have some.
fn some_items<'v>(v: &'v Value, key: &str) -> Result<&'v [Value], String> {
    let list = items(required(v, key, "")?, key)?;
    if list.is_empty() {
        return Err(format!("{key}: empty"));
    }
    Ok(list)
}

/// Each of [`some_items`] checked with its path.
fn each<'v>(v: &'v Value, key: &str, check: impl FnMut(&'v Value, &str) -> Check) -> Check {
    some_items(v, key)?;
    read_items(&v[key], key, check).map(drop)
}

/// A list of scalars (null is empty).
fn scalars(v: &Value, path: &str) -> Result<Vec<String>, String> {
    read_items(v, path, scalar)
}

/// The pairs of a mapping (null is empty).
fn pairs<'v>(v: &'v Value, path: &str) -> Result<Vec<(String, &'v Value)>, String> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Mapping(m) => m.iter().map(|(k, x)| Ok((scalar(k, path)?, x))).collect(),
        other => Err(format!("{path}: a mapping is expected, not {other:?}")),
    }
}

// ---- R: version grammars ------------------------------------------------------------------

fn run_range(s: &Value) -> Check {
    if exactly_one(s, "", &["rows", "accept"])?.0 == "accept" {
        known_keys(s, "scenario", &["id", "source", "accept", "reject"])?;
        for c in scalars(&s["accept"], "accept")? {
            VersionConstraint::admit(&c).map_err(|e| format!("{c:?} refused: {e}"))?;
        }
        for c in scalars(required(s, "reject", "")?, "reject")? {
            if VersionConstraint::admit(&c).is_ok() {
                return Err(format!("{c:?} admitted"));
            }
        }
        return Ok(());
    }
    known_keys(s, "scenario", &["id", "source", "lib", "rows"])?;
    let lib = match field(s, "lib") {
        Some(lib) => Some(word(lib, "lib", &["masterminds", "blang"])?),
        None => None,
    };
    each(s, "rows", |row, path| match lib.as_deref() {
        Some("masterminds") => range_row(row, path, "c", VersionConstraint::parse, |c, v| {
            c.matches(v)
        }),
        Some(_) => range_row(row, path, "r", Range::parse, |r, v| r.contains(v)),
        None => tolerant_row(row, path),
    })
}

/// A row of a range table: range `key`, then its parse `error`, or the versions it
/// contains (`yes`) and does not (`no`).
fn range_row<R>(
    row: &Value,
    path: &str,
    key: &str,
    parse: impl Fn(&str) -> Result<R, String>,
    contains: impl Fn(&R, &Version) -> bool,
) -> Check {
    let range = scalar(required(row, key, path)?, &join(path, key))?;
    let parsed = parse(&range);
    if let Some(err) = field(row, "error") {
        known_keys(row, path, &[key, "error"])?;
        let want = scalar(err, &join(path, "error"))?;
        return expect_eq(&format!("error of {range:?}"), parsed.err(), Some(want));
    }
    known_keys(row, path, &[key, "yes", "no"])?;
    let parsed = parsed.map_err(|e| format!("{range:?}: {e}"))?;
    for (side, want) in [("yes", true), ("no", false)] {
        let path = join(path, side);
        for v in scalars(row.get(side).ok_or(format!("{path}: required"))?, &path)? {
            if contains(&parsed, &strict(&v)?) != want {
                let not = if want { "" } else { "not " };
                return Err(format!("{range:?} should {not}match {v}"));
            }
        }
    }
    Ok(())
}

fn tolerant_row(row: &Value, path: &str) -> Check {
    known_keys(row, path, &["in", "out", "error"])?;
    let input = scalar(required(row, "in", path)?, &join(path, "in"))?;
    let got = Version::parse_tolerant(&input).map(|v| v.to_string());
    let (key, want) = exactly_one(row, path, &["out", "error"])?;
    let want = scalar(want, &join(path, key))?;
    let want = if key == "out" { Ok(want) } else { Err(want) };
    expect_eq(&format!("{input:?}"), got, want)
}

// ---- E: CEL environment -------------------------------------------------------------------

fn properties(v: &Value, path: &str) -> Result<Vec<Property>, String> {
    read_items(v, path, |p, path| {
        known_keys(p, path, &["type", "value"])?;
        let value = required(p, "value", path)?;
        Ok(Property {
            kind: scalar(required(p, "type", path)?, &join(path, "type"))?,
            value: serde_json::to_string(value).map_err(|e| format!("{path}.value: {e}"))?,
        })
    })
}

/// What a CEL rule should do: fail to compile (with this message, when given), or compile
/// and match the properties or not.
enum CelWant {
    CompileError(Option<String>),
    Matches(bool),
}

fn run_cel(s: &Value) -> Check {
    let props = properties(&s["properties"], "properties")?;
    let rule = |v: &Value, path: &str| scalar(required(v, "rule", path)?, &join(path, "rule"));
    if exactly_one(s, "", &["cases", "rule"])?.0 == "cases" {
        known_keys(s, "scenario", &["id", "source", "properties", "cases"])?;
        return each(s, "cases", |case, path| {
            known_keys(case, path, &["rule", "result", "compile_error"])?;
            let want = match exactly_one(case, path, &["result", "compile_error"])? {
                ("result", r) => CelWant::Matches(boolean(r, &join(path, "result"))?),
                (_, Value::Bool(true)) => CelWant::CompileError(None),
                (_, Value::String(m)) => CelWant::CompileError(Some(m.clone())),
                (_, other) => {
                    return Err(format!(
                        "{path}.compile_error: true or the message is expected, not {other:?}"
                    ));
                }
            };
            cel_rule(&props, &rule(case, path)?, want)
        });
    }
    known_keys(
        s,
        "scenario",
        &["id", "source", "properties", "rule", "expect"],
    )?;
    let expect = required(s, "expect", "")?;
    known_keys(expect, "expect", &["matches", "error"])?;
    // Matching returns no error at all: an evaluation error is only "no match".
    if let Some(error) = field(expect, "error") {
        word(error, "expect.error", &["none"])?;
    }
    let matches = boolean(required(expect, "matches", "expect")?, "expect.matches")?;
    cel_rule(&props, &rule(s, "")?, CelWant::Matches(matches))
}

fn cel_rule(props: &[Property], rule: &str, want: CelWant) -> Check {
    let compiled = CelRule::compile(rule);
    match want {
        CelWant::CompileError(message) => {
            let err = compiled.err().ok_or_else(|| format!("{rule:?} compiled"))?;
            match message {
                Some(msg) => expect_eq(&format!("compile error of {rule:?}"), err, msg),
                None => Ok(()),
            }
        }
        CelWant::Matches(want) => {
            let compiled = compiled.map_err(|e| format!("{rule:?}: {e}"))?;
            expect_eq(&format!("{rule:?}"), compiled.matches(props), want)
        }
    }
}

// ---- P: olm.constraint parsing ------------------------------------------------------------

fn run_constraint(s: &Value) -> Check {
    if exactly_one(s, "", &["cases", "in"])?.0 == "cases" {
        known_keys(s, "scenario", &["id", "source", "cases"])?;
        return each(s, "cases", |case, path| {
            let text = |key: &str| scalar(required(case, key, path)?, &join(path, key));
            if exactly_one(case, path, &["kind", "text"])?.0 == "text" {
                known_keys(case, path, &["c", "text"])?;
                return predicate_text(&text("c")?, &text("text")?);
            }
            known_keys(case, path, &["in", "kind"])?;
            let raw = text("in")?;
            let parsed = OlmConstraint::parse(&raw).map_err(|e| format!("{raw}: {e}"))?;
            expect_eq(&raw, parsed.kind_name().to_owned(), text("kind")?)?;
            parsed
                .to_predicate()
                .map(drop)
                .map_err(|e| format!("{raw}: {e}"))
        });
    }
    known_keys(s, "scenario", &["id", "source", "in", "expect", "boundary"])?;
    let input = scalar(&s["in"], "in")?;
    // "any <n> bytes": a value of that size, whatever its content.
    let raw = match input.strip_prefix("any ") {
        Some(size) => "a".repeat(byte_count(size, "in", &input)?),
        None => input,
    };
    if let Some(boundary) = field(s, "boundary") {
        let text = scalar(boundary, "boundary")?;
        let size = text
            .strip_suffix(" of valid JSON is accepted")
            .map(|n| byte_count(n, "boundary", &text))
            .unwrap_or_else(|| Err(format!("boundary: no rule reads {text:?}")))?;
        let head = r#"{"gvk":{"group":"g","version":"v","kind":"k"},"failureMessage":""#;
        let json = format!("{head}{}\"}}", "x".repeat(size - head.len() - 2));
        OlmConstraint::parse(&json).map_err(|e| format!("{size} bytes refused: {e}"))?;
    }
    let expect = required(s, "expect", "")?;
    known_keys(expect, "expect", &["error", "predicate_text"])?;
    let (key, want) = exactly_one(expect, "expect", &["error", "predicate_text"])?;
    let want = scalar(want, &join("expect", key))?;
    match key {
        "error" => expect_eq("error", OlmConstraint::parse(&raw).err(), Some(want)),
        _ => predicate_text(&raw, &want),
    }
}

/// `<n> bytes` in `text`, the value of field `path`.
fn byte_count(size: &str, path: &str, text: &str) -> Result<usize, String> {
    size.strip_suffix(" bytes")
        .and_then(|n| n.parse().ok())
        .ok_or(format!("{path}: no rule reads {text:?}"))
}

fn predicate_text(raw: &str, want: &str) -> Check {
    let predicate = OlmConstraint::parse(raw)
        .and_then(|c| c.to_predicate())
        .map_err(|e| format!("{raw}: {e}"))?;
    expect_eq(raw, predicate.to_string().as_str(), want)
}

// ---- S: solver core -----------------------------------------------------------------------

fn run_solver(s: &Value) -> Check {
    if exactly_one(s, "", &["cases", "vars"])?.0 == "cases" {
        known_keys(s, "scenario", &["id", "source", "cases"])?;
        return each(s, "cases", |case, path| {
            known_keys(case, path, &["core", "error"])?;
            let core = join(path, "core");
            let messages = scalars(case.get("core").ok_or(format!("{core}: required"))?, &core)?;
            let got = SolveError::Unsatisfiable { messages }.to_string();
            let want = scalar(required(case, "error", path)?, &join(path, "error"))?;
            expect_eq("error text", got, want)
        });
    }
    known_keys(s, "scenario", &["id", "source", "vars", "expect"])?;
    let problem = pairs(&s["vars"], "vars")?
        .into_iter()
        .map(|(id, constraints)| {
            let path = format!("vars.{id}");
            let constraints = read_items(constraints, &path, |c, path| {
                solver_constraint(&scalar(c, path)?).map_err(|e| format!("{path}: {e}"))
            })?;
            Ok(Variable { id, constraints })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let got = solver::solve(&problem);
    let expect = required(s, "expect", "")?;
    known_keys(expect, "expect", &["selected", "unsat"])?;
    match exactly_one(expect, "expect", &["selected", "unsat"])? {
        ("selected", selected) => {
            let mut got = got.map_err(|e| e.to_string())?;
            let mut want = scalars(selected, "expect.selected")?;
            got.sort();
            want.sort();
            expect_eq("selected", got, want)
        }
        (_, unsat) => match got {
            Err(SolveError::Unsatisfiable { messages }) => {
                unsat_matches(&messages, unsat, "expect.unsat")
            }
            other => Err(format!("expected unsatisfiable, got {other:?}")),
        },
    }
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

/// Checks the messages of an unsatisfiable result against mapping `unsat` (at `path`), which
/// holds one or more of: `exact` or `exact_derived` the whole set, `contains` parts all found
/// in the error text, `one_of` parts at least one of which is.
fn unsat_matches(messages: &[String], unsat: &Value, path: &str) -> Check {
    const KINDS: [&str; 4] = ["exact", "exact_derived", "contains", "one_of"];
    known_keys(unsat, path, &KINDS)?;
    let text = SolveError::Unsatisfiable {
        messages: messages.to_vec(),
    }
    .to_string();
    let mut read = false;
    for kind in KINDS {
        let Some(want) = field(unsat, kind) else {
            continue;
        };
        read = true;
        let mut want = scalars(want, &join(path, kind))?;
        match kind {
            "exact" | "exact_derived" => {
                want.sort();
                expect_eq("core", messages, want.as_slice())?;
            }
            "contains" => {
                if let Some(m) = want.iter().find(|m| !text.contains(m.as_str())) {
                    return Err(format!("{text:?} lacks {m:?}"));
                }
            }
            _ => {
                if !want.iter().any(|m| text.contains(m.as_str())) {
                    return Err(format!("{text:?} has none of {want:?}"));
                }
            }
        }
    }
    match read {
        true => Ok(()),
        false => Err(format!("{path}: one of {} is required", KINDS.join(", "))),
    }
}

// ---- C: classic resolution ----------------------------------------------------------------

const DEFAULT_NAMESPACE: &str = "catsrc-namespace";
const DEFAULT_CATALOG: &str = "catsrc/catsrc-namespace";

fn run_classic(s: &Value, seen: &HashMap<String, Value>) -> Check {
    known_keys(
        s,
        "scenario",
        &[
            "id",
            "source",
            "apis",
            "catalogs",
            "installed",
            "expect",
            "cases",
            "rounds",
        ],
    )?;
    if s.get("catalogs").is_none() {
        // C54: the chain-sorting table.
        return each(s, "cases", chain_case);
    }
    let apis = api_names(s)?;
    let runs: Vec<(String, &Value, &Value)> = match which(s, "", &["rounds", "cases"])? {
        Some((name, _)) => {
            let mut runs = Vec::new();
            each(s, name, |r, path| {
                known_keys(r, path, &["installed", "expect"])?;
                runs.push((path.to_owned(), &r["installed"], &r["expect"]));
                Ok(())
            })?;
            runs
        }
        None => vec![(String::new(), &s["installed"], &s["expect"])],
    };
    // Rounds follow one another, so each must say what it expects.
    for (path, installed, expect) in runs {
        // Errors name the round or case they happen in.
        let within = |e: String| match path.as_str() {
            "" => e,
            run => format!("{run}.{e}"),
        };
        if expect.is_null() {
            return Err(within("expect: required".to_owned()));
        }
        let catalogs = classic_catalogs(s, installed, seen)?;
        let request = classic_request(installed, &catalogs, &apis).map_err(within)?;
        let got = classic::resolve_namespace(&request.borrow());
        classic_expectation(&request, got, expect).map_err(within)?;
    }
    Ok(())
}

fn chain_case(case: &Value, path: &str) -> Check {
    known_keys(case, path, &["in", "out", "error"])?;
    let entries = entry_list(&case["in"], &format!("{path}.in"))?;
    let links: Vec<Links> = entries.iter().map(Links::from).collect();
    let got = classic::chain::sort_channel("package", "channel", &links)
        .map(|order| {
            order
                .iter()
                .map(|&i| entries[i].name.clone())
                .collect::<Vec<_>>()
        })
        .map_err(|e| e.to_string());
    match field(case, "error") {
        Some(err) => expect_eq("chain", got, Err(scalar(err, &format!("{path}.error"))?)),
        None => expect_eq(
            "chain",
            got,
            Ok(scalars(&case["out"], &format!("{path}.out"))?),
        ),
    }
}

/// The catalogs of a scenario: written out, or prose read by one of these rules:
/// * `as <id> but <catalog> also has priority <n>`: an earlier scenario's catalogs with one
///   priority changed;
/// * `<p><i>..<p><j> chain (<version i>..<version j>), each replacing the previous, all prov
///   <API>`: entries `<p><i>` to `<p><j>` in the catalog, package and channel of the
///   installed state's subscription, each replacing the one before, with versions counting
///   up in the part where the two given versions differ, each providing `<API>`.
fn classic_catalogs(
    s: &Value,
    installed: &Value,
    seen: &HashMap<String, Value>,
) -> Result<Value, String> {
    let catalogs = &s["catalogs"];
    let Value::String(prose) = catalogs else {
        return Ok(catalogs.clone());
    };
    let unreadable = || format!("catalogs: no rule reads {prose:?}");
    if let Some(rest) = prose.strip_prefix("as ") {
        let (base, change) = rest.split_once(" but ").ok_or_else(unreadable)?;
        let mut derived = seen
            .get(base)
            .map(|b| b["catalogs"].clone())
            .ok_or(format!("catalogs: unknown base scenario {base}"))?;
        let (catalog, priority) = change
            .split_once(" also has priority ")
            .ok_or_else(unreadable)?;
        let priority: i64 = priority.trim().parse().map_err(|_| unreadable())?;
        if derived.get(catalog).is_none() {
            return Err(format!("catalogs: {base} has no catalog {catalog}"));
        }
        derived[catalog]["priority"] = Value::from(priority);
        return Ok(derived);
    }
    let (names, rest) = prose.split_once(" chain (").ok_or_else(unreadable)?;
    let (versions, rest) = rest
        .split_once("), each replacing the previous, all prov ")
        .ok_or_else(unreadable)?;
    let (first, last) = names.split_once("..").ok_or_else(unreadable)?;
    let (first_version, last_version) = versions.split_once("..").ok_or_else(unreadable)?;
    let stem = first.trim_end_matches(|c: char| c.is_ascii_digit());
    let number = |name: &str| -> Result<u64, String> {
        name.strip_prefix(stem)
            .and_then(|n| n.parse().ok())
            .ok_or_else(unreadable)
    };
    let (from, to) = (number(first)?, number(last)?);
    let (low, high) = (strict(first_version)?, strict(last_version)?);
    let steps = to.checked_sub(from).ok_or_else(unreadable)?;
    let part = |v: &Version| [v.major, v.minor, v.patch];
    let moving = (0..3)
        .find(|&i| part(&low)[i] != part(&high)[i])
        .filter(|&i| part(&high)[i] - part(&low)[i] == steps)
        .ok_or_else(unreadable)?;
    let sub = items(&installed["subs"], "installed.subs")?
        .first()
        .ok_or(format!(
            "catalogs: {prose:?} needs a subscription to place the chain"
        ))?;
    let entries: Vec<Value> = (0..=steps)
        .map(|i| {
            let mut version = part(&low);
            version[moving] += i;
            let mut entry = serde_yaml::Mapping::new();
            entry.insert("n".into(), format!("{stem}{}", from + i).into());
            entry.insert(
                "v".into(),
                format!("{}.{}.{}", version[0], version[1], version[2]).into(),
            );
            if i > 0 {
                entry.insert("r".into(), format!("{stem}{}", from + i - 1).into());
            }
            entry.insert("prov".into(), vec![Value::from(rest.trim())].into());
            Value::Mapping(entry)
        })
        .collect();
    let text = |key: &str| scalar(&sub[key], &format!("installed.subs[0].{key}"));
    let source = field(sub, "src")
        .map(|_| text("src"))
        .transpose()?
        .unwrap_or_else(|| DEFAULT_CATALOG.to_owned());
    let mut channels = serde_yaml::Mapping::new();
    channels.insert(text("ch")?.into(), entries.into());
    let mut package = serde_yaml::Mapping::new();
    package.insert("channels".into(), channels.into());
    let mut packages = serde_yaml::Mapping::new();
    packages.insert(text("pkg")?.into(), package.into());
    let mut catalog = serde_yaml::Mapping::new();
    catalog.insert("packages".into(), packages.into());
    let mut all = serde_yaml::Mapping::new();
    all.insert(source.into(), catalog.into());
    Ok(Value::Mapping(all))
}

fn api_names(s: &Value) -> Result<HashMap<String, Gvk>, String> {
    let mut apis: HashMap<String, Gvk> = (1..=4)
        .map(|i| {
            let suffix = if i == 1 { String::new() } else { i.to_string() };
            (
                format!("API{i}"),
                Gvk {
                    group: format!("g{suffix}"),
                    version: format!("v{suffix}"),
                    kind: format!("k{suffix}"),
                },
            )
        })
        .collect();
    for (name, g) in pairs(&s["apis"], "apis")? {
        let path = format!("apis.{name}");
        known_keys(g, &path, &["group", "version", "kind"])?;
        let part = |k: &str| scalar(&g[k], &format!("{path}.{k}"));
        apis.insert(
            name,
            Gvk {
                group: part("group")?,
                version: part("version")?,
                kind: part("kind")?,
            },
        );
    }
    Ok(apis)
}

fn gvk(apis: &HashMap<String, Gvk>, name: &str, path: &str) -> Result<Gvk, String> {
    if let Some(g) = apis.get(name) {
        return Ok(g.clone());
    }
    match name.split('/').collect::<Vec<_>>().as_slice() {
        [group, version, kind] => Ok(Gvk {
            group: (*group).to_owned(),
            version: (*version).to_owned(),
            kind: (*kind).to_owned(),
        }),
        _ => Err(format!("{path}: unknown API {name}")),
    }
}

fn gvks(apis: &HashMap<String, Gvk>, v: &Value, path: &str) -> Result<Vec<Gvk>, String> {
    read_items(v, path, |name, path| gvk(apis, &scalar(name, path)?, path))
}

fn property(kind: &str, value: serde_json::Value) -> Property {
    Property {
        kind: kind.to_owned(),
        value: value.to_string(),
    }
}

fn gvk_json(g: &Gvk) -> serde_json::Value {
    serde_json::json!({"group": g.group, "kind": g.kind, "version": g.version})
}

/// `n`, `r`, `s`, `sr` of an entry (other keys are the caller's to check).
fn channel_entry(e: &Value, path: &str) -> Result<ChannelEntry, String> {
    let text = |k: &str| scalar(&e[k], &format!("{path}.{k}"));
    let name = text("n")?;
    if name.is_empty() {
        return Err(format!("{path}.n: required"));
    }
    Ok(ChannelEntry {
        name,
        replaces: text("r")?,
        skips: scalars(&e["s"], &format!("{path}.s"))?,
        skip_range: text("sr")?,
    })
}

/// A catalog's `priority` (0 when absent).
fn priority(catalog: &Value, path: &str) -> Result<i32, String> {
    match field(catalog, "priority") {
        None => Ok(0),
        Some(p) => p
            .as_i64()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or(format!(
                "{path}.priority: an integer is expected, not {p:?}"
            )),
    }
}

/// A list of channel entries.
fn entry_list(v: &Value, path: &str) -> Result<Vec<ChannelEntry>, String> {
    read_items(v, path, channel_entry)
}

const ENTRY_KEYS: [&str; 13] = [
    "n",
    "v",
    "rel",
    "r",
    "s",
    "sr",
    "prov",
    "req",
    "pkgreq",
    "label",
    "labelreq",
    "constraint",
    "deprecated",
];

/// The properties an entry of the notation carries, in a fixed order.
fn entry_properties(
    e: &Value,
    path: &str,
    package: &str,
    apis: &HashMap<String, Gvk>,
) -> Result<Vec<Property>, String> {
    known_keys(e, path, &ENTRY_KEYS)?;
    let text = |k: &str| scalar(&e[k], &format!("{path}.{k}"));
    let version = match text("v")? {
        v if v.is_empty() => "0.0.0".to_owned(),
        v => v,
    };
    let mut package_value = serde_json::json!({"packageName": package, "version": version});
    if field(e, "rel").is_some() {
        package_value["release"] = serde_json::Value::String(text("rel")?);
    }
    let mut props = vec![property("olm.package", package_value)];
    for g in gvks(apis, &e["prov"], &format!("{path}.prov"))? {
        props.push(property("olm.gvk", gvk_json(&g)));
    }
    for g in gvks(apis, &e["req"], &format!("{path}.req"))? {
        props.push(property("olm.gvk.required", gvk_json(&g)));
    }
    props.extend(package_requirements(e, path)?);
    if field(e, "label").is_some() {
        props.push(property(
            "olm.label",
            serde_json::json!({"label": text("label")?}),
        ));
    }
    if field(e, "labelreq").is_some() {
        props.push(property(
            "olm.label.required",
            serde_json::json!({"label": text("labelreq")?}),
        ));
    }
    if field(e, "constraint").is_some() {
        props.push(Property {
            kind: "olm.constraint".to_owned(),
            value: text("constraint")?,
        });
    }
    match field(e, "deprecated") {
        None => {}
        Some(Value::Bool(true)) => props.push(property("olm.deprecated", serde_json::json!({}))),
        Some(Value::Bool(false)) => {}
        Some(other) => return Err(format!("{path}.deprecated: true or false, not {other:?}")),
    }
    Ok(props)
}

fn package_requirements(e: &Value, path: &str) -> Result<Vec<Property>, String> {
    read_items(&e["pkgreq"], &format!("{path}.pkgreq"), |r, path| {
        known_keys(r, path, &["p", "r"])?;
        Ok(property(
            "olm.package.required",
            serde_json::json!({
                "packageName": scalar(&r["p"], &format!("{path}.p"))?,
                "versionRange": scalar(&r["r"], &format!("{path}.r"))?,
            }),
        ))
    })
}

/// The CSV that stands for an entry's inline bundle content: the notation describes bundles
/// by their properties only, so each is installed from a CSV of its own name.
fn notation_csv(name: &str) -> String {
    serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name},
        "spec": {},
    })
    .to_string()
}

/// One FBC per catalog key of the notation.
fn declarative_configs(
    catalogs: &Value,
    apis: &HashMap<String, Gvk>,
) -> Result<Vec<(String, String, i32, DeclarativeConfig)>, String> {
    let mut out = Vec::new();
    for (key, catalog) in pairs(catalogs, "catalogs")? {
        let path = format!("catalogs.{key}");
        let (name, namespace) = key
            .split_once('/')
            .ok_or(format!("{path}: a key <name>/<namespace> is expected"))?;
        known_keys(catalog, &path, &["priority", "packages"])?;
        let mut dc = DeclarativeConfig::default();
        for (pkg, body) in pairs(&catalog["packages"], &format!("{path}.packages"))? {
            let path = format!("{path}.packages.{pkg}");
            known_keys(body, &path, &["default", "channels"])?;
            dc.packages.push(Package {
                name: pkg.clone(),
                default_channel: scalar(&body["default"], &format!("{path}.default"))?,
                ..Default::default()
            });
            let mut bundles = BTreeSet::new();
            for (channel, entries) in pairs(&body["channels"], &format!("{path}.channels"))? {
                let path = format!("{path}.channels.{channel}");
                let mut channel_entries = Vec::new();
                for (i, e) in items(entries, &path)?.iter().enumerate() {
                    let path = format!("{path}[{i}]");
                    let entry = channel_entry(e, &path)?;
                    let properties = entry_properties(e, &path, &pkg, apis)?;
                    if bundles.insert(entry.name.clone()) {
                        dc.bundles.push(Bundle {
                            name: entry.name.clone(),
                            package: pkg.clone(),
                            properties,
                            ..Default::default()
                        });
                    }
                    channel_entries.push(entry);
                }
                dc.channels.push(Channel {
                    name: channel,
                    package: pkg.clone(),
                    entries: channel_entries,
                    ..Default::default()
                });
            }
        }
        let priority = priority(catalog, &path)?;
        out.push((name.to_owned(), namespace.to_owned(), priority, dc));
    }
    Ok(out)
}

const CSV_KEYS: [&str; 9] = [
    "n",
    "v",
    "prov",
    "req",
    "pkgreq",
    "r",
    "phase",
    "pkg",
    "pkgversion",
];
const SUB_KEYS: [&str; 6] = ["name", "pkg", "ch", "src", "installed", "startingCSV"];

fn classic_request(
    installed: &Value,
    catalogs: &Value,
    apis: &HashMap<String, Gvk>,
) -> Result<OwnedRequest, String> {
    known_keys(
        installed,
        "installed",
        &["namespace", "visible", "og", "csvs", "subs"],
    )?;
    let namespace = match scalar(&installed["namespace"], "installed.namespace")? {
        ns if ns.is_empty() => DEFAULT_NAMESPACE.to_owned(),
        ns => ns,
    };
    let visible = field(installed, "visible")
        .map(|v| scalars(v, "installed.visible"))
        .transpose()?;
    let catalogs = declarative_configs(catalogs, apis)?
        .into_iter()
        .filter(|(_, ns, _, _)| visible.as_ref().is_none_or(|v| v.contains(ns)))
        .collect();
    let mut csvs = Vec::new();
    for (i, c) in items(&installed["csvs"], "installed.csvs")?
        .iter()
        .enumerate()
    {
        let path = format!("installed.csvs[{i}]");
        known_keys(c, &path, &CSV_KEYS)?;
        let text = |k: &str| scalar(&c[k], &format!("{path}.{k}"));
        let provided = gvks(apis, &c["prov"], &format!("{path}.prov"))?;
        let required = gvks(apis, &c["req"], &format!("{path}.req"))?;
        // pkg/pkgversion/pkgreq only exist in a properties annotation.
        let annotation = if field(c, "pkg").is_some() || field(c, "pkgreq").is_some() {
            let mut props: Vec<Property> = provided
                .iter()
                .map(|g| property("olm.gvk", gvk_json(g)))
                .chain(
                    required
                        .iter()
                        .map(|g| property("olm.gvk.required", gvk_json(g))),
                )
                .collect();
            props.extend(package_requirements(c, &path)?);
            if field(c, "pkg").is_some() {
                props.push(property(
                    "olm.package",
                    serde_json::json!({"packageName": text("pkg")?, "version": text("pkgversion")?}),
                ));
            }
            Some(props)
        } else {
            None
        };
        let name = text("n")?;
        if name.is_empty() {
            return Err(format!("{path}.n: required"));
        }
        csvs.push(InstalledCsv {
            name,
            version: text("v")?,
            replaces: text("r")?,
            phase: match text("phase")? {
                p if p.is_empty() => "Succeeded".to_owned(),
                p => p,
            },
            properties: annotation,
            provided_apis: provided,
            required_apis: required,
        });
    }
    let mut subscriptions = Vec::new();
    for (i, sub) in items(&installed["subs"], "installed.subs")?
        .iter()
        .enumerate()
    {
        let path = format!("installed.subs[{i}]");
        known_keys(sub, &path, &SUB_KEYS)?;
        let text = |k: &str| scalar(&sub[k], &format!("{path}.{k}"));
        let src = text("src")?;
        let (source, source_namespace) = src.split_once('/').ok_or(format!(
            "{path}.src: <catalog>/<namespace> is expected, not {src:?}"
        ))?;
        subscriptions.push(Subscription {
            name: text("name")?,
            package: text("pkg")?,
            channel: text("ch")?,
            source: source.to_owned(),
            source_namespace: source_namespace.to_owned(),
            starting_csv: text("startingCSV")?,
            installed_csv: text("installed")?,
            current_csv: String::new(),
        });
    }
    known_keys(&installed["og"], "installed.og", &["upgradeStrategy"])?;
    let upgrade_strategy = match scalar(
        &installed["og"]["upgradeStrategy"],
        "installed.og.upgradeStrategy",
    )?
    .as_str()
    {
        "UnsafeFailForward" => UpgradeStrategy::UnsafeFailForward,
        "Default" | "" => UpgradeStrategy::Default,
        other => {
            return Err(format!(
                "installed.og.upgradeStrategy: unknown strategy {other:?}"
            ));
        }
    };
    Ok(OwnedRequest {
        namespace,
        catalogs,
        csvs,
        subscriptions,
        upgrade_strategy,
    })
}

/// A request whose catalogs are owned, since `ClassicRequest` borrows their content.
struct OwnedRequest {
    namespace: String,
    catalogs: Vec<(String, String, i32, DeclarativeConfig)>,
    csvs: Vec<InstalledCsv>,
    subscriptions: Vec<Subscription>,
    upgrade_strategy: UpgradeStrategy,
}

impl OwnedRequest {
    fn borrow(&self) -> ClassicRequest<'_> {
        ClassicRequest {
            namespace: self.namespace.clone(),
            catalogs: self
                .catalogs
                .iter()
                .map(|(name, namespace, priority, dc)| CatalogSource {
                    name: name.clone(),
                    namespace: namespace.clone(),
                    priority: *priority,
                    content: dc,
                })
                .collect(),
            installed: self.csvs.clone(),
            subscriptions: self.subscriptions.clone(),
            upgrade_strategy: self.upgrade_strategy,
            refused: Vec::new(),
        }
    }

    /// The InstallPlan of `operators`, each installed from its notation CSV.
    fn install_plan(&self, operators: &[classic::ResolvedOperator]) -> Result<InstallPlan, String> {
        classic::install_plan(
            &self.namespace,
            &self.subscriptions,
            &self.csvs,
            operators,
            |op| Ok::<_, String>(vec![notation_csv(&op.name)]),
        )
        .map_err(|e| e.to_string())
    }
}

const EXPECT_KEYS: [&str; 6] = [
    "result",
    "steps",
    "updated_subs",
    "unsat",
    "error",
    "error_contains",
];

fn classic_expectation(
    request: &OwnedRequest,
    got: Result<Vec<classic::ResolvedOperator>, ClassicError>,
    expect: &Value,
) -> Check {
    known_keys(expect, "expect", &EXPECT_KEYS)?;
    if let Some(unsat) = field(expect, "unsat") {
        let text = match &got {
            Err(e @ ClassicError::Unsatisfiable(SolveError::Unsatisfiable { messages })) => {
                unsat_matches(messages, unsat, "expect.unsat")?;
                e.to_string()
            }
            other => return Err(format!("expected unsatisfiable, got {other:?}")),
        };
        return match field(expect, "error") {
            Some(error) => expect_eq("error", text, scalar(error, "expect.error")?),
            None => Ok(()),
        };
    }
    if let Some(error) = field(expect, "error") {
        return expect_eq(
            "error",
            got.map_err(|e| e.to_string()).err(),
            Some(scalar(error, "expect.error")?),
        );
    }
    if let Some(wanted) = field(expect, "error_contains") {
        let parts = match wanted {
            Value::Sequence(_) => scalars(wanted, "expect.error_contains")?,
            other => vec![scalar(other, "expect.error_contains")?],
        };
        let text = got
            .map(|r| format!("resolved {r:?}"))
            .map_err(|e| e.to_string());
        let text = text.err().ok_or("expected an error")?;
        return match parts.iter().all(|p| text.contains(p.as_str())) {
            true => Ok(()),
            false => Err(format!("{text:?} lacks one of {parts:?}")),
        };
    }
    let got = got.map_err(|e| e.to_string())?;
    let mut got_ids: Vec<String> = got.iter().map(|op| op.id()).collect();
    let mut want_ids = Vec::new();
    let result = field(expect, "result").ok_or("expect: no result, unsat or error")?;
    for line in scalars(result, "expect.result")? {
        let mut words = line.split(' ');
        let id = words.next().unwrap_or_default().to_owned();
        let op = got.iter().find(|op| op.id() == id);
        for annotation in words {
            let (key, value) = annotation
                .split_once('=')
                .ok_or(format!("expect.result: unreadable {line:?}"))?;
            let actual = match (key, op) {
                ("replaces", Some(op)) => op.replaces.clone(),
                ("startingCSV", Some(op)) => op.starting_csv.clone().unwrap_or_default(),
                ("replaces" | "startingCSV", None) => continue,
                _ => return Err(format!("expect.result: unknown annotation {key}")),
            };
            expect_eq(&format!("{key} of {id}"), actual.as_str(), value)?;
        }
        want_ids.push(id);
    }
    got_ids.sort();
    want_ids.sort();
    expect_eq("result", got_ids, want_ids)?;
    let plan = request.install_plan(&got)?;
    if let Some(subs) = field(expect, "updated_subs") {
        updated_subs_match(&plan, subs)?;
    }
    if let Some(steps) = field(expect, "steps") {
        steps_match(&plan, &scalar(steps, "expect.steps")?)?;
    }
    Ok(())
}

fn updated_subs_match(plan: &InstallPlan, subs: &Value) -> Check {
    let mut want = Vec::new();
    for (i, s) in items(subs, "expect.updated_subs")?.iter().enumerate() {
        let path = format!("expect.updated_subs[{i}]");
        known_keys(s, &path, &["name", "currentCSV", "installedCSV"])?;
        let text = |k: &str| scalar(&s[k], &format!("{path}.{k}"));
        want.push((text("name")?, text("currentCSV")?, text("installedCSV")?));
    }
    let mut got: Vec<(String, String, String)> = plan
        .updated_subscriptions
        .iter()
        .map(|u| {
            (
                u.name.clone(),
                u.current_csv.clone(),
                u.installed_csv.clone(),
            )
        })
        .collect();
    want.sort();
    got.sort();
    expect_eq("updated_subs", got, want)
}

/// Checks the plan against the notation's sentences about steps, separated by `; `:
/// `none`; `bundle steps for <csv>[, <csv>][ and <csv>][ (CSV, then its CRDs/objects)]`;
/// `no extra Subscription step`; `[plus a ]Subscription step [named ]<name>` followed by
/// `with startingCSV <csv>`, `, startingCSV <csv>` or `(<field> <value>, ...)`;
/// `CSV step for <csv> has spec.replaces <csv>`.
fn steps_match(plan: &InstallPlan, text: &str) -> Check {
    let unreadable = |clause: &str| format!("expect.steps: no rule reads {clause:?}");
    let subscription_steps: Vec<&PlanStep> = plan
        .steps
        .iter()
        .filter(|s| s.kind == "Subscription")
        .collect();
    for clause in text.split("; ") {
        if clause == "none" {
            let nothing = plan.steps.is_empty() && plan.bundle_lookups.is_empty();
            expect_eq("no steps", nothing, true)?;
        } else if clause == "no extra Subscription step" {
            expect_eq("Subscription steps", subscription_steps.len(), 0)?;
        } else if let Some(rest) = clause.strip_prefix("bundle steps for ") {
            let (names, ordered) = match rest.strip_suffix(" (CSV, then its CRDs/objects)") {
                Some(names) => (names, true),
                None => (rest, false),
            };
            for name in names.split(" and ").flat_map(|n| n.split(", ")) {
                let first = plan.steps.iter().find(|s| s.resolving == name);
                let first = first.ok_or(format!("no bundle steps for {name}"))?;
                if ordered {
                    expect_eq(
                        &format!("first step of {name}"),
                        first.kind.as_str(),
                        "ClusterServiceVersion",
                    )?;
                }
            }
        } else if let Some(rest) = clause
            .strip_prefix("plus a Subscription step named ")
            .or_else(|| clause.strip_prefix("Subscription step "))
        {
            let (name, fields) = subscription_clause(rest).ok_or_else(|| unreadable(clause))?;
            let step = subscription_steps
                .iter()
                .find(|s| s.name == name)
                .ok_or(format!("no Subscription step {name}"))?;
            let manifest: serde_json::Value =
                serde_json::from_str(&step.manifest).map_err(|e| e.to_string())?;
            let spec = &manifest["spec"];
            for (key, want) in fields {
                let got = match key {
                    "package" => spec["name"].as_str().unwrap_or_default().to_owned(),
                    "source" => format!(
                        "{}/{}",
                        spec["source"].as_str().unwrap_or_default(),
                        spec["sourceNamespace"].as_str().unwrap_or_default()
                    ),
                    "channel" | "startingCSV" | "installPlanApproval" => {
                        spec[key].as_str().unwrap_or_default().to_owned()
                    }
                    _ => return Err(unreadable(clause)),
                };
                expect_eq(&format!("{key} of {name}"), got.as_str(), want)?;
            }
        } else if let Some(rest) = clause.strip_prefix("CSV step for ") {
            let (name, replaces) = rest
                .split_once(" has spec.replaces ")
                .ok_or_else(|| unreadable(clause))?;
            let csv = plan
                .steps
                .iter()
                .find(|s| s.resolving == name && s.kind == "ClusterServiceVersion")
                .ok_or(format!("no CSV step for {name}"))?;
            let manifest: serde_json::Value =
                serde_json::from_str(&csv.manifest).map_err(|e| e.to_string())?;
            expect_eq(
                &format!("spec.replaces of {name}"),
                manifest["spec"]["replaces"].as_str().unwrap_or_default(),
                replaces,
            )?;
        } else {
            return Err(unreadable(clause));
        }
    }
    Ok(())
}

/// `<name> with startingCSV <csv>`, `<name>, startingCSV <csv>` or
/// `<name> (<field> <value>, ...)`: the name and the fields.
fn subscription_clause(rest: &str) -> Option<(&str, Vec<(&str, &str)>)> {
    if let Some(listed) = rest.strip_suffix(')') {
        let (name, fields) = listed.split_once(" (")?;
        let fields = fields
            .split(", ")
            .map(|f| f.split_once(' '))
            .collect::<Option<Vec<_>>>()?;
        return Some((name, fields));
    }
    let (name, csv) = rest
        .split_once(" with startingCSV ")
        .or_else(|| rest.split_once(", startingCSV "))?;
    Some((name, vec![("startingCSV", csv)]))
}

// ---- V: v1 resolution ---------------------------------------------------------------------

/// `name@version` bundles of `package` (a bare `name` is its own version), each with an
/// `olm.package` property; `name@version/release` gives the property a `release`.
fn v1_bundles(
    specs: &Value,
    path: &str,
    package: &str,
    prefix: &str,
) -> Result<Vec<Bundle>, String> {
    Ok(scalars(specs, path)?
        .iter()
        .map(|spec| {
            let (name, version) = spec.split_once('@').unwrap_or((spec, spec));
            let mut value = serde_json::json!({"packageName": package, "version": version});
            if let Some((version, release)) = version.split_once('/') {
                value["version"] = version.into();
                value["release"] = release.into();
            }
            Bundle {
                name: format!("{prefix}{name}"),
                package: package.to_owned(),
                properties: vec![property("olm.package", value)],
                ..Default::default()
            }
        })
        .collect())
}

/// Deprecations of `package`: entries `{schema, name, message}`, or the shorthand
/// `<schema> <name>` of `olm.<schema>` deprecated with message `<schema> <name> is deprecated`.
fn v1_deprecations(specs: &Value, path: &str, package: &str) -> Result<Vec<Deprecations>, String> {
    let entries = read_items(specs, path, |d, path| {
        if let Value::String(short) = d {
            let (schema, name) = short
                .split_once(' ')
                .ok_or(format!("{path}: no rule reads {short:?}"))?;
            return Ok(DeprecationEntry {
                reference: DeprecationReference {
                    schema: format!("olm.{schema}"),
                    name: name.to_owned(),
                },
                message: format!("{short} is deprecated"),
            });
        }
        known_keys(d, path, &["schema", "name", "message"])?;
        let text = |key: &str| scalar(required(d, key, path)?, &join(path, key));
        Ok(DeprecationEntry {
            reference: DeprecationReference {
                schema: text("schema")?,
                name: text("name")?,
            },
            message: text("message")?,
        })
    })?;
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    Ok(vec![Deprecations {
        package: package.to_owned(),
        entries,
        ..Default::default()
    }])
}

/// A catalog body of the notation: `channels`, `bundles` and `deprecations`.
fn v1_content(body: &Value, path: &str, package: &str) -> Result<DeclarativeConfig, String> {
    let mut dc = DeclarativeConfig {
        packages: vec![Package {
            name: package.to_owned(),
            ..Default::default()
        }],
        bundles: v1_bundles(&body["bundles"], &join(path, "bundles"), package, "")?,
        deprecations: v1_deprecations(&body["deprecations"], &join(path, "deprecations"), package)?,
        ..Default::default()
    };
    let channels = join(path, "channels");
    for (name, entries) in pairs(&body["channels"], &channels)? {
        dc.channels.push(Channel {
            entries: entry_list(entries, &join(&channels, &name))?,
            name,
            package: package.to_owned(),
            ..Default::default()
        });
    }
    Ok(dc)
}

struct OwnedV1Catalog {
    name: String,
    priority: i32,
    available: bool,
    content: DeclarativeConfig,
}

fn v1_catalogs(
    spec: Option<&Value>,
    package: &str,
    ctx: &Context,
) -> Result<Vec<OwnedV1Catalog>, String> {
    let gen_fixture = || {
        ctx.gen_fixture
            .as_ref()
            .map(|g| v1_content(g, "GEN", package))
            .ok_or("no GEN fixture")?
    };
    let catalog = |name: &str, content, priority, available| OwnedV1Catalog {
        name: name.to_owned(),
        priority,
        available,
        content,
    };
    let Some(spec) = spec else {
        // The default: `c` holds GEN(p), `a` and `b` are empty for it.
        return Ok(vec![
            catalog("a", DeclarativeConfig::default(), 0, true),
            catalog("b", DeclarativeConfig::default(), 0, true),
            catalog("c", gen_fixture()?, 0, true),
        ]);
    };
    if let Value::String(prose) = spec {
        // `<count> catalogs, both|all availabilityMode <mode>`: catalogs a, b, ... each
        // holding GEN(p).
        let unreadable = || format!("catalogs: no rule reads {prose:?}");
        let (count, mode) = prose
            .split_once(" catalogs, both availabilityMode ")
            .or_else(|| prose.split_once(" catalogs, all availabilityMode "))
            .ok_or_else(unreadable)?;
        let count = ["two", "three", "four"]
            .iter()
            .position(|w| *w == count)
            .map(|i| i + 2)
            .ok_or_else(unreadable)?;
        let available = match mode {
            "Available" => true,
            "Unavailable" => false,
            _ => return Err(unreadable()),
        };
        return (b'a'..)
            .take(count)
            .map(|c| {
                Ok(catalog(
                    &char::from(c).to_string(),
                    gen_fixture()?,
                    0,
                    available,
                ))
            })
            .collect();
    }
    let mut out = Vec::new();
    for (name, body) in pairs(spec, "catalogs")? {
        let path = format!("catalogs.{name}");
        // `empty`, `GEN(<package>)`, or a body (whose `content` is a GEN fixture).
        let is_gen = |v: &Value| matches!(v, Value::String(s) if s == &format!("GEN({package})"));
        let content = match body {
            Value::String(s) if s == "empty" => DeclarativeConfig::default(),
            v if is_gen(v) => gen_fixture()?,
            Value::String(s) => return Err(format!("{path}: no rule reads {s:?}")),
            _ => {
                known_keys(
                    body,
                    &path,
                    &[
                        "priority",
                        "available",
                        "content",
                        "channels",
                        "bundles",
                        "deprecations",
                    ],
                )?;
                match field(body, "content") {
                    Some(c) if is_gen(c) => gen_fixture()?,
                    Some(c) => return Err(format!("{path}.content: no rule reads {c:?}")),
                    None => v1_content(body, &path, package)?,
                }
            }
        };
        let priority = priority(body, &path)?;
        let available = match field(body, "available") {
            None => true,
            Some(a) => boolean(a, &join(&path, "available"))?,
        };
        out.push(catalog(&name, content, priority, available));
    }
    Ok(out)
}

fn v1_request(spec: &Value) -> Result<V1Request, String> {
    known_keys(
        spec,
        "request",
        &[
            "package",
            "channels",
            "version",
            "policy",
            "selector",
            "installed",
        ],
    )?;
    let installed = match field(spec, "installed") {
        None => None,
        Some(i) => {
            known_keys(i, "request.installed", &["name", "version", "release"])?;
            Some(InstalledBundle {
                name: scalar(&i["name"], "request.installed.name")?,
                version: scalar(&i["version"], "request.installed.version")?,
                release: field(i, "release")
                    .map(|r| scalar(r, "request.installed.release"))
                    .transpose()?,
            })
        }
    };
    let policy = match scalar(&spec["policy"], "request.policy")?.as_str() {
        "SelfCertified" => UpgradePolicy::SelfCertified,
        "CatalogProvided" | "" => UpgradePolicy::CatalogProvided,
        other => return Err(format!("request.policy: unknown policy {other:?}")),
    };
    Ok(V1Request {
        package: match scalar(&spec["package"], "request.package")? {
            p if p.is_empty() => "p".to_owned(),
            p => p,
        },
        channels: scalars(&spec["channels"], "request.channels")?,
        version: scalar(&spec["version"], "request.version")?,
        policy,
        selector: field(spec, "selector").map(selector).transpose()?,
        installed,
    })
}

fn selector(v: &Value) -> Result<LabelSelector, String> {
    let path = "request.selector";
    known_keys(v, path, &["matchLabels", "matchExpressions"])?;
    let labels = join(path, "matchLabels");
    Ok(LabelSelector {
        match_labels: pairs(&v["matchLabels"], &labels)?
            .into_iter()
            .map(|(k, v)| Ok((k.clone(), scalar(v, &join(&labels, &k))?)))
            .collect::<Result<_, String>>()?,
        match_expressions: read_items(
            &v["matchExpressions"],
            &join(path, "matchExpressions"),
            |e, path| {
                known_keys(e, path, &["key", "operator", "values"])?;
                let text = |key: &str| scalar(required(e, key, path)?, &join(path, key));
                Ok(SelectorRequirement {
                    key: text("key")?,
                    operator: text("operator")?,
                    values: scalars(&e["values"], &join(path, "values"))?,
                })
            },
        )?,
    })
}

fn run_v1(s: &Value, ctx: &Context) -> Check {
    if let Some(table) = field(s, "legacy_table") {
        known_keys(
            s,
            "scenario",
            &[
                "id",
                "source",
                "channel_stable",
                "bundles",
                "cases",
                "legacy_table",
            ],
        )?;
        v1_successor_cases(s)?;
        return v1_legacy_table(table);
    }
    if field(s, "input").is_some() {
        known_keys(
            s,
            "scenario",
            &["id", "source", "input", "sorted_best_first"],
        )?;
        return v1_ordering(s);
    }
    if field(s, "bundles").is_some() {
        known_keys(s, "scenario", &["id", "source", "bundles", "cases"])?;
        return v1_semver_successors(s);
    }
    known_keys(
        s,
        "scenario",
        &[
            "id",
            "source",
            "catalogs",
            "request",
            "expect",
            "cases",
            "resolver_wrapping",
        ],
    )?;
    let cases: Vec<Value> = match field(s, "cases") {
        Some(_) => some_items(s, "cases")?.to_vec(),
        None => vec![Value::Mapping(Default::default())],
    };
    for (i, case) in cases.iter().enumerate() {
        let path = format!("cases[{i}]");
        if field(case, "range").is_some() {
            v1_range_case(case, &path)?;
            continue;
        }
        if field(case, "property").is_some() {
            v1_dependency_case(case, &path, field(s, "resolver_wrapping"))?;
            continue;
        }
        known_keys(
            case,
            &path,
            &["catalogs", "expect", "request", "selector", "version"],
        )?;
        let mut request = v1_request(
            field(case, "request")
                .or_else(|| field(s, "request"))
                .unwrap_or(&Value::Null),
        )?;
        if let Some(version) = field(case, "version") {
            request.version = scalar(version, &join(&path, "version"))?;
        }
        if let Some(sel) = field(case, "selector") {
            request.selector = Some(selector(sel)?);
        }
        let catalogs = v1_catalogs(
            field(case, "catalogs").or_else(|| field(s, "catalogs")),
            &request.package,
            ctx,
        )?;
        let expect = field(case, "expect")
            .or_else(|| field(s, "expect"))
            .ok_or(format!("{path}.expect: required"))?;
        let run = |request: &V1Request, expect: &Value, path: &str| {
            v1_expectation(&catalogs, request, expect, path)
                .map_err(|e| format!("case {}: {e}", i + 1))
        };
        match (
            field(expect, "current"),
            field(expect, "historic_semver_gate"),
        ) {
            (Some(current), Some(historic)) => {
                known_keys(expect, "expect", &["current", "historic_semver_gate"])?;
                run(&request, current, "expect.current")?;
                request.policy = UpgradePolicy::Semver;
                run(&request, historic, "expect.historic_semver_gate")?;
            }
            _ => run(&request, expect, "expect")?,
        }
    }
    Ok(())
}

/// Checks a v1 resolution against mapping `expect` (at `path`): its `error`, a part of it
/// (`error_contains`), or the `bundle` with its `version` and `deprecation` (null for none;
/// prose ending in `(non-nil)` for some).
fn v1_expectation(
    catalogs: &[OwnedV1Catalog],
    request: &V1Request,
    expect: &Value,
    path: &str,
) -> Check {
    known_keys(
        expect,
        path,
        &[
            "bundle",
            "version",
            "deprecation",
            "error",
            "error_contains",
        ],
    )?;
    let borrowed: Vec<V1Catalog<'_>> = catalogs
        .iter()
        .map(|c| V1Catalog {
            name: c.name.clone(),
            priority: c.priority,
            labels: Default::default(),
            available: c.available,
            content: &c.content,
        })
        .collect();
    let got = v1::resolve_extension(&borrowed, request).map_err(|e| e.to_string());
    let text = |key: &str| scalar(required(expect, key, path)?, &join(path, key));
    if field(expect, "error").is_some() {
        return expect_eq("error", got.err(), Some(text("error")?));
    }
    if field(expect, "error_contains").is_some() {
        let part = text("error_contains")?;
        let err = got.err().ok_or("expected an error")?;
        return match err.contains(&part) {
            true => Ok(()),
            false => Err(format!("{err:?} lacks {part:?}")),
        };
    }
    let got = got?;
    expect_eq("bundle", got.bundle.name, text("bundle")?)?;
    if field(expect, "version").is_some() {
        let version = got.version.map(|v| v.to_string());
        expect_eq("version", version, Some(text("version")?))?;
    }
    let want = match expect.get("deprecation") {
        None => return Ok(()),
        Some(Value::Null) => false,
        Some(Value::String(s)) if s.ends_with("(non-nil)") => true,
        Some(other) => {
            return Err(format!("{path}.deprecation: no rule reads {other:?}"));
        }
    };
    expect_eq("deprecation", got.deprecation.is_some(), want)
}

fn v1_range_case(case: &Value, path: &str) -> Check {
    let text = |key: &str| scalar(required(case, key, path)?, &join(path, key));
    let range = text("range")?;
    let parsed = VersionConstraint::parse(&range);
    if let Some(error) = field(case, "error") {
        known_keys(case, path, &["range", "error"])?;
        word(error, &join(path, "error"), &["true"])?;
        return expect_eq(&format!("error for {range:?}"), parsed.is_err(), true);
    }
    known_keys(case, path, &["range", "version", "match"])?;
    let parsed = parsed?;
    let version = VersionRelease::parse(&text("version")?)?;
    let want = boolean(required(case, "match", path)?, &join(path, "match"))?;
    expect_eq(&range, parsed.matches(&version.version), want)
}

/// V28: a picked bundle declaring a dependency is refused, not replaced by another. The
/// error is `wrapping` (the scenario's `resolver_wrapping`) around the case's, `<name>` being
/// the bundle.
fn v1_dependency_case(case: &Value, path: &str, wrapping: Option<&Value>) -> Check {
    known_keys(case, path, &["property", "error"])?;
    let kinds = ["olm.package.required", "olm.gvk.required", "olm.constraint"];
    let kind = word(
        required(case, "property", path)?,
        &join(path, "property"),
        &kinds,
    )?;
    let value = match kind.as_str() {
        "olm.package.required" => {
            serde_json::json!({"packageName": "q", "versionRange": ">=1.0.0"})
        }
        "olm.gvk.required" => serde_json::json!({"group": "g", "kind": "k", "version": "v"}),
        _ => serde_json::json!({"gvk": {"group": "g", "kind": "k", "version": "v"}}),
    };
    let specs = Value::Sequence(vec!["p.v0.1.0@0.1.0".into(), "p.v1.0.0@1.0.0".into()]);
    let mut bundles = v1_bundles(&specs, "bundles", "p", "")?;
    bundles[1].properties.push(property(&kind, value));
    let content = DeclarativeConfig {
        bundles,
        ..Default::default()
    };
    let catalog = [V1Catalog {
        name: "c".into(),
        priority: 0,
        labels: Default::default(),
        available: true,
        content: &content,
    }];
    let request = V1Request {
        package: "p".into(),
        ..Default::default()
    };
    let error = scalar(required(case, "error", path)?, &join(path, "error"))?;
    let wrapping = match wrapping {
        Some(w) => scalar(w, "resolver_wrapping")?,
        None => "<error above>".to_owned(),
    };
    if !wrapping.contains("<error above>") {
        return Err(format!("resolver_wrapping: no rule reads {wrapping:?}"));
    }
    let want = wrapping
        .replace("<error above>", &error)
        .replace("<name>", "p.v1.0.0");
    expect_eq(
        "error",
        v1::resolve_extension(&catalog, &request)
            .err()
            .map(|e| e.to_string()),
        Some(want),
    )
}

/// Sorts bundle names by version+release, best first, and keeps those `keep` accepts.
fn successors_sorted(
    bundles: &[Bundle],
    keep: impl Fn(&Bundle, Option<&VersionRelease>) -> bool,
) -> Vec<String> {
    let keys: Vec<Option<VersionRelease>> = bundles.iter().map(VersionRelease::of_bundle).collect();
    let mut order: Vec<usize> = (0..bundles.len()).collect();
    order.sort_by(|&a, &b| catalog::version_release::best_first(&keys[a], &keys[b]));
    order
        .into_iter()
        .filter(|&i| keep(&bundles[i], keys[i].as_ref()))
        .map(|i| bundles[i].name.clone())
        .collect()
}

fn installed_bundle(i: &Value, path: &str) -> Result<(InstalledBundle, VersionRelease), String> {
    known_keys(i, path, &["name", "version"])?;
    let text = |key: &str| scalar(required(i, key, path)?, &join(path, key));
    let installed = InstalledBundle {
        name: text("name")?,
        version: text("version")?,
        release: None,
    };
    let vr = VersionRelease::parse(&installed.version)?;
    Ok((installed, vr))
}

/// V21: the catalog successor predicate plus "same version+release" (the stay option).
fn v1_successor_cases(s: &Value) -> Check {
    let entries = entry_list(required(s, "channel_stable", "")?, "channel_stable")?;
    let refs: Vec<&ChannelEntry> = entries.iter().collect();
    let prefix = entries
        .first()
        .and_then(|e| e.name.split_once('.'))
        .map(|(p, _)| format!("{p}."))
        .unwrap_or_default();
    let bundles = v1_bundles(&s["bundles"], "bundles", "test-package", &prefix)?;
    each(s, "cases", |case, path| {
        known_keys(case, path, &["installed", "successors_or_self"])?;
        let installed = required(case, "installed", path)?;
        let (installed, ivr) = installed_bundle(installed, &join(path, "installed"))?;
        let got = successors_sorted(&bundles, |b, vr| {
            vr == Some(&ivr)
                || v1::is_successor(
                    UpgradePolicy::CatalogProvided,
                    &b.name,
                    vr,
                    &installed,
                    &ivr,
                    &refs,
                )
        });
        let want = successors_or_self(case, path)?;
        expect_eq(&format!("successors of {}", installed.name), got, want)
    })
}

/// A case's `successors_or_self`, best first.
fn successors_or_self(case: &Value, path: &str) -> Result<Vec<String>, String> {
    let path = join(path, "successors_or_self");
    scalars(
        case.get("successors_or_self")
            .ok_or(format!("{path}: required"))?,
        &path,
    )
}

fn v1_legacy_table(table: &Value) -> Check {
    let path = "legacy_table";
    known_keys(table, path, &["channel", "installed", "successor"])?;
    let entries = entry_list(required(table, "channel", path)?, "legacy_table.channel")?;
    let refs: Vec<&ChannelEntry> = entries.iter().collect();
    let installed = required(table, "installed", path)?;
    let (installed, ivr) = installed_bundle(installed, "legacy_table.installed")?;
    let successor = "legacy_table.successor";
    for (name, want) in pairs(required(table, "successor", path)?, successor)? {
        let want = boolean(want, &join(successor, &name))?;
        // "<unnamed bundle>" stands for a bundle with an empty name.
        let bundle = match name.as_str() {
            "<unnamed bundle>" => "",
            n if n.starts_with('<') => {
                return Err(format!("{successor}: no rule reads {name:?}"));
            }
            n => n,
        };
        let got = v1::is_successor(
            UpgradePolicy::CatalogProvided,
            bundle,
            None,
            &installed,
            &ivr,
            &refs,
        );
        expect_eq(&format!("successor {name}"), got, want)?;
    }
    Ok(())
}

/// V33: the opt-in semver policy (`^installed, != installed`) plus the stay option.
fn v1_semver_successors(s: &Value) -> Check {
    let bundles = v1_bundles(&s["bundles"], "bundles", "p", "")?;
    each(s, "cases", |case, path| {
        known_keys(case, path, &["installed", "successors_or_self"])?;
        let version = scalar(required(case, "installed", path)?, &join(path, "installed"))?;
        let installed = InstalledBundle {
            name: version.clone(),
            version: version.clone(),
            release: None,
        };
        let ivr = VersionRelease::parse(&version)?;
        let got = successors_sorted(&bundles, |b, vr| {
            vr == Some(&ivr)
                || v1::is_successor(UpgradePolicy::Semver, &b.name, vr, &installed, &ivr, &[])
        });
        let want = successors_or_self(case, path)?;
        expect_eq(&format!("successors of {version}"), got, want)
    })
}

/// V30: version+release order; `<...>` items have no readable version.
fn v1_ordering(s: &Value) -> Check {
    let input = scalars(&s["input"], "input")?;
    let keys = input
        .iter()
        .map(|v| match v.starts_with('<') {
            true => Ok(None),
            false => VersionRelease::parse(v)
                .map(Some)
                .map_err(|e| format!("input: {v:?}: {e}")),
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut order: Vec<usize> = (0..input.len()).collect();
    order.sort_by(|&a, &b| catalog::version_release::best_first(&keys[a], &keys[b]));
    let got: Vec<String> = order.into_iter().map(|i| input[i].clone()).collect();
    let want = required(s, "sorted_best_first", "")?;
    expect_eq("order", got, scalars(want, "sorted_best_first")?)
}

// ---- M: maxOpenShiftVersion -----------------------------------------------------------------

fn max_property(value: &str) -> Vec<Property> {
    vec![property(
        openshift::MAX_OPENSHIFT_VERSION,
        serde_json::Value::from(value),
    )]
}

fn run_openshift(s: &Value) -> Check {
    match which(s, "", &["matrix", "cases", "cluster"])? {
        Some(("matrix", _)) => {
            known_keys(
                s,
                "scenario",
                &["id", "source", "matrix", "more_v1", "next_minor"],
            )?;
            openshift_matrix(s)
        }
        Some(("cases", _)) => {
            known_keys(s, "scenario", &["id", "source", "cases"])?;
            each(s, "cases", |case, path| {
                known_keys(case, path, &["cluster", "max", "expect"])?;
                let text = |key: &str| scalar(required(case, key, path)?, &join(path, key));
                let props = max_property(&text("max")?);
                let blocking = openshift::classic_blocking(&text("cluster")?, &[("op", &props)])
                    .map_err(|e| e.to_string())?;
                let want = word(
                    required(case, "expect", path)?,
                    &join(path, "expect"),
                    &["compatible", "incompatible"],
                )?;
                let got = if blocking.is_empty() {
                    "compatible"
                } else {
                    "incompatible"
                };
                expect_eq(path, got, want.as_str())
            })
        }
        Some(_) => {
            known_keys(s, "scenario", &["id", "source", "cluster", "max", "expect"])?;
            openshift_report(s)
        }
        None => {
            known_keys(s, "scenario", &["id", "source", "expect"])?;
            openshift_never_resolves(&scalar(required(s, "expect", "")?, "expect")?)
        }
    }
}

/// The compatibility report of operators `max` (name: maxOpenShiftVersion) on `cluster`.
fn openshift_report(s: &Value) -> Check {
    let props = pairs(&s["max"], "max")?
        .into_iter()
        .map(|(name, max)| {
            let max = scalar(max, &join("max", &name))?;
            Ok((name, max_property(&max)))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let operators: Vec<(&str, &[Property])> = props
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_slice()))
        .collect();
    let cluster = scalar(&s["cluster"], "cluster")?;
    let got = openshift::classic_blocking(&cluster, &operators).map_err(|e| e.to_string());
    let expect = required(s, "expect", "")?;
    if let ("error_contains", part) =
        exactly_one(expect, "expect", &["incompatible", "error_contains"])?
    {
        known_keys(expect, "expect", &["error_contains", "kind"])?;
        let part = scalar(part, "expect.error_contains")?;
        let err = got.err().ok_or("expected an error")?;
        if !err.contains(&part) {
            return Err(format!("{err:?} lacks {part:?}"));
        }
        if let Some(kind) = field(expect, "kind") {
            word(kind, "expect.kind", &["transient"])?;
            // A transient error is the cluster's, not an operator's: it comes without any.
            let bare = openshift::classic_blocking(&cluster, &[])
                .err()
                .map(|e| e.to_string());
            expect_eq("error without operators", bare, Some(err))?;
        }
        return Ok(());
    }
    known_keys(expect, "expect", &["incompatible"])?;
    let got: Vec<(String, String)> = got?
        .into_iter()
        .map(|b| match b.reason {
            BlockReason::Max(m) => (b.name, format!("max {m}")),
            BlockReason::Invalid(e) => (b.name, format!("error {e}")),
        })
        .collect();
    let want = read_items(
        &expect["incompatible"],
        "expect.incompatible",
        |op, path| {
            known_keys(op, path, &["name", "max", "error"])?;
            let (key, value) = exactly_one(op, path, &["max", "error"])?;
            let reason = scalar(value, &join(path, key))?;
            let name = scalar(required(op, "name", path)?, &join(path, "name"))?;
            Ok((name, format!("{key} {reason}")))
        },
    )?;
    expect_eq("incompatible", got, want)
}

/// M07: classic and v1 agree on the matrix; v1 extra rows; next minors.
fn openshift_matrix(s: &Value) -> Check {
    let blocks =
        |v: &Value, path: &str| Ok::<_, String>(word(v, path, &["ok", "blocks"])? == "blocks");
    each(s, "matrix", |row, path| {
        let cluster = scalar(required(row, "cluster", path)?, &join(path, "cluster"))?;
        for (max, verdict) in pairs(row, path)? {
            if max == "cluster" {
                continue;
            }
            let want = blocks(verdict, &join(path, &max))?;
            let props = max_property(&max);
            let classic = !openshift::classic_blocking(&cluster, &[("op", &props)])
                .map_err(|e| e.to_string())?
                .is_empty();
            expect_eq(&format!("classic max {max} on {cluster}"), classic, want)?;
            let v1_max = openshift::v1_max(&props)?.ok_or("no max")?;
            let v1 = !openshift::v1_compatible(v1_max, &format!("{cluster}.0"))
                .map_err(|e| e.to_string())?;
            expect_eq(&format!("v1 max {max} on {cluster}"), v1, want)?;
        }
        Ok(())
    })?;
    if field(s, "more_v1").is_some() {
        each(s, "more_v1", |row, path| {
            known_keys(row, path, &["max", "cluster", "result"])?;
            let text = |key: &str| scalar(required(row, key, path)?, &join(path, key));
            let max = openshift::v1_max(&max_property(&text("max")?))?.ok_or("no max")?;
            let got = !openshift::v1_compatible(max, &format!("{}.0", text("cluster")?))
                .map_err(|e| e.to_string())?;
            let want = blocks(required(row, "result", path)?, &join(path, "result"))?;
            expect_eq(path, got, want)
        })?;
    }
    for (cluster, next) in pairs(&s["next_minor"], "next_minor")? {
        let got = openshift::classic_next_minor(&cluster)
            .map_err(|e| e.to_string())?
            .to_string();
        let want = scalar(next, &join("next_minor", &cluster))?;
        expect_eq(&format!("next minor of {cluster}"), got, want)?;
    }
    Ok(())
}

/// M09's prose, read clause by clause (`; ` between clauses):
/// * `<resolvers> resolution results are identical with and without the property`, with
///   resolvers `classic`, `v1` or `classic and v1`: each resolves a one-bundle catalog alike
///   whether its bundle carries the property or not;
/// * `only the compatibility report changes`: a cluster the property's version blocks
///   reports the operator, and reports nothing without the property.
fn openshift_never_resolves(expect: &str) -> Check {
    let with_max = |max: bool| {
        let mut props = vec![property(
            "olm.package",
            serde_json::json!({"packageName": "p", "version": "1.0.0"}),
        )];
        if max {
            props.extend(max_property("4.1"));
        }
        DeclarativeConfig {
            packages: vec![Package {
                name: "p".into(),
                ..Default::default()
            }],
            channels: vec![Channel {
                name: "stable".into(),
                package: "p".into(),
                entries: vec![ChannelEntry {
                    name: "p.v1.0.0".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            bundles: vec![Bundle {
                name: "p.v1.0.0".into(),
                package: "p".into(),
                properties: props,
                ..Default::default()
            }],
            ..Default::default()
        }
    };
    let classic_result = |dc: &DeclarativeConfig| {
        let request = ClassicRequest {
            namespace: "ns".into(),
            catalogs: vec![CatalogSource {
                name: "c".into(),
                namespace: "ns".into(),
                priority: 0,
                content: dc,
            }],
            subscriptions: vec![Subscription {
                name: "p-stable".into(),
                package: "p".into(),
                channel: "stable".into(),
                source: "c".into(),
                source_namespace: "ns".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        classic::resolve_namespace(&request)
            .map(|ops| ops.iter().map(|o| o.id()).collect::<Vec<_>>())
            .map_err(|e| e.to_string())
    };
    let v1_result = |dc: &DeclarativeConfig| {
        let catalogs = [V1Catalog {
            name: "c".into(),
            priority: 0,
            labels: Default::default(),
            available: true,
            content: dc,
        }];
        v1::resolve_extension(
            &catalogs,
            &V1Request {
                package: "p".into(),
                ..Default::default()
            },
        )
        .map(|r| r.bundle.name)
    };
    let (plain, capped) = (with_max(false), with_max(true));
    for clause in expect.split("; ") {
        if clause == "only the compatibility report changes" {
            let reported = |props: &[Property]| {
                openshift::classic_blocking("4.1.0", &[("p", props)]).map(|b| b.len())
            };
            expect_eq(
                "reported with the property",
                reported(&max_property("4.1")),
                Ok(1),
            )?;
            expect_eq("reported without it", reported(&[]), Ok(0))?;
            continue;
        }
        let resolvers = clause
            .strip_suffix(" resolution results are identical with and without the property")
            .ok_or(format!("expect: no rule reads {clause:?}"))?;
        let (classic, v1) = match resolvers {
            "classic" => (true, false),
            "v1" => (false, true),
            "classic and v1" => (true, true),
            other => return Err(format!("expect: unknown resolvers {other:?}")),
        };
        if classic {
            expect_eq("classic", classic_result(&capped), classic_result(&plain))?;
            expect_eq(
                "classic result",
                classic_result(&plain),
                Ok(vec!["c/ns/stable/p.v1.0.0".to_owned()]),
            )?;
        }
        if v1 {
            expect_eq("v1", v1_result(&capped), v1_result(&plain))?;
            expect_eq("v1 result", v1_result(&plain), Ok("p.v1.0.0".to_owned()))?;
        }
    }
    Ok(())
}

/// `PASS` or the reason of a FAIL for one scenario written in YAML.
fn verdict(yaml: &str) -> String {
    let s: Value = serde_yaml::from_str(yaml).expect("test YAML");
    let ctx = Context {
        seen: HashMap::new(),
        gen_fixture: None,
    };
    match run(&text_of(&s["id"]), &s, &ctx) {
        Ok(()) => "PASS".to_owned(),
        Err(reason) => reason,
    }
}

/// A scenario the harness cannot read fails, naming the field, instead of passing as if its
/// catalogs or installed state were empty.
#[test]
fn unreadable_scenarios_fail_naming_the_field() {
    let catalog = "{c/ns: {packages: {a: {channels: {alpha: [{n: a.v1}]}}}}}";
    let sub = "{name: a-alpha, pkg: a, ch: alpha, src: c/ns}";
    let scenario = |catalogs: &str, installed: &str, expect: &str| {
        format!("{{id: C99, catalogs: {catalogs}, installed: {installed}, expect: {expect}}}")
    };
    let ok = r#"{result: ["c/ns/alpha/a.v1"], updated_subs: [{name: a-alpha, currentCSV: a.v1}], steps: "bundle steps for a.v1 (CSV, then its CRDs/objects); no extra Subscription step"}"#;
    let installed = format!("{{namespace: ns, subs: [{sub}]}}");
    assert_eq!(verdict(&scenario(catalog, &installed, ok)), "PASS");
    for (catalogs, installed, expect, reason) in [
        (
            r#""three bundles somewhere""#.to_owned(),
            installed.clone(),
            ok,
            r#"catalogs: no rule reads "three bundles somewhere""#,
        ),
        (
            catalog.replace("{n: a.v1}", "{n: a.v1, prov: API1}"),
            installed.clone(),
            ok,
            r#"catalogs.c/ns.packages.a.channels.alpha[0].prov: a list is expected, not String("API1")"#,
        ),
        (
            catalog.replace("{n: a.v1}", "{n: a.v1, provides: [API1]}"),
            installed.clone(),
            ok,
            "catalogs.c/ns.packages.a.channels.alpha[0].provides: not a field of the notation",
        ),
        (
            catalog.to_owned(),
            installed.replace("pkg: a", "package: a"),
            ok,
            "installed.subs[0].package: not a field of the notation",
        ),
        (
            catalog.to_owned(),
            installed.replace("src: c/ns", "src: c"),
            ok,
            r#"installed.subs[0].src: <catalog>/<namespace> is expected, not "c""#,
        ),
        (
            catalog.to_owned(),
            installed.clone(),
            r#"{result: ["c/ns/alpha/a.v1"], steps: "a CSV, probably"}"#,
            r#"expect.steps: no rule reads "a CSV, probably""#,
        ),
        (
            catalog.to_owned(),
            installed.clone(),
            r#"{result: ["c/ns/alpha/a.v1"], updated_subs: [{name: a-alpha, currentCSV: a.v2}]}"#,
            r#"updated_subs: got [("a-alpha", "a.v1", "")], want [("a-alpha", "a.v2", "")]"#,
        ),
        (
            catalog.to_owned(),
            installed.clone(),
            "{results: []}",
            "expect.results: not a field of the notation",
        ),
    ] {
        assert_eq!(verdict(&scenario(&catalogs, &installed, expect)), reason);
    }
    let cases = format!("{{id: C99, catalogs: {catalog}, cases: [{{installed: {installed}}}]}}");
    assert_eq!(verdict(&cases), "cases[0].expect: required");
    for (v1, reason) in [
        (
            r#"{id: V99, catalogs: {a: "GEN(q)"}, request: {package: p}, expect: {bundle: p.v1}}"#,
            r#"catalogs.a: no rule reads "GEN(q)""#,
        ),
        (
            "{id: V99, request: {package: p, policy: Newest}, expect: {bundle: p.v1}}",
            r#"request.policy: unknown policy "Newest""#,
        ),
        (
            "{id: V99, cases: [{request: {pkg: p}, expect: {bundle: p.v1}}]}",
            "request.pkg: not a field of the notation",
        ),
    ] {
        assert_eq!(verdict(v1), reason);
    }
    let cases = format!("{{id: C99, catalogs: {catalog}, cases: []}}");
    assert_eq!(verdict(&cases), "cases: empty");
    let cases = format!("{{id: C99, catalogs: {catalog}, cases: {{installed: {installed}}}}}");
    assert_eq!(
        verdict(&cases).split(',').next(),
        Some("cases: a list is expected")
    );
}

/// The E, P, S, R, M and V groups are read as strictly as the classic one: each broken shape
/// fails naming its field, and a well-formed scenario of each shape passes.
#[test]
fn unreadable_scenarios_of_every_group_fail_naming_the_field() {
    for (yaml, want) in [
        // R: range tables and admission lists.
        (
            r#"{id: R99, lib: masterminds, rows: [{c: "1.2", yes: [1.2.0], no: [1.3.0]}]}"#,
            "PASS",
        ),
        (
            r#"{id: R99, lib: masterminds, rows: [{c: "1.2", yes: [1.2.0], no: [1.3.0], maybe: [1.2.5]}]}"#,
            "rows[0].maybe: not a field of the notation",
        ),
        (
            r#"{id: R99, lib: semver, rows: [{c: "1"}]}"#,
            r#"lib: one of masterminds, blang is expected, not "semver""#,
        ),
        ("{id: R99, lib: blang, rows: []}", "rows: empty"),
        (
            r#"{id: R99, lib: blang, rows: [{r: ">=1.0.0", yes: [1.0.0]}]}"#,
            "rows[0].no: required",
        ),
        (
            r#"{id: R99, rows: [{in: "1", out: 1.0.0, error: x}]}"#,
            "rows[0].out and error: only one of them",
        ),
        (r#"{id: R99, accept: ["1.2.3"]}"#, "reject: required"),
        (
            "{id: R99, title: t}",
            "scenario: one of rows, accept is required",
        ),
        // E: CEL rules.
        (
            r#"{id: E99, cases: [{rule: "true", result: true}]}"#,
            "PASS",
        ),
        (
            r#"{id: E99, properties: [{type: olm.test, val: "1"}], cases: [{rule: "true", result: true}]}"#,
            "properties[0].val: not a field of the notation",
        ),
        (
            r#"{id: E99, cases: [{rule: "true"}]}"#,
            "cases[0]: one of result, compile_error is required",
        ),
        (
            r#"{id: E99, cases: [{rule: "true", result: "yes"}]}"#,
            r#"cases[0].result: true or false is expected, not String("yes")"#,
        ),
        (
            r#"{id: E99, cases: [{rule: "1", compile_error: false}]}"#,
            "cases[0].compile_error: true or the message is expected, not Bool(false)",
        ),
        (
            r#"{id: E99, rule: "true", expect: {matches: true, error: maybe}}"#,
            r#"expect.error: one of none is expected, not "maybe""#,
        ),
        (
            r#"{id: E99, rule: "true", cases: [{rule: "true", result: true}]}"#,
            "cases and rule: only one of them",
        ),
        // P: olm.constraint parsing.
        (
            r#"{id: P99, cases: [{in: '{"gvk":{"group":"g","version":"v","kind":"k"}}', kind: gvk}]}"#,
            "PASS",
        ),
        (
            r#"{id: P99, cases: [{in: '{"gvk":{"group":"g","version":"v","kind":"k"}}', kind: gvk, why: x}]}"#,
            "cases[0].why: not a field of the notation",
        ),
        (
            r#"{id: P99, cases: [{c: "{}"}]}"#,
            "cases[0]: one of kind, text is required",
        ),
        (
            r#"{id: P99, in: "any many bytes", expect: {error: x}}"#,
            r#"in: no rule reads "any many bytes""#,
        ),
        (
            r#"{id: P99, in: "{}", boundary: "big enough", expect: {error: x}}"#,
            r#"boundary: no rule reads "big enough""#,
        ),
        (
            r#"{id: P99, in: "{}", expect: {predicate: x}}"#,
            "expect.predicate: not a field of the notation",
        ),
        (r#"{id: P99, in: "{}"}"#, "expect: required"),
        // S: solver problems and error texts.
        ("{id: S99, vars: {a: [M]}, expect: {selected: [a]}}", "PASS"),
        (
            r#"{id: S99, vars: {a: [M, "X(b)"]}, expect: {selected: [a]}}"#,
            "vars.a[1]: unknown constraint X(b)",
        ),
        (
            "{id: S99, vars: {a: M}, expect: {selected: [a]}}",
            r#"vars.a: a list is expected, not String("M")"#,
        ),
        (
            "{id: S99, vars: {a: [M]}, expect: {chosen: [a]}}",
            "expect.chosen: not a field of the notation",
        ),
        (
            "{id: S99, vars: {a: [M, P]}, expect: {unsat: {}}}",
            "expect.unsat: one of exact, exact_derived, contains, one_of is required",
        ),
        (
            r#"{id: S99, cases: [{core: ["a is mandatory"]}]}"#,
            "cases[0].error: required",
        ),
        (
            r#"{id: S99, cases: [{error: "x"}]}"#,
            "cases[0].core: required",
        ),
        // M: maxOpenShiftVersion reports.
        (
            "{id: M99, expect: \"v1 resolution results are identical with and without the property; only the compatibility report changes\"}",
            "PASS",
        ),
        (
            r#"{id: M99, cluster: 1.0.0, max: {a: "1.0"}, expect: {incompatible: [{name: a, maximum: "1.0"}]}}"#,
            "expect.incompatible[0].maximum: not a field of the notation",
        ),
        (
            r#"{id: M99, cluster: "", expect: {error_contains: missing, kind: permanent}}"#,
            r#"expect.kind: one of transient is expected, not "permanent""#,
        ),
        (
            "{id: M99, cluster: 1.0.0, expect: {incompatible: [], kind: transient}}",
            "expect.kind: not a field of the notation",
        ),
        (
            r#"{id: M99, cases: [{cluster: 1.0.1, max: "1.1", expect: fine}]}"#,
            r#"cases[0].expect: one of compatible, incompatible is expected, not "fine""#,
        ),
        (
            r#"{id: M99, matrix: [{cluster: "4.22", "4.23": maybe}]}"#,
            r#"matrix[0].4.23: one of ok, blocks is expected, not "maybe""#,
        ),
        (
            r#"{id: M99, expect: "resolution is unaffected"}"#,
            r#"expect: no rule reads "resolution is unaffected""#,
        ),
        (
            r#"{id: M99, expect: "v2 resolution results are identical with and without the property"}"#,
            r#"expect: unknown resolvers "v2""#,
        ),
        // V: successor tables, orderings, range and dependency cases, catalog bodies.
        (
            r#"{id: V99, input: ["1.0.0"], sorted: ["1.0.0"]}"#,
            "scenario.sorted: not a field of the notation",
        ),
        (
            r#"{id: V99, input: ["1.0.0"]}"#,
            "sorted_best_first: required",
        ),
        (
            "{id: V99, bundles: [p.v1@1.0.0], cases: [{installed: 1.0.0, successors: []}]}",
            "cases[0].successors: not a field of the notation",
        ),
        (
            "{id: V99, bundles: [p.v1@1.0.0], cases: []}",
            "cases: empty",
        ),
        (
            "{id: V99, request: {package: p}, cases: []}",
            "cases: empty",
        ),
        (
            "{id: V99, catalogs: {c: empty}, request: {package: p}, cases: [{version: 1.0.0}]}",
            "cases[0].expect: required",
        ),
        (
            r#"{id: V99, channel_stable: [{n: p.v1}], bundles: [v1@1.0.0], cases: [{installed: {name: p.v1, version: 1.0.0}, successors_or_self: [p.v1]}], legacy_table: {channel: [{n: p.v2, r: p.v1}], installed: {name: p.v1, version: 1.0.0}, successor: {p.v2: yes}}}"#,
            r#"legacy_table.successor.p.v2: true or false is expected, not String("yes")"#,
        ),
        (
            r#"{id: V99, cases: [{range: "1.0.0", version: 1.0.0, matches: true}]}"#,
            "cases[0].matches: not a field of the notation",
        ),
        (
            "{id: V99, cases: [{property: olm.bundle.required, error: x}]}",
            r#"cases[0].property: one of olm.package.required, olm.gvk.required, olm.constraint is expected, not "olm.bundle.required""#,
        ),
        (
            "{id: V99, resolver_wrapping: wrapped, cases: [{property: olm.gvk.required, error: x}]}",
            r#"resolver_wrapping: no rule reads "wrapped""#,
        ),
        (
            "{id: V99, catalogs: {c: {bundles: [p.v1@1.0.0], channels: {stable: [{n: p.v1}]}}}, request: {package: p}, expect: {bundle: p.v1, deprecation: null}}",
            "PASS",
        ),
        (
            "{id: V99, catalogs: {c: {bundles: [p.v1@1.0.0], channels: {stable: [{n: p.v1}]}}}, request: {package: p}, expect: {bundle: p.v1, deprecation: some}}",
            r#"case 1: expect.deprecation: no rule reads String("some")"#,
        ),
        (
            "{id: V99, catalogs: {c: {bundles: [p.v1@1.0.0], deprecations: [p.v1]}}, request: {package: p}, expect: {bundle: p.v1}}",
            r#"catalogs.c.deprecations[0]: no rule reads "p.v1""#,
        ),
        // A group letter no reader knows.
        ("{id: X01, expect: {}}", r#"id: no group reads "X01""#),
    ] {
        assert_eq!(verdict(yaml), want, "{yaml}");
    }
}
