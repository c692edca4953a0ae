//! Waiting for what OLM does, as the API server shows it.
use super::PATIENCE;
use super::jobs::JobRunner;
use crate::common::kube::{Kube, eventually};
use serde_json::Value;

/// Waits until CatalogSource olm/`name` reports a connection state that `want` accepts.
pub(super) async fn wait_for_catalog_state(
    kube: &Kube,
    name: &str,
    want: impl Fn(&str) -> bool,
) -> String {
    let path = format!("/apis/operators.coreos.com/v1alpha1/namespaces/olm/catalogsources/{name}");
    eventually(
        &format!("CatalogSource {name}'s connection state"),
        PATIENCE,
        || async {
            let cs = kube.get(&path).await?;
            let state = cs["status"]["connectionState"]["lastObservedState"].as_str()?;
            want(state).then(|| state.to_owned())
        },
    )
    .await
}

/// Waits until an InstallPlan of namespace e2e that installs `csv` is Complete, doing the
/// work of every bundle unpack Job OLM creates meanwhile; returns the InstallPlan.
pub(super) async fn wait_for_install_plan(kube: &Kube, jobs: &JobRunner, csv: &str) -> Value {
    eventually(
        &format!("a Complete InstallPlan for {csv}"),
        PATIENCE,
        || async {
            jobs.run_pending(kube).await;
            let plans = kube
                .list("/apis/operators.coreos.com/v1alpha1/namespaces/e2e/installplans")
                .await;
            let plan = plans.into_iter().find(|p| {
                p["spec"]["clusterServiceVersionNames"]
                    .as_array()
                    .is_some_and(|names| names.iter().any(|n| n == csv))
            })?;
            let phase = plan["status"]["phase"].as_str().unwrap_or_default();
            assert_ne!(phase, "Failed", "InstallPlan failed: {plan:#}");
            (phase == "Complete").then_some(plan)
        },
    )
    .await
}
