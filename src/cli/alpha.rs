//! `alpha`: opm's alpha commands. opm hides the group from its help; ours lists it, since a
//! cluster admin reading `--help` should find what OLM runs. Each opm sub-group (`bundle`,
//! `list`, ...) is one variant of [`AlphaCommand`].
use super::images::ImageArgs;
use author::list::{ListError, Listing, list_reference};
use bundle::configmap::{DEFAULT_DATA_LIMIT, Options};
use clap::{Args, Subcommand};
use cluster::{Connection, Extract, extract_bundle};
use std::path::PathBuf;

/// opm's alpha commands.
#[derive(Args)]
pub struct AlphaArgs {
    #[command(subcommand)]
    command: AlphaCommand,
}

#[derive(Subcommand)]
enum AlphaCommand {
    /// Operator bundle commands.
    Bundle {
        #[command(subcommand)]
        command: BundleCommand,
    },
    /// List the contents of a catalog as a table.
    ///
    /// Meant for reading, as opm's: the columns may change; use `render` to process a catalog.
    List(ListArgs),
}

#[derive(Args)]
pub struct ListArgs {
    #[command(subcommand)]
    command: ListCommand,
}

#[derive(Subcommand)]
enum ListCommand {
    /// List the packages of a catalog: name, display name (from the default channel head's
    /// CSV, when the catalog carries CSVs as olm.bundle.object) and default channel.
    Packages {
        #[command(flatten)]
        catalog: ListedCatalog,
    },
    /// List the channels of a catalog, or of one of its packages, with their heads.
    Channels {
        #[command(flatten)]
        catalog: ListedCatalog,
        /// Only this package.
        #[arg(value_name = "packageName")]
        package: Option<String>,
    },
    /// List the bundles of a catalog, or of one of its packages: one row per channel a bundle
    /// is in, with its replaces, skips, skipRange and image.
    Bundles {
        #[command(flatten)]
        catalog: ListedCatalog,
        /// Only this package.
        #[arg(value_name = "packageName")]
        package: Option<String>,
    },
}

/// The catalog a list command reads, and how.
#[derive(Args)]
struct ListedCatalog {
    /// The catalog: an FBC directory, a legacy index.db, or a catalog or legacy index image
    /// (registry reference or oci:DIR[:TAG]). It must be valid; bundles are refused.
    #[arg(value_name = "indexRef")]
    reference: String,
    #[command(flatten)]
    read_limits: super::ReadLimitArgs,
    #[command(flatten)]
    image: ImageArgs,
}

#[derive(Subcommand)]
enum BundleCommand {
    Extract(ExtractArgs),
}

/// Write a bundle directory's files into an existing ConfigMap, as OLM's bundle unpack Job
/// runs it (`opm alpha bundle extract -m /bundle/ -n NS -c NAME -z`): one key per file of
/// manifests/ and metadata/, metadata/annotations.yaml as the ConfigMap's annotations. The
/// ConfigMap's labels and owner references are kept.
#[derive(Args)]
pub struct ExtractArgs {
    /// The bundle directory, holding manifests/ and metadata/.
    #[arg(short = 'm', long = "manifestsdir", default_value = "/")]
    manifests_dir: PathBuf,
    /// The ConfigMap to write; it must exist.
    #[arg(short = 'c', long = "configmapname")]
    configmap_name: String,
    /// The ConfigMap's namespace.
    #[arg(
        short = 'n',
        long,
        default_value = "openshift-operator-lifecycle-manager"
    )]
    namespace: String,
    /// The most bytes all files together may store (after compression with -z); a larger
    /// bundle is an error and nothing is written. Sizes take K, M or G (binary units).
    #[arg(short = 'l', long = "datalimit", default_value_t = DEFAULT_DATA_LIMIT, value_parser = super::serve::parse_size)]
    data_limit: u64,
    /// Store each file gzip-compressed and base64-encoded under binaryData (annotated
    /// olm.contentEncoding: gzip+base64), as OLM's unpack Job does.
    #[arg(short = 'z', long)]
    gzip: bool,
    /// A kubeconfig file; without one (and without $KUBECONFIG, which wins as in opm) the
    /// pod's in-cluster service account is used.
    #[arg(short = 'k', long)]
    kubeconfig: Option<PathBuf>,
    /// Log at debug level.
    #[arg(long)]
    debug: bool,
}

impl AlphaArgs {
    /// Whether the command asks for debug logs.
    pub fn debug(&self) -> bool {
        match &self.command {
            AlphaCommand::Bundle {
                command: BundleCommand::Extract(args),
            } => args.debug,
            AlphaCommand::List(_) => false,
        }
    }
}

pub fn run(args: AlphaArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    match args.command {
        AlphaCommand::Bundle {
            command: BundleCommand::Extract(args),
        } => super::exit_code(extract(args)),
        AlphaCommand::List(args) => super::exit_code(list(&args, use_http, skip_tls_verify)),
    }
}

fn list(args: &ListArgs, use_http: bool, skip_tls_verify: bool) -> Result<(), String> {
    let (catalog, what) = match &args.command {
        ListCommand::Packages { catalog } => (catalog, Listing::Packages),
        ListCommand::Channels { catalog, package } => (catalog, Listing::Channels(package.clone())),
        ListCommand::Bundles { catalog, package } => (catalog, Listing::Bundles(package.clone())),
    };
    let mut images = catalog.image.images(use_http, skip_tls_verify);
    let limits = catalog.read_limits.limits();
    let table = list_reference(&mut images, limits, &catalog.reference, &what)
        .map_err(|e: ListError| e.to_string())?;
    print_table(&table)
}

/// Writes a listing to stdout.
pub(super) fn print_table(table: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(table.as_bytes()).and_then(|()| out.flush()) {
        // A reader that stops early (`| head`) is not an error worth a message.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("writing output: {e}")),
        _ => Ok(()),
    }
}

fn extract(args: ExtractArgs) -> Result<(), String> {
    let env = std::env::var_os("KUBECONFIG");
    let connection = Connection::choose(args.kubeconfig.as_deref(), env.as_deref());
    // OLM's unpack Job names the bundle image here; opm records it on the ConfigMap.
    let source_image = std::env::var("CONTAINER_IMAGE").ok();
    let request = Extract {
        dir: &args.manifests_dir,
        namespace: &args.namespace,
        name: &args.configmap_name,
        options: Options {
            gzip: args.gzip,
            data_limit: args.data_limit,
        },
        source_image: source_image.as_deref(),
        connection: &connection,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))?;
    runtime
        .block_on(extract_bundle(&request))
        .map(|_| ())
        .map_err(|e| e.to_string())
}
