//! OLM's own operators, as its chart runs them, with the flags that work here (see
//! `../shared/tools/olm-e2e/README.md`): the catalog operator, the olm operator and
//! packageserver. Each logs to a file of the test's directory and is killed with the test.
use crate::common::control_plane::ControlPlane;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub(super) struct Olm {
    children: Vec<Child>,
    logs: PathBuf,
}

impl Olm {
    pub(super) fn start(cp: &ControlPlane, work: &Path) -> Olm {
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
        spawn(
            "catalog-operator",
            Command::new(cp.bin("catalog-operator"))
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(["--namespace", "olm", "--writeStatusName", ""]),
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
        let script = format!(
            "set -e\n\
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
    pub(super) fn log(&self, name: &str) -> String {
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
        }
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
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
