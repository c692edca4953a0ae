//! A real Kubernetes node beside a control plane: `node.sh` of `../shared/tools/olm-e2e`
//! (kube-controller-manager, kube-scheduler, containerd + runc, a bridge CNI, kubelet and
//! kube-proxy), so that Pods, Jobs, Deployments and probes run as in a cluster. Run it in a
//! private network namespace ([`super::olm::olm_test`]) with a control plane from
//! [`ControlPlane::start_for_pods`]; it is stopped (containers included) when dropped, and a
//! failing test shows the pods' logs.
//!
//! There is no cluster DNS: [`ServiceHosts`] keeps a hosts file mapping every Service's
//! `NAME.NAMESPACE.svc` to its ClusterIP, for clients outside the cluster that dial Services by
//! name (OLM's catalog operator and packageserver, given it over `/etc/hosts`).
use super::control_plane::{ControlPlane, client_of, unpacked_binaries};
use super::kube::Kube;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The node's address (on `lo`), which the API server advertises to pods.
pub(crate) const NODE_IP: &str = "10.99.0.1";

/// Adds the node's address to `lo` (before the API server that advertises it starts).
pub(crate) fn add_node_address() {
    let out = Command::new("ip")
        .args(["addr", "add", &format!("{NODE_IP}/32"), "dev", "lo"])
        .output()
        .expect("ip (iproute2)");
    assert!(
        out.status.success() || String::from_utf8_lossy(&out.stderr).contains("File exists"),
        "ip addr add {NODE_IP}/32 dev lo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(crate) struct Node {
    /// `cp` (a link to the control plane's directory, where node.sh looks for it) and `node`.
    dir: tempfile::TempDir,
    script: PathBuf,
}

impl Node {
    /// Starts the node and waits until it is Ready. Images are pulled over plain HTTP from
    /// `registries` (HOST:PORT).
    pub(crate) fn start(cp: &ControlPlane, tools: &Path, registries: &[&str]) -> Node {
        let dir = tempfile::Builder::new().prefix("node-").tempdir().unwrap();
        std::os::unix::fs::symlink(cp.dir.path(), dir.path().join("cp")).unwrap();
        // node.sh unpacks a binary only when node/bin lacks it: links to copies unpacked once
        // for every test spare each node ~250 MB and seconds of xz.
        let bin = dir.path().join("node/bin");
        std::fs::create_dir_all(&bin).unwrap();
        for (name, path) in unpacked_binaries(&tools.join("node-bin")) {
            std::os::unix::fs::symlink(path, bin.join(name)).unwrap();
        }
        let node = Node {
            dir,
            script: tools.join("node.sh"),
        };
        let out = Command::new(&node.script)
            .arg("up")
            .arg(node.dir.path())
            .env("APISERVER_PORT", cp.api_port.to_string())
            .env("REGISTRIES", registries.join(" "))
            .stdin(Stdio::null())
            .output()
            .expect("run node.sh");
        assert!(
            out.status.success(),
            "node.sh up {} failed ({}):\n{}{}\n{}",
            node.dir.path().display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            node.logs()
        );
        node
    }

    /// The last lines of the node's own logs (kubelet, containerd, ...) and of every
    /// container's log, for a failure message.
    pub(crate) fn logs(&self) -> String {
        let files = ["node/logs", "node/pod-logs"].iter().flat_map(|rel| {
            let dir = self.dir.path().join(rel);
            let files = if dir.is_dir() {
                super::files_below(&dir)
            } else {
                Vec::new()
            };
            files.into_iter().map(move |f| dir.join(f))
        });
        files
            .map(|file| {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(25)..].join("\n");
                format!("--- {} (last 25 lines) ---\n{tail}", file.display())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
        let _ = Command::new(&self.script)
            .arg("down")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .status();
    }
}

/// A hosts file naming every Service of the cluster (`NAME.NAMESPACE.svc` and the
/// `.cluster.local` form, at its ClusterIP), kept current by a thread of its own that looks
/// every half second. The file is rewritten in place (the same inode) so that a bind mount of
/// it over `/etc/hosts` shows each new version; Go's resolver re-reads it when it changes.
pub(crate) struct ServiceHosts {
    pub(crate) path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServiceHosts {
    pub(crate) fn start(cp: &ControlPlane, path: &Path) -> ServiceHosts {
        std::fs::write(path, hosts_text(&BTreeMap::new())).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (kubeconfig, file, flag) = (cp.kubeconfig.clone(), path.to_owned(), stop.clone());
        let thread = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(keep_hosts(kubeconfig, file, flag))
        });
        ServiceHosts {
            path: path.to_owned(),
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for ServiceHosts {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn keep_hosts(kubeconfig: PathBuf, file: PathBuf, stop: Arc<AtomicBool>) {
    let kube = Kube(client_of(&kubeconfig).await);
    let mut written = BTreeMap::new();
    while !stop.load(Ordering::Relaxed) {
        let mut names = BTreeMap::new();
        for service in kube.list("/api/v1/services").await {
            let ip = service["spec"]["clusterIP"].as_str().unwrap_or_default();
            if ip.is_empty() || ip == "None" {
                continue;
            }
            let meta = &service["metadata"];
            let name = format!(
                "{}.{}.svc",
                meta["name"].as_str().unwrap(),
                meta["namespace"].as_str().unwrap()
            );
            names.insert(name, ip.to_owned());
        }
        if names != written {
            // Truncated and written through the same inode: readers of the bind mount see it.
            std::fs::write(&file, hosts_text(&names)).unwrap();
            written = names;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn hosts_text(names: &BTreeMap<String, String>) -> String {
    let mut text = "127.0.0.1 localhost\n".to_owned();
    for (name, ip) in names {
        text += &format!("{ip} {name} {name}.cluster.local\n");
    }
    text
}
