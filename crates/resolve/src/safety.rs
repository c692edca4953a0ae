//! Checks from OLM's install rules that a resolution reports when the request carries the
//! cluster's state (issue 4, item 5): CRD versions a step would drop, install modes the
//! namespace's OperatorGroup needs, APIs another OperatorGroup already provides in
//! overlapping namespaces, and `olm.maxOpenShiftVersion` (resolution spec §4).
//!
//! The checks read a bundle's manifests (its CSV and CRDs); they never change which
//! bundles the resolver prefers, only which ones it may take.
use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::Value;

use crate::openshift::{self, ClusterVersionError};
use catalog::property::GVK;
use catalog::types::Property;

/// What the cluster looks like, as far as the checks need it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterFacts {
    /// The OpenShift version (`ClusterVersion` desired release); empty: not OpenShift, or
    /// unknown.
    #[serde(default)]
    pub openshift_version: String,
    /// The resolved namespace's OperatorGroup (classic).
    #[serde(default)]
    pub operator_group: Option<OperatorGroup>,
    /// The other OperatorGroups of the cluster (classic).
    #[serde(default)]
    pub other_operator_groups: Vec<OperatorGroup>,
    /// The CustomResourceDefinitions on the cluster.
    #[serde(default)]
    pub crds: Vec<ClusterCrd>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorGroup {
    pub name: String,
    /// Defaults to the request's namespace for the namespace's own group.
    #[serde(default)]
    pub namespace: String,
    /// `status.namespaces`; empty means all namespaces.
    #[serde(default)]
    pub target_namespaces: Vec<String>,
    /// The `olm.providedAPIs` annotation's entries, `Kind.version.group`.
    #[serde(default, rename = "providedAPIs")]
    pub provided_apis: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterCrd {
    /// `<plural>.<group>`.
    pub name: String,
    /// The versions with `served: true`.
    #[serde(default)]
    pub served_versions: Vec<String>,
    /// `status.storedVersions`.
    #[serde(default)]
    pub stored_versions: Vec<String>,
}

/// What the checks read from a bundle.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct BundleManifests {
    /// The CSV, or the `olm.csv.metadata` value standing in for its `spec` fields.
    pub(crate) csv: Option<Value>,
    pub(crate) crds: Vec<Value>,
}

impl BundleManifests {
    /// Sorts manifests (JSON texts) into the CSV and the CRDs; `csv_metadata` is the
    /// bundle's `olm.csv.metadata` value, used when no CSV is among them.
    pub(crate) fn from_json(
        objects: &[String],
        csv_metadata: Option<&str>,
    ) -> Result<Self, String> {
        let mut out = BundleManifests::default();
        for text in objects {
            let v: Value = serde_json::from_str(text)
                .map_err(|e| format!("a bundle manifest is not JSON: {e}"))?;
            match v.get("kind").and_then(Value::as_str) {
                Some("ClusterServiceVersion") if out.csv.is_none() => out.csv = Some(v),
                Some("CustomResourceDefinition") => out.crds.push(v),
                _ => {}
            }
        }
        if out.csv.is_none()
            && let Some(meta) = csv_metadata
        {
            let meta: Value = serde_json::from_str(meta)
                .map_err(|e| format!("olm.csv.metadata is not JSON: {e}"))?;
            out.csv = Some(serde_json::json!({ "spec": meta }));
        }
        Ok(out)
    }

    /// `spec.installModes` as (type, supported) pairs; None when the CSV is unknown.
    fn install_modes(&self) -> Option<Vec<(String, bool)>> {
        let modes = self.csv.as_ref()?.pointer("/spec/installModes");
        Some(
            modes
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| {
                    Some((
                        m.get("type")?.as_str()?.to_owned(),
                        m.get("supported").and_then(Value::as_bool).unwrap_or(false),
                    ))
                })
                .collect(),
        )
    }
}

/// Why the OperatorGroup `og` of `namespace` cannot run the bundle, as OLM decides it
/// (InstallModeSet.Supports); None when it can. A bundle whose CSV is unknown passes: only
/// the install step could tell.
pub(crate) fn install_mode_refusal(
    manifests: &BundleManifests,
    namespace: &str,
    og: &OperatorGroup,
) -> Option<String> {
    let modes = manifests.install_modes()?;
    let supports = |mode: &str| modes.iter().any(|(t, s)| t == mode && *s);
    let targets: Vec<&str> = if og.target_namespaces.is_empty() {
        vec![""]
    } else {
        og.target_namespaces.iter().map(String::as_str).collect()
    };
    let missing = |mode: &str, what: &str| {
        (!supports(mode)).then(|| {
            format!("its install modes do not support OperatorGroup {og_name} targeting {target}: {mode} InstallModeType not supported, cannot configure to watch {what}",
                og_name = og.name,
                target = describe_targets(&og.target_namespaces))
        })
    };
    match targets.as_slice() {
        [""] => missing("AllNamespaces", "all namespaces"),
        [one] if *one == namespace => missing("OwnNamespace", "own namespace"),
        [_] => missing("SingleNamespace", "one namespace"),
        many => missing(
            "MultiNamespace",
            &format!("{} namespaces", many.len()),
        )
        .or_else(|| {
            if many.contains(&"") {
                Some(format!(
                    "OperatorGroup {} has invalid selected namespaces: all namespaces among {} namespaces",
                    og.name,
                    many.len()
                ))
            } else if many.contains(&namespace) {
                missing("OwnNamespace", "own namespace")
            } else {
                None
            }
        }),
    }
}

fn describe_targets(targets: &[String]) -> String {
    match targets {
        [] => "all namespaces".to_owned(),
        [one] if one.is_empty() => "all namespaces".to_owned(),
        [one] => format!("namespace {one}"),
        many => format!("namespaces {}", many.join(", ")),
    }
}

/// Why a step to a bundle with these CRDs would lose data or break clients: each CRD
/// version that the cluster still serves or still stores and that the bundle's CRD no
/// longer lists. Empty when the step is safe.
pub(crate) fn crd_refusals(manifests: &BundleManifests, cluster: &[ClusterCrd]) -> Vec<String> {
    let mut out = Vec::new();
    for crd in &manifests.crds {
        let name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(on_cluster) = cluster.iter().find(|c| c.name == name) else {
            continue;
        };
        let listed = crd_versions(crd);
        let dropped: BTreeSet<&str> = on_cluster
            .served_versions
            .iter()
            .chain(&on_cluster.stored_versions)
            .map(String::as_str)
            .filter(|v| !listed.contains(*v))
            .collect();
        for version in dropped {
            let served = on_cluster.served_versions.iter().any(|v| v == version);
            let stored = on_cluster.stored_versions.iter().any(|v| v == version);
            let why = match (served, stored) {
                (true, true) => {
                    "still served by the cluster and still in its status.storedVersions"
                }
                (true, false) => "still served by the cluster",
                _ => "still in its status.storedVersions (objects stored in it would be lost)",
            };
            out.push(format!(
                "its CRD {name} drops version {version}, which is {why}"
            ));
        }
    }
    out
}

/// The version names a CRD manifest lists (`spec.versions`, and v1beta1's `spec.version`).
fn crd_versions(crd: &Value) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name")?.as_str().map(str::to_owned))
        .collect();
    if let Some(v) = crd.pointer("/spec/version").and_then(Value::as_str) {
        out.insert(v.to_owned());
    }
    out
}

/// The CRDs as the cluster has them after a step installs `manifests`: the new served
/// versions, and the storage version added to the stored ones.
pub(crate) fn apply_crds(cluster: &mut Vec<ClusterCrd>, manifests: &BundleManifests) {
    for crd in &manifests.crds {
        let Some(name) = crd.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
        let flag = |v: &Value, key: &str| v.get(key).and_then(Value::as_bool).unwrap_or(false);
        let named = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_owned);
        let served: Vec<String> = versions
            .into_iter()
            .flatten()
            .filter(|v| flag(v, "served"))
            .filter_map(named)
            .collect();
        let storage = versions
            .into_iter()
            .flatten()
            .find(|v| flag(v, "storage"))
            .and_then(named);
        let entry = match cluster.iter_mut().position(|c| c.name == name) {
            Some(i) => &mut cluster[i],
            None => {
                cluster.push(ClusterCrd {
                    name: name.to_owned(),
                    ..ClusterCrd::default()
                });
                cluster.last_mut().expect("just pushed")
            }
        };
        entry.served_versions = served;
        if let Some(s) = storage
            && !entry.stored_versions.contains(&s)
        {
            entry.stored_versions.push(s);
        }
    }
}

/// The OperatorGroups other than the namespace's own whose target namespaces overlap its
/// own and that already provide one of the bundle's APIs (OLM refuses such a CSV with
/// `InterOperatorGroupOwnerConflict`): one warning per group.
pub(crate) fn api_conflicts(
    properties: &[Property],
    own: &OperatorGroup,
    others: &[OperatorGroup],
) -> Vec<String> {
    let provided: BTreeSet<String> = properties
        .iter()
        .filter(|p| p.kind == GVK)
        .filter_map(|p| {
            let v: Value = serde_json::from_str(&p.value).ok()?;
            let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default();
            Some(format!(
                "{}.{}.{}",
                field("kind"),
                field("version"),
                field("group")
            ))
        })
        .collect();
    let mut out = Vec::new();
    for og in others {
        if og.name == own.name && og.namespace == own.namespace {
            continue;
        }
        let Some(overlap) = overlapping(&own.target_namespaces, &og.target_namespaces) else {
            continue;
        };
        let shared: Vec<&str> = og
            .provided_apis
            .iter()
            .filter(|api| provided.contains(*api))
            .map(String::as_str)
            .collect();
        if !shared.is_empty() {
            out.push(format!(
                "it provides {} that OperatorGroup {}/{} already provides in {overlap}",
                shared.join(", "),
                og.namespace,
                og.name
            ));
        }
    }
    out
}

/// Where two target selections overlap, in words; None when they do not.
fn overlapping(a: &[String], b: &[String]) -> Option<String> {
    let all = |t: &[String]| t.is_empty() || t.iter().any(String::is_empty);
    match (all(a), all(b)) {
        (true, true) => Some("all namespaces".to_owned()),
        (true, false) => Some(describe_targets(b)),
        (false, true) => Some(describe_targets(a)),
        (false, false) => {
            let common: Vec<String> = a.iter().filter(|n| b.contains(n)).cloned().collect();
            (!common.is_empty()).then(|| describe_targets(&common))
        }
    }
}

/// Which operators (name, properties) block the cluster's next minor upgrade under
/// `olm.maxOpenShiftVersion` (§4.1 for classic, §4.2 for v1): one sentence per blocker, in
/// input order. Errors name the cluster version that cannot be read.
pub(crate) fn openshift_blockers(
    v1: bool,
    cluster_version: &str,
    operators: &[(&str, &[Property])],
) -> Result<Vec<String>, ClusterVersionError> {
    if !v1 {
        return Ok(openshift::classic_blocking(cluster_version, operators)?
            .into_iter()
            .map(|b| match b.reason {
                openshift::BlockReason::Max(max) => format!(
                    "{} blocks the upgrade to OpenShift {}: its olm.maxOpenShiftVersion is {max}",
                    b.name,
                    openshift::classic_next_minor(cluster_version)
                        .map(|m| m.to_string())
                        .unwrap_or_default()
                ),
                openshift::BlockReason::Invalid(e) => {
                    format!("{} blocks the next OpenShift upgrade: {e}", b.name)
                }
            })
            .collect());
    }
    let mut out = Vec::new();
    for (name, properties) in operators {
        match openshift::v1_max(properties) {
            Ok(None) => {}
            Ok(Some(max)) => {
                if !openshift::v1_compatible(max, cluster_version)? {
                    out.push(format!(
                        "{name} blocks the next OpenShift upgrade from {cluster_version}: its olm.maxOpenShiftVersion is {max}"
                    ));
                }
            }
            Err(e) => out.push(format!("{name} blocks the next OpenShift upgrade: {e}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csv_with_modes(modes: &[(&str, bool)]) -> BundleManifests {
        let modes: Vec<Value> = modes
            .iter()
            .map(|(t, s)| json!({"type": t, "supported": s}))
            .collect();
        BundleManifests {
            csv: Some(json!({"kind": "ClusterServiceVersion", "spec": {"installModes": modes}})),
            crds: Vec::new(),
        }
    }

    fn og(targets: &[&str]) -> OperatorGroup {
        OperatorGroup {
            name: "og".into(),
            namespace: "ns".into(),
            target_namespaces: targets.iter().map(|t| (*t).to_owned()).collect(),
            provided_apis: Vec::new(),
        }
    }

    #[test]
    fn install_modes_as_olm_decides_them() {
        let own_only = csv_with_modes(&[("OwnNamespace", true), ("AllNamespaces", false)]);
        assert_eq!(install_mode_refusal(&own_only, "ns", &og(&["ns"])), None);
        assert_eq!(
            install_mode_refusal(&own_only, "ns", &og(&[])),
            Some("its install modes do not support OperatorGroup og targeting all namespaces: AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces".into())
        );
        assert_eq!(
            install_mode_refusal(&own_only, "ns", &og(&["other"])),
            Some("its install modes do not support OperatorGroup og targeting namespace other: SingleNamespace InstallModeType not supported, cannot configure to watch one namespace".into())
        );
        assert_eq!(
            install_mode_refusal(&own_only, "ns", &og(&["a", "b"])),
            Some("its install modes do not support OperatorGroup og targeting namespaces a, b: MultiNamespace InstallModeType not supported, cannot configure to watch 2 namespaces".into())
        );
        let multi = csv_with_modes(&[("MultiNamespace", true)]);
        assert_eq!(install_mode_refusal(&multi, "ns", &og(&["a", "b"])), None);
        assert_eq!(
            install_mode_refusal(&multi, "ns", &og(&["ns", "b"])),
            Some("its install modes do not support OperatorGroup og targeting namespaces ns, b: OwnNamespace InstallModeType not supported, cannot configure to watch own namespace".into())
        );
        let all = csv_with_modes(&[("AllNamespaces", true)]);
        assert_eq!(install_mode_refusal(&all, "ns", &og(&[""])), None);
        // No CSV, nothing to decide on.
        assert_eq!(
            install_mode_refusal(&BundleManifests::default(), "ns", &og(&["x"])),
            None
        );
        // A CSV without installModes supports nothing.
        let none = BundleManifests {
            csv: Some(json!({"spec": {}})),
            crds: Vec::new(),
        };
        assert!(install_mode_refusal(&none, "ns", &og(&["ns"])).is_some());
    }

    #[test]
    fn csv_metadata_stands_in_for_the_csv() {
        let m = BundleManifests::from_json(
            &[r#"{"kind":"CustomResourceDefinition","metadata":{"name":"a.b"}}"#.into()],
            Some(r#"{"installModes":[{"type":"OwnNamespace","supported":true}]}"#),
        )
        .unwrap();
        assert_eq!(m.crds.len(), 1);
        assert_eq!(install_mode_refusal(&m, "ns", &og(&["ns"])), None);
        assert_eq!(
            BundleManifests::from_json(&["{".into()], None),
            Err(
                "a bundle manifest is not JSON: EOF while parsing an object at line 1 column 1"
                    .into()
            )
        );
    }

    fn crd(versions: &[(&str, bool, bool)]) -> BundleManifests {
        let versions: Vec<Value> = versions
            .iter()
            .map(|(n, served, storage)| json!({"name": n, "served": served, "storage": storage}))
            .collect();
        BundleManifests {
            csv: None,
            crds: vec![json!({
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "caches.example.com"},
                "spec": {"versions": versions}
            })],
        }
    }

    #[test]
    fn crd_versions_still_served_or_stored_cannot_be_dropped() {
        let cluster = vec![ClusterCrd {
            name: "caches.example.com".into(),
            served_versions: vec!["v1alpha1".into(), "v1".into()],
            stored_versions: vec!["v1alpha1".into(), "v1beta1".into()],
        }];
        assert_eq!(
            crd_refusals(&crd(&[("v2", true, true)]), &cluster),
            vec![
                "its CRD caches.example.com drops version v1, which is still served by the cluster",
                "its CRD caches.example.com drops version v1alpha1, which is still served by the cluster and still in its status.storedVersions",
                "its CRD caches.example.com drops version v1beta1, which is still in its status.storedVersions (objects stored in it would be lost)",
            ]
        );
        // Kept but no longer served is fine: the objects can still be read and migrated.
        assert!(
            crd_refusals(
                &crd(&[
                    ("v1alpha1", false, false),
                    ("v1beta1", false, false),
                    ("v1", true, true)
                ]),
                &cluster
            )
            .is_empty()
        );
        // A CRD the cluster does not have yet is new.
        assert!(crd_refusals(&crd(&[("v2", true, true)]), &[]).is_empty());
    }

    #[test]
    fn applying_a_step_moves_the_served_and_stored_versions() {
        let mut cluster = vec![ClusterCrd {
            name: "caches.example.com".into(),
            served_versions: vec!["v1alpha1".into()],
            stored_versions: vec!["v1alpha1".into()],
        }];
        apply_crds(
            &mut cluster,
            &crd(&[("v1alpha1", true, false), ("v1", true, true)]),
        );
        assert_eq!(
            cluster,
            vec![ClusterCrd {
                name: "caches.example.com".into(),
                served_versions: vec!["v1alpha1".into(), "v1".into()],
                stored_versions: vec!["v1alpha1".into(), "v1".into()],
            }]
        );
    }

    #[test]
    fn apis_provided_by_another_group_in_overlapping_namespaces_are_flagged() {
        let props = vec![Property {
            kind: GVK.into(),
            value: r#"{"group":"cache.example.com","kind":"Cache","version":"v1"}"#.into(),
        }];
        let other = |name: &str, targets: &[&str]| OperatorGroup {
            name: name.into(),
            namespace: "elsewhere".into(),
            target_namespaces: targets.iter().map(|t| (*t).to_owned()).collect(),
            provided_apis: vec!["Cache.v1.cache.example.com".into(), "Other.v1.x".into()],
        };
        let own = og(&["ns", "shared"]);
        assert_eq!(
            api_conflicts(
                &props,
                &own,
                &[
                    other("global", &[]),
                    other("apart", &["x"]),
                    other("team", &["shared", "y"])
                ]
            ),
            vec![
                "it provides Cache.v1.cache.example.com that OperatorGroup elsewhere/global already provides in namespaces ns, shared",
                "it provides Cache.v1.cache.example.com that OperatorGroup elsewhere/team already provides in namespace shared",
            ]
        );
        assert!(api_conflicts(&props, &own, std::slice::from_ref(&own)).is_empty());
    }

    #[test]
    fn openshift_blockers_in_both_readings() {
        let props = vec![Property {
            kind: openshift::MAX_OPENSHIFT_VERSION.into(),
            value: r#""4.18""#.into(),
        }];
        let ops: Vec<(&str, &[Property])> = vec![("a.v1", &props), ("b.v1", &[])];
        assert_eq!(
            openshift_blockers(false, "4.18.3", &ops),
            Ok(vec![
                "a.v1 blocks the upgrade to OpenShift 4.19: its olm.maxOpenShiftVersion is 4.18"
                    .to_owned()
            ])
        );
        assert_eq!(openshift_blockers(false, "4.17.0", &ops), Ok(vec![]));
        assert_eq!(
            openshift_blockers(true, "4.18.3", &ops),
            Ok(vec![
                "a.v1 blocks the next OpenShift upgrade from 4.18.3: its olm.maxOpenShiftVersion is 4.18"
                    .to_owned()
            ])
        );
        assert_eq!(openshift_blockers(true, "4.17.0", &ops), Ok(vec![]));
        assert_eq!(
            openshift_blockers(false, "", &ops).map_err(|e| e.to_string()),
            Err("desired release version missing".to_owned())
        );
    }
}
