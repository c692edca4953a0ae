//! A real Kubernetes control plane on loopback: etcd (Debian's `etcd-server`, which
//! `scripts/test.sh` installs) and the kube-apiserver of `../shared/tools/olm-e2e`, started by
//! that directory's `control-plane.sh` on free 127.0.0.1 ports chosen here, so that several
//! tests can each run their own at once. Nothing binds outside loopback, so no network
//! namespace is needed. Without the tools directory a test skips, loudly.
use super::kube::eventually;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long a CRD may take to be Established (a bound, not a sleep).
const PATIENCE: Duration = Duration::from_secs(60);

/// Tries at starting, each on new ports: a port found free may be taken by another test
/// before etcd or the API server binds it.
const STARTS: usize = 3;

pub struct ControlPlane {
    /// Data, logs (`etcd.log`, `apiserver.log`), certificates and binaries of this control plane.
    pub dir: tempfile::TempDir,
    /// An admin kubeconfig (static token; TLS not verified).
    pub kubeconfig: PathBuf,
    /// The admin's bearer token (group system:masters: allowed everything, RBAC or not).
    pub token: String,
    /// The API server's port on 127.0.0.1.
    pub api_port: u16,
    /// The API server's serving certificate (`DIR/certs/apiserver.crt`), for clients that
    /// verify it (an in-cluster `ca.crt`).
    pub ca_file: PathBuf,
}

impl ControlPlane {
    /// Starts etcd and kube-apiserver and waits until the API server is ready. None (after
    /// a loud SKIPPED line) only when the tools directory is absent; panics with the logs
    /// otherwise if it cannot start.
    pub fn start() -> Option<ControlPlane> {
        ControlPlane::start_with_env(&[])
    }

    /// The same, reachable from a node's pods (see [`super::node`]): the API server binds
    /// every interface and advertises the node's address, so that the `kubernetes` Service
    /// leads to it. Only inside a private network namespace; adds that address to `lo`.
    pub fn start_for_pods() -> Option<ControlPlane> {
        super::node::add_node_address();
        ControlPlane::start_with_env(&[
            ("APISERVER_BIND", "0.0.0.0"),
            ("APISERVER_ADVERTISE", super::node::NODE_IP),
        ])
    }

    /// As [`ControlPlane::start`], with `--authorization-mode=RBAC`: Roles and ClusterRoles
    /// are enforced (the admin token stays in `system:masters`).
    pub fn start_rbac() -> Option<ControlPlane> {
        ControlPlane::start_with_env(&[("AUTHORIZATION_MODE", "RBAC")])
    }

    fn start_with_env(env: &[(&str, &str)]) -> Option<ControlPlane> {
        let Some(tools) = ControlPlane::tools() else {
            eprintln!(
                "\n!!! SKIPPED: ../shared/tools/olm-e2e absent; this test needs a real control plane !!!\n"
            );
            return None;
        };
        let binaries = unpacked_binaries(&tools.join("bin"));
        let mut failures = Vec::new();
        for _ in 0..STARTS {
            let dir = tempfile::Builder::new()
                .prefix("control-plane-")
                .tempdir()
                .unwrap();
            // The script unpacks a binary only when DIR/bin lacks it: links to the copies
            // unpacked once for every test spare each control plane ~300 MB and seconds.
            let bin = dir.path().join("bin");
            std::fs::create_dir(&bin).unwrap();
            for (name, path) in &binaries {
                std::os::unix::fs::symlink(path, bin.join(name)).unwrap();
            }
            let [etcd, peer, api] = free_ports();
            let out = Command::new(tools.join("control-plane.sh"))
                .arg("up")
                .arg(dir.path())
                .env("ETCD_PORT", etcd.to_string())
                .env("ETCD_PEER_PORT", peer.to_string())
                .env("APISERVER_PORT", api.to_string())
                .envs(env.iter().copied())
                .stdin(Stdio::null())
                .output()
                .expect("run control-plane.sh");
            let stdout = String::from_utf8_lossy(&out.stdout);
            let value = |key: &str| {
                stdout
                    .lines()
                    .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                    .map(str::to_owned)
            };
            if out.status.success() {
                let plane = ControlPlane {
                    kubeconfig: PathBuf::from(value("KUBECONFIG").expect("KUBECONFIG= line")),
                    token: value("TOKEN").expect("TOKEN= line"),
                    api_port: api,
                    ca_file: dir.path().join("certs/apiserver.crt"),
                    dir,
                };
                assert!(
                    plane.ca_file.is_file(),
                    "{} missing",
                    plane.ca_file.display()
                );
                return Some(plane);
            }
            let logs = logs(dir.path());
            let failure = format!(
                "control-plane.sh up {} failed ({}):\n{}{}\n{logs}",
                dir.path().display(),
                out.status,
                stdout,
                String::from_utf8_lossy(&out.stderr),
            );
            // `up` stopped what it started; only a port taken meanwhile is worth another try.
            if !logs.contains("address already in use") {
                panic!("{failure}");
            }
            failures.push(failure);
        }
        panic!("{}", failures.join("\n\n"));
    }

    /// The olm-e2e tools directory (`../shared/tools/olm-e2e` beside the repository), if there.
    pub fn tools() -> Option<PathBuf> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/olm-e2e");
        path.join("control-plane.sh").is_file().then_some(path)
    }

    /// An unpacked binary of the tools (`kube-apiserver`, `catalog-operator`, `olm-operator`,
    /// `package-server`).
    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.path().join("bin").join(name)
    }

    /// Creates every CustomResourceDefinition of the YAML files in `dir` and waits until each
    /// is Established. Callable from a test's async runtime: the work runs on its own thread.
    pub fn apply_crds(&self, dir: &Path) {
        let mut crds = Vec::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let value: serde_json::Value = serde::Deserialize::deserialize(doc)
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                if value.is_null() {
                    continue;
                }
                let crd: CustomResourceDefinition = serde_json::from_value(value)
                    .unwrap_or_else(|e| panic!("{}: not a CRD: {e}", file.display()));
                crds.push(crd);
            }
        }
        assert!(!crds.is_empty(), "no CRD in {}", dir.display());
        std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(self.create_crds(crds))
            })
            .join()
            .unwrap()
        });
    }

    async fn create_crds(&self, crds: Vec<CustomResourceDefinition>) {
        let api: Api<CustomResourceDefinition> = Api::all(self.client().await);
        let mut names = Vec::new();
        for crd in crds {
            let name = crd.metadata.name.clone().expect("CRD name");
            api.create(&PostParams::default(), &crd)
                .await
                .unwrap_or_else(|e| panic!("create CRD {name}: {e}"));
            names.push(name);
        }
        eventually("every CRD Established", PATIENCE, || async {
            for name in &names {
                let crd = api.get(name).await.unwrap();
                let established = crd
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                if !established {
                    return None;
                }
            }
            Some(())
        })
        .await;
    }

    /// Stops kube-apiserver (SIGTERM, as a rollout does; SIGKILL after 10 s, as the kubelet
    /// does after a grace period: with clients watching it, it may linger after "Stopped
    /// listening"), leaves it down for `down`, and starts it again with the same command line,
    /// data (etcd keeps running), certificates and tokens, so every client's kubeconfig stays
    /// good; returns once it is ready. The new process replaces the old one in `DIR/pids`, so
    /// `down` still stops it. (`control-plane.sh up` on the same directory would keep etcd's
    /// data but issue a new admin token.) Async, so that the test's own clients keep being
    /// driven meanwhile.
    pub async fn restart_apiserver(&self, down: Duration) {
        let pids_file = self.dir.path().join("pids");
        let pids = std::fs::read_to_string(&pids_file).unwrap();
        let old: i32 = pids
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .find(|pid: &i32| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|comm| comm.trim() == "kube-apiserver")
            })
            .expect("a running kube-apiserver in DIR/pids");
        let command_line = std::fs::read(format!("/proc/{old}/cmdline")).unwrap();
        let mut args = command_line
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8(a.to_vec()).unwrap());
        let program = args.next().unwrap();
        // Gone, or a zombie: its parent (the script) has exited, and whoever reaps orphans
        // here may not.
        let alive = || {
            std::fs::read_to_string(format!("/proc/{old}/stat")).is_ok_and(|stat| {
                let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
                state != Some(Some('Z'))
            })
        };
        // SAFETY: plain kill(2)s of the API server this control plane started.
        unsafe { libc::kill(old, libc::SIGTERM) };
        let (stopping, mut killed) = (std::time::Instant::now(), false);
        while alive() {
            if stopping.elapsed() > Duration::from_secs(10) && !killed {
                eprintln!("kube-apiserver {old} still running 10 s after SIGTERM: SIGKILL");
                unsafe { libc::kill(old, libc::SIGKILL) };
                killed = true;
            }
            assert!(
                stopping.elapsed() < PATIENCE,
                "kube-apiserver {old} did not stop:\n{}",
                logs(self.dir.path())
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(down).await;
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.path().join("apiserver.log"))
            .unwrap();
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let new = child.id();
        // Not waited for here: `down` stops it, and init reaps it once this process is gone.
        std::mem::forget(child);
        let replaced = pids.replace(&format!("{old}\n"), &format!("{new}\n"));
        std::fs::write(&pids_file, replaced).unwrap();
        let started = std::time::Instant::now();
        loop {
            let (token, port) = (self.token.clone(), self.api_port);
            // curl waits up to 2 s: on a blocking thread, not the test's runtime.
            let out = tokio::task::spawn_blocking(move || {
                Command::new("curl")
                    .args(["-sk", "-m", "2", "-H"])
                    .arg(format!("Authorization: Bearer {token}"))
                    .arg(format!("https://127.0.0.1:{port}/readyz"))
                    .output()
                    .expect("curl")
            })
            .await
            .unwrap();
            if out.stdout == b"ok" {
                return;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "kube-apiserver not ready again:\n{}",
                logs(self.dir.path())
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A client with the admin's kubeconfig.
    pub async fn client(&self) -> kube::Client {
        client_of(&self.kubeconfig).await
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if let Some(tools) = ControlPlane::tools() {
            let _ = Command::new(tools.join("control-plane.sh"))
                .arg("down")
                .arg(self.dir.path())
                .stdin(Stdio::null())
                .status();
        }
    }
}

/// A client with the credentials of `kubeconfig`.
pub async fn client_of(kubeconfig: &Path) -> kube::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Three ports free on 127.0.0.1 now, all different (the listeners are held until all three
/// are chosen).
fn free_ports() -> [u16; 3] {
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    std::array::from_fn(|i| listeners[i].local_addr().unwrap().port())
}

/// The tail of the control plane's logs, for a failure message.
fn logs(dir: &Path) -> String {
    ["etcd.log", "apiserver.log"]
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            format!("--- {name} (last 40 lines) ---\n{tail}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every compressed binary of a tools directory (`bin/*.gz`, `node-bin/*.xz`), unpacked once
/// into the target directory (keyed by the directory's SHA256SUMS, so new tools are unpacked
/// anew): name and path.
pub(crate) fn unpacked_binaries(dir: &Path) -> Vec<(String, PathBuf)> {
    use sha2::Digest;
    let sums = std::fs::read(dir.join("SHA256SUMS")).unwrap_or_default();
    let key = sha2::Sha256::digest(&sums);
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "olm-e2e-bin-{:x}",
        u64::from_be_bytes(key[..8].try_into().unwrap())
    ));
    std::fs::create_dir_all(&cache).unwrap();
    let mut binaries = Vec::new();
    let mut packed: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gz" || e == "xz"))
        .collect();
    packed.sort();
    for file in packed {
        let name = file.file_stem().unwrap().to_str().unwrap().to_owned();
        let target = cache.join(&name);
        if !target.exists() {
            // Unpacked under a name of its own and renamed into place: tests running at once
            // never see (or run) a half-written binary.
            let mut part = tempfile::NamedTempFile::new_in(&cache).unwrap();
            if file.extension().is_some_and(|e| e == "gz") {
                let mut gz = flate2::read::GzDecoder::new(std::fs::File::open(&file).unwrap());
                std::io::copy(&mut gz, &mut part)
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            } else {
                // Debian's xz-utils, which node.sh needs as well.
                let status = Command::new("xz")
                    .arg("-dc")
                    .arg(&file)
                    .stdout(part.reopen().unwrap())
                    .status()
                    .expect("xz (xz-utils)");
                assert!(status.success(), "xz -dc {}", file.display());
            }
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(part.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            part.persist(&target).unwrap();
        }
        binaries.push((name, target));
    }
    binaries
}
