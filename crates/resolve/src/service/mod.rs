//! The resolution a client asks for, from request to answer, shared by the `resolve`
//! command and the gRPC service: catalogs in, bundles (with their reasons, upgrade paths and
//! safety findings) or explanations out.
//!
//! The callers load the catalogs (the server's `resolution::load_catalogs`: FBC directories,
//! images, other catalog servers, its own index) and hand them in as [`Loaded`]; a catalog
//! that could not be loaded fails only the subscriptions and requests that need it.
mod classic;
mod error;
pub(crate) mod outcome;
pub mod request;
mod v1;

use std::sync::{Arc, OnceLock};

use crate::classic::PreparedCatalog;
use crate::safety::{self, BundleManifests};
use catalog::property::{self, BUNDLE_OBJECT, CSV_METADATA};
use catalog::types::{Bundle, DeclarativeConfig, Property};

pub use error::Error;
pub use outcome::{Chosen, OpenShift, Outcome, Resolution, Step, report};
pub use request::{Mode, Request};

/// The most upgrades one path lists: each is a full resolution of its own.
const MAX_PATH_STEPS: usize = 32;

/// Reads the manifests of a catalog's bundle when the catalog content does not carry them
/// (catalogs read over api.Registry, whose ListBundles leaves them out).
pub trait ManifestSource: Send + Sync {
    /// The bundle's manifests as JSON texts (api.Bundle `object`).
    fn objects(&self, package: &str, channel: &str, bundle: &str) -> Result<Vec<String>, Error>;
}

/// One loaded catalog. Clones share its content and its preparation.
#[derive(Clone)]
pub struct Catalog {
    pub(crate) content: Arc<DeclarativeConfig>,
    /// None: the manifests are `olm.bundle.object` properties of `content`.
    pub(crate) manifests: Option<Arc<dyn ManifestSource>>,
    /// `content` prepared for classic resolution by the first one that needs it, then kept
    /// for every later round and request (a server keeps its catalogs per snapshot).
    prepared: Arc<OnceLock<PreparedCatalog>>,
}

impl Catalog {
    pub fn new(
        content: Arc<DeclarativeConfig>,
        manifests: Option<Arc<dyn ManifestSource>>,
    ) -> Catalog {
        Catalog {
            content,
            manifests,
            prepared: Arc::default(),
        }
    }

    pub fn of(content: DeclarativeConfig) -> Catalog {
        Catalog::new(Arc::new(content), None)
    }

    /// The catalog's packages, channels and bundles.
    pub fn content(&self) -> &DeclarativeConfig {
        &self.content
    }

    /// The content prepared for classic resolution, made on first use.
    pub(crate) fn prepared(&self) -> &PreparedCatalog {
        self.prepared
            .get_or_init(|| PreparedCatalog::new(&self.content))
    }

    /// What the safety checks read from a bundle.
    pub(crate) fn bundle_manifests(
        &self,
        package: &str,
        channel: &str,
        name: &str,
    ) -> Result<BundleManifests, String> {
        let objects = self
            .objects(package, channel, name)
            .map_err(|e| e.to_string())?;
        let csv_metadata = self
            .manifests
            .is_none()
            .then(|| self.bundle(package, name))
            .flatten()
            .and_then(|b| b.properties.iter().find(|p| p.kind == CSV_METADATA))
            .map(|p| p.value.as_str());
        BundleManifests::from_json(&objects, csv_metadata)
    }

    /// A bundle's manifests as JSON texts (none for a bundle the content lacks).
    /// A catalog server that fails to send them is [`Error::CatalogUnavailable`]; manifests the
    /// content holds but that cannot be read are [`Error::Unresolvable`].
    pub(crate) fn objects(
        &self,
        package: &str,
        channel: &str,
        name: &str,
    ) -> Result<Vec<String>, Error> {
        if let Some(source) = &self.manifests {
            return source.objects(package, channel, name);
        }
        let mut objects = Vec::new();
        let properties = self.bundle(package, name).map(|b| &b.properties);
        for p in properties
            .into_iter()
            .flatten()
            .filter(|p| p.kind == BUNDLE_OBJECT)
        {
            if let property::Typed::BundleObject { data } =
                property::parse(p).map_err(Error::Unresolvable)?
            {
                objects.push(property::decode_bundle_object(&data).map_err(Error::Unresolvable)?);
            }
        }
        Ok(objects)
    }

    fn bundle(&self, package: &str, name: &str) -> Option<&Bundle> {
        self.content
            .bundles
            .iter()
            .find(|b| b.package == package && b.name == name)
    }
}

impl OpenShift {
    /// Whether `operators` (name, properties) block the cluster's next minor upgrade. A
    /// version that cannot be read is the request's error.
    fn judge(
        mode: Mode,
        version: &str,
        operators: &[(&str, &[Property])],
    ) -> Result<OpenShift, Error> {
        let blockers = safety::openshift_blockers(mode == Mode::V1, version, operators)
            .map_err(|e| Error::InvalidRequest(format!("cluster.openshiftVersion: {e}")))?;
        Ok(OpenShift {
            cluster_version: version.to_owned(),
            upgrade_blocked: !blockers.is_empty(),
            blockers,
        })
    }
}

/// A catalog, or why it could not be loaded (naming where it was looked for).
pub type Loaded = Result<Catalog, String>;

/// What a caller passes for a catalog the request cannot use ([`Request::resolves_from`]),
/// instead of loading it.
pub fn not_loaded() -> Loaded {
    Err("not loaded: the resolution cannot use it".to_owned())
}

/// Resolves `req` against `catalogs` (in the order of `req.catalogs`). An error means the
/// request cannot be resolved at all (a catalog's channel cannot be ordered, say; its kind
/// says whose the fault is); a resolution that finds nothing is an answer, with its
/// explanation.
pub fn resolve_request(req: &Request, catalogs: &[Loaded]) -> Result<Outcome, Error> {
    req.validate()?;
    if catalogs.len() != req.catalogs.len() {
        return Err(Error::Internal(format!(
            "{} catalogs were loaded for {} requested",
            catalogs.len(),
            req.catalogs.len()
        )));
    }
    match req.mode {
        Mode::Classic => classic::resolve_subscriptions(req, catalogs),
        Mode::V1 => v1::resolve_extensions(req, catalogs),
    }
}

#[cfg(test)]
mod tests;
