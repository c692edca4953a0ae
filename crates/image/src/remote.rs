//! Copying images whole between registries: manifests as raw bytes by digest (an index keeps
//! every platform, so digests stay identical), blob existence, cross-repository mounts, and
//! blobs streamed through without ever holding a layer in memory.
use super::error::{Error, ErrorKind};
use super::layout::digest_of;
use super::registry::{Backoff, Registry, RetryPolicy};
use bytes::Bytes;
use oci_client::errors::{DigestError, OciDistributionError};
use oci_client::manifest::{
    IMAGE_MANIFEST_LIST_MEDIA_TYPE, IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
};
use oci_client::{Reference, RegistryOperation};
use std::pin::Pin;
use tokio_stream::{Stream, StreamExt};

/// The manifest kinds a copy carries: OCI and Docker schema 2, images and indexes.
pub const MANIFEST_MEDIA_TYPES: [&str; 4] = [
    OCI_IMAGE_MEDIA_TYPE,
    OCI_IMAGE_INDEX_MEDIA_TYPE,
    IMAGE_MANIFEST_MEDIA_TYPE,
    IMAGE_MANIFEST_LIST_MEDIA_TYPE,
];

/// The most pages of tags one repository may answer with.
const MAX_TAG_PAGES: usize = 1000;

/// Blob bytes as they arrive.
pub type BlobStream = Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>;

/// Runs a registry operation again after each transient failure, as `policy` allows.
pub async fn retry_remote<T, F, Fut>(policy: RetryPolicy, mut op: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut backoff = Backoff::new(policy);
    loop {
        match op().await {
            Err(e) if e.is_transient() && backoff.again(&e).await => {}
            other => return other,
        }
    }
}

/// True when a stream error says that the bytes did not match their digest.
pub fn is_digest_mismatch(e: &std::io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.downcast_ref::<DigestError>().is_some())
}

/// The media type a manifest declares; OCI allows leaving it out, then its shape says.
pub fn manifest_media_type(body: &[u8]) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("manifest is not JSON: {e}"))?;
    Ok(match v["mediaType"].as_str() {
        Some(t) => t.to_owned(),
        None if v.get("manifests").is_some() => OCI_IMAGE_INDEX_MEDIA_TYPE.to_owned(),
        None => OCI_IMAGE_MEDIA_TYPE.to_owned(),
    })
}

impl Registry {
    /// The digest a tag (or digest) reference names now.
    pub async fn resolve_digest(&self, r: &Reference) -> Result<String, Error> {
        let what = format!("resolve {}", r.whole());
        let auth = self.auth(r);
        self.client
            .fetch_manifest_digest(r, &auth)
            .await
            .map_err(|e| Error::from_oci(&what, &e))
    }

    /// A manifest's bytes exactly as stored, checked against the reference's digest when it
    /// has one, and its media type.
    pub async fn get_manifest(&self, r: &Reference) -> Result<(Bytes, String), Error> {
        self.manifest(r, &format!("manifest {}", r.whole())).await
    }

    /// [`Registry::get_manifest`], with `what` to start error messages.
    pub(super) async fn manifest(
        &self,
        r: &Reference,
        what: &str,
    ) -> Result<(Bytes, String), Error> {
        let auth = self.auth(r);
        let body = self
            .manifests
            .fetch(&self.client, r, &auth, &MANIFEST_MEDIA_TYPES, what)
            .await?;
        let fatal =
            |message: String| Error::new(ErrorKind::InvalidContent, format!("{what}: {message}"));
        if let Some(digest) = r.digest() {
            let actual = digest_of(&body);
            if actual != digest {
                return Err(fatal(format!(
                    "content does not match its digest (content is {actual})"
                )));
            }
        }
        let media_type = manifest_media_type(&body).map_err(fatal)?;
        Ok((body, media_type))
    }

    /// Every tag of the reference's repository, following the registry's pages; empty when
    /// the repository does not exist.
    pub async fn list_tags(&self, r: &Reference) -> Result<Vec<String>, Error> {
        #[derive(serde::Deserialize)]
        struct Page {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let what = format!("tags of {}/{}", r.registry(), r.repository());
        let auth = self.auth(r);
        let mut tags = Vec::new();
        let mut query = String::new();
        // A registry that keeps answering with a next page is cut off, not followed forever.
        for _ in 0..MAX_TAG_PAGES {
            let Some((body, next)) = self
                .manifests
                .fetch_listing(&self.client, r, &auth, "tags/list", &query, &what)
                .await?
            else {
                return Ok(tags);
            };
            let page: Page = serde_json::from_slice(&body)
                .map_err(|e| Error::new(ErrorKind::InvalidContent, format!("{what}: {e}")))?;
            tags.extend(page.tags.unwrap_or_default());
            match next {
                Some(next) => query = next,
                None => return Ok(tags),
            }
        }
        Err(Error::new(
            ErrorKind::InvalidContent,
            format!("{what}: more than {MAX_TAG_PAGES} pages of tags"),
        ))
    }

    /// The OCI referrers of `digest` in the reference's repository, as the registry's
    /// referrers API lists them (an OCI image index); None when the registry answers 404,
    /// which a registry without that API does.
    pub async fn referrers(&self, r: &Reference, digest: &str) -> Result<Option<Bytes>, Error> {
        let what = format!("referrers of {}/{}@{digest}", r.registry(), r.repository());
        let auth = self.auth(r);
        Ok(self
            .manifests
            .fetch_listing(
                &self.client,
                r,
                &auth,
                &format!("referrers/{digest}"),
                "",
                &what,
            )
            .await?
            .map(|(body, _)| body))
    }

    /// A small blob whole (a signature's payload), verified against its digest; refused when
    /// its descriptor says more than `max` bytes.
    pub async fn small_blob(
        &self,
        r: &Reference,
        digest: &str,
        size: u64,
        max: u64,
    ) -> Result<Bytes, Error> {
        let what = format!("blob {digest} of {}/{}", r.registry(), r.repository());
        if size > max {
            return Err(Error::new(
                ErrorKind::InvalidContent,
                format!("{what}: {size} bytes, more than the {max} allowed here"),
            ));
        }
        let mut stream = self.blob_stream(r, digest, size).await?;
        let mut body = bytes::BytesMut::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                let kind = if is_digest_mismatch(&e) {
                    ErrorKind::InvalidContent
                } else {
                    ErrorKind::Unavailable
                };
                Error::new(kind, format!("{what}: {e}"))
            })?;
            if (body.len() + chunk.len()) as u64 > size {
                return Err(Error::new(
                    ErrorKind::InvalidContent,
                    format!("{what}: more bytes than its descriptor's {size}"),
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.freeze())
    }

    /// Stores a manifest under the reference's digest or tag.
    pub async fn put_manifest(
        &self,
        r: &Reference,
        body: Bytes,
        media_type: &str,
    ) -> Result<(), Error> {
        let what = format!("push manifest {}", r.whole());
        let content_type = media_type.parse().map_err(|_| {
            Error::new(
                ErrorKind::Other,
                format!("{what}: invalid media type {media_type:?}"),
            )
        })?;
        self.client
            .push_manifest_raw(r, body, content_type)
            .await
            .map(drop)
            .map_err(|e| Error::from_oci(&what, &e))
    }

    /// Deletes the manifest a digest reference names, and every tag that named it. A
    /// registry that does not allow deletes answers 405 (distribution: `storage.delete`).
    pub async fn delete_manifest(&self, r: &Reference) -> Result<(), Error> {
        let what = format!("delete manifest {}", r.whole());
        self.manifests
            .delete(&self.client, r, &self.auth(r), &what)
            .await
    }

    /// Obtains push rights for the reference's repository (before the first upload to it).
    pub async fn authorize_push(&self, r: &Reference) -> Result<(), Error> {
        let auth = self.auth(r);
        self.client
            .auth(r, &auth, RegistryOperation::Push)
            .await
            .map(drop)
            .map_err(|e| Error::from_oci(&format!("push {}", r.whole()), &e))
    }

    pub async fn blob_exists(&self, r: &Reference, digest: &str) -> Result<bool, Error> {
        self.client
            .blob_exists(r, digest)
            .await
            .map_err(|e| Error::from_oci(&format!("blob {digest} in {}", r.whole()), &e))
    }

    /// Asks the registry to link a blob it already holds in `from_repository` into the
    /// reference's repository; false when it would not (then the blob must be uploaded).
    pub async fn mount_blob(&self, r: &Reference, from_repository: &str, digest: &str) -> bool {
        let from = Reference::with_digest(
            r.registry().to_owned(),
            from_repository.to_owned(),
            digest.to_owned(),
        );
        self.client.mount_blob(r, &from, digest).await.is_ok()
    }

    /// A blob's bytes as they arrive; the stream ends with an error (see
    /// [`is_digest_mismatch`]) instead of its end when they do not match the digest.
    pub async fn blob_stream(
        &self,
        r: &Reference,
        digest: &str,
        size: u64,
    ) -> Result<BlobStream, Error> {
        let descriptor = OciDescriptor {
            digest: digest.to_owned(),
            size: size as i64,
            ..Default::default()
        };
        let sized = self
            .client
            .pull_blob_stream(r, &descriptor)
            .await
            .map_err(|e| Error::from_oci(&format!("blob {digest} from {}", r.whole()), &e))?;
        Ok(Box::pin(sized.stream))
    }

    /// Uploads a blob from a stream in one request; the registry commits it only when the
    /// stream ends cleanly (an error in the stream aborts the request).
    pub async fn put_blob_stream(
        &self,
        r: &Reference,
        digest: &str,
        size: u64,
        data: BlobStream,
    ) -> Result<(), Error> {
        let data = data.map(|chunk| chunk.map_err(OciDistributionError::IoError));
        self.client
            .push_blob_stream(r, data, digest, Some(size))
            .await
            .map(drop)
            .map_err(|e| Error::from_oci(&format!("blob {digest} to {}", r.whole()), &e))
    }
}
