//! `resolve`: what OLM would install or upgrade to for a namespace's subscriptions (classic)
//! or for ClusterExtensions (v1), from a request file, with the reasons, or why nothing fits.
use super::Format;
use super::images::{ImageArgs, fetch_as_fbc};
use crate::catalog::decode::describe_load_errors;
use crate::catalog::semver::Version;
use crate::catalog::types::{DeclarativeConfig, Property};
use crate::catalog::walk;
use crate::resolve::classic::{
    self, CatalogSource, ClassicError, ClassicRequest, Gvk, InstalledCsv, ResolvedOperator,
    Subscription, UpgradeStrategy,
};
use crate::resolve::predicate::{Subject, decode};
use crate::resolve::solver::SolveError;
use crate::resolve::v1::{
    self, InstalledBundle, LabelSelector, NAME_LABEL, SelectorRequirement, UpgradePolicy,
    V1Catalog, V1Request,
};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Resolve subscriptions (OLM classic) or ClusterExtensions (OLM v1) against catalogs.
///
/// The request file (YAML or JSON) names the catalogs (FBC directories, relative to the
/// file, or images), the installed operators and the subscriptions or v1 requests; see
/// examples/resolve-*.yaml. Prints the bundles to install or upgrade to, one step at a
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
    let outcome = match load_request(&args.request)
        .and_then(|req| resolve_file(&req, &args, use_http, skip_tls_verify))
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

// ---- The request file -------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RequestFile {
    mode: Mode,
    /// Classic: the namespace being resolved (the default namespace of its catalogs).
    #[serde(default)]
    namespace: String,
    /// Classic: the OperatorGroup's `upgradeStrategy`.
    #[serde(default)]
    upgrade_strategy: Strategy,
    catalogs: Vec<CatalogSpec>,
    /// Classic: the CSVs of the namespace.
    #[serde(default)]
    installed: Vec<CsvSpec>,
    /// Classic: Subscriptions, in resolution order.
    #[serde(default)]
    subscriptions: Vec<SubscriptionSpec>,
    /// v1: ClusterExtensions, each resolved on its own.
    #[serde(default)]
    requests: Vec<ExtensionSpec>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Classic,
    V1,
}

#[derive(Default, Deserialize)]
enum Strategy {
    #[default]
    Default,
    UnsafeFailForward,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CatalogSpec {
    name: String,
    /// Classic CatalogSource namespace; defaults to the request's namespace.
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    priority: i32,
    /// An FBC directory, relative to the request file.
    #[serde(default)]
    directory: Option<String>,
    /// A catalog image reference (or oci:DIR[:TAG]).
    #[serde(default)]
    image: Option<String>,
    /// v1 ClusterCatalog labels (the name label is always added).
    #[serde(default)]
    labels: BTreeMap<String, String>,
    /// v1 `availabilityMode`.
    #[serde(default)]
    availability_mode: Availability,
}

enum CatalogRef<'a> {
    Directory(&'a str),
    Image(&'a str),
}

impl CatalogSpec {
    /// `i` is the catalog's position, for the message.
    fn source(&self, i: usize) -> Result<CatalogRef<'_>, String> {
        match (&self.directory, &self.image) {
            (Some(dir), None) => Ok(CatalogRef::Directory(dir)),
            (None, Some(reference)) => Ok(CatalogRef::Image(reference)),
            _ => Err(format!(
                "catalogs[{i}] ({}): exactly one of directory and image is required",
                self.name
            )),
        }
    }
}

#[derive(Default, Deserialize)]
enum Availability {
    #[default]
    Available,
    Unavailable,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CsvSpec {
    name: String,
    /// `spec.version`.
    #[serde(default)]
    version: String,
    /// `spec.replaces`.
    #[serde(default)]
    replaces: String,
    /// `status.phase`.
    #[serde(default = "succeeded")]
    phase: String,
    /// The `operatorframework.io/properties` annotation's list.
    #[serde(default)]
    properties: Option<Vec<PropertySpec>>,
    /// Owned CRDs and APIServices.
    #[serde(default, rename = "providedAPIs")]
    provided_apis: Vec<GvkSpec>,
    /// Required CRDs and APIServices.
    #[serde(default, rename = "requiredAPIs")]
    required_apis: Vec<GvkSpec>,
}

fn succeeded() -> String {
    "Succeeded".to_string()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PropertySpec {
    #[serde(rename = "type")]
    kind: String,
    value: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GvkSpec {
    group: String,
    version: String,
    kind: String,
}

/// Subscription `spec` fields, plus `status.installedCSV`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SubscriptionSpec {
    name: String,
    package: String,
    #[serde(default)]
    channel: String,
    source: String,
    /// Defaults to the request's namespace.
    #[serde(default)]
    source_namespace: String,
    #[serde(default, rename = "startingCSV")]
    starting_csv: String,
    #[serde(default, rename = "installedCSV")]
    installed_csv: String,
}

/// ClusterExtension `spec.source.catalog` fields, plus the installed bundle.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExtensionSpec {
    name: String,
    package_name: String,
    #[serde(default)]
    channels: Vec<String>,
    #[serde(default)]
    version: String,
    #[serde(default)]
    upgrade_constraint_policy: Policy,
    #[serde(default)]
    selector: Option<SelectorSpec>,
    #[serde(default)]
    installed_bundle: Option<BundleSpec>,
}

#[derive(Default, Deserialize)]
enum Policy {
    #[default]
    CatalogProvided,
    SelfCertified,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SelectorSpec {
    #[serde(default)]
    match_labels: BTreeMap<String, String>,
    #[serde(default)]
    match_expressions: Vec<ExpressionSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpressionSpec {
    key: String,
    operator: String,
    #[serde(default)]
    values: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BundleSpec {
    name: String,
    version: String,
}

/// JSON is YAML, so one parser reads both; its errors name the field path and line.
fn load_request(path: &Path) -> Result<RequestFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading: {e}"))?;
    let req: RequestFile = serde_yaml::from_str(&text).map_err(|e| e.to_string())?;
    let misplaced = match req.mode {
        Mode::Classic if !req.requests.is_empty() => Some("requests (v1 only)"),
        Mode::Classic if req.namespace.is_empty() => {
            return Err("namespace: required in classic mode".to_string());
        }
        Mode::V1 if !req.subscriptions.is_empty() => Some("subscriptions (classic only)"),
        Mode::V1 if !req.installed.is_empty() => {
            Some("installed (classic only; v1 requests carry installedBundle)")
        }
        _ => None,
    };
    if let Some(field) = misplaced {
        let mode = match req.mode {
            Mode::Classic => "classic",
            Mode::V1 => "v1",
        };
        return Err(format!("{field}: not allowed in {mode} mode"));
    }
    for (i, c) in req.catalogs.iter().enumerate() {
        c.source(i)?;
    }
    Ok(req)
}

// ---- Resolution -------------------------------------------------------------------------

/// The answer, in the shape of `-o json|yaml`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    mode: Mode,
    #[serde(skip_serializing_if = "String::is_empty")]
    namespace: String,
    /// Classic: the whole namespace resolves or nothing does.
    #[serde(skip_serializing_if = "Option::is_none")]
    unsatisfiable: Option<Vec<String>>,
    results: Vec<Resolution>,
}

impl Outcome {
    fn resolved(&self) -> bool {
        self.unsatisfiable.is_none() && self.results.iter().all(|r| r.error.is_none())
    }
}

/// One bundle to install or upgrade to, or one v1 request that found none.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Resolution {
    /// The subscription or v1 request; empty for a dependency.
    #[serde(skip_serializing_if = "String::is_empty")]
    request: String,
    package: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    bundle: Option<Chosen>,
    /// Classic: the installed CSV a subscription keeps because nothing newer fits.
    #[serde(skip_serializing_if = "String::is_empty")]
    unchanged: String,
    /// v1: why no bundle was chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Chosen {
    name: String,
    version: String,
    /// Classic: the entry's channel; v1: the matching channels of the winning catalog.
    channel: String,
    catalog: String,
    image: String,
    /// The installed bundle this step upgrades from.
    #[serde(skip_serializing_if = "String::is_empty")]
    from: String,
    #[serde(skip_serializing_if = "String::is_empty", rename = "startingCSV")]
    starting_csv: String,
    /// Classic dependencies: the requirements of chosen bundles it satisfies.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    required_by: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    deprecation: String,
}

fn resolve_file(
    req: &RequestFile,
    args: &ResolveArgs,
    use_http: bool,
    skip_tls_verify: bool,
) -> Result<Outcome, String> {
    let base = args.request.parent().unwrap_or(Path::new("."));
    let contents = load_catalogs(req, base, &args.image, use_http, skip_tls_verify)?;
    match req.mode {
        Mode::Classic => resolve_classic(req, &contents),
        Mode::V1 => Ok(resolve_v1(req, &contents)),
    }
}

fn load_catalogs(
    req: &RequestFile,
    base: &Path,
    image: &ImageArgs,
    use_http: bool,
    skip_tls_verify: bool,
) -> Result<Vec<DeclarativeConfig>, String> {
    let mut registry = None;
    let mut contents = Vec::with_capacity(req.catalogs.len());
    for (i, c) in req.catalogs.iter().enumerate() {
        let at = |e: String| format!("catalogs[{i}] ({}): {e}", c.name);
        let root = match c.source(i)? {
            CatalogRef::Directory(dir) => base.join(dir),
            CatalogRef::Image(reference) => {
                if registry.is_none() {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| format!("starting the runtime: {e}"))?;
                    registry = Some((runtime, image.registry(use_http, skip_tls_verify)?));
                }
                let (runtime, registry) = registry.as_ref().expect("set above");
                runtime
                    .block_on(fetch_as_fbc(registry, reference))
                    .map_err(at)?
                    .root
            }
        };
        contents.push(walk::load_dir(&root).map_err(|e| at(describe_load_errors(&e)))?);
    }
    Ok(contents)
}

fn resolve_classic(req: &RequestFile, contents: &[DeclarativeConfig]) -> Result<Outcome, String> {
    let or_namespace = |ns: &str| {
        if ns.is_empty() {
            req.namespace.clone()
        } else {
            ns.to_string()
        }
    };
    let request = ClassicRequest {
        namespace: req.namespace.clone(),
        catalogs: req
            .catalogs
            .iter()
            .zip(contents)
            .map(|(c, content)| CatalogSource {
                name: c.name.clone(),
                namespace: or_namespace(&c.namespace),
                priority: c.priority,
                content,
            })
            .collect(),
        installed: req.installed.iter().map(installed_csv).collect(),
        subscriptions: req
            .subscriptions
            .iter()
            .map(|s| Subscription {
                name: s.name.clone(),
                package: s.package.clone(),
                channel: s.channel.clone(),
                source: s.source.clone(),
                source_namespace: or_namespace(&s.source_namespace),
                starting_csv: s.starting_csv.clone(),
                installed_csv: s.installed_csv.clone(),
            })
            .collect(),
        upgrade_strategy: match req.upgrade_strategy {
            Strategy::Default => UpgradeStrategy::Default,
            Strategy::UnsafeFailForward => UpgradeStrategy::UnsafeFailForward,
        },
    };
    let mut outcome = Outcome {
        mode: Mode::Classic,
        namespace: req.namespace.clone(),
        unsatisfiable: None,
        results: Vec::new(),
    };
    let operators = match classic::resolve(&request) {
        Ok(operators) => operators,
        Err(ClassicError::Unsatisfiable(SolveError::Unsatisfiable { mut messages })) => {
            // One bundle in several channels is several constraints with the same words;
            // an admin needs the fact once (the messages come sorted).
            messages.dedup();
            outcome.unsatisfiable = Some(messages);
            return Ok(outcome);
        }
        Err(e) => return Err(e.to_string()),
    };
    let required_by = dependency_reasons(&operators)?;
    for (op, why) in operators.iter().zip(required_by) {
        let subscription = request.subscriptions.iter().find(|s| {
            s.package == op.package
                && (s.channel.is_empty() || s.channel == op.channel)
                && (s.source == op.catalog && s.source_namespace == op.catalog_namespace)
        });
        outcome.results.push(Resolution {
            request: subscription.map(|s| s.name.clone()).unwrap_or_default(),
            package: op.package.clone(),
            bundle: Some(Chosen {
                name: op.name.clone(),
                version: op.version.clone(),
                channel: op.channel.clone(),
                catalog: format!("{}/{}", op.catalog, op.catalog_namespace),
                image: op.bundle_path.clone(),
                // The resolver reports the installed CSV an upgrade replaces as `replaces`.
                from: subscription
                    .filter(|s| !s.installed_csv.is_empty() && s.installed_csv == op.replaces)
                    .map(|s| s.installed_csv.clone())
                    .unwrap_or_default(),
                starting_csv: op.starting_csv.clone().unwrap_or_default(),
                required_by: if subscription.is_some() {
                    Vec::new()
                } else {
                    why
                },
                deprecation: String::new(),
            }),
            unchanged: String::new(),
            error: None,
        });
    }
    for s in &request.subscriptions {
        if !outcome.results.iter().any(|r| r.request == s.name) {
            outcome.results.push(Resolution {
                request: s.name.clone(),
                package: s.package.clone(),
                bundle: None,
                unchanged: s.installed_csv.clone(),
                error: None,
            });
        }
    }
    Ok(outcome)
}

fn installed_csv(c: &CsvSpec) -> InstalledCsv {
    let gvks = |list: &[GvkSpec]| {
        list.iter()
            .map(|g| Gvk {
                group: g.group.clone(),
                version: g.version.clone(),
                kind: g.kind.clone(),
            })
            .collect()
    };
    InstalledCsv {
        name: c.name.clone(),
        version: c.version.clone(),
        replaces: c.replaces.clone(),
        phase: c.phase.clone(),
        properties: c.properties.as_ref().map(|ps| {
            ps.iter()
                .map(|p| Property {
                    kind: p.kind.clone(),
                    value: p.value.to_string(),
                })
                .collect()
        }),
        provided_apis: gvks(&c.provided_apis),
        required_apis: gvks(&c.required_apis),
    }
}

/// For each operator, the requirements of the other chosen operators it satisfies, worded
/// as the resolver's own messages (§7).
fn dependency_reasons(operators: &[ResolvedOperator]) -> Result<Vec<Vec<String>>, String> {
    let requirements = operators
        .iter()
        .map(|op| classic::requirements(&op.properties))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(operators
        .iter()
        .map(|op| {
            let version = Version::parse_tolerant(&op.version).ok();
            let values = decode(&op.properties);
            let subject = Subject {
                package: &op.package,
                version: version.as_ref(),
                properties: &op.properties,
                values: &values,
            };
            operators
                .iter()
                .zip(&requirements)
                .filter(|(other, _)| other.name != op.name)
                .flat_map(|(other, predicates)| {
                    predicates
                        .iter()
                        .filter(|p| p.matches(&subject))
                        .map(move |p| format!("bundle {} requires an operator {p}", other.name))
                })
                .collect()
        })
        .collect())
}

fn resolve_v1(req: &RequestFile, contents: &[DeclarativeConfig]) -> Outcome {
    let catalogs: Vec<V1Catalog<'_>> = req
        .catalogs
        .iter()
        .zip(contents)
        .map(|(c, content)| {
            let mut labels = c.labels.clone();
            labels.insert(NAME_LABEL.to_string(), c.name.clone());
            V1Catalog {
                name: c.name.clone(),
                priority: c.priority,
                labels,
                available: matches!(c.availability_mode, Availability::Available),
                content,
            }
        })
        .collect();
    let results = req
        .requests
        .iter()
        .map(|r| {
            let request = V1Request {
                package: r.package_name.clone(),
                channels: r.channels.clone(),
                version: r.version.clone(),
                policy: match r.upgrade_constraint_policy {
                    Policy::CatalogProvided => UpgradePolicy::CatalogProvided,
                    Policy::SelfCertified => UpgradePolicy::SelfCertified,
                },
                selector: r.selector.as_ref().map(|s| LabelSelector {
                    match_labels: s.match_labels.clone(),
                    match_expressions: s
                        .match_expressions
                        .iter()
                        .map(|e| SelectorRequirement {
                            key: e.key.clone(),
                            operator: e.operator.clone(),
                            values: e.values.clone(),
                        })
                        .collect(),
                }),
                installed: r.installed_bundle.as_ref().map(|b| InstalledBundle {
                    name: b.name.clone(),
                    version: b.version.clone(),
                }),
            };
            let (bundle, error) = match v1::resolve(&catalogs, &request) {
                Ok(found) => (Some(v1_chosen(r, &catalogs, found)), None),
                Err(e) => (None, Some(e)),
            };
            Resolution {
                request: r.name.clone(),
                package: r.package_name.clone(),
                bundle,
                unchanged: String::new(),
                error,
            }
        })
        .collect();
    Outcome {
        mode: Mode::V1,
        namespace: String::new(),
        unsatisfiable: None,
        results,
    }
}

fn v1_chosen(r: &ExtensionSpec, catalogs: &[V1Catalog<'_>], found: v1::V1Resolution) -> Chosen {
    let content = catalogs
        .iter()
        .find(|c| c.name == found.catalog)
        .map(|c| c.content);
    let channels: Vec<&str> = content
        .into_iter()
        .flat_map(|dc| &dc.channels)
        .filter(|ch| ch.package == found.bundle.package)
        .filter(|ch| r.channels.is_empty() || r.channels.contains(&ch.name))
        .filter(|ch| ch.entries.iter().any(|e| e.name == found.bundle.name))
        .map(|ch| ch.name.as_str())
        .collect();
    let mut deprecations: Vec<&str> = Vec::new();
    if let Some(d) = &found.deprecation {
        for e in &d.entries {
            let applies = match e.reference.schema.as_str() {
                "olm.package" => true,
                "olm.channel" => channels.contains(&e.reference.name.as_str()),
                "olm.bundle" => e.reference.name == found.bundle.name,
                _ => false,
            };
            if applies {
                deprecations.push(&e.message);
            }
        }
    }
    Chosen {
        name: found.bundle.name.clone(),
        version: found
            .version
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        channel: channels.join(", "),
        catalog: found.catalog.clone(),
        image: found.bundle.image.clone(),
        from: r
            .installed_bundle
            .as_ref()
            .map(|b| b.name.clone())
            .unwrap_or_default(),
        starting_csv: String::new(),
        required_by: Vec::new(),
        deprecation: deprecations.join(" "),
    }
}

// ---- The report -------------------------------------------------------------------------

fn report(outcome: &Outcome) -> String {
    let mut out = String::new();
    let scope = match outcome.mode {
        Mode::Classic => format!("classic resolution of namespace {}", outcome.namespace),
        Mode::V1 => "v1 resolution".to_string(),
    };
    if let Some(messages) = &outcome.unsatisfiable {
        let _ = writeln!(
            out,
            "{scope}: no consistent set of operators exists, because:"
        );
        for m in messages {
            let _ = writeln!(out, "  - {m}");
        }
        return out;
    }
    if outcome.results.is_empty() {
        let _ = writeln!(out, "{scope}: nothing to install or upgrade");
        return out;
    }
    let _ = writeln!(out, "{scope}:");
    for r in &outcome.results {
        let what = match (r.request.as_str(), outcome.mode) {
            ("", _) => "dependency".to_string(),
            (name, Mode::Classic) => format!("subscription {name}"),
            (name, Mode::V1) => format!("request {name}"),
        };
        let _ = writeln!(out, "\n{what} (package {})", r.package);
        if let Some(e) = &r.error {
            let _ = writeln!(out, "  no bundle: {e}");
        }
        if !r.unchanged.is_empty() {
            let _ = writeln!(out, "  no change:  stays at {}", r.unchanged);
        }
        let Some(b) = &r.bundle else {
            continue;
        };
        let _ = writeln!(out, "  bundle:     {} (version {})", b.name, b.version);
        let _ = writeln!(out, "  channel:    {}", b.channel);
        let _ = writeln!(out, "  catalog:    {}", b.catalog);
        let _ = writeln!(out, "  image:      {}", b.image);
        let step = if b.from.is_empty() {
            "install".to_string()
        } else {
            format!("upgrade {} -> {}", b.from, b.name)
        };
        let _ = writeln!(out, "  step:       {step}");
        if !b.starting_csv.is_empty() {
            let _ = writeln!(out, "  startingCSV: {}", b.starting_csv);
        }
        for why in &b.required_by {
            let _ = writeln!(out, "  because:    {why}");
        }
        if !b.deprecation.is_empty() {
            let _ = writeln!(out, "  deprecated: {}", b.deprecation);
        }
    }
    out
}
