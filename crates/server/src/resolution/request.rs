//! The wire request in the model of the request file, one conversion per message; errors
//! name the field, each message's relative to itself and its parent's adding the path to it.
use super::{Convert, TryConvert, all};
use api::resolution::{self as pb, ResolveRequest, UpgradeConstraintPolicy, UpgradeStrategy};
use catalog::Gvk;
use resolve::classic;
use resolve::safety::{ClusterCrd, ClusterFacts, OperatorGroup};
use resolve::service::request as model;

/// Each of `list` converted, an error prefixed with its field and index.
fn each<P, M>(field: &str, list: Vec<P>) -> Result<Vec<M>, String>
where
    M: TryConvert<P>,
{
    list.into_iter()
        .enumerate()
        .map(|(i, p)| M::try_convert(p).map_err(|e| format!("{field}[{i}].{e}")))
        .collect()
}

impl TryConvert<ResolveRequest> for model::Request {
    fn try_convert(r: ResolveRequest) -> Result<model::Request, String> {
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
            catalogs: all(r.catalogs),
            installed: each("installed", r.installed)?,
            subscriptions: all(r.subscriptions),
            requests: each("requests", r.requests)?,
            cluster: r.cluster.map(ClusterFacts::convert),
        })
    }
}

impl Convert<pb::Catalog> for model::CatalogSpec {
    fn convert(c: pb::Catalog) -> model::CatalogSpec {
        model::CatalogSpec {
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
        }
    }
}

impl Convert<pb::GroupVersionKind> for Gvk {
    fn convert(g: pb::GroupVersionKind) -> Gvk {
        Gvk {
            group: g.group,
            version: g.version,
            kind: g.kind,
        }
    }
}

impl TryConvert<pb::Property> for model::PropertySpec {
    fn try_convert(p: pb::Property) -> Result<model::PropertySpec, String> {
        let value = serde_json::from_str(&p.value).map_err(|e| format!("value: not JSON: {e}"))?;
        Ok(model::PropertySpec {
            kind: p.r#type,
            value,
        })
    }
}

impl TryConvert<pb::InstalledCsv> for model::CsvSpec {
    fn try_convert(c: pb::InstalledCsv) -> Result<model::CsvSpec, String> {
        let properties = match c.properties {
            None => None,
            Some(annotation) => Some(each("properties.properties", annotation.properties)?),
        };
        Ok(model::CsvSpec {
            name: c.name,
            version: c.version,
            replaces: c.replaces,
            phase: if c.phase.is_empty() {
                model::succeeded()
            } else {
                c.phase
            },
            properties,
            provided_apis: all(c.provided_apis),
            required_apis: all(c.required_apis),
        })
    }
}

impl Convert<pb::Subscription> for model::SubscriptionSpec {
    fn convert(s: pb::Subscription) -> model::SubscriptionSpec {
        model::SubscriptionSpec {
            name: s.name,
            package: s.package,
            channel: s.channel,
            source: s.source,
            source_namespace: s.source_namespace,
            starting_csv: s.starting_csv,
            installed_csv: s.installed_csv,
            current_csv: s.current_csv,
        }
    }
}

impl TryConvert<pb::ExtensionRequest> for model::ExtensionSpec {
    fn try_convert(e: pb::ExtensionRequest) -> Result<model::ExtensionSpec, String> {
        let upgrade_constraint_policy =
            match UpgradeConstraintPolicy::try_from(e.upgrade_constraint_policy) {
                Ok(UpgradeConstraintPolicy::CatalogProvided) => model::Policy::CatalogProvided,
                Ok(UpgradeConstraintPolicy::SelfCertified) => model::Policy::SelfCertified,
                Err(_) => {
                    return Err(format!(
                        "upgrade_constraint_policy: unknown value {}",
                        e.upgrade_constraint_policy
                    ));
                }
            };
        Ok(model::ExtensionSpec {
            name: e.name,
            package_name: e.package_name,
            channels: e.channels,
            version: e.version,
            upgrade_constraint_policy,
            selector: e.selector.map(model::SelectorSpec::convert),
            installed_bundle: e.installed_bundle.map(model::BundleSpec::convert),
        })
    }
}

impl Convert<pb::LabelSelector> for model::SelectorSpec {
    fn convert(s: pb::LabelSelector) -> model::SelectorSpec {
        model::SelectorSpec {
            match_labels: s.match_labels.into_iter().collect(),
            match_expressions: all(s.match_expressions),
        }
    }
}

impl Convert<pb::LabelSelectorRequirement> for model::ExpressionSpec {
    fn convert(x: pb::LabelSelectorRequirement) -> model::ExpressionSpec {
        model::ExpressionSpec {
            key: x.key,
            operator: x.operator,
            values: x.values,
        }
    }
}

impl Convert<pb::InstalledBundle> for model::BundleSpec {
    fn convert(b: pb::InstalledBundle) -> model::BundleSpec {
        model::BundleSpec {
            name: b.name,
            version: b.version,
            release: b.release,
        }
    }
}

impl Convert<pb::ClusterFacts> for ClusterFacts {
    fn convert(c: pb::ClusterFacts) -> ClusterFacts {
        ClusterFacts {
            openshift_version: c.openshift_version,
            operator_group: c.operator_group.map(OperatorGroup::convert),
            other_operator_groups: all(c.other_operator_groups),
            crds: all(c.crds),
        }
    }
}

impl Convert<pb::OperatorGroup> for OperatorGroup {
    fn convert(g: pb::OperatorGroup) -> OperatorGroup {
        OperatorGroup {
            name: g.name,
            namespace: g.namespace,
            target_namespaces: g.target_namespaces,
            provided_apis: g.provided_apis,
        }
    }
}

impl Convert<pb::ClusterCrd> for ClusterCrd {
    fn convert(crd: pb::ClusterCrd) -> ClusterCrd {
        ClusterCrd {
            name: crd.name,
            served_versions: crd.served_versions,
            stored_versions: crd.stored_versions,
        }
    }
}
