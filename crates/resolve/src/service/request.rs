//! What a resolution is asked: the state of a namespace (classic) or ClusterExtensions
//! (v1), the catalogs to choose from, and optionally the cluster's state for the safety
//! checks. The CLI reads it from a YAML/JSON file; the gRPC service converts its message
//! into it.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Error;
use crate::classic::UpgradeStrategy;
use crate::safety::ClusterFacts;
use crate::v1::{LabelSelector, SelectorRequirement};
use catalog::Gvk;

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Request {
    pub mode: Mode,
    /// Classic: the namespace being resolved (the default namespace of its catalogs).
    #[serde(default)]
    pub namespace: String,
    /// Classic: the OperatorGroup's `upgradeStrategy`.
    #[serde(default)]
    pub upgrade_strategy: UpgradeStrategy,
    /// Classic: the global catalog namespace, whose catalogs every namespace sees.
    #[serde(default = "default_global_namespace")]
    pub global_namespace: String,
    /// Classic: the OperatorGroup's annotation
    /// `olm.operatorframework.io/exclude-global-namespace-resolution: "true"`.
    #[serde(default)]
    pub exclude_global_namespace_resolution: bool,
    pub catalogs: Vec<CatalogSpec>,
    /// Classic: the CSVs of the namespace.
    #[serde(default)]
    pub installed: Vec<CsvSpec>,
    /// Classic: Subscriptions, in resolution order.
    #[serde(default)]
    pub subscriptions: Vec<SubscriptionSpec>,
    /// v1: ClusterExtensions, each resolved on its own.
    #[serde(default)]
    pub requests: Vec<ExtensionSpec>,
    /// The cluster's state; when present, the safety checks run.
    #[serde(default)]
    pub cluster: Option<ClusterFacts>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Classic,
    V1,
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Classic => "classic",
            Mode::V1 => "v1",
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogSpec {
    pub name: String,
    /// Classic CatalogSource namespace; defaults to the request's namespace.
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub priority: i32,
    /// An FBC directory, relative to the request file (CLI).
    #[serde(default)]
    pub directory: Option<String>,
    /// A catalog image reference, or oci:DIR[:TAG] (CLI).
    #[serde(default)]
    pub image: Option<String>,
    /// A catalog server (`HOST:PORT`) speaking api.Registry.
    #[serde(default)]
    pub address: Option<String>,
    /// v1 ClusterCatalog labels (the name label is always added).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// v1 `availabilityMode`.
    #[serde(default)]
    pub availability_mode: Availability,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub enum Availability {
    #[default]
    Available,
    Unavailable,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CsvSpec {
    pub name: String,
    /// `spec.version`.
    #[serde(default)]
    pub version: String,
    /// `spec.replaces`.
    #[serde(default)]
    pub replaces: String,
    /// `status.phase`.
    #[serde(default = "succeeded")]
    pub phase: String,
    /// The `operatorframework.io/properties` annotation's list.
    #[serde(default)]
    pub properties: Option<Vec<PropertySpec>>,
    /// Owned CRDs and APIServices.
    #[serde(default, rename = "providedAPIs")]
    pub provided_apis: Vec<Gvk>,
    /// Required CRDs and APIServices.
    #[serde(default, rename = "requiredAPIs")]
    pub required_apis: Vec<Gvk>,
}

/// OLM's default `-global-namespace`.
pub fn default_global_namespace() -> String {
    "olm".to_owned()
}

pub fn succeeded() -> String {
    "Succeeded".to_string()
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PropertySpec {
    #[serde(rename = "type")]
    pub kind: String,
    pub value: serde_json::Value,
}

/// Subscription `spec` fields, plus `status.installedCSV` and `status.currentCSV`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscriptionSpec {
    pub name: String,
    pub package: String,
    #[serde(default)]
    pub channel: String,
    pub source: String,
    /// Defaults to the request's namespace.
    #[serde(default)]
    pub source_namespace: String,
    #[serde(default, rename = "startingCSV")]
    pub starting_csv: String,
    #[serde(default, rename = "installedCSV")]
    pub installed_csv: String,
    /// `status.currentCSV`.
    #[serde(default, rename = "currentCSV")]
    pub current_csv: String,
}

/// ClusterExtension `spec.source.catalog` fields, plus the installed bundle.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExtensionSpec {
    pub name: String,
    pub package_name: String,
    #[serde(default)]
    pub channels: Vec<String>,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub upgrade_constraint_policy: Policy,
    #[serde(default)]
    pub selector: Option<SelectorSpec>,
    #[serde(default)]
    pub installed_bundle: Option<BundleSpec>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub enum Policy {
    #[default]
    CatalogProvided,
    SelfCertified,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectorSpec {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<ExpressionSpec>,
}

impl SelectorSpec {
    /// The selector the v1 resolver matches catalog labels with.
    pub fn to_selector(&self) -> LabelSelector {
        LabelSelector {
            match_labels: self.match_labels.clone(),
            match_expressions: self
                .match_expressions
                .iter()
                .map(|e| SelectorRequirement {
                    key: e.key.clone(),
                    operator: e.operator.clone(),
                    values: e.values.clone(),
                })
                .collect(),
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpressionSpec {
    pub key: String,
    pub operator: String,
    #[serde(default)]
    pub values: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleSpec {
    pub name: String,
    pub version: String,
    /// The release apart from the version; absent: the version's build metadata is it.
    #[serde(default)]
    pub release: Option<String>,
}

impl Request {
    /// Checks what the file format or the wire message cannot express; errors name the
    /// field (`subscriptions[2].package: required`).
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = Error::InvalidRequest;
        let misplaced = match self.mode {
            Mode::Classic if !self.requests.is_empty() => Some("requests (v1 only)"),
            Mode::Classic if self.namespace.is_empty() => {
                return Err(invalid("namespace: required in classic mode".to_string()));
            }
            Mode::V1 if !self.subscriptions.is_empty() => Some("subscriptions (classic only)"),
            Mode::V1 if !self.installed.is_empty() => {
                Some("installed (classic only; v1 requests carry installedBundle)")
            }
            _ => None,
        };
        if let Some(field) = misplaced {
            return Err(invalid(format!(
                "{field}: not allowed in {} mode",
                self.mode.name()
            )));
        }
        let required = |value: &str, field: String| {
            if value.is_empty() {
                Err(invalid(format!("{field}: required")))
            } else {
                Ok(())
            }
        };
        for (i, c) in self.catalogs.iter().enumerate() {
            required(&c.name, format!("catalogs[{i}].name"))?;
            let namespace = |c: &CatalogSpec| match c.namespace.as_str() {
                "" => self.namespace.clone(),
                ns => ns.to_owned(),
            };
            if let Some(j) = self.catalogs[..i]
                .iter()
                .position(|d| d.name == c.name && namespace(d) == namespace(c))
            {
                return Err(invalid(format!(
                    "catalogs[{i}].name: {:?} is also the name of catalogs[{j}]",
                    c.name
                )));
            }
        }
        for (i, c) in self.installed.iter().enumerate() {
            required(&c.name, format!("installed[{i}].name"))?;
        }
        for (i, s) in self.subscriptions.iter().enumerate() {
            required(&s.name, format!("subscriptions[{i}].name"))?;
            required(&s.package, format!("subscriptions[{i}].package"))?;
            required(&s.source, format!("subscriptions[{i}].source"))?;
        }
        for (i, r) in self.requests.iter().enumerate() {
            required(&r.name, format!("requests[{i}].name"))?;
            required(&r.package_name, format!("requests[{i}].packageName"))?;
        }
        if let Some(og) = self
            .cluster
            .as_ref()
            .and_then(|c| c.operator_group.as_ref())
        {
            required(&og.name, "cluster.operatorGroup.name".to_owned())?;
        }
        for (i, og) in self
            .cluster
            .iter()
            .flat_map(|c| &c.other_operator_groups)
            .enumerate()
        {
            required(&og.name, format!("cluster.otherOperatorGroups[{i}].name"))?;
            required(
                &og.namespace,
                format!("cluster.otherOperatorGroups[{i}].namespace"),
            )?;
        }
        for (i, crd) in self.cluster.iter().flat_map(|c| &c.crds).enumerate() {
            required(&crd.name, format!("cluster.crds[{i}].name"))?;
        }
        Ok(())
    }

    /// Whether the resolution can use catalog `c`. Classic resolves only from catalogs of
    /// the namespace itself and, unless its OperatorGroup excludes it, of the global
    /// catalog namespace (§2.1); the callers need not load the others.
    pub fn resolves_from(&self, c: &CatalogSpec) -> bool {
        let namespace = self.catalog_namespace(c);
        self.mode == Mode::V1
            || namespace == self.namespace
            || (!self.exclude_global_namespace_resolution && namespace == self.global_namespace)
    }

    /// A catalog's namespace: its own, else the request's.
    pub(crate) fn catalog_namespace(&self, c: &CatalogSpec) -> String {
        if c.namespace.is_empty() {
            self.namespace.clone()
        } else {
            c.namespace.clone()
        }
    }
}
