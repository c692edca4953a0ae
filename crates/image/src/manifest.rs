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
use reqwest::header::{ACCEPT, RETRY_AFTER};
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

    fn url(&self, r: &Reference) -> String {
        let registry = r.resolve_registry();
        let scheme = if self.use_http || self.insecure.iter().any(|i| i == registry) {
            "http"
        } else {
            "https"
        };
        let at = r.digest().or(r.tag()).unwrap_or("latest");
        let ns = r
            .namespace()
            .map(|ns| format!("?ns={ns}"))
            .unwrap_or_default();
        format!(
            "{scheme}://{registry}/v2/{}/manifests/{at}{ns}",
            r.repository()
        )
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
        let request = Request {
            method: reqwest::Method::GET,
            operation: RegistryOperation::Pull,
            accept,
            what,
        };
        let mut response = self.send(client, r, auth, request).await?;
        let oci = |e: OciDistributionError| Error::from_oci(what, &e);
        let too_big = || {
            Error::new(
                ErrorKind::InvalidContent,
                format!("{what}: the manifest is larger than {MAX_MANIFEST_BYTES} bytes"),
            )
        };
        if response
            .content_length()
            .is_some_and(|n| n > MAX_MANIFEST_BYTES)
        {
            return Err(too_big());
        }
        read_capped(&mut response, MAX_MANIFEST_BYTES as usize)
            .await
            .map_err(|e| oci(e.into()))?
            .ok_or_else(too_big)
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
        let request = Request {
            method: reqwest::Method::DELETE,
            operation: RegistryOperation::Push,
            accept: &[],
            what,
        };
        self.send(client, r, auth, request).await.map(drop)
    }

    /// Sends a request about the manifest `r` names, answering the registry's challenge
    /// once; an answer other than success is the error.
    async fn send(
        &self,
        client: &Client,
        r: &Reference,
        auth: &RegistryAuth,
        request: Request<'_>,
    ) -> Result<reqwest::Response, Error> {
        let Request {
            method,
            operation,
            accept,
            what,
        } = request;
        let oci = |e: OciDistributionError| Error::from_oci(what, &e);
        let url = self.url(r);
        let key = format!("{}/{}", r.resolve_registry(), r.repository());
        let remembered = self.tokens.lock().ok().and_then(|t| t.get(&key).cloned());
        let mut access = remembered.map_or_else(|| Access::of(auth), Access::Bearer);
        let mut challenged = false;
        let mut response = loop {
            let mut request = self.http.request(method.clone(), &url);
            if !accept.is_empty() {
                request = request.header(ACCEPT, accept.join(", "));
            }
            let response = access
                .apply(request)
                .send()
                .await
                .map_err(|e| oci(e.into()))?;
            if response.status() != StatusCode::UNAUTHORIZED || challenged {
                break response;
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
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = match status {
                StatusCode::TOO_MANY_REQUESTS => response
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| parse_retry_after(v, SystemTime::now())),
                _ => None,
            };
            let body = read_capped(&mut response, MAX_ERROR_BYTES)
                .await
                .map_err(|e| oci(e.into()))?
                .unwrap_or_default();
            let mut e = oci(registry_error(status, &body, &url));
            e.retry_after = retry_after;
            return Err(e);
        }
        Ok(response)
    }
}

/// One request of [`ManifestFetcher::send`].
struct Request<'a> {
    method: reqwest::Method,
    /// The access it needs (what a token is asked for).
    operation: RegistryOperation,
    /// The media types accepted (none: no Accept header).
    accept: &'a [&'a str],
    /// What the request is for, to start error messages.
    what: &'a str,
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
    use super::parse_retry_after;
    use std::time::{Duration, SystemTime};

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
