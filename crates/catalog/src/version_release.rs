//! The order key of OLM v1 bundles, version plus release (resolution spec §3.2).
use std::cmp::Ordering;
use std::fmt;

use crate::property::PACKAGE;
use crate::semver::{Prerelease, Version, compare_prerelease};
use crate::types::Bundle;

/// Longest build metadata that is still read as a release.
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
        let build = version.build.join(".");
        let release = if !build.is_empty() && build.len() <= MAX_RELEASE_LEN {
            version
                .build
                .iter()
                .map(|id| Prerelease::parse(id))
                .collect::<Result<Vec<_>, _>>()
                .ok()
        } else {
            None
        };
        let release = match release {
            Some(release) => {
                version.build.clear();
                release
            }
            None => Vec::new(),
        };
        Ok(VersionRelease { version, release })
    }

    /// The bundle's key from its `olm.package` property; `None` when it has none or the
    /// version does not parse (such bundles sort after every valid one).
    pub fn of_bundle(bundle: &Bundle) -> Option<VersionRelease> {
        let p = bundle.properties.iter().find(|p| p.kind == PACKAGE)?;
        let value: serde_json::Value = serde_json::from_str(&p.value).ok()?;
        VersionRelease::parse(value.get("version")?.as_str()?).ok()
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
