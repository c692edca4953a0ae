//! The order key of OLM v1 bundles, version plus release (resolution spec §3.2).
use std::cmp::Ordering;
use std::fmt;

use crate::property::PACKAGE;
use crate::semver::{Prerelease, Version, compare_prerelease};
use crate::types::Bundle;

/// Longest release (and build metadata that is still read as one).
const MAX_RELEASE_LEN: usize = 20;

/// Equality is precedence equality: build metadata that is not a release is ignored.
#[derive(Clone, Debug)]
pub struct VersionRelease {
    pub version: Version,
    /// Empty when the bundle has no release.
    pub(crate) release: Vec<Prerelease>,
}

impl VersionRelease {
    /// The registry+v1 rule: a strict version whose build metadata, when it reads as a
    /// release (pre-release grammar, at most 20 characters), becomes the release.
    pub fn parse(text: &str) -> Result<VersionRelease, String> {
        let mut version = Version::parse(text)?;
        let release = match parse_release(&version.build.join(".")) {
            Ok(release) if !release.is_empty() => {
                version.build.clear();
                release
            }
            _ => Vec::new(),
        };
        Ok(VersionRelease { version, release })
    }

    /// A version and a separate release, as an explicit `release` field gives them: the
    /// version keeps its build metadata, and an empty release is no release.
    pub fn explicit(version: &str, release: &str) -> Result<VersionRelease, String> {
        let version = Version::parse(version)
            .map_err(|e| format!("error parsing version {version:?}: {e}"))?;
        let release = parse_release(release)
            .map_err(|e| format!("error parsing release {release:?}: {e}"))?;
        Ok(VersionRelease { version, release })
    }

    /// The bundle's key from its `olm.package` property, as OLM v1 reads it with
    /// `BundleReleaseSupport` on: an explicit `release` field is the release, otherwise the
    /// registry+v1 rule applies to the version. `None` when it has no such property or it
    /// does not parse (such bundles sort after every valid one).
    pub fn of_bundle(bundle: &Bundle) -> Option<VersionRelease> {
        let p = bundle.properties.iter().find(|p| p.kind == PACKAGE)?;
        let value: serde_json::Value = serde_json::from_str(&p.value).ok()?;
        let version = value.get("version")?.as_str()?;
        match value.get("release") {
            // Present, even empty: the field is the release (Go tells it from absent).
            Some(serde_json::Value::String(release)) => {
                VersionRelease::explicit(version, release).ok()
            }
            // `"release": null` decodes to no field in Go.
            None | Some(serde_json::Value::Null) => VersionRelease::parse(version).ok(),
            Some(_) => None,
        }
    }

    /// opm's key for a bundle (its `declcfg.Bundle.VersionRelease`, which the substitutes
    /// template compares): the `olm.package` version and `release`; a bundle without a
    /// release whose CSV carries `olm.substitutesFor` (the older way to mark a rebuild) takes
    /// its build metadata as the release. Errors are opm's words.
    pub fn of_bundle_opm(bundle: &Bundle) -> Result<VersionRelease, String> {
        let mut found = None;
        for p in bundle.properties.iter().filter(|p| p.kind == PACKAGE) {
            if found.is_some() {
                return Err(format!("must be exactly one property of type {PACKAGE:?}"));
            }
            let (version, release) = match crate::property::parse(p) {
                Ok(crate::property::Typed::Package {
                    version, release, ..
                }) => (version, release),
                Ok(_) => unreachable!("an olm.package property parses as a package"),
                Err(e) => {
                    return Err(format!(
                        "unable to unmarshal \"olm.package\" property for bundle {:?}: {e}",
                        bundle.name
                    ));
                }
            };
            let parsed = Version::parse(&version).map_err(|e| {
                format!(
                    "invalid semver version {version:?} in \"olm.package\" property for bundle {:?}: {e}",
                    bundle.name
                )
            })?;
            let release = parse_release(&release).map_err(|e| {
                format!(
                    "invalid release {release:?} in \"olm.package\" property for bundle {:?}: {e}",
                    bundle.name
                )
            })?;
            found = Some(VersionRelease {
                version: parsed,
                release,
            });
        }
        let mut vr = found.ok_or_else(|| {
            format!(
                "no \"olm.package\" property found for bundle {:?}",
                bundle.name
            )
        })?;
        if vr.release.is_empty()
            && !vr.version.build.is_empty()
            && crate::substitutes::substitutes_for(bundle).is_some()
        {
            vr.release = parse_release(&vr.version.build.join(".")).map_err(|e| {
                format!(
                    "unable to convert build metadata to release for bundle {:?}: {e}",
                    bundle.name
                )
            })?;
            vr.version.build.clear();
        }
        Ok(vr)
    }
}

/// Parses a release: dot-separated identifiers of the semver pre-release grammar, at most
/// 20 characters in all (the CSV CRD's limit); empty is no release. Errors are opm's.
pub(crate) fn parse_release(release: &str) -> Result<Vec<Prerelease>, String> {
    if release.is_empty() {
        return Ok(Vec::new());
    }
    if release.len() > MAX_RELEASE_LEN {
        return Err(format!(
            "invalid release {release:?}: exceeds maximum length of {MAX_RELEASE_LEN} characters"
        ));
    }
    let mut parts = Vec::new();
    let mut errors = Vec::new();
    for (i, segment) in release.split('.').enumerate() {
        match Prerelease::parse(segment) {
            Ok(p) => parts.push(p),
            Err(e) => errors.push(format!("segment {i}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(parts)
    } else {
        // opm joins the segments' errors with line breaks; one line keeps a validation
        // report's tree readable.
        Err(format!(
            "invalid release {release:?}: {}",
            errors.join("; ")
        ))
    }
}

impl VersionRelease {
    /// The release alone, dot-separated (empty when there is none).
    pub fn release_text(&self) -> String {
        self.release
            .iter()
            .map(|r| match r {
                Prerelease::Numeric(n) => n.to_string(),
                Prerelease::Alphanumeric(s) => s.clone(),
            })
            .collect::<Vec<_>>()
            .join(".")
    }
}

impl Ord for VersionRelease {
    /// Version precedence, then release: none is lower than any, two compare like
    /// pre-release lists.
    fn cmp(&self, other: &Self) -> Ordering {
        self.version.cmp(&other.version).then_with(|| {
            match (self.release.is_empty(), other.release.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                (false, false) => compare_prerelease(&self.release, &other.release),
            }
        })
    }
}

impl PartialEq for VersionRelease {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for VersionRelease {}

impl PartialOrd for VersionRelease {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for VersionRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.version)?;
        for (i, r) in self.release.iter().enumerate() {
            f.write_str(if i == 0 { "+" } else { "." })?;
            match r {
                Prerelease::Numeric(n) => write!(f, "{n}")?,
                Prerelease::Alphanumeric(s) => f.write_str(s)?,
            }
        }
        Ok(())
    }
}

/// Best-first order of optional keys: descending version+release, keys that could not be
/// read last (a stable sort keeps their input order).
pub fn best_first(a: &Option<VersionRelease>, b: &Option<VersionRelease>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => y.cmp(x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_metadata_becomes_the_release_when_it_can() {
        let vr = |s: &str| VersionRelease::parse(s).expect(s);
        assert_eq!(vr("1.0.0+2").to_string(), "1.0.0+2");
        assert_eq!(vr("1.0.0+2").release, vec![Prerelease::Numeric(2)]);
        assert!(vr("1.0.0+2").version.build.is_empty());
        // Leading zeros and over-long metadata stay build metadata.
        assert!(vr("1.0.0+01").release.is_empty());
        assert!(vr("1.0.0+aaaaaaaaaaaaaaaaaaaaa").release.is_empty());
        assert!(vr("1.0.0") < vr("1.0.0+1"));
        assert!(vr("1.0.0+1") < vr("1.0.0+2"));
        assert!(vr("1.0.0+01") == vr("1.0.0"));
        assert!(vr("1.0.0-alpha+2") < vr("1.0.0"));
    }
}
