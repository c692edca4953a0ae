//! Our resolution service given the cluster's state as the API server holds it (the
//! Subscriptions, the installed CSVs, the OperatorGroup), against the catalog server OLM
//! itself uses: what `resolve` answers must be what OLM did.
use crate::common::BIN;
use crate::common::kube::Kube;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// What a resolution installs: the bundles (sorted) and the Subscriptions it creates for
/// dependencies (sorted).
#[derive(Debug, PartialEq)]
pub(super) struct Resolved {
    pub(super) bundles: Vec<String>,
    pub(super) new_subscriptions: Vec<String>,
}

/// A resolution request holding the cluster's state as it is now: every Subscription and
/// installed CSV of namespace e2e, and its OperatorGroup.
pub(super) async fn cluster_state(kube: &Kube) -> Value {
    let subscriptions: Vec<Value> = kube
        .list("/apis/operators.coreos.com/v1alpha1/namespaces/e2e/subscriptions")
        .await
        .iter()
        .map(|s| {
            let mut sub = json!({
                "name": s["metadata"]["name"], "package": s["spec"]["name"],
                "channel": s["spec"]["channel"], "source": s["spec"]["source"],
                "sourceNamespace": s["spec"]["sourceNamespace"],
            });
            if let Some(csv) = s["status"]["installedCSV"].as_str() {
                sub["installedCSV"] = json!(csv);
            }
            sub
        })
        .collect();
    let installed: Vec<Value> = kube
        .list("/apis/operators.coreos.com/v1alpha1/namespaces/e2e/clusterserviceversions")
        .await
        .iter()
        .map(|csv| {
            let spec = &csv["spec"];
            let provided: Vec<Value> = spec["customresourcedefinitions"]["owned"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|crd| {
                    let group = crd["name"].as_str().unwrap().split_once('.').unwrap().1;
                    json!({"group": group, "version": crd["version"], "kind": crd["kind"]})
                })
                .collect();
            let mut installed = json!({
                "name": csv["metadata"]["name"], "version": spec["version"], "providedAPIs": provided,
            });
            if let Some(replaces) = spec["replaces"].as_str() {
                installed["replaces"] = json!(replaces);
            }
            installed
        })
        .collect();
    let groups = kube
        .list("/apis/operators.coreos.com/v1/namespaces/e2e/operatorgroups")
        .await;
    let mut request = json!({
        "mode": "classic", "namespace": "e2e",
        "installed": installed, "subscriptions": subscriptions,
    });
    if let Some(og) = groups.first() {
        request["cluster"] = json!({"operatorGroup": {
            "name": og["metadata"]["name"], "targetNamespaces": og["spec"]["targetNamespaces"],
        }});
    }
    request
}

/// Resolves `request` (see [`cluster_state`]) with `olm-registry resolve` against the catalog
/// server at `addr`, known as CatalogSource olm/e2e.
pub(super) fn resolve(work: &Path, mut request: Value, addr: &str) -> Resolved {
    request["catalogs"] = json!([{"name": "e2e", "namespace": "olm", "address": addr}]);
    let file = work.join("resolve-request.json");
    std::fs::write(&file, request.to_string()).unwrap();
    let out = Command::new(BIN)
        .arg("resolve")
        .arg(&file)
        .args(["-o", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "resolve {request:#}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let installed: Vec<&str> = request["installed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    let mut bundles: Vec<String> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["bundle"]["name"].as_str())
        .filter(|name| !installed.contains(name))
        .map(str::to_owned)
        .collect();
    bundles.sort();
    let mut new_subscriptions: Vec<String> = answer["installPlan"]["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == "Subscription")
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    new_subscriptions.sort();
    Resolved {
        bundles,
        new_subscriptions,
    }
}
