//! A test CA and three server leaves made with the `openssl` CLI (scripts/test.sh installs
//! it, as the image tests need it too): the PEM forms cert-manager and people write, one key
//! of each (SEC1, PKCS#1, PKCS#8), plus a key type no server here can sign with. Every leaf
//! is valid for `localhost` and `127.0.0.1`. And a loopback listener that serves TLS with the
//! server's own acceptor.
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use server::tls::TlsConfig;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, OnceLock};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;

/// `ca.{crt,key}`, leaves `one`, `two`, `three` (`.crt`, `.key`) and `ed448.key`, made once
/// per test process.
pub struct Pki {
    dir: PathBuf,
}

impl Pki {
    pub fn get() -> &'static Pki {
        static PKI: OnceLock<Pki> = OnceLock::new();
        PKI.get_or_init(Pki::make)
    }

    fn make() -> Pki {
        let dir = tempfile::tempdir().unwrap().keep();
        let run = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .unwrap_or_else(|e| {
                    panic!("cannot run the openssl CLI ({e}); scripts/test.sh installs it")
                });
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        // The CA's key, and one's: ECDSA P-256 in SEC1 form, as cert-manager writes it by default.
        for key in ["ca.key", "one.key"] {
            run(&[
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
                key,
            ]);
        }
        run(&[
            "req",
            "-x509",
            "-new",
            "-key",
            "ca.key",
            "-days",
            "2",
            "-subj",
            "/CN=test-ca",
            "-out",
            "ca.crt",
        ]);
        // Two: RSA in PKCS#1 form.
        run(&["genrsa", "-traditional", "-out", "two.key", "2048"]);
        // Three: ECDSA P-256 in PKCS#8 form.
        run(&[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            "three.key",
        ]);
        // A key type the server cannot sign with.
        run(&["genpkey", "-algorithm", "ED448", "-out", "ed448.key"]);
        std::fs::write(
            dir.join("leaf.ext"),
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n\
             extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n",
        )
        .unwrap();
        for (serial, leaf) in ["one", "two", "three"].iter().enumerate() {
            let (key, csr, crt) = (
                format!("{leaf}.key"),
                format!("{leaf}.csr"),
                format!("{leaf}.crt"),
            );
            run(&[
                "req",
                "-new",
                "-key",
                &key,
                "-subj",
                &format!("/CN={leaf}"),
                "-out",
                &csr,
            ]);
            run(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-set_serial",
                &(serial + 2).to_string(),
                "-days",
                "2",
                "-extfile",
                "leaf.ext",
                "-out",
                &crt,
            ]);
        }
        Pki { dir }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The DER of a leaf's certificate: what a client must see.
    pub fn leaf(&self, leaf: &str) -> Vec<u8> {
        CertificateDer::from_pem_file(self.file(&format!("{leaf}.crt")))
            .unwrap()
            .to_vec()
    }
}

/// Listens on a loopback port: every connection gets `tls.acceptor()` and, once its handshake
/// is done, goes to `serve` on a task of its own (a failed handshake is the client's to see).
pub async fn tls_listener<F, Fut>(tls: Arc<TlsConfig>, serve: F) -> SocketAddr
where
    F: Fn(TlsStream<TcpStream>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serve = Arc::new(serve);
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (acceptor, serve) = (tls.acceptor(), serve.clone());
            tokio::spawn(async move {
                if let Ok(stream) = acceptor.accept(tcp).await {
                    serve(stream).await;
                }
            });
        }
    });
    addr
}
