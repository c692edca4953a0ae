//! The answer in its wire form, one conversion per message.
use super::{Convert, all};
use api::resolution::{self as pb, ResolveResponse};
use resolve::classic::{BundleLookup, InstallPlan, PlanStep, UpdatedSubscription};
use resolve::service::{Chosen, OpenShift, Outcome, Resolution, Step, request as model};

impl Convert<Outcome> for ResolveResponse {
    fn convert(o: Outcome) -> ResolveResponse {
        ResolveResponse {
            mode: match o.mode {
                model::Mode::Classic => pb::Mode::Classic,
                model::Mode::V1 => pb::Mode::V1,
            } as i32,
            namespace: o.namespace,
            unsatisfiable: o
                .unsatisfiable
                .map(|messages| pb::Unsatisfiable { messages }),
            results: all(o.results),
            warnings: o.warnings,
            openshift: o.openshift.map(pb::OpenShift::convert),
            install_plan: o.install_plan.map(pb::InstallPlan::convert),
        }
    }
}

impl Convert<Resolution> for pb::Result {
    fn convert(r: Resolution) -> pb::Result {
        pb::Result {
            request: r.request,
            package: r.package,
            bundle: r.bundle.map(pb::ChosenBundle::convert),
            unchanged: r.unchanged,
            error: r.error.unwrap_or_default(),
            path: all(r.path),
            refused: r.refused,
            warnings: r.warnings,
        }
    }
}

impl Convert<Chosen> for pb::ChosenBundle {
    fn convert(b: Chosen) -> pb::ChosenBundle {
        pb::ChosenBundle {
            name: b.name,
            version: b.version,
            channel: b.channel,
            catalog: b.catalog,
            image: b.image,
            from: b.from,
            starting_csv: b.starting_csv,
            required_by: b.required_by,
            deprecation: b.deprecation,
        }
    }
}

impl Convert<Step> for pb::Step {
    fn convert(s: Step) -> pb::Step {
        pb::Step {
            from: s.from,
            to: s.to,
            version: s.version,
            image: s.image,
        }
    }
}

impl Convert<OpenShift> for pb::OpenShift {
    fn convert(s: OpenShift) -> pb::OpenShift {
        pb::OpenShift {
            cluster_version: s.cluster_version,
            upgrade_blocked: s.upgrade_blocked,
            blockers: s.blockers,
        }
    }
}

impl Convert<InstallPlan> for pb::InstallPlan {
    fn convert(p: InstallPlan) -> pb::InstallPlan {
        pb::InstallPlan {
            steps: all(p.steps),
            bundle_lookups: all(p.bundle_lookups),
            updated_subscriptions: all(p.updated_subscriptions),
        }
    }
}

impl Convert<PlanStep> for pb::PlanStep {
    fn convert(s: PlanStep) -> pb::PlanStep {
        pb::PlanStep {
            resolving: s.resolving,
            group: s.group,
            version: s.version,
            kind: s.kind,
            name: s.name,
            manifest: s.manifest,
        }
    }
}

impl Convert<BundleLookup> for pb::BundleLookup {
    fn convert(l: BundleLookup) -> pb::BundleLookup {
        pb::BundleLookup {
            identifier: l.identifier,
            path: l.path,
            replaces: l.replaces,
            catalog: l.catalog,
            properties: l.properties,
        }
    }
}

impl Convert<UpdatedSubscription> for pb::UpdatedSubscription {
    fn convert(u: UpdatedSubscription) -> pb::UpdatedSubscription {
        pb::UpdatedSubscription {
            name: u.name,
            current_csv: u.current_csv,
            installed_csv: u.installed_csv,
        }
    }
}
