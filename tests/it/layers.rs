//! The workspace's crates depend on each other only as DESIGN.md's module map allows: each
//! crate is a layer, and its `Cargo.toml` may name exactly the layers of its row below. Read
//! from `cargo metadata`, so a new dependency on a higher layer (or a new crate missing from
//! the table) fails here before it spreads.
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Each layer and the layers it may use (DESIGN.md, "Module map"). `cli` is the
/// `olm-registry` binary at the root of the workspace; `olm-registry-X` is layer `X`.
const LAYERS: &[(&str, &[&str])] = &[
    ("api", &[]),
    ("catalog", &[]),
    ("unfinished", &[]),
    ("bundle", &["catalog"]),
    ("image", &[]),
    (
        "source",
        &["api", "bundle", "catalog", "image", "unfinished"],
    ),
    ("store", &["api", "catalog", "unfinished"]),
    ("resolve", &["catalog"]),
    ("cluster", &["bundle"]),
    // catalogd's controller: ClusterCatalogs (through `cluster`'s client configuration) to
    // images pulled and indexed (`server`'s loader) and served (`server`'s catalogd API).
    (
        "catalogd",
        &["catalog", "cluster", "image", "server", "unfinished"],
    ),
    // explain: the cluster's state (`cluster`'s client configuration) resolved as a `resolve`
    // request, its catalogs read by `server`'s one loader.
    (
        "explain",
        &[
            "catalog",
            "cluster",
            "image",
            "resolve",
            "server",
            "unfinished",
        ],
    ),
    ("author", &["catalog", "source"]),
    ("mirror", &["catalog", "image", "source", "unfinished"]),
    (
        "server",
        &[
            "api",
            "catalog",
            "image",
            "resolve",
            "source",
            "store",
            "unfinished",
        ],
    ),
    (
        "cli",
        &[
            "api",
            "author",
            "bundle",
            "catalog",
            "catalogd",
            "cluster",
            "explain",
            "image",
            "mirror",
            "resolve",
            "server",
            "source",
            "store",
            "unfinished",
        ],
    ),
];

/// A workspace package's layer name, or None for a package outside the workspace.
fn layer_of(package: &str) -> Option<&str> {
    match package {
        "olm-registry" => Some("cli"),
        other => other.strip_prefix("olm-registry-"),
    }
}

/// Every workspace crate with the workspace crates it depends on (any kind: normal, build
/// or dev), as `cargo metadata` reports them.
fn workspace_edges() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut edges = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        if !members.contains(package["id"].as_str().unwrap_or_default()) {
            continue;
        }
        let name = package["name"].as_str().expect("package name");
        let layer = layer_of(name)
            .unwrap_or_else(|| panic!("workspace crate {name} is not named olm-registry-LAYER"));
        let uses: BTreeSet<String> = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d.get("path").is_some_and(|p| !p.is_null()))
            .map(|d| {
                let dep = d["name"].as_str().expect("dependency name");
                layer_of(dep)
                    .unwrap_or_else(|| panic!("{name} depends on {dep}, a path outside the layers"))
                    .to_owned()
            })
            .collect();
        edges.insert(layer.to_owned(), uses);
    }
    edges
}

#[test]
fn crates_depend_only_on_the_layers_design_allows() {
    let edges = workspace_edges();
    let table: BTreeMap<String, BTreeSet<String>> = LAYERS
        .iter()
        .map(|(layer, uses)| {
            let uses = uses.iter().map(|u| u.to_string()).collect();
            (layer.to_string(), uses)
        })
        .collect();
    let mut problems = Vec::new();
    for (layer, uses) in &edges {
        let Some(allowed) = table.get(layer) else {
            problems.push(format!("crate {layer} has no row in the layer table"));
            continue;
        };
        for extra in uses.difference(allowed) {
            problems.push(format!(
                "{layer} depends on {extra}, which its row does not allow"
            ));
        }
        for unused in allowed.difference(uses) {
            problems.push(format!(
                "{layer}'s row allows {unused}, but {layer} does not depend on it: \
                 update the table (and DESIGN.md) to what the crate needs"
            ));
        }
    }
    for layer in table.keys().filter(|l| !edges.contains_key(*l)) {
        problems.push(format!(
            "the table names {layer}, which is not a workspace crate"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
