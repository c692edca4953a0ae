//! What a classic resolution is asked (resolution spec §2.1) and what it answers (§2.10).

use serde::Deserialize;

use catalog::types::{DeclarativeConfig, Gvk, Property};

use crate::solver::SolveError;

/// The state of one namespace.
#[derive(Clone, Debug, Default)]
pub struct ClassicRequest<'a> {
    /// The namespace being resolved.
    pub namespace: String,
    /// The catalogs visible from it (its own namespace and, unless excluded, the global one);
    /// the caller applies that visibility rule.
    pub catalogs: Vec<CatalogSource<'a>>,
    /// Non-copied CSVs of the namespace.
    pub installed: Vec<InstalledCsv>,
    /// In the order they are to be resolved; the first ones win preference ties.
    pub subscriptions: Vec<Subscription>,
    pub upgrade_strategy: UpgradeStrategy,
    /// Catalog bundles that may not be chosen, with the reason (install rules checked by
    /// the caller, such as OperatorGroup install modes): they stay in their channels, so
    /// the upgrade graph keeps its shape, and an unsatisfiable result names them.
    pub refused: Vec<Refusal>,
}

/// A bundle of one catalog that may not be chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub(crate) catalog: String,
    pub(crate) catalog_namespace: String,
    pub(crate) bundle: String,
    /// Completes "bundle <id> is refused: ".
    pub(crate) reason: String,
}

#[derive(Clone, Debug)]
pub struct CatalogSource<'a> {
    pub name: String,
    pub namespace: String,
    /// Larger is preferred for dependencies.
    pub priority: i32,
    pub content: &'a DeclarativeConfig,
}

/// A ClusterServiceVersion present in the namespace.
#[derive(Clone, Debug, Default)]
pub struct InstalledCsv {
    pub name: String,
    /// `spec.version`; empty means 0.0.0.
    pub version: String,
    /// `spec.replaces`.
    pub replaces: String,
    /// `status.phase` (`Succeeded`, `Replacing`, `Failed`, ...).
    pub phase: String,
    /// The `operatorframework.io/properties` annotation; when present it replaces the
    /// properties derived from the fields below.
    pub properties: Option<Vec<Property>>,
    /// Owned CRDs and APIServices.
    pub provided_apis: Vec<Gvk>,
    /// Required CRDs and APIServices.
    pub required_apis: Vec<Gvk>,
}

#[derive(Clone, Debug, Default)]
pub struct Subscription {
    pub name: String,
    pub package: String,
    /// Empty: every channel of the package, the default one first.
    pub channel: String,
    pub source: String,
    pub source_namespace: String,
    pub starting_csv: String,
    /// `status.installedCSV`.
    pub installed_csv: String,
    /// `status.currentCSV`: read only when the InstallPlan is written.
    pub current_csv: String,
}

/// The OperatorGroup's `upgradeStrategy`, named as in its YAML.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub enum UpgradeStrategy {
    #[default]
    Default,
    /// Leftover CSVs of a failed upgrade chain are ignored (§2.13).
    UnsafeFailForward,
}

/// A bundle to install or upgrade to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedOperator {
    /// The CSV name.
    pub name: String,
    pub package: String,
    pub(crate) channel: String,
    pub(crate) catalog: String,
    pub(crate) catalog_namespace: String,
    pub(crate) default_channel: bool,
    pub(crate) version: String,
    /// The installed CSV this one replaces when it upgrades a subscription's operator,
    /// otherwise the catalog's `replaces`.
    pub replaces: String,
    pub(crate) skips: Vec<String>,
    pub(crate) skip_range: String,
    pub(crate) properties: Vec<Property>,
    pub(crate) bundle_path: String,
    /// Set when the entry was chosen through a subscription's `startingCSV`.
    pub starting_csv: Option<String>,
}

impl ResolvedOperator {
    /// The solver identifier, `<catalog>/<namespace>/<channel>/<csv>`.
    pub fn id(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.catalog, self.catalog_namespace, self.channel, self.name
        )
    }

    /// Whether subscription `s` follows this operator: same package, same channel unless
    /// it names none, same catalog unless it names none.
    pub(crate) fn followed_by(&self, s: &Subscription) -> bool {
        s.package == self.package
            && (s.channel.is_empty() || s.channel == self.channel)
            && (s.source.is_empty()
                || (s.source == self.catalog && s.source_namespace == self.catalog_namespace))
    }

    /// The name of the Subscription OLM creates for an operator no subscription follows.
    pub(crate) fn generated_subscription(&self) -> String {
        format!(
            "{}-{}-{}-{}",
            self.package, self.channel, self.catalog, self.catalog_namespace
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClassicError {
    /// No consistent set exists; the solver's minimal explanation.
    #[error(transparent)]
    Unsatisfiable(SolveError),
    /// The request or a catalog cannot be resolved at all (channel ordering, malformed
    /// requirements, ambiguous installed CSVs, fail-forward chains).
    #[error("{0}")]
    Invalid(String),
}
