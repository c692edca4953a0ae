//! Talking to a Kubernetes API server, for the commands that OLM runs inside a cluster:
//! the client configuration ([`Connection`]: a kubeconfig file or the pod's service account)
//! and the ConfigMap of a bundle unpack Job ([`extract_bundle`]). What goes into that
//! ConfigMap is the `bundle` crate's ([`bundle::configmap`]); this crate only writes it.
use bundle::configmap::{self, Content};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::config::{Config, InClusterError, KubeConfigOptions, Kubeconfig, KubeconfigError};
use std::path::{Path, PathBuf};

/// Where the API server's address and credentials come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Connection {
    /// A kubeconfig file (its current context).
    Kubeconfig(PathBuf),
    /// The pod's own: `KUBERNETES_SERVICE_HOST`/`KUBERNETES_SERVICE_PORT` and the service
    /// account files under `/var/run/secrets/kubernetes.io/serviceaccount/`.
    InCluster,
}

impl Connection {
    /// opm's choice: `$KUBECONFIG` when set (it wins over the flag, as in opm), else the
    /// `--kubeconfig` flag when not empty, else the in-cluster configuration.
    pub fn choose(flag: Option<&Path>, env: Option<&std::ffi::OsStr>) -> Connection {
        match (env.filter(|e| !e.is_empty()), flag) {
            (Some(env), _) => Connection::Kubeconfig(PathBuf::from(env)),
            (None, Some(flag)) if !flag.as_os_str().is_empty() => {
                Connection::Kubeconfig(flag.to_owned())
            }
            _ => Connection::InCluster,
        }
    }

    /// A client for this configuration.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        let config = self.config().await?;
        kube::Client::try_from(config).map_err(|source| Error::Client { source })
    }

    /// The configuration: the API server's URL, credentials and default namespace.
    pub async fn config(&self) -> Result<Config, Error> {
        // The TLS of every client in this program is rustls with ring; kube builds its
        // rustls configuration with the process default, so make sure there is one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let config = match self {
            Connection::Kubeconfig(path) => {
                let kubeconfig =
                    Kubeconfig::read_from(path).map_err(|source| Error::Kubeconfig {
                        path: path.clone(),
                        source,
                    })?;
                Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                    .await
                    .map_err(|source| Error::Kubeconfig {
                        path: path.clone(),
                        source,
                    })?
            }
            Connection::InCluster => {
                Config::incluster().map_err(|source| Error::InCluster { source })?
            }
        };
        Ok(config)
    }
}

/// Why the ConfigMap could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bundle directory cannot be stored (nothing was written).
    #[error(transparent)]
    Bundle(#[from] configmap::Error),
    #[error("kubeconfig {}: {source}", path.display())]
    Kubeconfig {
        path: PathBuf,
        source: KubeconfigError,
    },
    #[error(
        "in-cluster configuration (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT and \
         /var/run/secrets/kubernetes.io/serviceaccount/; or pass -k/--kubeconfig): {source}"
    )]
    InCluster { source: InClusterError },
    #[error("Kubernetes client: {source}")]
    Client { source: kube::Error },
    #[error(
        "ConfigMap {namespace}/{name} not found: it must exist before the bundle is extracted \
         into it (OLM creates it, owned by the CatalogSource, before it starts the unpack Job)"
    )]
    NotFound { namespace: String, name: String },
    #[error("ConfigMap {namespace}/{name}: {action}: {}", api_message(source))]
    Api {
        namespace: String,
        name: String,
        action: &'static str,
        source: kube::Error,
    },
}

/// The API server's own message for an API error (kube's text repeats it with a debug dump).
fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("{} ({})", status.message, status.code),
        other => other.to_string(),
    }
}

/// What `opm alpha bundle extract` is asked to do.
#[derive(Clone, Debug)]
pub struct Extract<'a> {
    /// The bundle directory: `manifests/` and `metadata/`.
    pub dir: &'a Path,
    pub namespace: &'a str,
    /// The ConfigMap, which must exist.
    pub name: &'a str,
    pub options: configmap::Options,
    /// The bundle image (the unpack Job's `CONTAINER_IMAGE`), recorded as `olm.sourceImage`.
    pub source_image: Option<&'a str>,
    pub connection: &'a Connection,
}

/// How many times the ConfigMap is read and replaced when someone else changes it in between
/// (OLM may relabel it while the Job runs); each attempt starts from what is stored then.
const ATTEMPTS: usize = 5;

/// Writes the bundle directory into its ConfigMap as opm does: the bundle is read first (a
/// bundle that cannot be stored, over the data limit say, leaves the ConfigMap untouched),
/// then the existing ConfigMap's data, binary data and annotations are replaced; its labels,
/// owner references and everything else stay. Returns the content written.
pub async fn extract_bundle(request: &Extract<'_>) -> Result<Content, Error> {
    let content = configmap::read(request.dir, request.options)?;
    let client = request.connection.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, request.namespace);
    let failed = |action, source| Error::Api {
        namespace: request.namespace.to_owned(),
        name: request.name.to_owned(),
        action,
        source,
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut stored = match api.get(request.name).await {
            Ok(cm) => cm,
            Err(kube::Error::Api(s)) if s.is_not_found() => {
                return Err(Error::NotFound {
                    namespace: request.namespace.to_owned(),
                    name: request.name.to_owned(),
                });
            }
            Err(e) => return Err(failed("reading it", e)),
        };
        stored.data = Some(content.data.clone());
        stored.binary_data = Some(
            content
                .binary_data
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.clone())))
                .collect(),
        );
        let existing = stored.metadata.annotations.take().unwrap_or_default();
        stored.metadata.annotations =
            Some(content.annotations_over(existing, request.options.gzip, request.source_image));
        match api
            .replace(request.name, &PostParams::default(), &stored)
            .await
        {
            Ok(_) => break,
            Err(kube::Error::Api(s)) if s.is_conflict() && attempt < ATTEMPTS => {
                tracing::debug!(attempt, "ConfigMap changed while being written; again");
            }
            Err(e) => return Err(failed("writing it", e)),
        }
    }
    tracing::info!(
        namespace = request.namespace,
        name = request.name,
        keys = content.data.len() + content.binary_data.len(),
        bytes = content.size,
        "bundle written to its ConfigMap"
    );
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn kubeconfig_env_wins_as_in_opm() {
        let flag = Path::new("/flag");
        assert_eq!(
            Connection::choose(Some(flag), Some(OsStr::new("/env"))),
            Connection::Kubeconfig("/env".into())
        );
        assert_eq!(
            Connection::choose(Some(flag), Some(OsStr::new(""))),
            Connection::Kubeconfig("/flag".into())
        );
        assert_eq!(
            Connection::choose(Some(Path::new("")), None),
            Connection::InCluster
        );
        assert_eq!(Connection::choose(None, None), Connection::InCluster);
    }
}
