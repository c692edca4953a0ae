//! Rendering registry+v1 bundle directories (catalog-formats.md §C) against the upstream and
//! real bundles in ../shared/testdata.

use crate::common::{bundle_objects, run, shared_testdata};
use bundle::dir::{BundleDir, is_bundle_dir};
use bundle::render::render;
use catalog::file::ReadLimits;
use catalog::{Bundle, property};
use std::path::Path;

fn render_dir(path: &Path, image: &str) -> Bundle {
    let b = BundleDir::read(path, ReadLimits::default()).unwrap_or_else(|e| panic!("{e}"));
    render(&b, image)
}

/// `type value` per property, manifests abbreviated to their kind and name.
fn property_lines(b: &Bundle) -> Vec<String> {
    let objects = bundle_objects(b);
    let mut next = objects.iter();
    b.properties
        .iter()
        .map(|p| {
            if p.kind == property::BUNDLE_OBJECT {
                let o: serde_json::Value = serde_json::from_str(next.next().unwrap()).unwrap();
                format!(
                    "{} {} {}",
                    p.kind,
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap()
                )
            } else {
                format!("{} {}", p.kind, p.value)
            }
        })
        .collect()
}

fn related(b: &Bundle) -> Vec<String> {
    b.related_images
        .iter()
        .map(|r| format!("{}={}", r.name, r.image))
        .collect()
}

/// The `data` of every `olm.bundle.object` of bundle `name` in an upstream YAML catalog.
fn upstream_object_data(catalog: &Path, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(catalog).unwrap();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let v: serde_json::Value = serde::Deserialize::deserialize(doc).unwrap();
        if v["schema"] == "olm.bundle" && v["name"] == name {
            return v["properties"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["type"] == "olm.bundle.object")
                .map(|p| p["value"]["data"].as_str().unwrap().to_owned())
                .collect();
        }
    }
    panic!("{name} not in {}", catalog.display());
}

#[test]
fn foo_v0_2_0_renders_as_upstream_example() {
    let Some(root) = shared_testdata("upstream/render-bundles") else {
        return;
    };
    let b = render_dir(&root.join("foo-bundle-v0.2.0"), "");
    assert_eq!(
        (b.name.as_str(), b.package.as_str(), b.image.as_str()),
        ("foo.v0.2.0", "foo", "")
    );
    assert_eq!(
        property_lines(&b),
        [
            r#"olm.gvk {"group":"test.foo","kind":"Foo","version":"v1"}"#,
            r#"olm.gvk.required {"group":"test.bar","kind":"Bar","version":"v1alpha1"}"#,
            r#"olm.package {"packageName":"foo","version":"0.2.0"}"#,
            r#"olm.package.required {"packageName":"bar","versionRange":"<0.1.0"}"#,
            "olm.bundle.object CustomResourceDefinition foos.test.foo",
            "olm.bundle.object ClusterServiceVersion foo.v0.2.0",
        ]
    );
    assert_eq!(
        related(&b),
        [
            "=test.registry/foo-operator/foo-2:v0.2.0",
            "=test.registry/foo-operator/foo-init-2:v0.2.0",
            "=test.registry/foo-operator/foo-init:v0.2.0",
            "other=test.registry/foo-operator/foo-other:v0.2.0",
            "operator=test.registry/foo-operator/foo:v0.2.0",
        ]
    );
    // Manifests are Go's json.Marshal of the object: sorted keys, HTML characters escaped.
    assert_eq!(
        bundle_objects(&b)[0],
        r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"foos.test.foo"},"spec":{"group":"test.foo","names":{"kind":"Foo","plural":"foos"},"versions":[{"name":"v1"}]}}"#
    );
    assert!(bundle_objects(&b)[1].contains(r#""annotations":{"olm.skipRange":"\u003c0.2.0"}"#));
}

#[test]
fn bundle_image_joins_related_images_and_manifests_match_upstream_bytes() {
    let Some(root) = shared_testdata("upstream/render-bundles") else {
        return;
    };
    let image = "test.registry/foo-operator/foo-bundle:v0.2.0";
    let b = render_dir(&root.join("foo-bundle-v0.2.0"), image);
    assert_eq!(b.image, image);
    assert_eq!(
        related(&b),
        [
            "=test.registry/foo-operator/foo-2:v0.2.0",
            "=test.registry/foo-operator/foo-bundle:v0.2.0",
            "=test.registry/foo-operator/foo-init-2:v0.2.0",
            "=test.registry/foo-operator/foo-init:v0.2.0",
            "other=test.registry/foo-operator/foo-other:v0.2.0",
            "operator=test.registry/foo-operator/foo:v0.2.0",
        ]
    );
    let ours: Vec<String> = b
        .properties
        .iter()
        .filter(|p| p.kind == property::BUNDLE_OBJECT)
        .map(|p| {
            serde_json::from_str::<serde_json::Value>(&p.value).unwrap()["data"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut theirs = upstream_object_data(
        &root.join("foo-index-v0.2.0-declcfg/foo/index.yaml"),
        "foo.v0.2.0",
    );
    theirs.sort();
    assert_eq!(
        ours, theirs,
        "object data is byte-identical to opm's (sorted by value)"
    );
}

/// One line per bundle directory under `root` (recursively, sorted): its name, package and
/// property counts by type, and the number of related images.
fn summaries(root: &Path) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        if is_bundle_dir(&d) {
            dirs.push(d);
            continue;
        }
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let b = render_dir(d, "");
            let mut counts = std::collections::BTreeMap::<&str, usize>::new();
            for p in &b.properties {
                *counts.entry(p.kind.as_str()).or_default() += 1;
            }
            let version = b
                .properties
                .iter()
                .find(|p| p.kind == property::PACKAGE)
                .map(|p| p.value.clone())
                .unwrap();
            let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
            format!(
                "{} {} {} {version} [{}] related={}",
                d.strip_prefix(root.parent().unwrap()).unwrap().display(),
                b.name,
                b.package,
                counts.join(" "),
                b.related_images.len()
            )
        })
        .collect()
}

#[test]
fn every_upstream_bundle_renders() {
    let Some(root) = shared_testdata("upstream") else {
        return;
    };
    let got: Vec<String> = [
        "bundles",
        "render-bundles",
        "bundle-validation/valid_bundle",
        "bundle-validation/valid_bundle_2",
        "e2e/bundles",
        "package-manifests/overwrite",
        "package-manifests/v1crd_bundle",
    ]
    .iter()
    .flat_map(|d| summaries(&root.join(d)))
    .collect();
    assert_eq!(got, UPSTREAM_SUMMARIES);
}

#[test]
fn every_real_bundle_renders() {
    let Some(root) = shared_testdata("real/bundles") else {
        return;
    };
    let got = summaries(&root);
    assert_eq!(got, REAL_SUMMARIES);
}

const UPSTREAM_SUMMARIES: &[&str] = &[
    "bundles/etcd.0.9.0 etcdoperator.v0.9.0 etcd {\"packageName\":\"etcd\",\"version\":\"0.9.0\"} [olm.bundle.object=4 olm.gvk=3 olm.package=1] related=1",
    "bundles/etcd.0.9.2 etcdoperator.v0.9.2 etcd {\"packageName\":\"etcd\",\"version\":\"0.9.2\"} [olm.bundle.object=4 olm.constraint=1 olm.gvk=3 olm.gvk.required=2 olm.package=1] related=1",
    "bundles/prometheus.0.14.0 prometheusoperator.0.14.0 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.14.0\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "bundles/prometheus.0.14.0-beta prometheusoperator.0.14.0-beta prometheus {\"packageName\":\"prometheus\",\"version\":\"0.14.0-beta\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "bundles/prometheus.0.14.0.substitutesfor prometheusoperator.0.14.0+0.1234-rebuild prometheus {\"packageName\":\"prometheus\",\"version\":\"0.14.0+0.1234\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "bundles/prometheus.0.14.0.substitutesfor2 prometheusoperator.0.14.0+2-rebuild prometheus {\"packageName\":\"prometheus\",\"version\":\"0.14.0+2\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "bundles/prometheus.0.14.0.substitutesfor3 prometheusoperator.0.14.0+3-rebuild prometheus {\"packageName\":\"prometheus\",\"version\":\"0.14.0+3\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "bundles/prometheus.0.15.0 prometheusoperator.0.15.0 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.15.0\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "bundles/prometheus.0.15.0-stable prometheusoperator.0.15.0-stable prometheus {\"packageName\":\"prometheus\",\"version\":\"0.15.0\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "bundles/prometheus.0.15.0.substitutesfor prometheusoperator.0.15.0+1-freshmaker-rebuild prometheus {\"packageName\":\"prometheus\",\"version\":\"0.15.0+1\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "bundles/prometheus.0.15.0.substitutesfor2 prometheusoperator.0.15.0+2-freshmaker-rebuild prometheus {\"packageName\":\"prometheus\",\"version\":\"0.15.0+2\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "bundles/prometheus.0.22.2 prometheusoperator.0.22.2 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.22.2\"} [olm.bundle.object=5 olm.gvk=4 olm.gvk.required=1 olm.package=1 olm.package.required=1] related=1",
    "render-bundles/bar-bundle-v0.1.0 bar.v0.1.0 bar {\"packageName\":\"bar\",\"version\":\"0.1.0\"} [olm.bundle.object=2 olm.gvk=1 olm.package=1] related=1",
    "render-bundles/bar-bundle-v0.2.0 bar.v0.2.0 bar {\"packageName\":\"bar\",\"version\":\"0.2.0\"} [olm.bundle.object=2 olm.gvk=1 olm.package=1] related=1",
    "render-bundles/bar-bundle-v1.0.0 bar.v1.0.0 bar {\"packageName\":\"bar\",\"version\":\"1.0.0\"} [olm.bundle.object=2 olm.gvk=2 olm.package=1] related=1",
    "render-bundles/baz-bundle-v1.0.0 baz.v1.0.0 baz {\"packageName\":\"baz\",\"version\":\"1.0.0\"} [olm.bundle.object=2 olm.gvk=1 olm.package=1] related=1",
    "render-bundles/baz-bundle-v1.0.1 baz.v1.0.1 baz {\"packageName\":\"baz\",\"version\":\"1.0.1\"} [olm.bundle.object=2 olm.gvk=1 olm.package=1] related=1",
    "render-bundles/baz-bundle-v1.1.0 baz.v1.1.0 baz {\"packageName\":\"baz\",\"version\":\"1.1.0\"} [olm.bundle.object=2 olm.gvk=1 olm.package=1] related=1",
    "render-bundles/foo-bundle-v0.1.0 foo.v0.1.0 foo {\"packageName\":\"foo\",\"version\":\"0.1.0\"} [olm.bundle.object=2 olm.gvk=1 olm.gvk.required=1 olm.package=1 olm.package.required=1] related=1",
    "render-bundles/foo-bundle-v0.2.0 foo.v0.2.0 foo {\"packageName\":\"foo\",\"version\":\"0.2.0\"} [olm.bundle.object=2 olm.gvk=1 olm.gvk.required=1 olm.package=1 olm.package.required=1] related=5",
    "render-bundles/foo-bundle-v0.2.0-no-csv-related-images foo.v0.2.0 foo {\"packageName\":\"foo\",\"version\":\"0.2.0\"} [olm.bundle.object=2 olm.gvk=1 olm.gvk.required=1 olm.package=1 olm.package.required=1] related=4",
    "render-bundles/foo-bundle-v0.3.0 foo.v0.3.0 foo {\"packageName\":\"foo\",\"version\":\"0.3.0\"} [olm.bundle.object=2 olm.gvk=2 olm.gvk.required=1 olm.package=1 olm.package.required=1] related=1",
    "render-bundles/foo-bundle-v0.3.1 foo.v0.3.1 foo {\"packageName\":\"foo\",\"version\":\"0.3.1\"} [olm.bundle.object=2 olm.gvk=2 olm.gvk.required=1 olm.package=1 olm.package.required=1] related=1",
    "valid_bundle etcdoperator.v0.9.4 etcd {\"packageName\":\"etcd\",\"version\":\"0.9.4\"} [olm.bundle.object=9 olm.gvk=3 olm.package=1] related=1",
    "valid_bundle_2 lib-bucket-provisioner.v1.0.0 lib-bucket-provisioner {\"packageName\":\"lib-bucket-provisioner\",\"version\":\"1.0.0\"} [olm.bundle.object=3 olm.gvk=2 olm.package=1] related=1",
    "bundles/kiali.1.4.2 kiali-operator.v1.4.2 kiali-operator.v1.4.2 {\"packageName\":\"kiali-operator.v1.4.2\",\"version\":\"1.4.2\"} [olm.bundle.object=3 olm.gvk=2 olm.package=1] related=1",
    "bundles/redis.0.4.0 redis-operator.v0.4.0 redis-operator.0.4.0 {\"packageName\":\"redis-operator.0.4.0\",\"version\":\"0.4.0\"} [olm.bundle.object=2 olm.gvk=1 olm.package=1] related=1",
    "overwrite/etcd.0.9.0 etcdoperator.v0.9.0 etcd {\"packageName\":\"etcd\",\"version\":\"0.9.0\"} [olm.bundle.object=4 olm.gvk=3 olm.package=1] related=1",
    "overwrite/etcd.0.9.2 etcdoperator.v0.9.2 etcd {\"packageName\":\"etcd\",\"version\":\"0.9.2\"} [olm.bundle.object=4 olm.gvk=3 olm.gvk.required=2 olm.package=1] related=1",
    "overwrite/prometheus.0.15.0 prometheusoperator.0.15.0 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.15.0\"} [olm.bundle.object=5 olm.gvk=4 olm.package=1] related=1",
    "overwrite/prometheus.0.22.2 prometheusoperator.0.22.2 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.22.2\"} [olm.bundle.object=5 olm.gvk=4 olm.gvk.required=1 olm.package=1 olm.package.required=1] related=1",
    "v1crd_bundle lib-bucket-provisioner.v1.0.0 lib-bucket-provisioner {\"packageName\":\"lib-bucket-provisioner\",\"version\":\"1.0.0\"} [olm.bundle.object=3 olm.gvk=2 olm.package=1] related=1",
];
const REAL_SUMMARIES: &[&str] = &[
    "bundles/etcd/0.6.1 etcdoperator.v0.6.1 etcd {\"packageName\":\"etcd\",\"version\":\"0.6.1\"} [olm.bundle.object=2 olm.gvk=1 olm.package=1] related=1",
    "bundles/etcd/0.9.0 etcdoperator.v0.9.0 etcd {\"packageName\":\"etcd\",\"version\":\"0.9.0\"} [olm.bundle.object=4 olm.gvk=3 olm.package=1] related=1",
    "bundles/etcd/0.9.2 etcdoperator.v0.9.2 etcd {\"packageName\":\"etcd\",\"version\":\"0.9.2\"} [olm.bundle.object=4 olm.gvk=3 olm.package=1] related=1",
    "bundles/etcd/0.9.2-clusterwide etcdoperator.v0.9.2-clusterwide etcd {\"packageName\":\"etcd\",\"version\":\"0.9.2-clusterwide\"} [olm.bundle.object=4 olm.gvk=3 olm.package=1] related=1",
    "bundles/etcd/0.9.4 etcdoperator.v0.9.4 etcd {\"packageName\":\"etcd\",\"version\":\"0.9.4\"} [olm.bundle.object=4 olm.gvk=3 olm.package=1] related=1",
    "bundles/etcd/0.9.4-clusterwide etcdoperator.v0.9.4-clusterwide etcd {\"packageName\":\"etcd\",\"version\":\"0.9.4-clusterwide\"} [olm.bundle.object=4 olm.gvk=3 olm.package=1] related=1",
    "bundles/kuadrant-operator/0.10.0 kuadrant-operator.v0.10.0 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.10.0\"} [olm.bundle.object=9 olm.gvk=5 olm.package=1 olm.package.required=3] related=2",
    "bundles/kuadrant-operator/0.11.0 kuadrant-operator.v0.11.0 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.11.0\"} [olm.bundle.object=9 olm.gvk=5 olm.package=1 olm.package.required=3] related=2",
    "bundles/kuadrant-operator/0.11.1 kuadrant-operator.v0.11.1 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.11.1\"} [olm.bundle.object=9 olm.gvk=5 olm.package=1 olm.package.required=3] related=2",
    "bundles/kuadrant-operator/0.2.0 kuadrant-operator.v0.2.0 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.2.0\"} [olm.bundle.object=7 olm.gvk=3 olm.package=1 olm.package.required=2] related=2",
    "bundles/kuadrant-operator/0.2.1 kuadrant-operator.v0.2.1 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.2.1\"} [olm.bundle.object=7 olm.gvk=3 olm.package=1 olm.package.required=2] related=2",
    "bundles/kuadrant-operator/0.3.0 kuadrant-operator.v0.3.0 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.3.0\"} [olm.bundle.object=7 olm.gvk=3 olm.package=1 olm.package.required=2] related=2",
    "bundles/kuadrant-operator/0.3.1 kuadrant-operator.v0.3.1 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.3.1\"} [olm.bundle.object=7 olm.gvk=3 olm.package=1 olm.package.required=2] related=2",
    "bundles/kuadrant-operator/0.4.0 kuadrant-operator.v0.4.0 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.4.0\"} [olm.bundle.object=7 olm.gvk=3 olm.package=1 olm.package.required=2] related=2",
    "bundles/kuadrant-operator/0.4.1 kuadrant-operator.v0.4.1 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.4.1\"} [olm.bundle.object=7 olm.gvk=3 olm.package=1 olm.package.required=2] related=2",
    "bundles/kuadrant-operator/0.5.0 kuadrant-operator.v0.5.0 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.5.0\"} [olm.bundle.object=7 olm.gvk=3 olm.package=1 olm.package.required=2] related=2",
    "bundles/kuadrant-operator/0.6.0 kuadrant-operator.v0.6.0 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.6.0\"} [olm.bundle.object=14 olm.gvk=8 olm.package=1 olm.package.required=2] related=3",
    "bundles/kuadrant-operator/0.6.1 kuadrant-operator.v0.6.1 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.6.1\"} [olm.bundle.object=14 olm.gvk=8 olm.package=1 olm.package.required=2] related=3",
    "bundles/kuadrant-operator/0.7.1 kuadrant-operator.v0.7.1 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.7.1\"} [olm.bundle.object=9 olm.gvk=5 olm.package=1 olm.package.required=4] related=2",
    "bundles/kuadrant-operator/0.7.2 kuadrant-operator.v0.7.2 kuadrant-operator {\"packageName\":\"kuadrant-operator\",\"version\":\"0.7.2\"} [olm.bundle.object=9 olm.gvk=5 olm.package=1 olm.package.required=4] related=2",
    "bundles/node-healthcheck-operator/0.1.1 node-healthcheck-operator.v0.1.1 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.1.1\"} [olm.bundle.object=14 olm.gvk=1 olm.gvk.required=1 olm.package=1] related=2",
    "bundles/node-healthcheck-operator/0.10.0 node-healthcheck-operator.v0.10.0 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.10.0\"} [olm.bundle.object=6 olm.gvk=1 olm.package=1] related=3",
    "bundles/node-healthcheck-operator/0.10.3 node-healthcheck-operator.v0.10.3 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.10.3\"} [olm.bundle.object=6 olm.gvk=1 olm.package=1] related=3",
    "bundles/node-healthcheck-operator/0.11.0 node-healthcheck-operator.v0.11.0 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.11.0\"} [olm.bundle.object=6 olm.gvk=1 olm.package=1] related=3",
    "bundles/node-healthcheck-operator/0.12.0 node-healthcheck-operator.v0.12.0 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.12.0\"} [olm.bundle.object=6 olm.gvk=1 olm.package=1] related=2",
    "bundles/node-healthcheck-operator/0.3.0 node-healthcheck-operator.v0.3.0 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.3.0\"} [olm.bundle.object=4 olm.gvk=1 olm.gvk.required=1 olm.package=1] related=2",
    "bundles/node-healthcheck-operator/0.5.0 node-healthcheck-operator.v0.5.0 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.5.0\"} [olm.bundle.object=6 olm.gvk=1 olm.gvk.required=1 olm.package=1] related=3",
    "bundles/node-healthcheck-operator/0.6.0 node-healthcheck-operator.v0.6.0 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.6.0\"} [olm.bundle.object=6 olm.gvk=1 olm.gvk.required=1 olm.package=1] related=3",
    "bundles/node-healthcheck-operator/0.6.1 node-healthcheck-operator.v0.6.1 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.6.1\"} [olm.bundle.object=6 olm.gvk=1 olm.gvk.required=1 olm.package=1] related=3",
    "bundles/node-healthcheck-operator/0.7.0 node-healthcheck-operator.v0.7.0 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.7.0\"} [olm.bundle.object=6 olm.gvk=1 olm.gvk.required=1 olm.package=1] related=3",
    "bundles/node-healthcheck-operator/0.8.0 node-healthcheck-operator.v0.8.0 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.8.0\"} [olm.bundle.object=6 olm.gvk=1 olm.gvk.required=1 olm.package=1] related=3",
    "bundles/node-healthcheck-operator/0.9.0 node-healthcheck-operator.v0.9.0 node-healthcheck-operator {\"packageName\":\"node-healthcheck-operator\",\"version\":\"0.9.0\"} [olm.bundle.object=6 olm.gvk=1 olm.package=1] related=3",
    "bundles/prometheus/0.14.0 prometheusoperator.0.14.0 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.14.0\"} [olm.bundle.object=4 olm.gvk=3 olm.maxOpenShiftVersion=1 olm.package=1] related=1",
    "bundles/prometheus/0.15.0 prometheusoperator.0.15.0 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.15.0\"} [olm.bundle.object=4 olm.gvk=3 olm.maxOpenShiftVersion=1 olm.package=1] related=1",
    "bundles/prometheus/0.22.2 prometheusoperator.0.22.2 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.22.2\"} [olm.bundle.object=5 olm.gvk=4 olm.maxOpenShiftVersion=1 olm.package=1] related=1",
    "bundles/prometheus/0.27.0 prometheusoperator.0.27.0 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.27.0\"} [olm.bundle.object=5 olm.gvk=4 olm.maxOpenShiftVersion=1 olm.package=1] related=1",
    "bundles/prometheus/0.32.0 prometheusoperator.0.32.0 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.32.0\"} [olm.bundle.object=6 olm.gvk=5 olm.maxOpenShiftVersion=1 olm.package=1] related=1",
    "bundles/prometheus/0.37.0 prometheusoperator.0.37.0 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.37.0\"} [olm.bundle.object=7 olm.gvk=6 olm.maxOpenShiftVersion=1 olm.package=1] related=1",
    "bundles/prometheus/0.47.0 prometheusoperator.0.47.0 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.47.0\"} [olm.bundle.object=9 olm.gvk=8 olm.package=1] related=1",
    "bundles/prometheus/0.56.3 prometheusoperator.0.56.3 prometheus {\"packageName\":\"prometheus\",\"version\":\"0.56.3\"} [olm.bundle.object=9 olm.gvk=8 olm.package=1] related=1",
];

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::write(&dest, std::fs::read(&p).unwrap()).unwrap();
        }
    }
}

#[test]
fn real_world_junk_is_ignored() {
    let Some(root) = shared_testdata("upstream/render-bundles/foo-bundle-v0.2.0") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("foo");
    copy_dir(&root, &dir);
    let csv = std::fs::read_to_string(dir.join("manifests/foo.v0.2.0.csv.yaml")).unwrap();
    let junk: [(&str, String); 8] = [
        ("manifests/.wh..wh..opq", String::new()),
        // A later CSV (file order) is dropped: only the first counts.
        (
            "manifests/foo.v0.2.0.csv.yaml.bak",
            csv.replace("foo.v0.2.0", "foo.v9.9.9"),
        ),
        (
            "manifests/nested/extra.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nested}\n".into(),
        ),
        ("manifests/notes.txt", "just some notes\n".into()),
        ("manifests/broken.yaml", "kind: [unclosed\n".into()),
        ("metadata/.wh..wh..opq", String::new()),
        (
            "metadata/annotations.yaml.bak",
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: old\n".into(),
        ),
        (
            "metadata/ci.yaml",
            "reviewers: [someone]\nupdateGraph: replaces-mode\n".into(),
        ),
    ];
    for (file, text) in &junk {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut clean = render_dir(&root, "");
    let mut messy = render_dir(&dir, "");
    clean.origin = Default::default();
    messy.origin = Default::default();
    assert_eq!(messy, clean);
}

#[test]
fn a_directory_without_annotations_is_refused() {
    let Some(root) = shared_testdata("upstream/render-bundles/foo-bundle-v0.2.0") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&root, tmp.path());
    std::fs::remove_file(tmp.path().join("metadata/annotations.yaml")).unwrap();
    let err = BundleDir::read(tmp.path(), ReadLimits::default()).unwrap_err();
    assert_eq!(
        err.problems,
        [format!(
            "Could not find annotations file in {}: no file sets operators.operatorframework.io.bundle.package.v1",
            tmp.path().join("metadata").display()
        )]
    );
}

/// The documents of a JSON stream.
fn documents(text: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn render_command_names_the_image_and_migrates_to_csv_metadata() {
    let Some(root) = shared_testdata("upstream/render-bundles/foo-bundle-v0.2.0") else {
        return;
    };
    let dir = root.to_str().unwrap();
    let template = "quay.io/test/{{.Package}}-bundle:v{{.Version}}";
    let (code, out, err) = run(&[
        "render",
        dir,
        "--alpha-image-ref-template",
        template,
        "--migrate-level",
        "bundle-object-to-csv-metadata",
    ]);
    assert_eq!(code, 0, "{err}");
    let docs = documents(&out);
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0]["image"], "quay.io/test/foo-bundle:v0.2.0");
    let props = docs[0]["properties"].as_array().unwrap();
    let types: Vec<&str> = props.iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "olm.gvk",
            "olm.gvk.required",
            "olm.package",
            "olm.package.required",
            "olm.csv.metadata"
        ]
    );
    assert_eq!(
        props[4]["value"],
        serde_json::json!({
            "annotations": {"olm.skipRange": "<0.2.0"},
            "apiServiceDefinitions": {},
            "crdDescriptions": {"owned": [{"group": "test.foo", "kind": "Foo", "name": "foos.test.foo", "version": "v1"}]},
            "displayName": "Foo Operator",
            "provider": {}
        })
    );
    // Without an image the manifests are the only copy: the migration leaves them alone.
    let (code, out, _) = run(&["render", dir, "--migrate"]);
    assert_eq!(code, 0);
    let kinds = documents(&out)[0]["properties"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "olm.bundle.object")
        .count();
    assert_eq!(kinds, 2);
    assert_eq!(
        run(&["render", dir, "--migrate-level", "everything"]),
        (
            1,
            String::new(),
            "error: unknown migration level \"everything\"\n".to_owned()
        )
    );
}

#[test]
fn migrate_flag_applies_to_fbc_input() {
    let Some(root) = shared_testdata("real/community-catalog-v4.16") else {
        return;
    };
    let pkg = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let (code, before, err) = run(&["render", pkg.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, after, err) = run(&["render", pkg.to_str().unwrap(), "--migrate"]);
    assert_eq!(code, 0, "{err}");
    let count = |text: &str, kind: &str| {
        documents(text)
            .iter()
            .flat_map(|d| d["properties"].as_array().cloned().unwrap_or_default())
            .filter(|p| p["type"] == kind)
            .count()
    };
    let bundles = documents(&before)
        .iter()
        .filter(|d| d["schema"] == "olm.bundle")
        .count();
    assert!(count(&before, "olm.bundle.object") > bundles);
    assert_eq!(count(&after, "olm.bundle.object"), 0);
    assert_eq!(count(&after, "olm.csv.metadata"), bundles);
}

#[test]
fn properties_yaml_and_the_csv_annotation_join_the_derived_properties() {
    let Some(root) = shared_testdata("upstream/render-bundles/foo-bundle-v0.2.0") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&root, tmp.path());
    std::fs::write(
        tmp.path().join("metadata/properties.yaml"),
        "properties:\n- type: olm.package\n  value: {packageName: foo, version: 9.9.9}\n- type: olm.gvk\n  value: {group: test.foo, kind: Foo, version: v1}\n- type: olm.maxOpenShiftVersion\n  value: \"4.8\"\n",
    )
    .unwrap();
    let b = render_dir(tmp.path(), "");
    let plain: Vec<String> = property_lines(&b)
        .into_iter()
        .filter(|l| !l.starts_with("olm.bundle.object"))
        .collect();
    assert_eq!(
        plain,
        [
            r#"olm.gvk {"group":"test.foo","kind":"Foo","version":"v1"}"#,
            r#"olm.gvk.required {"group":"test.bar","kind":"Bar","version":"v1alpha1"}"#,
            r#"olm.maxOpenShiftVersion "4.8""#,
            r#"olm.package {"packageName":"foo","version":"0.2.0"}"#,
            r#"olm.package.required {"packageName":"bar","versionRange":"<0.1.0"}"#,
        ]
    );
    // An olm.package in the CSV's olm.properties annotation comes last, so it wins.
    let csv_path = tmp.path().join("manifests/foo.v0.2.0.csv.yaml");
    let csv = std::fs::read_to_string(&csv_path).unwrap().replace(
        "    olm.skipRange: <0.2.0\n",
        "    olm.skipRange: <0.2.0\n    olm.properties: '[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"foo\",\"version\":\"0.2.0-override\"}}]'\n",
    );
    std::fs::write(&csv_path, csv).unwrap();
    let b = render_dir(tmp.path(), "");
    let packages: Vec<&str> = b
        .properties
        .iter()
        .filter(|p| p.kind == property::PACKAGE)
        .map(|p| p.value.as_str())
        .collect();
    assert_eq!(
        packages,
        [r#"{"packageName":"foo","version":"0.2.0-override"}"#]
    );
}
