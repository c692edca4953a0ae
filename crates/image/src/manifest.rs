//! Fetching manifests from registries with their size capped while they arrive, and
//! deleting them.
//!
//! oci-client reads a manifest response whole before anyone can look at its size, so a
//! registry could hand us hundreds of MB. These requests are ours: the body is refused as
//! soon as it passes [`MAX_MANIFEST_BYTES`] (4 MiB, the limit of distribution and
//! containerd), or at once when its Content-Length says so. oci-client still answers the
//! registry's authentication challenge; its token is remembered per repository.
use super::error::{Error, ErrorKind};
use super::layout::MAX_MANIFEST_BYTES;
use super::registry::ClientOptions;
use bytes::{Bytes, BytesMut};
use oci_client::errors::{OciDistributionError, OciEnvelope};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, LINK, RETRY_AFTER};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use std::time::SystemTime;

/// How much of an error response is read (its JSON error envelope).
const MAX_ERROR_BYTES: usize = 64 << 10;

/// What a manifest request carries to prove who we are.
#[derive(Clone)]
enum Access {
    Anonymous,
    Basic(String, String),
    Bearer(String),
}

impl Access {
    fn of(auth: &RegistryAuth) -> Access {
        match auth {
            RegistryAuth::Anonymous => Access::Anonymous,
            RegistryAuth::Basic(user, password) => Access::Basic(user.clone(), password.clone()),
            RegistryAuth::Bearer(token) => Access::Bearer(token.clone()),
        }
    }

    fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Access::Anonymous => request,
            Access::Basic(user, password) => request.basic_auth(user, Some(password)),
            Access::Bearer(token) => request.bearer_auth(token),
        }
    }
}

pub(super) struct ManifestFetcher {
    http: reqwest::Client,
    insecure: Vec<String>,
    use_http: bool,
    /// The bearer token that worked, by `registry/repository`.
    tokens: Mutex<HashMap<String, String>>,
}

impl ManifestFetcher {
    /// A client with the same TLS and timeout settings as the registry client's.
    pub(super) fn new(
        opts: &ClientOptions,
        extra_roots: &[oci_client::client::Certificate],
        connect_timeout: Duration,
        read_timeout: Duration,
    ) -> Result<ManifestFetcher, String> {
        let roots = extra_roots
            .iter()
            .map(reqwest::Certificate::try_from)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("--ca-file: {e}"))?;
        let http = reqwest::Client::builder()
            .danger_accept_invalid_certs(opts.skip_tls_verify)
            .tls_certs_merge(roots)
            .connect_timeout(connect_timeout)
            .read_timeout(read_timeout)
            .build()
            .map_err(|e| {
                // reqwest's own words are "builder error"; the cause (no CA certificates on
                // this system, say) is in its sources.
                let mut message = format!("setting up the registry client: {e}");
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    message.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                message
            })?;
        Ok(ManifestFetcher {
            http,
            insecure: opts.insecure_registries.clone(),
            use_http: opts.use_http,
            tokens: Mutex::new(HashMap::new()),
        })
    }

    /// `{scheme}://{registry}/v2/{repository}` and the `?ns=` query of the reference.
    fn base(&self, r: &Reference) -> (String, String) {
        let registry = r.resolve_registry();
        let scheme = if self.use_http || self.insecure.iter().any(|i| i == registry) {
            "http"
        } else {
            "https"
        };
        let ns = r
            .namespace()
            .map(|ns| format!("ns={ns}"))
            .unwrap_or_default();
        (format!("{scheme}://{registry}/v2/{}", r.repository()), ns)
    }

    fn url(&self, r: &Reference, path: &str, query: &str) -> String {
        let (base, ns) = self.base(r);
        let query: Vec<&str> = [query, ns.as_str()]
            .into_iter()
            .filter(|q| !q.is_empty())
            .collect();
        if query.is_empty() {
            format!("{base}/{path}")
        } else {
            format!("{base}/{path}?{}", query.join("&"))
        }
    }

    /// The URL of the manifest `r` names (by digest, else tag, else `latest`).
    fn manifest_url(&self, r: &Reference) -> String {
        let at = r.digest().or(r.tag()).unwrap_or("latest");
        self.url(r, &format!("manifests/{at}"), "")
    }

    /// The manifest `r` names, at most [`MAX_MANIFEST_BYTES`]; `what` starts every error
    /// message.
    pub(super) async fn fetch(
        &self,
        client: &Client,
        r: &Reference,
        auth: &RegistryAuth,
        accept: &[&str],
        what: &str,
    ) -> Result<Bytes, Error> {
        let url = self.manifest_url(r);
        let mut response = self.get(client, r, auth, &url, accept, what).await?;
        if !response.status().is_success() {
            return Err(refused(&mut response, &url, what).await);
        }
        read_json(&mut response, what, "manifest").await
    }

    /// Deletes the manifest `r` names (by digest: distribution deletes no tag alone); the
    /// tags that named it go with it.
    pub(super) async fn delete(
        &self,
        client: &Client,
        r: &Reference,
        auth: &RegistryAuth,
        what: &str,
    ) -> Result<(), Error> {
        let url = self.manifest_url(r);
        let how = (reqwest::Method::DELETE, RegistryOperation::Push);
        let mut response = self.send(client, r, auth, how, &url, &[], what).await?;
        if !response.status().is_success() {
            return Err(refused(&mut response, &url, what).await);
        }
        Ok(())
    }

    /// A JSON document of the registry's API below the repository of `r` (`path`, with
    /// `query`), at most [`MAX_MANIFEST_BYTES`], with the `Link` of its next page when it has
    /// one; None when the registry answers 404 (no such repository, or no such API).
    pub(super) async fn fetch_listing(
        &self,
        client: &Client,
        r: &Reference,
        auth: &RegistryAuth,
        path: &str,
        query: &str,
        what: &str,
    ) -> Result<Option<(Bytes, Option<String>)>, Error> {
        let url = self.url(r, path, query);
        let accept = [
            oci_client::manifest::OCI_IMAGE_INDEX_MEDIA_TYPE,
            "application/json",
        ];
        let mut response = self.get(client, r, auth, &url, &accept, what).await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(refused(&mut response, &url, what).await);
        }
        let next = response
            .headers()
            .get(LINK)
            .and_then(|v| v.to_str().ok())
            .and_then(next_page);
        Ok(Some((
            read_json(&mut response, what, "answer").await?,
            next,
        )))
    }

    /// GET `url` (see [`ManifestFetcher::send`]).
    async fn get(
        &self,
        client: &Client,
        r: &Reference,
        auth: &RegistryAuth,
        url: &str,
        accept: &[&str],
        what: &str,
    ) -> Result<reqwest::Response, Error> {
        let how = (reqwest::Method::GET, RegistryOperation::Pull);
        self.send(client, r, auth, how, url, accept, what).await
    }

    /// Sends `how.0` to `url` with what proves who we are: a token that worked for this
    /// repository, else the credentials; a first 401 is answered with the registry's
    /// challenge for the access `how.1`. No Accept header when `accept` is empty.
    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        client: &Client,
        r: &Reference,
        auth: &RegistryAuth,
        how: (reqwest::Method, RegistryOperation),
        url: &str,
        accept: &[&str],
        what: &str,
    ) -> Result<reqwest::Response, Error> {
        let (method, operation) = how;
        let oci = |e: OciDistributionError| Error::from_oci(what, &e);
        let key = format!("{}/{}", r.resolve_registry(), r.repository());
        let remembered = self.tokens.lock().ok().and_then(|t| t.get(&key).cloned());
        let mut access = remembered.map_or_else(|| Access::of(auth), Access::Bearer);
        let mut challenged = false;
        loop {
            let mut request = self.http.request(method.clone(), url);
            if !accept.is_empty() {
                request = request.header(ACCEPT, accept.join(", "));
            }
            let response = access
                .apply(request)
                .send()
                .await
                .map_err(|e| oci(e.into()))?;
            if response.status() != StatusCode::UNAUTHORIZED || challenged {
                return Ok(response);
            }
            // First refusal: answer the registry's challenge (a token, or the credentials).
            challenged = true;
            match client.auth(r, auth, operation).await.map_err(oci)? {
                Some(token) => {
                    if let Ok(mut tokens) = self.tokens.lock() {
                        tokens.insert(key.clone(), token.clone());
                    }
                    access = Access::Bearer(token);
                }
                None => access = Access::of(auth),
            }
        }
    }
}

/// A refused request as an error: the registry's words, and how long it asked us to wait.
async fn refused(response: &mut reqwest::Response, url: &str, what: &str) -> Error {
    let status = response.status();
    let retry_after = match status {
        StatusCode::TOO_MANY_REQUESTS => response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now())),
        _ => None,
    };
    let body = match read_capped(response, MAX_ERROR_BYTES).await {
        Ok(body) => body.unwrap_or_default(),
        Err(e) => return Error::from_oci(what, &e.into()),
    };
    let mut e = Error::from_oci(what, &registry_error(status, &body, url));
    e.retry_after = retry_after;
    e
}

/// A manifest or listing body, refused as soon as it passes [`MAX_MANIFEST_BYTES`].
async fn read_json(
    response: &mut reqwest::Response,
    what: &str,
    noun: &str,
) -> Result<Bytes, Error> {
    let too_big = || {
        Error::new(
            ErrorKind::InvalidContent,
            format!("{what}: the {noun} is larger than {MAX_MANIFEST_BYTES} bytes"),
        )
    };
    if response
        .content_length()
        .is_some_and(|n| n > MAX_MANIFEST_BYTES)
    {
        return Err(too_big());
    }
    read_capped(response, MAX_MANIFEST_BYTES as usize)
        .await
        .map_err(|e| Error::from_oci(what, &e.into()))?
        .ok_or_else(too_big)
}

/// The query of the next page in a `Link: </v2/…?n=…&last=…>; rel="next"` header.
fn next_page(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        params.contains("rel=\"next\"").then_some(())?;
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        Some(target.split_once('?')?.1.to_owned())
    })
}

/// The body, or None as soon as it passes `max` bytes.
async fn read_capped(
    response: &mut reqwest::Response,
    max: usize,
) -> Result<Option<Bytes>, reqwest::Error> {
    let mut body = BytesMut::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > max {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body.freeze()))
}

/// A refused request in the terms oci-client uses, so that it is described and retried
/// like every other registry error.
fn registry_error(status: StatusCode, body: &[u8], url: &str) -> OciDistributionError {
    let url = url.to_owned();
    if status == StatusCode::UNAUTHORIZED {
        return OciDistributionError::UnauthorizedError { url };
    }
    match serde_json::from_slice::<OciEnvelope>(body) {
        Ok(envelope) if status.is_client_error() => {
            OciDistributionError::RegistryError { envelope, url }
        }
        _ => OciDistributionError::ServerError {
            code: status.as_u16(),
            url,
            message: String::from_utf8_lossy(body).into_owned(),
        },
    }
}

/// A `Retry-After` value (RFC 9110: a number of seconds, or an HTTP date) as the wait from
/// `now`; a date already past means no wait. None when it is neither.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::{next_page, parse_retry_after};
    use std::time::{Duration, SystemTime};

    #[test]
    fn the_next_page_is_the_query_of_the_link_marked_next() {
        assert_eq!(
            next_page(r#"</v2/ns/op/tags/list?n=100&last=v9>; rel="next""#).as_deref(),
            Some("n=100&last=v9")
        );
        assert_eq!(
            next_page(r#"<https://r/v2/a?x=1>; rel="prev", </v2/a/tags/list?last=b>; rel="next""#)
                .as_deref(),
            Some("last=b")
        );
        assert_eq!(next_page(r#"</v2/a/tags/list?last=b>; rel="prev""#), None);
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        // 1994-11-06T08:49:37Z, the date RFC 9110 writes in its examples.
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let wait = |v: &str| parse_retry_after(v, now);
        assert_eq!(wait("120"), Some(Duration::from_secs(120)));
        assert_eq!(wait(" 0 "), Some(Duration::ZERO));
        assert_eq!(
            wait("Sun, 06 Nov 1994 08:50:07 GMT"),
            Some(Duration::from_secs(30))
        );
        // The obsolete forms HTTP still accepts.
        assert_eq!(
            wait("Sunday, 06-Nov-94 08:50:07 GMT"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(wait("Sun, 06 Nov 1994 08:49:00 GMT"), Some(Duration::ZERO));
        assert_eq!(wait("soon"), None);
        assert_eq!(wait("-5"), None);
    }
}
