//! `explain`: why a live cluster's Subscriptions are stuck, and what OLM will do next.
//!
//! The namespace's Subscriptions, CSVs, InstallPlans and OperatorGroup and the CatalogSources
//! it sees are read from the API server (GET only: explain never writes), the catalogs read
//! as `resolve` reads them (their address, else their image), the namespace resolved by the
//! classic resolver exactly as a `resolve` request would be, and the answer read against the
//! catalogs' content to name, per Subscription, the fact that forces the failure.
mod diagnose;
mod facts;
mod load;
mod namespace;
mod read;
mod report;
mod state;
mod v1;

use std::collections::BTreeMap;

use catalog::file::ReadLimits;
use cluster::Connection;
use image::ClientOptions;
use serde_json::Value;
use unfinished::Unfinished;

pub use report::{
    CatalogReport, CauseKind, Condition, ExtensionReport, NamespaceReport, NextBundle, OlmView,
    PlannedInstall, Report, SubscriptionReport, Verdict,
};

use read::{
    CATALOG_SOURCES, CLUSTER_CATALOGS, CLUSTER_EXTENSIONS, CSVS, INSTALL_PLANS, OPERATOR_GROUPS,
    Reader, SUBSCRIPTIONS,
};
use state::{Namespace, Source, field};

/// Which Subscriptions to explain.
#[derive(Clone, Debug)]
pub enum Scope {
    /// One namespace (None: the kubeconfig context's, else `default`); one Subscription of
    /// it, or all.
    Namespace {
        namespace: Option<String>,
        subscription: Option<String>,
    },
    /// Every namespace that has Subscriptions.
    AllNamespaces,
    /// One ClusterExtension (OLM v1).
    ClusterExtension(String),
}

pub struct Options<'a> {
    pub connection: &'a Connection,
    pub scope: Scope,
    /// OLM's global catalog namespace (`olm` upstream, `openshift-marketplace` on OpenShift).
    pub global_namespace: String,
    pub images: &'a ClientOptions,
    pub unfinished: &'a Unfinished,
    pub limits: ReadLimits,
}

/// Why nothing could be explained. Each is bad input or an unusable cluster, not a stuck
/// Subscription.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kubeconfig or in-cluster configuration (boxed: kube's errors are large).
    #[error("{0}")]
    Connect(Box<cluster::Error>),
    #[error("cannot reach the API server at {server}: {message}")]
    Unreachable { server: String, message: String },
    #[error("the API server at {server} does not accept these credentials: {message}")]
    Unauthorized { server: String, message: String },
    #[error(
        "no permission to {verb} {resource} {scope}: explain needs get and list on the OLM \
         objects it reads ({message})"
    )]
    Forbidden {
        verb: &'static str,
        resource: &'static str,
        scope: String,
        message: String,
    },
    #[error("not found: {what}")]
    NotFound { what: String },
    #[error("GET {path}: {message}")]
    Api { path: String, message: String },
    #[error("{0}")]
    Catalog(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// Explains the Subscriptions of `options.scope`.
pub fn explain(options: &Options<'_>) -> Result<Report, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("starting the runtime: {e}")))?;
    let pulls = load::Pulls {
        options: options.images,
        unfinished: options.unfinished,
        limits: options.limits,
    };
    if let Scope::ClusterExtension(name) = &options.scope {
        let (ext, catalogs, calls) = runtime.block_on(read_extension(options, name))?;
        drop(runtime);
        let catalogs: Vec<v1::ClusterCatalog> = catalogs
            .iter()
            .map(v1::ClusterCatalog::from_object)
            .collect();
        return Ok(Report {
            api_calls: calls,
            namespaces: Vec::new(),
            cluster_extensions: vec![v1::explain(&ext, &catalogs, &pulls)?],
        });
    }
    let (namespaces, calls) = runtime.block_on(read_cluster(options))?;
    drop(runtime);
    let wanted: Vec<&Source> = {
        let mut seen = BTreeMap::new();
        for ns in &namespaces {
            for s in ns.visible_sources(&options.global_namespace) {
                seen.entry(s.key()).or_insert(s);
            }
        }
        seen.into_values().collect()
    };
    let contents = load::read_all(&wanted, &pulls)?;
    let only = match &options.scope {
        Scope::Namespace { subscription, .. } => subscription.as_deref(),
        _ => None,
    };
    let mut reports = Vec::new();
    for ns in &namespaces {
        reports.push(namespace::explain(
            ns,
            &options.global_namespace,
            &contents,
            only,
        )?);
    }
    Ok(Report {
        api_calls: calls,
        namespaces: reports,
        cluster_extensions: Vec::new(),
    })
}

/// A reader of the API server `options` name, and the configuration's default namespace.
async fn connect(options: &Options<'_>) -> Result<(Reader, String), Error> {
    let config = options
        .connection
        .config()
        .await
        .map_err(|e| Error::Connect(Box::new(e)))?;
    let server = config.cluster_url.to_string();
    let default_namespace = config.default_namespace.clone();
    let client = kube::Client::try_from(config)
        .map_err(|source| Error::Connect(Box::new(cluster::Error::Client { source })))?;
    Ok((Reader::new(client, server), default_namespace))
}

/// ClusterExtension `name` and every ClusterCatalog, and the calls it took.
async fn read_extension(
    options: &Options<'_>,
    name: &str,
) -> Result<(Value, Vec<Value>, usize), Error> {
    let (reader, _) = connect(options).await?;
    let ext = reader
        .list(CLUSTER_EXTENSIONS, None)
        .await?
        .into_iter()
        .find(|e| field(e, "/metadata/name") == name)
        .ok_or_else(|| Error::NotFound {
            what: format!("ClusterExtension {name}"),
        })?;
    let catalogs = reader.list(CLUSTER_CATALOGS, None).await?;
    Ok((ext, catalogs, reader.calls()))
}

/// The namespaces to explain, with everything read about them, and the calls it took.
async fn read_cluster(options: &Options<'_>) -> Result<(Vec<Namespace>, usize), Error> {
    let (reader, default_namespace) = connect(options).await?;
    let global = options.global_namespace.as_str();
    let namespaces = match &options.scope {
        Scope::Namespace {
            namespace,
            subscription,
        } => {
            let name = namespace.clone().unwrap_or(default_namespace);
            let ns = read_namespace(&reader, &name, global).await?;
            if let Some(wanted) = subscription
                && !ns
                    .subscriptions
                    .iter()
                    .any(|s| field(s, "/metadata/name") == wanted)
            {
                return Err(Error::NotFound {
                    what: format!("subscription {wanted} in namespace {name}"),
                });
            }
            vec![ns]
        }
        _ => read_everything(&reader).await?,
    };
    Ok((namespaces, reader.calls()))
}

/// One namespace: five lists in it, and the global namespace's CatalogSources.
async fn read_namespace(reader: &Reader, name: &str, global: &str) -> Result<Namespace, Error> {
    let mut catalogs = reader.list(CATALOG_SOURCES, Some(name)).await?;
    if name != global {
        catalogs.extend(reader.list(CATALOG_SOURCES, Some(global)).await?);
    }
    Ok(Namespace {
        name: name.to_owned(),
        subscriptions: reader.list(SUBSCRIPTIONS, Some(name)).await?,
        csvs: reader.list(CSVS, Some(name)).await?,
        install_plans: reader.list(INSTALL_PLANS, Some(name)).await?,
        operator_groups: reader.list(OPERATOR_GROUPS, Some(name)).await?,
        catalogs: catalogs.iter().map(Source::from_object).collect(),
    })
}

/// Every namespace with Subscriptions, from five cluster-wide lists.
async fn read_everything(reader: &Reader) -> Result<Vec<Namespace>, Error> {
    let subscriptions = reader.list(SUBSCRIPTIONS, None).await?;
    let csvs = reader.list(CSVS, None).await?;
    let plans = reader.list(INSTALL_PLANS, None).await?;
    let groups = reader.list(OPERATOR_GROUPS, None).await?;
    let catalogs: Vec<Source> = reader
        .list(CATALOG_SOURCES, None)
        .await?
        .iter()
        .map(Source::from_object)
        .collect();
    let mut by_name: BTreeMap<String, Namespace> = BTreeMap::new();
    for s in subscriptions {
        let ns = field(&s, "/metadata/namespace").to_owned();
        by_name
            .entry(ns.clone())
            .or_insert_with(|| Namespace {
                name: ns,
                ..Namespace::default()
            })
            .subscriptions
            .push(s);
    }
    let in_ns = |list: &[Value], ns: &str| -> Vec<Value> {
        list.iter()
            .filter(|o| field(o, "/metadata/namespace") == ns)
            .cloned()
            .collect()
    };
    for ns in by_name.values_mut() {
        ns.csvs = in_ns(&csvs, &ns.name);
        ns.install_plans = in_ns(&plans, &ns.name);
        ns.operator_groups = in_ns(&groups, &ns.name);
        ns.catalogs = catalogs.clone();
    }
    Ok(by_name.into_values().collect())
}
