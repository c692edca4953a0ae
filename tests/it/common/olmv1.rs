//! OLM v1 on a real control plane: operator-controller (`../shared/tools/olm-e2e/olmv1`) with
//! `olm-registry catalogd` in catalogd's place, a loopback registry for catalog and bundle
//! images, and the objects a ClusterExtension needs (the `olmv1-system` namespace, an install
//! namespace with a ServiceAccount).
//!
//! Everything binds 127.0.0.1 only (operator-controller's health probe and metrics are off:
//! `--health-probe-bind-address 0`, no metrics pair; pprof is off by default), so no network
//! namespace is needed and several tests can each run their own at once. operator-controller
//! pulls bundle images with containers/image, which takes plain HTTP for a registry only from
//! a `registries.conf`: it gets a `HOME` of its own whose `.config/containers/registries.conf`
//! (read instead of `/etc/containers/…` when present) names this test's registry, so nothing of
//! the host is written. catalogd's API is HTTPS with a pair of the test PKI, whose CA
//! operator-controller trusts through `--catalogd-cas-dir`.
use super::control_plane::ControlPlane;
use super::kube::Kube;
use super::pki::Pki;
use super::registry::TestRegistry;
use super::{BIN, run};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

pub(crate) const CATALOGS: &str = "/apis/olm.operatorframework.io/v1/clustercatalogs";
pub(crate) const EXTENSIONS: &str = "/apis/olm.operatorframework.io/v1/clusterextensions";
/// Where ClusterExtensions install to, and where their ServiceAccount lives.
pub(crate) const INSTALL_NAMESPACE: &str = "olmv1-e2e";
/// The ServiceAccount every ClusterExtension of the harness names (authorization is
/// AlwaysAllow, so it may do anything an install needs).
pub(crate) const INSTALLER: &str = "installer";
/// How long a process may take to start listening, or a condition to show.
pub(crate) const PATIENCE: Duration = Duration::from_secs(150);

/// A control plane with OLM v1's CRDs, `olm-registry catalogd`, operator-controller and a
/// registry. Fields drop in order: the processes stop before the control plane does.
pub(crate) struct OlmV1 {
    pub(crate) kube: Kube,
    pub(crate) catalogd: Catalogd,
    pub(crate) operator_controller: Daemon,
    pub(crate) registry: TestRegistry,
    /// Scratch space: build caches, operator-controller's cache and HOME.
    pub(crate) work: tempfile::TempDir,
    /// Held for its Drop, last of all; its kubeconfig, token and directory are there for
    /// tests that need them.
    #[allow(dead_code)]
    pub(crate) cp: ControlPlane,
}

impl OlmV1 {
    /// Starts everything and creates the namespaces and the installer ServiceAccount. None
    /// (after a loud SKIPPED line) only when `../shared/tools/olm-e2e` is absent.
    pub(crate) async fn start() -> Option<OlmV1> {
        let started = std::time::Instant::now();
        let cp = ControlPlane::start()?;
        let tools = ControlPlane::tools().unwrap();
        cp.apply_crds(&tools.join("olmv1/crds"));
        let kube = Kube(cp.client().await);
        for ns in ["olmv1-system", INSTALL_NAMESPACE] {
            kube.create(
                "/api/v1/namespaces",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .await;
        }
        kube.create(
            &format!("/api/v1/namespaces/{INSTALL_NAMESPACE}/serviceaccounts"),
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": INSTALLER, "namespace": INSTALL_NAMESPACE}}),
        )
        .await;
        let registry = TestRegistry::plain();
        let work = tempfile::tempdir().unwrap();
        let catalogd = Catalogd::start(&cp.kubeconfig, &registry.addr, &work.path().join("cd"));
        let operator_controller =
            start_operator_controller(&tools, &cp.kubeconfig, &registry.addr, work.path());
        eprintln!(
            "control plane, catalogd and operator-controller up in {:.1?}",
            started.elapsed()
        );
        Some(OlmV1 {
            kube,
            catalogd,
            operator_controller,
            registry,
            work,
            cp,
        })
    }

    /// `build catalog DIR` pushed to the registry as `name` (`repository:tag`); the image
    /// reference by digest (`HOST:PORT/repository@sha256:…`).
    pub(crate) fn push_catalog(&self, dir: &Path, name: &str) -> String {
        self.build("catalog", dir, name)
    }

    /// `build bundle DIR` pushed to the registry as `name`, then rendered: the `olm.bundle`
    /// document a catalog lists for it (its `image` is the reference by digest).
    pub(crate) fn push_bundle(&self, dir: &Path, name: &str) -> Value {
        let image = self.build("bundle", dir, name);
        let (code, stdout, stderr) = run(&["--use-http", "render", &image, "--output", "json"]);
        assert_eq!(code, 0, "render {image}: {stderr}");
        let bundle: Value = serde_json::Deserializer::from_str(&stdout)
            .into_iter::<Value>()
            .map(Result::unwrap)
            .find(|d| d["schema"] == "olm.bundle")
            .unwrap_or_else(|| panic!("render {image}: no olm.bundle in {stdout}"));
        assert_eq!(bundle["image"], image.as_str(), "{bundle}");
        bundle
    }

    fn build(&self, kind: &str, dir: &Path, name: &str) -> String {
        let tag = format!("{}/{name}", self.registry.addr);
        let cache = self.work.path().join("build-cache");
        let (code, stdout, stderr) = run(&[
            "build",
            kind,
            dir.to_str().unwrap(),
            "--tag",
            &tag,
            "--insecure-registry",
            &self.registry.addr,
            "--image-cache-dir",
            cache.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "build {kind} {}: {stderr}", dir.display());
        let digest = stdout.trim().rsplit_once('@').expect("NAME@DIGEST").1;
        let repository = tag.rsplit_once(':').unwrap().0;
        format!("{repository}@{digest}")
    }

    /// Creates a ClusterCatalog of the registry's `name` (`repository:tag`), its tag polled
    /// every minute (the CRD's minimum), with these labels.
    pub(crate) async fn create_catalog(&self, catalog: &str, name: &str, labels: Value) -> Value {
        let image = format!("{}/{name}", self.registry.addr);
        self.kube
            .create(
                CATALOGS,
                json!({
                    "apiVersion": "olm.operatorframework.io/v1",
                    "kind": "ClusterCatalog",
                    "metadata": {"name": catalog, "labels": labels},
                    "spec": {"source": {"type": "Image",
                             "image": {"ref": image, "pollIntervalMinutes": 1}}},
                }),
            )
            .await
    }

    /// Creates a ClusterExtension installing into the install namespace as the installer,
    /// with `catalog` as its `spec.source.catalog` (packageName, version, channels, selector…).
    pub(crate) async fn create_extension(&self, name: &str, catalog: Value) -> Value {
        self.kube
            .create(
                EXTENSIONS,
                json!({
                    "apiVersion": "olm.operatorframework.io/v1",
                    "kind": "ClusterExtension",
                    "metadata": {"name": name},
                    "spec": {
                        "namespace": INSTALL_NAMESPACE,
                        "serviceAccount": {"name": INSTALLER},
                        "source": {"sourceType": "Catalog", "catalog": catalog},
                    },
                }),
            )
            .await
    }

    /// The object at `path` once `check` accepts it (polled every 200 ms); fails after
    /// [`PATIENCE`] with the object as last seen and both daemons' log tails.
    pub(crate) async fn wait_for(
        &self,
        path: &str,
        what: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let object = self.kube.get(path).await.unwrap_or(Value::Null);
            if check(&object) {
                return object;
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "no {what} within {PATIENCE:?}; {path} last seen:\n{object:#}\n{}\n{}",
                    self.operator_controller.tail(40),
                    self.catalogd.daemon.tail(40),
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The ClusterExtension `name` once its condition `kind` has `status` and `reason` for
    /// its current generation.
    pub(crate) async fn wait_for_condition(
        &self,
        name: &str,
        kind: &str,
        status: &str,
        reason: &str,
    ) -> Value {
        self.wait_for(
            &format!("{EXTENSIONS}/{name}"),
            &format!("{name} {kind}={status} ({reason})"),
            |object| {
                let c = condition(object, kind);
                c["status"] == status
                    && c["reason"] == reason
                    && c["observedGeneration"] == object["metadata"]["generation"]
            },
        )
        .await
    }
}

impl OlmV1 {
    /// The ClusterExtension `name` once it reports `bundle` (a name) installed and has
    /// reached the desired state, both for its current generation.
    pub(crate) async fn wait_for_install(&self, name: &str, bundle: &str) -> Value {
        self.wait_for(
            &format!("{EXTENSIONS}/{name}"),
            &format!("{name} installed with {bundle}, desired state reached"),
            |object| {
                let current = |kind: &str| {
                    let c = condition(object, kind);
                    c["status"] == "True"
                        && c["reason"] == "Succeeded"
                        && c["observedGeneration"] == object["metadata"]["generation"]
                };
                object["status"]["install"]["bundle"]["name"] == bundle
                    && current("Installed")
                    && current("Progressing")
            },
        )
        .await
    }

    /// The ClusterCatalog `name` once it serves `reference` (by digest) and its Progressing
    /// condition has `reason`.
    pub(crate) async fn wait_for_catalog(
        &self,
        name: &str,
        reference: &str,
        reason: &str,
    ) -> Value {
        self.wait_for(
            &format!("{CATALOGS}/{name}"),
            &format!("{name} serving {reference}, Progressing {reason}"),
            |object| {
                object["status"]["resolvedSource"]["image"]["ref"] == reference
                    && condition(object, "Progressing")["reason"] == reason
            },
        )
        .await
    }
}

/// The condition `kind` of an object's status (Null when absent).
pub(crate) fn condition<'a>(object: &'a Value, kind: &str) -> &'a Value {
    object["status"]["conditions"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

/// A condition as `(type, status, reason, message)`, for comparing field by field.
pub(crate) fn said(object: &Value, kind: &str) -> (String, String, String, String) {
    let c = condition(object, kind);
    let text = |k: &str| c[k].as_str().unwrap_or("<absent>").to_owned();
    (
        kind.to_owned(),
        text("status"),
        text("reason"),
        text("message"),
    )
}

/// `said`'s expected form, from string slices.
pub(crate) fn cond(
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> (String, String, String, String) {
    (kind.into(), status.into(), reason.into(), message.into())
}

/// A process of the test, its stderr (and stdout) kept in memory; killed on drop.
pub(crate) struct Daemon {
    child: Child,
    name: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Daemon {
    /// Spawns `command` (its output piped here) and waits up to [`PATIENCE`] for an output
    /// line containing `ready_line`; Err(its output) if none comes.
    fn spawn(name: &str, mut command: Command, ready_line: &str) -> Result<Daemon, String> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let streams: [Box<dyn std::io::Read + Send>; 2] = [
            Box::new(child.stdout.take().unwrap()),
            Box::new(child.stderr.take().unwrap()),
        ];
        for stream in streams {
            let (sink, tx, needle) = (log.clone(), tx.clone(), ready_line.to_owned());
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if line.contains(&needle) {
                        let _ = tx.send(());
                    }
                    sink.lock().unwrap().push(line);
                }
            });
        }
        let mut daemon = Daemon {
            child,
            name: name.to_owned(),
            log,
        };
        match rx.recv_timeout(PATIENCE) {
            Ok(()) => Ok(daemon),
            Err(_) => {
                let status = daemon.child.try_wait().ok().flatten();
                Err(format!(
                    "{name} did not say {ready_line:?} (exit: {status:?}):\n{}",
                    daemon.tail(60)
                ))
            }
        }
    }

    /// Its last `n` lines, for a failure message.
    pub(crate) fn tail(&self, n: usize) -> String {
        let log = self.log.lock().unwrap();
        format!(
            "[{}]\n{}",
            self.name,
            log[log.len().saturating_sub(n)..].join("\n")
        )
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `olm-registry catalogd` over HTTPS on a free 127.0.0.1 port, `status.urls.base` naming
/// that port.
pub(crate) struct Catalogd {
    pub(crate) daemon: Daemon,
    /// `https://127.0.0.1:PORT`.
    pub(crate) url: String,
}

impl Catalogd {
    /// operator-controller's request for `catalog`'s content (`GET …/api/v1/all`, gzip
    /// accepted), over TLS verified with the test CA: the status code and the body.
    pub(crate) async fn all(&self, catalog: &str) -> (u16, String) {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = std::fs::read(Pki::get().file("ca.crt")).unwrap();
        let client = reqwest::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&ca).unwrap()])
            .build()
            .unwrap();
        let url = format!("{}/catalogs/{catalog}/api/v1/all", self.url);
        let response = client
            .get(&url)
            .header("Accept-Encoding", "gzip")
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        let status = response.status().as_u16();
        let gzip = response
            .headers()
            .get("content-encoding")
            .is_some_and(|v| v == "gzip");
        let bytes = response.bytes().await.unwrap();
        let mut body = String::new();
        if gzip {
            use std::io::Read;
            flate2::read::GzDecoder::new(&bytes[..])
                .read_to_string(&mut body)
                .unwrap();
        } else {
            body = String::from_utf8(bytes.to_vec()).unwrap();
        }
        (status, body)
    }

    /// Starts it with `kubeconfig`, pulling over plain HTTP from `registry`, its image cache
    /// in `dir`. A port found free may be taken before catalogd binds it: tried three times.
    pub(crate) fn start(kubeconfig: &Path, registry: &str, dir: &Path) -> Catalogd {
        let pki = Pki::get();
        let mut failures = Vec::new();
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let url = format!("https://127.0.0.1:{port}");
            let mut command = Command::new(BIN);
            command
                .arg("catalogd")
                .args([
                    "--http-addr",
                    &format!("127.0.0.1:{port}"),
                    "--base-url",
                    &url,
                ])
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .arg("--tls-cert-file")
                .arg(pki.file("one.crt"))
                .arg("--tls-key-file")
                .arg(pki.file("one.key"))
                .args(["--insecure-registry", registry, "--shutdown-grace", "2s"])
                .arg("--image-cache-dir")
                .arg(dir)
                .env("RUST_LOG", "info")
                .env_remove("KUBECONFIG");
            match Daemon::spawn(
                "olm-registry catalogd",
                command,
                "serving the catalogd API on ",
            ) {
                Ok(daemon) => return Catalogd { daemon, url },
                Err(failure) => failures.push(failure),
            }
            // Only a port taken meanwhile is worth another try.
            if !failures.last().unwrap().contains("in use") {
                break;
            }
        }
        panic!(
            "olm-registry catalogd did not start:\n{}",
            failures.join("\n\n")
        );
    }
}

/// operator-controller (unpacked once into the target directory) with its caches, HOME and
/// the CA of catalogd's pair under `work`; running once its ClusterExtension controller has
/// started.
fn start_operator_controller(
    tools: &Path,
    kubeconfig: &Path,
    registry: &str,
    work: &Path,
) -> Daemon {
    let binary = unpacked(&tools.join("olmv1/bin/operator-controller.xz"));
    let (home, cas) = (work.join("oc-home"), work.join("oc-cas"));
    let conf = home.join(".config/containers/registries.conf");
    std::fs::create_dir_all(conf.parent().unwrap()).unwrap();
    std::fs::write(
        &conf,
        format!("[[registry]]\nlocation = \"{registry}\"\ninsecure = true\n"),
    )
    .unwrap();
    std::fs::create_dir_all(&cas).unwrap();
    std::fs::copy(Pki::get().file("ca.crt"), cas.join("ca.crt")).unwrap();
    let mut command = Command::new(binary);
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--system-namespace", "olmv1-system"])
        .arg("--catalogd-cas-dir")
        .arg(&cas)
        .arg("--cache-path")
        .arg(work.join("oc-cache"))
        .args(["--health-probe-bind-address", "0"])
        .env("HOME", &home)
        .env_remove("KUBECONFIG");
    Daemon::spawn("operator-controller", command, "Starting workers")
        .unwrap_or_else(|e| panic!("{e}"))
}

/// `file` (`.xz`) unpacked once into the target directory, keyed by its content's digest so
/// that new tools are unpacked anew; written under a name of its own and renamed into place,
/// so that tests running at once never run a half-written binary.
fn unpacked(file: &Path) -> PathBuf {
    use sha2::Digest;
    let packed = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let key = sha2::Sha256::digest(&packed);
    let name = file.file_stem().unwrap().to_str().unwrap();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("olm-e2e-olmv1");
    std::fs::create_dir_all(&cache).unwrap();
    let target = cache.join(format!(
        "{name}-{:x}",
        u64::from_be_bytes(key[..8].try_into().unwrap())
    ));
    if !target.exists() {
        let part = tempfile::NamedTempFile::new_in(&cache).unwrap();
        let out = Command::new("xz")
            .args(["-dc"])
            .arg(file)
            .stdout(part.reopen().unwrap())
            .status()
            .expect("xz (Debian's xz-utils)");
        assert!(out.success(), "xz -d {}", file.display());
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(part.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        part.persist(&target).unwrap();
    }
    target
}
