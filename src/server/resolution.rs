//! `olmregistry.resolution.v1.Resolution`: the `resolve` command as a service. Catalogs are
//! this server's own (an empty address) or other catalog servers; a bad request is
//! INVALID_ARGUMENT naming the field, and a catalog that cannot be read fails only the
//! subscriptions and requests that need it. A request waits for its catalogs no longer
//! than the time budget (a caller's shorter `grpc-timeout` drops the call sooner). Only the
//! addresses the operator allowed may be named: the server connects wherever a request
//! points it, and inside a cluster that must not be anywhere.
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::{Request, Response, Status};

use super::catalog::Catalog;
use super::catalogs::{RemoteCatalogs, RemoteLimits, from_store};
use super::metrics::{Metrics, ResolutionOutcome};
use crate::api::resolution::server::resolution_server::Resolution;
use crate::api::resolution::{
    self as pb, ResolveRequest, ResolveResponse, UpgradeConstraintPolicy, UpgradeStrategy,
};
use crate::catalog::Gvk;
use crate::resolve::classic;
use crate::resolve::service::{self, Loaded, Outcome, request as model};
use crate::store::Store;

/// How the resolution service reads other catalog servers.
pub struct ResolutionOptions {
    /// How long another server's catalog is kept before it is read again.
    pub catalog_ttl: Duration,
    pub limits: RemoteLimits,
    /// The addresses (`HOST:PORT`, as written in requests) that requests may name.
    pub allowed: HashSet<String>,
}

pub struct ResolutionService {
    catalog: Catalog,
    remote: Arc<RemoteCatalogs>,
    allowed: HashSet<String>,
    /// This server's catalog in the resolver's model (with its classic preparation, made on
    /// first use), built once per loaded index.
    local: tokio::sync::Mutex<Option<(Arc<Store>, service::Catalog)>>,
    metrics: Option<Arc<Metrics>>,
}

#[tonic::async_trait]
impl Resolution for ResolutionService {
    async fn resolve(
        &self,
        req: Request<ResolveRequest>,
    ) -> Result<Response<ResolveResponse>, Status> {
        let Some(metrics) = &self.metrics else {
            return self.answer(req).await;
        };
        let started = Instant::now();
        let mode = match pb::Mode::try_from(req.get_ref().mode) {
            Ok(pb::Mode::Classic) => "classic",
            Ok(pb::Mode::V1) => "v1",
            _ => "unspecified",
        };
        let answer = self.answer(req).await;
        let outcome = match &answer {
            Ok(r)
                if r.get_ref().unsatisfiable.is_some()
                    || r.get_ref().results.iter().any(|r| !r.error.is_empty()) =>
            {
                ResolutionOutcome::Unsatisfiable
            }
            Ok(_) => ResolutionOutcome::Resolved,
            Err(s) if s.code() == tonic::Code::InvalidArgument => ResolutionOutcome::Invalid,
            Err(_) => ResolutionOutcome::Failed,
        };
        metrics.resolution(mode, outcome, started.elapsed());
        answer
    }
}

impl ResolutionService {
    async fn answer(
        &self,
        req: Request<ResolveRequest>,
    ) -> Result<Response<ResolveResponse>, Status> {
        let request = to_model(req.into_inner()).map_err(Status::invalid_argument)?;
        request.validate().map_err(Status::invalid_argument)?;
        self.check_allowed(&request)?;
        let deadline = Instant::now() + self.remote.budget();
        // Every remote read starts before any is waited for; catalogs the request's namespace
        // cannot see are not read at all.
        let pending: Vec<_> = request
            .catalogs
            .iter()
            .map(|c| match c.address.as_deref() {
                _ if !request.resolves_from(c) => None,
                address => Some(address.map(|a| self.remote.get(a))),
            })
            .collect();
        let mut loaded: Vec<Loaded> = Vec::with_capacity(pending.len());
        for p in pending {
            loaded.push(match p {
                None => service::not_loaded(),
                Some(None) => Ok(self.local().await?),
                Some(Some(remote)) => remote.wait(deadline).await,
            });
        }
        let outcome =
            tokio::task::spawn_blocking(move || service::resolve_request(&request, &loaded))
                .await
                .map_err(|e| Status::internal(format!("resolution task failed: {e}")))?
                .map_err(Status::failed_precondition)?;
        Ok(Response::new(to_response(outcome)))
    }

    pub fn new(
        catalog: Catalog,
        options: ResolutionOptions,
        metrics: Option<Arc<Metrics>>,
    ) -> ResolutionService {
        ResolutionService {
            catalog,
            remote: Arc::new(
                RemoteCatalogs::new(options.catalog_ttl, options.limits)
                    .with_metrics(metrics.clone()),
            ),
            allowed: options.allowed,
            local: tokio::sync::Mutex::new(None),
            metrics,
        }
    }

    /// PERMISSION_DENIED rather than INVALID_ARGUMENT: the request is well formed, and it is
    /// this server's policy, not the caller's mistake, that keeps it from being served.
    fn check_allowed(&self, request: &model::Request) -> Result<(), Status> {
        for (i, c) in request.catalogs.iter().enumerate() {
            if let Some(address) = c.address.as_deref()
                && !self.allowed.contains(address)
            {
                return Err(Status::permission_denied(format!(
                    "catalogs[{i}].address: {address} is not allowed; this server reads only \
                     its own catalog and the addresses given with --resolution-allowed-catalogs"
                )));
            }
        }
        Ok(())
    }

    async fn local(&self) -> Result<service::Catalog, Status> {
        let store = self.catalog.store().await?;
        let mut cached = self.local.lock().await;
        if let Some((s, c)) = cached.as_ref()
            && Arc::ptr_eq(s, &store)
        {
            return Ok(c.clone());
        }
        let for_build = store.clone();
        let built = tokio::task::spawn_blocking(move || from_store(for_build))
            .await
            .map_err(|e| Status::internal(format!("reading the catalog failed: {e}")))?
            .map_err(Status::internal)?;
        *cached = Some((store, built.clone()));
        Ok(built)
    }
}

/// The wire request in the model of the request file; errors name the field.
fn to_model(r: ResolveRequest) -> Result<model::Request, String> {
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

fn to_response(o: Outcome) -> ResolveResponse {
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
