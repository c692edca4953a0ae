//! Tools for catalog authors: templates that render to FBC, upgrade-graph pictures, catalog
//! diffs, adding bundles to a catalog on disk, migrating catalogs to the one-file-per-
//! package layout, and opm's `init`, `generate dockerfile` and `alpha list`. The tools work
//! on [`DeclarativeConfig`]s; the commands' entry points ([`add`], [`migrate`],
//! [`references`], [`template_render`], [`list`]) acquire them through [`source`], which also
//! reads and pulls the bundles they name. What the tools refuse says why in an [`Error`].
pub mod add;
pub mod diff;
pub mod dockerfile;
mod error;
pub mod init;
pub mod layout;
pub mod list;
pub mod mermaid;
pub mod migrate;
pub mod references;
mod semver_template;
mod substitutes_template;
pub mod svg;
pub mod template;
pub mod template_render;

pub use error::Error;

use catalog::property::{self, Typed};
use catalog::semver::Version;
use catalog::{Bundle, DeclarativeConfig};
use std::collections::HashMap;

/// A bundle's package and version from its single `olm.package` property, with upstream's
/// messages for the ways that can fail.
pub(crate) fn bundle_package_version(b: &Bundle) -> Result<(String, Version), String> {
    let mut packages = Vec::new();
    for (i, p) in b.properties.iter().enumerate() {
        match property::parse(p) {
            Ok(Typed::Package {
                package_name,
                version,
                ..
            }) => packages.push((package_name, version)),
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "parse properties for bundle {:?}: parse property[{i}] of type {:?}: {e}",
                    b.name, p.kind
                ));
            }
        }
    }
    let [(package, version)] = <[_; 1]>::try_from(packages).map_err(|_| {
        format!(
            "bundle {:?} has multiple \"olm.package\" properties, expected exactly 1",
            b.name
        )
    })?;
    let parsed = Version::parse(&version)
        .map_err(|e| format!("bundle {:?} has invalid version {version:?}: {e}", b.name))?;
    Ok((package, parsed))
}

/// Every bundle's version by name; the first bundle of a name wins, as upstream's map does.
pub(crate) fn bundle_versions(dc: &DeclarativeConfig) -> Result<HashMap<String, Version>, String> {
    let mut versions = HashMap::new();
    for b in &dc.bundles {
        if !versions.contains_key(&b.name) {
            versions.insert(b.name.clone(), bundle_package_version(b)?.1);
        }
    }
    Ok(versions)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_substitutes;
