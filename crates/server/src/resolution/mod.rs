//! `olmregistry.resolution.v1.Resolution`: the `resolve` command as a service. Catalogs are
//! this server's own (an empty address) or other catalog servers; a bad request is
//! INVALID_ARGUMENT naming the field, and a catalog that cannot be read fails only the
//! subscriptions and requests that need it. A request waits for its catalogs no longer
//! than the time budget (a caller's shorter `grpc-timeout` drops the call sooner). Only the
//! addresses the operator allowed may be named: the server connects wherever a request
//! points it, and inside a cluster that must not be anywhere.
//!
//! A request without an answer fails with the code of its [`service::Error`] kind:
//!
//! | kind | code | e.g. |
//! |---|---|---|
//! | `InvalidRequest` | INVALID_ARGUMENT | a field missing or malformed (`cluster.openshiftVersion`) |
//! | (not allowed) | PERMISSION_DENIED | an address outside `--resolution-allowed-catalogs` |
//! | `CatalogUnavailable` | UNAVAILABLE | the server stopping before its catalog loaded; a catalog server failing to send the manifests of the install plan |
//! | `Unresolvable` | FAILED_PRECONDITION | a channel that cannot be ordered, a malformed dependency property |
//! | `Internal` | INTERNAL | the index failing to read, a task that died |
//!
//! A catalog server that cannot be read at all is not an error of the call: the subscriptions
//! and requests that need it get its error in their results.
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::{Request, Response, Status};

mod file;
mod load;
mod local;
mod request;
mod response;

pub use file::{LoadedCatalogs, load_request, resolve_file};

use super::metrics::{Metrics, ResolutionOutcome};
use super::serving::{ServedCatalog, bounded};
use api::resolution::server::resolution_server::Resolution;
use api::resolution::{self as pb, ResolveRequest, ResolveResponse};
use catalog::file::ReadLimits;
use load::{Sources, load_catalogs, remote_catalog};
use local::from_store;
use resolve::service::{self, request as model};
use source::{RemoteCatalogs, RemoteLimits};
use store::Store;

/// How the resolution service reads other catalog servers.
pub struct ResolutionOptions {
    /// How long another server's catalog is kept before it is read again.
    pub catalog_ttl: Duration,
    pub limits: RemoteLimits,
    /// The addresses (`HOST:PORT`, as written in requests) that requests may name.
    pub allowed: HashSet<String>,
}

pub(crate) struct ResolutionService {
    catalog: ServedCatalog,
    remote: Arc<RemoteCatalogs<service::Catalog>>,
    allowed: HashSet<String>,
    /// This server's catalog in the resolver's model (with its classic preparation, made on
    /// first use), built once per loaded index.
    local: tokio::sync::Mutex<Option<(Arc<Store>, service::Catalog)>>,
    metrics: Option<Arc<Metrics>>,
    /// How much of the files of a directory a request names may be read.
    read_limits: ReadLimits,
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
        let request =
            model::Request::try_convert(req.into_inner()).map_err(Status::invalid_argument)?;
        request
            .validate()
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        self.check_allowed(&request)?;
        let sources = Sources {
            base: std::path::Path::new(""),
            images: None,
            remote: &self.remote,
            limits: self.read_limits,
        };
        let loaded = load_catalogs(&request, &sources, || self.local())
            .await
            .map_err(to_status)?;
        let outcome =
            tokio::task::spawn_blocking(move || service::resolve_request(&request, &loaded))
                .await
                .map_err(|e| Status::internal(format!("resolution task failed: {e}")))?
                .map_err(to_status)?;
        Ok(Response::new(ResolveResponse::convert(outcome)))
    }

    pub(crate) fn new(
        catalog: ServedCatalog,
        options: ResolutionOptions,
        read_limits: ReadLimits,
        metrics: Option<Arc<Metrics>>,
    ) -> ResolutionService {
        ResolutionService {
            catalog,
            remote: Arc::new(
                RemoteCatalogs::new(options.catalog_ttl, options.limits, remote_catalog)
                    .with_counter(metrics.clone().map(|m| m as _)),
            ),
            allowed: options.allowed,
            local: tokio::sync::Mutex::new(None),
            metrics,
            read_limits,
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

    async fn local(&self) -> Result<service::Catalog, service::Error> {
        let store = self
            .catalog
            .store()
            .await
            .map_err(|s| service::Error::CatalogUnavailable(s.message().to_owned()))?;
        let mut cached = self.local.lock().await;
        if let Some((s, c)) = cached.as_ref()
            && Arc::ptr_eq(s, &store)
        {
            return Ok(c.clone());
        }
        let for_build = store.clone();
        let built = tokio::task::spawn_blocking(move || from_store(for_build))
            .await
            .map_err(|e| service::Error::Internal(format!("reading the catalog failed: {e}")))??;
        *cached = Some((store, built.clone()));
        Ok(built)
    }
}

/// `From` between the wire's messages and the resolver's model: both are other crates'
/// types, so the orphan rule keeps `From` itself out of this crate.
trait Convert<F> {
    fn convert(from: F) -> Self;
}

/// `TryFrom` likewise; the error names the field that could not be read.
trait TryConvert<F>: Sized {
    fn try_convert(from: F) -> Result<Self, String>;
}

/// Each of a list converted (between the wire messages and the model).
fn all<F, T: Convert<F>>(list: Vec<F>) -> Vec<T> {
    list.into_iter().map(T::convert).collect()
}

/// Each kind of failure as its gRPC status (see the module doc).
fn to_status(e: service::Error) -> Status {
    match e {
        service::Error::InvalidRequest(m) => Status::invalid_argument(bounded(m)),
        service::Error::CatalogUnavailable(m) => Status::unavailable(bounded(m)),
        service::Error::Unresolvable(m) => Status::failed_precondition(bounded(m)),
        service::Error::Internal(m) => Status::internal(bounded(m)),
    }
}
