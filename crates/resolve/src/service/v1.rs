//! v1 requests: each ClusterExtension on its own, with the bundles whose CRDs would drop
//! versions the cluster still uses refused, and its upgrade path.
use std::collections::BTreeMap;

use crate::safety::{self, ClusterCrd};
use crate::v1::{
    self, InstalledBundle, NAME_LABEL, UpgradePolicy, V1Catalog, V1Request, V1Resolution,
};
use catalog::types::Property;
use catalog::version_release::VersionRelease;

use super::request::{Availability, ExtensionSpec, Policy, Request, SelectorSpec};
use super::{
    Catalog, Chosen, Error, Loaded, MAX_PATH_STEPS, Mode, OpenShift, Outcome, Resolution, Step,
};

/// Resolves each ClusterExtension of a v1 request on its own.
pub(super) fn resolve_extensions(req: &Request, loaded: &[Loaded]) -> Result<Outcome, Error> {
    let mut outcome = Outcome {
        mode: Mode::V1,
        namespace: String::new(),
        unsatisfiable: None,
        results: Vec::new(),
        warnings: Vec::new(),
        openshift: None,
        install_plan: None,
    };
    let (catalogs, contents, unavailable) = v1_catalogs(req, loaded, &mut outcome.warnings);
    let crds = req
        .cluster
        .as_ref()
        .map(|c| c.crds.clone())
        .unwrap_or_default();
    let mut resolved: Vec<(String, Vec<Property>)> = Vec::new();
    for r in &req.requests {
        let request = v1_request(r);
        let mut result = Resolution {
            request: r.name.clone(),
            package: r.package_name.clone(),
            ..Resolution::default()
        };
        // The answer could have come from a catalog that could not be read.
        let missing: Vec<String> = unavailable
            .iter()
            .filter(|(_, labels, _)| request.selector.as_ref().is_none_or(|s| s.matches(labels)))
            .map(|(name, _, e)| format!("catalog {name} cannot be read: {e}"))
            .collect();
        if !missing.is_empty() {
            result.error = Some(missing.join("; "));
            outcome.results.push(result);
            continue;
        }
        let checks = Checks {
            catalogs: &catalogs,
            contents: &contents,
            checked: req.cluster.is_some(),
        };
        let mut crds = crds.clone();
        match checks.pick(&request, &crds) {
            Ok((found, refused)) => {
                result.refused = refused;
                let chosen = chosen(r, &catalogs, &found);
                resolved.push((found.bundle.name.clone(), found.bundle.properties.clone()));
                result.path = checks.path(&request, &found, &chosen.channel, &mut crds);
                result.bundle = Some(chosen);
            }
            Err((e, refused)) => {
                result.refused = refused;
                result.error = Some(e);
            }
        }
        outcome.results.push(result);
    }
    if let Some(version) = req.cluster.as_ref().map(|c| c.openshift_version.as_str())
        && !version.is_empty()
    {
        outcome.openshift = Some(openshift(version, &resolved)?);
    }
    Ok(outcome)
}

/// An unavailable catalog: its name, its labels and why it could not be read.
type Unavailable = (String, BTreeMap<String, String>, String);

/// The catalogs that could be loaded, with their contents, and the available ones that
/// could not; a warning for each left out.
fn v1_catalogs<'a>(
    req: &Request,
    loaded: &'a [Loaded],
    warnings: &mut Vec<String>,
) -> (Vec<V1Catalog<'a>>, Vec<&'a Catalog>, Vec<Unavailable>) {
    let mut catalogs: Vec<V1Catalog<'_>> = Vec::new();
    let mut contents: Vec<&Catalog> = Vec::new();
    let mut unavailable = Vec::new();
    for (c, catalog) in req.catalogs.iter().zip(loaded) {
        let mut labels = c.labels.clone();
        labels.insert(NAME_LABEL.to_string(), c.name.clone());
        let available = matches!(c.availability_mode, Availability::Available);
        match catalog {
            Ok(catalog) => {
                catalogs.push(V1Catalog {
                    name: c.name.clone(),
                    priority: c.priority,
                    labels,
                    available,
                    content: &catalog.content,
                });
                contents.push(catalog);
            }
            Err(e) => {
                warnings.push(format!("catalog {} is left out: {e}", c.name));
                if available {
                    unavailable.push((c.name.clone(), labels, e.clone()));
                }
            }
        }
    }
    (catalogs, contents, unavailable)
}

/// Whether the resolved bundles block the cluster's next minor upgrade.
fn openshift(version: &str, resolved: &[(String, Vec<Property>)]) -> Result<OpenShift, Error> {
    let operators: Vec<(&str, &[Property])> = resolved
        .iter()
        .map(|(name, props)| (name.as_str(), props.as_slice()))
        .collect();
    OpenShift::judge(Mode::V1, version, &operators)
}

struct Checks<'a> {
    catalogs: &'a [V1Catalog<'a>],
    contents: &'a [&'a Catalog],
    checked: bool,
}

impl Checks<'_> {
    /// The v1 answer, with bundles whose CRDs would drop versions in use refused; also
    /// the refusals, as sentences.
    #[allow(clippy::type_complexity)]
    fn pick(
        &self,
        request: &V1Request,
        crds: &[ClusterCrd],
    ) -> Result<(V1Resolution, Vec<String>), (String, Vec<String>)> {
        let mut refused: Vec<(String, String)> = Vec::new();
        let sentences = |refused: &[(String, String)]| {
            refused
                .iter()
                .map(|(name, reason)| format!("{name}: {reason}"))
                .collect::<Vec<_>>()
        };
        loop {
            let found = v1::resolve_refusing(self.catalogs, request, &refused)
                .map_err(|e| (e.to_string(), sentences(&refused)))?;
            if !self.checked {
                return Ok((found, Vec::new()));
            }
            let Some(i) = self.catalogs.iter().position(|c| c.name == found.catalog) else {
                return Ok((found, sentences(&refused)));
            };
            let channel = first_channel(&self.catalogs[i], &found);
            let manifests = self.contents[i]
                .bundle_manifests(&found.bundle.package, &channel, &found.bundle.name)
                .map_err(|e| {
                    (
                        format!(
                            "the safety checks could not read the manifests of {}: {e}",
                            found.bundle.name
                        ),
                        sentences(&refused),
                    )
                })?;
            let reasons = safety::crd_refusals(&manifests, crds);
            if reasons.is_empty() {
                return Ok((found, sentences(&refused)));
            }
            refused.push((found.bundle.name.clone(), reasons.join("; ")));
        }
    }

    /// This step and the ones that follow it, while each resolution moves on.
    fn path(
        &self,
        request: &V1Request,
        first: &V1Resolution,
        channel: &str,
        crds: &mut Vec<ClusterCrd>,
    ) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut current = first.clone();
        let mut from = request.installed.as_ref().map(|i| i.name.clone());
        let mut channel = channel.to_owned();
        loop {
            if from.as_deref() == Some(current.bundle.name.as_str()) {
                break;
            }
            steps.push(Step {
                from: from.clone().unwrap_or_default(),
                to: current.bundle.name.clone(),
                version: version_text(&current),
                image: current.bundle.image.clone(),
            });
            if steps.len() == MAX_PATH_STEPS {
                break;
            }
            if self.checked
                && let Some(i) = self.catalogs.iter().position(|c| c.name == current.catalog)
                && let Ok(m) = self.contents[i].bundle_manifests(
                    &current.bundle.package,
                    &channel,
                    &current.bundle.name,
                )
            {
                safety::apply_crds(crds, &m);
            }
            let next_request = V1Request {
                installed: Some(installed_at(&current)),
                ..request.clone()
            };
            let Ok((next, _)) = self.pick(&next_request, crds) else {
                break;
            };
            from = Some(current.bundle.name.clone());
            if let Some(i) = self.catalogs.iter().position(|c| c.name == next.catalog) {
                channel = first_channel(&self.catalogs[i], &next);
            }
            current = next;
        }
        steps
    }
}

/// The bundle a step leaves installed, its version and release given apart so that a
/// version with build metadata and a release reads back as it was.
fn installed_at(found: &V1Resolution) -> InstalledBundle {
    InstalledBundle {
        name: found.bundle.name.clone(),
        version: found
            .version
            .as_ref()
            .map(|v| v.version.to_string())
            .unwrap_or_default(),
        release: found.version.as_ref().map(VersionRelease::release_text),
    }
}

fn version_text(found: &V1Resolution) -> String {
    found
        .version
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default()
}

fn first_channel(catalog: &V1Catalog<'_>, found: &V1Resolution) -> String {
    catalog
        .content
        .channels
        .iter()
        .find(|ch| {
            ch.package == found.bundle.package
                && ch.entries.iter().any(|e| e.name == found.bundle.name)
        })
        .map(|ch| ch.name.clone())
        .unwrap_or_default()
}

fn v1_request(r: &ExtensionSpec) -> V1Request {
    V1Request {
        package: r.package_name.clone(),
        channels: r.channels.clone(),
        version: r.version.clone(),
        policy: match r.upgrade_constraint_policy {
            Policy::CatalogProvided => UpgradePolicy::CatalogProvided,
            Policy::SelfCertified => UpgradePolicy::SelfCertified,
        },
        selector: r.selector.as_ref().map(SelectorSpec::to_selector),
        installed: r.installed_bundle.as_ref().map(|b| InstalledBundle {
            name: b.name.clone(),
            version: b.version.clone(),
            release: b.release.clone(),
        }),
    }
}

fn chosen(r: &ExtensionSpec, catalogs: &[V1Catalog<'_>], found: &V1Resolution) -> Chosen {
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
        version: version_text(found),
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
