//! What refers to an image and travels with it (unless `--remove-signatures`):
//!
//! - sigstore/cosign tag-scheme attachments: for a manifest `sha256:H`, the tags
//!   `sha256-H.sig`, `sha256-H.att` and `sha256-H.sbom` in the same repository;
//! - OCI 1.1 referrers, manifests whose `subject` is the image: listed by the registry's
//!   referrers API (`GET /v2/<name>/referrers/<digest>`) or, where it has none, by the
//!   index at the fallback tag `sha256-H`.
//!
//! For an index, its platform manifests' attachments count too. An image with none costs
//! the tag list of its repository (asked once per repository) and, on a registry with a
//! referrers API, one request per manifest; a registry without that API is asked once.
//!
//! At the destination, [`publish_referrers`] makes the referrers listed where clients look:
//! nothing to do where the registry's referrers API indexes them itself, else the fallback
//! tag gets an index of them.
use super::plan::digest_tag;
use bytes::Bytes;
use image::layout::digest_of;
use image::remote::{manifest_media_type, retry_remote};
use image::{Error, ErrorKind, Registry};
use oci_client::Reference;
use oci_client::manifest::OCI_IMAGE_INDEX_MEDIA_TYPE;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::OnceCell;

/// The tag-scheme suffixes cosign uses: signatures, attestations, SBOMs.
const TAG_SUFFIXES: [&str; 3] = ["sig", "att", "sbom"];

/// The media type of cosign's simple-signing payload (a signature's layer).
const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// The most a simple-signing payload may weigh (cosign's are a few hundred bytes).
const MAX_PAYLOAD_BYTES: u64 = 64 << 10;

/// How an attachment is tied to the manifest it refers to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Link {
    /// A cosign tag-scheme attachment, under this tag (`sha256-<hex>.sig` …).
    Tag(String),
    /// An OCI 1.1 referrer (its `subject` names the manifest).
    Referrer,
    /// The index at the fallback tag `sha256-<hex>` that lists the referrers, itself.
    FallbackIndex,
}

/// One manifest that refers to an image's manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Attachment {
    /// The manifest it refers to: the image, or one platform manifest of its index.
    pub(crate) subject: String,
    /// Its own manifest's digest.
    pub(crate) digest: String,
    pub(crate) link: Link,
}

/// Finds attachments, remembering each repository's tags and whether each registry has a
/// referrers API, so that images in the same repository or registry do not ask again.
pub(crate) struct Finder {
    registry: Arc<Registry>,
    tags: Memo<Arc<BTreeSet<String>>>,
    /// By registry: whether it answered the referrers API (set by the first image asked).
    api: Memo<bool>,
}

/// Answers by key, each asked once: later askers wait for the first one's answer.
type Memo<T> = Mutex<HashMap<String, Arc<OnceCell<T>>>>;

/// The cell of `key` in `memo`.
fn cell<T>(memo: &Memo<T>, key: String) -> Result<Arc<OnceCell<T>>, Error> {
    let mut cells = memo.lock().map_err(|_| {
        Error::new(
            ErrorKind::Other,
            "a cache of the attachment finder is poisoned",
        )
    })?;
    Ok(cells.entry(key).or_default().clone())
}

impl Finder {
    pub(crate) fn new(registry: Arc<Registry>) -> Finder {
        Finder {
            registry,
            tags: Mutex::new(HashMap::new()),
            api: Mutex::new(HashMap::new()),
        }
    }

    /// Every attachment of the manifest `digest` in `registry/repository` and, when it is an
    /// index, of each manifest it lists: per manifest, its cosign tags (`.sig`, `.att`,
    /// `.sbom`), then its referrers (and the fallback index that lists them, when that is
    /// how the registry shows them).
    pub(crate) async fn find(
        &self,
        registry: &str,
        repository: &str,
        digest: &str,
    ) -> Result<Vec<Attachment>, Error> {
        let at = |d: &str| {
            Reference::with_digest(registry.to_owned(), repository.to_owned(), d.to_owned())
        };
        let top = at(digest);
        let tags = self.tags_of(&top).await?;
        // The first image of a registry tells whether it has the API; the others wait for
        // that answer rather than ask too.
        let known = cell(&self.api, registry.to_owned())?;
        let mut first_answer = None;
        let (slot, probe) = (&mut first_answer, &top);
        let api = *known
            .get_or_try_init(|| async move {
                let answer = self.referrers(probe, digest).await?;
                let has_api = answer.is_some();
                *slot = Some(answer);
                Ok::<_, Error>(has_api)
            })
            .await?;
        // A platform manifest's attachments are tagged, or listed by the API: the index is
        // read only when either may hold some.
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        let others_tagged = tags.iter().filter_map(|t| tagged_hex(t)).any(|h| h != hex);
        let mut subjects = vec![digest.to_owned()];
        if api || others_tagged {
            let (body, _) = retry_remote(self.registry.retry_policy(), || {
                self.registry.get_manifest(&top)
            })
            .await?;
            subjects.extend(children(&body));
        }
        let mut found = Vec::new();
        for subject in &subjects {
            let tag_prefix = digest_tag(subject);
            for suffix in TAG_SUFFIXES {
                let tag = format!("{tag_prefix}.{suffix}");
                if tags.contains(&tag) {
                    let r = Reference::with_tag(
                        registry.to_owned(),
                        repository.to_owned(),
                        tag.clone(),
                    );
                    let digest = retry_remote(self.registry.retry_policy(), || {
                        self.registry.resolve_digest(&r)
                    })
                    .await?;
                    found.push(Attachment {
                        subject: subject.clone(),
                        digest,
                        link: Link::Tag(tag),
                    });
                }
            }
            let listed = if api {
                match first_answer.take() {
                    Some(answer) if subject == digest => answer,
                    _ => self.referrers(&at(subject), subject).await?,
                }
            } else if tags.contains(&tag_prefix) {
                let r = Reference::with_tag(
                    registry.to_owned(),
                    repository.to_owned(),
                    tag_prefix.clone(),
                );
                let (body, _) = retry_remote(self.registry.retry_policy(), || {
                    self.registry.get_manifest(&r)
                })
                .await?;
                let index = digest_of(&body);
                // The tag may be the image itself (a mirror tags digest-only images so).
                if index == *subject
                    || serde_json::from_slice::<Value>(&body)
                        .map_or(true, |v| v.get("manifests").is_none())
                {
                    None
                } else {
                    found.push(Attachment {
                        subject: subject.clone(),
                        digest: index,
                        link: Link::FallbackIndex,
                    });
                    Some(body)
                }
            } else {
                None
            };
            for referrer in listed.as_deref().map(children).unwrap_or_default() {
                found.push(Attachment {
                    subject: subject.clone(),
                    digest: referrer,
                    link: Link::Referrer,
                });
            }
        }
        Ok(found)
    }

    /// The tags of `r`'s repository, asked once.
    async fn tags_of(&self, r: &Reference) -> Result<Arc<BTreeSet<String>>, Error> {
        let key = format!("{}/{}", r.registry(), r.repository());
        cell(&self.tags, key)?
            .get_or_try_init(|| async {
                let tags =
                    retry_remote(self.registry.retry_policy(), || self.registry.list_tags(r))
                        .await?;
                Ok(Arc::new(tags.into_iter().collect()))
            })
            .await
            .cloned()
    }

    async fn referrers(&self, r: &Reference, digest: &str) -> Result<Option<Bytes>, Error> {
        retry_remote(self.registry.retry_policy(), || {
            self.registry.referrers(r, digest)
        })
        .await
    }

    /// Checks that an attachment is about its subject: a cosign signature's payload names
    /// the subject's digest, a referrer's `subject` is the subject. Returns what it claims
    /// instead, when it claims another manifest.
    pub(crate) async fn claims_other(
        &self,
        registry: &str,
        repository: &str,
        attachment: &Attachment,
    ) -> Result<Option<String>, Error> {
        let r = Reference::with_digest(
            registry.to_owned(),
            repository.to_owned(),
            attachment.digest.clone(),
        );
        let claimed = match &attachment.link {
            Link::FallbackIndex => return Ok(None),
            Link::Tag(tag) if !tag.ends_with(".sig") => return Ok(None),
            Link::Referrer => {
                let (body, _) = retry_remote(self.registry.retry_policy(), || {
                    self.registry.get_manifest(&r)
                })
                .await?;
                let manifest: Value = serde_json::from_slice(&body).unwrap_or_default();
                vec![
                    manifest["subject"]["digest"]
                        .as_str()
                        .unwrap_or("none")
                        .to_owned(),
                ]
            }
            Link::Tag(_) => {
                let (body, _) = retry_remote(self.registry.retry_policy(), || {
                    self.registry.get_manifest(&r)
                })
                .await?;
                let mut claimed = Vec::new();
                for (digest, size) in payloads(&body) {
                    let payload = retry_remote(self.registry.retry_policy(), || {
                        self.registry
                            .small_blob(&r, &digest, size, MAX_PAYLOAD_BYTES)
                    })
                    .await?;
                    let payload: Value = serde_json::from_slice(&payload).unwrap_or_default();
                    claimed.push(
                        payload["critical"]["image"]["docker-manifest-digest"]
                            .as_str()
                            .unwrap_or("none")
                            .to_owned(),
                    );
                }
                claimed
            }
        };
        Ok(claimed.into_iter().find(|c| *c != attachment.subject))
    }
}

/// The hex a tag names when it is an attachment tag or a fallback tag
/// (`sha256-<hex>[.sig|.att|.sbom]`).
fn tagged_hex(tag: &str) -> Option<&str> {
    let rest = tag.strip_prefix("sha256-")?;
    let hex = rest.split_once('.').map_or(rest, |(hex, suffix)| {
        if TAG_SUFFIXES.contains(&suffix) {
            hex
        } else {
            ""
        }
    });
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

/// The digests an index lists (none for an image manifest).
fn children(body: &[u8]) -> Vec<String> {
    let v: Value = serde_json::from_slice(body).unwrap_or_default();
    v["manifests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["digest"].as_str().map(str::to_owned))
        .collect()
}

/// The simple-signing layers of a cosign signature manifest: (digest, size).
fn payloads(body: &[u8]) -> Vec<(String, u64)> {
    let v: Value = serde_json::from_slice(body).unwrap_or_default();
    v["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["mediaType"].as_str() == Some(SIMPLE_SIGNING))
        .filter_map(|l| Some((l["digest"].as_str()?.to_owned(), l["size"].as_u64()?)))
        .collect()
}

/// The descriptor of a referrer in a referrers index: its media type, digest, size,
/// artifact type (`artifactType`, else its config's media type) and annotations.
fn descriptor(body: &[u8]) -> Result<Value, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let mut d = json!({
        "mediaType": manifest_media_type(body)?,
        "digest": digest_of(body),
        "size": body.len(),
    });
    let artifact_type = v["artifactType"]
        .as_str()
        .or_else(|| v["config"]["mediaType"].as_str());
    if let Some(t) = artifact_type {
        d["artifactType"] = json!(t);
    }
    if let Some(a) = v.get("annotations").filter(|a| a.is_object()) {
        d["annotations"] = a.clone();
    }
    Ok(d)
}

/// Makes the repository of `at` list `referrers` (already there) as referrers of
/// `subject`. A registry with a referrers API indexes them as they are pushed: nothing to
/// do. Else the fallback tag `sha256-<hex>` gets an index of them, merged with those it
/// listed already (another tool's may be among them); it is written only when something is
/// missing from it, so a rerun writes nothing.
pub(crate) async fn publish_referrers(
    registry: &Registry,
    at: &Reference,
    subject: &str,
    referrers: &[String],
) -> Result<(), Error> {
    let policy = registry.retry_policy();
    let subject_ref = at.clone_with_digest(subject.to_owned());
    if retry_remote(policy, || registry.referrers(&subject_ref, subject))
        .await?
        .is_some()
    {
        return Ok(());
    }
    let fallback = Reference::with_tag(
        at.registry().to_owned(),
        at.repository().to_owned(),
        digest_tag(subject),
    );
    let mut listed: Vec<Value> =
        match retry_remote(policy, || registry.get_manifest(&fallback)).await {
            Ok((body, _)) if digest_of(&body) != subject => serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v["manifests"].as_array().cloned())
                .unwrap_or_default(),
            Ok(_) => Vec::new(),
            Err(e) if e.kind == ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
    let mut changed = false;
    for digest in referrers {
        if listed.iter().any(|d| d["digest"].as_str() == Some(digest)) {
            continue;
        }
        let r = at.clone_with_digest(digest.clone());
        let (body, _) = retry_remote(policy, || registry.get_manifest(&r)).await?;
        let d = descriptor(&body).map_err(|e| {
            Error::new(
                ErrorKind::InvalidContent,
                format!("referrer {}: {e}", r.whole()),
            )
        })?;
        listed.push(d);
        changed = true;
    }
    if !changed {
        return Ok(());
    }
    let index = json!({
        "schemaVersion": 2,
        "mediaType": OCI_IMAGE_INDEX_MEDIA_TYPE,
        "manifests": listed,
    });
    let body = Bytes::from(index.to_string());
    retry_remote(policy, || {
        registry.put_manifest(&fallback, body.clone(), OCI_IMAGE_INDEX_MEDIA_TYPE)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn attachment_and_fallback_tags_name_a_digest() {
        assert_eq!(tagged_hex(&format!("sha256-{HEX}.sig")), Some(HEX));
        assert_eq!(tagged_hex(&format!("sha256-{HEX}.att")), Some(HEX));
        assert_eq!(tagged_hex(&format!("sha256-{HEX}.sbom")), Some(HEX));
        assert_eq!(tagged_hex(&format!("sha256-{HEX}")), Some(HEX));
        assert_eq!(tagged_hex(&format!("sha256-{HEX}.other")), None);
        assert_eq!(tagged_hex("sha256-abc.sig"), None);
        assert_eq!(tagged_hex("v1.0"), None);
    }

    #[test]
    fn a_referrer_is_described_by_its_artifact_type_and_annotations() {
        let body = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "artifactType": "application/spdx+json",
            "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", "size": 2},
            "layers": [],
            "annotations": {"org.example": "sbom"},
        })
        .to_string();
        let d = descriptor(body.as_bytes()).unwrap();
        assert_eq!(
            d,
            json!({
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": digest_of(body.as_bytes()),
                "size": body.len(),
                "artifactType": "application/spdx+json",
                "annotations": {"org.example": "sbom"},
            })
        );
        // Without artifactType, the config's media type says what it is.
        let old = json!({"schemaVersion": 2, "config": {"mediaType": "application/x-sbom"}, "layers": []})
            .to_string();
        assert_eq!(
            descriptor(old.as_bytes()).unwrap()["artifactType"],
            "application/x-sbom"
        );
    }
}
