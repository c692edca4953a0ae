//! Content checks of `opm alpha bundle validate` (opm-cli.md §7) that go beyond what
//! rendering needs: supported object kinds, CRD and CSV consistency. Rendering does not run
//! them (opm render does not either); they are for authors checking a bundle before
//! publishing it.
use super::csv;
use super::dir::missing_owned_crds;
use super::manifests::{self, Manifest};
use serde_json::Value;
use std::collections::BTreeSet;

/// Kinds a registry+v1 bundle may contain.
const SUPPORTED_KINDS: [&str; 22] = [
    "ClusterServiceVersion",
    "CustomResourceDefinition",
    "Secret",
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "ServiceAccount",
    "Service",
    "Role",
    "RoleBinding",
    "PrometheusRule",
    "ServiceMonitor",
    "PodDisruptionBudget",
    "PriorityClass",
    "VerticalPodAutoscaler",
    "ConsoleYAMLSample",
    "ConsoleQuickStart",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsolePlugin",
    "NetworkPolicy",
    "PodMonitor",
];

/// CSV annotations that OLM sets on the copies it makes; a CSV that carries them would
/// claim an operator group it does not belong to.
const OLM_OWNED_ANNOTATIONS: [&str; 2] = ["olm.operatorgroup", "olm.operatornamespace"];

/// Every problem of a bundle's objects, each naming the file.
pub fn check(objects: &[Manifest]) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(csv_manifest) = objects.iter().find(|m| m.is_csv()) else {
        return vec!["no csv in bundle".to_owned()];
    };
    let csv_object = &csv_manifest.object;
    let owned: BTreeSet<String> = csv::owned_crds(csv_object)
        .into_iter()
        .map(|c| c.name)
        .collect();
    for m in objects {
        let at = &m.file;
        if !SUPPORTED_KINDS.contains(&m.kind()) {
            problems.push(format!(
                "{at}: kind {} is not supported in a registry+v1 bundle",
                m.kind()
            ));
        }
        if let Some(ns) = m.object.pointer("/metadata/namespace")
            && !ns.is_string()
        {
            problems.push(format!(
                "{at}: {} {:?}: metadata.namespace must be a string, got {ns}",
                m.kind(),
                m.name(),
            ));
        }
        if m.is_crd() {
            problems.extend(check_crd(m, &owned, csv::name(csv_object)));
        }
    }
    problems.extend(check_csv(csv_manifest));
    problems.extend(
        missing_owned_crds(objects, csv_object)
            .into_iter()
            .map(|p| format!("{}: {p}", csv_manifest.file)),
    );
    problems
}

fn check_crd(m: &Manifest, owned: &BTreeSet<String>, csv_name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let at = &m.file;
    let name = m.name();
    let mut seen = BTreeSet::new();
    for version in manifests::crd_versions(&m.object) {
        if !seen.insert(version.clone()) {
            problems.push(format!(
                "{at}: CRD {name}: version {version} is listed twice"
            ));
        }
    }
    if csv::str_at(&m.object, "/apiVersion") == "apiextensions.k8s.io/v1"
        && m.object.pointer("/spec/version").is_some()
    {
        problems.push(format!(
            "{at}: CRD {name}: spec.version is not a field of apiextensions.k8s.io/v1 (use spec.versions)"
        ));
    }
    if !owned.contains(name) {
        problems.push(format!(
            "{at}: CRD {name} is in the bundle but CSV {csv_name} does not own it (spec.customresourcedefinitions.owned)"
        ));
    }
    problems
}

fn check_csv(m: &Manifest) -> Vec<String> {
    let mut problems = Vec::new();
    let at = &m.file;
    let name = csv::name(&m.object);
    let install_modes = m
        .object
        .pointer("/spec/installModes")
        .and_then(Value::as_array);
    if install_modes.is_none_or(Vec::is_empty) {
        problems.push(format!(
            "{at}: CSV {name}: spec.installModes must list at least one install mode"
        ));
    }
    if let Some(annotations) = m
        .object
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    {
        for key in annotations.keys() {
            if OLM_OWNED_ANNOTATIONS.contains(&key.as_str()) {
                problems.push(format!(
                    "{at}: CSV {name}: annotation {key} is set by OLM and must not be in the CSV"
                ));
            } else if key != "olm.skipRange" && key.eq_ignore_ascii_case("olm.skipRange") {
                problems.push(format!(
                    "{at}: CSV {name}: annotation {key} is misspelled, it must be olm.skipRange"
                ));
            }
        }
    }
    problems
}
