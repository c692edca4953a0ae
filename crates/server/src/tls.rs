//! The server side of TLS for HTTP listeners: a certificate and key read from PEM files and
//! re-read when the files change, as cert-manager rotates them (catalogd HTTP spec §7).
//!
//! Kubernetes mounts a secret as `tls.crt -> ..data/tls.crt` with `..data` a symlink to a
//! timestamped directory that the kubelet swaps atomically, so the paths are watched as given,
//! links followed: a swap shows as a new inode behind the same path. Cert and key are separate
//! files and a rotation may be seen half done (the certificate new, the key still old); such a
//! pair fails the key check, the previous pair stays in use and the next check tries again.
//!
//! Only TLS 1.2 and 1.3 are offered, and ALPN says `http/1.1` alone: catalogd deliberately
//! keeps HTTP/2 off this listener, so a client that offers only `h2` is refused.
//!
//! The handshake timeout belongs to the caller: it wraps `acceptor().accept(stream)` in a
//! `tokio::time::timeout`, since a client that connects and sends nothing would otherwise hold
//! its connection (and task) for as long as it likes.
use rustls::ServerConfig;
use rustls::pki_types::pem::{self, PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio_rustls::TlsAcceptor;
use tracing::{info, warn};

/// How often the files are looked at, at most: a rotation is seen within this long, and a busy
/// listener pays for two `stat` calls per interval, not per connection.
pub(crate) const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Largest certificate or key file read. A PEM chain is a few KiB; this only stops a wrong path
/// (a log, a disk image) from being read whole.
const MAX_PEM_BYTES: u64 = 1 << 20;

/// Why a certificate and key could not be used. Every variant names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// The file could not be read: missing, unreadable, too large.
    #[error("cannot read {}: {problem}", file.display())]
    Unreadable { file: PathBuf, problem: String },
    /// The file was read but does not hold what it should: not PEM, no certificate, no key,
    /// an encrypted key, a key type this server cannot sign with.
    #[error("{}: {problem}", file.display())]
    Invalid { file: PathBuf, problem: String },
    /// Both files are good on their own but the key is not the certificate's.
    #[error(
        "the private key in {} does not match the certificate in {}",
        key_file.display(),
        cert_file.display()
    )]
    Mismatch {
        cert_file: PathBuf,
        key_file: PathBuf,
    },
}

/// A certificate and key pair that follows its files. See the module documentation.
pub struct TlsConfig {
    cert_file: PathBuf,
    key_file: PathBuf,
    check_every: Duration,
    /// What new connections get; held only to clone or replace an `Arc`.
    current: Mutex<TlsAcceptor>,
    /// Taken with `try_lock` by the one connection that checks the files; the others go on
    /// with the current pair meanwhile.
    watch: Mutex<Watch>,
}

struct Watch {
    next_check: Instant,
    /// The files behind the pair in use.
    serving: Identity,
    /// The last problem logged, so that a broken pair is reported once, not every interval.
    reported: Option<String>,
}

impl TlsConfig {
    /// Reads and checks the pair; the error names the file and the problem (missing, not PEM,
    /// no certificate, key doesn't match the certificate, unsupported key type). Blocking:
    /// call it at start-up or from a blocking thread.
    pub fn load(cert_file: &Path, key_file: &Path) -> Result<Arc<TlsConfig>, TlsError> {
        Self::load_checking_every(cert_file, key_file, CHECK_INTERVAL)
    }

    /// `load`, with the files looked at no more often than `check_every` (zero: at every new
    /// connection).
    pub fn load_checking_every(
        cert_file: &Path,
        key_file: &Path,
        check_every: Duration,
    ) -> Result<Arc<TlsConfig>, TlsError> {
        let serving = Identity::of(cert_file, key_file)?;
        let config = server_config(cert_file, key_file)?;
        Ok(Arc::new(TlsConfig {
            cert_file: cert_file.to_owned(),
            key_file: key_file.to_owned(),
            check_every,
            current: Mutex::new(TlsAcceptor::from(config)),
            watch: Mutex::new(Watch {
                next_check: Instant::now() + check_every,
                serving,
                reported: None,
            }),
        }))
    }

    /// The acceptor for a new connection: the current pair, re-read first when either file
    /// has changed (device, inode, size, mtime or ctime), looked at no more than once per
    /// `CHECK_INTERVAL`; a pair that fails to load is logged (warn) once and the previous one
    /// kept.
    ///
    /// The look is done here with `std::fs`, on the calling (runtime) thread: two `stat` calls
    /// per interval, and on a change one read of two files of a few KiB (capped at 1 MiB),
    /// which on the tmpfs of a mounted secret takes microseconds. Only one caller looks at a
    /// time; the others never wait for it.
    pub fn acceptor(&self) -> TlsAcceptor {
        if let Ok(mut watch) = self.watch.try_lock() {
            let now = Instant::now();
            if now >= watch.next_check {
                watch.next_check = now + self.check_every;
                self.check(&mut watch);
            }
        }
        lock(&self.current).clone()
    }

    fn check(&self, watch: &mut Watch) {
        let outcome = Identity::of(&self.cert_file, &self.key_file).and_then(|seen| {
            if seen == watch.serving {
                return Ok(None);
            }
            server_config(&self.cert_file, &self.key_file).map(|config| Some((seen, config)))
        });
        match outcome {
            // The files are the pair in use again (a file that went away came back).
            Ok(None) => watch.reported = None,
            Ok(Some((seen, config))) => {
                *lock(&self.current) = TlsAcceptor::from(config);
                watch.serving = seen;
                watch.reported = None;
                info!(
                    cert = %self.cert_file.display(),
                    key = %self.key_file.display(),
                    "TLS certificate reloaded"
                );
            }
            Err(e) => {
                let problem = e.to_string();
                if watch.reported.as_ref() != Some(&problem) {
                    warn!("{problem}; still serving the previous TLS certificate");
                    watch.reported = Some(problem);
                }
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What tells one version of the two files from another without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    cert: FileIdentity,
    key: FileIdentity,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Identity {
    fn of(cert_file: &Path, key_file: &Path) -> Result<Identity, TlsError> {
        Ok(Identity {
            cert: FileIdentity::of(cert_file)?,
            key: FileIdentity::of(key_file)?,
        })
    }
}

impl FileIdentity {
    fn of(file: &Path) -> Result<FileIdentity, TlsError> {
        // `metadata` follows symlinks: the file a `..data` swap put behind the path.
        let m = std::fs::metadata(file).map_err(|e| unreadable(file, e))?;
        Ok(FileIdentity {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

fn unreadable(file: &Path, e: std::io::Error) -> TlsError {
    TlsError::Unreadable {
        file: file.to_owned(),
        problem: e.to_string(),
    }
}

fn invalid(file: &Path, problem: impl Into<String>) -> TlsError {
    TlsError::Invalid {
        file: file.to_owned(),
        problem: problem.into(),
    }
}

fn server_config(cert_file: &Path, key_file: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = certificates(cert_file)?;
    let key = private_key(key_file)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let signing_key = provider.key_provider.load_private_key(key).map_err(|e| {
        invalid(
            key_file,
            format!("unsupported private key ({e}); use an ECDSA P-256/P-384, RSA or Ed25519 key"),
        )
    })?;
    let certified = CertifiedKey::new(chain, signing_key);
    certified.keys_match().map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => TlsError::Mismatch {
            cert_file: cert_file.to_owned(),
            key_file: key_file.to_owned(),
        },
        other => invalid(cert_file, format!("unusable certificate: {other}")),
    })?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| invalid(cert_file, e.to_string()))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(certified)));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn read_pem(file: &Path) -> Result<Vec<(SectionKind, Vec<u8>)>, TlsError> {
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_PEM_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| unreadable(file, e))?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(invalid(file, format!("larger than {MAX_PEM_BYTES} bytes")));
    }
    if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        return Err(invalid(file, "not PEM (no -----BEGIN line)"));
    }
    let sections = <(SectionKind, Vec<u8>)>::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, pem::Error>>()
        .map_err(|e| invalid(file, format!("not valid PEM: {e}")))?;
    Ok(sections)
}

fn certificates(file: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain: Vec<_> = read_pem(file)?
        .into_iter()
        .filter(|(kind, _)| *kind == SectionKind::Certificate)
        .map(|(_, der)| CertificateDer::from(der))
        .collect();
    if chain.is_empty() {
        return Err(invalid(file, "no certificate (no CERTIFICATE block)"));
    }
    Ok(chain)
}

fn private_key(file: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let mut keys = read_pem(file)?
        .into_iter()
        .filter_map(|(kind, der)| PrivateKeyDer::from_pem(kind, der));
    match (keys.next(), keys.next()) {
        (Some(key), None) => Ok(key),
        (None, _) => Err(invalid(
            file,
            "no private key (no PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY block; \
             an ENCRYPTED PRIVATE KEY must be decrypted first)",
        )),
        (Some(_), Some(_)) => Err(invalid(file, "more than one private key")),
    }
}
