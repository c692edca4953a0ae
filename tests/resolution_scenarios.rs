//! Runs every scenario of the resolution fixture catalogue through the public resolver API.
//!
//! The file is `$RESOLUTION_SCENARIOS`, or `../shared/spec/resolution-scenarios.md` next to
//! the crate; each fenced `yaml` block holding a list is a group of scenarios. One line is
//! printed per scenario (`PASS <id>`, `FAIL <id>: reason`, or `SKIP <id>: reason` for a
//! group the resolver does not implement yet); any FAIL fails the test.
use std::path::PathBuf;

use std::collections::{BTreeSet, HashMap};

use olm_registry::catalog::semver::{Range, Version};
use olm_registry::catalog::types::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, DeprecationEntry, DeprecationReference,
    Deprecations, Package, Property,
};
use olm_registry::resolve::classic::{
    self, CatalogSource, ClassicError, ClassicRequest, Gvk, InstalledCsv, Subscription,
    UpgradeStrategy,
};
use olm_registry::resolve::openshift::{self, BlockReason};
use olm_registry::resolve::solver::{self, Constraint, ConstraintKind, SolveError, Variable};
use olm_registry::resolve::v1::{
    self, InstalledBundle, LabelSelector, SelectorRequirement, UpgradePolicy, V1Catalog, V1Request,
    VersionRelease,
};
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
    let blocks = yaml_blocks(&text);
    // The `GEN(p)` fixture of the v1 scenarios.
    let gen_fixture = blocks.iter().find_map(|b| b.get("GEN")).cloned();
    let scenarios = blocks
        .into_iter()
        .filter_map(|block| match block {
            Value::Sequence(items) => Some(items),
            _ => None,
        })
        .flatten()
        .filter(|s| s.get("id").is_some());
    let (mut passed, mut failed, mut skipped) = (0, Vec::new(), 0);
    let mut ctx = Context {
        seen: HashMap::new(),
        gen_fixture,
    };
    for scenario in scenarios {
        let id = text_of(&scenario["id"]);
        let verdict = run(&id, &scenario, &ctx);
        ctx.seen.insert(id.clone(), scenario);
        match verdict {
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

/// What scenarios may refer to besides themselves.
struct Context {
    /// Earlier scenarios by id, for fixtures written as "as C14a but ...".
    seen: HashMap<String, Value>,
    gen_fixture: Option<Value>,
}

fn run(id: &str, s: &Value, ctx: &Context) -> Verdict {
    let group = id.trim_start_matches(|c: char| c.is_ascii_uppercase());
    let letter = &id[..id.len() - group.len()];
    let result = match letter {
        "R" => run_range(s),
        "E" => run_cel(s),
        "P" => run_constraint(s),
        "S" => run_solver(s),
        "C" => run_classic(s, &ctx.seen),
        "V" => run_v1(s, ctx),
        "M" => run_openshift(s),
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

// ---- C: classic resolution ----------------------------------------------------------------

const DEFAULT_NAMESPACE: &str = "catsrc-namespace";

fn run_classic(s: &Value, seen: &HashMap<String, Value>) -> Check {
    if s.get("catalogs").is_none() {
        // C54: the chain-sorting table.
        for case in s["cases"].as_sequence().into_iter().flatten() {
            chain_case(case)?;
        }
        return Ok(());
    }
    let catalogs = classic_catalogs(s, seen)?;
    let apis = api_names(s);
    let runs: Vec<(&Value, &Value)> = match field(s, "rounds").or_else(|| field(s, "cases")) {
        Some(list) => list
            .as_sequence()
            .into_iter()
            .flatten()
            .map(|r| (&r["installed"], &r["expect"]))
            .collect(),
        None => vec![(&s["installed"], &s["expect"])],
    };
    for (i, (installed, expect)) in runs.into_iter().enumerate() {
        let request = classic_request(installed, &catalogs, &apis)?;
        let got = classic::resolve(&request.borrow());
        classic_expectation(got, expect).map_err(|e| format!("run {}: {e}", i + 1))?;
    }
    Ok(())
}

fn chain_case(case: &Value) -> Check {
    let entries: Vec<ChannelEntry> = case["in"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(channel_entry)
        .collect();
    let refs: Vec<&ChannelEntry> = entries.iter().collect();
    let got = classic::chain::sort_channel("package", "channel", &refs).map(|order| {
        order
            .iter()
            .map(|&i| entries[i].name.clone())
            .collect::<Vec<_>>()
    });
    match field(case, "error") {
        Some(err) => expect_eq("chain", got, Err(text_of(err))),
        None => expect_eq("chain", got, Ok(list(&case["out"]))),
    }
}

/// The catalogs of a scenario: written out, derived from an earlier scenario
/// ("as C14a but <catalog> also has priority <n>"), or described in prose that the
/// scenario's expectation does not depend on (C52 fails before catalogs are read).
fn classic_catalogs(s: &Value, seen: &HashMap<String, Value>) -> Result<Value, String> {
    let catalogs = &s["catalogs"];
    let Value::String(prose) = catalogs else {
        return Ok(catalogs.clone());
    };
    let Some(rest) = prose.strip_prefix("as ") else {
        return Ok(Value::Mapping(Default::default()));
    };
    let (base, change) = rest
        .split_once(" but ")
        .ok_or(format!("unreadable {prose:?}"))?;
    let mut derived = seen
        .get(base)
        .map(|b| b["catalogs"].clone())
        .ok_or(format!("unknown base scenario {base}"))?;
    let (catalog, priority) = change
        .split_once(" also has priority ")
        .ok_or(format!("unreadable {prose:?}"))?;
    let priority: i64 = priority
        .trim()
        .parse()
        .map_err(|_| format!("unreadable {prose:?}"))?;
    derived[catalog]["priority"] = Value::from(priority);
    Ok(derived)
}

fn api_names(s: &Value) -> HashMap<String, Gvk> {
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
    for (name, gvk) in s["apis"].as_mapping().into_iter().flatten() {
        apis.insert(
            text_of(name),
            Gvk {
                group: text_of(&gvk["group"]),
                version: text_of(&gvk["version"]),
                kind: text_of(&gvk["kind"]),
            },
        );
    }
    apis
}

fn gvk(apis: &HashMap<String, Gvk>, name: &str) -> Result<Gvk, String> {
    if let Some(g) = apis.get(name) {
        return Ok(g.clone());
    }
    match name.split('/').collect::<Vec<_>>().as_slice() {
        [group, version, kind] => Ok(Gvk {
            group: (*group).to_owned(),
            version: (*version).to_owned(),
            kind: (*kind).to_owned(),
        }),
        _ => Err(format!("unknown API {name}")),
    }
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

fn channel_entry(e: &Value) -> ChannelEntry {
    ChannelEntry {
        name: text_of(&e["n"]),
        replaces: text_of(&e["r"]),
        skips: list(&e["s"]),
        skip_range: text_of(&e["sr"]),
    }
}

/// The properties an entry of the notation carries, in a fixed order.
fn entry_properties(
    e: &Value,
    package: &str,
    apis: &HashMap<String, Gvk>,
) -> Result<Vec<Property>, String> {
    let version = field(e, "v")
        .map(text_of)
        .unwrap_or_else(|| "0.0.0".to_owned());
    let mut props = vec![property(
        "olm.package",
        serde_json::json!({"packageName": package, "version": version}),
    )];
    for api in list(&e["prov"]) {
        props.push(property("olm.gvk", gvk_json(&gvk(apis, &api)?)));
    }
    for api in list(&e["req"]) {
        props.push(property("olm.gvk.required", gvk_json(&gvk(apis, &api)?)));
    }
    props.extend(package_requirements(e));
    if let Some(label) = field(e, "label") {
        props.push(property(
            "olm.label",
            serde_json::json!({"label": text_of(label)}),
        ));
    }
    if let Some(label) = field(e, "labelreq") {
        props.push(property(
            "olm.label.required",
            serde_json::json!({"label": text_of(label)}),
        ));
    }
    if let Some(raw) = field(e, "constraint") {
        props.push(Property {
            kind: "olm.constraint".to_owned(),
            value: text_of(raw),
        });
    }
    if field(e, "deprecated").and_then(Value::as_bool) == Some(true) {
        props.push(property("olm.deprecated", serde_json::json!({})));
    }
    Ok(props)
}

fn package_requirements(e: &Value) -> Vec<Property> {
    e["pkgreq"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|r| {
            property(
                "olm.package.required",
                serde_json::json!({"packageName": text_of(&r["p"]), "versionRange": text_of(&r["r"])}),
            )
        })
        .collect()
}

/// One FBC per catalog key of the notation.
fn declarative_configs(
    catalogs: &Value,
    apis: &HashMap<String, Gvk>,
) -> Result<Vec<(String, String, i32, DeclarativeConfig)>, String> {
    let mut out = Vec::new();
    for (key, catalog) in catalogs.as_mapping().into_iter().flatten() {
        let key = text_of(key);
        let (name, namespace) = key
            .split_once('/')
            .ok_or(format!("bad catalog key {key}"))?;
        let mut dc = DeclarativeConfig::default();
        for (pkg, body) in catalog["packages"].as_mapping().into_iter().flatten() {
            let pkg = text_of(pkg);
            dc.packages.push(Package {
                name: pkg.clone(),
                default_channel: text_of(&body["default"]),
                ..Default::default()
            });
            let mut bundles = BTreeSet::new();
            for (channel, entries) in body["channels"].as_mapping().into_iter().flatten() {
                let entries = entries.as_sequence().cloned().unwrap_or_default();
                for e in &entries {
                    let bundle = text_of(&e["n"]);
                    if bundles.insert(bundle.clone()) {
                        dc.bundles.push(Bundle {
                            name: bundle,
                            package: pkg.clone(),
                            properties: entry_properties(e, &pkg, apis)?,
                            ..Default::default()
                        });
                    }
                }
                dc.channels.push(Channel {
                    name: text_of(channel),
                    package: pkg.clone(),
                    entries: entries.iter().map(channel_entry).collect(),
                    ..Default::default()
                });
            }
        }
        let priority = field(catalog, "priority")
            .and_then(Value::as_i64)
            .unwrap_or(0) as i32;
        out.push((name.to_owned(), namespace.to_owned(), priority, dc));
    }
    Ok(out)
}

fn classic_request(
    installed: &Value,
    catalogs: &Value,
    apis: &HashMap<String, Gvk>,
) -> Result<OwnedRequest, String> {
    let namespace = field(installed, "namespace")
        .map(text_of)
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
    let visible = field(installed, "visible").map(list);
    let catalogs = declarative_configs(catalogs, apis)?
        .into_iter()
        .filter(|(_, ns, _, _)| visible.as_ref().is_none_or(|v| v.contains(ns)))
        .collect();
    let mut csvs = Vec::new();
    for c in installed["csvs"].as_sequence().into_iter().flatten() {
        let provided = list(&c["prov"])
            .iter()
            .map(|a| gvk(apis, a))
            .collect::<Result<Vec<_>, _>>()?;
        let required = list(&c["req"])
            .iter()
            .map(|a| gvk(apis, a))
            .collect::<Result<Vec<_>, _>>()?;
        // pkg/pkgversion/pkgreq only exist in a properties annotation.
        let annotation = (field(c, "pkg").is_some() || field(c, "pkgreq").is_some()).then(|| {
            let mut props: Vec<Property> = provided
                .iter()
                .map(|g| property("olm.gvk", gvk_json(g)))
                .chain(required.iter().map(|g| property("olm.gvk.required", gvk_json(g))))
                .collect();
            props.extend(package_requirements(c));
            if let Some(pkg) = field(c, "pkg") {
                props.push(property(
                    "olm.package",
                    serde_json::json!({"packageName": text_of(pkg), "version": text_of(&c["pkgversion"])}),
                ));
            }
            props
        });
        csvs.push(InstalledCsv {
            name: text_of(&c["n"]),
            version: text_of(&c["v"]),
            replaces: text_of(&c["r"]),
            phase: field(c, "phase")
                .map(text_of)
                .unwrap_or_else(|| "Succeeded".to_owned()),
            properties: annotation,
            provided_apis: provided,
            required_apis: required,
        });
    }
    let mut subscriptions = Vec::new();
    for sub in installed["subs"].as_sequence().into_iter().flatten() {
        let src = text_of(&sub["src"]);
        let (source, source_namespace) = src.split_once('/').unwrap_or((&src, ""));
        subscriptions.push(Subscription {
            name: text_of(&sub["name"]),
            package: text_of(&sub["pkg"]),
            channel: text_of(&sub["ch"]),
            source: source.to_owned(),
            source_namespace: source_namespace.to_owned(),
            starting_csv: text_of(&sub["startingCSV"]),
            installed_csv: text_of(&sub["installed"]),
        });
    }
    let upgrade_strategy = match text_of(&installed["og"]["upgradeStrategy"]).as_str() {
        "UnsafeFailForward" => UpgradeStrategy::UnsafeFailForward,
        _ => UpgradeStrategy::Default,
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
}

fn classic_expectation(
    got: Result<Vec<classic::ResolvedOperator>, ClassicError>,
    expect: &Value,
) -> Check {
    if let Some(unsat) = field(expect, "unsat") {
        let messages = match &got {
            Err(ClassicError::Unsatisfiable(SolveError::Unsatisfiable { messages })) => messages,
            other => return Err(format!("expected unsatisfiable, got {other:?}")),
        };
        let text = got
            .as_ref()
            .err()
            .map(ToString::to_string)
            .unwrap_or_default();
        if let Some(exact) = field(unsat, "exact").or_else(|| field(unsat, "exact_derived")) {
            let mut want = list(exact);
            want.sort();
            expect_eq("core", messages, &want)?;
        }
        for m in field(unsat, "contains").map(list).unwrap_or_default() {
            if !text.contains(&m) {
                return Err(format!("{text:?} lacks {m:?}"));
            }
        }
        if let Some(one_of) = field(unsat, "one_of")
            && !list(one_of).iter().any(|m| text.contains(m.as_str()))
        {
            return Err(format!("{text:?} has none of {one_of:?}"));
        }
        return match field(expect, "error") {
            Some(error) => expect_eq("error", text, text_of(error)),
            None => Ok(()),
        };
    }
    if let Some(error) = field(expect, "error") {
        return expect_eq(
            "error",
            got.map_err(|e| e.to_string()).err(),
            Some(text_of(error)),
        );
    }
    if let Some(wanted) = field(expect, "error_contains") {
        let text = got
            .map(|r| format!("resolved {r:?}"))
            .map_err(|e| e.to_string());
        let text = text.err().ok_or("expected an error")?;
        let parts = match wanted {
            Value::Sequence(_) => list(wanted),
            other => vec![text_of(other)],
        };
        return match parts.iter().all(|p| text.contains(p.as_str())) {
            true => Ok(()),
            false => Err(format!("{text:?} lacks one of {parts:?}")),
        };
    }
    let got = got.map_err(|e| e.to_string())?;
    let mut got_ids: Vec<String> = got.iter().map(|op| op.id()).collect();
    let mut want_ids = Vec::new();
    for line in list(&expect["result"]) {
        let mut words = line.split(' ');
        let id = words.next().unwrap_or_default().to_owned();
        let op = got.iter().find(|op| op.id() == id);
        for annotation in words {
            let (key, value) = annotation.split_once('=').ok_or(format!("bad {line}"))?;
            let actual = match (key, op) {
                ("replaces", Some(op)) => op.replaces.clone(),
                ("startingCSV", Some(op)) => op.starting_csv.clone().unwrap_or_default(),
                (_, None) => continue,
                _ => return Err(format!("unknown annotation {key}")),
            };
            expect_eq(&format!("{key} of {id}"), actual.as_str(), value)?;
        }
        want_ids.push(id);
    }
    got_ids.sort();
    want_ids.sort();
    expect_eq("result", got_ids, want_ids)
}

// ---- V: v1 resolution ---------------------------------------------------------------------

/// `name@version` bundles of `package`, each with an `olm.package` property.
fn v1_bundles(specs: &Value, package: &str, prefix: &str) -> Vec<Bundle> {
    list(specs)
        .iter()
        .map(|spec| {
            let (name, version) = spec.split_once('@').unwrap_or((spec, spec));
            Bundle {
                name: format!("{prefix}{name}"),
                package: package.to_owned(),
                properties: vec![property(
                    "olm.package",
                    serde_json::json!({"packageName": package, "version": version}),
                )],
                ..Default::default()
            }
        })
        .collect()
}

fn v1_deprecations(specs: &Value, package: &str) -> Vec<Deprecations> {
    let entries: Vec<DeprecationEntry> = specs
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|d| match d {
            // Shorthand `bundle <name>`.
            Value::String(short) => {
                let (schema, name) = short.split_once(' ').unwrap_or(("bundle", short));
                DeprecationEntry {
                    reference: DeprecationReference {
                        schema: format!("olm.{schema}"),
                        name: name.to_owned(),
                    },
                    message: format!("{short} is deprecated"),
                }
            }
            full => DeprecationEntry {
                reference: DeprecationReference {
                    schema: text_of(&full["schema"]),
                    name: text_of(&full["name"]),
                },
                message: text_of(&full["message"]),
            },
        })
        .collect();
    if entries.is_empty() {
        return Vec::new();
    }
    vec![Deprecations {
        package: package.to_owned(),
        entries,
        ..Default::default()
    }]
}

/// A catalog body of the notation: `channels`, `bundles` and `deprecations`.
fn v1_content(body: &Value, package: &str) -> DeclarativeConfig {
    let mut dc = DeclarativeConfig {
        packages: vec![Package {
            name: package.to_owned(),
            ..Default::default()
        }],
        bundles: v1_bundles(&body["bundles"], package, ""),
        deprecations: v1_deprecations(&body["deprecations"], package),
        ..Default::default()
    };
    for (name, entries) in body["channels"].as_mapping().into_iter().flatten() {
        dc.channels.push(Channel {
            name: text_of(name),
            package: package.to_owned(),
            entries: entries
                .as_sequence()
                .into_iter()
                .flatten()
                .map(channel_entry)
                .collect(),
            ..Default::default()
        });
    }
    dc
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
            .map(|g| v1_content(g, package))
            .ok_or("no GEN fixture")
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
        // "two catalogs, both availabilityMode Unavailable"
        let available = !prose.contains("Unavailable");
        return Ok(vec![
            catalog("a", gen_fixture()?, 0, available),
            catalog("b", gen_fixture()?, 0, available),
        ]);
    }
    let mut out = Vec::new();
    for (name, body) in spec.as_mapping().into_iter().flatten() {
        let name = text_of(name);
        let priority = field(body, "priority").and_then(Value::as_i64).unwrap_or(0) as i32;
        let available = field(body, "available")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let content = match body {
            Value::String(s) if s == "empty" => DeclarativeConfig::default(),
            Value::String(s) if s.starts_with("GEN(") => gen_fixture()?,
            _ if field(body, "content").is_some() => gen_fixture()?,
            _ => v1_content(body, package),
        };
        out.push(catalog(&name, content, priority, available));
    }
    Ok(out)
}

fn v1_request(spec: &Value) -> V1Request {
    let installed = field(spec, "installed").map(|i| InstalledBundle {
        name: text_of(&i["name"]),
        version: text_of(&i["version"]),
    });
    let policy = match text_of(&spec["policy"]).as_str() {
        "SelfCertified" => UpgradePolicy::SelfCertified,
        _ => UpgradePolicy::CatalogProvided,
    };
    V1Request {
        package: field(spec, "package")
            .map(text_of)
            .unwrap_or_else(|| "p".to_owned()),
        channels: list(&spec["channels"]),
        version: text_of(&spec["version"]),
        policy,
        selector: field(spec, "selector").map(selector),
        installed,
    }
}

fn selector(v: &Value) -> LabelSelector {
    LabelSelector {
        match_labels: v["matchLabels"]
            .as_mapping()
            .into_iter()
            .flatten()
            .map(|(k, v)| (text_of(k), text_of(v)))
            .collect(),
        match_expressions: v["matchExpressions"]
            .as_sequence()
            .into_iter()
            .flatten()
            .map(|e| SelectorRequirement {
                key: text_of(&e["key"]),
                operator: text_of(&e["operator"]),
                values: list(&e["values"]),
            })
            .collect(),
    }
}

fn run_v1(s: &Value, ctx: &Context) -> Check {
    if let Some(table) = field(s, "legacy_table") {
        v1_successor_cases(s, ctx)?;
        return v1_legacy_table(table);
    }
    if field(s, "input").is_some() {
        return v1_ordering(s);
    }
    if field(s, "bundles").is_some() && field(s, "channel_stable").is_none() {
        return v1_semver_successors(s);
    }
    let cases: Vec<Value> = match field(s, "cases").and_then(Value::as_sequence) {
        Some(cases) => cases.clone(),
        None => vec![Value::Mapping(Default::default())],
    };
    for (i, case) in cases.iter().enumerate() {
        if let Some(range) = field(case, "range") {
            v1_range_case(range, case)?;
            continue;
        }
        if let Some(kind) = field(case, "property") {
            v1_dependency_case(&text_of(kind), case)?;
            continue;
        }
        let mut request = v1_request(
            field(case, "request")
                .or_else(|| field(s, "request"))
                .unwrap_or(&Value::Null),
        );
        if let Some(version) = field(case, "version") {
            request.version = text_of(version);
        }
        if let Some(sel) = field(case, "selector") {
            request.selector = Some(selector(sel));
        }
        let catalogs = v1_catalogs(
            field(case, "catalogs").or_else(|| field(s, "catalogs")),
            &request.package,
            ctx,
        )?;
        let expect = field(case, "expect")
            .or_else(|| field(s, "expect"))
            .ok_or("no expectation")?;
        let run = |request: &V1Request, expect: &Value| {
            v1_expectation(&catalogs, request, expect).map_err(|e| format!("case {}: {e}", i + 1))
        };
        match (
            field(expect, "current"),
            field(expect, "historic_semver_gate"),
        ) {
            (Some(current), Some(historic)) => {
                run(&request, current)?;
                request.policy = UpgradePolicy::Semver;
                run(&request, historic)?;
            }
            _ => run(&request, expect)?,
        }
    }
    Ok(())
}

fn v1_expectation(catalogs: &[OwnedV1Catalog], request: &V1Request, expect: &Value) -> Check {
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
    let got = v1::resolve(&borrowed, request);
    if let Some(error) = field(expect, "error") {
        return expect_eq("error", got.err(), Some(text_of(error)));
    }
    if let Some(part) = field(expect, "error_contains") {
        let err = got.err().ok_or("expected an error")?;
        return match err.contains(&text_of(part)) {
            true => Ok(()),
            false => Err(format!("{err:?} lacks {:?}", text_of(part))),
        };
    }
    let got = got?;
    expect_eq(
        "bundle",
        got.bundle.name.as_str(),
        text_of(&expect["bundle"]).as_str(),
    )?;
    if let Some(version) = field(expect, "version") {
        expect_eq(
            "version",
            got.version.map(|v| v.to_string()),
            Some(text_of(version)),
        )?;
    }
    match expect.get("deprecation") {
        Some(Value::Null) => expect_eq("deprecation", got.deprecation.is_some(), false),
        Some(_) => expect_eq("deprecation", got.deprecation.is_some(), true),
        None => Ok(()),
    }
}

fn v1_range_case(range: &Value, case: &Value) -> Check {
    let range = text_of(range);
    let parsed = VersionConstraint::parse(&range);
    if field(case, "error").is_some() {
        return expect_eq(&format!("error for {range:?}"), parsed.is_err(), true);
    }
    let parsed = parsed?;
    let version = VersionRelease::parse(&text_of(&case["version"]))?;
    let want = field(case, "match")
        .and_then(Value::as_bool)
        .ok_or("no match")?;
    expect_eq(&range, parsed.matches(&version.version), want)
}

/// V28: a picked bundle declaring a dependency is refused, not replaced by another.
fn v1_dependency_case(kind: &str, case: &Value) -> Check {
    let value = match kind {
        "olm.package.required" => {
            serde_json::json!({"packageName": "q", "versionRange": ">=1.0.0"})
        }
        "olm.gvk.required" => serde_json::json!({"group": "g", "kind": "k", "version": "v"}),
        _ => serde_json::json!({"gvk": {"group": "g", "kind": "k", "version": "v"}}),
    };
    let mut bundles = v1_bundles(
        &serde_yaml::from_str("[p.v0.1.0@0.1.0, p.v1.0.0@1.0.0]").map_err(|e| e.to_string())?,
        "p",
        "",
    );
    bundles[1].properties.push(property(kind, value));
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
    let want = format!(
        "validating bundle \"p.v1.0.0\": {}",
        text_of(&case["error"]).replace("<name>", "p.v1.0.0")
    );
    expect_eq("error", v1::resolve(&catalog, &request).err(), Some(want))
}

/// Sorts bundle names by version+release, best first, and keeps those `keep` accepts.
fn successors_sorted(
    bundles: &[Bundle],
    keep: impl Fn(&Bundle, Option<&VersionRelease>) -> bool,
) -> Vec<String> {
    let keys: Vec<Option<VersionRelease>> = bundles.iter().map(VersionRelease::of_bundle).collect();
    let mut order: Vec<usize> = (0..bundles.len()).collect();
    order.sort_by(|&a, &b| v1::best_first(&keys[a], &keys[b]));
    order
        .into_iter()
        .filter(|&i| keep(&bundles[i], keys[i].as_ref()))
        .map(|i| bundles[i].name.clone())
        .collect()
}

fn installed_bundle(i: &Value) -> Result<(InstalledBundle, VersionRelease), String> {
    let installed = InstalledBundle {
        name: text_of(&i["name"]),
        version: text_of(&i["version"]),
    };
    let vr = VersionRelease::parse(&installed.version)?;
    Ok((installed, vr))
}

/// V21: the catalog successor predicate plus "same version+release" (the stay option).
fn v1_successor_cases(s: &Value, _ctx: &Context) -> Check {
    let entries: Vec<ChannelEntry> = s["channel_stable"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(channel_entry)
        .collect();
    let refs: Vec<&ChannelEntry> = entries.iter().collect();
    let prefix = entries
        .first()
        .and_then(|e| e.name.split_once('.'))
        .map(|(p, _)| format!("{p}."))
        .unwrap_or_default();
    let bundles = v1_bundles(&s["bundles"], "test-package", &prefix);
    for case in s["cases"].as_sequence().into_iter().flatten() {
        let (installed, ivr) = installed_bundle(&case["installed"])?;
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
        expect_eq(
            &format!("successors of {}", installed.name),
            got,
            list(&case["successors_or_self"]),
        )?;
    }
    Ok(())
}

fn v1_legacy_table(table: &Value) -> Check {
    let entries: Vec<ChannelEntry> = table["channel"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(channel_entry)
        .collect();
    let refs: Vec<&ChannelEntry> = entries.iter().collect();
    let (installed, ivr) = installed_bundle(&table["installed"])?;
    for (name, want) in table["successor"].as_mapping().into_iter().flatten() {
        let name = text_of(name);
        // "<unnamed bundle>" stands for a bundle with an empty name.
        let bundle = if name.starts_with('<') {
            ""
        } else {
            name.as_str()
        };
        let got = v1::is_successor(
            UpgradePolicy::CatalogProvided,
            bundle,
            None,
            &installed,
            &ivr,
            &refs,
        );
        expect_eq(
            &format!("successor {name}"),
            got,
            want.as_bool() == Some(true),
        )?;
    }
    Ok(())
}

/// V33: the opt-in semver policy (`^installed, != installed`) plus the stay option.
fn v1_semver_successors(s: &Value) -> Check {
    let bundles = v1_bundles(&s["bundles"], "p", "");
    for case in s["cases"].as_sequence().into_iter().flatten() {
        let version = text_of(&case["installed"]);
        let installed = InstalledBundle {
            name: version.clone(),
            version: version.clone(),
        };
        let ivr = VersionRelease::parse(&version)?;
        let got = successors_sorted(&bundles, |b, vr| {
            vr == Some(&ivr)
                || v1::is_successor(UpgradePolicy::Semver, &b.name, vr, &installed, &ivr, &[])
        });
        expect_eq(
            &format!("successors of {version}"),
            got,
            list(&case["successors_or_self"]),
        )?;
    }
    Ok(())
}

/// V30: version+release order; `<...>` items have no readable version.
fn v1_ordering(s: &Value) -> Check {
    let input = list(&s["input"]);
    let keys: Vec<Option<VersionRelease>> = input
        .iter()
        .map(|v| {
            if v.starts_with('<') {
                None
            } else {
                VersionRelease::parse(v).ok()
            }
        })
        .collect();
    let mut order: Vec<usize> = (0..input.len()).collect();
    order.sort_by(|&a, &b| v1::best_first(&keys[a], &keys[b]));
    let got: Vec<String> = order.into_iter().map(|i| input[i].clone()).collect();
    expect_eq("order", got, list(&s["sorted_best_first"]))
}

// ---- M: maxOpenShiftVersion -----------------------------------------------------------------

fn max_property(value: &str) -> Vec<Property> {
    vec![property(
        openshift::MAX_OPENSHIFT_VERSION,
        serde_json::Value::from(value),
    )]
}

fn run_openshift(s: &Value) -> Check {
    if let Some(matrix) = field(s, "matrix") {
        return openshift_matrix(s, matrix);
    }
    if let Some(cases) = field(s, "cases").and_then(Value::as_sequence) {
        for case in cases {
            let props = max_property(&text_of(&case["max"]));
            let blocking =
                openshift::classic_blocking(&text_of(&case["cluster"]), &[("op", &props)])?;
            let want = text_of(&case["expect"]) == "incompatible";
            expect_eq(&format!("{case:?}"), !blocking.is_empty(), want)?;
        }
        return Ok(());
    }
    let expect = &s["expect"];
    if let Value::String(_) = expect {
        return openshift_never_resolves();
    }
    let props: Vec<(String, Vec<Property>)> = s["max"]
        .as_mapping()
        .into_iter()
        .flatten()
        .map(|(name, max)| (text_of(name), max_property(&text_of(max))))
        .collect();
    let operators: Vec<(&str, &[Property])> = props
        .iter()
        .map(|(n, p)| (n.as_str(), p.as_slice()))
        .collect();
    let got = openshift::classic_blocking(&text_of(&s["cluster"]), &operators);
    if let Some(part) = field(expect, "error_contains") {
        let err = got.err().ok_or("expected an error")?;
        return match err.contains(&text_of(part)) {
            true => Ok(()),
            false => Err(format!("{err:?} lacks {part:?}")),
        };
    }
    let got: Vec<(String, String)> = got?
        .into_iter()
        .map(|b| match b.reason {
            BlockReason::Max(m) => (b.name, format!("max {m}")),
            BlockReason::Invalid(e) => (b.name, format!("error {e}")),
        })
        .collect();
    let want: Vec<(String, String)> = expect["incompatible"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|i| {
            let reason = match field(i, "max") {
                Some(m) => format!("max {}", text_of(m)),
                None => format!("error {}", text_of(&i["error"])),
            };
            (text_of(&i["name"]), reason)
        })
        .collect();
    expect_eq("incompatible", got, want)
}

/// M07: classic and v1 agree on the matrix; v1 extra rows; next minors.
fn openshift_matrix(s: &Value, matrix: &Value) -> Check {
    for row in matrix.as_sequence().into_iter().flatten() {
        let cluster = text_of(&row["cluster"]);
        for (max, verdict) in row.as_mapping().into_iter().flatten() {
            let max = text_of(max);
            if max == "cluster" {
                continue;
            }
            let blocks = text_of(verdict) == "blocks";
            let props = max_property(&max);
            let classic = !openshift::classic_blocking(&cluster, &[("op", &props)])?.is_empty();
            expect_eq(&format!("classic max {max} on {cluster}"), classic, blocks)?;
            let v1_max = openshift::v1_max(&props)?.ok_or("no max")?;
            let v1 = !openshift::v1_compatible(v1_max, &format!("{cluster}.0"))?;
            expect_eq(&format!("v1 max {max} on {cluster}"), v1, blocks)?;
        }
    }
    for row in s["more_v1"].as_sequence().into_iter().flatten() {
        let max = openshift::v1_max(&max_property(&text_of(&row["max"])))?.ok_or("no max")?;
        let blocks = !openshift::v1_compatible(max, &format!("{}.0", text_of(&row["cluster"])))?;
        expect_eq(
            &format!("{row:?}"),
            blocks,
            text_of(&row["result"]) == "blocks",
        )?;
    }
    for (cluster, next) in s["next_minor"].as_mapping().into_iter().flatten() {
        let got = openshift::classic_next_minor(&text_of(cluster))?.to_string();
        expect_eq(
            &format!("next minor of {}", text_of(cluster)),
            got,
            text_of(next),
        )?;
    }
    Ok(())
}

/// M09: the property changes no resolution result, classic or v1.
fn openshift_never_resolves() -> Check {
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
        classic::resolve(&request)
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
        v1::resolve(
            &catalogs,
            &V1Request {
                package: "p".into(),
                ..Default::default()
            },
        )
        .map(|r| r.bundle.name)
    };
    let (plain, capped) = (with_max(false), with_max(true));
    expect_eq("classic", classic_result(&capped), classic_result(&plain))?;
    expect_eq(
        "classic result",
        classic_result(&plain),
        Ok(vec!["c/ns/stable/p.v1.0.0".to_owned()]),
    )?;
    expect_eq("v1", v1_result(&capped), v1_result(&plain))?;
    expect_eq("v1 result", v1_result(&plain), Ok("p.v1.0.0".to_owned()))
}
