use super::images::ImageArgs;
use super::serve::{HttpListenArgs, parse_duration};
use catalogd::{LeaseOptions, Options};
use clap::Args;
use cluster::Connection;
use std::path::PathBuf;
use std::time::Duration;

/// Run as catalogd: serve every ClusterCatalog of the cluster over the catalogd HTTP API.
///
/// Watches ClusterCatalogs (olm.operatorframework.io/v1), pulls each one's image (by digest,
/// or by tag, resolved again every pollIntervalMinutes), indexes it and serves it under
/// /catalogs/NAME/api/v1/{all,metas}; writes the status catalogd writes (resolvedSource by
/// digest, urls.base, lastUnpacked, conditions Progressing and Serving), honours
/// availabilityMode: Unavailable and removes served content on delete (finalizer
/// olm.operatorframework.io/delete-server-cache). A failed pull is retried, and the content
/// served before keeps being served meanwhile.
///
/// Any number of replicas may run: each serves every catalog; only the holder of the Lease
/// (--lease-namespace/--lease-name) writes status and finalizers. SIGTERM/SIGINT stop
/// gracefully (the Lease is released).
#[derive(Args)]
pub struct CatalogdArgs {
    /// Serve the catalogd API on this HOST:PORT (or port, on all interfaces).
    #[arg(long, value_name = "HOST:PORT", default_value = "8443")]
    http_addr: String,
    /// The kubeconfig file to use; $KUBECONFIG wins over it; without either, the pod's
    /// in-cluster configuration (service account).
    #[arg(short, long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// What goes before /catalogs/NAME in status.urls.base (catalogd's --external-address,
    /// with its scheme). Default: https://catalogd-service.olmv1-system.svc with
    /// --tls-cert-file, http://catalogd-service.olmv1-system.svc without.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The namespace of the Lease that says which replica writes status.
    #[arg(long, env = "POD_NAMESPACE", default_value = "olmv1-system")]
    lease_namespace: String,
    /// The Lease's name.
    #[arg(long, default_value = "catalogd-operator-lock")]
    lease_name: String,
    /// This replica's name in the Lease; unique among replicas. Default: the pod's name
    /// ($POD_NAME, else the host name) and the process id.
    #[arg(long, value_name = "NAME")]
    identity: Option<String>,
    /// How long downloads in flight may run after SIGTERM before they are cut.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    shutdown_grace: Duration,
    #[command(flatten)]
    http: HttpListenArgs,
    #[command(flatten)]
    read_limits: super::ReadLimitArgs,
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: CatalogdArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    super::exit_code(catalogd(args, use_http, skip_tls_verify))
}

fn catalogd(args: CatalogdArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    let base_url = args.base_url.clone().unwrap_or_else(|| {
        let scheme = if args.http.tls() { "https" } else { "http" };
        format!("{scheme}://catalogd-service.olmv1-system.svc")
    });
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(format!(
            "invalid --base-url {base_url:?}: the ClusterCatalog API takes only http:// or https:// URLs"
        ));
    }
    let identity = args.identity.clone().unwrap_or_else(|| {
        let pod = std::env::var("POD_NAME")
            .ok()
            .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
            .unwrap_or_else(|| "olm-registry".into());
        format!("{}_{}", pod.trim(), std::process::id())
    });
    let options = Options {
        http_addr: args.http_addr.clone(),
        base_url,
        http: args.http.options()?,
        image: args.image.options(use_http, skip_tls_verify),
        connection: Connection::choose(
            args.kubeconfig.as_deref(),
            std::env::var_os("KUBECONFIG").as_deref(),
        ),
        lease: LeaseOptions {
            namespace: args.lease_namespace.clone(),
            name: args.lease_name.clone(),
            identity,
        },
        read_limits: args.read_limits.limits(),
        grace: args.shutdown_grace,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let result = runtime.block_on(async {
        let shutdown = server::shutdown_signal();
        catalogd::run(options, shutdown).await
    });
    // An index build abandoned by the stop may still run on a blocking thread.
    runtime.shutdown_background();
    result.map_err(|e| e.to_string())
}
