//! The answer in its wire form.
use crate::api::resolution::{self as pb, ResolveResponse};
use crate::resolve::service::{Outcome, request as model};

pub(super) fn to_response(o: Outcome) -> ResolveResponse {
    ResolveResponse {
        mode: match o.mode {
            model::Mode::Classic => pb::Mode::Classic,
            model::Mode::V1 => pb::Mode::V1,
        } as i32,
        namespace: o.namespace,
        unsatisfiable: o
            .unsatisfiable
            .map(|messages| pb::Unsatisfiable { messages }),
        results: o
            .results
            .into_iter()
            .map(|r| pb::Result {
                request: r.request,
                package: r.package,
                bundle: r.bundle.map(|b| pb::ChosenBundle {
                    name: b.name,
                    version: b.version,
                    channel: b.channel,
                    catalog: b.catalog,
                    image: b.image,
                    from: b.from,
                    starting_csv: b.starting_csv,
                    required_by: b.required_by,
                    deprecation: b.deprecation,
                }),
                unchanged: r.unchanged,
                error: r.error.unwrap_or_default(),
                path: r
                    .path
                    .into_iter()
                    .map(|s| pb::Step {
                        from: s.from,
                        to: s.to,
                        version: s.version,
                        image: s.image,
                    })
                    .collect(),
                refused: r.refused,
                warnings: r.warnings,
            })
            .collect(),
        warnings: o.warnings,
        openshift: o.openshift.map(|s| pb::OpenShift {
            cluster_version: s.cluster_version,
            upgrade_blocked: s.upgrade_blocked,
            blockers: s.blockers,
        }),
        install_plan: o.install_plan.map(|p| pb::InstallPlan {
            steps: p
                .steps
                .into_iter()
                .map(|s| pb::PlanStep {
                    resolving: s.resolving,
                    group: s.group,
                    version: s.version,
                    kind: s.kind,
                    name: s.name,
                    manifest: s.manifest,
                })
                .collect(),
            bundle_lookups: p
                .bundle_lookups
                .into_iter()
                .map(|l| pb::BundleLookup {
                    identifier: l.identifier,
                    path: l.path,
                    replaces: l.replaces,
                    catalog: l.catalog,
                    properties: l.properties,
                })
                .collect(),
            updated_subscriptions: p
                .updated_subscriptions
                .into_iter()
                .map(|u| pb::UpdatedSubscription {
                    name: u.name,
                    current_csv: u.current_csv,
                    installed_csv: u.installed_csv,
                })
                .collect(),
        }),
    }
}
