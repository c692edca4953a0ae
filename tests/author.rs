//! Catalog-author commands against the acceptance vectors of catalog-templates.md §6, run
//! through the real binary.
mod common;

use common::{fixture, run};

const HEADER: &str = "graph LR
  classDef deprecated fill:#E8960F
  classDef skipped stroke:#FF0000,stroke-width:4px
  classDef deprecatedskipped fill:#E8960F,stroke:#FF0000,stroke-width:4px
";

const ANAKIN: &str = r#"  %% package "anakin"
  subgraph "anakin"
    %% channel "dark"
    subgraph anakin-dark["dark"]
      anakin-dark-anakin.v0.1.1["anakin.v0.1.1"]
      anakin-dark-anakin.v0.1.0["anakin.v0.1.0"]-- skip --> anakin-dark-anakin.v0.1.1["anakin.v0.1.1"]
      anakin-dark-anakin.v0.0.1["anakin.v0.0.1"]-- replace --> anakin-dark-anakin.v0.1.1["anakin.v0.1.1"]
      anakin-dark-anakin.v0.1.0["anakin.v0.1.0"]
      anakin-dark-anakin.v0.0.1["anakin.v0.0.1"]-- replace --> anakin-dark-anakin.v0.1.0["anakin.v0.1.0"]
      anakin-dark-anakin.v0.0.1["anakin.v0.0.1"]
    end
    %% channel "light"
    subgraph anakin-light["light"]
      anakin-light-anakin.v0.1.0["anakin.v0.1.0"]
      anakin-light-anakin.v0.0.1["anakin.v0.0.1"]-- replace --> anakin-light-anakin.v0.1.0["anakin.v0.1.0"]
      anakin-light-anakin.v0.0.1["anakin.v0.0.1"]
    end
  end
"#;

const BOBA_FETT: &str = r#"  %% package "boba-fett"
  subgraph "boba-fett"
    %% channel "mando"
    subgraph boba-fett-mando["mando"]
      boba-fett-mando-boba-fett.v2.0.0["boba-fett.v2.0.0"]
      boba-fett-mando-boba-fett.v1.0.0["boba-fett.v1.0.0"]-- replace --> boba-fett-mando-boba-fett.v2.0.0["boba-fett.v2.0.0"]
      boba-fett-mando-boba-fett.v1.0.0["boba-fett.v1.0.0"]
    end
  end
"#;

const ANAKIN_DEPRECATIONS: &str = "style anakin fill:#989695
style anakin-light fill:#DCD0FF
class anakin-dark-anakin.v0.0.1,anakin-light-anakin.v0.0.1 deprecated
";

fn render_graph(args: &[&str]) -> String {
    let catalog = fixture("author/star-wars");
    let mut all = vec!["render-graph", catalog.to_str().unwrap()];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!((code, stderr.as_str()), (0, ""), "{all:?}");
    stdout
}

#[test]
fn mermaid_m1_v0_semantics() {
    let expected = format!(
        "{HEADER}{ANAKIN}{BOBA_FETT}{ANAKIN_DEPRECATIONS}class anakin-dark-anakin.v0.1.0 skipped
linkStyle 2 stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;
"
    );
    assert_eq!(render_graph(&["--draw-v0-semantics"]), expected);
}

#[test]
fn mermaid_m2_default_has_no_v0_semantics() {
    let expected = format!("{HEADER}{ANAKIN}{BOBA_FETT}{ANAKIN_DEPRECATIONS}");
    assert_eq!(render_graph(&[]), expected);
}

#[test]
fn mermaid_m3_minimum_edge_and_package_filters() {
    let expected = format!(
        r#"{HEADER}  %% package "anakin"
  subgraph "anakin"
    %% channel "dark"
    subgraph anakin-dark["dark"]
      anakin-dark-anakin.v0.1.1["anakin.v0.1.1"]
      anakin-dark-anakin.v0.1.0["anakin.v0.1.0"]-- skip --> anakin-dark-anakin.v0.1.1["anakin.v0.1.1"]
      anakin-dark-anakin.v0.1.0["anakin.v0.1.0"]
    end
    %% channel "light"
    subgraph anakin-light["light"]
      anakin-light-anakin.v0.1.0["anakin.v0.1.0"]
    end
  end
style anakin fill:#989695
style anakin-light fill:#DCD0FF
class anakin-dark-anakin.v0.1.0 skipped
"#
    );
    assert_eq!(
        render_graph(&["--draw-v0-semantics", "--minimum-edge", "anakin.v0.1.0"]),
        expected
    );
    assert_eq!(
        render_graph(&["--draw-v0-semantics", "-p", "boba-fett"]),
        format!("{HEADER}{BOBA_FETT}")
    );
}

#[test]
fn mermaid_unknown_minimum_edge_is_named() {
    let catalog = fixture("author/star-wars");
    let (code, stdout, stderr) = run(&[
        "render-graph",
        catalog.to_str().unwrap(),
        "--minimum-edge",
        "han.v1.0.0",
    ]);
    assert_eq!(
        (code, stdout.as_str(), stderr.as_str()),
        (1, "", "error: unknown minimum edge name: \"han.v1.0.0\"\n")
    );
}

#[test]
fn mermaid_m4_skip_range() {
    let catalog = fixture("author/skip-range");
    let (code, stdout, stderr) = run(&["render-graph", catalog.to_str().unwrap()]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let expected = format!(
        r#"{HEADER}  %% package "p"
  subgraph "p"
    %% channel "c"
    subgraph p-c["c"]
      p-c-p.v2.0.0["p.v2.0.0"]
      p-c-p.v1.0.0["p.v1.0.0"]-- "skipRange(>=1.0.0 <2.0.0)" --> p-c-p.v2.0.0["p.v2.0.0"]
      p-c-p.v1.1.0["p.v1.1.0"]-- "skipRange(>=1.0.0 <2.0.0)" --> p-c-p.v2.0.0["p.v2.0.0"]
      p-c-p.v1.1.0["p.v1.1.0"]
      p-c-p.v1.0.0["p.v1.0.0"]-- replace --> p-c-p.v1.1.0["p.v1.1.0"]
      p-c-p.v1.0.0["p.v1.0.0"]
    end
  end
"#
    );
    assert_eq!(stdout, expected);
}
