//! `resolve`: the report and the JSON of classic and v1 requests against examples/catalog,
//! unsatisfiable explanations, input errors, and byte-identical answers.

use crate::common::run;
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

install plan:
  bundle lookup: cache-operator.v1.2.0 from quay.io/example/cache-operator-bundle:v1.2.0 (catalog examples/olm, replaces cache-operator.v1.1.0)
  bundle lookup: queue-operator.v0.6.0 from quay.io/example/queue-operator-bundle:v0.6.0 (catalog examples/olm, replaces queue-operator.v0.5.0)
  step: Subscription queue-operator-stable-examples-olm (operators.coreos.com/v1alpha1) for queue-operator.v0.6.0
  subscription cache: currentCSV cache-operator.v1.2.0 (installedCSV cache-operator.v1.1.0)
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
      },
      "path": [
        {
          "from": "cache-operator.v1.1.0",
          "to": "cache-operator.v1.2.0",
          "version": "1.2.0",
          "image": "quay.io/example/cache-operator-bundle:v1.2.0"
        }
      ]
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
      },
      "path": [
        {
          "to": "queue-operator.v0.6.0",
          "version": "0.6.0",
          "image": "quay.io/example/queue-operator-bundle:v0.6.0"
        }
      ]
    }
  ],
  "installPlan": {
    "steps": [
      {
        "resolving": "queue-operator.v0.6.0",
        "group": "operators.coreos.com",
        "version": "v1alpha1",
        "kind": "Subscription",
        "name": "queue-operator-stable-examples-olm",
        "manifest": "{\"apiVersion\":\"operators.coreos.com/v1alpha1\",\"kind\":\"Subscription\",\"metadata\":{\"name\":\"queue-operator-stable-examples-olm\",\"namespace\":\"operators\"},\"spec\":{\"channel\":\"stable\",\"installPlanApproval\":\"Automatic\",\"name\":\"queue-operator\",\"source\":\"examples\",\"sourceNamespace\":\"olm\",\"startingCSV\":\"queue-operator.v0.6.0\"}}"
      }
    ],
    "bundleLookups": [
      {
        "identifier": "cache-operator.v1.2.0",
        "path": "quay.io/example/cache-operator-bundle:v1.2.0",
        "replaces": "cache-operator.v1.1.0",
        "catalog": "examples/olm",
        "properties": "{\"properties\":[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"cache-operator\",\"version\":\"1.2.0\"}},{\"type\":\"olm.gvk\",\"value\":{\"group\":\"cache.example.com\",\"kind\":\"CacheCluster\",\"version\":\"v1alpha1\"}},{\"type\":\"olm.gvk\",\"value\":{\"group\":\"cache.example.com\",\"kind\":\"CacheCluster\",\"version\":\"v1\"}},{\"type\":\"olm.package.required\",\"value\":{\"packageName\":\"queue-operator\",\"versionRange\":\">=0.5.0\"}},{\"type\":\"olm.maxOpenShiftVersion\",\"value\":\"4.18\"},{\"type\":\"olm.csv.metadata\",\"value\":{\"description\":\"Runs and upgrades an in-memory cache cluster.\",\"displayName\":\"Cache Operator\",\"installModes\":[{\"supported\":true,\"type\":\"OwnNamespace\"},{\"supported\":true,\"type\":\"SingleNamespace\"},{\"supported\":false,\"type\":\"MultiNamespace\"},{\"supported\":true,\"type\":\"AllNamespaces\"}],\"keywords\":[\"cache\",\"in-memory\"],\"maturity\":\"stable\",\"provider\":{\"name\":\"Example\"}}}]}"
      },
      {
        "identifier": "queue-operator.v0.6.0",
        "path": "quay.io/example/queue-operator-bundle:v0.6.0",
        "replaces": "queue-operator.v0.5.0",
        "catalog": "examples/olm",
        "properties": "{\"properties\":[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"queue-operator\",\"version\":\"0.6.0\"}},{\"type\":\"olm.gvk\",\"value\":{\"group\":\"queue.example.com\",\"kind\":\"Queue\",\"version\":\"v1\"}},{\"type\":\"olm.gvk.required\",\"value\":{\"group\":\"cache.example.com\",\"kind\":\"CacheCluster\",\"version\":\"v1\"}},{\"type\":\"olm.csv.metadata\",\"value\":{\"description\":\"Runs message queues backed by a cache cluster.\",\"displayName\":\"Queue Operator\",\"installModes\":[{\"supported\":true,\"type\":\"OwnNamespace\"},{\"supported\":true,\"type\":\"SingleNamespace\"},{\"supported\":false,\"type\":\"MultiNamespace\"},{\"supported\":true,\"type\":\"AllNamespaces\"}],\"maturity\":\"stable\",\"provider\":{\"name\":\"Example\"}}}]}"
      }
    ],
    "updatedSubscriptions": [
      {
        "name": "cache",
        "currentCSV": "cache-operator.v1.2.0",
        "installedCSV": "cache-operator.v1.1.0"
      }
    ]
  }
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
      },
      "path": [
        {
          "from": "cache-operator.v1.0.0",
          "to": "cache-operator.v1.1.0",
          "version": "1.1.0",
          "image": "quay.io/example/cache-operator-bundle:v1.1.0"
        }
      ]
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
            "subscriptions[0]: unknown field `packge`, expected one of `name`, `package`, `channel`, `source`, `sourceNamespace`, `startingCSV`, `installedCSV`, `currentCSV` at line 12 column 5",
        ),
        (
            UNSATISFIABLE.replace("mode: classic", "mode: v2"),
            "mode: unknown variant `v2`, expected `classic` or `v1` at line 1 column 7",
        ),
        (
            UNSATISFIABLE.replace("directory: CATALOG", "image: x, directory: CATALOG"),
            "catalogs[0] (examples): exactly one of directory, image and address is required",
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

/// A request against tests/fixtures/resolution/primary (package `c`: c.v1 and c.v2, whose
/// CSVs support OwnNamespace and SingleNamespace only; c.v2's CRD serves only v1 and caps
/// OpenShift at 4.16), with the cluster facts appended.
fn cluster_request(dir: &tempfile::TempDir, installed: &str, cluster: &str) -> PathBuf {
    let primary = crate::common::fixture("resolution/primary");
    let path = dir.path().join("request.yaml");
    let text = format!(
        "\
mode: classic
namespace: operators
catalogs:
  - {{name: primary, namespace: olm, directory: {}}}
{installed}subscriptions:
  - {{name: c-stable, package: c, channel: stable, source: primary, sourceNamespace: olm{}}}
cluster:
{cluster}",
        primary.display(),
        if installed.is_empty() {
            ""
        } else {
            ", installedCSV: c.v1"
        }
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn bundles_the_operator_group_cannot_run_are_not_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let path = cluster_request(&dir, "", "  operatorGroup: {name: global}\n");
    let (code, stdout, _) = run(&["resolve", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(
        stdout,
        "\
classic resolution of namespace operators: no consistent set of operators exists, because:
  - bundle primary/olm/stable/c.v1 is refused: its install modes do not support OperatorGroup global targeting all namespaces: AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces
  - bundle primary/olm/stable/c.v2 is refused: its install modes do not support OperatorGroup global targeting all namespaces: AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces
  - subscription c-stable exists
  - subscription c-stable requires at least one of primary/olm/stable/c.v2 or primary/olm/stable/c.v1
"
    );
    // Targeting its own namespace, the newest bundle installs.
    let path = cluster_request(
        &dir,
        "",
        "  operatorGroup: {name: own, targetNamespaces: [operators]}\n",
    );
    let (code, stdout, stderr) = run(&["resolve", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("  bundle:     c.v2 (version 2.0.0)\n"),
        "{stdout}"
    );
}

#[test]
fn unsafe_steps_are_refused_with_the_reason_and_conflicts_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let installed = "installed:\n  - {name: c.v1, version: 1.0.0}\n";
    let path = cluster_request(
        &dir,
        installed,
        concat!(
            "  openshiftVersion: 4.16.0\n",
            "  operatorGroup: {name: own, targetNamespaces: [operators, team-a]}\n",
            "  crds:\n",
            "    - {name: caches.c.example.com, servedVersions: [v1alpha1], storedVersions: [v1alpha1]}\n",
        ),
    );
    let (code, stdout, stderr) = run(&["resolve", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "\
classic resolution of namespace operators:

subscription c-stable (package c)
  no change:  stays at c.v1
  refused:    c.v2 from primary/olm: its install modes do not support OperatorGroup own targeting namespaces operators, team-a: MultiNamespace InstallModeType not supported, cannot configure to watch 2 namespaces; its CRD caches.c.example.com drops version v1alpha1, which is still served by the cluster and still in its status.storedVersions

OpenShift 4.16.0: the next minor upgrade is not blocked
"
    );

    let path = cluster_request(
        &dir,
        installed,
        concat!(
            "  openshiftVersion: 4.16.0\n",
            "  operatorGroup: {name: own, targetNamespaces: [operators]}\n",
            "  otherOperatorGroups:\n",
            "    - {name: shared, namespace: team-a, providedAPIs: [Cache.v1.c.example.com]}\n",
            "  crds:\n",
            "    - {name: caches.c.example.com, servedVersions: [v1], storedVersions: [v1]}\n",
        ),
    );
    let (code, stdout, stderr) = run(&["resolve", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "\
classic resolution of namespace operators:

subscription c-stable (package c)
  bundle:     c.v2 (version 2.0.0)
  channel:    stable
  catalog:    primary/olm
  image:      registry.example.com/c-bundle:v2.0.0
  step:       upgrade c.v1 -> c.v2
  warning:    c.v2: it provides Cache.v1.c.example.com that OperatorGroup team-a/shared already provides in namespace operators

install plan:
  bundle lookup: c.v2 from registry.example.com/c-bundle:v2.0.0 (catalog primary/olm, replaces c.v1)
  subscription c-stable: currentCSV c.v2 (installedCSV c.v1)

OpenShift 4.16.0: the next minor upgrade is blocked
  - c.v2 blocks the upgrade to OpenShift 4.17: its olm.maxOpenShiftVersion is 4.16
"
    );
}

#[test]
fn bad_cluster_facts_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = cluster_request(&dir, "", "  crds:\n    - {servedVersions: [v1]}\n");
    let path = path.to_str().unwrap();
    let (code, stdout, stderr) = run(&["resolve", path]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert_eq!(
        stderr,
        format!("error: {path}: cluster.crds[0]: missing field `name` at line 9 column 7\n")
    );
}

#[test]
fn the_upgrade_path_lists_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog");
    std::fs::create_dir(&catalog).unwrap();
    let bundle = |v: u32| {
        format!(
            "---\nschema: olm.bundle\npackage: p\nname: p.v{v}\nimage: registry.example.com/p:v{v}\nproperties:\n  - {{type: olm.package, value: {{packageName: p, version: {v}.0.0}}}}\n"
        )
    };
    let fbc = format!(
        "---\nschema: olm.package\nname: p\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n  - {{name: p.v1}}\n  - {{name: p.v2, replaces: p.v1}}\n  - {{name: p.v3, replaces: p.v2}}\n{}{}{}",
        bundle(1),
        bundle(2),
        bundle(3)
    );
    std::fs::write(catalog.join("catalog.yaml"), fbc).unwrap();
    let path = dir.path().join("request.yaml");
    std::fs::write(
        &path,
        "\
mode: classic
namespace: ns
catalogs: [{name: c, directory: catalog}]
installed: [{name: p.v1, version: 1.0.0}]
subscriptions: [{name: p, package: p, source: c, installedCSV: p.v1}]
",
    )
    .unwrap();
    let (code, stdout, stderr) = run(&["resolve", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "\
classic resolution of namespace ns:

subscription p (package p)
  bundle:     p.v2 (version 2.0.0)
  channel:    stable
  catalog:    c/ns
  image:      registry.example.com/p:v2
  step:       upgrade p.v1 -> p.v2
  path:       p.v1 -> p.v2 -> p.v3

install plan:
  bundle lookup: p.v2 from registry.example.com/p:v2 (catalog c/ns, replaces p.v1)
  subscription p: currentCSV p.v2 (installedCSV p.v1)
"
    );
}

/// OLM resolves a namespace only from catalogs of that namespace and of the global catalog
/// namespace (`olm` unless `globalNamespace` says otherwise; none with
/// `excludeGlobalNamespaceResolution`). Another catalog is not even loaded (its directory
/// does not exist), and a subscription to it finds nothing, in OLM's words.
#[test]
fn catalogs_outside_the_resolution_namespaces_are_invisible() {
    let dir = tempfile::tempdir().unwrap();
    let base = "\
mode: classic
namespace: operators
catalogs:
  - {name: examples, namespace: team-b, directory: TEAM_B}
  - {name: examples, namespace: olm, directory: OLM}
subscriptions:
  - {name: cache, package: cache-operator, channel: stable, source: examples, sourceNamespace: SOURCE}
";
    let request = |extra: &str, team_b: &str, olm: &str, source: &str| {
        let text = base
            .replace(
                "namespace: operators\n",
                &format!("namespace: operators\n{extra}"),
            )
            .replace("TEAM_B", team_b)
            .replace("OLM", olm)
            .replace("SOURCE", source);
        let path = request_file(&dir, &text);
        let (code, stdout, _) = run(&["resolve", path.to_str().unwrap()]);
        (code, stdout)
    };
    assert_eq!(
        request("", "does-not-exist", "CATALOG", "team-b"),
        (
            1,
            "\
warning: catalog examples/team-b is not visible from namespace operators: OLM resolves only from catalogs of the namespace itself and of the global catalog namespace olm
classic resolution of namespace operators: no consistent set of operators exists, because:
  - no operators found from catalog examples in namespace team-b referenced by subscription cache
  - subscription cache exists
"
            .to_owned()
        )
    );
    assert_eq!(
        request(
            "excludeGlobalNamespaceResolution: true\n",
            "does-not-exist",
            "does-not-exist",
            "olm"
        ),
        (
            1,
            "\
warning: catalog examples/team-b is not visible from namespace operators: OLM resolves only from catalogs of the namespace itself (its OperatorGroup excludes the global catalog namespace olm)
warning: catalog examples/olm is not visible from namespace operators: OLM resolves only from catalogs of the namespace itself (its OperatorGroup excludes the global catalog namespace olm)
classic resolution of namespace operators: no consistent set of operators exists, because:
  - no operators found from catalog examples in namespace olm referenced by subscription cache
  - subscription cache exists
"
            .to_owned()
        )
    );
    let (code, stdout) = request(
        "globalNamespace: team-b\n",
        "CATALOG",
        "does-not-exist",
        "team-b",
    );
    assert_eq!(code, 0);
    assert_eq!(
        stdout.lines().take(6).collect::<Vec<_>>().join("\n"),
        "\
warning: catalog examples/olm is not visible from namespace operators: OLM resolves only from catalogs of the namespace itself and of the global catalog namespace team-b
classic resolution of namespace operators:

subscription cache (package cache-operator)
  bundle:     cache-operator.v1.2.0 (version 1.2.0)
  channel:    stable"
    );
}

/// The InstallPlan as OLM's step resolver writes it: a bundle without an image is installed
/// from its objects (the CSV placed in the namespace with the properties annotation, CRDs,
/// the rest, a Secret as BundleSecret, service accounts other than `default`); a bundle
/// image is a lookup; a dependency gets a Subscription; a subscription whose currentCSV is
/// already the chosen operator needs nothing.
#[test]
fn the_install_plan_lists_steps_lookups_and_subscription_updates() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog");
    std::fs::create_dir(&catalog).unwrap();
    let object = |json: &str| {
        let data = base64::engine::general_purpose::STANDARD.encode(json);
        format!("  - {{type: olm.bundle.object, value: {{data: {data}}}}}\n")
    };
    let csv = r#"{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"app.v1"},"spec":{"replaces":"app.v0","install":{"spec":{"permissions":[{"serviceAccountName":"app-sa"},{"serviceAccountName":"default"}],"clusterPermissions":[{"serviceAccountName":"app-sa"}]}}}}"#;
    let crd = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"apps.app.example.com"}}"#;
    let secret = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"app-token"}}"#;
    let fbc = format!(
        "\
---
schema: olm.package
name: app
defaultChannel: stable
---
schema: olm.channel
package: app
name: stable
entries: [{{name: app.v1}}]
---
schema: olm.bundle
package: app
name: app.v1
properties:
  - {{type: olm.package, value: {{packageName: app, version: 1.0.0}}}}
  - {{type: olm.gvk.required, value: {{group: db.example.com, kind: DB, version: v1}}}}
{}{}{}---
schema: olm.package
name: db
defaultChannel: stable
---
schema: olm.channel
package: db
name: stable
entries: [{{name: db.v1}}]
---
schema: olm.bundle
package: db
name: db.v1
image: registry.example.com/db:v1
properties:
  - {{type: olm.package, value: {{packageName: db, version: 1.0.0}}}}
  - {{type: olm.gvk, value: {{group: db.example.com, kind: DB, version: v1}}}}
",
        object(secret),
        object(crd),
        object(csv),
    );
    std::fs::write(catalog.join("catalog.yaml"), fbc).unwrap();
    let path = dir.path().join("request.yaml");
    let write = |subscription: &str, installed: &str| {
        std::fs::write(
            &path,
            format!(
                "mode: classic\nnamespace: ns\ncatalogs: [{{name: c, directory: catalog}}]\ninstalled: [{installed}]\nsubscriptions: [{subscription}]\n"
            ),
        )
        .unwrap();
    };
    let plan = || {
        let (code, stdout, stderr) = run(&["resolve", path.to_str().unwrap()]);
        assert_eq!(code, 0, "{stderr}");
        stdout.split("\ninstall plan:\n").nth(1).map(str::to_owned)
    };
    write("{name: app, package: app, source: c}", "");
    assert_eq!(
        plan().as_deref(),
        Some(
            "  bundle lookup: db.v1 from registry.example.com/db:v1 (catalog c/ns)
  step: ClusterServiceVersion app.v1 (operators.coreos.com/v1alpha1) for app.v1
  step: CustomResourceDefinition apps.app.example.com (apiextensions.k8s.io/v1) for app.v1
  step: BundleSecret app-token (v1) for app.v1
  step: ServiceAccount app-sa (v1) for app.v1
  step: Subscription db-stable-c-ns (operators.coreos.com/v1alpha1) for db.v1
  subscription app: currentCSV app.v1
"
        )
    );
    let (code, stdout, _) = run(&["resolve", path.to_str().unwrap(), "-o", "json"]);
    assert_eq!(code, 0);
    let answer: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let steps = answer["installPlan"]["steps"].as_array().unwrap();
    let csv_step: serde_json::Value =
        serde_json::from_str(steps[0]["manifest"].as_str().unwrap()).unwrap();
    assert_eq!(
        csv_step,
        serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {
                "name": "app.v1",
                "namespace": "ns",
                "annotations": {"operatorframework.io/properties": r#"{"properties":[{"type":"olm.package","value":{"packageName":"app","version":"1.0.0"}},{"type":"olm.gvk.required","value":{"group":"db.example.com","kind":"DB","version":"v1"}}]}"#},
            },
            "spec": {"install": {"spec": {
                "permissions": [{"serviceAccountName": "app-sa"}, {"serviceAccountName": "default"}],
                "clusterPermissions": [{"serviceAccountName": "app-sa"}],
            }}},
        })
    );
    assert_eq!(
        steps[4]["manifest"],
        r#"{"apiVersion":"operators.coreos.com/v1alpha1","kind":"Subscription","metadata":{"name":"db-stable-c-ns","namespace":"ns"},"spec":{"channel":"stable","installPlanApproval":"Automatic","name":"db","source":"c","sourceNamespace":"ns","startingCSV":"db.v1"}}"#
    );
    assert_eq!(
        answer["installPlan"]["updatedSubscriptions"],
        serde_json::json!([{"name": "app", "currentCSV": "app.v1"}])
    );

    // app.v1 is already the subscription's currentCSV and exists: only db needs steps.
    write(
        "{name: app, package: app, source: c, currentCSV: app.v1}",
        "{name: app.v1, version: 1.0.0}",
    );
    assert_eq!(
        plan().as_deref(),
        Some(
            "  bundle lookup: db.v1 from registry.example.com/db:v1 (catalog c/ns)
  step: Subscription db-stable-c-ns (operators.coreos.com/v1alpha1) for db.v1
"
        )
    );
}

/// Bundles of one version with releases (tests/fixtures/resolution/releases): the highest
/// release is the pick, and an installed bundle, its release given apart from its version,
/// upgrades along the channel one release at a time (the path reads each step's release
/// back).
#[test]
fn v1_requests_order_releases_of_one_version() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = crate::common::fixture("resolution/releases");
    let path = dir.path().join("request.yaml");
    crate::common::write(
        &path,
        &format!(
            "\
mode: v1
catalogs:
  - {{name: releases, directory: {}}}
requests:
  - {{name: fresh, packageName: rel}}
  - {{name: installed, packageName: rel, installedBundle: {{name: rel.v1.0.0, version: 1.0.0, release: \"\"}}}}
",
            catalog.display()
        ),
    );
    let (code, stdout, stderr) = run(&["resolve", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "\
v1 resolution:

request fresh (package rel)
  bundle:     rel-v1.0.0-2 (version 1.0.0+2)
  channel:    stable
  catalog:    releases
  image:      quay.io/example/rel-bundle:v1.0.0-2
  step:       install

request installed (package rel)
  bundle:     rel-v1.0.0-1 (version 1.0.0+1)
  channel:    stable
  catalog:    releases
  image:      quay.io/example/rel-bundle:v1.0.0-1
  step:       upgrade rel.v1.0.0 -> rel-v1.0.0-1
  path:       rel.v1.0.0 -> rel-v1.0.0-1 -> rel-v1.0.0-2
"
    );
}
