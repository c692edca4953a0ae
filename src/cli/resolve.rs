//! `resolve`: what OLM would install or upgrade to for a namespace's subscriptions (classic)
//! or for ClusterExtensions (v1), from a request file, with the reasons, or why nothing fits.
//! The request, its loading and the answer are [`resolve::service`]'s; this prints.
use super::Format;
use super::images::ImageArgs;
use catalog::file::ReadLimits;
use clap::Args;
use resolve::service::report;
use server::resolution::resolve_file;
use std::io::Write as _;
use std::path::PathBuf;
use unfinished::Unfinished;

/// Resolve subscriptions (OLM classic) or ClusterExtensions (OLM v1) against catalogs.
///
/// The request file (YAML or JSON) names the catalogs (FBC directories, relative to the
/// file, images, or catalog servers by address), the installed operators, the
/// subscriptions or v1 requests, and optionally the cluster's state for the safety checks;
/// see examples/resolve-*.yaml. Prints the bundles to install or upgrade to, one step at a
/// time, with the dependencies pulled in and why, or the facts that conflict. Exits 1 when
/// there is no resolution.
#[derive(Args)]
pub struct ResolveArgs {
    /// The request file.
    request: PathBuf,
    /// Machine-readable output instead of the report.
    #[arg(short, long, value_enum)]
    output: Option<Format>,
    #[command(flatten)]
    image: ImageArgs,
}

pub fn run(args: ResolveArgs, use_http: bool, skip_tls_verify: bool) -> i32 {
    let images = args.image.options(use_http, skip_tls_verify);
    let unfinished = Unfinished::new();
    let outcome = match resolve_file(&args.request, &images, &unfinished, ReadLimits::default()) {
        Ok(outcome) => outcome,
        Err(message) => {
            eprintln!("error: {}: {message}", args.request.display());
            return 1;
        }
    };
    let text = match args.output {
        None => report(&outcome),
        Some(Format::Json) => serde_json::to_string_pretty(&outcome)
            .map(|s| s + "\n")
            .unwrap_or_else(|e| format!("error: {e}\n")),
        Some(Format::Yaml) => {
            serde_yaml::to_string(&outcome).unwrap_or_else(|e| format!("error: {e}\n"))
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        eprintln!("error: writing output: {e}");
        return 1;
    }
    if outcome.resolved() { 0 } else { 1 }
}
