//! The wire request in the model of the request file; errors name the field.
use crate::api::resolution::{
    self as pb, ResolveRequest, UpgradeConstraintPolicy, UpgradeStrategy,
};
use crate::catalog::Gvk;
use crate::resolve::classic;
use crate::resolve::service::request as model;

/// The wire request in the model of the request file; errors name the field.
pub(super) fn to_model(r: ResolveRequest) -> Result<model::Request, String> {
    let mode = match pb::Mode::try_from(r.mode) {
        Ok(pb::Mode::Classic) => model::Mode::Classic,
        Ok(pb::Mode::V1) => model::Mode::V1,
        _ => return Err("mode: required (MODE_CLASSIC or MODE_V1)".to_owned()),
    };
    let upgrade_strategy = match UpgradeStrategy::try_from(r.upgrade_strategy) {
        Ok(UpgradeStrategy::Default) => classic::UpgradeStrategy::Default,
        Ok(UpgradeStrategy::UnsafeFailForward) => classic::UpgradeStrategy::UnsafeFailForward,
        Err(_) => {
            return Err(format!(
                "upgrade_strategy: unknown value {}",
                r.upgrade_strategy
            ));
        }
    };
    let catalogs = r
        .catalogs
        .into_iter()
        .map(|c| model::CatalogSpec {
            name: c.name,
            namespace: c.namespace,
            priority: c.priority,
            directory: None,
            image: None,
            address: (!c.address.is_empty()).then_some(c.address),
            labels: c.labels.into_iter().collect(),
            availability_mode: if c.unavailable {
                model::Availability::Unavailable
            } else {
                model::Availability::Available
            },
        })
        .collect();
    let gvks = |list: Vec<pb::GroupVersionKind>| {
        list.into_iter()
            .map(|g| Gvk {
                group: g.group,
                version: g.version,
                kind: g.kind,
            })
            .collect()
    };
    let mut installed = Vec::with_capacity(r.installed.len());
    for (i, c) in r.installed.into_iter().enumerate() {
        let properties = match c.properties {
            None => None,
            Some(annotation) => Some(
                annotation
                    .properties
                    .into_iter()
                    .enumerate()
                    .map(|(j, p)| {
                        let value = serde_json::from_str(&p.value).map_err(|e| {
                            format!(
                                "installed[{i}].properties.properties[{j}].value: not JSON: {e}"
                            )
                        })?;
                        Ok(model::PropertySpec {
                            kind: p.r#type,
                            value,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?,
            ),
        };
        installed.push(model::CsvSpec {
            name: c.name,
            version: c.version,
            replaces: c.replaces,
            phase: if c.phase.is_empty() {
                model::succeeded()
            } else {
                c.phase
            },
            properties,
            provided_apis: gvks(c.provided_apis),
            required_apis: gvks(c.required_apis),
        });
    }
    let subscriptions = r
        .subscriptions
        .into_iter()
        .map(|s| model::SubscriptionSpec {
            name: s.name,
            package: s.package,
            channel: s.channel,
            source: s.source,
            source_namespace: s.source_namespace,
            starting_csv: s.starting_csv,
            installed_csv: s.installed_csv,
            current_csv: s.current_csv,
        })
        .collect();
    let mut requests = Vec::with_capacity(r.requests.len());
    for (i, e) in r.requests.into_iter().enumerate() {
        let policy = match UpgradeConstraintPolicy::try_from(e.upgrade_constraint_policy) {
            Ok(UpgradeConstraintPolicy::CatalogProvided) => model::Policy::CatalogProvided,
            Ok(UpgradeConstraintPolicy::SelfCertified) => model::Policy::SelfCertified,
            Err(_) => {
                return Err(format!(
                    "requests[{i}].upgrade_constraint_policy: unknown value {}",
                    e.upgrade_constraint_policy
                ));
            }
        };
        requests.push(model::ExtensionSpec {
            name: e.name,
            package_name: e.package_name,
            channels: e.channels,
            version: e.version,
            upgrade_constraint_policy: policy,
            selector: e.selector.map(|s| model::SelectorSpec {
                match_labels: s.match_labels.into_iter().collect(),
                match_expressions: s
                    .match_expressions
                    .into_iter()
                    .map(|x| model::ExpressionSpec {
                        key: x.key,
                        operator: x.operator,
                        values: x.values,
                    })
                    .collect(),
            }),
            installed_bundle: e.installed_bundle.map(|b| model::BundleSpec {
                name: b.name,
                version: b.version,
            }),
        });
    }
    let group = |g: pb::OperatorGroup| crate::resolve::safety::OperatorGroup {
        name: g.name,
        namespace: g.namespace,
        target_namespaces: g.target_namespaces,
        provided_apis: g.provided_apis,
    };
    let cluster = r.cluster.map(|c| crate::resolve::safety::ClusterFacts {
        openshift_version: c.openshift_version,
        operator_group: c.operator_group.map(group),
        other_operator_groups: c.other_operator_groups.into_iter().map(group).collect(),
        crds: c
            .crds
            .into_iter()
            .map(|crd| crate::resolve::safety::ClusterCrd {
                name: crd.name,
                served_versions: crd.served_versions,
                stored_versions: crd.stored_versions,
            })
            .collect(),
    });
    Ok(model::Request {
        mode,
        namespace: r.namespace,
        upgrade_strategy,
        global_namespace: if r.global_namespace.is_empty() {
            model::default_global_namespace()
        } else {
            r.global_namespace
        },
        exclude_global_namespace_resolution: r.exclude_global_namespace_resolution,
        catalogs,
        installed,
        subscriptions,
        requests,
        cluster,
    })
}
