//! `resolve`: what OLM would install or upgrade to for a namespace's subscriptions (classic)
//! or for ClusterExtensions (v1), from a request file, with the reasons, or why nothing fits.
//! The request and the answer are [`crate::resolve::service`]'s; this reads the file, loads
//! the catalogs it names and prints.
use super::Format;
use super::images::{ImageArgs, fetch_as_fbc};
use crate::catalog::decode::describe_load_errors;
use crate::catalog::walk;
use crate::resolve::service::{self, Catalog, Loaded, Request, report};
use crate::server::RemoteLimits;
use crate::server::catalogs::RemoteCatalogs;
use clap::Args;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    let outcome = match load_request(&args.request).and_then(|req| {
        let base = args.request.parent().unwrap_or(Path::new("."));
        let loader = Loader {
            base,
            image: &args.image,
            use_http,
            skip_tls_verify,
            runtime: None,
        };
        loader.resolve(&req)
    }) {
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

/// Loads the catalogs a request file names.
struct Loader<'a> {
    base: &'a Path,
    image: &'a ImageArgs,
    use_http: bool,
    skip_tls_verify: bool,
    /// Made on first use: images are pulled and catalog servers read on it.
    runtime: Option<(tokio::runtime::Runtime, RemoteCatalogs)>,
}

impl Loader<'_> {
    fn resolve(mut self, req: &Request) -> Result<service::Outcome, String> {
        let mut catalogs: Vec<Loaded> = Vec::with_capacity(req.catalogs.len());
        for (i, c) in req.catalogs.iter().enumerate() {
            let at = |e: String| format!("catalogs[{i}] ({}): {e}", c.name);
            if !req.resolves_from(c) {
                catalogs.push(service::not_loaded());
                continue;
            }
            if let Some(address) = &c.address {
                // As in the service: a server that cannot be read fails only what needs it.
                let (runtime, remote) = self.runtime()?;
                let deadline = Instant::now() + remote.budget();
                catalogs.push(runtime.block_on(async { remote.get(address).wait(deadline).await }));
                continue;
            }
            let root = match (&c.directory, &c.image) {
                (Some(dir), _) => self.base.join(dir),
                (None, Some(reference)) => {
                    let registry = self
                        .image
                        .registry(self.use_http, self.skip_tls_verify)
                        .map_err(at)?;
                    let (runtime, _) = self.runtime()?;
                    runtime
                        .block_on(fetch_as_fbc(&registry, reference))
                        .map_err(at)?
                        .root
                }
                (None, None) => unreachable!("checked by load_request"),
            };
            let content = walk::load_dir(&root).map_err(|e| at(describe_load_errors(&e)))?;
            catalogs.push(Ok(Catalog::of(content)));
        }
        // Manifests of catalog servers are fetched from here, outside the runtime.
        service::resolve_request(req, &catalogs)
    }

    fn runtime(&mut self) -> Result<&(tokio::runtime::Runtime, RemoteCatalogs), String> {
        if self.runtime.is_none() {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .map_err(|e| format!("starting the runtime: {e}"))?;
            self.runtime = Some((
                runtime,
                RemoteCatalogs::new(Duration::MAX, RemoteLimits::default()),
            ));
        }
        Ok(self.runtime.as_ref().expect("set above"))
    }
}
