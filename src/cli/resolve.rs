//! `resolve`: what OLM would install or upgrade to for a namespace's subscriptions (classic)
//! or for ClusterExtensions (v1), from a request file, with the reasons, or why nothing fits.
//! The request and the answer are [`crate::resolve::service`]'s; this reads the file, loads
//! the catalogs it names and prints.
use super::Format;
use super::images::ImageArgs;
use crate::resolve::service::{self, Catalog, Error, Request, Sources, load_catalogs, report};
use crate::source::{RemoteCatalogs, RemoteLimits};
use clap::Args;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    let base = args.request.parent().unwrap_or(Path::new("."));
    let outcome = match load_request(&args.request)
        .and_then(|req| resolve(&req, base, &args.image, use_http, skip_tls_verify))
    {
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

/// JSON is YAML, so one parser reads both; its errors name the field path and line.
fn load_request(path: &Path) -> Result<Request, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading: {e}"))?;
    let req: Request = serde_yaml::from_str(&text).map_err(|e| e.to_string())?;
    req.validate()?;
    for (i, c) in req.catalogs.iter().enumerate() {
        let given = [&c.directory, &c.image, &c.address]
            .iter()
            .filter(|s| s.is_some())
            .count();
        if given != 1 {
            return Err(format!(
                "catalogs[{i}] ({}): exactly one of directory, image and address is required",
                c.name
            ));
        }
    }
    Ok(req)
}

/// Loads the catalogs the request names and resolves it. Catalog servers are read and
/// images pulled on a runtime of one worker; the resolution runs outside it, where the
/// manifests of catalog servers are fetched on demand.
fn resolve(
    req: &Request,
    base: &Path,
    image: &ImageArgs,
    use_http: bool,
    skip_tls_verify: bool,
) -> Result<service::Outcome, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    let remote = RemoteCatalogs::new(Duration::MAX, RemoteLimits::default(), Catalog::remote);
    let options = image.options(use_http, skip_tls_verify);
    let sources = Sources {
        base,
        images: Some(&options),
        remote: &remote,
    };
    // Every catalog has a directory, image or address (checked by load_request).
    let own = async || Err(Error::Internal("no catalog of a server here".into()));
    let catalogs = runtime
        .block_on(load_catalogs(req, &sources, own))
        .map_err(|e| e.to_string())?;
    service::resolve_request(req, &catalogs).map_err(|e| e.to_string())
}
