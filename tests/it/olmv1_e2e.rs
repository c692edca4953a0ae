//! OLM v1's operator-controller installing and upgrading from `olm-registry catalogd` on a real
//! control plane (`common::olmv1`), with real bundles (`../shared/testdata/real/bundles`) as
//! images in a loopback registry. Each ClusterExtension's status is compared field by field
//! with what operator-controller (release-4.19) writes: `Installed` ("Installed bundle IMAGE
//! successfully"), `Progressing` ("desired state reached"), the four deprecation conditions,
//! and `status.install.bundle`.
use crate::common::olmv1::{CATALOGS, INSTALL_NAMESPACE, OlmV1, cond, said};
use crate::common::shared_testdata;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `../shared/testdata/real/bundles/etcd/VERSION`.
fn etcd_dir(version: &str) -> Option<PathBuf> {
    shared_testdata(&format!("real/bundles/etcd/{version}"))
}

/// Writes a catalog of package `etcd` (default channel `clusterwide-alpha`) to `dir`: the
/// given channels (name, entries) and bundles.
fn write_etcd_catalog(dir: &Path, channels: &[(&str, Value)], bundles: &[&Value], extra: &[Value]) {
    let mut docs = vec![json!({"schema": "olm.package", "name": "etcd",
                               "defaultChannel": "clusterwide-alpha"})];
    for (name, entries) in channels {
        docs.push(
            json!({"schema": "olm.channel", "package": "etcd", "name": name,
                         "entries": entries}),
        );
    }
    docs.extend(bundles.iter().map(|b| (*b).clone()));
    docs.extend(extra.iter().cloned());
    let text: String = docs.iter().map(|d| d.to_string() + "\n").collect();
    std::fs::create_dir_all(dir.join("etcd")).unwrap();
    std::fs::write(dir.join("etcd/catalog.json"), text).unwrap();
}

/// The conditions and install status of an extension Installed from `bundle` (its image,
/// name and version) with nothing deprecated.
fn assert_installed(object: &Value, bundle: &Value) {
    let name = object["metadata"]["name"].as_str().unwrap();
    let version = bundle["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "olm.package")
        .unwrap()["value"]["version"]
        .clone();
    let image = bundle["image"].as_str().unwrap();
    assert_eq!(
        object["status"]["install"],
        json!({"bundle": {"name": bundle["name"], "version": version}}),
        "{name}: {object:#}"
    );
    let got: Vec<_> = [
        "Installed",
        "Progressing",
        "Deprecated",
        "PackageDeprecated",
        "ChannelDeprecated",
        "BundleDeprecated",
    ]
    .iter()
    .map(|kind| said(object, kind))
    .collect();
    assert_eq!(
        got,
        [
            cond(
                "Installed",
                "True",
                "Succeeded",
                &format!("Installed bundle {image} successfully")
            ),
            cond("Progressing", "True", "Succeeded", "desired state reached"),
            cond("Deprecated", "False", "Deprecated", ""),
            cond("PackageDeprecated", "False", "Deprecated", ""),
            cond("ChannelDeprecated", "False", "Deprecated", ""),
            cond("BundleDeprecated", "False", "Deprecated", ""),
        ],
        "{name}: {object:#}"
    );
}

#[tokio::test]
async fn operator_controller_installs_from_our_catalogd() {
    let Some(etcd_094) = etcd_dir("0.9.4-clusterwide") else {
        return;
    };
    let Some(olm) = OlmV1::start().await else {
        return;
    };
    let work = olm.work.path().to_owned();
    let head = olm.push_bundle(&etcd_094, "bundles/etcd:v0.9.4-clusterwide");
    let catalog = work.join("catalog-v1");
    write_etcd_catalog(
        &catalog,
        &[(
            "clusterwide-alpha",
            json!([{"name": "etcdoperator.v0.9.4-clusterwide"}]),
        )],
        &[&head],
        &[],
    );
    let digest = olm.push_catalog(&catalog, "catalogs/etcd:latest");
    olm.create_catalog("etcd", "catalogs/etcd:latest", json!({}))
        .await;
    let served = olm
        .wait_for(&format!("{CATALOGS}/etcd"), "etcd served", |c| {
            c["status"]["resolvedSource"]["image"]["ref"] == digest.as_str()
        })
        .await;
    assert_eq!(
        served["status"]["urls"]["base"],
        format!("{}/catalogs/etcd", olm.catalogd.url),
        "{served:#}"
    );

    // 1. An AllNamespaces bundle: installed as operator-controller says it is.
    let created = Instant::now();
    olm.create_extension("etcd", json!({"packageName": "etcd"}))
        .await;
    let installed = olm
        .wait_for_condition("etcd", "Installed", "True", "Succeeded")
        .await;
    let to_installed = created.elapsed();
    assert_installed(&installed, &head);
    let deployment = olm
        .kube
        .get(&format!(
            "/apis/apps/v1/namespaces/{INSTALL_NAMESPACE}/deployments/etcd-operator"
        ))
        .await
        .expect("the etcd-operator Deployment applied");
    assert_eq!(
        deployment["metadata"]["labels"]["olm.operatorframework.io/owner-name"], "etcd",
        "{deployment:#}"
    );
    for crd in ["etcdclusters", "etcdbackups", "etcdrestores"] {
        let path = format!(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}.etcd.database.coreos.com"
        );
        assert!(olm.kube.get(&path).await.is_some(), "{crd} not applied");
    }
    eprintln!("FIGURES: ClusterExtension create -> Installed {to_installed:.1?}");
}
