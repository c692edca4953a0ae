//! OLM classic resolution (resolution spec §2): every subscription of a namespace is
//! resolved together in one SAT problem, preferring, in order, the subscriptions' own
//! candidates nearest their channel heads and then dependency providers by catalog
//! preference.
mod builder;
pub mod chain;
mod index;
mod request;
mod requirements;
mod universe;

pub use request::{
    CatalogSource, ClassicError, ClassicRequest, Gvk, InstalledCsv, ResolvedOperator, Subscription,
    UpgradeStrategy,
};
pub use requirements::requirements;

use crate::resolve::solver::{self, SolveError};

use builder::Builder;
use universe::Universe;

/// Resolves the namespace: the catalog bundles to install or upgrade to, with the reason
/// for each (`replaces`, `starting_csv`). Operators that stay as installed are not listed.
/// The answer depends only on the request, in request order.
pub fn resolve(req: &ClassicRequest<'_>) -> Result<Vec<ResolvedOperator>, ClassicError> {
    let universe = Universe::build(req).map_err(ClassicError::Invalid)?;
    let built = Builder::build(&universe, req)?;
    let selected = solver::solve(&built.problem).map_err(|e| match e {
        SolveError::Unsatisfiable { .. } => ClassicError::Unsatisfiable(e),
        other => ClassicError::Invalid(other.to_string()),
    })?;
    Ok(selected
        .iter()
        .filter_map(|id| built.entries.get(id))
        .map(|&e| {
            let entry = &universe.entries[e];
            let catalog = &universe.catalogs[entry.catalog];
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
