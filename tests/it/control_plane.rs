//! The control-plane harness itself (`common::control_plane`), which end-to-end tests with
//! OLM's operators build on: its binaries run, and OLM's CRDs become Established.
use crate::common::control_plane::ControlPlane;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use std::process::Command;

#[tokio::test]
async fn olm_crds_are_established_on_a_real_api_server() {
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    let out = Command::new(plane.bin("kube-apiserver"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Kubernetes v1.32.13-openshift-microshift-4.19.43"
    );
    plane.apply_crds(&ControlPlane::tools().unwrap().join("crds"));
    let api: Api<CustomResourceDefinition> = Api::all(plane.client().await);
    let mut names: Vec<String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|crd| crd.metadata.name.unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "catalogsources.operators.coreos.com",
            "clusterserviceversions.operators.coreos.com",
            "installplans.operators.coreos.com",
            "olmconfigs.operators.coreos.com",
            "operatorconditions.operators.coreos.com",
            "operatorgroups.operators.coreos.com",
            "operators.operators.coreos.com",
            "subscriptions.operators.coreos.com",
        ]
    );
}
