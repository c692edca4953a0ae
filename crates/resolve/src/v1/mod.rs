//! OLM v1 resolution of one ClusterExtension (resolution spec §3): filter each catalog's
//! bundles of the package, pick the best per catalog, then choose between catalogs by
//! priority. No SAT problem and no dependencies.
mod selector;

use std::collections::BTreeMap;

use catalog::property::{GVK_REQUIRED, PACKAGE_REQUIRED};
use catalog::semver::Range;
use catalog::types::{Bundle, ChannelEntry, DeclarativeConfig, Deprecations};
use catalog::version_constraint::VersionConstraint;
use catalog::version_release::{VersionRelease, best_first};

pub use selector::{LabelSelector, SelectorRequirement};

/// The label every catalog carries with its own name.
pub const NAME_LABEL: &str = "olm.operatorframework.io/metadata.name";

#[derive(Clone, Debug)]
pub struct V1Catalog<'a> {
    pub name: String,
    pub priority: i32,
    pub labels: BTreeMap<String, String>,
    /// `availabilityMode: Unavailable` catalogs are skipped.
    pub available: bool,
    /// The catalog's content; only the requested package's slice is read.
    pub content: &'a DeclarativeConfig,
}

#[derive(Clone, Debug, Default)]
pub struct V1Request {
    pub package: String,
    /// Empty: every channel.
    pub channels: Vec<String>,
    /// A Masterminds constraint; empty means any version.
    pub version: String,
    pub policy: UpgradePolicy,
    pub selector: Option<LabelSelector>,
    pub installed: Option<InstalledBundle>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstalledBundle {
    pub name: String,
    pub version: String,
    /// The release apart from the version (OLM v1 with `BundleReleaseSupport` records it
    /// so); `None`: the version's build metadata is the release, the registry+v1 way.
    pub release: Option<String>,
}

impl InstalledBundle {
    /// The installed bundle's order key.
    pub fn version_release(&self) -> Result<VersionRelease, String> {
        match &self.release {
            Some(release) => VersionRelease::explicit(&self.version, release),
            None => VersionRelease::parse(&self.version),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UpgradePolicy {
    /// Follow the catalog's replaces/skips/skipRange edges.
    #[default]
    CatalogProvided,
    /// Any bundle in range, downgrades included.
    SelfCertified,
    /// Opt-in (deviation D6): successors are `^installed, != installed`, so no automatic
    /// major-version upgrades, as the removed `ForceSemverUpgradeConstraints` gate did.
    Semver,
}

#[derive(Clone, Debug, PartialEq)]
pub struct V1Resolution {
    pub bundle: Bundle,
    /// `None` when the bundle's version cannot be read (possible without a version filter).
    pub version: Option<VersionRelease>,
    pub(crate) catalog: String,
    /// The package's deprecation object in the winning catalog, deprecated or not.
    pub deprecation: Option<Deprecations>,
}

/// Why a ClusterExtension gets no bundle (OLM v1's words).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum V1Error {
    /// The request's version range, catalog selector or installed version cannot be read.
    #[error("{0}")]
    InvalidRequest(String),
    /// The one bundle that fits declares dependencies, which OLM v1 does not resolve.
    #[error(
        "validating bundle {bundle:?}: bundle {bundle:?} has a dependency declared via property {property:?} which is currently not supported"
    )]
    UnsupportedDependency { bundle: String, property: String },
    /// No bundle fits, or several from catalogs of the same priority; says what was asked,
    /// and which bundles were refused.
    #[error("{0}")]
    NoSingleBundle(String),
}

/// One catalog's contribution.
struct Pick<'a> {
    catalog: &'a V1Catalog<'a>,
    bundle: &'a Bundle,
    version: Option<VersionRelease>,
    deprecated: bool,
    deprecation: Option<&'a Deprecations>,
}

/// Resolves one ClusterExtension: the bundle it gets, from the catalog that wins.
pub fn resolve_extension(
    catalogs: &[V1Catalog<'_>],
    req: &V1Request,
) -> Result<V1Resolution, V1Error> {
    resolve_refusing(catalogs, req, &[])
}

/// [`resolve_extension`] with some bundles ruled out by the caller: `refused` holds (bundle name,
/// reason) pairs, and the error says which were refused when nothing else fits.
pub(crate) fn resolve_refusing(
    catalogs: &[V1Catalog<'_>],
    req: &V1Request,
    refused: &[(String, String)],
) -> Result<V1Resolution, V1Error> {
    let invalid = V1Error::InvalidRequest;
    let constraint = (!req.version.is_empty())
        .then(|| VersionConstraint::parse(&req.version))
        .transpose()
        .map_err(|e| {
            invalid(format!(
                "desired version range {:?} is invalid: {e}",
                req.version
            ))
        })?;
    if let Some(selector) = &req.selector {
        selector
            .validate()
            .map_err(|e| invalid(format!("desired catalog selector is invalid: {e}")))?;
    }
    let installed = req
        .installed
        .as_ref()
        .map(|i| {
            i.version_release()
                .map(|vr| (i, vr))
                .map_err(|e| invalid(format!("invalid installed version {:?}: {e}", i.version)))
        })
        .transpose()?;
    let mut picks: Vec<Pick<'_>> = Vec::new();
    for catalog in catalogs {
        if !catalog.available || !selected(catalog, req.selector.as_ref()) {
            continue;
        }
        let Some(pick) = catalog_pick(
            catalog,
            req,
            constraint.as_ref(),
            installed.as_ref(),
            refused,
        ) else {
            continue;
        };
        match (picks.first().map(|p| p.deprecated), pick.deprecated) {
            (Some(false), true) => {}
            (Some(true), false) => picks = vec![pick],
            _ => picks.push(pick),
        }
    }
    if picks.len() > 1 {
        picks.sort_by_key(|p| std::cmp::Reverse(p.catalog.priority));
        if picks[0].catalog.priority != picks[1].catalog.priority {
            picks.truncate(1);
        }
    }
    if let [pick] = picks.as_slice() {
        let Pick {
            catalog,
            bundle,
            version,
            deprecation,
            ..
        } = pick;
        if let Some(p) = bundle
            .properties
            .iter()
            .find(|p| [PACKAGE_REQUIRED, GVK_REQUIRED, "olm.constraint"].contains(&p.kind.as_str()))
        {
            return Err(V1Error::UnsupportedDependency {
                bundle: bundle.name.clone(),
                property: p.kind.clone(),
            });
        }
        return Ok(V1Resolution {
            bundle: (*bundle).clone(),
            version: version.clone(),
            catalog: catalog.name.clone(),
            deprecation: deprecation.cloned(),
        });
    }
    let mut message = no_single_pick(req, &picks);
    if !refused.is_empty() {
        let listed: Vec<String> = refused
            .iter()
            .map(|(name, reason)| format!("bundle {name}: {reason}"))
            .collect();
        message.push_str(&format!(" (refused: {})", listed.join("; ")));
    }
    Err(V1Error::NoSingleBundle(message))
}

fn no_single_pick(req: &V1Request, picks: &[Pick<'_>]) -> String {
    let mut parts = Vec::new();
    if let Some(i) = &req.installed {
        parts.push(format!(
            "error upgrading from currently installed version {:?}:",
            i.version
        ));
    }
    parts.push(if picks.len() > 1 {
        format!("found bundles for package {:?}", req.package)
    } else {
        format!("no bundles found for package {:?}", req.package)
    });
    if !req.version.is_empty() {
        parts.push(format!("matching version {:?}", req.version));
    }
    if !req.channels.is_empty() {
        parts.push(format!("in channels [{}]", req.channels.join(" ")));
    }
    if picks.len() > 1 {
        let mut names: Vec<&str> = picks.iter().map(|p| p.catalog.name.as_str()).collect();
        names.sort_unstable();
        parts.push(format!(
            "in multiple catalogs with the same priority [{}]",
            names.join(" ")
        ));
    }
    parts.join(" ")
}

fn selected(catalog: &V1Catalog<'_>, selector: Option<&LabelSelector>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let mut labels = catalog.labels.clone();
    labels.insert(NAME_LABEL.to_owned(), catalog.name.clone());
    selector.matches(&labels)
}

/// The catalog's best bundle after the channel, version and successor filters (§3.3).
fn catalog_pick<'a>(
    catalog: &'a V1Catalog<'a>,
    req: &V1Request,
    constraint: Option<&VersionConstraint>,
    installed: Option<&(&InstalledBundle, VersionRelease)>,
    refused: &[(String, String)],
) -> Option<Pick<'a>> {
    let dc = catalog.content;
    let channels: Vec<&ChannelEntry> = dc
        .channels
        .iter()
        .filter(|c| c.package == req.package)
        .filter(|c| req.channels.is_empty() || req.channels.contains(&c.name))
        .flat_map(|c| &c.entries)
        .collect();
    let deprecation = dc.deprecations.iter().find(|d| d.package == req.package);
    let deprecated = |name: &str| {
        deprecation.is_some_and(|d| {
            d.entries
                .iter()
                .any(|e| e.reference.schema == "olm.bundle" && e.reference.name == name)
        })
    };
    let mut candidates: Vec<(&Bundle, Option<VersionRelease>)> = dc
        .bundles
        .iter()
        .filter(|b| b.package == req.package)
        .filter(|b| !refused.iter().any(|(name, _)| *name == b.name))
        .filter(|b| req.channels.is_empty() || channels.iter().any(|e| e.name == b.name))
        .map(|b| (b, VersionRelease::of_bundle(b)))
        .filter(|(_, vr)| {
            constraint.is_none_or(|c| vr.as_ref().is_some_and(|vr| c.matches(&vr.version)))
        })
        .filter(|(b, vr)| match (installed, req.policy) {
            (None, _) | (_, UpgradePolicy::SelfCertified) => true,
            (Some((i, ivr)), policy) => {
                vr.as_ref().is_some_and(|vr| vr == ivr)
                    || is_successor(policy, &b.name, vr.as_ref(), i, ivr, &channels)
            }
        })
        .collect();
    candidates.sort_by(|(a, x), (b, y)| {
        deprecated(&a.name)
            .cmp(&deprecated(&b.name))
            .then_with(|| best_first(x, y))
    });
    let (bundle, version) = candidates.into_iter().next()?;
    Some(Pick {
        catalog,
        bundle,
        version,
        deprecated: deprecated(&bundle.name),
        deprecation,
    })
}

/// Whether bundle `name` is an upgrade target from `installed` (§3.3 successors, §3.6):
/// under the catalog policy, some entry with that name in the considered channels
/// replaces, skips or skipRange-covers (blang, build ignored) the installed bundle.
pub fn is_successor(
    policy: UpgradePolicy,
    name: &str,
    version: Option<&VersionRelease>,
    installed: &InstalledBundle,
    installed_version: &VersionRelease,
    entries: &[&ChannelEntry],
) -> bool {
    match policy {
        UpgradePolicy::SelfCertified => true,
        UpgradePolicy::Semver => {
            let v = &installed_version.version;
            let gate = format!("^{v}, != {v}");
            version.is_some_and(|vr| {
                VersionConstraint::parse(&gate).is_ok_and(|c| c.matches(&vr.version))
            })
        }
        UpgradePolicy::CatalogProvided => entries.iter().filter(|e| e.name == name).any(|e| {
            e.replaces == installed.name
                || e.skips.contains(&installed.name)
                || Range::parse(&e.skip_range).is_ok_and(|r| r.contains(&installed_version.version))
        }),
    }
}
