//! The cluster's objects, read with GET only (explain never writes), each call counted. A
//! refusal names the resource and verb it was for; a server that cannot be reached is told
//! apart from one that answers with an error.
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::Error;

/// OLM v0's API group and versions.
const V1ALPHA1: &str = "/apis/operators.coreos.com/v1alpha1";
const V1: &str = "/apis/operators.coreos.com/v1";

/// A kind explain reads: where it lives and how a refusal names it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kind {
    prefix: &'static str,
    plural: &'static str,
    /// `plural.group`, as RBAC rules and `kubectl auth can-i` name it.
    resource: &'static str,
}

pub(crate) const SUBSCRIPTIONS: Kind = Kind {
    prefix: V1ALPHA1,
    plural: "subscriptions",
    resource: "subscriptions.operators.coreos.com",
};
pub(crate) const CSVS: Kind = Kind {
    prefix: V1ALPHA1,
    plural: "clusterserviceversions",
    resource: "clusterserviceversions.operators.coreos.com",
};
pub(crate) const INSTALL_PLANS: Kind = Kind {
    prefix: V1ALPHA1,
    plural: "installplans",
    resource: "installplans.operators.coreos.com",
};
pub(crate) const CATALOG_SOURCES: Kind = Kind {
    prefix: V1ALPHA1,
    plural: "catalogsources",
    resource: "catalogsources.operators.coreos.com",
};
pub(crate) const OPERATOR_GROUPS: Kind = Kind {
    prefix: V1,
    plural: "operatorgroups",
    resource: "operatorgroups.operators.coreos.com",
};

const OLM_V1: &str = "/apis/olm.operatorframework.io/v1";

pub(crate) const CLUSTER_EXTENSIONS: Kind = Kind {
    prefix: OLM_V1,
    plural: "clusterextensions",
    resource: "clusterextensions.olm.operatorframework.io",
};
pub(crate) const CLUSTER_CATALOGS: Kind = Kind {
    prefix: OLM_V1,
    plural: "clustercatalogs",
    resource: "clustercatalogs.olm.operatorframework.io",
};

/// A client that only reads, and counts its calls.
pub(crate) struct Reader {
    client: kube::Client,
    /// The API server's URL, for the message when it cannot be reached.
    server: String,
    calls: AtomicUsize,
}

impl Reader {
    pub(crate) fn new(client: kube::Client, server: String) -> Reader {
        Reader {
            client,
            server,
            calls: AtomicUsize::new(0),
        }
    }

    /// How many API calls were made so far.
    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    /// Every object of `kind` in `namespace` (None: in every namespace).
    pub(crate) async fn list(
        &self,
        kind: Kind,
        namespace: Option<&str>,
    ) -> Result<Vec<Value>, Error> {
        let path = match namespace {
            Some(ns) => format!("{}/namespaces/{ns}/{}", kind.prefix, kind.plural),
            None => format!("{}/{}", kind.prefix, kind.plural),
        };
        let list = self.get_path(&path, "list", kind, namespace).await?;
        match list.get("items") {
            Some(Value::Array(items)) => Ok(items.clone()),
            Some(Value::Null) | None => Ok(Vec::new()),
            Some(_) => Err(Error::Api {
                path,
                message: "items is not a list".to_owned(),
            }),
        }
    }

    async fn get_path(
        &self,
        path: &str,
        verb: &'static str,
        kind: Kind,
        namespace: Option<&str>,
    ) -> Result<Value, Error> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let request = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| Error::Internal(format!("GET {path}: {e}")))?;
        let scope = match namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "cluster-wide".to_owned(),
        };
        match self.client.request::<Value>(request).await {
            Ok(v) => Ok(v),
            Err(kube::Error::Api(status)) => Err(match status.code {
                401 => Error::Unauthorized {
                    server: self.server.clone(),
                    message: status.message.clone(),
                },
                403 => Error::Forbidden {
                    verb,
                    resource: kind.resource,
                    scope,
                    message: status.message.clone(),
                },
                404 => Error::NotFound {
                    what: format!(
                        "{}: the API server does not serve it (is OLM installed?)",
                        kind.resource
                    ),
                },
                _ => Error::Api {
                    path: path.to_owned(),
                    message: format!("{} ({})", status.message, status.code),
                },
            }),
            Err(e) => Err(Error::Unreachable {
                server: self.server.clone(),
                message: with_causes(&e),
            }),
        }
    }
}

/// An error with the errors under it (`client error (Connect): tcp connect error: Connection
/// refused (os error 111)`): kube's own text stops at the outermost.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.contains(&next) {
            text = format!("{text}: {next}");
        }
        source = cause.source();
    }
    text
}
