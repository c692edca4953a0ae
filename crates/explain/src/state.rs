//! A namespace as OLM's catalog operator resolves it, read from the cluster's objects: its
//! Subscriptions, CSVs, InstallPlans and OperatorGroup, and the CatalogSources it may
//! resolve from; turned into the resolver's request.
use catalog::Gvk;
use resolve::safety::{ClusterFacts, OperatorGroup};
use resolve::service::request::{
    CatalogSpec, CsvSpec, Mode, PropertySpec, Request, SubscriptionSpec,
};
use serde_json::Value;

/// The CSV annotation holding a bundle's properties.
const PROPERTIES_ANNOTATION: &str = "operatorframework.io/properties";
/// The OperatorGroup annotation that keeps the global catalog namespace out of resolution.
const EXCLUDE_GLOBAL: &str = "olm.operatorframework.io/exclude-global-namespace-resolution";
/// The label OLM puts on the copies of a CSV in the namespaces its OperatorGroup targets.
const COPIED_FROM: &str = "olm.copiedFrom";

/// Everything read about one namespace.
#[derive(Debug, Default)]
pub(crate) struct Namespace {
    pub(crate) name: String,
    pub(crate) subscriptions: Vec<Value>,
    pub(crate) csvs: Vec<Value>,
    pub(crate) install_plans: Vec<Value>,
    pub(crate) operator_groups: Vec<Value>,
    /// The CatalogSources of the namespace and of the global catalog namespace.
    pub(crate) catalogs: Vec<Source>,
}

/// A CatalogSource as explain reads its catalog.
#[derive(Clone, Debug)]
pub(crate) struct Source {
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) priority: i32,
    /// `status.connectionState.lastObservedState` (empty: never observed).
    pub(crate) state: String,
    /// Whether OLM ever connected to it (`status.connectionState.lastConnect`): a catalog
    /// OLM never reached is left out of its resolution silently.
    pub(crate) connected_once: bool,
    /// `spec.address`, or the address of the Service OLM made for the catalog's pod.
    pub(crate) address: Option<String>,
    pub(crate) image: Option<String>,
}

impl Source {
    pub(crate) fn from_object(o: &Value) -> Source {
        let text = |p: &str| o.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let service = o.pointer("/status/registryService").and_then(|s| {
            let name = s.get("serviceName")?.as_str()?;
            let ns = s.get("serviceNamespace")?.as_str()?;
            let port = s.get("port")?.as_str()?;
            Some(format!("{name}.{ns}.svc:{port}"))
        });
        Source {
            name: text("/metadata/name").unwrap_or_default(),
            namespace: text("/metadata/namespace").unwrap_or_default(),
            priority: o
                .pointer("/spec/priority")
                .and_then(Value::as_i64)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0),
            state: text("/status/connectionState/lastObservedState").unwrap_or_default(),
            connected_once: o.pointer("/status/connectionState/lastConnect").is_some(),
            address: text("/spec/address").filter(|a| !a.is_empty()).or(service),
            image: text("/spec/image").filter(|i| !i.is_empty()),
        }
    }

    pub(crate) fn healthy(&self) -> bool {
        self.state == "READY"
    }

    /// `namespace/name`.
    pub(crate) fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// A string field of an object, empty when absent.
pub(crate) fn field<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl Namespace {
    /// The OperatorGroup OLM uses here: the only one (OLM refuses to install with none or
    /// several).
    pub(crate) fn operator_group(&self) -> Option<&Value> {
        match self.operator_groups.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The CSVs OLM counts as installed here: not the copies of other namespaces' CSVs.
    pub(crate) fn own_csvs(&self) -> impl Iterator<Item = &Value> {
        self.csvs.iter().filter(|c| {
            c.pointer(&format!("/metadata/labels/{COPIED_FROM}"))
                .is_none()
        })
    }

    /// The CatalogSources OLM resolves this namespace from: its own and, unless its
    /// OperatorGroup says otherwise, the global catalog namespace's.
    pub(crate) fn visible_sources<'a>(
        &'a self,
        global: &'a str,
    ) -> impl Iterator<Item = &'a Source> {
        let global_too = !self.excludes_global();
        self.catalogs
            .iter()
            .filter(move |c| c.namespace == self.name || (global_too && c.namespace == global))
    }

    /// Whether the OperatorGroup keeps the global catalog namespace out.
    pub(crate) fn excludes_global(&self) -> bool {
        self.operator_group().is_some_and(|og| {
            og.pointer("/metadata/annotations")
                .and_then(|a| a.get(EXCLUDE_GLOBAL))
                .and_then(Value::as_str)
                == Some("true")
        })
    }

    /// The resolver's request for this namespace: its CSVs and Subscriptions, the catalogs
    /// given (in their order), and its OperatorGroup for the install-mode check.
    pub(crate) fn request(&self, global: &str, catalogs: Vec<CatalogSpec>) -> Request {
        let operator_group = self.operator_group().map(|og| OperatorGroup {
            name: field(og, "/metadata/name").to_owned(),
            namespace: self.name.clone(),
            target_namespaces: target_namespaces(og),
            provided_apis: Vec::new(),
        });
        Request {
            mode: Mode::Classic,
            namespace: self.name.clone(),
            upgrade_strategy: Default::default(),
            global_namespace: global.to_owned(),
            exclude_global_namespace_resolution: self.excludes_global(),
            catalogs,
            installed: self.own_csvs().map(csv_spec).collect(),
            subscriptions: self.subscriptions.iter().map(subscription_spec).collect(),
            requests: Vec::new(),
            cluster: operator_group.map(|og| ClusterFacts {
                operator_group: Some(og),
                ..ClusterFacts::default()
            }),
        }
    }
}

/// `status.namespaces` (OLM's resolved targets; `[""]` is all namespaces), else
/// `spec.targetNamespaces` (none: all namespaces).
pub(crate) fn target_namespaces(og: &Value) -> Vec<String> {
    let list = |p: &str| -> Option<Vec<String>> {
        let items = og.pointer(p)?.as_array()?;
        Some(
            items
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect(),
        )
    };
    list("/status/namespaces")
        .or_else(|| list("/spec/targetNamespaces"))
        .unwrap_or_default()
}

fn subscription_spec(s: &Value) -> SubscriptionSpec {
    SubscriptionSpec {
        name: field(s, "/metadata/name").to_owned(),
        package: field(s, "/spec/name").to_owned(),
        channel: field(s, "/spec/channel").to_owned(),
        source: field(s, "/spec/source").to_owned(),
        source_namespace: field(s, "/spec/sourceNamespace").to_owned(),
        starting_csv: field(s, "/spec/startingCSV").to_owned(),
        installed_csv: field(s, "/status/installedCSV").to_owned(),
        current_csv: field(s, "/status/currentCSV").to_owned(),
    }
}

fn csv_spec(c: &Value) -> CsvSpec {
    let properties = c
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(PROPERTIES_ANNOTATION))
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|v| v.get("properties").cloned())
        .and_then(|list| serde_json::from_value::<Vec<Value>>(list).ok())
        .map(|list| {
            list.into_iter()
                .filter_map(|p| {
                    Some(PropertySpec {
                        kind: p.get("type")?.as_str()?.to_owned(),
                        value: p.get("value")?.clone(),
                    })
                })
                .collect()
        });
    CsvSpec {
        name: field(c, "/metadata/name").to_owned(),
        version: field(c, "/spec/version").to_owned(),
        replaces: field(c, "/spec/replaces").to_owned(),
        phase: match field(c, "/status/phase") {
            "" => "Pending".to_owned(),
            phase => phase.to_owned(),
        },
        properties,
        provided_apis: apis(c, "owned"),
        required_apis: apis(c, "required"),
    }
}

/// The CRDs and APIServices a CSV owns or requires (`which`), as OLM reads them.
pub(crate) fn apis(c: &Value, which: &str) -> Vec<Gvk> {
    let crds = c
        .pointer(&format!("/spec/customresourcedefinitions/{which}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| {
            let group = field(d, "/name").split_once('.')?.1;
            Some(Gvk {
                group: group.to_owned(),
                version: field(d, "/version").to_owned(),
                kind: field(d, "/kind").to_owned(),
            })
        });
    let services = c
        .pointer(&format!("/spec/apiservicedefinitions/{which}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|d| Gvk {
            group: field(d, "/group").to_owned(),
            version: field(d, "/version").to_owned(),
            kind: field(d, "/kind").to_owned(),
        });
    crds.chain(services).collect()
}

/// The resolver's entry for a catalog read from `address` or `image`.
pub(crate) fn catalog_spec(s: &Source, address: Option<&str>, image: Option<&str>) -> CatalogSpec {
    CatalogSpec {
        name: s.name.clone(),
        namespace: s.namespace.clone(),
        priority: s.priority,
        address: address.map(str::to_owned),
        image: image.map(str::to_owned),
        ..CatalogSpec::default()
    }
}
