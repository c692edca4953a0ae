//! `explain clusterextension NAME` against OLM v1 (`common::olmv1`: operator-controller with our
//! catalogd): a version range no bundle has, a channel the package lacks, a selector that
//! excludes every ClusterCatalog, each with operator-controller's own message recorded beside
//! ours; and an install whose bundle explain predicts before operator-controller installs it.
use crate::common::BIN;
use crate::common::olmv1::{CATALOGS, OlmV1, condition};
use crate::common::shared_testdata;
use serde_json::{Value, json};
use std::process::Command;

#[tokio::test]
async fn explain_names_what_keeps_cluster_extensions_stuck() {
    let Some(etcd) = shared_testdata("real/bundles/etcd/0.9.4-clusterwide") else {
        eprintln!("SKIPPED: ../shared/testdata/real is absent; explain v1 test not run");
        return;
    };
    let Some(olm) = OlmV1::start().await else {
        return;
    };
    let head = olm.push_bundle(&etcd, "bundles/etcd:v0.9.4-clusterwide");
    let dir = olm.work.path().join("catalog");
    std::fs::create_dir_all(&dir).unwrap();
    let docs = [
        json!({"schema": "olm.package", "name": "etcd", "defaultChannel": "clusterwide-alpha"}),
        json!({"schema": "olm.channel", "package": "etcd", "name": "clusterwide-alpha",
               "entries": [{"name": "etcdoperator.v0.9.4-clusterwide"}]}),
        head,
    ];
    let text: String = docs.iter().map(|d| d.to_string() + "\n").collect();
    std::fs::write(dir.join("catalog.json"), text).unwrap();
    let digest = olm.push_catalog(&dir, "catalogs/etcd:latest");
    olm.create_catalog("etcd", "catalogs/etcd:latest", json!({"tier": "main"}))
        .await;
    olm.wait_for(&format!("{CATALOGS}/etcd"), "etcd served", |c| {
        c["status"]["resolvedSource"]["image"]["ref"] == digest.as_str()
    })
    .await;
    let kubeconfig = olm.cp.kubeconfig.to_str().unwrap().to_owned();

    // What explain predicts, then what operator-controller does.
    let (code, predicted) = explain(&kubeconfig, "etcd-ok");
    assert_eq!(code, 2, "no such ClusterExtension yet: {predicted}");
    olm.create_extension("etcd-ok", json!({"packageName": "etcd"}))
        .await;
    let (code, report) = explain(&kubeconfig, "etcd-ok");
    let ext = &report["clusterExtensions"][0];
    assert_eq!(code, 0, "{report:#}");
    let next = ext["next"][0]["name"].clone();
    assert_eq!(next, "etcdoperator.v0.9.4-clusterwide", "{report:#}");
    let installed = olm
        .wait_for_condition("etcd-ok", "Installed", "True", "Succeeded")
        .await;
    assert_eq!(installed["status"]["install"]["bundle"]["name"], next);

    for (name, catalog, cause, fact) in [
        (
            "ranged",
            json!({"packageName": "etcd", "version": ">=1.0.0"}),
            "versionRange",
            "the versions there: 0.9.4-clusterwide",
        ),
        (
            "channeled",
            json!({"packageName": "etcd", "channels": ["stable"]}),
            "channelGone",
            "the channels there: clusterwide-alpha",
        ),
        (
            "selected",
            json!({"packageName": "etcd", "selector": {"matchLabels": {"tier": "nope"}}}),
            "selectorExcludesAll",
            "ClusterExtension selected selects catalogs by tier=nope",
        ),
    ] {
        olm.create_extension(name, catalog).await;
        let said = olm
            .wait_for(
                &format!("/apis/olm.operatorframework.io/v1/clusterextensions/{name}"),
                "operator-controller's answer",
                |e| condition(e, "Progressing")["reason"] == "Retrying",
            )
            .await;
        let (code, report) = explain(&kubeconfig, name);
        let ext = &report["clusterExtensions"][0];
        eprintln!(
            "SITUATION v1 {name}: operator-controller: {}\n  ours: {} [{}]\n    {}",
            condition(&said, "Progressing")["message"],
            ext["summary"],
            ext["cause"],
            ext["facts"]
        );
        assert_eq!(code, 1, "{report:#}");
        assert_eq!(ext["verdict"], "stuck", "{report:#}");
        assert_eq!(ext["cause"], cause, "{report:#}");
        assert!(
            ext["facts"].to_string().contains(fact),
            "{fact}: {report:#}"
        );
    }
}

/// `explain clusterextension NAME -o json`: exit code and report (or stderr, when it failed).
fn explain(kubeconfig: &str, name: &str) -> (i32, Value) {
    let out = Command::new(BIN)
        .args(["--use-http", "explain", "-k", kubeconfig, "-o", "json"])
        .args(["clusterextension", name])
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| json!(String::from_utf8_lossy(&out.stderr)));
    (code, report)
}
