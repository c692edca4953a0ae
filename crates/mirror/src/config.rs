//! `ImageSetConfiguration` (`mirror.openshift.io/v2alpha1`), the file oc-mirror v2 users
//! already write: which catalogs, which packages and versions of them, which extra images,
//! which images never to copy.
//!
//! Unknown fields are errors (a misspelt `minVersion` would silently mirror everything), and
//! every problem is reported at once, each with its path in the file.
use super::error::Error;
use catalog::semver::Version;
use serde::{Deserialize, Serialize};

pub(crate) const KIND: &str = "ImageSetConfiguration";
pub(crate) const DELETE_KIND: &str = "DeleteImageSetConfiguration";
pub(crate) const API_VERSION: &str = "mirror.openshift.io/v2alpha1";
const GIB: f64 = (1u64 << 30) as f64;

#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ImageSetConfiguration {
    pub(crate) kind: String,
    pub(crate) api_version: String,
    /// The largest tar file of an archive to disk, in GiB (oc-mirror's field; it takes whole
    /// numbers, we also take fractions such as 0.5). None: the archive is one directory.
    pub(crate) archive_size: Option<f64>,
    #[serde(default)]
    pub(crate) mirror: Mirror,
}

/// `DeleteImageSetConfiguration` (oc-mirror v2's `delete`): the same sections under
/// `delete:`, naming what an earlier image set mirrored and is to be removed.
#[derive(Debug, Deserialize, Clone, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct DeleteImageSetConfiguration {
    pub(crate) kind: String,
    pub(crate) api_version: String,
    #[serde(default)]
    pub(crate) delete: Mirror,
}

#[derive(Debug, Deserialize, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Mirror {
    #[serde(default)]
    pub(crate) operators: Vec<Operators>,
    #[serde(default)]
    pub(crate) additional_images: Vec<AdditionalImage>,
    #[serde(default)]
    pub(crate) blocked_images: Vec<BlockedImage>,
    /// Not supported: kept only to say so clearly.
    pub(crate) platform: Option<serde_yaml::Value>,
    /// Not supported: kept only to say so clearly.
    pub(crate) helm: Option<serde_yaml::Value>,
}

#[derive(Debug, Deserialize, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Operators {
    pub(crate) catalog: String,
    #[serde(default)]
    pub(crate) full: bool,
    #[serde(default)]
    pub(crate) packages: Vec<PackageFilter>,
    pub(crate) target_catalog: Option<String>,
    pub(crate) target_tag: Option<String>,
    /// The platforms to copy of every image of this catalog (none: every platform).
    #[serde(default)]
    pub(crate) platforms: Vec<Platform>,
}

/// One platform of a multi-platform image, as oc-mirror v2 writes it: `{os, architecture}`.
/// A variant (arm64's `v8`) is not part of the match: every variant of the architecture is
/// kept.
#[derive(Debug, Serialize, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Platform {
    pub(crate) os: String,
    pub(crate) architecture: String,
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)
    }
}

/// A `platforms` entry is a map of exactly `os` and `architecture`; the `os/arch` shorthand
/// other tools take is refused with the spelling this file needs (serde's own words would
/// be "expected struct Platform").
impl<'de> Deserialize<'de> for Platform {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Platform, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Fields {
            os: String,
            architecture: String,
        }
        let value = serde_yaml::Value::deserialize(d)?;
        let shown = |v: &serde_yaml::Value| {
            serde_yaml::to_string(v)
                .map(|s| s.trim().to_owned())
                .unwrap_or_default()
        };
        if !value.is_mapping() {
            return Err(serde::de::Error::custom(format!(
                "expected {{os: OS, architecture: ARCH}}, found {:?}",
                shown(&value)
            )));
        }
        let f: Fields = serde_yaml::from_value(value.clone()).map_err(|e| {
            serde::de::Error::custom(format!(
                "expected {{os: OS, architecture: ARCH}}, found {{{}}}: {e}",
                shown(&value).replace('\n', ", ")
            ))
        })?;
        Ok(Platform {
            os: f.os,
            architecture: f.architecture,
        })
    }
}

#[derive(Debug, Deserialize, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PackageFilter {
    pub(crate) name: String,
    pub(crate) default_channel: Option<String>,
    pub(crate) min_version: Option<String>,
    pub(crate) max_version: Option<String>,
    #[serde(default)]
    pub(crate) channels: Vec<ChannelFilter>,
}

#[derive(Debug, Deserialize, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct ChannelFilter {
    pub(crate) name: String,
    pub(crate) min_version: Option<String>,
    pub(crate) max_version: Option<String>,
}

#[derive(Debug, Deserialize, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct AdditionalImage {
    pub(crate) name: String,
    pub(crate) target_repo: Option<String>,
    pub(crate) target_tag: Option<String>,
    /// The platforms to copy of this image (none: every platform).
    #[serde(default)]
    pub(crate) platforms: Vec<Platform>,
}

#[derive(Debug, Deserialize, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct BlockedImage {
    /// A regular expression matched against image references.
    pub(crate) name: String,
}

impl ImageSetConfiguration {
    /// Parses and checks a configuration; the error lists every problem found.
    pub(crate) fn parse(file: &str, text: &str) -> Result<ImageSetConfiguration, Error> {
        let config: ImageSetConfiguration =
            serde_yaml::from_str(text).map_err(|source| Error::ConfigSyntax {
                file: file.to_owned(),
                source,
            })?;
        let problems = config.problems();
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(Error::Config {
                file: file.to_owned(),
                kind: KIND,
                problems,
            })
        }
    }

    /// `archiveSize` in bytes (whole bytes, rounded down), once [`Self::parse`] has checked it.
    pub(crate) fn archive_bytes(&self) -> Option<u64> {
        self.archive_size.map(|gib| (gib * GIB) as u64)
    }

    fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(gib) = self.archive_size
            && !(gib.is_finite() && gib * GIB >= 1.0)
        {
            out.push(format!(
                "archiveSize: expected a size in GiB greater than 0 (such as 4 or 0.5), found {gib}"
            ));
        }
        out.extend(head_problems(&self.kind, &self.api_version, KIND));
        out.extend(section_problems(&self.mirror, "mirror"));
        out
    }
}

/// The problems of a `mirror:` (or `delete:`) section, each with its path below `section`.
impl DeleteImageSetConfiguration {
    /// Parses and checks a delete configuration; the error lists every problem found.
    pub(crate) fn parse(file: &str, text: &str) -> Result<DeleteImageSetConfiguration, Error> {
        let config: DeleteImageSetConfiguration =
            serde_yaml::from_str(text).map_err(|source| Error::ConfigSyntax {
                file: file.to_owned(),
                source,
            })?;
        let mut problems = head_problems(&config.kind, &config.api_version, DELETE_KIND);
        problems.extend(section_problems(&config.delete, "delete"));
        if !config.delete.blocked_images.is_empty() {
            problems.push(
                "delete.blockedImages: not part of a DeleteImageSetConfiguration (name only what to delete)"
                    .to_owned(),
            );
        }
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(Error::Config {
                file: file.to_owned(),
                kind: DELETE_KIND,
                problems,
            })
        }
    }
}

fn head_problems(kind: &str, api_version: &str, want: &str) -> Vec<String> {
    let mut out = Vec::new();
    if kind != want {
        out.push(format!("kind: expected {want:?}, found {kind:?}"));
    }
    if api_version != API_VERSION {
        out.push(format!(
            "apiVersion: expected {API_VERSION:?}, found {api_version:?}"
        ));
    }
    out
}

fn section_problems(m: &Mirror, section: &str) -> Vec<String> {
    let mut out = Vec::new();
    if m.platform.is_some() {
        out.push(format!(
            "{section}.platform: mirroring platform releases is not supported"
        ));
    }
    if m.helm.is_some() {
        out.push(format!(
            "{section}.helm: mirroring Helm charts is not supported"
        ));
    }
    if m.operators.is_empty() && m.additional_images.is_empty() {
        out.push(format!(
            "{section}: nothing to {section} (no operators and no additionalImages)"
        ));
    }
    for (i, op) in m.operators.iter().enumerate() {
        let at = format!("{section}.operators[{i}]");
        if op.catalog.is_empty() {
            out.push(format!("{at}.catalog: required"));
        }
        check_platforms(&mut out, &at, &op.platforms);
        let mut seen = std::collections::BTreeSet::new();
        for (j, p) in op.packages.iter().enumerate() {
            let at = format!("{at}.packages[{j}] ({:?})", p.name);
            if p.name.is_empty() {
                out.push(format!("{at}.name: required"));
            }
            if !seen.insert(&p.name) {
                out.push(format!("{at}: package listed twice"));
            }
            let package_range = p.min_version.is_some() || p.max_version.is_some();
            if package_range && op.full {
                out.push(format!(
                    "{at}: minVersion/maxVersion cannot be combined with full: true"
                ));
            }
            check_range(&mut out, &at, &p.min_version, &p.max_version);
            for (k, c) in p.channels.iter().enumerate() {
                let at = format!("{at}.channels[{k}] ({:?})", c.name);
                if c.name.is_empty() {
                    out.push(format!("{at}.name: required"));
                }
                let channel_range = c.min_version.is_some() || c.max_version.is_some();
                if channel_range && package_range {
                    out.push(format!("{at}: a channel range cannot be combined with the package's minVersion/maxVersion"));
                }
                if channel_range && op.full {
                    out.push(format!(
                        "{at}: minVersion/maxVersion cannot be combined with full: true"
                    ));
                }
                check_range(&mut out, &at, &c.min_version, &c.max_version);
            }
        }
    }
    for (i, a) in m.additional_images.iter().enumerate() {
        let at = format!("{section}.additionalImages[{i}]");
        if a.name.is_empty() {
            out.push(format!("{at}.name: required"));
        }
        check_platforms(&mut out, &at, &a.platforms);
    }
    for (i, b) in m.blocked_images.iter().enumerate() {
        if let Err(e) = regex::Regex::new(&b.name) {
            // The regex error draws a caret diagram over several lines; its last line says it.
            let text = e.to_string();
            let why = text
                .lines()
                .last()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            out.push(format!(
                "{section}.blockedImages[{i}].name: invalid regular expression {:?}: {why}",
                b.name
            ));
        }
    }
    out
}

fn check_platforms(out: &mut Vec<String>, at: &str, platforms: &[Platform]) {
    let mut seen = std::collections::BTreeSet::new();
    for (i, p) in platforms.iter().enumerate() {
        if p.os.is_empty() || p.architecture.is_empty() {
            out.push(format!(
                "{at}.platforms[{i}]: os and architecture must both be named (found {p})"
            ));
        } else if !seen.insert(p) {
            out.push(format!("{at}.platforms[{i}]: {p} listed twice"));
        }
    }
}

fn check_range(out: &mut Vec<String>, at: &str, min: &Option<String>, max: &Option<String>) {
    let parse = |field: &str, v: &Option<String>, out: &mut Vec<String>| {
        v.as_ref().and_then(|s| match Version::parse(s) {
            Ok(v) => Some(v),
            Err(e) => {
                out.push(format!("{at}.{field}: invalid version {s:?}: {e}"));
                None
            }
        })
    };
    let (lo, hi) = (parse("minVersion", min, out), parse("maxVersion", max, out));
    if let (Some(lo), Some(hi)) = (lo, hi)
        && lo > hi
    {
        out.push(format!("{at}: minVersion {lo} is above maxVersion {hi}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\n";

    #[test]
    fn reads_the_oc_mirror_fields() {
        let text = format!(
            "{HEAD}mirror:
  operators:
  - catalog: registry.example.com/catalog:v4.16
    targetCatalog: mirrored/catalog
    targetTag: v1
    packages:
    - name: cache-operator
      defaultChannel: fast
      channels:
      - name: fast
        minVersion: 1.2.0
    - name: queue-operator
      minVersion: 0.5.0
      maxVersion: 0.6.0
  additionalImages:
  - name: registry.example.com/tools/debug:latest
  blockedImages:
  - name: .*/unwanted/.*
"
        );
        let c = ImageSetConfiguration::parse("isc.yaml", &text).unwrap();
        let op = &c.mirror.operators[0];
        assert_eq!(op.target_catalog.as_deref(), Some("mirrored/catalog"));
        assert_eq!(
            op.packages[0].channels[0].min_version.as_deref(),
            Some("1.2.0")
        );
        assert_eq!(op.packages[1].max_version.as_deref(), Some("0.6.0"));
        assert_eq!(c.mirror.blocked_images[0].name, ".*/unwanted/.*");
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let text = format!(
            "{HEAD}mirror:
  platform: {{channels: [{{name: stable-4.16}}]}}
  operators:
  - catalog: registry.example.com/catalog:v4.16
    full: true
    packages:
    - name: a
      minVersion: 2.0.0
      maxVersion: 1.0.0
      channels:
      - name: stable
        maxVersion: 1.x
  blockedImages:
  - name: '(unclosed'
"
        );
        let err = ImageSetConfiguration::parse("isc.yaml", &text)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "isc.yaml: invalid ImageSetConfiguration:
  mirror.platform: mirroring platform releases is not supported
  mirror.operators[0].packages[0] (\"a\"): minVersion/maxVersion cannot be combined with full: true
  mirror.operators[0].packages[0] (\"a\"): minVersion 2.0.0 is above maxVersion 1.0.0
  mirror.operators[0].packages[0] (\"a\").channels[0] (\"stable\"): a channel range cannot be combined with the package's minVersion/maxVersion
  mirror.operators[0].packages[0] (\"a\").channels[0] (\"stable\"): minVersion/maxVersion cannot be combined with full: true
  mirror.operators[0].packages[0] (\"a\").channels[0] (\"stable\").maxVersion: invalid version \"1.x\": No Major.Minor.Patch elements found
  mirror.blockedImages[0].name: invalid regular expression \"(unclosed\": unclosed group"
        );
    }

    #[test]
    fn archive_size_is_in_gib_and_greater_than_zero() {
        let parse = |size: &str| {
            ImageSetConfiguration::parse(
                "isc.yaml",
                &format!(
                    "{HEAD}archiveSize: {size}\nmirror:\n  additionalImages:\n  - name: r/a:v1\n"
                ),
            )
        };
        assert_eq!(parse("4").unwrap().archive_bytes(), Some(4 << 30));
        assert_eq!(parse("0.5").unwrap().archive_bytes(), Some(1 << 29));
        for bad in ["0", "-1", ".nan", "1e-300"] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(
                err.starts_with("isc.yaml: invalid ImageSetConfiguration:\n  archiveSize: expected a size in GiB greater than 0 (such as 4 or 0.5), found "),
                "{bad}: {err}"
            );
        }
        assert!(
            parse("4G")
                .unwrap_err()
                .to_string()
                .starts_with("isc.yaml: archiveSize: invalid type: string \"4G\""),
        );
    }

    #[test]
    fn misspelt_fields_and_wrong_kinds_are_errors() {
        let err = ImageSetConfiguration::parse(
            "isc.yaml",
            &format!("{HEAD}mirror:\n  operators:\n  - catalog: c\n    packages:\n    - name: a\n      minVersoin: 1.0.0\n"),
        )
        .unwrap_err().to_string();
        assert!(
            err.starts_with(
                "isc.yaml: mirror.operators[0].packages[0]: unknown field `minVersoin`"
            ),
            "{err}"
        );
        let err = ImageSetConfiguration::parse("isc.yaml", "kind: Other\napiVersion: v1\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "isc.yaml: invalid ImageSetConfiguration:
  kind: expected \"ImageSetConfiguration\", found \"Other\"
  apiVersion: expected \"mirror.openshift.io/v2alpha1\", found \"v1\"
  mirror: nothing to mirror (no operators and no additionalImages)"
        );
    }

    #[test]
    fn platforms_are_os_and_architecture_maps() {
        let parse = |platforms: &str| {
            ImageSetConfiguration::parse(
                "isc.yaml",
                &format!(
                    "{HEAD}mirror:\n  additionalImages:\n  - name: r/a:v1\n    platforms: {platforms}\n"
                ),
            )
        };
        let c = parse("[{os: linux, architecture: arm64}]").unwrap();
        assert_eq!(
            c.mirror.additional_images[0].platforms,
            [Platform {
                os: "linux".into(),
                architecture: "arm64".into()
            }]
        );
        let err = |platforms: &str| parse(platforms).unwrap_err().to_string();
        assert!(
            err("[linux/amd64]").starts_with(
                "isc.yaml: mirror.additionalImages[0].platforms: expected {os: OS, architecture: ARCH}, found \"linux/amd64\" at line 6"
            ),
            "{}",
            err("[linux/amd64]")
        );
        let e = err("[{os: linux, arch: amd64}]");
        assert!(
            e.starts_with("isc.yaml: mirror.additionalImages[0].platforms: expected {os: OS, architecture: ARCH}, found {os: linux, arch: amd64}: unknown field `arch`"),
            "{e}"
        );
        assert_eq!(
            err(
                "[{os: linux, architecture: ''}, {os: linux, architecture: s390x}, {os: linux, architecture: s390x}]"
            ),
            "isc.yaml: invalid ImageSetConfiguration:
  mirror.additionalImages[0].platforms[0]: os and architecture must both be named (found linux/)
  mirror.additionalImages[0].platforms[2]: linux/s390x listed twice"
        );
    }
}
