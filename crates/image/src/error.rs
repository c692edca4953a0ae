//! What went wrong with an image, by the kind a caller acts on: retry it, ask for
//! credentials, report the registry as down, or refuse the content. The message is the one
//! line the user reads; callers branch on [`ErrorKind`], never on the words.
use oci_client::errors::{OciDistributionError, OciEnvelope};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// No such image, tag, repository or blob.
    NotFound,
    /// The registry refused these credentials (or their absence).
    Unauthorized,
    /// The registry could not be reached, timed out, broke off, answered 5xx, or asked us to
    /// slow down (429): another try may succeed.
    Unavailable,
    /// The registry's certificate is not trusted (--ca-file, --skip-tls-verify).
    Certificate,
    /// What the registry or a layout holds is malformed, too large, or not what its digest
    /// says.
    InvalidContent,
    /// Reading or writing local files (the blob cache, a layout, an unpacked image).
    Io,
    /// A request we cannot make as asked (a bad reference, option or media type), or a
    /// registry answer of no other kind.
    Other,
}

#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// How long the registry asked to be left alone before another try (its `Retry-After`
    /// on a 429), when it said.
    pub retry_after: Option<Duration>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// Content that is not what it should be: a manifest, a blob, a layout's files.
    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidContent, message)
    }

    /// Whether another try may succeed.
    pub fn is_transient(&self) -> bool {
        self.kind == ErrorKind::Unavailable
    }

    /// The same error, its message prefixed with what was being done.
    pub(crate) fn context(self, what: &str) -> Error {
        Error {
            kind: self.kind,
            message: format!("{what}: {}", self.message),
            retry_after: self.retry_after,
        }
    }

    /// A registry client's error, worded by `describe`, prefixed with `what`.
    pub(super) fn from_oci(what: &str, e: &OciDistributionError) -> Error {
        // oci-client hands some refusals (a manifest PUT's 400) over as a status and a raw
        // body: read the registry's error codes out of it like those of any other refusal.
        let enveloped = match e {
            OciDistributionError::ServerError { code, url, message }
                if (400..500).contains(code) =>
            {
                serde_json::from_str::<OciEnvelope>(message)
                    .ok()
                    .map(|envelope| OciDistributionError::RegistryError {
                        envelope,
                        url: url.clone(),
                    })
            }
            _ => None,
        };
        let e = enveloped.as_ref().unwrap_or(e);
        Error::new(
            kind_of(e),
            format!("{what}: {}", super::registry::describe(e)),
        )
    }
}

fn kind_of(e: &OciDistributionError) -> ErrorKind {
    let status = |r: &reqwest::Error| r.status().map(|s| s.as_u16());
    match e {
        OciDistributionError::AuthenticationFailure(_)
        | OciDistributionError::UnauthorizedError { .. } => ErrorKind::Unauthorized,
        OciDistributionError::ImageManifestNotFoundError(_) => ErrorKind::NotFound,
        OciDistributionError::RequestError(r) => match status(r) {
            Some(401 | 403) => ErrorKind::Unauthorized,
            Some(404) => ErrorKind::NotFound,
            Some(429) => ErrorKind::Unavailable,
            _ if untrusted_certificate(r) => ErrorKind::Certificate,
            _ if r.is_connect() || r.is_timeout() || r.is_body() || r.is_request() => {
                ErrorKind::Unavailable
            }
            _ => ErrorKind::Other,
        },
        OciDistributionError::ServerError { code, .. } if *code >= 500 || *code == 429 => {
            ErrorKind::Unavailable
        }
        // A stream of the registry's bytes that broke off.
        OciDistributionError::IoError(_) => ErrorKind::Unavailable,
        OciDistributionError::RegistryError { envelope, .. } => {
            let codes: Vec<String> = envelope
                .errors
                .iter()
                .filter_map(|e| {
                    serde_json::to_value(&e.code)
                        .ok()?
                        .as_str()
                        .map(str::to_owned)
                })
                .collect();
            // A 429 with an error body: distribution says TOOMANYREQUESTS.
            if codes.iter().any(|c| c == "TOOMANYREQUESTS") {
                ErrorKind::Unavailable
            } else if codes.iter().any(|c| c.ends_with("_UNKNOWN")) {
                ErrorKind::NotFound
            } else if codes.iter().any(|c| c == "UNAUTHORIZED" || c == "DENIED") {
                ErrorKind::Unauthorized
            } else {
                ErrorKind::Other
            }
        }
        _ => ErrorKind::Other,
    }
}

/// A TLS handshake that failed on the peer's certificate: rustls's error, somewhere down the
/// chain of causes (the connectors hand it up inside I/O errors).
fn untrusted_certificate(e: &reqwest::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(tls) = c.downcast_ref::<rustls::Error>() {
            return matches!(
                tls,
                rustls::Error::InvalidCertificate(_)
                    | rustls::Error::NoCertificatesPresented
                    | rustls::Error::UnsupportedNameType
            );
        }
        // An I/O error's source() skips the error it wraps: look at that one instead.
        cause = match c.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => c.source(),
        };
    }
    false
}
