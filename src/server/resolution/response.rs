//! The answer in its wire form, one conversion per message.
use super::all;
use crate::api::resolution::{self as pb, ResolveResponse};
use crate::resolve::classic::{BundleLookup, InstallPlan, PlanStep, UpdatedSubscription};
use crate::resolve::service::{Chosen, OpenShift, Outcome, Resolution, Step, request as model};

impl From<Outcome> for ResolveResponse {
    fn from(o: Outcome) -> ResolveResponse {
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
            openshift: o.openshift.map(pb::OpenShift::from),
            install_plan: o.install_plan.map(pb::InstallPlan::from),
        }
    }
}

impl From<Resolution> for pb::Result {
    fn from(r: Resolution) -> pb::Result {
        pb::Result {
            request: r.request,
            package: r.package,
            bundle: r.bundle.map(pb::ChosenBundle::from),
            unchanged: r.unchanged,
            error: r.error.unwrap_or_default(),
            path: all(r.path),
            refused: r.refused,
            warnings: r.warnings,
        }
    }
}

impl From<Chosen> for pb::ChosenBundle {
    fn from(b: Chosen) -> pb::ChosenBundle {
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

impl From<Step> for pb::Step {
    fn from(s: Step) -> pb::Step {
        pb::Step {
            from: s.from,
            to: s.to,
            version: s.version,
            image: s.image,
        }
    }
}

impl From<OpenShift> for pb::OpenShift {
    fn from(s: OpenShift) -> pb::OpenShift {
        pb::OpenShift {
            cluster_version: s.cluster_version,
            upgrade_blocked: s.upgrade_blocked,
            blockers: s.blockers,
        }
    }
}

impl From<InstallPlan> for pb::InstallPlan {
    fn from(p: InstallPlan) -> pb::InstallPlan {
        pb::InstallPlan {
            steps: all(p.steps),
            bundle_lookups: all(p.bundle_lookups),
            updated_subscriptions: all(p.updated_subscriptions),
        }
    }
}

impl From<PlanStep> for pb::PlanStep {
    fn from(s: PlanStep) -> pb::PlanStep {
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

impl From<BundleLookup> for pb::BundleLookup {
    fn from(l: BundleLookup) -> pb::BundleLookup {
        pb::BundleLookup {
            identifier: l.identifier,
            path: l.path,
            replaces: l.replaces,
            catalog: l.catalog,
            properties: l.properties,
        }
    }
}

impl From<UpdatedSubscription> for pb::UpdatedSubscription {
    fn from(u: UpdatedSubscription) -> pb::UpdatedSubscription {
        pb::UpdatedSubscription {
            name: u.name,
            current_csv: u.current_csv,
            installed_csv: u.installed_csv,
        }
    }
}
