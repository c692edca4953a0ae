//! Legacy package-manifest trees (catalog-formats.md §D) converted to FBC, checked against
//! Dataset M (registry-api.md §10.1) and upstream's own conversion of the same tree.

use crate::common::{bundle_objects, shared_testdata};
use bundle::package_manifests::{Options, PackageManifest, ProvidedApis, load, package_manifest};
use catalog::file::ReadLimits;
use catalog::model::Model;
use catalog::{self, Bundle, DeclarativeConfig, property};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

fn non_object_properties(b: &Bundle) -> Vec<String> {
    b.properties
        .iter()
        .filter(|p| p.kind != property::BUNDLE_OBJECT)
        .map(|p| format!("{} {}", p.kind, p.value))
        .collect()
}

/// A catalog with bundles reduced to what both conversions must agree on: upstream's copy
/// of the tree had different CSV texts (documentation edits) and kept objects unsorted.
fn comparable(dc: &DeclarativeConfig) -> (String, Vec<String>) {
    let mut rest = dc.clone();
    rest.bundles.clear();
    let mut out = Vec::new();
    catalog::write::write_json(&rest, &mut out).unwrap();
    let mut bundles: Vec<String> = dc
        .bundles
        .iter()
        .map(|b| {
            let mut crds: Vec<String> = bundle_objects(b)
                .into_iter()
                .filter(|o| !o.contains(r#""kind":"ClusterServiceVersion""#))
                .collect();
            crds.sort();
            format!(
                "{} {} image={:?} {:?} {:?} {:?}",
                b.package,
                b.name,
                b.image,
                non_object_properties(b),
                b.related_images,
                crds
            )
        })
        .collect();
    bundles.sort();
    (String::from_utf8(out).unwrap(), bundles)
}

#[test]
fn manifests_convert_as_upstream_opm_migrate_did() {
    let Some(root) = shared_testdata("upstream") else {
        return;
    };
    let ours = load(&root.join("manifests"), &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let mut theirs = DeclarativeConfig::default();
    for pkg in ["etcd", "prometheus", "strimzi-kafka-operator"] {
        let one =
            catalog::walk::load_dir(&root.join("manifests-fbc").join(pkg), ReadLimits::default())
                .unwrap();
        theirs.packages.extend(one.packages);
        theirs.channels.extend(one.channels);
        theirs.bundles.extend(one.bundles);
    }
    assert_eq!(comparable(&ours), comparable(&theirs));
}

fn dataset_m() -> Option<DeclarativeConfig> {
    let root = shared_testdata("upstream/manifests")?;
    let options = Options {
        provided_apis: ProvidedApis::OwnedCrds,
        images: BTreeMap::from([(
            "etcdoperator.v0.9.2".to_owned(),
            "fake/etcd-operator:v0.9.2".to_owned(),
        )]),
        limits: ReadLimits::default(),
    };
    Some(load(&root, &options).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn dataset_m_graph_matches_the_spec() {
    let Some(dc) = dataset_m() else { return };
    let packages: Vec<(String, String, bool)> = dc
        .packages
        .iter()
        .map(|p| (p.name.clone(), p.default_channel.clone(), p.icon.is_some()))
        .collect();
    assert_eq!(
        packages,
        [
            ("etcd".into(), "alpha".into(), true),
            ("prometheus".into(), "preview".into(), true),
            ("strimzi-kafka-operator".into(), "stable".into(), true),
        ]
    );
    let channels: Vec<String> = dc
        .channels
        .iter()
        .map(|c| {
            let entries: Vec<String> = c
                .entries
                .iter()
                .map(|e| format!("{}<{}{:?}{}", e.name, e.replaces, e.skips, e.skip_range))
                .collect();
            format!("{}/{}: {}", c.package, c.name, entries.join(" "))
        })
        .collect();
    let etcd_full = "etcdoperator.v0.6.1<[] etcdoperator.v0.9.0<etcdoperator.v0.6.1[] etcdoperator.v0.9.2<etcdoperator.v0.9.0[\"etcdoperator.v0.9.1\"]< 0.6.0";
    assert_eq!(
        channels,
        [
            format!("etcd/alpha: {etcd_full}"),
            "etcd/beta: etcdoperator.v0.6.1<[] etcdoperator.v0.9.0<etcdoperator.v0.6.1[]".to_owned(),
            format!("etcd/stable: {etcd_full}"),
            "prometheus/preview: prometheusoperator.0.14.0<[] prometheusoperator.0.15.0<prometheusoperator.0.14.0[] prometheusoperator.0.22.2<prometheusoperator.0.15.0[]".to_owned(),
            "strimzi-kafka-operator/stable: strimzi-cluster-operator.v0.11.0<[] strimzi-cluster-operator.v0.11.1<strimzi-cluster-operator.v0.11.0[]".to_owned(),
            "strimzi-kafka-operator/beta: strimzi-cluster-operator.v0.11.0<[] strimzi-cluster-operator.v0.11.1<strimzi-cluster-operator.v0.11.0[] strimzi-cluster-operator.v0.12.1<strimzi-cluster-operator.v0.11.1[]".to_owned(),
            "strimzi-kafka-operator/alpha: strimzi-cluster-operator.v0.11.0<[] strimzi-cluster-operator.v0.11.1<strimzi-cluster-operator.v0.11.0[] strimzi-cluster-operator.v0.12.1<strimzi-cluster-operator.v0.11.1[] strimzi-cluster-operator.v0.12.2<strimzi-cluster-operator.v0.12.1[]".to_owned(),
        ]
    );
    let names: Vec<&str> = dc.bundles.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names.len(), 10);
    Model::build(dc.clone()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn dataset_m_reference_bundle_matches_the_spec() {
    let Some(dc) = dataset_m() else { return };
    let e = dc
        .bundles
        .iter()
        .find(|b| b.name == "etcdoperator.v0.9.2")
        .unwrap();
    assert_eq!(e.image, "fake/etcd-operator:v0.9.2");
    let gvk = |kind: &str| {
        format!(r#"{{"group":"etcd.database.coreos.com","kind":"{kind}","version":"v1beta2"}}"#)
    };
    assert_eq!(
        non_object_properties(e),
        [
            format!("olm.gvk {}", gvk("EtcdBackup")),
            format!("olm.gvk {}", gvk("EtcdCluster")),
            format!("olm.gvk {}", gvk("EtcdRestore")),
            format!("olm.gvk.required {}", gvk("EtcdCluster")),
            r#"olm.label {"label":"testlabel"}"#.to_owned(),
            r#"olm.label {"label":"testlabel1"}"#.to_owned(),
            r#"olm.package {"packageName":"etcd","version":"0.9.2"}"#.to_owned(),
            r#"other {"its":"notdefined"}"#.to_owned(),
        ]
    );
    let objects = bundle_objects(e);
    let sizes: Vec<(usize, &str)> = objects
        .iter()
        .map(|o| {
            let kind = if o.contains(r#""kind":"ClusterServiceVersion""#) {
                "csv"
            } else {
                "crd"
            };
            (o.len(), kind)
        })
        .collect();
    assert_eq!(
        sizes,
        [(328, "crd"), (366, "crd"), (333, "crd"), (16069, "csv")]
    );
    let csv = &objects[3];
    assert!(csv.starts_with(
        r#"{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion""#
    ));
    assert!(csv.contains(r#""olm.skipRange":"\u003c 0.6.0""#));
    let sha: String = Sha256::digest(csv.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(&sha[..16], "ce8380381d33ecf3");
    let related: Vec<String> = e
        .related_images
        .iter()
        .map(|r| format!("{}={}", r.name, r.image))
        .collect();
    assert_eq!(
        related,
        [
            "=fake/etcd-operator:v0.9.2",
            "=quay.io/coreos/etcd-operator@sha256:c0301e4686c3ed4206e370b42de5a3bd2229b9fb4906cf85f3f30650424abec2",
            "etcd-v3.4.0=quay.io/coreos/etcd@sha256:3816b6daf9b66d6ced6f0f966314e2d4f894982c6b1493061502f8c2bf86ac84",
            "etcd-3.4.1=quay.io/coreos/etcd@sha256:49d3d4a81e0d030d3f689e7167f23e120abf955f7d08dbedf3ea246485acee9f",
        ]
    );
    let others: Vec<&str> = dc
        .bundles
        .iter()
        .filter(|b| !b.image.is_empty())
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(others, ["etcdoperator.v0.9.2"]);
}

#[test]
fn valid_packages_convert_and_validate() {
    let Some(root) = shared_testdata("upstream/package-manifests/validPackages") else {
        return;
    };
    let dc = load(&root, &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let summary: Vec<String> = dc
        .channels
        .iter()
        .map(|c| {
            let names: Vec<&str> = c.entries.iter().map(|e| e.name.as_str()).collect();
            format!("{}/{}: {}", c.package, c.name, names.join(" "))
        })
        .collect();
    assert_eq!(
        summary,
        [
            "aqua/alpha: aqua-operator.v1.0.0",
            "aqua/beta: aqua-operator.v0.0.1",
            "aqua/stable: aqua-operator.v1.0.0",
            "etcd/alpha: etcdoperator.v0.6.1 etcdoperator.v0.9.0 etcdoperator.v0.9.2",
            "etcd/beta: etcdoperator.v0.6.1 etcdoperator.v0.9.0",
            "etcd/stable: etcdoperator.v0.6.1 etcdoperator.v0.9.0 etcdoperator.v0.9.2",
            "prometheus/preview: prometheusoperator.0.14.0 prometheusoperator.0.15.0 prometheusoperator.0.22.2",
        ]
    );
    Model::build(dc).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_csv_defined_twice_is_refused() {
    let Some(root) = shared_testdata("upstream/package-manifests/invalidPackges") else {
        return;
    };
    let err = load(&root, &Options::default()).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "invalid package manifests in {}:\n  package \"3scale-community-operator\": CSV \"3scale-community-operator.v0.4.0\" is defined twice, in 3scale-community-operator/0.4.0/3scale-community-operator.v0.4.0.clusterserviceversion.yaml and 3scale-community-operator/0.4.0/duplicate.csv.yaml\n  package \"3scale-community-operator\", channel \"alpha\": currentCSV \"3scale-community-operator.v0.3.0\" not found",
            root.display()
        )
    );
}

fn yaml(rel: &str) -> Option<serde_json::Value> {
    let path = shared_testdata("upstream/package-manifests")?.join(rel);
    Some(serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
}

#[test]
fn package_manifest_files_are_recognised_by_content() {
    let Some(valid) = yaml("valid-package-manifest.yaml") else {
        return;
    };
    assert_eq!(
        package_manifest(&valid),
        Some(Ok(PackageManifest {
            package_name: "foo".into(),
            channels: vec![
                ("alpha".into(), "foo".into()),
                ("beta".into(), "bar".into())
            ],
            default_channel: "alpha".into(),
        }))
    );
    // Without a packageName a document is not a package manifest at all.
    assert_eq!(
        package_manifest(&yaml("invalid-package-manifest.yaml").unwrap()),
        None
    );
    assert_eq!(
        package_manifest(&yaml("valid-unstructured.yaml").unwrap()),
        None
    );
    let no_channels = serde_json::json!({"packageName": "foo", "channels": null});
    assert_eq!(
        package_manifest(&no_channels).map(|r| r.map_err(|e| e.to_string())),
        Some(Err("package \"foo\" has no channels".to_owned()))
    );
    let bad_channel = serde_json::json!({"packageName": "foo", "channels": [{"name": "a"}]});
    assert_eq!(
        package_manifest(&bad_channel).map(|r| r.map_err(|e| e.to_string())),
        Some(Err(
            "package \"foo\": channels[0] must set name and currentCSV".to_owned()
        ))
    );
}

#[test]
fn graph_errors_name_the_bundles() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("p");
    std::fs::create_dir_all(&pkg).unwrap();
    let csv = |name: &str, replaces: &str| {
        format!(
            "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {name}\nspec:\n  version: 1.0.0\n  replaces: {replaces}\n"
        )
    };
    let write = |file: &str, text: &str| std::fs::write(pkg.join(file), text).unwrap();
    write(
        "p.package.yaml",
        "packageName: p\nchannels:\n- name: a\n  currentCSV: p.v2\n- name: b\n  currentCSV: p.v2\n",
    );
    write("v2.yaml", &csv("p.v2", "p.v1"));
    write("v1.yaml", &csv("p.v1", "p.v0"));
    let err = load(tmp.path(), &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("\n  no default channel specified for p"),
        "{err}"
    );
    write(
        "p.package.yaml",
        "packageName: p\ndefaultChannel: a\nchannels:\n- name: a\n  currentCSV: p.v2\n",
    );
    let err = load(tmp.path(), &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("\n  Invalid bundle p.v1, replaces nonexistent bundle p.v0"),
        "{err}"
    );
    write("v1.yaml", &csv("p.v1", "p.v2"));
    let err = load(tmp.path(), &Options::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("\n  Cycle detected, p.v1 replaces p.v2"),
        "{err}"
    );
}

#[test]
fn e2e_tree_with_an_overwrite_copy_is_refused() {
    // Upstream's e2e tree keeps a second copy of v1.0.1 for its overwrite test.
    let Some(root) = shared_testdata("upstream/e2e/aqua") else {
        return;
    };
    assert_eq!(
        load(&root, &Options::default()).unwrap_err().to_string(),
        format!(
            "invalid package manifests in {}:\n  package \"aqua\": CSV \"aqua-operator.v1.0.1\" is defined twice, in 1.0.1/aqua-operator.v1.0.1.clusterserviceversion.yaml and 1.0.1-overwrite/aqua-operator.v1.0.1.clusterserviceversion.yaml",
            root.display()
        )
    );
}

#[test]
fn symlinked_directories_are_not_followed() {
    let Some(src) = shared_testdata("upstream/package-manifests/validPackages/etcd") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("etcd");
    for dir in ["", "0.6.1", "0.9.0", "0.9.2"] {
        std::fs::create_dir_all(pkg.join(dir)).unwrap();
        for e in std::fs::read_dir(src.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                std::fs::copy(&p, pkg.join(dir).join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    // A link back to the root: following it would never end.
    std::os::unix::fs::symlink(tmp.path(), pkg.join("0.9.2/loop")).unwrap();
    let dc = load(tmp.path(), &Options::default()).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = dc.bundles.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "etcdoperator.v0.6.1",
            "etcdoperator.v0.9.0",
            "etcdoperator.v0.9.2"
        ]
    );
}
