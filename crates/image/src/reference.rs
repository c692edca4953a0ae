//! What a user may name as an image: a registry reference (`quay.io/ns/repo:tag`,
//! `…@sha256:…`, Docker Hub short names) or an OCI image layout directory (`oci:DIR[:TAG]`).
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageRef {
    Registry(oci_client::Reference),
    /// An OCI image layout on disk; `tag` picks a manifest by its ref-name annotation, None
    /// means the layout's only manifest.
    Layout {
        dir: PathBuf,
        tag: Option<String>,
    },
}

impl ImageRef {
    pub fn parse(s: &str) -> Result<ImageRef, String> {
        if let Some(rest) = s.strip_prefix("oci:") {
            // `oci:DIR:TAG`; a colon inside DIR is not supported (it would be ambiguous).
            let (dir, tag) = match rest.rsplit_once(':') {
                Some((dir, tag)) if !tag.contains('/') && !dir.is_empty() => {
                    (dir, Some(tag.to_owned()))
                }
                _ => (rest, None),
            };
            if dir.is_empty() {
                return Err(format!(
                    "invalid image reference {s:?}: oci: needs a directory"
                ));
            }
            return Ok(ImageRef::Layout {
                dir: PathBuf::from(dir),
                tag,
            });
        }
        let r = s.strip_prefix("docker://").unwrap_or(s);
        oci_client::Reference::try_from(r)
            .map(ImageRef::Registry)
            .map_err(|e| format!("invalid image reference {s:?}: {e}"))
    }
}

impl std::fmt::Display for ImageRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImageRef::Registry(r) => write!(f, "{}", r.whole()),
            ImageRef::Layout {
                dir,
                tag: Some(tag),
            } => write!(f, "oci:{}:{tag}", dir.display()),
            ImageRef::Layout { dir, tag: None } => write!(f, "oci:{}", dir.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_registry_and_layout_references() {
        let ImageRef::Registry(r) = ImageRef::parse("quay.io/ns/bundle:v1").unwrap() else {
            panic!()
        };
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("quay.io", "ns/bundle", Some("v1"))
        );
        let ImageRef::Registry(r) = ImageRef::parse("127.0.0.1:5000/b@sha256:0123456789012345678901234567890123456789012345678901234567890123").unwrap() else {
            panic!()
        };
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert!(r.digest().unwrap().starts_with("sha256:0123"));
        let ImageRef::Registry(r) = ImageRef::parse("docker://busybox").unwrap() else {
            panic!()
        };
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("docker.io", "library/busybox", Some("latest"))
        );
        assert_eq!(
            ImageRef::parse("oci:/tmp/layout:v2").unwrap(),
            ImageRef::Layout {
                dir: "/tmp/layout".into(),
                tag: Some("v2".into())
            }
        );
        assert_eq!(
            ImageRef::parse("oci:./l").unwrap(),
            ImageRef::Layout {
                dir: "./l".into(),
                tag: None
            }
        );
        assert!(
            ImageRef::parse("Not A Ref!")
                .unwrap_err()
                .starts_with("invalid image reference \"Not A Ref!\"")
        );
        assert_eq!(
            ImageRef::parse("oci:").unwrap_err(),
            "invalid image reference \"oci:\": oci: needs a directory"
        );
    }
}
