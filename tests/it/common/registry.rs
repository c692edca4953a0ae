//! A real OCI registry on loopback for image tests: Debian's `docker-registry` (distribution
//! 2.8), started on a free 127.0.0.1 port with its own storage, plain HTTP or TLS with basic
//! auth. `scripts/test.sh` installs it when missing.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

pub struct TestRegistry {
    child: Child,
    /// HOST:PORT
    pub addr: String,
    pub dir: tempfile::TempDir,
    /// The CA that signed the server certificate (TLS registries).
    pub ca_file: Option<PathBuf>,
    /// A docker config.json with the right credentials (auth registries).
    pub auth_file: Option<PathBuf>,
    /// The request lines of its access log (`GET /v2/… HTTP/1.1`), in order.
    requests: Arc<Mutex<Vec<String>>>,
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a server certificate for 127.0.0.1 signed by it (rustls refuses a self-signed
/// certificate used directly).
fn make_certs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let p = |n: &str| dir.join(n);
    run(Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=test-ca",
        ])
        .arg("-keyout")
        .arg(p("ca.key"))
        .arg("-out")
        .arg(p("ca.crt")));
    run(Command::new("openssl")
        .args([
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
        ])
        .arg("-keyout")
        .arg(p("server.key"))
        .arg("-out")
        .arg(p("server.csr")));
    std::fs::write(
        p("ext.cnf"),
        "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n",
    )
    .unwrap();
    run(Command::new("openssl")
        .args(["x509", "-req", "-days", "2", "-CAcreateserial"])
        .arg("-in")
        .arg(p("server.csr"))
        .arg("-CA")
        .arg(p("ca.crt"))
        .arg("-CAkey")
        .arg(p("ca.key"))
        .arg("-extfile")
        .arg(p("ext.cnf"))
        .arg("-out")
        .arg(p("server.crt")));
    (p("ca.crt"), p("server.crt"), p("server.key"))
}

impl TestRegistry {
    /// Builds the catalog image of `dir` and pushes it to this (plain) registry as `name`
    /// (`repo:tag`); returns the image reference.
    pub fn push_catalog(&self, dir: &Path, name: &str, cache: &Path) -> String {
        let tag = format!("{}/{name}", self.addr);
        let out = Command::new(env!("CARGO_BIN_EXE_olm-registry"))
            .args(["build", "catalog"])
            .arg(dir)
            .args(["--tag", &tag, "--insecure-registry", &self.addr])
            .arg("--image-cache-dir")
            .arg(cache)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        tag
    }

    /// A registry over plain HTTP, no auth.
    pub fn plain() -> TestRegistry {
        Self::start(false, true)
    }

    /// A registry over plain HTTP that refuses deletes (distribution's default).
    pub fn plain_without_deletes() -> TestRegistry {
        Self::start(false, false)
    }

    /// A registry over TLS (test CA) with basic auth user `tester` / `s3cret`.
    pub fn secure() -> TestRegistry {
        Self::start(true, true)
    }

    fn start(secure: bool, deletes: bool) -> TestRegistry {
        let dir = tempfile::tempdir().unwrap();
        let mut extra = String::new();
        let (mut ca_file, mut auth_file) = (None, None);
        if secure {
            let (ca, cert, key) = make_certs(dir.path());
            let htpasswd = dir.path().join("htpasswd");
            run(Command::new("htpasswd")
                .args(["-Bbc"])
                .arg(&htpasswd)
                .args(["tester", "s3cret"]));
            extra = format!(
                "  tls: {{certificate: {}, key: {}}}\nauth: {{htpasswd: {{realm: test, path: {}}}}}\n",
                cert.display(),
                key.display(),
                htpasswd.display()
            );
            let auth = dir.path().join("config.json");
            // base64("tester:s3cret")
            std::fs::write(
                &auth,
                r#"{"auths":{"127.0.0.1":{"auth":"dGVzdGVyOnMzY3JldA=="}}}"#,
            )
            .unwrap();
            ca_file = Some(ca);
            auth_file = Some(auth);
        }
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog: {{level: info, accesslog: {{disabled: false}}}}\n\
                 storage: {{filesystem: {{rootdirectory: {}}}, delete: {{enabled: {deletes}}}}}\n\
                 health: {{storagedriver: {{enabled: false}}}}\n\
                 http:\n  addr: 127.0.0.1:0\n  secret: local-test-only\n{extra}",
                dir.path().join("data").display()
            ),
        )
        .unwrap();
        let (child, addr, requests) = spawn(&config);
        // The auth file names the registry by host:port.
        if let Some(auth) = &auth_file {
            let text = std::fs::read_to_string(auth)
                .unwrap()
                .replace("127.0.0.1", &addr);
            std::fs::write(auth, text).unwrap();
        }
        TestRegistry {
            child,
            addr,
            dir,
            ca_file,
            auth_file,
            requests,
        }
    }

    /// The requests it answered so far (`GET /v2/… HTTP/1.1`), in order.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// Stops the registry (for "registry went away" tests); its storage stays.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again after [`Self::stop`], on the same address and storage.
    pub fn restart(&mut self) {
        let config = self.dir.path().join("config.yml");
        let text = std::fs::read_to_string(&config)
            .unwrap()
            .replace("addr: 127.0.0.1:0", &format!("addr: {}", self.addr));
        std::fs::write(&config, text).unwrap();
        let (child, addr, requests) = spawn(&config);
        assert_eq!(addr, self.addr, "docker-registry came back elsewhere");
        (self.child, self.requests) = (child, requests);
    }

    /// Runs docker-registry's offline garbage collector over this registry's storage: blobs
    /// no manifest names any more are removed (nothing is uploading meanwhile).
    pub fn garbage_collect(&self) {
        run(Command::new("docker-registry")
            .arg("garbage-collect")
            .arg(self.dir.path().join("config.yml")));
    }

    /// The files of the blob with this digest in the registry's storage.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

/// Starts docker-registry with `config`: the child, the address it listens on, and the
/// request lines of its access log as they come.
fn spawn(config: &Path) -> (Child, String, Arc<Mutex<Vec<String>>>) {
    let mut child = Command::new("docker-registry")
        .arg("serve")
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docker-registry is not installed: run `bash scripts/test.sh`, which installs it");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let addr: String = rest
                    .chars()
                    .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | ','))
                    .collect();
                let _ = tx.send(addr);
            }
        }
    });
    // The access log (on stdout): `… "GET /v2/… HTTP/1.1" 200 …`, one line a request.
    let requests = Arc::new(Mutex::new(Vec::new()));
    let stdout = child.stdout.take().unwrap();
    let log = requests.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(request) = line.split('"').nth(1) {
                log.lock().unwrap().push(request.to_owned());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("docker-registry did not start");
    (child, addr, requests)
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}
