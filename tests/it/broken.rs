//! Broken catalogs: `validate` lists every problem with its file, line and object and exits 1;
//! `serve` refuses to start, writes the termination log and leaves no index behind.

use crate::common::{Server, files_below, run};
use std::path::Path;

const PACKAGE: &str = r#"{"schema":"olm.package","name":"foo","defaultChannel":"stable"}"#;
const STABLE_V1: &str =
    r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v1.0.0"}]}"#;

fn bundle(version: &str) -> String {
    format!(
        r#"{{"schema":"olm.bundle","package":"foo","name":"foo.v{version}","image":"quay.io/foo:v{version}","properties":[{{"type":"olm.package","value":{{"packageName":"foo","version":"{version}"}}}}]}}"#
    )
}

fn catalog(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn json(docs: &[&str]) -> tempfile::TempDir {
    catalog(&[("catalog.json", docs.join("\n") + "\n")])
}

/// Runs `validate` and returns its exit code and everything it printed.
fn validate(dir: &Path) -> (i32, String) {
    let (code, stdout, stderr) = run(&["validate", dir.to_str().unwrap()]);
    (code, stdout + &stderr)
}

fn assert_invalid(dir: &Path, expected: &str) {
    let (code, output) = validate(dir);
    assert_eq!(code, 1, "{output}");
    assert_eq!(output, format!("{expected}\n"));
}

#[test]
fn missing_default_channel() {
    let dir = json(&[
        r#"{"schema":"olm.package","name":"foo"}"#,
        STABLE_V1,
        &bundle("1.0.0"),
    ]);
    assert_invalid(
        dir.path(),
        "invalid index:\n\
         └── invalid package \"foo\" (catalog.json:1):\n    \
             └── default channel must be set",
    );
}

#[test]
fn unknown_default_channel() {
    let dir = json(&[
        r#"{"schema":"olm.package","name":"foo","defaultChannel":"beta"}"#,
        STABLE_V1,
        &bundle("1.0.0"),
    ]);
    assert_invalid(
        dir.path(),
        "invalid index:\n\
         └── invalid package \"foo\" (catalog.json:1):\n    \
             └── invalid channel \"beta\" (catalog.json:1):\n        \
                 └── channel must contain at least one bundle",
    );
}

#[test]
fn entry_naming_a_missing_bundle() {
    let channel = r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v1.0.0"},{"name":"foo.v2.0.0","replaces":"foo.v1.0.0"}]}"#;
    let dir = json(&[PACKAGE, channel, &bundle("1.0.0")]);
    assert_invalid(
        dir.path(),
        "invalid index:\n\
         └── no olm.bundle blobs found in package \"foo\" for olm.channel entries [foo.v2.0.0] (catalog.json:2)",
    );
}

#[test]
fn two_heads() {
    let channel = r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v1.0.0"},{"name":"foo.v2.0.0"}]}"#;
    let dir = json(&[PACKAGE, channel, &bundle("1.0.0"), &bundle("2.0.0")]);
    assert_invalid(
        dir.path(),
        "invalid index:\n\
         └── invalid package \"foo\" (catalog.json:1):\n    \
             └── invalid channel \"stable\" (catalog.json:2):\n        \
                 └── multiple channel heads found in graph: foo.v1.0.0, foo.v2.0.0",
    );
}

#[test]
fn replaces_cycle() {
    let channel = r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v1.0.0","replaces":"foo.v2.0.0"},{"name":"foo.v2.0.0","replaces":"foo.v1.0.0"},{"name":"foo.v3.0.0","replaces":"foo.v2.0.0"}]}"#;
    let dir = json(&[
        PACKAGE,
        channel,
        &bundle("1.0.0"),
        &bundle("2.0.0"),
        &bundle("3.0.0"),
    ]);
    assert_invalid(
        dir.path(),
        "invalid index:\n\
         └── invalid package \"foo\" (catalog.json:1):\n    \
             └── invalid channel \"stable\" (catalog.json:2):\n        \
                 └── detected cycle in replaces chain of upgrade graph: foo.v2.0.0 -> foo.v1.0.0 -> foo.v2.0.0",
    );
}

#[test]
fn duplicate_bundle_and_package() {
    let dir = json(&[PACKAGE, STABLE_V1, &bundle("1.0.0"), &bundle("1.0.0")]);
    assert_invalid(
        dir.path(),
        "invalid index:\n└── package \"foo\" has duplicate bundle \"foo.v1.0.0\" (catalog.json:4)",
    );
    let dir = json(&[PACKAGE, PACKAGE, STABLE_V1, &bundle("1.0.0")]);
    assert_invalid(
        dir.path(),
        "invalid index:\n└── duplicate package \"foo\" (catalog.json:2)",
    );
}

#[test]
fn bundle_without_olm_package() {
    let b = r#"{"schema":"olm.bundle","package":"foo","name":"foo.v1.0.0","image":"quay.io/foo:v1","properties":[]}"#;
    let dir = json(&[PACKAGE, STABLE_V1, b]);
    assert_invalid(
        dir.path(),
        "invalid index:\n\
         └── package \"foo\" bundle \"foo.v1.0.0\" must have exactly 1 \"olm.package\" property, found 0 (catalog.json:3)",
    );
}

#[test]
fn wrong_property_value_shapes() {
    let b = r#"{"schema":"olm.bundle","package":"foo","name":"foo.v1.0.0","image":"quay.io/foo:v1","properties":[
        {"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}},
        {"type":"olm.gvk","value":"example.com/v1/Foo"},
        {"type":"olm.package.required","value":{"packageName":"bar","versionRange":7}}]}"#;
    let dir = json(&[PACKAGE, STABLE_V1, b]);
    assert_invalid(
        dir.path(),
        "invalid index:\n\
         ├── parse properties for bundle \"foo.v1.0.0\": parse property[1] of type \"olm.gvk\": json: cannot unmarshal string into Go value of type property.GVK (catalog.json:3)\n\
         └── parse properties for bundle \"foo.v1.0.0\": parse property[2] of type \"olm.package.required\": json: cannot unmarshal number into Go struct field PackageRequired.versionRange of type string (catalog.json:3)",
    );
}

#[test]
fn malformed_json_and_yaml_name_file_and_line() {
    let dir = catalog(&[
        (
            "a.json",
            format!("{PACKAGE}\n{{\"schema\":\"olm.channel\",\"package\":\"foo\",\"name\":\"stable\",\n  \"entries\":[{{\"name\":\"foo.v1.0.0\"}}]]\n}}\n"),
        ),
        (
            "b.yaml",
            "---\nschema: olm.package\nname: bar\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: bar\nname: stable\nentries:\n  - name: bar.v1.0.0\n   - name: bar.v2.0.0\n".to_string(),
        ),
    ]);
    assert_invalid(
        dir.path(),
        "the catalog has 2 unreadable document(s):\n  \
         a.json:3: invalid JSON: expected `,` or `}` at line 3 column 36\n  \
         b.yaml:11: invalid YAML: did not find expected '-' indicator at line 11 column 4, while parsing a block collection at line 10 column 3",
    );
}

/// Several problems at once: all are reported, not only the first.
const MANY_PROBLEMS: &str = "\
---
schema: olm.package
name: foo
defaultChannel: stable
---
schema: olm.channel
package: foo
name: stable
entries:
  - name: foo.v1.0.0
  - name: foo.v2.0.0
---
schema: olm.bundle
package: foo
name: foo.v1.0.0
image: quay.io/foo:v1
properties:
  - type: olm.package
    value: {packageName: foo, version: 1.0.0}
---
schema: olm.bundle
package: foo
name: foo.v2.0.0
image: quay.io/foo:v2
properties:
  - type: olm.package
    value: {packageName: foo, version: 3.0}
";

const MANY_PROBLEMS_REPORT: &str = "invalid index:\n\
├── invalid package \"foo\" (catalog.yaml:2):\n\
│   └── invalid channel \"stable\" (catalog.yaml:6):\n\
│       └── multiple channel heads found in graph: foo.v1.0.0, foo.v2.0.0\n\
└── parse properties for bundle \"foo.v2.0.0\": parse property[0] of type \"olm.package\": json: cannot unmarshal number into Go struct field Package.version of type string (catalog.yaml:21)";

#[test]
fn every_problem_is_reported() {
    let dir = catalog(&[("catalog.yaml", MANY_PROBLEMS.to_string())]);
    assert_invalid(dir.path(), MANY_PROBLEMS_REPORT);

    let (code, stdout, _) = run(&["validate", dir.path().to_str().unwrap(), "-o", "json"]);
    assert_eq!(code, 1);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report,
        serde_json::json!({"passed": false, "error": {"message": MANY_PROBLEMS_REPORT}})
    );
}

#[test]
fn a_valid_catalog_validates_silently() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    assert_eq!(validate(&example), (0, String::new()));
    let (code, stdout, _) = run(&["validate", example.to_str().unwrap(), "-o", "yaml"]);
    assert_eq!((code, stdout.as_str()), (0, "passed: true\n"));
}

#[test]
fn serve_refuses_a_broken_catalog_and_leaves_nothing_behind() {
    let dir = catalog(&[("catalog.yaml", MANY_PROBLEMS.to_string())]);
    let cache = tempfile::tempdir().unwrap();
    let log_dir = tempfile::tempdir().unwrap();
    let termination = log_dir.path().join("termination-log");
    let (code, _, stderr) = run(&[
        "serve",
        dir.path().to_str().unwrap(),
        "-p",
        "127.0.0.1:0",
        "-t",
        termination.to_str().unwrap(),
        "--cache-dir",
        cache.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&termination).unwrap(),
        format!("{MANY_PROBLEMS_REPORT}\n")
    );
    for line in MANY_PROBLEMS_REPORT.lines() {
        assert!(stderr.contains(line), "stderr lacks {line:?}:\n{stderr}");
    }
    let leftovers: Vec<_> = files_below(cache.path());
    assert!(leftovers.is_empty(), "left in the cache: {leftovers:?}");
}

/// The ingest validates one package at a time; `validate` holds the whole catalog. Problems
/// that name documents of several packages or files, or of none, read the same from both.
#[test]
fn serve_reports_problems_across_packages_and_files_as_validate_does() {
    let bar = |name: &str| {
        format!(
            r#"{{"schema":"olm.bundle","package":"bar","name":"{name}","image":"quay.io/bar:{name}","properties":[{{"type":"olm.package","value":{{"packageName":"bar","version":"1.0.0"}}}}]}}"#
        )
    };
    let deprecation = |package: &str| {
        format!(
            r#"{{"schema":"olm.deprecations","package":"{package}","entries":[{{"reference":{{"schema":"olm.package"}},"message":"gone"}}]}}"#
        )
    };
    let dir = catalog(&[
        (
            "a.json",
            [PACKAGE, STABLE_V1, &bundle("1.0.0"), &deprecation("foo")].join("\n"),
        ),
        (
            "b.json",
            [
                PACKAGE,
                r#"{"schema":"olm.package","name":"bar","defaultChannel":"stable"}"#,
                r#"{"schema":"olm.channel","package":"bar","name":"stable","entries":[{"name":"bar.a"},{"name":"bar.b","replaces":"bar.a"}]}"#,
                &bar("bar.a"),
                &bar("bar.b"),
                &deprecation(""),
            ]
            .join("\n"),
        ),
        (
            "c.json",
            [
                r#"{"schema":"olm.channel","package":"qux","name":"stable","entries":[{"name":"qux.v1"}]}"#,
                &deprecation("zed"),
            ]
            .join("\n"),
        ),
    ]);
    let expected = "invalid index:\n\
├── invalid package \"bar\" (b.json:2):\n\
│   └── duplicate versions found in bundles: [{1.0.0: [bar.a, bar.b]}]\n\
├── cannot apply deprecations to an unknown package \"zed\" (c.json:2)\n\
├── duplicate package \"foo\" (b.json:1)\n\
├── package name must be set for deprecation item 1 (b.json:6)\n\
└── unknown package \"qux\" for channel \"stable\" (c.json:1)";
    assert_invalid(dir.path(), expected);

    let cache = tempfile::tempdir().unwrap();
    let termination = cache.path().join("termination-log");
    let (code, _, stderr) = run(&[
        "serve",
        dir.path().to_str().unwrap(),
        "-t",
        termination.to_str().unwrap(),
        "--cache-dir",
        cache.path().join("cache").to_str().unwrap(),
        "--cache-only",
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&termination).unwrap(),
        format!("{expected}\n")
    );
    assert_eq!(files_below(cache.path()), ["termination-log"]);
}

#[tokio::test]
async fn a_broken_catalog_does_not_replace_a_good_cached_index() {
    let dir = catalog(&[(
        "catalog.json",
        [PACKAGE, STABLE_V1, &bundle("1.0.0")].join("\n"),
    )]);
    let cache = tempfile::tempdir().unwrap();
    let flags = ["--cache-dir", cache.path().to_str().unwrap()];
    let (code, _, stderr) = run(&[
        "serve",
        dir.path().to_str().unwrap(),
        "--cache-only",
        flags[0],
        flags[1],
    ]);
    assert_eq!(code, 0, "{stderr}");
    let index = cache.path().join("olm-registry.v1/index.db");
    let good = std::fs::read(&index).unwrap();

    std::fs::write(
        dir.path().join("catalog.json"),
        [PACKAGE, STABLE_V1].join("\n"),
    )
    .unwrap();
    let (code, _, _) = run(&[
        "serve",
        dir.path().to_str().unwrap(),
        "--cache-only",
        flags[0],
        flags[1],
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        std::fs::read(&index).unwrap(),
        good,
        "the good index is untouched"
    );
    assert_eq!(files_below(cache.path()), ["olm-registry.v1/index.db"]);

    // Restoring the catalog serves from the untouched index without a rebuild.
    std::fs::write(
        dir.path().join("catalog.json"),
        [PACKAGE, STABLE_V1, &bundle("1.0.0")].join("\n"),
    )
    .unwrap();
    let server = Server::serving(dir.path(), &flags).await;
    server.wait_for_log("catalog unchanged").await;
}

/// The loader (`validate`) and the ingest (`serve`) read catalogs through one reader: a
/// catalog they cannot read is refused in the same words, every unreadable file named, on a
/// cold start and beside a stale index (which takes a digest pass first) alike.
#[test]
fn validate_and_serve_refuse_an_unreadable_catalog_in_the_same_words() {
    let good = [PACKAGE, STABLE_V1, &bundle("1.0.0")].join("\n");
    let dir = catalog(&[("catalog.json", good)]);
    let root = dir.path().to_str().unwrap();
    let stale = tempfile::tempdir().unwrap();
    let stale_cache = stale.path().to_str().unwrap();
    let (code, _, stderr) = run(&["serve", root, "--cache-only", "--cache-dir", stale_cache]);
    assert_eq!(code, 0, "{stderr}");
    let too_large = format!(
        "{{\"schema\":\"olm.package\",\"name\":\"{}\"}}",
        "x".repeat(600)
    );
    let bad_object = r#"{"schema":"olm.bundle","package":"foo","name":"foo.v2","properties":[{"type":"olm.bundle.object","value":{"data":"!!!"}}]}"#;
    for (name, text) in [
        ("big-1.json", too_large.as_str()),
        ("big-2.json", too_large.as_str()),
        ("object.json", bad_object),
        ("truncated.json", r#"{"schema":"olm.package""#),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let expected = "the catalog has 4 unreadable document(s):\n  \
        big-1.json: larger than 512 bytes, the most a catalog file may hold (see --max-file-size)\n  \
        big-2.json: larger than 512 bytes, the most a catalog file may hold (see --max-file-size)\n  \
        object.json:1: package \"foo\" bundle \"foo.v2\": property \"olm.bundle.object\": illegal base64 data at input byte 0\n  \
        truncated.json:1: invalid JSON: EOF while parsing an object at line 1 column 23\n";

    let (code, stdout, stderr) = run(&["validate", "--max-file-size", "512", root]);
    assert_eq!((code, stdout + &stderr), (1, expected.to_owned()));
    let cold = tempfile::tempdir().unwrap();
    for cache in [cold.path().to_str().unwrap(), stale_cache] {
        let log = tempfile::NamedTempFile::new().unwrap();
        let (code, _, stderr) = run(&[
            "serve",
            root,
            "--max-file-size",
            "512",
            "--cache-only",
            "--cache-dir",
            cache,
            "-t",
            log.path().to_str().unwrap(),
        ]);
        assert_eq!(code, 1, "{stderr}");
        assert_eq!(
            std::fs::read_to_string(log.path()).unwrap(),
            expected,
            "{cache}"
        );
    }
}
