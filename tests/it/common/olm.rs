//! OLM's own operators, as its chart runs them, with the flags that work here (see
//! `../shared/tools/olm-e2e/README.md`): the catalog operator, the olm operator and
//! packageserver. Each logs to a file of the test's directory and is killed with the test.
//! They bind ports on every interface, so a test runs them in a private network namespace
//! ([`olm_test`]). Also the waits for what OLM does, as the API server shows it.
use super::control_plane::ControlPlane;
use super::kube::{Kube, eventually};
use serde_json::Value;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long any one thing OLM does may take before a test gives up (OLM's executor passes
/// take ~12 s each here; an install needs two or three).
pub(crate) const OLM_PATIENCE: Duration = Duration::from_secs(180);

/// How the catalog operator runs, beyond the flags every test gives it.
#[derive(Default)]
pub(crate) struct CatalogOperatorOptions {
    /// More flags, e.g. `--util-image IMAGE` or `--opmImage IMAGE`.
    pub(crate) args: Vec<String>,
    /// A hosts file bind-mounted over `/etc/hosts` in the operator's own mount namespace (and
    /// packageserver's, which dials the same registry Services): with no cluster DNS, that is
    /// how they find `NAME.NAMESPACE.svc` (Go's resolver re-reads the file, so the test may
    /// rewrite it in place as Services appear; see [`super::node::ServiceHosts`]).
    pub(crate) hosts_file: Option<PathBuf>,
}

pub(crate) struct Olm {
    children: Vec<Child>,
    logs: PathBuf,
}

impl Olm {
    pub(crate) fn start(cp: &ControlPlane, work: &Path) -> Olm {
        Olm::start_with(cp, work, &CatalogOperatorOptions::default())
    }

    pub(crate) fn start_with(
        cp: &ControlPlane,
        work: &Path,
        catalog_operator: &CatalogOperatorOptions,
    ) -> Olm {
        let logs = work.join("olm-logs");
        std::fs::create_dir_all(&logs).unwrap();
        let kubeconfig = &cp.kubeconfig;
        let log = |name: &str| std::fs::File::create(logs.join(format!("{name}.log"))).unwrap();
        let mut children = Vec::new();
        let mut spawn = |name: &str, command: &mut Command| {
            let child = command
                .stdout(log(name))
                .stderr(log(&format!("{name}.stderr")))
                .spawn()
                .unwrap_or_else(|e| panic!("starting {name}: {e}"));
            children.push(child);
        };
        let mut catalog = match &catalog_operator.hosts_file {
            None => Command::new(cp.bin("catalog-operator")),
            Some(hosts) => {
                let mut c = Command::new("unshare");
                // `sh -c SCRIPT sh ARGS...`: the operator's flags follow as "$@".
                c.args(["--mount", "--propagation", "private", "sh", "-c"])
                    .arg(format!(
                        "mount --bind '{}' /etc/hosts && exec '{}' \"$@\"",
                        hosts.display(),
                        cp.bin("catalog-operator").display()
                    ))
                    .arg("sh");
                c
            }
        };
        spawn(
            "catalog-operator",
            catalog
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(["--namespace", "olm", "--writeStatusName", ""])
                .args(&catalog_operator.args)
                .stdin(Stdio::null()),
        );
        // With TLS its health and metrics listener moves to :8443, clear of the catalog
        // operator's :8080.
        let (cert, key) = self_signed(work);
        spawn(
            "olm-operator",
            Command::new(cp.bin("olm-operator"))
                .env("KUBECONFIG", kubeconfig)
                .env("OPERATOR_NAMESPACE", "olm")
                .env("OPERATOR_NAME", "olm-operator")
                .args(["--namespace", "olm", "--writeStatusName", ""])
                .arg("--tls-cert")
                .arg(&cert)
                .arg("--tls-key")
                .arg(&key)
                .arg("--client-ca")
                .arg(&cert),
        );
        // packageserver builds its delegated authorizer from the in-cluster configuration
        // whatever its flags say: give it one, in a private mount namespace.
        let certs = work.join("packageserver-certs");
        std::fs::create_dir_all(&certs).unwrap();
        let hosts = match &catalog_operator.hosts_file {
            Some(file) => format!("mount --bind '{}' /etc/hosts\n", file.display()),
            None => String::new(),
        };
        let script = format!(
            "set -e\n{hosts}\
             mount -t tmpfs tmpfs /run\n\
             sa=/run/secrets/kubernetes.io/serviceaccount\n\
             mkdir -p $sa\n\
             printf %s '{token}' > $sa/token\n\
             printf olm > $sa/namespace\n\
             cp '{ca}' $sa/ca.crt\n\
             exec '{bin}' -v=4 --secure-port 5443 --bind-address 127.0.0.1 --global-namespace olm \
               --kubeconfig '{k}' --authentication-kubeconfig '{k}' --authorization-kubeconfig '{k}' \
               --cert-dir '{certs}'\n",
            token = cp.token,
            ca = cp.ca_file.display(),
            bin = cp.bin("package-server").display(),
            k = kubeconfig.display(),
            certs = certs.display(),
        );
        spawn(
            "package-server",
            Command::new("unshare")
                .args(["--mount", "--propagation", "private", "sh", "-c", &script])
                .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
                .env("KUBERNETES_SERVICE_PORT", cp.api_port.to_string())
                .stdin(Stdio::null()),
        );
        Olm { children, logs }
    }

    /// What operator `name` logged so far (stdout and stderr).
    pub(crate) fn log(&self, name: &str) -> String {
        let read = |file: String| std::fs::read_to_string(self.logs.join(file)).unwrap_or_default();
        read(format!("{name}.log")) + &read(format!("{name}.stderr.log"))
    }
}

impl Drop for Olm {
    fn drop(&mut self) {
        // A failing test shows what OLM said last: the logs go away with the test's directory.
        if std::thread::panicking() {
            for name in ["catalog-operator", "olm-operator", "package-server"] {
                let log = self.log(name);
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                eprintln!("--- last lines of {name}'s log ---\n{tail}");
            }
            keep_logs(&self.logs);
        }
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// With `OLM_TEST_LOGS=DIR` set, a failed test's OLM logs are copied whole to a new
/// directory under DIR (the test prints only their last lines, and its own directory goes).
fn keep_logs(logs: &Path) {
    let Some(dir) = std::env::var_os("OLM_TEST_LOGS") else {
        return;
    };
    let keep = Path::new(&dir).join(format!("olm-logs-{}", std::process::id()));
    let copied = std::fs::create_dir_all(&keep).and_then(|()| {
        for entry in std::fs::read_dir(logs)? {
            let entry = entry?;
            std::fs::copy(entry.path(), keep.join(entry.file_name()))?;
        }
        Ok(())
    });
    match copied {
        Ok(()) => eprintln!("OLM's logs kept in {}", keep.display()),
        Err(e) => eprintln!("keeping OLM's logs in {}: {e}", keep.display()),
    }
}

/// A self-signed certificate and key for 127.0.0.1.
fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("olm-tls.crt"), dir.join("olm-tls.key"));
    let status = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=olm",
        ])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "openssl req");
    (cert, key)
}

/// Runs an OLM test: `test` on a single-threaded runtime, given the olm-e2e tools directory,
/// in a private network namespace; skipped loudly (naming `what`) when the tools are absent.
pub(crate) fn olm_test<F: Future<Output = ()>>(what: &str, test: impl FnOnce(PathBuf) -> F) {
    let Some(tools) = ControlPlane::tools() else {
        eprintln!("SKIPPED: ../shared/tools/olm-e2e is absent; {what} not run");
        return;
    };
    enter_private_network();
    ahead_of_other_tests();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(test(tools));
}

/// Gives this thread, and the control plane and operators it starts, CPU before the other tests
/// running beside it (nice -5): OLM v0.31.0 loses a Subscription's InstallPlan reference when a
/// resolution reads its cache before the last status it wrote arrives there (see
/// `.config/nextest.toml`), and starvation is what stretches that gap. Niceness belongs to the
/// thread on Linux, and children inherit it.
fn ahead_of_other_tests() {
    // SAFETY: setpriority only changes this thread's scheduling priority.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, -5) };
    assert_eq!(
        rc,
        0,
        "setpriority(-5) failed ({}): an OLM end-to-end test needs root",
        std::io::Error::last_os_error()
    );
}

/// Moves this thread (and every process and thread it starts from now on) into a new network
/// namespace with only loopback up. Namespaces belong to threads, and each test runs in its
/// own process under nextest (its own thread under cargo test), so nothing else moves.
fn enter_private_network() {
    // SAFETY: unshare only changes this thread's namespace membership.
    let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    assert_eq!(
        rc,
        0,
        "unshare(CLONE_NEWNET) failed ({}): an OLM end-to-end test needs root",
        std::io::Error::last_os_error()
    );
    let status = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status()
        .expect("ip (iproute2)");
    assert!(status.success(), "ip link set lo up");
}

/// Waits until CatalogSource `namespace`/`name` reports a connection state that `want`
/// accepts; returns that state.
pub(crate) async fn wait_for_catalog_state(
    kube: &Kube,
    namespace: &str,
    name: &str,
    want: impl Fn(&str) -> bool,
) -> String {
    let path =
        format!("/apis/operators.coreos.com/v1alpha1/namespaces/{namespace}/catalogsources/{name}");
    eventually(
        &format!("CatalogSource {namespace}/{name}'s connection state"),
        OLM_PATIENCE,
        || async {
            let cs = kube.get(&path).await?;
            let state = cs["status"]["connectionState"]["lastObservedState"].as_str()?;
            want(state).then(|| state.to_owned())
        },
    )
    .await
}

/// Waits until an InstallPlan of `namespace` that installs `csv` is Complete (failing at
/// once if it Failed), running `each_poll` before each look (e.g. to do the work of Jobs
/// that no kubelet runs); returns the InstallPlan.
pub(crate) async fn wait_for_install_plan<F, Fut>(
    kube: &Kube,
    namespace: &str,
    csv: &str,
    mut each_poll: F,
) -> Value
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let path = format!("/apis/operators.coreos.com/v1alpha1/namespaces/{namespace}/installplans");
    eventually(
        &format!("a Complete InstallPlan for {csv}"),
        OLM_PATIENCE,
        || {
            let poll = each_poll();
            let path = &path;
            async move {
                poll.await;
                let plans = kube.list(path).await;
                let plan = plans.into_iter().find(|p| {
                    p["spec"]["clusterServiceVersionNames"]
                        .as_array()
                        .is_some_and(|names| names.iter().any(|n| n == csv))
                })?;
                let phase = plan["status"]["phase"].as_str().unwrap_or_default();
                assert_ne!(phase, "Failed", "InstallPlan failed: {plan:#}");
                (phase == "Complete").then_some(plan)
            }
        },
    )
    .await
}
