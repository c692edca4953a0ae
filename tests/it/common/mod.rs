//! Test harness: runs the real `olm-registry` binary on an ephemeral 127.0.0.1 port and talks
//! to it with real gRPC clients.

pub mod control_plane;
pub mod kube;
pub mod node;
pub mod olm;
pub mod olmv1;
pub mod pki;
pub mod prometheus;
pub mod proxy;
pub mod registry;

use api::registry_client::RegistryClient;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

pub const BIN: &str = env!("CARGO_BIN_EXE_olm-registry");

/// How long a test waits for the server to say something before failing (a bound, not a sleep).
const PATIENCE: Duration = Duration::from_secs(120);

/// `../shared/testdata/<rel>`, or None (with a loud note) when the shared corpora are absent.
pub fn shared_testdata(rel: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/testdata")
        .join(rel);
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "\n!!! SKIPPED: {} is absent; this conformance test needs ../shared beside the repo !!!\n",
            path.display()
        );
        None
    }
}

pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// A running `olm-registry serve`.
pub struct Server {
    child: Option<Child>,
    pub addr: String,
    log: Arc<Mutex<Vec<String>>>,
    /// The thread copying stderr into `log`; done once the process has exited and its
    /// stderr is drained.
    reader: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts `serve <catalog>` with extra flags and waits until the port is bound.
    pub fn start(catalog: &Path, extra: &[&str]) -> Server {
        Server::start_with(Command::new(BIN), catalog, extra)
    }

    /// The same, with `command` as the program (a wrapper that sets limits, say, and runs
    /// its arguments).
    pub fn start_with(command: Command, catalog: &Path, extra: &[&str]) -> Server {
        Server::launch(command, Some(catalog), "127.0.0.1:0", extra)
    }

    /// Starts `serve` without SOURCE (its catalogs given by `extra`'s `--catalog` flags).
    pub fn start_without_source(extra: &[&str]) -> Server {
        Server::launch(Command::new(BIN), None, "127.0.0.1:0", extra)
    }

    /// Starts `serve <catalog>` on `addr` (HOST:PORT), e.g. to restart a server where its
    /// clients know it.
    pub fn start_at(catalog: &Path, addr: &str, extra: &[&str]) -> Server {
        Server::launch(Command::new(BIN), Some(catalog), addr, extra)
    }

    fn launch(mut command: Command, catalog: Option<&Path>, addr: &str, extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let termination_log = dir.path().join("termination-log");
        let mut child = command
            .arg("serve")
            .args(catalog)
            .args(["-p", addr, "-t"])
            .arg(&termination_log)
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start olm-registry");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // The address ends the message, in text and in JSON log lines.
                if let Some(addr) = line.split("listening on ").nth(1) {
                    let _ = tx.send(addr.split('"').next().unwrap_or(addr).trim().to_owned());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = rx.recv_timeout(PATIENCE).unwrap_or_else(|_| {
            panic!(
                "server did not report its address; log:\n{}",
                log.lock().unwrap().join("\n")
            )
        });
        Server {
            child: Some(child),
            addr,
            log,
            reader: Some(reader),
            _dir: dir,
        }
    }

    /// Starts a server and waits until it reports SERVING.
    pub async fn serving(catalog: &Path, extra: &[&str]) -> Server {
        let server = Server::start(catalog, extra);
        server.wait_for_status(ServingStatus::Serving).await;
        server
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    pub async fn client(&self) -> RegistryClient<Channel> {
        RegistryClient::new(self.channel().await).max_decoding_message_size(usize::MAX)
    }

    pub async fn health(&self) -> HealthClient<Channel> {
        HealthClient::new(self.channel().await)
    }

    /// Follows the health Watch stream until `want` (no polling).
    pub async fn wait_for_status(&self, want: ServingStatus) {
        let mut health = self.health().await;
        let mut updates = health
            .watch(HealthCheckRequest {
                service: String::new(),
            })
            .await
            .expect("health watch")
            .into_inner();
        let result = tokio::time::timeout(PATIENCE, async {
            while let Some(update) = updates.message().await.expect("health update") {
                if update.status == want as i32 {
                    return;
                }
            }
            panic!("health stream ended before {want:?}");
        })
        .await;
        if result.is_err() {
            panic!("no {want:?} within {PATIENCE:?}; log:\n{}", self.log());
        }
    }

    /// Waits until the log has a line containing `needle` (checked every 20 ms).
    pub async fn wait_for_log(&self, needle: &str) {
        self.wait_for_log_lines(needle, 1).await;
    }

    /// Waits until the log has `count` lines containing `needle`. Lines reach the log through
    /// a reader thread, so a line the server wrote before some event may arrive after it.
    pub async fn wait_for_log_lines(&self, needle: &str, count: usize) {
        let seen = || {
            let log = self.log.lock().unwrap();
            log.iter().filter(|l| l.contains(needle)).count()
        };
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while seen() < count {
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "no {count} lines with {needle:?} within {PATIENCE:?}; log:\n{}",
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit, on a blocking thread so that this test's runtime keeps
    /// driving its connections (a graceful stop waits for clients to close them). The log is
    /// complete when this returns.
    pub async fn wait(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let reader = self.reader.take();
        let (child, status) = tokio::task::spawn_blocking(move || {
            let status = child.wait().unwrap();
            if let Some(reader) = reader {
                reader.join().expect("the log reader");
            }
            (child, status)
        })
        .await
        .unwrap();
        self.child = Some(child);
        status
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs the binary to completion: (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "info")
        .output()
        .expect("run olm-registry");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every message of a server stream.
pub async fn collect<T>(mut s: tonic::Streaming<T>) -> Vec<T> {
    let mut out = Vec::new();
    while let Some(item) = s.message().await.expect("stream item") {
        out.push(item);
    }
    out
}

/// The names ListPackages streams, in its order.
pub async fn package_names(c: &mut RegistryClient<Channel>) -> Vec<String> {
    let request = api::ListPackageRequest {};
    collect(c.list_packages(request).await.unwrap().into_inner())
        .await
        .into_iter()
        .map(|p| p.name)
        .collect()
}

/// (channel, package, name): the order ListBundles promises.
pub fn list_order_key(b: &api::Bundle) -> (String, String, String) {
    (
        b.channel_name.clone(),
        b.package_name.clone(),
        b.csv_name.clone(),
    )
}

/// Files below `dir`, relative, sorted.
pub fn files_below(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

/// The manifests of a rendered bundle, decoded, in property order.
pub fn bundle_objects(b: &catalog::Bundle) -> Vec<String> {
    use catalog::property;
    b.properties
        .iter()
        .filter(|p| p.kind == property::BUNDLE_OBJECT)
        .map(|p| match property::parse(p).unwrap() {
            property::Typed::BundleObject { data } => {
                property::decode_bundle_object(&data).unwrap()
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A catalog of one package with `n` bundles in one channel, each bundle without an image and
/// with a manifest of about `manifest_bytes`, so that ListBundles streams every manifest.
pub fn generated_catalog(dir: &Path, n: usize, manifest_bytes: usize) {
    use base64::Engine;
    let mut out = String::new();
    out.push_str(r#"{"schema":"olm.package","name":"big","defaultChannel":"stable"}"#);
    let entries: Vec<String> = (0..n)
        .map(|i| {
            if i == 0 {
                format!(r#"{{"name":"big.v{i}.0.0"}}"#)
            } else {
                format!(
                    r#"{{"name":"big.v{i}.0.0","replaces":"big.v{}.0.0"}}"#,
                    i - 1
                )
            }
        })
        .collect();
    out.push_str(&format!(
        r#"{{"schema":"olm.channel","name":"stable","package":"big","entries":[{}]}}"#,
        entries.join(",")
    ));
    for i in 0..n {
        let csv = format!(
            r#"{{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{{"name":"big.v{i}.0.0"}},"spec":{{"description":"{}"}}}}"#,
            "x".repeat(manifest_bytes)
        );
        let data = base64::engine::general_purpose::STANDARD.encode(csv);
        out.push_str(&format!(
            r#"{{"schema":"olm.bundle","name":"big.v{i}.0.0","package":"big","image":"","properties":[{{"type":"olm.package","value":{{"packageName":"big","version":"{i}.0.0"}}}},{{"type":"olm.bundle.object","value":{{"data":"{data}"}}}}]}}"#
        ));
        out.push('\n');
    }
    write(&dir.join("big/catalog.json"), &out);
}

/// The address of a registry that accepts connections and never says a word: a catalog image
/// pulled from it keeps the server loading.
pub fn silent_registry() -> String {
    let registry = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host = registry.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for conn in registry.incoming() {
            open.push(conn);
        }
    });
    host
}
