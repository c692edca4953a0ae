//! The InstallPlan of a classic resolution, as OLM's step resolver writes it (resolution
//! spec §2.10): per chosen operator either the steps of its inline bundle or a lookup of its
//! bundle image, a Subscription for an operator no subscription follows, and the
//! subscriptions whose `currentCSV` moves.
use serde::Serialize;
use serde_json::{Value, json};

use catalog::types::Property;

use super::request::{InstalledCsv, ResolvedOperator, Subscription};

const PROPERTIES_ANNOTATION: &str = "operatorframework.io/properties";
const CSV_KIND: &str = "ClusterServiceVersion";
const CRD_KIND: &str = "CustomResourceDefinition";

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlan {
    /// CSVs first, then CRDs, then everything else.
    pub steps: Vec<PlanStep>,
    pub bundle_lookups: Vec<BundleLookup>,
    pub updated_subscriptions: Vec<UpdatedSubscription>,
}

/// One object the plan creates.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    /// The CSV name of the operator the object belongs to.
    pub resolving: String,
    pub group: String,
    pub version: String,
    /// A `Secret` of a bundle is `BundleSecret`, as in OLM.
    pub kind: String,
    pub name: String,
    /// The object as JSON.
    pub manifest: String,
}

/// A bundle image the plan unpacks before it can list the bundle's objects.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleLookup {
    pub identifier: String,
    pub path: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub replaces: String,
    /// The CatalogSource, `<name>/<namespace>` as everywhere in the answer.
    pub catalog: String,
    /// The `operatorframework.io/properties` annotation the CSV will carry.
    pub properties: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdatedSubscription {
    pub name: String,
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
    #[serde(rename = "installedCSV", skip_serializing_if = "String::is_empty")]
    pub installed_csv: String,
}

/// Why an operator installed from its manifests has no steps (OLM's words), by whose fault:
/// `E` is the error of whoever supplies the manifests.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError<E> {
    /// The manifests could not be had.
    #[error("failed to turn bundle into steps: {0}")]
    Objects(E),
    /// The manifests are not a bundle OLM can install.
    #[error("failed to turn bundle into steps: {0}")]
    Manifests(String),
}

/// The plan for `operators` in `namespace`. `objects` gives the manifests (JSON texts) of an
/// operator whose bundle has no image, which is then installed from them.
pub fn install_plan<E>(
    namespace: &str,
    subscriptions: &[Subscription],
    installed: &[InstalledCsv],
    operators: &[ResolvedOperator],
    objects: impl Fn(&ResolvedOperator) -> Result<Vec<String>, E>,
) -> Result<InstallPlan, PlanError<E>> {
    let mut plan = InstallPlan::default();
    for op in operators {
        let following: Vec<&Subscription> =
            subscriptions.iter().filter(|s| op.followed_by(s)).collect();
        let up_to_date = |s: &&Subscription| {
            s.current_csv == op.name && installed.iter().any(|c| c.name == s.current_csv)
        };
        if !following.is_empty() && following.iter().all(up_to_date) {
            continue;
        }
        if op.bundle_path.is_empty() {
            let objects = objects(op).map_err(PlanError::Objects)?;
            let manifests = bundle_steps(namespace, op, &objects).map_err(PlanError::Manifests)?;
            plan.steps.extend(manifests);
        } else {
            plan.bundle_lookups.push(BundleLookup {
                identifier: op.name.clone(),
                path: op.bundle_path.clone(),
                replaces: op.replaces.clone(),
                catalog: format!("{}/{}", op.catalog, op.catalog_namespace),
                properties: properties_annotation(&op.properties),
            });
        }
        if following.is_empty() {
            plan.steps.push(subscription_step(namespace, op));
        }
        plan.updated_subscriptions.extend(
            following
                .iter()
                .filter(|s| s.current_csv != op.name)
                .map(|s| UpdatedSubscription {
                    name: s.name.clone(),
                    current_csv: op.name.clone(),
                    installed_csv: s.installed_csv.clone(),
                }),
        );
    }
    let class = |s: &PlanStep| match s.kind.as_str() {
        CSV_KIND => 0,
        CRD_KIND => 1,
        _ => 2,
    };
    plan.steps.sort_by_key(class);
    Ok(plan)
}

/// The Subscription OLM creates for an operator that only a dependency brought in.
fn subscription_step(namespace: &str, op: &ResolvedOperator) -> PlanStep {
    let name = op.generated_subscription();
    let manifest = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "source": op.catalog,
            "sourceNamespace": op.catalog_namespace,
            "name": op.package,
            "channel": op.channel,
            "startingCSV": op.name,
            "installPlanApproval": "Automatic",
        },
    });
    PlanStep {
        resolving: op.name.clone(),
        group: "operators.coreos.com".to_owned(),
        version: "v1alpha1".to_owned(),
        kind: "Subscription".to_owned(),
        name,
        manifest: manifest.to_string(),
    }
}

/// The CSV (placed in the namespace, replacing what the resolution says, with the
/// properties annotation), the bundle's other objects, and the operator's service accounts.
fn bundle_steps(
    namespace: &str,
    op: &ResolvedOperator,
    objects: &[String],
) -> Result<Vec<PlanStep>, String> {
    let objects: Vec<Value> = objects
        .iter()
        .map(|text| serde_json::from_str(text).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let kind_of = |o: &Value| o["kind"].as_str().unwrap_or_default().to_owned();
    let mut csv = objects
        .iter()
        .find(|o| kind_of(o) == CSV_KIND)
        .cloned()
        .ok_or_else(|| format!("bundle {} has no ClusterServiceVersion", op.name))?;
    for field in ["apiVersion", "kind"] {
        if csv[field].as_str().is_none_or(str::is_empty) {
            return Err(format!(
                "bundle CSV {} missing {}",
                csv["metadata"]["name"].as_str().unwrap_or_default(),
                if field == "kind" {
                    "Kind"
                } else {
                    "APIVersion"
                }
            ));
        }
    }
    csv["metadata"]["namespace"] = json!(namespace);
    csv["metadata"]["annotations"][PROPERTIES_ANNOTATION] =
        json!(properties_annotation(&op.properties));
    match (op.replaces.is_empty(), csv["spec"].as_object_mut()) {
        (false, _) => csv["spec"]["replaces"] = json!(op.replaces),
        (true, Some(spec)) => {
            spec.remove("replaces");
        }
        (true, None) => {}
    }
    let mut steps = vec![object_step(op, &csv)];
    steps.extend(
        objects
            .iter()
            .filter(|o| kind_of(o) != CSV_KIND)
            .map(|o| object_step(op, o)),
    );
    let mut accounts: Vec<&str> = Vec::new();
    for permissions in ["permissions", "clusterPermissions"] {
        let listed = csv["spec"]["install"]["spec"][permissions].as_array();
        for p in listed.into_iter().flatten() {
            let account = p["serviceAccountName"].as_str().unwrap_or_default();
            if account != "default" && !accounts.contains(&account) {
                accounts.push(account);
            }
        }
    }
    steps.extend(accounts.into_iter().map(|account| {
        let manifest = json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": namespace},
        });
        object_step(op, &manifest)
    }));
    Ok(steps)
}

fn object_step(op: &ResolvedOperator, object: &Value) -> PlanStep {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let metadata = &object["metadata"];
    let name = metadata["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .or_else(|| metadata["generateName"].as_str())
        .unwrap_or_default();
    let kind = match object["kind"].as_str().unwrap_or_default() {
        "Secret" => "BundleSecret",
        other => other,
    };
    PlanStep {
        resolving: op.name.clone(),
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        manifest: object.to_string(),
    }
}

/// `{"properties":[{"type":..,"value":..}]}`, each value as its JSON (text when it is not).
fn properties_annotation(properties: &[Property]) -> String {
    let list: Vec<Value> = properties
        .iter()
        .map(|p| {
            let value = serde_json::from_str(&p.value).unwrap_or_else(|_| json!(p.value));
            json!({"type": p.kind, "value": value})
        })
        .collect();
    json!({ "properties": list }).to_string()
}
