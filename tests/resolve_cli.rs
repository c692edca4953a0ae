//! `resolve`: the report and the JSON of classic and v1 requests against examples/catalog,
//! unsatisfiable explanations, input errors, and byte-identical answers.
mod common;

use common::run;
use std::path::{Path, PathBuf};

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// Writes `text` (with `CATALOG` standing for examples/catalog) as a request file.
fn request_file(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("request.yaml");
    std::fs::write(&path, text.replace("CATALOG", &example("catalog"))).unwrap();
    path
}

/// A subscription whose only candidate (startingCSV v1.2.0) needs queue-operator, whose
/// API an installed CSV no subscription owns already provides.
const UNSATISFIABLE: &str = "\
mode: classic
namespace: operators
catalogs:
  - {name: examples, directory: CATALOG}
installed:
  - name: legacy-queue.v0.1.0
    version: 0.1.0
    providedAPIs:
      - {group: queue.example.com, version: v1, kind: Queue}
subscriptions:
  - name: cache
    package: cache-operator
    source: examples
    startingCSV: cache-operator.v1.2.0
";

#[test]
fn classic_upgrade_pulls_in_a_dependency_report() {
    let (code, stdout, stderr) = run(&["resolve", &example("resolve-classic.yaml")]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "\
classic resolution of namespace operators:

subscription cache (package cache-operator)
  bundle:     cache-operator.v1.2.0 (version 1.2.0)
  channel:    stable
  catalog:    examples/olm
  image:      quay.io/example/cache-operator-bundle:v1.2.0
  step:       upgrade cache-operator.v1.1.0 -> cache-operator.v1.2.0

dependency (package queue-operator)
  bundle:     queue-operator.v0.6.0 (version 0.6.0)
  channel:    stable
  catalog:    examples/olm
  image:      quay.io/example/queue-operator-bundle:v0.6.0
  step:       install
  because:    bundle cache-operator.v1.2.0 requires an operator with package: queue-operator and with version in range: >=0.5.0
"
    );
}

#[test]
fn classic_upgrade_pulls_in_a_dependency_json() {
    let (code, stdout, stderr) = run(&["resolve", &example("resolve-classic.yaml"), "-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        r#"{
  "mode": "classic",
  "namespace": "operators",
  "results": [
    {
      "request": "cache",
      "package": "cache-operator",
      "bundle": {
        "name": "cache-operator.v1.2.0",
        "version": "1.2.0",
        "channel": "stable",
        "catalog": "examples/olm",
        "image": "quay.io/example/cache-operator-bundle:v1.2.0",
        "from": "cache-operator.v1.1.0"
      }
    },
    {
      "package": "queue-operator",
      "bundle": {
        "name": "queue-operator.v0.6.0",
        "version": "0.6.0",
        "channel": "stable",
        "catalog": "examples/olm",
        "image": "quay.io/example/queue-operator-bundle:v0.6.0",
        "requiredBy": [
          "bundle cache-operator.v1.2.0 requires an operator with package: queue-operator and with version in range: >=0.5.0"
        ]
      }
    }
  ]
}
"#
    );
}

#[test]
fn unsatisfiable_request_is_explained_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = request_file(&dir, UNSATISFIABLE);
    let path = path.to_str().unwrap();
    let (code, stdout, _) = run(&["resolve", path]);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        "\
classic resolution of namespace operators: no consistent set of operators exists, because:
  - @existing/operators//legacy-queue.v0.1.0, examples/operators/stable/queue-operator.v0.5.0 and examples/operators/stable/queue-operator.v0.6.0 provide Queue (queue.example.com/v1)
  - bundle cache-operator.v1.2.0 requires an operator with package: queue-operator and with version in range: >=0.5.0
  - clusterserviceversion legacy-queue.v0.1.0 exists and is not referenced by a subscription
  - subscription cache exists
  - subscription cache requires at least one of examples/operators/stable/cache-operator.v1.2.0 or examples/operators/fast/cache-operator.v1.2.0
"
    );
    let (code, stdout, _) = run(&["resolve", path, "-o", "json"]);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        r#"{
  "mode": "classic",
  "namespace": "operators",
  "unsatisfiable": [
    "@existing/operators//legacy-queue.v0.1.0, examples/operators/stable/queue-operator.v0.5.0 and examples/operators/stable/queue-operator.v0.6.0 provide Queue (queue.example.com/v1)",
    "bundle cache-operator.v1.2.0 requires an operator with package: queue-operator and with version in range: >=0.5.0",
    "clusterserviceversion legacy-queue.v0.1.0 exists and is not referenced by a subscription",
    "subscription cache exists",
    "subscription cache requires at least one of examples/operators/stable/cache-operator.v1.2.0 or examples/operators/fast/cache-operator.v1.2.0"
  ],
  "results": []
}
"#
    );
}

#[test]
fn v1_request_report_and_json() {
    let (code, stdout, stderr) = run(&["resolve", &example("resolve-v1.yaml")]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "\
v1 resolution:

request cache (package cache-operator)
  bundle:     cache-operator.v1.1.0 (version 1.1.0)
  channel:    stable
  catalog:    examples
  image:      quay.io/example/cache-operator-bundle:v1.1.0
  step:       upgrade cache-operator.v1.0.0 -> cache-operator.v1.1.0
"
    );
    let (code, stdout, stderr) = run(&["resolve", &example("resolve-v1.yaml"), "-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        r#"{
  "mode": "v1",
  "results": [
    {
      "request": "cache",
      "package": "cache-operator",
      "bundle": {
        "name": "cache-operator.v1.1.0",
        "version": "1.1.0",
        "channel": "stable",
        "catalog": "examples",
        "image": "quay.io/example/cache-operator-bundle:v1.1.0",
        "from": "cache-operator.v1.0.0"
      }
    }
  ]
}
"#
    );
}

#[test]
fn v1_request_that_finds_nothing_says_which_filter_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = request_file(
        &dir,
        "\
mode: v1
catalogs:
  - {name: examples, directory: CATALOG}
requests:
  - {name: cache, packageName: cache-operator, version: 3.0.0}
",
    );
    let (code, stdout, _) = run(&["resolve", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        "\
v1 resolution:

request cache (package cache-operator)
  no bundle: no bundles found for package \"cache-operator\" matching version \"3.0.0\"
"
    );
}

#[test]
fn an_up_to_date_subscription_is_reported_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = request_file(
        &dir,
        "\
mode: classic
namespace: operators
catalogs:
  - {name: examples, directory: CATALOG}
installed:
  - {name: cache-operator.v1.2.0, version: 1.2.0}
subscriptions:
  - {name: cache, package: cache-operator, channel: stable, source: examples, installedCSV: cache-operator.v1.2.0}
",
    );
    let (code, stdout, stderr) = run(&["resolve", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "\
classic resolution of namespace operators:

subscription cache (package cache-operator)
  no change:  stays at cache-operator.v1.2.0
"
    );
}

#[test]
fn bad_input_names_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            UNSATISFIABLE.replace("package: cache-operator", "packge: cache-operator"),
            "subscriptions[0]: unknown field `packge`, expected one of `name`, `package`, `channel`, `source`, `sourceNamespace`, `startingCSV`, `installedCSV` at line 12 column 5",
        ),
        (
            UNSATISFIABLE.replace("mode: classic", "mode: v2"),
            "mode: unknown variant `v2`, expected `classic` or `v1` at line 1 column 7",
        ),
        (
            UNSATISFIABLE.replace("directory: CATALOG", "image: x, directory: CATALOG"),
            "catalogs[0] (examples): exactly one of directory and image is required",
        ),
        (
            UNSATISFIABLE.replace("namespace: operators\n", ""),
            "namespace: required in classic mode",
        ),
        (
            UNSATISFIABLE.replace("mode: classic", "mode: v1"),
            "subscriptions (classic only): not allowed in v1 mode",
        ),
    ];
    for (text, message) in cases {
        let path = request_file(&dir, &text);
        let path = path.to_str().unwrap();
        let (code, stdout, stderr) = run(&["resolve", path]);
        assert_eq!((code, stdout.as_str()), (1, ""), "{text}");
        assert_eq!(stderr, format!("error: {path}: {message}\n"), "{text}");
    }
}

#[test]
fn the_same_request_gives_byte_identical_json() {
    let path = example("resolve-classic.yaml");
    let first = run(&["resolve", &path, "-o", "json"]);
    assert_eq!(first.0, 0, "{}", first.2);
    for _ in 1..20 {
        assert_eq!(run(&["resolve", &path, "-o", "json"]), first);
    }
}
