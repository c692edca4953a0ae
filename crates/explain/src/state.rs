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
            address: text("/spec/address").filter(|a| !a.is_empty()).or(service),
            image: text("/spec/image").filter(|i| !i.is_empty()),
        }
    }

    pub(crate) fn healthy(&self) -> bool {
        self.state == "READY"
    }

    /// Whether OLM dials it: a catalog with an address is in OLM's source store, and one
    /// that cannot be listed then fails every resolution that sees it ("error using
    /// catalogsource"); one without an address yet is left out.
    pub(crate) fn dialed(&self) -> bool {
        self.address.is_some()
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_catalog_source_is_read_through_its_address_else_its_service() {
        let by_address = Source::from_object(&json!({
            "metadata": {"name": "a", "namespace": "olm"},
            "spec": {"address": "10.0.0.1:50051", "image": "quay.io/x/y:1", "priority": -2},
            "status": {"connectionState": {"lastObservedState": "READY"}},
        }));
        assert_eq!(by_address.address.as_deref(), Some("10.0.0.1:50051"));
        assert_eq!(by_address.image.as_deref(), Some("quay.io/x/y:1"));
        assert_eq!((by_address.priority, by_address.healthy()), (-2, true));
        let by_pod = Source::from_object(&json!({
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"image": "quay.io/x/z:1"},
            "status": {"connectionState": {"lastObservedState": "TRANSIENT_FAILURE"},
                       "registryService": {"serviceName": "b", "serviceNamespace": "ns", "port": "50051"}},
        }));
        assert_eq!(by_pod.address.as_deref(), Some("b.ns.svc:50051"));
        assert_eq!(
            (by_pod.key().as_str(), by_pod.healthy(), by_pod.dialed()),
            ("ns/b", false, true)
        );
        let new = Source::from_object(&json!({"metadata": {"name": "c", "namespace": "ns"},
                                              "spec": {"image": "quay.io/x/z:1"}}));
        assert!(!new.dialed() && new.state.is_empty());
    }

    #[test]
    fn the_request_holds_what_olm_resolves() {
        let ns = Namespace {
            name: "ns".into(),
            subscriptions: vec![json!({
                "metadata": {"name": "s"},
                "spec": {"name": "p", "channel": "stable", "source": "c", "sourceNamespace": "olm"},
                "status": {"installedCSV": "p.v1", "currentCSV": "p.v2"},
            })],
            csvs: vec![
                json!({"metadata": {"name": "p.v1"}, "spec": {"version": "1.0.0",
                        "customresourcedefinitions": {"owned": [{"name": "ws.example.com", "version": "v1", "kind": "W"}]},
                        "apiservicedefinitions": {"required": [{"group": "g", "version": "v2", "kind": "K"}]}},
                       "status": {"phase": "Succeeded"}}),
                // A copy from another namespace's AllNamespaces operator is not installed here.
                json!({"metadata": {"name": "q.v1", "labels": {"olm.copiedFrom": "other"}}}),
            ],
            operator_groups: vec![json!({
                "metadata": {"name": "og", "annotations": {EXCLUDE_GLOBAL: "true"}},
                "status": {"namespaces": ["ns", "x"]},
            })],
            ..Namespace::default()
        };
        let req = ns.request("olm", Vec::new());
        assert!(req.exclude_global_namespace_resolution);
        assert_eq!(req.installed.len(), 1);
        let csv = &req.installed[0];
        assert_eq!(
            (csv.name.as_str(), csv.version.as_str(), csv.phase.as_str()),
            ("p.v1", "1.0.0", "Succeeded")
        );
        assert_eq!(csv.provided_apis[0].group, "example.com");
        assert_eq!(csv.required_apis[0].kind, "K");
        let sub = &req.subscriptions[0];
        assert_eq!(
            (sub.installed_csv.as_str(), sub.current_csv.as_str()),
            ("p.v1", "p.v2")
        );
        let og = req.cluster.unwrap().operator_group.unwrap();
        assert_eq!(og.target_namespaces, ["ns", "x"]);
    }
}
