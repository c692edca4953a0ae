//! The command line. Each command is a thin call into the modules that do the work; where
//! opm has the same command, its flags and defaults are accepted (opm-cli.md).
mod add;
mod alpha;
mod build;
mod catalogd;
mod copy;
mod diff;
mod explain;
mod generate;
mod images;
mod init;
mod migrate;
mod mirror;
mod probe;
mod render;
mod render_graph;
mod resolve;
mod serve;
mod telemetry;
mod template;
mod validate;

use catalog::file::ReadLimits;
use clap::{Args, Parser, Subcommand};
use std::io::IsTerminal;
use telemetry::Telemetry;

/// How much of a catalog's files a command reads.
#[derive(Args)]
struct ReadLimitArgs {
    /// Largest catalog file read; a larger one is an error naming it. Sizes take K, M or G
    /// (binary units).
    #[arg(long, default_value = "256M", value_parser = serve::parse_size)]
    max_file_size: u64,
}

impl ReadLimitArgs {
    /// The limits every catalog read of the command is given.
    fn limits(&self) -> ReadLimits {
        ReadLimits {
            max_file_size: self.max_file_size,
        }
    }
}

#[derive(Parser)]
#[command(
    name = "olm-registry",
    version,
    about = "Operator Lifecycle Manager catalog registry: serve, validate, render, build, resolve and mirror operator catalogs",
    long_about = "Operator Lifecycle Manager catalog registry.\n\n\
        Serves file-based catalogs over the Operator Registry gRPC API (a drop-in for `opm serve` in a \
        CatalogSource pod); validates, renders and migrates catalogs from any source (FBC, bundle \
        directories and images, package manifests, legacy index.db); builds and pushes bundle and \
        catalog images without a container engine; resolves subscriptions against catalogs (also as a \
        gRPC service of `serve`); mirrors catalogs and every image they reference to another registry \
        or to disk for disconnected clusters. Logs go to stderr; RUST_LOG overrides the level."
)]
struct Cli {
    /// Skip TLS certificate verification for container image registries.
    #[arg(long, global = true)]
    skip_tls_verify: bool,
    /// Use plain HTTP for every container image registry (see --insecure-registry for one).
    #[arg(long, global = true)]
    use_http: bool,
    /// Deprecated in opm: use --use-http and --skip-tls-verify instead.
    #[arg(long, global = true, hide = true)]
    skip_tls: bool,
    /// Log lines as text, or as one JSON object per line (timestamp, level, message, fields)
    /// for log collectors.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Serve(Box<serve::ServeArgs>),
    Catalogd(Box<catalogd::CatalogdArgs>),
    Validate(validate::ValidateArgs),
    Init(init::InitArgs),
    Render(render::RenderArgs),
    RenderGraph(render_graph::RenderGraphArgs),
    RenderTemplate(template::RenderTemplateArgs),
    ConvertTemplate(template::ConvertTemplateArgs),
    Migrate(migrate::MigrateArgs),
    Generate(generate::GenerateArgs),
    Build(build::BuildArgs),
    Add(add::AddArgs),
    Resolve(resolve::ResolveArgs),
    Explain(Box<explain::ExplainArgs>),
    Mirror(Box<mirror::MirrorArgs>),
    Diff(diff::DiffArgs),
    Alpha(alpha::AlphaArgs),
    /// Check a server's health like grpc_health_probe (also runs when invoked as `grpc_health_probe`).
    HealthProbe {
        /// grpc_health_probe flags, e.g. -addr=:50051 -service=Registry -connect-timeout=1s -rpc-timeout=1s;
        /// or -http=URL for an HTTP(S) check (exit 0 on 2xx, 4 on another status).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Print the version.
    Version,
}

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let args: Vec<String> = std::env::args().collect();
    let program = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .and_then(|n| n.to_str());
    // The names a catalog image links to this binary for OLM's pods (see crates/source's
    // build.rs): its probe, and the utility image's tools.
    match program {
        Some(probe::PROGRAM) => return probe::run(&args[1..]),
        Some("copy-content") => return copy::copy_content(&args[1..]),
        Some("cp") => return copy::cp(&args[1..]),
        Some("cpb") => return copy::cpb(&args[1..]),
        _ => {}
    }
    // Under any other name (`opm` included: OLM's bundle unpack Job runs
    // `opm alpha bundle extract`) the command line is the same; clap names the program in
    // usage lines after argv[0].
    let cli = Cli::parse();
    let debug = match &cli.command {
        Command::Serve(a) => a.debug,
        Command::Alpha(a) => a.debug(),
        _ => false,
    };
    let telemetry = init_logging(debug, cli.log_format);
    let code = run(cli);
    if let Some(t) = telemetry {
        t.shutdown();
    }
    code
}

fn run(cli: Cli) -> i32 {
    if cli.skip_tls && (cli.use_http || cli.skip_tls_verify) {
        tracing::error!("--skip-tls cannot be combined with --use-http or --skip-tls-verify");
        return 1;
    }
    if cli.use_http && cli.skip_tls_verify {
        tracing::error!("--use-http and --skip-tls-verify cannot both be set");
        return 1;
    }
    match cli.command {
        Command::Serve(args) => serve::run(*args, cli.use_http, cli.skip_tls_verify),
        Command::Catalogd(args) => catalogd::run(*args, cli.use_http, cli.skip_tls_verify),
        Command::Build(args) => build::run(args, cli.use_http, cli.skip_tls_verify),
        Command::Add(args) => add::run(args, cli.use_http, cli.skip_tls_verify),
        Command::Validate(args) => validate::run(args),
        Command::Render(args) => render::run(args, cli.use_http, cli.skip_tls_verify),
        Command::Migrate(args) => migrate::run(args),
        Command::RenderGraph(args) => render_graph::run(args, cli.use_http, cli.skip_tls_verify),
        Command::RenderTemplate(args) => {
            template::run_render(args, cli.use_http, cli.skip_tls_verify)
        }
        Command::ConvertTemplate(args) => template::run_convert(args),
        Command::Resolve(args) => resolve::run(args, cli.use_http, cli.skip_tls_verify),
        Command::Explain(args) => explain::run(*args, cli.use_http, cli.skip_tls_verify),
        Command::Mirror(args) => mirror::run(*args, cli.use_http, cli.skip_tls_verify),
        Command::Diff(args) => diff::run(args, cli.use_http, cli.skip_tls_verify),
        Command::Alpha(args) => alpha::run(args, cli.use_http, cli.skip_tls_verify),
        Command::Init(args) => init::run(args),
        Command::Generate(args) => generate::run(args),
        Command::HealthProbe { args } => probe::run(&args),
        Command::Version => {
            println!("olm-registry {}", env!("CARGO_PKG_VERSION"));
            0
        }
    }
}

/// The exit code of a command that reports its failure as one message: printed, then 1.
fn exit_code(result: Result<(), impl std::fmt::Display>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("error: {message}");
            1
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Logs to stderr, plus traces when [`Telemetry`] is on (returned, to be flushed at exit).
fn init_logging(debug: bool, format: LogFormat) -> Option<Telemetry> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let default = if debug { "debug" } else { "info" };
    let directive = |d: &str| d.parse().expect("a valid directive");
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
        // The TLS verifier logs certificate failures itself; our error already says it, once.
        .add_directive(directive("rustls_platform_verifier=off"))
        .add_directive(directive(&format!("{}=off", store::SPAN_TARGET)));
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false);
    let logs = match format {
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).boxed(),
        // Fields at the top level beside "message", where collectors look for them without
        // configuration; no ANSI colour codes inside JSON strings.
        LogFormat::Json => logs
            .json()
            .flatten_event(true)
            .with_ansi(false)
            .with_current_span(false)
            .boxed(),
    };
    let (telemetry, problem) = match Telemetry::from_env() {
        None => (None, None),
        Some(Ok(t)) => (Some(t), None),
        Some(Err(e)) => (None, Some(e)),
    };
    let traces = telemetry.as_ref().map(|t| {
        t.layer().with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target(env!("CARGO_CRATE_NAME"), tracing::Level::INFO),
        )
    });
    tracing_subscriber::registry()
        .with(logs.with_filter(filter))
        .with(traces)
        .init();
    if let Some(e) = problem {
        tracing::warn!("traces are off: {e}");
    }
    telemetry
}

/// `-o/--output` of render and validate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Json,
    Yaml,
}
