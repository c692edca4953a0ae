//! Faults around OLM's registry pods, on one cluster (a cluster each would cost CI ~20 s
//! more apiece), each phase checking that the catalog already served carries on — its pod,
//! READY, and packageserver's listing — while: a CatalogSource names an image that is not a
//! catalog image (a bundle image); the registry is down when OLM polls the catalog's tag; the
//! tag moves to a broken catalog image (its server exits at once).
use super::{
    Cluster, POLL_INTERVAL, create_catalog_source, package_manifest, registry_pods,
    wait_for_registry_pod,
};
use crate::common::kube::{Kube, eventually};
use crate::common::olm::{OLM_PATIENCE, olm_test, wait_for_catalog_state};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Instant;

#[test]
fn olm_node_faults_leave_the_served_catalog_alone() {
    olm_test("the OLM node fault test", faults);
}

async fn faults(tools: PathBuf) {
    let started = Instant::now();
    let mut cluster = Cluster::start(&tools).await;
    let (kube, token) = (&cluster.kube, cluster.olm_token.clone());
    let v1 = cluster.catalog.push(1);
    let polled = json!({"registryPoll": {"interval": POLL_INTERVAL}});
    create_catalog_source(kube, "good", &cluster.catalog.tag(), json!({}), polled).await;
    let serving = wait_for_registry_pod(kube, "good", &v1).await;
    let serving = serving["metadata"]["name"].as_str().unwrap().to_owned();
    wait_for_catalog_state(kube, "olm", "good", |s| s == "READY").await;
    package_manifest(&token, "good", "node-op.v1.0.0").await;

    // a. Not a catalog image: the bundle image of node-op 1.0.0 (no command to run).
    let bundle = cluster.catalog.push_bundle("node-op", "1.0.0");
    create_catalog_source(kube, "bundle", &bundle, json!({}), Value::Null).await;
    let reason = eventually(
        "the bundle CatalogSource's pod failing",
        OLM_PATIENCE,
        || async {
            let pod = registry_pods(kube, "bundle").await.into_iter().next()?;
            let waiting = &pod["status"]["containerStatuses"][0]["state"]["waiting"];
            let reason = waiting["reason"].as_str()?;
            (reason != "ContainerCreating").then(|| format!("{reason}: {}", waiting["message"]))
        },
    )
    .await;
    let state = wait_for_catalog_state(kube, "olm", "bundle", |s| s != "READY").await;
    eprintln!("not a catalog image: pod {reason}; CatalogSource {state}");
    still_serving(kube, &token, &serving, "node-op.v1.0.0").await;

    // b. The registry down when OLM polls: the update pod cannot pull; when the registry is
    // back, an update pod pulls the same digest and OLM drops it.
    cluster.registry.stop();
    let pull = update_pod_waiting(kube, "good", |reason| {
        matches!(reason, "ErrImagePull" | "ImagePullBackOff")
    })
    .await;
    eprintln!("registry down during a poll: update pod {pull}");
    still_serving(kube, &token, &serving, "node-op.v1.0.0").await;
    let back = Instant::now();
    cluster.registry.restart();
    let digest = v1.rsplit_once('@').unwrap().1;
    let pulled = eventually("an update pod that pulled", OLM_PATIENCE, || async {
        update_pods(kube, "good").await.iter().find_map(|pod| {
            let id = pod["status"]["containerStatuses"][0]["imageID"].as_str()?;
            id.ends_with(digest)
                .then(|| pod["metadata"]["name"].as_str().unwrap().to_owned())
        })
    })
    .await;
    // OLM polls again every interval, so other update pods come and go: this one goes.
    eventually(
        &format!("update pod {pulled} gone"),
        OLM_PATIENCE,
        || async {
            let pods = update_pods(kube, "good").await;
            (!pods
                .iter()
                .any(|p| p["metadata"]["name"] == pulled.as_str()))
            .then_some(())
        },
    )
    .await;
    let dropped_in = back.elapsed();
    still_serving(kube, &token, &serving, "node-op.v1.0.0").await;

    // c. The tag moves to a broken catalog image, whose server exits at once: the update pod
    // crashes, the old pod keeps serving.
    let broken = cluster.catalog.push_broken(1);
    let crash = update_pod_waiting(kube, "good", |reason| {
        matches!(reason, "CrashLoopBackOff" | "RunContainerError")
    })
    .await;
    eprintln!("broken catalog {broken}: update pod {crash}");
    still_serving(kube, &token, &serving, "node-op.v1.0.0").await;
    // All along, the CatalogSource of the bundle image never became READY.
    let path = "/apis/operators.coreos.com/v1alpha1/namespaces/olm/catalogsources/bundle";
    let status = kube.get(path).await.unwrap()["status"].clone();
    let state = &status["connectionState"]["lastObservedState"];
    assert_ne!(state, "READY", "{status:#}");
    eprintln!("the bundle image's CatalogSource at the end: {status}");
    eprintln!(
        "FIGURES: registry back -> an update pod pulled the unchanged digest and was dropped \
         {dropped_in:?}; \
         whole fault test {:?}",
        started.elapsed()
    );
}

/// The serving pod of CatalogSource good is still `pod`, Ready and alone; the CatalogSource is
/// READY; packageserver lists node-op with `head` from it.
async fn still_serving(kube: &Kube, token: &str, pod: &str, head: &str) {
    let pods = registry_pods(kube, "good").await;
    let names: Vec<&str> = pods
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [pod], "{pods:#?}");
    let ready = pods[0]["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    assert!(ready, "{pods:#?}");
    let state = wait_for_catalog_state(kube, "olm", "good", |_| true).await;
    assert_eq!(state, "READY");
    package_manifest(token, "good", head).await;
}

/// The update pods OLM starts when it polls CatalogSource olm/`name`.
async fn update_pods(kube: &Kube, name: &str) -> Vec<Value> {
    kube.list(&format!(
        "/api/v1/namespaces/olm/pods?labelSelector=catalogsource.operators.coreos.com%2Fupdate%3D{name}"
    ))
    .await
}

/// Waits until an update pod of `name` has its container waiting for a reason `want` accepts;
/// that reason and its message.
async fn update_pod_waiting(kube: &Kube, name: &str, want: impl Fn(&str) -> bool) -> String {
    eventually(
        &format!("an update pod of {name} waiting"),
        OLM_PATIENCE,
        || async {
            update_pods(kube, name).await.iter().find_map(|pod| {
                let waiting = &pod["status"]["containerStatuses"][0]["state"]["waiting"];
                let reason = waiting["reason"].as_str()?;
                want(reason).then(|| format!("{reason}: {}", waiting["message"]))
            })
        },
    )
    .await
}
