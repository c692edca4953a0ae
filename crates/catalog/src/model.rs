//! The validated catalog (catalog-formats.md §A.3–§A.5): packages with their channels and
//! bundles, built from a [`DeclarativeConfig`] and checked against every upstream rule.
//!
//! Problems are collected, never thrown one at a time. Those found while assembling the model
//! (upstream's conversion errors, which name their objects themselves) sit at the top of the
//! tree with the document they were found in; the rest sit under the package, channel and
//! bundle they concern: a bundle's own problems once under its package, the problems of its
//! entry in a channel under that channel. Upstream stops at the first conversion error; here
//! assembly goes on past it, skipping only the offending document, so that one run reports
//! everything.
use super::graph;
use super::image_ref::validate_pull_spec;
use super::problems::Object;
pub use super::problems::{Problem, ValidationError};
use super::property::{self, Typed};
use super::semver::{Prerelease, Version, compare_prerelease};
use super::types::*;
use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Model {
    pub packages: BTreeMap<String, ModelPackage>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelPackage {
    pub name: String,
    pub(crate) description: String,
    pub(crate) icon: Option<Icon>,
    pub default_channel: String,
    pub channels: BTreeMap<String, ModelChannel>,
    pub bundles: BTreeMap<String, Bundle>,
    pub deprecation: Option<String>,
    /// Deprecation message of each deprecated bundle, by bundle name.
    pub(crate) bundle_deprecations: BTreeMap<String, String>,
    pub(crate) origin: Origin,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelChannel {
    pub name: String,
    pub head: String,
    /// In document order.
    pub entries: Vec<ChannelEntry>,
    pub deprecation: Option<String>,
    pub(crate) origin: Origin,
}

impl Model {
    /// Assembles and validates the model; custom documents (`dc.others`) are not part of it.
    pub fn build(dc: DeclarativeConfig) -> Result<Model, ValidationError> {
        let mut problems = ValidationError::default();
        let docs = Documents {
            packages: dc.packages,
            channels: dc.channels,
            bundles: dc.bundles,
            deprecations: dc.deprecations.into_iter().enumerate().collect(),
        };
        let packages = validate_packages(docs, &mut problems);
        if problems.is_empty() {
            Ok(Model { packages })
        } else {
            Err(problems)
        }
    }

    /// The deprecation message of a bundle, if it is deprecated.
    pub fn bundle_deprecation(&self, pkg: &str, bundle: &str) -> Option<&str> {
        self.packages.get(pkg)?.bundle_deprecation(bundle)
    }
}

impl ModelPackage {
    /// The deprecation message of one of its bundles, if it is deprecated.
    pub fn bundle_deprecation(&self, bundle: &str) -> Option<&str> {
        self.bundle_deprecations.get(bundle).map(String::as_str)
    }
}

/// The documents a model is assembled from: a whole catalog's, or a part of it holding, for
/// each package it names, every document that names that package (a package document by its
/// name; channels, bundles and deprecations by their `package`).
#[derive(Debug, Default)]
pub struct Documents {
    pub packages: Vec<Package>,
    pub channels: Vec<Channel>,
    pub bundles: Vec<Bundle>,
    /// Each with its position among the catalog's deprecation documents, which a message
    /// names.
    pub deprecations: Vec<(usize, Deprecations)>,
}

/// Assembles and validates the packages of `docs`, adding what is wrong to `problems`.
///
/// No rule looks beyond one package: every check of a package reads only the documents that
/// name it. So a catalog validated one package's documents at a time (in any order) has the
/// same problems as validated whole; only their order in the list differs, which the
/// rendered tree does not show (it sorts). That lets an ingest hold one package at a time.
pub fn validate_packages(
    docs: Documents,
    problems: &mut ValidationError,
) -> BTreeMap<String, ModelPackage> {
    let mut packages = add_packages(docs.packages, problems);
    add_channels(&mut packages, docs.channels, problems);
    let versions = add_bundles(&mut packages, docs.bundles, problems);
    report_entries_without_bundles(&packages, problems);
    for pkg in packages.values_mut() {
        if !pkg.default_channel.is_empty() && !pkg.channels.contains_key(&pkg.default_channel) {
            // Upstream makes up the missing default channel, which then fails as empty.
            let name = pkg.default_channel.clone();
            let channel = ModelChannel {
                name: name.clone(),
                origin: pkg.origin.clone(),
                ..ModelChannel::default()
            };
            pkg.channels.insert(name, channel);
        }
    }
    apply_deprecations(&mut packages, docs.deprecations, problems);
    for pkg in packages.values_mut() {
        validate_package(pkg, &versions, problems);
    }
    packages
}

fn add_packages(
    docs: Vec<Package>,
    problems: &mut ValidationError,
) -> BTreeMap<String, ModelPackage> {
    let mut packages = BTreeMap::new();
    for p in docs {
        if p.name.is_empty() {
            problems.add(
                &[],
                Some(&p.origin),
                "config contains package with no name".to_owned(),
            );
            continue;
        }
        if packages.contains_key(&p.name) {
            problems.add(
                &[],
                Some(&p.origin),
                format!("duplicate package {:?}", p.name),
            );
            continue;
        }
        let errors = dns1123_label_errors(&p.name);
        if !errors.is_empty() {
            problems.add(
                &[],
                Some(&p.origin),
                format!("invalid package name {:?}: [{}]", p.name, errors.join(" ")),
            );
        }
        let pkg = ModelPackage {
            name: p.name.clone(),
            description: p.description,
            icon: p.icon,
            default_channel: p.default_channel,
            origin: p.origin,
            ..ModelPackage::default()
        };
        packages.insert(p.name, pkg);
    }
    packages
}

fn add_channels(
    packages: &mut BTreeMap<String, ModelPackage>,
    docs: Vec<Channel>,
    problems: &mut ValidationError,
) {
    for c in docs {
        let Some(pkg) = packages.get_mut(&c.package) else {
            problems.add(
                &[],
                Some(&c.origin),
                format!("unknown package {:?} for channel {:?}", c.package, c.name),
            );
            continue;
        };
        if c.name.is_empty() {
            problems.add(
                &[],
                Some(&c.origin),
                format!("package {:?} contains channel with no name", c.package),
            );
            continue;
        }
        if pkg.channels.contains_key(&c.name) {
            problems.add(
                &[],
                Some(&c.origin),
                format!("package {:?} has duplicate channel {:?}", c.package, c.name),
            );
            continue;
        }
        let mut seen = HashSet::new();
        let mut entries = Vec::with_capacity(c.entries.len());
        for e in c.entries {
            if !seen.insert(e.name.clone()) {
                let message = format!(
                    "invalid package {:?}, channel {:?}: duplicate entry {:?}",
                    c.package, c.name, e.name
                );
                problems.add(&[], Some(&c.origin), message);
                continue;
            }
            entries.push(e);
        }
        let channel = ModelChannel {
            name: c.name.clone(),
            head: String::new(),
            entries,
            deprecation: None,
            origin: c.origin,
        };
        pkg.channels.insert(c.name, channel);
    }
}

/// What the `olm.package` property of a valid bundle says, for the checks that need it.
struct VersionRelease {
    version: Version,
    release: Vec<Prerelease>,
    /// As written (empty when there is none).
    release_text: String,
}

/// By package, then bundle name.
type Versions = HashMap<String, HashMap<String, VersionRelease>>;

fn add_bundles(
    packages: &mut BTreeMap<String, ModelPackage>,
    docs: Vec<Bundle>,
    problems: &mut ValidationError,
) -> Versions {
    let entry_names: HashMap<String, HashSet<String>> = packages
        .iter()
        .map(|(name, pkg)| {
            (
                name.clone(),
                pkg.channels
                    .values()
                    .flat_map(|c| c.entries.iter().map(|e| e.name.clone()))
                    .collect(),
            )
        })
        .collect();
    let mut versions = Versions::new();
    for b in docs {
        let top = |problems: &mut ValidationError, message: String| {
            problems.add(&[], Some(&b.origin), message)
        };
        if b.package.is_empty() {
            top(
                problems,
                format!("package name must be set for bundle {:?}", b.name),
            );
            continue;
        }
        let Some(pkg) = packages.get_mut(&b.package) else {
            top(
                problems,
                format!("unknown package {:?} for bundle {:?}", b.package, b.name),
            );
            continue;
        };
        if pkg.bundles.contains_key(&b.name) {
            top(
                problems,
                format!("package {:?} has duplicate bundle {:?}", b.package, b.name),
            );
            continue;
        }
        if let Some(vr) = check_bundle_properties(&b, problems) {
            versions
                .entry(b.package.clone())
                .or_default()
                .insert(b.name.clone(), vr);
        }
        if !b.image.is_empty()
            && let Err(e) = validate_pull_spec(&b.image)
        {
            top(
                problems,
                format!(
                    "package {:?} bundle {:?} image: invalid image pull spec {:?}: {e}",
                    b.package, b.name, b.image
                ),
            );
        }
        for (i, r) in b.related_images.iter().enumerate() {
            if r.image.is_empty() {
                continue;
            }
            if let Err(e) = validate_pull_spec(&r.image) {
                let message = format!(
                    "package {:?} bundle {:?} relatedImages[{i}].image: invalid image pull spec {:?}: {e}",
                    b.package, b.name, r.image
                );
                top(problems, message);
            }
        }
        if !entry_names
            .get(&b.package)
            .is_some_and(|names| names.contains(&b.name))
        {
            top(
                problems,
                format!(
                    "package {:?}, bundle {:?} not found in any channel entries",
                    b.package, b.name
                ),
            );
        }
        pkg.bundles.insert(b.name.clone(), b);
    }
    versions
}

/// Every property must parse; exactly one `olm.package`, naming the bundle's package, with a
/// strict semver version and, if any, a valid release.
fn check_bundle_properties(b: &Bundle, problems: &mut ValidationError) -> Option<VersionRelease> {
    let mut package_props = 0;
    let mut package = None;
    for (i, p) in b.properties.iter().enumerate() {
        // A failed `olm.package` still counts, so that it is not reported again as missing.
        package_props += usize::from(p.kind == property::PACKAGE);
        match property::parse(p) {
            Ok(Typed::Package {
                package_name,
                version,
                release,
            }) => package = Some((package_name, version, release)),
            Ok(_) => {}
            Err(e) => {
                let message = format!(
                    "parse properties for bundle {:?}: parse property[{i}] of type {:?}: {e}",
                    b.name, p.kind
                );
                problems.add(&[], Some(&b.origin), message);
            }
        }
    }
    let top = |problems: &mut ValidationError, message: String| {
        problems.add(&[], Some(&b.origin), message)
    };
    if package_props != 1 {
        let message = format!(
            "package {:?} bundle {:?} must have exactly 1 {:?} property, found {package_props}",
            b.package,
            b.name,
            property::PACKAGE
        );
        top(problems, message);
        return None;
    }
    let (package_name, version, release) = package?;
    if package_name != b.package {
        top(
            problems,
            format!(
                "package {:?} does not match {:?} property {:?}",
                b.package,
                property::PACKAGE,
                package_name
            ),
        );
    }
    let version = match Version::parse(&version) {
        Ok(v) => v,
        Err(e) => {
            top(
                problems,
                format!(
                    "error parsing bundle {:?} version {:?}: {e}",
                    b.name, version
                ),
            );
            return None;
        }
    };
    match super::version_release::parse_release(&release) {
        Ok(parsed) => Some(VersionRelease {
            version,
            release: parsed,
            release_text: release,
        }),
        Err(e) => {
            top(
                problems,
                format!(
                    "error parsing bundle {:?} release {:?}: {e}",
                    b.name, release
                ),
            );
            None
        }
    }
}

/// Upstream's check only covers the last channel document of each package; here every
/// channel is checked.
fn report_entries_without_bundles(
    packages: &BTreeMap<String, ModelPackage>,
    problems: &mut ValidationError,
) {
    for pkg in packages.values() {
        let mut missing: Vec<&str> = Vec::new();
        let mut origin = None;
        for ch in pkg.channels.values() {
            for e in &ch.entries {
                if !pkg.bundles.contains_key(&e.name) {
                    missing.push(&e.name);
                    origin.get_or_insert(&ch.origin);
                }
            }
        }
        if missing.is_empty() {
            continue;
        }
        missing.sort_unstable();
        missing.dedup();
        let message = format!(
            "no olm.bundle blobs found in package {:?} for olm.channel entries [{}]",
            pkg.name,
            missing.join(" ")
        );
        problems.add(&[], origin, message);
    }
}

fn apply_deprecations(
    packages: &mut BTreeMap<String, ModelPackage>,
    docs: Vec<(usize, Deprecations)>,
    problems: &mut ValidationError,
) {
    let mut seen = HashSet::new();
    for (i, d) in docs {
        let top = |problems: &mut ValidationError, message: String| {
            problems.add(&[], Some(&d.origin), message)
        };
        if d.package.is_empty() {
            top(
                problems,
                format!("package name must be set for deprecation item {i}"),
            );
            continue;
        }
        let Some(pkg) = packages.get_mut(&d.package) else {
            top(
                problems,
                format!(
                    "cannot apply deprecations to an unknown package {:?}",
                    d.package
                ),
            );
            continue;
        };
        if !seen.insert(d.package.clone()) {
            top(
                problems,
                format!(
                    "expected a maximum of one deprecation per package: {:?}",
                    d.package
                ),
            );
            continue;
        }
        let mut references = HashSet::new();
        for (j, e) in d.entries.iter().enumerate() {
            let DeprecationReference { schema, name } = &e.reference;
            if schema.is_empty() {
                top(
                    problems,
                    format!(
                        "schema must be set for deprecation entry [{j}] for package {:?}",
                        d.package
                    ),
                );
                continue;
            }
            // Go prints the reference with `%#v`.
            let reference =
                format!("declcfg.PackageScopedReference{{Schema:{schema:?}, Name:{name:?}}}");
            if !references.insert((schema, name)) {
                top(
                    problems,
                    format!(
                        "duplicate deprecation entry {reference} for package {:?}",
                        d.package
                    ),
                );
                continue;
            }
            match schema.as_str() {
                SCHEMA_BUNDLE if pkg.bundles.contains_key(name) => {
                    pkg.bundle_deprecations
                        .insert(name.clone(), e.message.clone());
                }
                SCHEMA_BUNDLE => top(
                    problems,
                    format!(
                        "cannot deprecate bundle {name:?} for package {:?}: bundle not found",
                        d.package
                    ),
                ),
                SCHEMA_CHANNEL => match pkg.channels.get_mut(name) {
                    Some(ch) => ch.deprecation = Some(e.message.clone()),
                    None => top(
                        problems,
                        format!(
                            "cannot deprecate channel {name:?} for package {:?}: channel not found",
                            d.package
                        ),
                    ),
                },
                SCHEMA_PACKAGE if name.is_empty() => pkg.deprecation = Some(e.message.clone()),
                SCHEMA_PACKAGE => top(
                    problems,
                    format!(
                        "package name must be empty for deprecated package {:?} (specified {name:?})",
                        d.package
                    ),
                ),
                _ => top(
                    problems,
                    format!(
                        "cannot deprecate object {reference} referenced by entry {j} for package {:?}: object schema unknown",
                        d.package
                    ),
                ),
            }
        }
    }
}

const EMPTY_DEPRECATION: &str = "invalid deprecation: message must be set";

fn validate_package(pkg: &mut ModelPackage, versions: &Versions, problems: &mut ValidationError) {
    let pkg_origin = pkg.origin.clone();
    let pkg_path: [Object; 1] = [(format!("package {:?}", pkg.name), &pkg_origin)];
    let report = |problems: &mut ValidationError, message: &str| {
        problems.add(&pkg_path, Some(&pkg_origin), message.to_owned())
    };
    if pkg.default_channel.is_empty() {
        report(problems, "default channel must be set");
    }
    if pkg.channels.is_empty() {
        report(problems, "package must contain at least one channel");
    }
    if pkg.deprecation.as_deref() == Some("") {
        report(problems, EMPTY_DEPRECATION);
    }
    if let Some(message) = versions.get(&pkg.name).and_then(duplicate_versions) {
        report(problems, &message);
    }

    for ch in pkg.channels.values_mut() {
        let ch_path = [
            pkg_path[0].clone(),
            (format!("channel {:?}", ch.name), &ch.origin),
        ];
        let mut channel_problems = Vec::new();
        if ch.entries.is_empty() {
            channel_problems.push("channel must contain at least one bundle".to_owned());
        } else {
            let (head, graph_problems) = graph::check(&ch.entries);
            ch.head = head.unwrap_or_default().to_owned();
            channel_problems.extend(graph_problems);
        }
        if ch.deprecation.as_deref() == Some("") {
            channel_problems.push(EMPTY_DEPRECATION.to_owned());
        }
        for message in channel_problems {
            problems.add(&ch_path, Some(&ch.origin), message);
        }
        for e in &ch.entries {
            let Some(b) = pkg.bundles.get(&e.name) else {
                continue;
            };
            let path = [
                ch_path[0].clone(),
                ch_path[1].clone(),
                (format!("bundle {:?}", b.name), &b.origin),
            ];
            for (i, skip) in e.skips.iter().enumerate() {
                if skip.is_empty() {
                    problems.add(&path, Some(&ch.origin), format!("skip[{i}] is empty"));
                }
            }
            if !e.skip_range.is_empty()
                && let Err(err) = super::semver::validate_range(&e.skip_range)
            {
                problems.add(
                    &path,
                    Some(&ch.origin),
                    format!("invalid skipRange {:?}: {err}", e.skip_range),
                );
            }
        }
    }

    let versions = versions.get(&pkg.name);
    for b in pkg.bundles.values() {
        let path = [
            pkg_path[0].clone(),
            (format!("bundle {:?}", b.name), &b.origin),
        ];
        let version = versions.and_then(|v| v.get(&b.name));
        for message in bundle_problems(b, pkg.bundle_deprecations.get(&b.name), version) {
            problems.add(&path, Some(&b.origin), message);
        }
    }
}

/// The problems of a bundle that do not depend on a channel. They are reported once, under
/// the package, where upstream repeats them under every channel listing the bundle.
fn bundle_problems(
    b: &Bundle,
    deprecation: Option<&String>,
    version: Option<&VersionRelease>,
) -> Vec<String> {
    let mut out = Vec::new();
    if b.name.is_empty() {
        out.push("name must be set".to_owned());
    }
    let objects = b.external_objects
        + b.properties
            .iter()
            .filter(|p| p.kind == property::BUNDLE_OBJECT)
            .count();
    if b.image.is_empty() && objects == 0 {
        out.push("bundle image must be set".to_owned());
    }
    let csv_metadata = b
        .properties
        .iter()
        .filter(|p| p.kind == property::CSV_METADATA)
        .count();
    if csv_metadata > 1 {
        out.push(format!(
            "expected at most 1 property of type {:?}, found {csv_metadata}",
            property::CSV_METADATA
        ));
    }
    if let Some(vr) = version.filter(|vr| !vr.release.is_empty()) {
        let normalized = format!("{}-v{}-{}", b.package, vr.version, vr.release_text);
        if b.name != normalized {
            out.push(format!(
                "name {:?} does not match normalized name {normalized:?}",
                b.name
            ));
        }
        if !vr.version.build.is_empty() {
            out.push("cannot use build metadata in version with a release version".to_owned());
        }
    }
    if deprecation.is_some_and(|m| m.is_empty()) {
        out.push(EMPTY_DEPRECATION.to_owned());
    }
    out
}

/// `duplicate versions found in bundles: [{1.0.0: [a, b]} {2.0.0-1: [c, d]}]`, versions in
/// ascending order; a version is the semver text plus `-<release>` when there is a release.
fn duplicate_versions(versions: &HashMap<String, VersionRelease>) -> Option<String> {
    let mut by_version: HashMap<String, (&VersionRelease, Vec<&str>)> = HashMap::new();
    for (name, vr) in versions {
        let text = if vr.release.is_empty() {
            vr.version.to_string()
        } else {
            format!("{}-{}", vr.version, vr.release_text)
        };
        by_version
            .entry(text)
            .or_insert_with(|| (vr, Vec::new()))
            .1
            .push(name);
    }
    let mut dupes: Vec<(String, (&VersionRelease, Vec<&str>))> = by_version
        .into_iter()
        .filter(|(_, (_, names))| names.len() > 1)
        .collect();
    if dupes.is_empty() {
        return None;
    }
    dupes.sort_by(|(ta, (a, _)), (tb, (b, _))| {
        a.version
            .cmp(&b.version)
            .then_with(|| release_order(&a.release, &b.release))
            .then_with(|| ta.cmp(tb))
    });
    let items: Vec<String> = dupes
        .into_iter()
        .map(|(text, (_, mut names))| {
            names.sort_unstable();
            format!("{{{text}: [{}]}}", names.join(", "))
        })
        .collect();
    Some(format!(
        "duplicate versions found in bundles: [{}]",
        items.join(" ")
    ))
}

/// Releases order like pre-releases, except that no release sorts first.
fn release_order(a: &[Prerelease], b: &[Prerelease]) -> std::cmp::Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        (false, false) => compare_prerelease(a, b),
    }
}

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// Kubernetes' `IsDNS1123Label` messages for `name` (empty when it is a valid label).
fn dns1123_label_errors(name: &str) -> Vec<&'static str> {
    let mut errors = Vec::new();
    if name.len() > DNS1123_LABEL_MAX {
        errors.push("must be no more than 63 characters");
    }
    if !is_dns1123_label(name) {
        if name.split('.').all(is_dns1123_label) {
            errors.push("must not contain dots");
        } else {
            errors.push(DNS1123_LABEL_MESSAGE);
        }
    }
    errors
}

/// Kubernetes' DNS-1123 label: lower-case alphanumerics and `-`, alphanumeric at both ends.
pub fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.first().is_some_and(alnum)
        && b.last().is_some_and(alnum)
        && b.iter().all(|c| alnum(c) || *c == b'-')
}

#[cfg(test)]
mod tests;
