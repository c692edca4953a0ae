//! The catalog image `build catalog --server` makes, run as OLM runs catalog pods: pushed to a
//! registry on loopback, pulled and run by podman (with runc) under the restricted policy —
//! an arbitrary non-root UID in group 0, a read-only root, every capability dropped, no
//! privilege escalation, deploy/'s memory limit — probed with `grpc_health_probe` inside the
//! container, compared call by call with the same catalog served directly, and stopped with
//! SIGTERM. Podman and runc are Debian packages that `scripts/test.sh` installs.

use crate::common::registry::TestRegistry;
use crate::common::{BIN, Server, collect, proxy::GateProxy, run};
use api::registry_client::RegistryClient;
use api::{GetPackageRequest, ListBundlesRequest, ListPackageRequest};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog")
}

/// The Deployment's container and pod specs, where the limits and grace period the pods get
/// are written.
fn deployment() -> serde_yaml::Value {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/deployment.yaml"),
    )
    .unwrap();
    let first = serde_yaml::Deserializer::from_str(&text).next().unwrap();
    serde::Deserialize::deserialize(first).unwrap()
}

/// deploy/'s memory limit in bytes (a Kubernetes quantity with a binary suffix).
fn memory_limit() -> u64 {
    let d = deployment();
    let limit = d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]
        .as_str()
        .unwrap()
        .to_owned();
    let (number, unit) = limit.split_at(limit.trim_end_matches(char::is_alphabetic).len());
    let shift = match unit {
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        other => panic!("unexpected memory unit {other:?} in deploy/deployment.yaml"),
    };
    number.parse::<u64>().unwrap() << shift
}

/// deploy/'s terminationGracePeriodSeconds.
fn grace_period() -> u64 {
    deployment()["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        .as_u64()
        .unwrap()
}

/// Podman with state of its own (storage, run directory, network configuration) in a
/// temporary directory, so that tests share nothing through it; runc, because crun refuses
/// this machine's hybrid cgroup layout; no default ulimits, which runc cannot raise here.
struct Podman {
    dir: tempfile::TempDir,
}

impl Podman {
    fn new() -> Podman {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).display().to_string();
        std::fs::write(
            dir.path().join("containers.conf"),
            format!(
                "[containers]\ndefault_ulimits = []\n\n\
                 [engine]\nruntime = \"runc\"\ncgroup_manager = \"cgroupfs\"\n\
                 events_logger = \"none\"\ntmp_dir = \"{}\"\n\n\
                 [network]\nnetwork_config_dir = \"{}\"\n",
                p("tmp"),
                p("networks")
            ),
        )
        .unwrap();
        Podman { dir }
    }

    fn command(&self) -> Command {
        let mut command = Command::new("podman");
        command
            .env("CONTAINERS_CONF", self.dir.path().join("containers.conf"))
            .arg("--root")
            .arg(self.dir.path().join("storage"))
            .arg("--runroot")
            .arg(self.dir.path().join("run"));
        command
    }

    fn output(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .expect("podman is installed (scripts/test.sh installs it)")
    }

    /// Runs podman and returns its trimmed stdout; a failure fails the test with its stderr.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(
            out.status.success(),
            "podman {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// `grpc_health_probe ARGS` run inside the container; its exit code.
    /// Starts `image` detached as container `name`, as a restricted pod runs (see
    /// [`restricted`]), with `storage` (how /tmp is given) and its gRPC port published on
    /// 127.0.0.1:`port`; returns that address and when it was started.
    fn run_restricted(
        &self,
        name: &str,
        storage: &str,
        port: u16,
        image: &str,
    ) -> (String, Instant) {
        let mut args: Vec<String> = ["run", "--detach", "--name", name, storage]
            .map(str::to_owned)
            .to_vec();
        args.extend(restricted());
        args.push(format!("--publish=127.0.0.1:{port}:50051"));
        args.push(image.to_owned());
        let started = Instant::now();
        self.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
        (format!("127.0.0.1:{port}"), started)
    }

    fn probe(&self, name: &str, addr: &str) -> i32 {
        let out = self.output(&["exec", name, "grpc_health_probe", &format!("-addr={addr}")]);
        out.status.code().unwrap_or(-1)
    }

    /// Probes until `done` accepts the exit code (within 60 s); returns it.
    fn probe_until(&self, name: &str, addr: &str, done: impl Fn(i32) -> bool) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let code = self.probe(name, addr);
            if done(code) || Instant::now() > deadline {
                return code;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn logs(&self, name: &str) -> String {
        let out = self.output(&["logs", name]);
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)
    }

    /// The container's main process as the host sees it.
    fn pid(&self, name: &str) -> u32 {
        self.ok(&["inspect", "-f", "{{.State.Pid}}", name])
            .parse()
            .unwrap()
    }

    /// SIGTERM, then the exit code and how long the container took to stop.
    fn stop(&self, name: &str) -> (String, Duration) {
        let started = Instant::now();
        self.ok(&["stop", "-t", &grace_period().to_string(), name]);
        let took = started.elapsed();
        (
            self.ok(&["inspect", "-f", "{{.State.ExitCode}}", name]),
            took,
        )
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        // Containers and images hold mounts inside the directory: remove them before it.
        let _ = self.output(&["rm", "--all", "--force", "--time", "0"]);
        let _ = self.output(&["rmi", "--all", "--force"]);
    }
}

/// A free loopback port (free when asked: nothing else here picks ports this way).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The restricted pod's settings, as deploy/deployment.yaml asks for them (checked here, so
/// that the Deployment cannot drift from what this test runs): no fixed user, so an arbitrary
/// UID in group 0 (what OpenShift's restricted policy assigns), read-only root, no
/// capabilities, no privilege escalation, the Deployment's memory limit.
fn restricted() -> Vec<String> {
    let d = deployment();
    let pod = &d["spec"]["template"]["spec"];
    let container = &pod["containers"][0]["securityContext"];
    let yes = serde_yaml::Value::Bool(true);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], yes);
    assert!(
        pod["securityContext"]["runAsUser"].is_null(),
        "a fixed UID: run the test with it"
    );
    assert_eq!(container["readOnlyRootFilesystem"], yes);
    assert_eq!(
        container["allowPrivilegeEscalation"],
        serde_yaml::Value::Bool(false)
    );
    assert_eq!(container["capabilities"]["drop"][0], "ALL");
    [
        "--user=1000770000:0",
        "--read-only",
        "--cap-drop=ALL",
        "--security-opt=no-new-privileges",
    ]
    .map(str::to_owned)
    .into_iter()
    .chain([format!("--memory={}b", memory_limit())])
    .collect()
}

/// What a client sees of a catalog: every package name, every package, every bundle.
async fn answers(addr: &str) -> (Vec<String>, Vec<api::Package>, Vec<api::Bundle>) {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut c = RegistryClient::new(channel).max_decoding_message_size(usize::MAX);
    let names: Vec<String> = collect(
        c.list_packages(ListPackageRequest {})
            .await
            .unwrap()
            .into_inner(),
    )
    .await
    .into_iter()
    .map(|p| p.name)
    .collect();
    let mut packages = Vec::new();
    for name in &names {
        let request = GetPackageRequest { name: name.clone() };
        packages.push(c.get_package(request).await.unwrap().into_inner());
    }
    let bundles = collect(
        c.list_bundles(ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner(),
    )
    .await;
    (names, packages, bundles)
}

/// Waits until health says SERVING on `addr` from the host; how long that took.
async fn wait_serving(addr: &str, started: Instant) -> Duration {
    let deadline = started + Duration::from_secs(60);
    loop {
        let code = Command::new(BIN)
            .args(["health-probe", &format!("-addr={addr}")])
            .output()
            .unwrap()
            .status
            .code();
        if code == Some(0) {
            return started.elapsed();
        }
        assert!(Instant::now() < deadline, "{addr} never served");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The mounts of a process, as (mount point, options) from /proc/PID/mountinfo.
fn mounts(pid: u32) -> Vec<(String, String)> {
    std::fs::read_to_string(format!("/proc/{pid}/mountinfo"))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[4].to_owned(), f[5].to_owned())
        })
        .collect()
}

// Two workers: the gRPC clients' connections are driven (and closed when dropped) while the
// test thread waits for podman.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_image_runs_as_olms_restricted_pods_run() {
    let reg = TestRegistry::plain();
    let reference = format!("{}/catalogs/example:v1", reg.addr);
    let started = Instant::now();
    let (code, stdout, stderr) = run(&[
        "build",
        "catalog",
        example().to_str().unwrap(),
        "--tag",
        &reference,
        "--server",
        "--insecure-registry",
        &reg.addr,
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with(&format!("{reference}@sha256:")),
        "{stdout}"
    );
    eprintln!("build and push: {:?}", started.elapsed());

    let podman = Podman::new();
    let started = Instant::now();
    podman.ok(&["pull", "--quiet", "--tls-verify=false", &reference]);
    eprintln!("podman pull: {:?}", started.elapsed());
    let size = podman.ok(&["image", "inspect", "-f", "{{.Size}}", &reference]);
    eprintln!("image size (unpacked): {size} bytes");

    let direct = Server::serving(&example(), &[]).await;
    let want = answers(&direct.addr).await;

    // As OLM's pods run, with an empty tmpfs over /tmp (podman copies the image's /tmp into
    // it, mode included).
    let port = free_port();
    let name = "restricted";
    let (addr, started) = podman.run_restricted(name, "--tmpfs=/tmp", port, &reference);
    let warm = wait_serving(&addr, started).await;
    assert_eq!(podman.probe(name, ":50051"), 0, "{}", podman.logs(name));
    let log = podman.logs(name);
    assert!(log.contains(r#"start="warm""#), "{log}");
    assert_eq!(answers(&addr).await, want);
    let rss = rss_kib(podman.pid(name));
    eprintln!("restricted, tmpfs /tmp: SERVING {warm:?} after `podman run`; RSS {rss} KiB");
    let (exit, took) = podman.stop(name);
    assert_eq!(exit, "0", "{}", podman.logs(name));
    assert!(took < Duration::from_secs(grace_period()), "{took:?}");
    eprintln!("podman stop: exit 0 after {took:?}");

    // Nothing writable at all: a read-only root and no tmpfs anywhere (podman's --read-only
    // would otherwise mount tmpfs on /tmp, /var/tmp and /run).
    let name = "nothing-writable";
    let port = free_port();
    let (addr, started) = podman.run_restricted(name, "--read-only-tmpfs=false", port, &reference);
    let warm = wait_serving(&addr, started).await;
    let pid = podman.pid(name);
    let mounted = mounts(pid);
    let root = mounted.iter().find(|(at, _)| at == "/").unwrap();
    assert!(root.1.split(',').any(|o| o == "ro"), "{mounted:?}");
    assert!(
        !mounted.iter().any(|(at, _)| at.starts_with("/tmp")),
        "{mounted:?}"
    );
    let log = podman.logs(name);
    assert!(log.contains(r#"start="warm""#), "{log}");
    assert_eq!(answers(&addr).await, want);
    eprintln!(
        "read-only, no tmpfs: SERVING {warm:?} after `podman run`; RSS {} KiB",
        rss_kib(pid)
    );
    assert_eq!(podman.stop(name).0, "0", "{}", podman.logs(name));

    // Before it serves, the probe fails: a catalog (a plain catalog image: the server image
    // would put its binary layer in the memory-limited tmpfs) is pulled (by name, through
    // /etc/hosts) from a registry held shut until the test opens it.
    let plain = format!("{}/catalogs/example-plain:v1", reg.addr);
    let (code, _, stderr) = run(&[
        "build",
        "catalog",
        example().to_str().unwrap(),
        "--tag",
        &plain,
        "--insecure-registry",
        &reg.addr,
    ]);
    assert_eq!(code, 0, "{stderr}");
    // The host's network, so that the
    // container reaches the registry on loopback; the server listens on loopback only.
    let gate = GateProxy::start(&reg.addr);
    let gate_port = gate.addr.rsplit(':').next().unwrap();
    let from = format!("localhost:{gate_port}");
    let name = "before-serving";
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut args: Vec<String> = [
        "run",
        "--detach",
        "--name",
        name,
        "--network=host",
        "--tmpfs=/tmp",
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(restricted());
    args.push(reference.clone());
    args.extend(
        [
            "serve",
            &format!("{from}/catalogs/example-plain:v1"),
            "--insecure-registry",
            &from,
            "--image-cache-dir=/tmp/images",
            "-p",
            &listen,
        ]
        .map(str::to_owned),
    );
    podman.ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    // 2 while the port is not bound yet; then 4, NOT_SERVING, for as long as the pull waits.
    let code = podman.probe_until(name, &listen, |c| c != 2);
    assert_eq!(code, 4, "{}", podman.logs(name));
    assert_eq!(podman.probe(name, &listen), 4);
    gate.open();
    let code = podman.probe_until(name, &listen, |c| c == 0);
    assert_eq!(code, 0, "{}", podman.logs(name));
    assert_eq!(answers(&listen).await, want);
    assert_eq!(podman.stop(name).0, "0", "{}", podman.logs(name));
}

/// What the image holds, read from an OCI layout: its config as opm's catalog images have it,
/// the server and what it needs to start (the loader and libraries `ldd` names, this Debian
/// machine's CA bundle), a /tmp anyone may write, the catalog, and its index.
#[test]
fn the_catalog_image_holds_the_server_the_catalog_and_its_index() {
    let out = tempfile::tempdir().unwrap();
    let layout = out.path().join("layout");
    let (code, _, stderr) = run(&[
        "build",
        "catalog",
        example().to_str().unwrap(),
        "--tag",
        &format!("oci:{}:v1", layout.display()),
        "--server",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let blob = |digest: &str| {
        std::fs::read(
            layout
                .join("blobs/sha256")
                .join(digest.trim_start_matches("sha256:")),
        )
        .unwrap()
    };
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_slice(&blob(index["manifests"][0]["digest"].as_str().unwrap())).unwrap();
    let config: serde_json::Value =
        serde_json::from_slice(&blob(manifest["config"]["digest"].as_str().unwrap())).unwrap();
    assert_eq!(
        config["config"],
        serde_json::json!({
            "Entrypoint": ["/bin/opm"],
            "Cmd": ["serve", "/configs", "--cache-dir=/tmp/cache"],
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            "User": "1001",
            "ExposedPorts": {"50051/tcp": {}},
            "Labels": {"operators.operatorframework.io.index.configs.v1": "/configs"},
        })
    );
    let layers: Vec<Entries> = manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| entries(&blob(l["digest"].as_str().unwrap())))
        .collect();
    assert_eq!(layers.len(), 2);

    // The server layer: the binary that ran `build`, the names it answers to, its loader and
    // libraries (the file names ldd lists, wherever they go), nsswitch.conf, /tmp.
    let server = &layers[0];
    assert_eq!(server["bin/opm"], ('0', 0o755, std::fs::read(BIN).unwrap()));
    for link in [
        "bin/grpc_health_probe",
        "bin/olm-registry",
        "bin/copy-content",
        "bin/cpb",
        "bin/cp",
    ] {
        assert_eq!(server[link], ('2', 0o777, b"opm".to_vec()));
    }
    assert_eq!(
        server["etc/nsswitch.conf"],
        ('0', 0o644, b"hosts: files dns\n".to_vec())
    );
    assert_eq!(server["tmp/"], ('5', 0o1777, Vec::new()));
    assert_eq!(
        server["etc/ssl/certs/ca-certificates.crt"],
        (
            '0',
            0o644,
            std::fs::read("/etc/ssl/certs/ca-certificates.crt").unwrap()
        )
    );
    let ldd = Command::new("ldd").arg(BIN).output().unwrap();
    let mut want: Vec<String> = String::from_utf8_lossy(&ldd.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| !n.starts_with("linux-vdso"))
        .map(|n| n.rsplit('/').next().unwrap().to_owned())
        .collect();
    want.sort();
    let mut shipped: Vec<String> = server
        .iter()
        .filter(|(path, (kind, _, _))| {
            *kind == '0' && !path.starts_with("bin/") && !path.starts_with("etc/")
        })
        .map(|(path, (_, mode, _))| {
            assert_eq!(*mode, 0o755, "{path}");
            path.rsplit('/').next().unwrap().to_owned()
        })
        .collect();
    shipped.sort();
    assert_eq!(shipped, want);

    // The catalog layer: the example's files, unchanged, at /configs; the index at
    // /tmp/cache; /tmp again 1777.
    let catalog = &layers[1];
    let files: BTreeMap<&str, &[u8]> = catalog
        .iter()
        .filter(|(p, (kind, _, _))| *kind == '0' && p.starts_with("configs/"))
        .map(|(p, (_, _, data))| (p.as_str(), data.as_slice()))
        .collect();
    let mut want = BTreeMap::new();
    for pkg in ["cache-operator", "queue-operator"] {
        for f in std::fs::read_dir(example().join(pkg)).unwrap() {
            let f = f.unwrap();
            let name = format!("configs/{pkg}/{}", f.file_name().to_string_lossy());
            want.insert(name, std::fs::read(f.path()).unwrap());
        }
    }
    let want: BTreeMap<&str, &[u8]> = want
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    assert_eq!(files, want);
    assert_eq!(catalog["tmp/"], ('5', 0o1777, Vec::new()));
    let index = &catalog["tmp/cache/olm-registry.v1/index.db"];
    assert_eq!((index.0, index.1), ('0', 0o644));
    assert!(index.2.starts_with(b"SQLite format 3\0"));
}

/// A layer's entries: path → (tar type, mode, content or link target).
type Entries = BTreeMap<String, (char, u32, Vec<u8>)>;

fn entries(gz: &[u8]) -> Entries {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(gz));
    tar.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let header = e.header().clone();
            let path = e.path().unwrap().to_string_lossy().into_owned();
            let mut data = Vec::new();
            match header.link_name().unwrap() {
                Some(target) => data.extend_from_slice(target.to_string_lossy().as_bytes()),
                None => {
                    e.read_to_end(&mut data).unwrap();
                }
            }
            let kind = header.entry_type().as_byte() as char;
            (path, (kind, header.mode().unwrap(), data))
        })
        .collect()
}

/// A server binary that cannot run is refused before anything is built or pushed, naming it.
#[test]
fn a_server_binary_that_is_not_an_executable_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("opm");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let layout = dir.path().join("layout");
    let (code, stdout, stderr) = run(&[
        "build",
        "catalog",
        example().to_str().unwrap(),
        "--tag",
        &format!("oci:{}", layout.display()),
        "--server",
        "--server-binary",
        script.to_str().unwrap(),
    ]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(
        stderr.ends_with(&format!(
            "error: server binary {}: not an ELF executable\n",
            script.display()
        )),
        "{stderr}"
    );
    assert!(!layout.exists());
}

/// `--base-image`: the catalog image built on a base the test makes as Debian's images are laid
/// out (`/bin` a link to `usr/bin`; this machine's loader and C library where Debian keeps them;
/// an environment variable and a user of its own). The base's layer comes first, unchanged; its
/// environment and user stay; only the binary is added, through the base's `/bin` link; and the
/// server runs with the base's libraries under the same restrictions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_image_on_a_base_image_runs_with_the_bases_libraries() {
    let reg = TestRegistry::plain();
    let work = tempfile::tempdir().unwrap();
    let mut base = image::LayerBuilder::default();
    for dir in [
        "/etc",
        "/lib64",
        "/usr",
        "/usr/bin",
        "/usr/lib",
        "/usr/lib/x86_64-linux-gnu",
    ] {
        base.dir(dir, 0o755).unwrap();
    }
    base.dir("/tmp", 0o1777).unwrap();
    base.symlink("/bin", "usr/bin").unwrap();
    // ldd's reading of the binary: `NAME => PATH (ADDR)` for libraries, `PATH (ADDR)` for the
    // loader.
    let ldd = Command::new("ldd").arg(BIN).output().unwrap();
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (place, host) = match words.as_slice() {
            [name, "=>", path, _] => (format!("/usr/lib/x86_64-linux-gnu/{name}"), *path),
            [path, _] if path.starts_with('/') => (path.to_string(), *path),
            _ => continue,
        };
        base.file(&place, &std::fs::read(host).unwrap(), 0o755)
            .unwrap();
    }
    let base = base.finish().unwrap();
    let base_diff_id = base.diff_id.clone();
    let run_config = image::RunConfig {
        env: vec!["PATH=/usr/bin".into(), "FROM_BASE=yes".into()],
        user: "65532".into(),
        ..Default::default()
    };
    let labels = BTreeMap::from([("from-base".to_owned(), "yes".to_owned())]);
    let base_image = image::assemble(None, vec![base], &labels, &run_config);
    let registry = image::Registry::new(&image::ClientOptions {
        insecure_registries: vec![reg.addr.clone()],
        cache_dir: work.path().join("cache"),
        ..Default::default()
    })
    .unwrap();
    let base_ref = format!("{}/bases/debian-like:v1", reg.addr);
    registry
        .push(&base_image, &image::ImageRef::parse(&base_ref).unwrap())
        .await
        .unwrap();

    let reference = format!("{}/catalogs/on-base:v1", reg.addr);
    let (code, _, stderr) = run(&[
        "build",
        "catalog",
        example().to_str().unwrap(),
        "--tag",
        &reference,
        "--server",
        "--base-image",
        &base_ref,
        "--insecure-registry",
        &reg.addr,
        "--image-cache-dir",
        work.path().join("build-cache").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");

    let podman = Podman::new();
    podman.ok(&["pull", "--quiet", "--tls-verify=false", &reference]);
    let inspect = |format: &str| podman.ok(&["image", "inspect", "-f", format, &reference]);
    let config: serde_json::Value = serde_json::from_str(&inspect("{{json .Config}}")).unwrap();
    assert_eq!(
        config,
        serde_json::json!({
            "Entrypoint": ["/bin/opm"],
            "Cmd": ["serve", "/configs", "--cache-dir=/tmp/cache"],
            "Env": ["PATH=/usr/bin", "FROM_BASE=yes"],
            "User": "65532",
            "ExposedPorts": {"50051/tcp": {}},
            "Labels": {
                "from-base": "yes",
                "operators.operatorframework.io.index.configs.v1": "/configs"
            },
        })
    );
    let layers: Vec<String> = serde_json::from_str(&inspect("{{json .RootFS.Layers}}")).unwrap();
    assert_eq!(
        (layers.len(), layers[0].as_str()),
        (3, base_diff_id.as_str())
    );

    let direct = Server::serving(&example(), &[]).await;
    let want = answers(&direct.addr).await;
    let port = free_port();
    let name = "on-base";
    let (addr, started) = podman.run_restricted(name, "--tmpfs=/tmp", port, &reference);
    wait_serving(&addr, started).await;
    assert_eq!(podman.probe(name, ":50051"), 0, "{}", podman.logs(name));
    let log = podman.logs(name);
    assert!(log.contains(r#"start="warm""#), "{log}");
    assert_eq!(answers(&addr).await, want);
    assert_eq!(podman.stop(name).0, "0", "{}", podman.logs(name));
}
