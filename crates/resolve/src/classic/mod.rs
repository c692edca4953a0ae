//! OLM classic resolution (resolution spec §2): every subscription of a namespace is
//! resolved together in one SAT problem, preferring, in order, the subscriptions' own
//! candidates nearest their channel heads and then dependency providers by catalog
//! preference.
//!
//! What depends only on a catalog's content is kept in a [`PreparedCatalog`], which a
//! server makes once per catalog snapshot and hands to [`resolve_prepared`] with every
//! request; [`resolve_namespace`] prepares the request's catalogs on the fly.
mod builder;
pub mod chain;
mod index;
mod prepared;
mod request;
mod requirements;
mod steps;
mod universe;

pub use prepared::PreparedCatalog;
pub use request::{
    CatalogSource, ClassicError, ClassicRequest, InstalledCsv, Refusal, ResolvedOperator,
    Subscription, UpgradeStrategy,
};
pub(crate) use requirements::requirements;
pub use steps::{
    BundleLookup, InstallPlan, PlanError, PlanStep, UpdatedSubscription, install_plan,
};

use crate::solver::{self, SolveError};

use builder::Builder;
use universe::Universe;

/// Resolves the namespace: the catalog bundles to install or upgrade to, with the reason
/// for each (`replaces`, `starting_csv`). Operators that stay as installed are not listed.
/// The answer depends only on the request, in request order.
pub fn resolve_namespace(req: &ClassicRequest<'_>) -> Result<Vec<ResolvedOperator>, ClassicError> {
    let prepared: Vec<PreparedCatalog> = req
        .catalogs
        .iter()
        .map(|source| PreparedCatalog::new(source.content))
        .collect();
    let prepared: Vec<&PreparedCatalog> = prepared.iter().collect();
    resolve_prepared(req, &prepared)
}

/// [`resolve_namespace`] with the catalogs already prepared: `prepared[i]` is the content of
/// `req.catalogs[i]` (whose `content` is then not read).
pub fn resolve_prepared(
    req: &ClassicRequest<'_>,
    prepared: &[&PreparedCatalog],
) -> Result<Vec<ResolvedOperator>, ClassicError> {
    if prepared.len() != req.catalogs.len() {
        return Err(ClassicError::Invalid(format!(
            "{} prepared catalogs given for {} catalog sources",
            prepared.len(),
            req.catalogs.len()
        )));
    }
    let universe = Universe::build(req, prepared).map_err(ClassicError::Invalid)?;
    let built = Builder::build(&universe, req)?;
    let lazy = if universe.ids_may_collide(req) {
        None
    } else {
        solver::lazy::solve(&built).map_err(|e| ClassicError::Invalid(e.to_string()))?
    };
    let selected = match lazy {
        Some(selected) => built.selected_entries(&selected),
        // Unsatisfiable (or identifiers to check): the full problem gives the explanation.
        None => {
            let (problem, entries) = built.problem(req);
            let selected = solver::solve(&problem).map_err(|e| match e {
                SolveError::Unsatisfiable { .. } => ClassicError::Unsatisfiable(e),
                other => ClassicError::Invalid(other.to_string()),
            })?;
            selected
                .iter()
                .filter_map(|id| entries.get(id).copied())
                .collect()
        }
    };
    Ok(selected
        .into_iter()
        .map(|e| {
            let entry = universe.entry(e);
            let catalog = &universe.catalogs[universe.locate(e).0];
            ResolvedOperator {
                name: entry.name.clone(),
                package: entry.package.clone(),
                channel: entry.channel.clone(),
                catalog: catalog.name.clone(),
                catalog_namespace: catalog.namespace.clone(),
                default_channel: entry.default_channel,
                version: entry.version_text.clone(),
                replaces: built
                    .replaces
                    .get(&e)
                    .cloned()
                    .unwrap_or_else(|| entry.replaces.clone()),
                skips: entry.skips.clone(),
                skip_range: entry.skip_range.clone(),
                properties: entry.properties.clone(),
                bundle_path: entry.bundle_path.clone(),
                starting_csv: built.starting_csv.get(&e).cloned(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests;
