//! Everything one classic resolution can choose from: the prepared catalogs visible to the
//! namespace, each under the name, namespace and priority the request gives it, and the
//! installed operators as the `@existing` pseudo-catalog (resolution spec §1, §2.2). Entries
//! are numbered globally, catalog after catalog, `@existing` first.
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};

use serde_json::json;

use crate::predicate::Predicate;
use catalog::property::{GVK, GVK_REQUIRED, PACKAGE};
use catalog::semver::Version;
use catalog::types::Property;

use super::prepared::{Entry, PreparedCatalog, entry, package_of};
use super::request::{ClassicRequest, InstalledCsv, UpgradeStrategy};
use catalog::Gvk;

pub(crate) const EXISTING: &str = "@existing";

pub(crate) struct CatalogInfo {
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) priority: i32,
}

pub(crate) struct Universe<'p> {
    /// Index 0 is `@existing/<namespace>`.
    pub(crate) catalogs: Vec<CatalogInfo>,
    namespace: String,
    installed: PreparedCatalog,
    /// The prepared content of `catalogs[1..]`.
    prepared: Vec<&'p PreparedCatalog>,
    /// Per catalog, the global number of its first entry.
    offsets: Vec<usize>,
    len: usize,
    /// Why the caller refused an entry ([`super::request::Refusal`]), by global number.
    refused: HashMap<usize, String>,
}

impl<'p> Universe<'p> {
    /// `prepared[i]` is the content of `req.catalogs[i]`.
    pub(crate) fn build(
        req: &ClassicRequest<'_>,
        prepared: &[&'p PreparedCatalog],
    ) -> Result<Universe<'p>, String> {
        let installed = installed_after_pruning(req)?
            .into_iter()
            .map(|csv| installed_entry(req, csv))
            .collect();
        let mut catalogs = vec![CatalogInfo {
            name: EXISTING.to_owned(),
            namespace: req.namespace.clone(),
            priority: 0,
        }];
        catalogs.extend(req.catalogs.iter().map(|source| CatalogInfo {
            name: source.name.clone(),
            namespace: source.namespace.clone(),
            priority: source.priority,
        }));
        let mut u = Universe {
            catalogs,
            namespace: req.namespace.clone(),
            installed: PreparedCatalog::of_installed(installed),
            prepared: prepared.to_vec(),
            offsets: Vec::new(),
            len: 0,
            refused: HashMap::new(),
        };
        for c in 0..u.catalogs.len() {
            u.offsets.push(u.len);
            u.len += u.part(c).entries.len();
        }
        let mut refused = HashMap::new();
        for r in &req.refused {
            for c in 1..u.catalogs.len() {
                let info = &u.catalogs[c];
                if info.name != r.catalog || info.namespace != r.catalog_namespace {
                    continue;
                }
                for (local, entry) in u.part(c).entries.iter().enumerate() {
                    if entry.name == r.bundle {
                        refused
                            .entry(u.offsets[c] + local)
                            .or_insert_with(|| r.reason.clone());
                    }
                }
            }
        }
        u.refused = refused;
        Ok(u)
    }

    /// The number of entries, installed ones included.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn part(&self, catalog: usize) -> &PreparedCatalog {
        match catalog {
            0 => &self.installed,
            c => self.prepared[c - 1],
        }
    }

    /// The global number of entry `local` of `catalog`.
    pub(crate) fn global(&self, catalog: usize, local: usize) -> usize {
        self.offsets[catalog] + local
    }

    /// The catalog of entry `e`, and `e`'s number in it.
    pub(crate) fn locate(&self, e: usize) -> (usize, usize) {
        let c = self.offsets.partition_point(|&o| o <= e) - 1;
        (c, e - self.offsets[c])
    }

    pub(crate) fn entry(&self, e: usize) -> &Entry {
        let (c, local) = self.locate(e);
        &self.part(c).entries[local]
    }

    pub(crate) fn is_existing(&self, e: usize) -> bool {
        e < self.offsets.get(1).copied().unwrap_or(self.len)
    }

    /// The solver identifier `<catalog>/<catalogNamespace>/<channel>/<csvName>`.
    pub(crate) fn id(&self, e: usize) -> String {
        let (c, local) = self.locate(e);
        let info = &self.catalogs[c];
        let entry = &self.part(c).entries[local];
        format!(
            "{}/{}/{}/{}",
            info.name, info.namespace, entry.channel, entry.name
        )
    }

    /// The refusal message of entry `e`, if the caller refused it.
    pub(crate) fn refusal(&self, e: usize) -> Option<String> {
        self.refused
            .get(&e)
            .map(|reason| format!("bundle {} is refused: {reason}", self.id(e)))
    }

    pub(crate) fn is_refused(&self, e: usize) -> bool {
        self.refused.contains_key(&e)
    }

    /// Every visible entry satisfying `predicate`, in the candidate order of §2.3–§2.4 seen
    /// from an entry of catalog `own`, or the ordering error of the first consulted channel.
    pub(crate) fn providers(
        &self,
        own: usize,
        predicate: &Predicate,
    ) -> Result<Vec<usize>, String> {
        let mut catalogs: Vec<usize> = (0..self.catalogs.len()).collect();
        catalogs.sort_by_key(|&c| {
            let info = &self.catalogs[c];
            (
                c != 0,
                c != own,
                Reverse(info.priority),
                info.namespace != self.namespace,
                info.name.as_str(),
                info.namespace.as_str(),
            )
        });
        let mut providers = Vec::new();
        for c in catalogs {
            let found = self.part(c).providers(predicate)?;
            providers.extend(found.into_iter().map(|local| self.offsets[c] + local));
        }
        Ok(providers)
    }

    /// Whether two solver identifiers of this request could spell the same, which only the
    /// exact (string) problem reports faithfully: repeated catalogs, installed CSVs or
    /// subscriptions, a catalog named `@existing`, or names with separator characters.
    pub(crate) fn ids_may_collide(&self, req: &ClassicRequest<'_>) -> bool {
        let mut catalogs = HashSet::new();
        let unusual_catalog = self.catalogs[1..].iter().any(|info| {
            info.name == EXISTING
                || info.name.contains('/')
                || info.namespace.contains('/')
                || !catalogs.insert((info.name.as_str(), info.namespace.as_str()))
        });
        let mut subscriptions = HashSet::new();
        let unusual_subscription = req
            .subscriptions
            .iter()
            .any(|s| s.name.contains('/') || !subscriptions.insert(s.name.as_str()));
        unusual_catalog
            || unusual_subscription
            || self.namespace.contains('/')
            || (0..self.catalogs.len()).any(|c| self.part(c).unusual_names)
    }
}

/// The `@existing` entry of an installed CSV (§2.2).
fn installed_entry(req: &ClassicRequest<'_>, csv: &InstalledCsv) -> Entry {
    let owners: Vec<_> = req
        .subscriptions
        .iter()
        .filter(|s| s.installed_csv == csv.name)
        .collect();
    let version = if csv.version.is_empty() {
        Some(Version {
            major: 0,
            minor: 0,
            patch: 0,
            pre: Vec::new(),
            build: Vec::new(),
        })
    } else {
        Version::parse_tolerant(&csv.version).ok()
    };
    let properties = match &csv.properties {
        Some(annotation) => annotation.clone(),
        None => {
            let gvk = |kind: &str, api: &Gvk| Property {
                kind: kind.to_owned(),
                value: json!({"group": api.group, "kind": api.kind, "version": api.version})
                    .to_string(),
            };
            let mut props: Vec<Property> = csv
                .provided_apis
                .iter()
                .map(|api| gvk(GVK, api))
                .chain(csv.required_apis.iter().map(|api| gvk(GVK_REQUIRED, api)))
                .collect();
            if let [owner] = owners.as_slice() {
                let is_zero = version
                    .as_ref()
                    .is_some_and(|v| (v.major, v.minor, v.patch) == (0, 0, 0) && v.pre.is_empty());
                let text = if is_zero { "" } else { csv.version.as_str() };
                props.push(Property {
                    kind: PACKAGE.to_owned(),
                    value: json!({"packageName": owner.package, "version": text}).to_string(),
                });
            }
            props
        }
    };
    entry(
        csv.name.clone(),
        package_of(&properties).unwrap_or_default(),
        String::new(),
        false,
        csv.version.clone(),
        version,
        properties,
        // OLM gives installed CSVs no upgrade edges (`spec.replaces` counts only for
        // fail-forward pruning, which reads the request).
        (String::new(), Vec::new(), String::new()),
        String::new(),
        !owners.is_empty(),
    )
}

/// The installed CSVs that take part, after fail-forward pruning (§2.13).
fn installed_after_pruning<'r>(
    req: &'r ClassicRequest<'_>,
) -> Result<Vec<&'r InstalledCsv>, String> {
    if req.upgrade_strategy != UpgradeStrategy::UnsafeFailForward {
        return Ok(req.installed.iter().collect());
    }
    let wrap = |e: String| {
        format!(
            "error using catalogsource {}/{EXISTING}: {e}",
            req.namespace
        )
    };
    let replaced_by: HashMap<&str, &InstalledCsv> = req
        .installed
        .iter()
        .filter(|c| !c.replaces.is_empty())
        .map(|c| (c.replaces.as_str(), c))
        .collect();
    let mut keep = Vec::with_capacity(req.installed.len());
    for csv in &req.installed {
        let mut last = csv;
        let mut seen = HashSet::from([csv.name.as_str()]);
        while let Some(next) = replaced_by.get(last.name.as_str()) {
            if last.phase != "Replacing" {
                return Err(wrap(format!(
                    "csv {}/{} in phase {} instead of Replacing",
                    req.namespace, last.name, last.phase
                )));
            }
            if !seen.insert(next.name.as_str()) {
                return Err(wrap(format!(
                    "csv {}/{} has already been seen",
                    req.namespace, next.name
                )));
            }
            last = next;
        }
        if !(csv.phase == "Replacing" && last.phase == "Failed") {
            keep.push(csv);
        }
    }
    Ok(keep)
}
