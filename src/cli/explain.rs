//! `explain`: why a live cluster's Subscriptions are stuck and what OLM will do next. The
//! reading, resolving and diagnosis are [`explain`]'s; this parses flags and prints.
use super::images::ImageArgs;
use catalog::file::ReadLimits;
use clap::{Args, ValueEnum};
use cluster::Connection;
use explain::{Options, Scope};
use std::io::Write as _;
use std::path::PathBuf;
use unfinished::Unfinished;

/// Explain, from a live cluster, why Subscriptions (or an OLM v1 ClusterExtension) do not
/// install or upgrade, and what OLM will do next.
///
/// Reads (get/list only; nothing is written) the namespace's Subscriptions, CSVs,
/// InstallPlans and OperatorGroup and the CatalogSources it sees; reads each catalog through
/// its address, else pulls its image; resolves the namespace as OLM's catalog operator does;
/// and prints, per Subscription, the bundles OLM installs next, or the chain of facts that
/// keeps it stuck. Exits 0 when every Subscription will progress (or is up to date), 1 when
/// one is stuck, 2 when the cluster or a catalog cannot be read.
#[derive(Args)]
pub struct ExplainArgs {
    /// A Subscription of the namespace (default: all of them), or `clusterextension NAME`
    /// for an OLM v1 ClusterExtension.
    #[arg(num_args = 1..=2, value_names = ["SUBSCRIPTION", "NAME"])]
    target: Vec<String>,
    /// The kubeconfig (default $KUBECONFIG, else the pod's service account).
    #[arg(short, long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// The namespace (default: the kubeconfig context's, else `default`).
    #[arg(short, long, conflicts_with = "all_namespaces")]
    namespace: Option<String>,
    /// Every Subscription of the namespace (the default when none is named).
    #[arg(long, conflicts_with = "target")]
    all: bool,
    /// Every namespace that has Subscriptions.
    #[arg(short = 'A', long, conflicts_with = "target")]
    all_namespaces: bool,
    /// OLM's global catalog namespace, whose CatalogSources every namespace sees.
    #[arg(long, default_value = "olm")]
    global_namespace: String,
    /// The output format; json and yaml follow the schema in the README.
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Also print the catalogs read and the number of API calls.
    #[arg(short, long)]
    verbose: bool,
    #[command(flatten)]
    image: ImageArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Output {
    Text,
    Json,
    Yaml,
}

pub fn run(args: ExplainArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    let connection = match args.kubeconfig.clone().or_else(|| {
        std::env::var_os("KUBECONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }) {
        Some(path) => Connection::Kubeconfig(path),
        None => Connection::InCluster,
    };
    let scope = match args.target.as_slice() {
        _ if args.all_namespaces => Scope::AllNamespaces,
        [kind, name] if kind == "clusterextension" => Scope::ClusterExtension(name.clone()),
        [other, _] => {
            eprintln!("error: {other:?}: give one Subscription, or `clusterextension NAME`");
            return 2;
        }
        one => Scope::Namespace {
            namespace: args.namespace.clone(),
            subscription: one.first().cloned(),
        },
    };
    let images = args.image.options(use_http, skip_tls_verify);
    let unfinished = Unfinished::new();
    let options = Options {
        connection: &connection,
        scope,
        global_namespace: args.global_namespace.clone(),
        images: &images,
        unfinished: &unfinished,
        limits: ReadLimits::default(),
    };
    let report = match explain::explain(&options) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let text = match args.output {
        Output::Text => Ok(report.text(args.verbose)),
        Output::Json => serde_json::to_string_pretty(&report)
            .map(|s| s + "\n")
            .map_err(|e| e.to_string()),
        Output::Yaml => serde_yaml::to_string(&report).map_err(|e| e.to_string()),
    };
    let written = text.and_then(|t| {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(t.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|e| e.to_string())
    });
    if let Err(e) = written {
        eprintln!("error: writing the report: {e}");
        return 2;
    }
    if report.stuck() { 1 } else { 0 }
}
