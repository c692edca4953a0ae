//! `alpha list packages|channels|bundles <ref>`: opm's tables, byte for byte (the expected
//! tables below are what opm v1.26.4 prints for the same inputs; `alpha list` is unchanged
//! from it to v1.73.0), from every kind of catalog reference, and opm's refusals.

use crate::common::{fixture, run, shared_testdata};
use crate::images::{Entry, hostile_layer, labelled_layout_image};
use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog")
}

/// `alpha list KIND ARGS...`, expected to succeed with nothing on stderr.
fn list(kind: &str, args: &[&str]) -> String {
    let mut all = vec!["alpha", "list", kind];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = run(&all);
    assert_eq!((code, stderr.as_str()), (0, ""), "{all:?}");
    stdout
}

/// `alpha list KIND ARGS...`, expected to fail with exactly `message`.
fn refused(kind: &str, args: &[&str], message: &str) {
    let mut all = vec!["alpha", "list", kind];
    all.extend_from_slice(args);
    assert_eq!(
        run(&all),
        (1, String::new(), format!("error: {message}\n")),
        "{all:?}"
    );
}

const EXAMPLE_PACKAGES: &str = "\
NAME            DISPLAY NAME  DEFAULT CHANNEL
cache-operator                stable
queue-operator                stable
";

const EXAMPLE_CHANNELS: &str = "\
PACKAGE         CHANNEL  HEAD
cache-operator  fast     cache-operator.v2.0.0-rc.1
cache-operator  stable   cache-operator.v1.2.0
queue-operator  stable   queue-operator.v0.6.0
";

const EXAMPLE_BUNDLES: &str = "\
PACKAGE         CHANNEL  BUNDLE                      REPLACES               SKIPS                  SKIP RANGE      IMAGE
cache-operator  fast     cache-operator.v1.2.0                                                                     quay.io/example/cache-operator-bundle:v1.2.0
cache-operator  fast     cache-operator.v2.0.0-rc.1  cache-operator.v1.2.0                                         quay.io/example/cache-operator-bundle:v2.0.0-rc.1
cache-operator  stable   cache-operator.v1.0.0                                                                     quay.io/example/cache-operator-bundle:v1.0.0
cache-operator  stable   cache-operator.v1.1.0       cache-operator.v1.0.0                                         quay.io/example/cache-operator-bundle:v1.1.0
cache-operator  stable   cache-operator.v1.2.0       cache-operator.v1.1.0  cache-operator.v1.1.1  >=1.0.0 <1.2.0  quay.io/example/cache-operator-bundle:v1.2.0
queue-operator  stable   queue-operator.v0.5.0                                                                     quay.io/example/queue-operator-bundle:v0.5.0
queue-operator  stable   queue-operator.v0.6.0       queue-operator.v0.5.0                                         quay.io/example/queue-operator-bundle:v0.6.0
";

#[test]
fn fbc_directory_tables_are_opms() {
    let dir = example();
    let dir = dir.to_str().unwrap();
    assert_eq!(list("packages", &[dir]), EXAMPLE_PACKAGES);
    assert_eq!(list("channels", &[dir]), EXAMPLE_CHANNELS);
    assert_eq!(list("bundles", &[dir]), EXAMPLE_BUNDLES);
    // One package: the columns are sized to its rows alone.
    assert_eq!(
        list("channels", &[dir, "queue-operator"]),
        "PACKAGE         CHANNEL  HEAD\nqueue-operator  stable   queue-operator.v0.6.0\n"
    );
    assert_eq!(
        list("bundles", &[dir, "queue-operator"]),
        "\
PACKAGE         CHANNEL  BUNDLE                 REPLACES               SKIPS  SKIP RANGE  IMAGE
queue-operator  stable   queue-operator.v0.5.0                                            quay.io/example/queue-operator-bundle:v0.5.0
queue-operator  stable   queue-operator.v0.6.0  queue-operator.v0.5.0                     quay.io/example/queue-operator-bundle:v0.6.0
"
    );
}

#[test]
fn unknown_packages_bundles_and_invalid_catalogs_are_refused() {
    let dir = example();
    let dir = dir.to_str().unwrap();
    refused("channels", &[dir, "nope"], "package \"nope\" not found");
    refused("bundles", &[dir, "nope"], "package \"nope\" not found");
    let bundle = fixture("extract-bundle");
    let bundle = bundle.to_str().unwrap();
    refused(
        "packages",
        &[bundle],
        &format!("cannot list non-index \"{bundle}\""),
    );
    // opm lists only valid catalogs; the problems are validate's.
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("broken");
    crate::common::write(
        &broken.join("foo.json"),
        r#"{"schema":"olm.package","name":"foo","defaultChannel":"stable"}"#,
    );
    let (code, stdout, stderr) = run(&["alpha", "list", "packages", broken.to_str().unwrap()]);
    let (_, _, validated) = run(&["validate", broken.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert_eq!(stderr, format!("error: {validated}"));
    assert!(stderr.starts_with("error: invalid index:"), "{stderr}");
}

#[test]
fn catalog_images_and_bundle_images() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let cache = cache.to_str().unwrap();
    let catalog = format!("oci:{}:v1", tmp.path().join("catalog").display());
    let (code, _, stderr) = run(&[
        "build",
        "catalog",
        example().to_str().unwrap(),
        "--tag",
        &catalog,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let from_image = |kind| list(kind, &[&catalog, "--image-cache-dir", cache]);
    assert_eq!(from_image("packages"), EXAMPLE_PACKAGES);
    assert_eq!(from_image("channels"), EXAMPLE_CHANNELS);
    assert_eq!(from_image("bundles"), EXAMPLE_BUNDLES);

    let bundle = format!("oci:{}:v1", tmp.path().join("bundle").display());
    let dir = fixture("extract-bundle");
    let (code, _, stderr) = run(&["build", "bundle", dir.to_str().unwrap(), "--tag", &bundle]);
    assert_eq!(code, 0, "{stderr}");
    refused(
        "bundles",
        &[&bundle, "--image-cache-dir", cache],
        &format!("cannot list non-index \"{bundle}\""),
    );
}

/// The v13 database of the migrate tests, its head's CSV given a display name.
fn index_db(dir: &Path) -> PathBuf {
    let db = dir.join("index.db");
    crate::migrate::build_v13(&db);
    let named = r#""displayName":"Foo Operator","version":"3.0.0""#;
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE operatorbundle SET bundle = replace(bundle, '\"version\":\"3.0.0\"', ?1) WHERE name = 'foo.v3'",
            [named],
        )
        .unwrap();
    db
}

const INDEX_PACKAGES: &str = "\
NAME  DISPLAY NAME  DEFAULT CHANNEL
foo   Foo Operator  stable
";

const INDEX_CHANNELS: &str = "\
PACKAGE  CHANNEL  HEAD
foo      fast     foo.v3
foo      stable   foo.v3
";

const INDEX_BUNDLES: &str = "\
PACKAGE  CHANNEL  BUNDLE  REPLACES  SKIPS     SKIP RANGE  IMAGE
foo      fast     foo.v1                                  quay.io/foo/bundle:v1
foo      fast     foo.v2  foo.v1    foo.v1.5              quay.io/foo/bundle:v2
foo      fast     foo.v3  foo.v2              <3.0.0      quay.io/foo/bundle:v3
foo      stable   foo.v1                                  quay.io/foo/bundle:v1
foo      stable   foo.v2  foo.v1    foo.v1.5              quay.io/foo/bundle:v2
foo      stable   foo.v3  foo.v2              <3.0.0      quay.io/foo/bundle:v3
";

#[test]
fn legacy_index_databases_and_images() {
    let tmp = tempfile::tempdir().unwrap();
    let db = index_db(tmp.path());
    let path = db.to_str().unwrap();
    assert_eq!(list("packages", &[path]), INDEX_PACKAGES);
    assert_eq!(list("channels", &[path]), INDEX_CHANNELS);
    assert_eq!(list("bundles", &[path]), INDEX_BUNDLES);

    let layer = hostile_layer(&[Entry::File(
        "database/index.db",
        &std::fs::read(&db).unwrap(),
    )]);
    let labels = serde_json::json!({
        "operators.operatorframework.io.index.database.v1": "/database/index.db"
    });
    let image = labelled_layout_image(&tmp.path().join("layout"), layer, 0, labels);
    let cache = tmp.path().join("cache");
    let cache = cache.to_str().unwrap();
    assert_eq!(
        list("packages", &[&image, "--image-cache-dir", cache]),
        INDEX_PACKAGES
    );
    assert_eq!(
        list("bundles", &[&image, "--image-cache-dir", cache, "foo"]),
        INDEX_BUNDLES
    );
}

/// A real catalog whose bundles carry their CSVs: display names (one with a non-ASCII
/// character, which counts as one column), comma-joined skips.
#[test]
fn real_catalog_tables_are_opms() {
    let Some(dir) = shared_testdata("real/community-catalog-v4.16") else {
        return;
    };
    let dir = dir.to_str().unwrap();
    assert_eq!(
        list("packages", &[dir]),
        "\
NAME                              DISPLAY NAME                          DEFAULT CHANNEL
apicurio-registry-3               Apicurio Registry 3                   3.x
coherence-operator                Coherence Kubernetes Operator         stable
dell-csm-operator                 Dell Container Storage Modules        stable
ecr-secret-operator               ECR Secret Operator                   alpha
kairos-operator                   Kairos Operator                       candidate-v2
koku-metrics-operator             Koku Metrics Operator                 beta
kube-green                        kube-green                            alpha
layer7-operator                   Layer7 Operator                       preview
libredb-studio-operator           LibreDB Studio                        alpha
multi-nic-cni-operator            multi-nic-cni-operator                stable
multicluster-global-hub-operator  Multicluster Global Hub Operator      release-1.7
odf-node-recovery-operator        ODF Node Recovery Operator            alpha
openstack-lightspeed-operator     OpenStack Lightspeed (Community)      alpha
patterns-operator                 Validated Patterns Operator           fast
project-onboarding-operator       Project Onboarding                    stable
shipwright-operator               Shipwright Operator                   alpha
trident-operator                  NetApp Trident                        stable
visionone-containersecurity       Trend Vision One™ Container Security  stable
"
    );
    assert_eq!(
        list("bundles", &[dir, "ecr-secret-operator"]),
        "\
PACKAGE              CHANNEL  BUNDLE                      REPLACES                    SKIPS                                                  SKIP RANGE  IMAGE
ecr-secret-operator  alpha    ecr-secret-operator.v0.3.2                                                                                                 quay.io/openshift-community-operators/ecr-secret-operator@sha256:90f512ce90433a33b50c58613d9b7136e00f116c48e179c4a1be89d6a35f9abc
ecr-secret-operator  alpha    ecr-secret-operator.v0.4.0  ecr-secret-operator.v0.3.2                                                                     quay.io/openshift-community-operators/ecr-secret-operator@sha256:90342c48af588010e82e1ae427b929e55b3be45d6a0e5f5029373a5188bf093a
ecr-secret-operator  alpha    ecr-secret-operator.v0.4.1  ecr-secret-operator.v0.4.0  ecr-secret-operator.v0.3.2                                         quay.io/openshift-community-operators/ecr-secret-operator@sha256:53e73c53c31e0e06c990d3d966c2b4053d559a58a17a781155a3ceff3efac831
ecr-secret-operator  alpha    ecr-secret-operator.v0.5.0  ecr-secret-operator.v0.4.1  ecr-secret-operator.v0.4.0,ecr-secret-operator.v0.3.2              quay.io/community-operator-pipeline-prod/ecr-secret-operator@sha256:0843807a61d1888b77d64c24fa4f43e57196539bf2b76bc4d9526489d9a9b05f
"
    );
    // The whole catalog: one header and one row per channel, or per bundle and channel.
    assert_eq!(list("channels", &[dir]).lines().count(), 28);
    assert_eq!(list("bundles", &[dir]).lines().count(), 269);
}
