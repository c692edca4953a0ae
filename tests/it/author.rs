//! Catalog-author commands against the acceptance vectors of catalog-templates.md §6, run
//! through the real binary.
use crate::common::registry;

use crate::common::{fixture, run};
use registry::TestRegistry;

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

const REF_TEMPLATE: &str = "quay.io/example/{{.Package}}-bundle:v{{.Version}}";

fn real_bundles() -> Option<std::path::PathBuf> {
    crate::common::shared_testdata("real/bundles")
}

fn images_yaml(dirs: &[String]) -> String {
    dirs.iter().map(|d| format!("  - image: {d}\n")).collect()
}

/// Renders `template` (a file in `dir`) into `dir/catalog/catalog.json`, with `extra` flags,
/// and loads the result.
fn render_template_to_catalog(
    dir: &std::path::Path,
    template: &str,
    extra: &[&str],
) -> (std::path::PathBuf, catalog::DeclarativeConfig) {
    let file = dir.join("template.yaml");
    crate::common::write(&file, template);
    let mut args = vec!["render-template", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{stderr}");
    let catalog = dir.join("catalog");
    crate::common::write(&catalog.join("catalog.json"), &stdout);
    let dc = catalog::walk::load_dir(&catalog, catalog::file::ReadLimits::default()).unwrap();
    (catalog, dc)
}

fn assert_valid(catalog: &std::path::Path) {
    let (code, _, stderr) = run(&["validate", catalog.to_str().unwrap()]);
    assert_eq!((code, stderr.as_str()), (0, ""), "{}", catalog.display());
}

fn channel_lines(dc: &catalog::DeclarativeConfig) -> Vec<String> {
    dc.channels
        .iter()
        .map(|c| {
            let entries: Vec<String> = c
                .entries
                .iter()
                .map(|e| format!("{} <{}> [{}]", e.name, e.replaces, e.skips.join(" ")))
                .collect();
            format!("{}: {}", c.name, entries.join("; "))
        })
        .collect()
}

#[test]
fn semver_template_of_real_bundles_renders_a_valid_catalog() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let etcd = |v: &str| bundles.join("etcd").join(v).to_str().unwrap().to_owned();
    let candidate: Vec<String> = ["0.6.1", "0.9.0", "0.9.2", "0.9.4"].map(etcd).into();
    let stable: Vec<String> = ["0.9.0", "0.9.2"].map(etcd).into();
    let template = format!(
        "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\ncandidate:\n  bundles:\n{}stable:\n  bundles:\n{}",
        images_yaml(&candidate),
        images_yaml(&stable)
    );
    let dir = tempfile::tempdir().unwrap();
    let (catalog, dc) = render_template_to_catalog(
        dir.path(),
        &template,
        &["--alpha-image-ref-template", REF_TEMPLATE],
    );
    assert_eq!(
        channel_lines(&dc),
        [
            "candidate-v0: etcdoperator.v0.6.1 <> []; etcdoperator.v0.9.0 <> []; etcdoperator.v0.9.2 <> []; etcdoperator.v0.9.4 <etcdoperator.v0.6.1> [etcdoperator.v0.9.0 etcdoperator.v0.9.2]",
            "candidate-v0.6: etcdoperator.v0.6.1 <> []",
            "candidate-v0.9: etcdoperator.v0.9.0 <> []; etcdoperator.v0.9.2 <> []; etcdoperator.v0.9.4 <etcdoperator.v0.6.1> [etcdoperator.v0.9.0 etcdoperator.v0.9.2]",
            "stable-v0: etcdoperator.v0.9.0 <> []; etcdoperator.v0.9.2 <> [etcdoperator.v0.9.0]",
            "stable-v0.9: etcdoperator.v0.9.0 <> []; etcdoperator.v0.9.2 <> [etcdoperator.v0.9.0]",
        ]
    );
    let package = &dc.packages[0];
    assert_eq!(
        (package.name.as_str(), package.default_channel.as_str()),
        ("etcd", "stable-v0.9")
    );
    // The package takes the default channel head's CSV description and icon.
    assert!(
        package.description.starts_with("The etcd Operater creates"),
        "{}",
        package.description
    );
    assert_eq!(package.icon.as_ref().unwrap().mediatype, "image/png");
    let images: Vec<&str> = dc.bundles.iter().map(|b| b.image.as_str()).collect();
    assert_eq!(
        images,
        [
            "quay.io/example/etcd-bundle:v0.6.1",
            "quay.io/example/etcd-bundle:v0.9.0",
            "quay.io/example/etcd-bundle:v0.9.2",
            "quay.io/example/etcd-bundle:v0.9.4",
        ]
    );
    assert_valid(&catalog);

    // Every bundle of two more real operators, minor channels only, validates too.
    for package in ["node-healthcheck-operator", "prometheus"] {
        let mut dirs: Vec<String> = std::fs::read_dir(bundles.join(package))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .map(|p| p.to_str().unwrap().to_owned())
            .collect();
        dirs.sort();
        let template = format!(
            "schema: olm.semver\nfast:\n  bundles:\n{}",
            images_yaml(&dirs)
        );
        let dir = tempfile::tempdir().unwrap();
        let (catalog, dc) = render_template_to_catalog(
            dir.path(),
            &template,
            &["--alpha-image-ref-template", REF_TEMPLATE],
        );
        assert_eq!(dc.bundles.len(), dirs.len(), "{package}");
        assert_valid(&catalog);
    }
}

#[test]
fn basic_template_of_bundle_directories() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let etcd = |v: &str| bundles.join("etcd").join(v).to_str().unwrap().to_owned();
    let template = format!(
        "schema: olm.template.basic
entries:
- {{schema: olm.package, name: etcd, defaultChannel: alpha}}
- schema: olm.channel
  package: etcd
  name: alpha
  entries:
  - {{name: etcdoperator.v0.9.2}}
  - {{name: etcdoperator.v0.9.4, replaces: etcdoperator.v0.9.2}}
- {{schema: olm.bundle, image: {}}}
- {{schema: olm.bundle, image: {}}}
",
        etcd("0.9.4"),
        etcd("0.9.2")
    );
    let dir = tempfile::tempdir().unwrap();
    let (catalog, dc) = render_template_to_catalog(
        dir.path(),
        &template,
        &["--alpha-image-ref-template", REF_TEMPLATE],
    );
    let bundles: Vec<(&str, &str)> = dc
        .bundles
        .iter()
        .map(|b| (b.name.as_str(), b.image.as_str()))
        .collect();
    assert_eq!(
        bundles,
        [
            ("etcdoperator.v0.9.2", "quay.io/example/etcd-bundle:v0.9.2"),
            ("etcdoperator.v0.9.4", "quay.io/example/etcd-bundle:v0.9.4"),
        ]
    );
    assert_valid(&catalog);
}

#[test]
fn render_template_command_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.yaml");
    crate::common::write(&file, "schema: olm.unknown\n");
    let path = file.to_str().unwrap();
    let error = |args: &[&str]| {
        let (code, stdout, stderr) = run(args);
        assert_eq!((code, stdout.as_str()), (1, ""), "{args:?}");
        stderr
    };
    assert_eq!(
        error(&["render-template", "composite", path]),
        "error: invalid template type \"composite\", must be one of: [basic semver substitutes]\n"
    );
    assert_eq!(
        error(&["render-template", path, "-o", "xml"]),
        "error: invalid --output value \"xml\", expected (json|yaml|mermaid)\n"
    );
    assert_eq!(
        error(&["render-template", path]),
        "error: auto-detecting template type: unknown template schema: olm.unknown\n"
    );
    let missing = dir.path().join("missing.yaml");
    assert!(
        error(&["render-template", missing.to_str().unwrap()]).starts_with(&format!(
            "error: unable to open {:?}: ",
            missing.to_str().unwrap()
        ))
    );
    crate::common::write(
        &file,
        &format!("schema: olm.semver\nstable: {{bundles: [{{image: {path}}}]}}\n"),
    );
    assert_eq!(
        error(&["render-template", path]),
        format!(
            "error: rendering template: render reference {path:?}: ref {path:?} is not a directory: not allowed\n"
        )
    );
    assert_eq!(
        error(&["convert-template", "basic", path, "-o", "mermaid"]),
        "error: invalid --output value \"mermaid\", expected (json|yaml)\n"
    );
}

/// Templates whose bundles are images in a real registry: each rendered bundle is exactly
/// what `render <image>` makes of it, and a semver template of the same images validates.
#[test]
fn templates_of_bundle_images_in_a_registry() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let reg = TestRegistry::plain();
    let cache = tempfile::tempdir().unwrap();
    let flags = [
        "--insecure-registry",
        &reg.addr,
        "--image-cache-dir",
        cache.path().to_str().unwrap(),
    ];
    let mut tags = Vec::new();
    for version in ["0.9.2", "0.9.4"] {
        let dir = bundles.join("etcd").join(version);
        let tag = format!("{}/bundles/etcd:v{version}", reg.addr);
        let mut args = vec!["build", "bundle", dir.to_str().unwrap(), "--tag", &tag];
        args.extend_from_slice(&flags);
        let (code, _, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        tags.push(tag);
    }
    let template = format!(
        "schema: olm.template.basic
entries:
- {{schema: olm.package, name: etcd, defaultChannel: alpha}}
- {{schema: olm.channel, package: etcd, name: alpha, entries: [{{name: etcdoperator.v0.9.2}}, {{name: etcdoperator.v0.9.4, replaces: etcdoperator.v0.9.2}}]}}
- {{schema: olm.bundle, image: \"{}\"}}
- {{schema: olm.bundle, image: \"{}\"}}
",
        tags[1], tags[0]
    );
    let dir = tempfile::tempdir().unwrap();
    let (catalog, dc) = render_template_to_catalog(dir.path(), &template, &flags);
    assert_eq!(dc.bundles.len(), 2);
    for (bundle, tag) in dc.bundles.iter().zip(&tags) {
        let mut args = vec!["render", tag.as_str()];
        args.extend_from_slice(&flags);
        let (code, rendered, stderr) = run(&args);
        assert_eq!(code, 0, "{stderr}");
        let alone = dir.path().join("alone");
        crate::common::write(&alone.join("catalog.json"), &rendered);
        let expected =
            catalog::walk::load_dir(&alone, catalog::file::ReadLimits::default()).unwrap();
        let strip = |b: &catalog::Bundle| catalog::Bundle {
            origin: Default::default(),
            ..b.clone()
        };
        assert_eq!(strip(bundle), strip(&expected.bundles[0]), "{tag}");
    }
    assert_valid(&catalog);

    let semver = format!(
        "schema: olm.semver\nstable: {{bundles: [{{image: \"{}\"}}, {{image: \"{}\"}}]}}\n",
        tags[0], tags[1]
    );
    let (catalog, dc) = render_template_to_catalog(dir.path(), &semver, &flags);
    assert_eq!(
        channel_lines(&dc),
        ["stable-v0.9: etcdoperator.v0.9.2 <> []; etcdoperator.v0.9.4 <> [etcdoperator.v0.9.2]"]
    );
    assert_valid(&catalog);
}

fn diff_args<'a>(old: &'a str, new: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["diff", old, new];
    args.extend_from_slice(extra);
    args
}

/// A hand-made update that strands a.v1.0.0: the new head replaces only a.v1.2.0 and skips
/// the range holding a.v1.1.0 (whose version is known only from the old catalog).
#[test]
fn diff_of_a_hand_made_pair_with_a_broken_path() {
    let old = fixture("author/diff-old");
    let new = fixture("author/diff-new");
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    let expected = "+ package new
- package gone
~ package a
    default channel fast -> stable
    - channel fast
    + bundle a.v2.0.0
    - bundle a.v1.0.0
    - bundle a.v1.1.0
    ~ channel stable
        head a.v1.2.0 -> a.v2.0.0
        + edge a.v2.0.0 replaces a.v1.2.0
        + edge a.v2.0.0 skipRange >=1.1.0 <1.2.0
        - edge a.v1.1.0 replaces a.v1.0.0
        - edge a.v1.2.0 replaces a.v1.1.0
        ! a.v1.0.0 can no longer upgrade to the head
";
    assert_eq!(
        run(&diff_args(old, new, &[])),
        (0, expected.to_owned(), String::new())
    );
    assert_eq!(
        run(&diff_args(old, new, &["--fail-on-broken-paths"])),
        (1, expected.to_owned(), String::new())
    );
    let (code, json, _) = run(&diff_args(old, new, &["-o", "json"]));
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "packagesAdded": ["new"],
            "packagesRemoved": ["gone"],
            "packagesChanged": [{
                "name": "a",
                "defaultChannel": {"old": "fast", "new": "stable"},
                "channelsRemoved": ["fast"],
                "bundlesAdded": ["a.v2.0.0"],
                "bundlesRemoved": ["a.v1.0.0", "a.v1.1.0"],
                "channelsChanged": [{
                    "name": "stable",
                    "head": {"old": "a.v1.2.0", "new": "a.v2.0.0"},
                    "edgesAdded": ["a.v2.0.0 replaces a.v1.2.0", "a.v2.0.0 skipRange >=1.1.0 <1.2.0"],
                    "edgesRemoved": ["a.v1.1.0 replaces a.v1.0.0", "a.v1.2.0 replaces a.v1.1.0"],
                    "lostUpgradePaths": ["a.v1.0.0"],
                }],
            }],
        })
    );
    let (code, yaml, _) = run(&diff_args(old, new, &["-o", "yaml"]));
    assert_eq!(code, 0);
    assert_eq!(
        serde_yaml::from_str::<serde_json::Value>(&yaml).unwrap(),
        json
    );

    // Rolling the update back strands whoever already runs a.v2.0.0.
    let (code, text, _) = run(&diff_args(new, old, &["--fail-on-broken-paths"]));
    assert_eq!(code, 1);
    assert!(
        text.ends_with("        ! a.v2.0.0 can no longer upgrade to the head\n"),
        "{text}"
    );
    // A catalog compared with itself has no differences.
    assert_eq!(
        run(&diff_args(old, old, &["--fail-on-broken-paths"])),
        (0, String::new(), String::new())
    );
}

#[test]
fn diff_errors_exit_2_and_name_the_reference() {
    let old = fixture("author/diff-old");
    let (code, stdout, stderr) = run(&diff_args(
        old.to_str().unwrap(),
        "/nonexistent/catalog",
        &[],
    ));
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert!(
        stderr.starts_with("error: ") && stderr.contains("/nonexistent/catalog"),
        "{stderr}"
    );
}

/// The real community catalog update v4.16 → v4.20: packages come and go, dell-csm-operator
/// moves its head, and multicluster-global-hub-operator v1.5.0 loses its upgrade path in
/// release-1.6.
#[test]
fn diff_of_the_real_community_catalogs() {
    let (Some(old), Some(new)) = (
        crate::common::shared_testdata("real/community-catalog-v4.16"),
        crate::common::shared_testdata("real/community-catalog-v4.20"),
    ) else {
        return;
    };
    let expected = std::fs::read_to_string(fixture("author/community-v4.16-v4.20.diff")).unwrap();
    let args = diff_args(
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        &["--fail-on-broken-paths"],
    );
    assert_eq!(run(&args), (1, expected, String::new()));
}

/// The SVG picture of the star-wars fixture is well-formed XML with one element per
/// channel entry and per edge, heads and deprecated bundles marked, and a real renderer
/// (librsvg) turns it into a PNG without complaint.
#[test]
fn svg_picture_holds_every_bundle_and_edge_and_renders() {
    let catalog = fixture("author/star-wars");
    let (code, svg, stderr) = run(&["render-graph", catalog.to_str().unwrap(), "-o", "svg"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    let with_class = |class: &str| -> Vec<roxmltree::Node> {
        doc.descendants()
            .filter(|n| {
                n.attribute("class")
                    .is_some_and(|c| c.split(' ').any(|w| w == class))
            })
            .collect()
    };
    let names = |class: &str| -> Vec<String> {
        with_class(class)
            .iter()
            .map(|n| n.attribute("data-name").unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names("bundle"),
        [
            "anakin.v0.0.1",
            "anakin.v0.1.0",
            "anakin.v0.1.1",
            "anakin.v0.0.1",
            "anakin.v0.1.0",
            "boba-fett.v1.0.0",
            "boba-fett.v2.0.0",
        ]
    );
    assert_eq!(
        names("head"),
        ["anakin.v0.1.1", "anakin.v0.1.0", "boba-fett.v2.0.0"]
    );
    assert_eq!(names("deprecated"), ["anakin.v0.0.1", "anakin.v0.0.1"]);
    let edges: Vec<String> = with_class("edge")
        .iter()
        .map(|n| {
            format!(
                "{} {} {}",
                n.attribute("data-to").unwrap(),
                n.attribute("class").unwrap().trim_start_matches("edge "),
                n.attribute("data-from").unwrap()
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            "anakin.v0.1.0 replaces anakin.v0.0.1",
            "anakin.v0.1.1 replaces anakin.v0.0.1",
            "anakin.v0.1.1 skips anakin.v0.1.0",
            "anakin.v0.1.0 replaces anakin.v0.0.1",
            "boba-fett.v2.0.0 replaces boba-fett.v1.0.0",
        ]
    );
    let channels: Vec<&str> = with_class("channel")
        .iter()
        .map(|n| n.attribute("id").unwrap())
        .collect();
    assert_eq!(
        channels,
        [
            "channel-anakin-dark",
            "channel-anakin-light",
            "channel-boba-fett-mando"
        ]
    );

    let dir = tempfile::tempdir().unwrap();
    let (svg_file, png_file) = (dir.path().join("g.svg"), dir.path().join("g.png"));
    crate::common::write(&svg_file, &svg);
    let out = std::process::Command::new("rsvg-convert")
        .arg(&svg_file)
        .arg("-o")
        .arg(&png_file)
        .output()
        .expect("rsvg-convert (librsvg2-bin, installed by scripts/test.sh)");
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned()
        ),
        (Some(0), String::new())
    );
    let png = std::fs::read(&png_file).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn svg_skip_range_edges_and_refused_flags() {
    let catalog = fixture("author/skip-range");
    let catalog = catalog.to_str().unwrap();
    let (code, svg, _) = run(&["render-graph", catalog, "-o", "svg"]);
    assert_eq!(code, 0);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let ranges: Vec<(&str, &str)> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("edge skipRange"))
        .map(|n| {
            (
                n.attribute("data-from").unwrap(),
                n.attribute("data-to").unwrap(),
            )
        })
        .collect();
    assert_eq!(ranges, [("p.v1.0.0", "p.v2.0.0"), ("p.v1.1.0", "p.v2.0.0")]);
    let (code, _, stderr) = run(&[
        "render-graph",
        catalog,
        "-o",
        "svg",
        "--minimum-edge",
        "p.v1.0.0",
    ]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            "error: --minimum-edge and --draw-v0-semantics apply to mermaid output only\n"
        )
    );
}

/// The template from stdin (type given, `-` as the file), and `--migrate-level` applied to
/// every rendered bundle: the CSV manifest becomes `olm.csv.metadata`.
#[test]
fn render_template_from_stdin_with_migrations() {
    let Some(bundles) = real_bundles() else {
        return;
    };
    let dir = bundles.join("etcd/0.9.4");
    let template = format!(
        "schema: olm.semver\nstable: {{bundles: [{{image: {}}}]}}\n",
        dir.to_str().unwrap()
    );
    let mut child = std::process::Command::new(crate::common::BIN)
        .args(["render-template", "semver", "-", "-o", "yaml"])
        .args(["--migrate-level", "bundle-object-to-csv-metadata"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(template.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), stderr.as_ref()), (Some(0), ""));
    let catalog = tempfile::tempdir().unwrap();
    crate::common::write(
        &catalog.path().join("catalog.yaml"),
        &String::from_utf8(out.stdout).unwrap(),
    );
    let dc = catalog::walk::load_dir(catalog.path(), catalog::file::ReadLimits::default()).unwrap();
    let kinds: std::collections::BTreeSet<&str> = dc.bundles[0]
        .properties
        .iter()
        .map(|p| p.kind.as_str())
        .collect();
    assert!(kinds.contains("olm.csv.metadata"), "{kinds:?}");
    assert!(!kinds.contains("olm.bundle.object"), "{kinds:?}");
    assert_eq!(dc.channels[0].name, "stable-v0.9");
}

/// The substitutes template of tests/fixtures/author/substitutes: a bundle directory (a
/// rebuild of op 1.1.0 with release 2) takes op.v1.1.0's place in its channel.
fn render_substitutes(dir: &std::path::Path, output: &str) -> String {
    let fixture = fixture("author/substitutes");
    let template = std::fs::read_to_string(fixture.join("template.yaml"))
        .unwrap()
        .replace("REBUILD", fixture.join("rebuild").to_str().unwrap());
    let file = dir.join("template.yaml");
    crate::common::write(&file, &template);
    let (code, stdout, stderr) = run(&[
        "render-template",
        file.to_str().unwrap(),
        "--alpha-image-ref-template",
        "quay.io/example/op-bundle:{{.Name}}",
        "-o",
        output,
    ]);
    assert_eq!((code, stderr.as_str()), (0, ""), "-o {output}");
    stdout
}

#[test]
fn substitutes_template_renders_as_json_yaml_and_mermaid() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        render_substitutes(dir.path(), "mermaid"),
        format!(
            r#"{HEADER}  %% package "op"
  subgraph "op"
    %% channel "stable"
    subgraph op-stable["stable"]
      op-stable-op.v1.2.0["op.v1.2.0"]
      op-stable-op.v1.1.0["op.v1.1.0"]-- skip --> op-stable-op.v1.2.0["op.v1.2.0"]
      op-stable-op.v1.0.0["op.v1.0.0"]-- "skipRange(>=1.0.0 <1.2.0)" --> op-stable-op.v1.2.0["op.v1.2.0"]
      op-stable-op.v1.1.0["op.v1.1.0"]-- "skipRange(>=1.0.0 <1.2.0)" --> op-stable-op.v1.2.0["op.v1.2.0"]
      op-stable-op-v1.1.0-2["op-v1.1.0-2"]-- "skipRange(>=1.0.0 <1.2.0)" --> op-stable-op.v1.2.0["op.v1.2.0"]
      op-stable-op-v1.1.0-2["op-v1.1.0-2"]-- replace --> op-stable-op.v1.2.0["op.v1.2.0"]
      op-stable-op.v1.1.0["op.v1.1.0"]
      op-stable-op-v1.1.0-2["op-v1.1.0-2"]
      op-stable-op.v1.1.0["op.v1.1.0"]-- skip --> op-stable-op-v1.1.0-2["op-v1.1.0-2"]
      op-stable-op.v1.0.0["op.v1.0.0"]-- replace --> op-stable-op-v1.1.0-2["op-v1.1.0-2"]
      op-stable-op.v1.0.0["op.v1.0.0"]
    end
  end
class op-stable-op.v1.1.0 skipped
linkStyle 5 stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;
"#
        )
    );
    let yaml = render_substitutes(dir.path(), "yaml");
    let channel = "---
entries:
- name: op.v1.0.0
- name: op.v1.1.0
- name: op.v1.2.0
  replaces: op-v1.1.0-2
  skipRange: '>=1.0.0 <1.2.0'
  skips:
  - op.v1.1.0
- name: op-v1.1.0-2
  replaces: op.v1.0.0
  skips:
  - op.v1.1.0
name: stable
package: op
schema: olm.channel
---
image: quay.io/example/op-bundle:op-v1.1.0-2
name: op-v1.1.0-2
package: op
properties:
- type: olm.package
  value:
    packageName: op
    release: \"2\"
    version: 1.1.0
";
    assert!(
        yaml.starts_with(&format!(
            "---\ndefaultChannel: stable\nname: op\nschema: olm.package\n{channel}"
        )),
        "{yaml}"
    );
    // The JSON is a valid catalog, and converting it back to a substitutes template and
    // rendering that gives it again, but for the rendered bundle's olm.package value: as a
    // template entry it is read like any FBC object, keys sorted (opm does the same).
    let json = render_substitutes(dir.path(), "json");
    let catalog = dir.path().join("catalog");
    crate::common::write(&catalog.join("catalog.json"), &json);
    assert_valid(&catalog);
    let (code, template, stderr) = run(&[
        "convert-template",
        "substitutes",
        catalog.join("catalog.json").to_str().unwrap(),
    ]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert!(
        template.contains(r#""skipRange": "\u003e=1.0.0 \u003c1.2.0""#),
        "{template}"
    );
    let again = dir.path().join("again.json");
    crate::common::write(&again, &template);
    let (code, stdout, stderr) = run(&["render-template", again.to_str().unwrap()]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let sorted = json.replace(
        "\"version\": \"1.1.0\",\n                \"release\": \"2\"",
        "\"release\": \"2\",\n                \"version\": \"1.1.0\"",
    );
    assert_ne!(sorted, json);
    assert_eq!(stdout, sorted);
}

/// `convert-template` prints JSON as opm's Go encoder does: `<`, `>` and `&` escaped.
#[test]
fn convert_template_escapes_html_characters_in_json_only() {
    let dir = tempfile::tempdir().unwrap();
    let fbc = dir.path().join("catalog.json");
    crate::common::write(
        &fbc,
        r#"{"schema":"olm.channel","name":"stable","package":"p","entries":[{"name":"p.v2.0.0","skipRange":">=1.0.0 <2.0.0"}]}
{"schema":"olm.bundle","name":"p.v2.0.0","package":"p","image":"quay.io/p&q:v2","properties":[]}
"#,
    );
    let convert = |args: &[&str]| {
        let mut all = vec!["convert-template"];
        all.extend_from_slice(args);
        all.push(fbc.to_str().unwrap());
        let (code, stdout, stderr) = run(&all);
        assert_eq!((code, stderr.as_str()), (0, ""), "{args:?}");
        stdout
    };
    assert_eq!(
        convert(&["basic"]),
        r#"{
    "schema": "olm.template.basic",
    "entries": [
        {
            "entries": [
                {
                    "name": "p.v2.0.0",
                    "skipRange": "\u003e=1.0.0 \u003c2.0.0"
                }
            ],
            "name": "stable",
            "package": "p",
            "schema": "olm.channel"
        },
        {
            "schema": "olm.bundle",
            "image": "quay.io/p\u0026q:v2"
        }
    ]
}
"#
    );
    assert_eq!(
        convert(&["substitutes", "-o", "yaml"]),
        "---
entries:
- entries:
  - name: p.v2.0.0
    skipRange: '>=1.0.0 <2.0.0'
  name: stable
  package: p
  schema: olm.channel
- image: quay.io/p&q:v2
  name: p.v2.0.0
  package: p
  properties: []
  schema: olm.bundle
schema: olm.template.substitutes
substitutions: []

"
    );
}
