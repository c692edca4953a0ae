//! The TLS acceptor of the HTTP listeners (`server::tls`), with the test CA and leaves of
//! `common::pki`, served by a small TLS echo server on loopback and met by a rustls client
//! that trusts only that CA.
use crate::catalogd_http::api_base;
use crate::common::pki::{Pki, tls_listener};
use crate::common::{Server, fixture};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use server::tls::{TlsConfig, TlsError};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Replaces `to` by a copy of `from` the way a careful writer does: a new file renamed over it.
fn replace(from: &Path, to: &Path) {
    let tmp = to.with_extension("new");
    std::fs::copy(from, &tmp).unwrap();
    std::fs::rename(&tmp, to).unwrap();
}

/// A mounted secret as the kubelet lays it out: `tls.crt -> ..data/tls.crt`, `..data -> ..<version>`.
struct MountedSecret {
    dir: tempfile::TempDir,
}

impl MountedSecret {
    fn new(leaf: &str) -> MountedSecret {
        let secret = MountedSecret {
            dir: tempfile::tempdir().unwrap(),
        };
        secret.publish("..2026_11_26_04_00_00.1", leaf);
        for name in ["tls.crt", "tls.key"] {
            std::os::unix::fs::symlink(format!("..data/{name}"), secret.dir.path().join(name))
                .unwrap();
        }
        secret
    }

    /// Writes `leaf` into a new version directory and swaps `..data` to it atomically.
    fn publish(&self, version: &str, leaf: &str) {
        let pki = Pki::get();
        let root = self.dir.path();
        std::fs::create_dir(root.join(version)).unwrap();
        for (ext, name) in [("crt", "tls.crt"), ("key", "tls.key")] {
            std::fs::copy(
                pki.file(&format!("{leaf}.{ext}")),
                root.join(version).join(name),
            )
            .unwrap();
        }
        let old = std::fs::read_link(root.join("..data")).ok();
        std::os::unix::fs::symlink(version, root.join("..data_tmp")).unwrap();
        std::fs::rename(root.join("..data_tmp"), root.join("..data")).unwrap();
        if let Some(old) = old {
            std::fs::remove_dir_all(root.join(old)).unwrap();
        }
    }

    fn cert(&self) -> PathBuf {
        self.dir.path().join("tls.crt")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("tls.key")
    }
}

/// Serves `tls` on a loopback port; what the client sends first is sent back.
async fn echo_server(tls: Arc<TlsConfig>) -> SocketAddr {
    tls_listener(tls, |mut stream| async move {
        let mut buf = [0u8; 64];
        if let Ok(n) = stream.read(&mut buf).await {
            let _ = stream.write_all(&buf[..n]).await;
            let _ = stream.shutdown().await;
        }
    })
    .await
}

/// What a client saw of the server.
#[derive(Debug)]
struct Seen {
    leaf: Vec<u8>,
    version: rustls::ProtocolVersion,
    alpn: Option<Vec<u8>>,
}

/// Connects to the echo server trusting only the test CA, offering `versions` and `alpn`,
/// and checks the echo.
async fn connect(
    addr: SocketAddr,
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Result<Seen, std::io::Error> {
    let (seen, echo) = exchange(addr, versions, alpn, b"ping").await?;
    assert_eq!(echo, b"ping");
    Ok(seen)
}

/// Connects trusting only the test CA, offering `versions` and `alpn`, sends `request` and
/// reads until the server closes.
async fn exchange(
    addr: SocketAddr,
    versions: &[&'static rustls::SupportedProtocolVersion],
    alpn: &[&[u8]],
    request: &[u8],
) -> Result<(Seen, Vec<u8>), std::io::Error> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_file(Pki::get().file("ca.crt")).unwrap())
        .unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(versions)
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await?;
    let mut stream = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await?;
    stream.write_all(request).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let (_, conn) = stream.get_ref();
    let seen = Seen {
        leaf: conn.peer_certificates().unwrap()[0].to_vec(),
        version: conn.protocol_version().unwrap(),
        alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
    };
    Ok((seen, answer))
}

async fn leaf_seen(addr: SocketAddr) -> Vec<u8> {
    connect(addr, rustls::DEFAULT_VERSIONS, &[b"http/1.1"])
        .await
        .unwrap()
        .leaf
}

/// Log lines written while `f` runs on this thread (the tests run on one-thread runtimes, so
/// the server's tasks log here too).
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || LogWriter(writer.clone()))
            .finish();
        (Logs(buf), tracing::subscriber::set_default(subscriber))
    }

    fn lines_with(&self, needle: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Copies of a leaf's files in a directory of their own, which the test then replaces.
fn own_copy(leaf: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let pki = Pki::get();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::copy(pki.file(&format!("{leaf}.crt")), &cert).unwrap();
    std::fs::copy(pki.file(&format!("{leaf}.key")), &key).unwrap();
    (dir, cert, key)
}

#[tokio::test]
async fn a_renamed_pair_is_served_to_the_next_connection() {
    let pki = Pki::get();
    let (_dir, cert, key) = own_copy("one");
    let tls = TlsConfig::load_checking_every(&cert, &key, Duration::ZERO).unwrap();
    let addr = echo_server(tls).await;
    assert_eq!(leaf_seen(addr).await, pki.leaf("one"));

    replace(&pki.file("two.key"), &key);
    replace(&pki.file("two.crt"), &cert);
    assert_eq!(leaf_seen(addr).await, pki.leaf("two"));

    replace(&pki.file("three.crt"), &cert);
    replace(&pki.file("three.key"), &key);
    assert_eq!(leaf_seen(addr).await, pki.leaf("three"));
}

#[tokio::test]
async fn a_kubernetes_secret_swap_is_followed_through_the_symlinks() {
    let pki = Pki::get();
    let secret = MountedSecret::new("one");
    let tls =
        TlsConfig::load_checking_every(&secret.cert(), &secret.key(), Duration::ZERO).unwrap();
    let addr = echo_server(tls).await;
    assert_eq!(leaf_seen(addr).await, pki.leaf("one"));

    secret.publish("..2026_11_26_05_00_00.2", "two");
    assert_eq!(leaf_seen(addr).await, pki.leaf("two"));
    secret.publish("..2026_11_26_06_00_00.3", "three");
    assert_eq!(leaf_seen(addr).await, pki.leaf("three"));
}

#[tokio::test]
async fn a_broken_or_half_rotated_pair_keeps_the_previous_one_and_is_reported_once() {
    let pki = Pki::get();
    let (logs, _guard) = Logs::capture();
    let (dir, cert, key) = own_copy("one");
    let tls = TlsConfig::load_checking_every(&cert, &key, Duration::ZERO).unwrap();
    let addr = echo_server(tls).await;

    // Not PEM: the old pair goes on serving, and the problem is logged once, not per connection.
    let junk = dir.path().join("junk");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    replace(&junk, &cert);
    for _ in 0..3 {
        assert_eq!(leaf_seen(addr).await, pki.leaf("one"));
    }
    let warned = logs.lines_with("still serving the previous TLS certificate");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains(&format!("{}: not PEM (no -----BEGIN line)", cert.display())),
        "{}",
        warned[0]
    );

    // A rotation seen half done: the new certificate, the old key.
    replace(&pki.file("two.crt"), &cert);
    for _ in 0..2 {
        assert_eq!(leaf_seen(addr).await, pki.leaf("one"));
    }
    let warned = logs.lines_with("still serving the previous TLS certificate");
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(
        warned[1].contains("does not match the certificate"),
        "{}",
        warned[1]
    );

    // The key arrives: the next connection gets the new pair.
    replace(&pki.file("two.key"), &key);
    assert_eq!(leaf_seen(addr).await, pki.leaf("two"));
    assert_eq!(logs.lines_with("TLS certificate reloaded").len(), 1);

    // A file that disappears (a secret deleted) keeps the pair too.
    std::fs::remove_file(&key).unwrap();
    assert_eq!(leaf_seen(addr).await, pki.leaf("two"));
    let warned = logs.lines_with("still serving the previous TLS certificate");
    assert_eq!(warned.len(), 3, "{warned:?}");
    assert!(
        warned[2].contains(&format!("cannot read {}: No such file", key.display())),
        "{}",
        warned[2]
    );
}

#[tokio::test]
async fn files_are_looked_at_no_more_often_than_the_interval() {
    let pki = Pki::get();
    let (_dir, cert, key) = own_copy("one");
    let tls = TlsConfig::load_checking_every(&cert, &key, Duration::from_secs(3600)).unwrap();
    let addr = echo_server(tls).await;
    replace(&pki.file("two.crt"), &cert);
    replace(&pki.file("two.key"), &key);
    assert_eq!(leaf_seen(addr).await, pki.leaf("one"));
}

#[tokio::test]
async fn only_tls_1_2_and_1_3_and_only_http_1_1_are_spoken() {
    let (_dir, cert, key) = own_copy("one");
    let addr = echo_server(TlsConfig::load(&cert, &key).unwrap()).await;

    let seen = connect(addr, rustls::DEFAULT_VERSIONS, &[b"h2", b"http/1.1"])
        .await
        .unwrap();
    assert_eq!(seen.version, rustls::ProtocolVersion::TLSv1_3);
    assert_eq!(seen.alpn.as_deref(), Some(&b"http/1.1"[..]));

    let seen = connect(addr, &[&rustls::version::TLS12], &[b"http/1.1"])
        .await
        .unwrap();
    assert_eq!(seen.version, rustls::ProtocolVersion::TLSv1_2);

    // A client that offers no ALPN at all (curl --no-alpn, most probes) is served HTTP/1.1.
    let seen = connect(addr, rustls::DEFAULT_VERSIONS, &[]).await.unwrap();
    assert_eq!(seen.alpn, None);

    // HTTP/2 is off on this listener: a client that will speak nothing else is refused.
    let refused = connect(addr, rustls::DEFAULT_VERSIONS, &[b"h2"]).await;
    assert!(refused.is_err(), "{refused:?}");

    // rustls clients cannot offer TLS 1.1; openssl can, at a security level that allows it.
    // The same client with TLS 1.2 shows that only the version is refused.
    let refused = s_client(addr, "-tls1_1").await;
    assert_eq!(refused.0, Some(1), "{refused:?}");
    assert!(refused.1.contains("Protocol  : TLSv1.1"), "{refused:?}");
    assert!(refused.1.contains("Cipher is (NONE)"), "{refused:?}");
    assert!(refused.2.contains("alert"), "{refused:?}");
    let accepted = s_client(addr, "-tls1_2").await;
    assert_eq!(accepted.0, Some(0), "{accepted:?}");
    assert!(accepted.1.contains("Protocol  : TLSv1.2"), "{accepted:?}");
}

/// `openssl s_client` with one version flag and nothing to send: (exit code, stdout, stderr).
async fn s_client(addr: SocketAddr, version: &'static str) -> (Option<i32>, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new("openssl")
            .args([
                "s_client",
                version,
                "-cipher",
                "DEFAULT@SECLEVEL=0",
                "-connect",
            ])
            .arg(addr.to_string())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    })
    .await
    .unwrap()
}

#[test]
fn a_pair_that_cannot_be_used_is_refused_at_load_with_the_file_and_the_problem() {
    let pki = Pki::get();
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "hello\n").unwrap();
    let absent = dir.path().join("absent.crt");
    let err = |cert: &Path, key: &Path| TlsConfig::load(cert, key).err().unwrap();

    assert_eq!(
        err(&absent, &pki.file("one.key")).to_string(),
        format!(
            "cannot read {}: No such file or directory (os error 2)",
            absent.display()
        )
    );
    assert_eq!(
        err(&junk, &pki.file("one.key")).to_string(),
        format!("{}: not PEM (no -----BEGIN line)", junk.display())
    );
    assert_eq!(
        err(&pki.file("one.key"), &pki.file("one.key")).to_string(),
        format!(
            "{}: no certificate (no CERTIFICATE block)",
            pki.file("one.key").display()
        )
    );
    assert_eq!(
        err(&pki.file("one.crt"), &pki.file("one.crt")).to_string(),
        format!(
            "{}: no private key (no PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY block; \
             an ENCRYPTED PRIVATE KEY must be decrypted first)",
            pki.file("one.crt").display()
        )
    );
    assert_eq!(
        err(&pki.file("one.crt"), &pki.file("two.key")),
        TlsError::Mismatch {
            cert_file: pki.file("one.crt"),
            key_file: pki.file("two.key"),
        }
    );
    assert_eq!(
        err(&pki.file("one.crt"), &pki.file("two.key")).to_string(),
        format!(
            "the private key in {} does not match the certificate in {}",
            pki.file("two.key").display(),
            pki.file("one.crt").display()
        )
    );
    let unsupported = err(&pki.file("one.crt"), &pki.file("ed448.key")).to_string();
    assert!(
        unsupported.starts_with(&format!(
            "{}: unsupported private key (",
            pki.file("ed448.key").display()
        )) && unsupported.ends_with("use an ECDSA P-256/P-384, RSA or Ed25519 key"),
        "{unsupported}"
    );
    // Every key form and both key types load.
    for leaf in ["one", "two", "three"] {
        TlsConfig::load(
            &pki.file(&format!("{leaf}.crt")),
            &pki.file(&format!("{leaf}.key")),
        )
        .unwrap();
    }
}

/// The real server's HTTPS listener (`serve --http-addr --tls-cert-file --tls-key-file`) on a
/// mounted-secret layout: after the kubelet-style swap, new connections get the new leaf
/// within the server's check interval, without a restart.
#[tokio::test(flavor = "multi_thread")]
async fn the_servers_https_listener_follows_a_secret_rotation() {
    let pki = Pki::get();
    let secret = MountedSecret::new("one");
    let (cert, key) = (secret.cert(), secret.key());
    let server = Server::serving(
        &fixture("catalogd/tiny"),
        &[
            "--http-addr",
            "127.0.0.1:0",
            "--tls-cert-file",
            cert.to_str().unwrap(),
            "--tls-key-file",
            key.to_str().unwrap(),
        ],
    )
    .await;
    let base = api_base(&server).await;
    let addr: SocketAddr = base.trim_start_matches("https://").parse().unwrap();
    let get = async || {
        let request = b"GET /catalogs/tiny/api/v1/all HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
        let (seen, answer) = exchange(addr, rustls::DEFAULT_VERSIONS, &[b"http/1.1"], request)
            .await
            .unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 200 OK\r\n"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
        seen.leaf
    };
    assert_eq!(get().await, pki.leaf("one"));

    secret.publish("..2026_11_26_05_00_00.2", "two");
    // The server looks at the files at most once a second: wait for the new leaf, bounded.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while get().await != pki.leaf("two") {
        assert!(
            std::time::Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.wait_for_log("TLS certificate reloaded").await;
}
