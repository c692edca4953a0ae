//! The platform filter (`platforms: [{os, architecture}]`): which manifests of an image
//! index are copied.
//!
//! A cluster pulls an image named by digest by that digest, and mirror sets map
//! repositories, not digests: such an image keeps its index byte for byte, with only the
//! kept platforms' manifests and blobs copied (a sparse index), where the destination takes
//! one. An image named only by tag is pulled by tag: it gets a rewritten index naming only
//! the kept platforms (a new digest).
use crate::config::Platform;
use bytes::Bytes;
use serde_json::Value;

/// What the filter keeps of one index.
#[derive(Debug, PartialEq)]
pub(crate) struct Selection {
    /// The digests of the kept manifests, in index order.
    pub(crate) kept: Vec<String>,
    /// Whether some manifest was left out.
    pub(crate) partial: bool,
    /// The index naming only the kept manifests (the original bytes when none was left out).
    pub(crate) rewritten: Bytes,
}

fn matches(platforms: &[Platform], entry: &Value) -> bool {
    let p = &entry["platform"];
    platforms.iter().any(|want| {
        p["os"].as_str() == Some(want.os.as_str())
            && p["architecture"].as_str() == Some(want.architecture.as_str())
    })
}

/// The `os/architecture` of an index entry, when it names both.
pub(crate) fn platform_of(entry: &Value) -> Option<String> {
    let p = &entry["platform"];
    Some(format!(
        "{}/{}",
        p["os"].as_str()?,
        p["architecture"].as_str()?
    ))
}

fn describe(entry: &Value) -> String {
    platform_of(entry).unwrap_or_else(|| "no platform".to_owned())
}

/// The manifests of `index` whose platform is one of `platforms`; an error, naming what
/// the index offers, when none is.
pub(crate) fn select(index: &Bytes, platforms: &[Platform]) -> Result<Selection, String> {
    let mut v: Value = serde_json::from_slice(index).map_err(|e| e.to_string())?;
    let entries = v["manifests"].as_array().cloned().unwrap_or_default();
    let (kept, dropped): (Vec<Value>, Vec<Value>) =
        entries.into_iter().partition(|e| matches(platforms, e));
    if kept.is_empty() {
        let wanted: Vec<String> = platforms.iter().map(Platform::to_string).collect();
        let offered: Vec<String> = dropped.iter().map(describe).collect();
        return Err(format!(
            "no manifest of the index is for {} (it has {})",
            wanted.join(", "),
            offered.join(", ")
        ));
    }
    let digests = kept
        .iter()
        .map(|e| e["digest"].as_str().unwrap_or_default().to_owned())
        .collect();
    let rewritten = if dropped.is_empty() {
        index.clone()
    } else {
        v["manifests"] = Value::Array(kept);
        Bytes::from(serde_json::to_vec(&v).map_err(|e| e.to_string())?)
    };
    Ok(Selection {
        kept: digests,
        partial: !dropped.is_empty(),
        rewritten,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platform(os: &str, architecture: &str) -> Platform {
        Platform {
            os: os.into(),
            architecture: architecture.into(),
        }
    }

    fn index() -> Bytes {
        Bytes::from(
            serde_json::to_vec(&serde_json::json!({
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.index.v1+json",
                "manifests": [
                    {"digest": "sha256:a", "platform": {"os": "linux", "architecture": "amd64"}},
                    {"digest": "sha256:b", "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}},
                    {"digest": "sha256:c", "platform": {"os": "linux", "architecture": "s390x"}},
                    {"digest": "sha256:d", "platform": {"os": "unknown", "architecture": "unknown"}},
                ],
            }))
            .unwrap(),
        )
    }

    #[test]
    fn keeps_the_named_platforms_any_variant_and_rewrites_the_index() {
        let s = select(
            &index(),
            &[platform("linux", "arm64"), platform("linux", "amd64")],
        )
        .unwrap();
        assert_eq!(s.kept, ["sha256:a", "sha256:b"]);
        assert!(s.partial);
        let v: Value = serde_json::from_slice(&s.rewritten).unwrap();
        let digests: Vec<&str> = v["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["digest"].as_str().unwrap())
            .collect();
        assert_eq!(digests, ["sha256:a", "sha256:b"]);
        assert_eq!(v["mediaType"], "application/vnd.oci.image.index.v1+json");
    }

    #[test]
    fn every_platform_kept_leaves_the_bytes_and_none_kept_is_an_error() {
        let all = [
            platform("linux", "amd64"),
            platform("linux", "arm64"),
            platform("linux", "s390x"),
            platform("unknown", "unknown"),
        ];
        let s = select(&index(), &all).unwrap();
        assert!(!s.partial);
        assert_eq!(s.rewritten, index());
        assert_eq!(
            select(&index(), &[platform("windows", "amd64")]).unwrap_err(),
            "no manifest of the index is for windows/amd64 (it has linux/amd64, linux/arm64, linux/s390x, unknown/unknown)"
        );
    }
}
