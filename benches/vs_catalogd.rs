//! `olm-registry catalogd` side by side with OLM v1's real catalogd (issue #29): the same
//! catalog image, built by `olm-registry build catalog` and pushed to a loopback registry
//! (Debian's docker-registry), unpacked and served by each in turn from a ClusterCatalog on a
//! real kube-apiserver (`../shared/tools/olm-e2e/control-plane.sh`), both over TLS.
//!
//!   cargo bench --bench vs_catalogd -- CATALOG [--downloads 2]
//!
//! CATALOG is an FBC directory (the 8,000-bundle one: `python3 ../shared/tools/gen_catalog.py
//! --packages 400 --bundles 20 --seed 1 --out /tmp/perf-8k`). Without
//! `../shared/tools/olm-e2e/olmv1/bin/catalogd.xz` the bench says SKIPPED and does nothing.
//! catalogd binds every interface (health, metrics, webhooks), and its webhook server reads
//! its certificate from a fixed path, so the bench runs itself in a private network and mount
//! namespace (`unshare --net --mount`: root), with a tmpfs over `/tmp/k8s-webhook-server` and
//! one over `/etc/containers/registries.conf.d` for the file that lets catalogd pull from the
//! loopback registry over plain HTTP.
//!
//! Per server: ClusterCatalog created → `Serving: True` (wall time, and the server's CPU over
//! it: unpack + index), peak RSS then; `/api/v1/all` identity and gzip (operator-controller
//! asks for gzip), each downloaded `--downloads` times by `curl -o /dev/null` (best wall time,
//! least server CPU from `/proc/PID/stat`, bytes on the wire), then once more into a hash:
//! the two servers' bodies, and each gzip body inflated, must be the same bytes, or nothing is
//! reported. RSS after the downloads and its peak.
#[path = "common/netns.rs"]
mod netns;
#[path = "common/server.rs"]
mod server;
// Benches use part of the test harness's registry helper.
#[allow(dead_code)]
#[path = "../tests/it/common/registry.rs"]
mod registry;

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the environment of the bench re-run inside its namespaces.
const IN_NETNS: &str = "OLM_REGISTRY_VS_CATALOGD_NETNS";
/// Where controller-runtime's webhook server looks for its certificate pair.
const WEBHOOK_CERTS: &str = "/tmp/k8s-webhook-server";
/// Where containers/image (catalogd's puller) learns that a registry speaks plain HTTP.
const REGISTRIES_D: &str = "/etc/containers/registries.conf.d";
const NAMESPACE: &str = "olmv1-system";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Peer {
    Catalogd,
    Ours,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::Catalogd => "catalogd",
            Peer::Ours => "olm-registry",
        }
    }
}

/// What one server measured.
#[derive(Default)]
struct Figures {
    unpack_s: f64,
    unpack_cpu_s: f64,
    unpack_peak_mib: f64,
    identity: Download,
    gzip: Download,
    rss_mib: f64,
    peak_mib: f64,
}

/// The best of a body's downloads.
#[derive(Default, Clone, Copy)]
struct Download {
    seconds: f64,
    cpu_s: f64,
    wire_bytes: u64,
}

fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/olm-e2e")
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let mut catalog = None;
    let mut downloads = 2;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--downloads" => {
                downloads = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--downloads N")
            }
            _ => catalog = Some(PathBuf::from(a)),
        }
    }
    let catalogd_xz = e2e_dir().join("olmv1/bin/catalogd.xz");
    if !catalogd_xz.is_file() {
        println!(
            "SKIPPED: no real catalogd at {}; nothing was compared",
            catalogd_xz.display()
        );
        return;
    }
    let catalog = catalog.expect("usage: cargo bench --bench vs_catalogd -- CATALOG");
    assert!(
        catalog.is_dir(),
        "{} is not a catalog directory",
        catalog.display()
    );
    if std::env::var_os(IN_NETNS).is_none() {
        std::fs::create_dir_all(WEBHOOK_CERTS).unwrap();
        let setup = format!(
            "mkdir -p {REGISTRIES_D} && mount -t tmpfs tmpfs {REGISTRIES_D} && \
             mount -t tmpfs tmpfs {WEBHOOK_CERTS} &&"
        );
        std::process::exit(netns::rerun_in_namespaces(IN_NETNS, &["--mount"], &setup));
    }
    run(&catalog, &catalogd_xz, downloads);
}

fn run(catalog: &Path, catalogd_xz: &Path, downloads: usize) {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let catalogd = work.join("catalogd");
    sh(&format!(
        "xz -dc {} > {} && chmod +x {}",
        catalogd_xz.display(),
        catalogd.display(),
        catalogd.display()
    ));
    let (cert, key) = certificate(work);
    let serving = Path::new(WEBHOOK_CERTS).join("serving-certs");
    std::fs::create_dir_all(&serving).unwrap();
    std::fs::copy(&cert, serving.join("tls.crt")).unwrap();
    std::fs::copy(&key, serving.join("tls.key")).unwrap();

    let reg = registry::TestRegistry::plain();
    let t = Instant::now();
    let image = reg.push_catalog(catalog, "bench/catalog:v1", &work.join("build-cache"));
    println!(
        "catalog image {image} built and pushed in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    std::fs::write(
        Path::new(REGISTRIES_D).join("vs-catalogd.conf"),
        format!(
            "[[registry]]\nlocation = \"{}\"\ninsecure = true\n",
            reg.addr
        ),
    )
    .unwrap();

    let cluster = Cluster::up(&work.join("cp"));
    for crd in std::fs::read_dir(e2e_dir().join("olmv1/crds")).unwrap() {
        let yaml = std::fs::read_to_string(crd.unwrap().path()).unwrap();
        cluster.create(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "application/yaml",
            &yaml,
        );
    }
    cluster.create(
        "/api/v1/namespaces",
        "application/json",
        &format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{NAMESPACE}"}}}}"#),
    );
    cluster.wait_for("/apis/olm.operatorframework.io/v1/clustercatalogs", |_| {
        true
    });

    let mut figures = Vec::new();
    let mut hashes = Vec::new();
    for peer in [Peer::Catalogd, Peer::Ours] {
        let port = server::free_port();
        let mut child = start(
            peer,
            &catalogd,
            work,
            &cluster,
            port,
            (&cert, &key),
            &reg.addr,
        );
        let (f, hash) = measure(peer, &mut child, &cluster, &image, port, downloads);
        let _ = child.kill();
        let _ = child.wait();
        figures.push(f);
        hashes.push(hash);
    }
    if hashes[0] != hashes[1] {
        eprintln!(
            "BODIES DIFFER, nothing reported: catalogd's /all has SHA-256 {}, olm-registry's {}",
            hashes[0], hashes[1]
        );
        std::process::exit(1);
    }
    println!(
        "bodies identical (SHA-256 {}), identity and gzip",
        hashes[0]
    );
    print_table(&figures[0], &figures[1]);
}

/// A self-signed certificate for 127.0.0.1 (curl is told not to verify it).
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("tls.crt"), dir.join("tls.key"));
    sh(&format!(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
         -addext subjectAltName=IP:127.0.0.1 -keyout {} -out {} 2>/dev/null",
        key.display(),
        cert.display()
    ));
    (cert, key)
}

fn sh(script: &str) -> String {
    let out = Command::new("sh").args(["-c", script]).output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// etcd and kube-apiserver from `control-plane.sh`, stopped on drop.
struct Cluster {
    dir: PathBuf,
    kubeconfig: String,
    token: String,
}

impl Cluster {
    fn up(dir: &Path) -> Cluster {
        let script = e2e_dir().join("control-plane.sh");
        let out = sh(&format!("{} up {}", script.display(), dir.display()));
        let value = |key: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("control-plane.sh printed no {key}"))
                .to_owned()
        };
        Cluster {
            dir: dir.to_owned(),
            kubeconfig: value("KUBECONFIG="),
            token: value("TOKEN="),
        }
    }

    /// `curl` against the API server: the status code and the body.
    fn call(&self, method: &str, path: &str, body: Option<(&str, &str)>) -> (u16, String) {
        let mut curl = Command::new("curl");
        curl.args(["-sk", "-X", method, "-w", "\n%{http_code}"])
            .arg("-H")
            .arg(format!("Authorization: Bearer {}", self.token))
            .arg(format!("https://127.0.0.1:6443{path}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if let Some((content_type, _)) = body {
            curl.args(["-H", &format!("Content-Type: {content_type}")])
                .args(["--data-binary", "@-"]);
        }
        let mut child = curl.spawn().unwrap();
        let text = body.map_or("", |(_, text)| text).to_owned();
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || std::io::Write::write_all(&mut stdin, text.as_bytes()));
        let out = child.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = out.rsplit_once('\n').unwrap_or(("", "0"));
        (code.trim().parse().unwrap_or(0), body.to_owned())
    }

    fn create(&self, path: &str, content_type: &str, body: &str) {
        let (code, answer) = self.call("POST", path, Some((content_type, body)));
        assert_eq!(code, 201, "POST {path}: {answer}");
    }

    /// Polls `path` until it answers 200 with a body `done` accepts (5 minutes at most).
    fn wait_for(&self, path: &str, done: impl Fn(&serde_json::Value) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let (code, body) = self.call("GET", path, None);
            if code == 200 && serde_json::from_str(&body).is_ok_and(|v| done(&v)) {
                return;
            }
            assert!(Instant::now() < deadline, "GET {path}: still {code} {body}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let script = e2e_dir().join("control-plane.sh");
        let _ = Command::new(script).arg("down").arg(&self.dir).status();
    }
}

/// Starts `peer` serving over TLS on `port`, its log in the work directory.
fn start(
    peer: Peer,
    catalogd: &Path,
    work: &Path,
    cluster: &Cluster,
    port: u16,
    (cert, key): (&Path, &Path),
    registry: &str,
) -> Child {
    let addr = format!("127.0.0.1:{port}");
    let mut command = match peer {
        Peer::Catalogd => {
            let mut c = Command::new(catalogd);
            let free = || format!("127.0.0.1:{}", server::free_port());
            c.args(["--system-namespace", NAMESPACE])
                .args(["--catalogs-server-addr", &addr, "--external-address", &addr])
                .args(["--health-probe-bind-address", &free()])
                .args(["--metrics-bind-address", &free()])
                .arg("--cache-dir")
                .arg(work.join("catalogd-cache"))
                .arg("--tls-cert")
                .arg(cert)
                .arg("--tls-key")
                .arg(key);
            c
        }
        Peer::Ours => {
            let mut c = Command::new(env!("CARGO_BIN_EXE_olm-registry"));
            c.arg("catalogd")
                .args(["--http-addr", &addr, "--insecure-registry", registry])
                .args(["--base-url", &format!("https://{addr}")])
                .args(["--lease-namespace", NAMESPACE])
                .arg("--image-cache-dir")
                .arg(work.join("ours-cache"))
                .arg("--tls-cert-file")
                .arg(cert)
                .arg("--tls-key-file")
                .arg(key);
            c
        }
    };
    let log = std::fs::File::create(work.join(format!("{}.log", peer.name()))).unwrap();
    let child = command
        .arg("--kubeconfig")
        .arg(&cluster.kubeconfig)
        .env_remove("KUBECONFIG")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", peer.name()));
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "{} does not listen", peer.name());
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// Serves the image through a ClusterCatalog, downloads `/all` both ways, removes the
/// ClusterCatalog; returns the figures and the SHA-256 of the body (the same both ways).
fn measure(
    peer: Peer,
    child: &mut Child,
    cluster: &Cluster,
    image: &str,
    port: u16,
    downloads: usize,
) -> (Figures, String) {
    let pid = child.id();
    let mut f = Figures::default();
    let path = "/apis/olm.operatorframework.io/v1/clustercatalogs";
    let cpu = server::cpu_seconds(pid);
    let t = Instant::now();
    cluster.create(
        path,
        "application/json",
        &serde_json::json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": "bench"},
            "spec": {"source": {"type": "Image", "image": {"ref": image}}},
        })
        .to_string(),
    );
    cluster.wait_for(&format!("{path}/bench"), |c| {
        c["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Serving" && c["status"] == "True")
        })
    });
    f.unpack_s = t.elapsed().as_secs_f64();
    f.unpack_cpu_s = server::cpu_seconds(pid) - cpu;
    f.unpack_peak_mib = server::memory(pid).0;
    println!(
        "{}: Serving {:.1} s after the ClusterCatalog was created, {:.2} CPU-s, peak RSS {:.0} MiB",
        peer.name(),
        f.unpack_s,
        f.unpack_cpu_s,
        f.unpack_peak_mib
    );
    let url = format!("https://127.0.0.1:{port}/catalogs/bench/api/v1/all");
    let mut hashes = Vec::new();
    for gzip in [false, true] {
        let mut best = Download {
            seconds: f64::MAX,
            cpu_s: f64::MAX,
            wire_bytes: 0,
        };
        for _ in 0..downloads {
            let cpu = server::cpu_seconds(pid);
            let d = download(&url, gzip);
            let cpu = server::cpu_seconds(pid) - cpu;
            println!(
                "{} /all {}: {:.2} s, {:.2} server CPU-s, {:.1} MB on the wire",
                peer.name(),
                if gzip { "gzip" } else { "identity" },
                d.seconds,
                cpu,
                d.wire_bytes as f64 / 1e6
            );
            best.seconds = best.seconds.min(d.seconds);
            best.cpu_s = best.cpu_s.min(cpu);
            best.wire_bytes = d.wire_bytes;
        }
        hashes.push(body_hash(&url, gzip));
        if gzip {
            f.gzip = best;
        } else {
            f.identity = best;
        }
    }
    assert_eq!(
        hashes[0],
        hashes[1],
        "{}: the gzip body inflates to other bytes than the identity body",
        peer.name()
    );
    (f.peak_mib, f.rss_mib) = server::memory(pid);
    let (code, answer) = cluster.call("DELETE", &format!("{path}/bench"), None);
    assert_eq!(code, 200, "DELETE the ClusterCatalog: {answer}");
    // Gone once the server has removed its content and the finalizer.
    let deadline = Instant::now() + Duration::from_secs(120);
    while cluster.call("GET", &format!("{path}/bench"), None).0 != 404 {
        assert!(
            Instant::now() < deadline,
            "the ClusterCatalog is not removed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (f, hashes.swap_remove(0))
}

/// One `curl` download to /dev/null: wall time and bytes on the wire (compressed ones when
/// gzip is asked for: curl does not inflate without `--compressed`).
fn download(url: &str, gzip: bool) -> Download {
    let mut curl = Command::new("curl");
    curl.args([
        "-sSkf",
        "-o",
        "/dev/null",
        "-w",
        "%{size_download} %{time_total}",
    ]);
    if gzip {
        curl.args(["-H", "Accept-Encoding: gzip"]);
    }
    let out = curl.arg(url).output().unwrap();
    assert!(
        out.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let (bytes, seconds) = text.trim().split_once(' ').unwrap();
    Download {
        seconds: seconds.parse().unwrap(),
        cpu_s: 0.0,
        wire_bytes: bytes.parse().unwrap(),
    }
}

/// The SHA-256 of `/all` (inflated when it came gzipped).
fn body_hash(url: &str, gzip: bool) -> String {
    let mut curl = Command::new("curl");
    curl.args(["-sSkf"]).stdout(Stdio::piped());
    if gzip {
        curl.args(["-H", "Accept-Encoding: gzip"]);
    }
    let mut child = curl.arg(url).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reader: Box<dyn Read> = if gzip {
        Box::new(flate2::read::GzDecoder::new(stdout))
    } else {
        Box::new(stdout)
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    assert!(child.wait().unwrap().success(), "curl {url}");
    format!("{:x}", hasher.finalize())
}

fn print_table(theirs: &Figures, ours: &Figures) {
    type Row = (&'static str, &'static str, fn(&Figures) -> f64);
    const MB: f64 = 1e6;
    let rows: [Row; 11] = [
        ("ClusterCatalog → Serving (unpack + index)", "s", |f| {
            f.unpack_s
        }),
        ("server CPU for unpack + index", "CPU-s", |f| f.unpack_cpu_s),
        ("peak RSS after unpack + index", "MiB", |f| {
            f.unpack_peak_mib
        }),
        ("/all identity, best download", "s", |f| f.identity.seconds),
        ("/all identity, server CPU per download", "CPU-s", |f| {
            f.identity.cpu_s
        }),
        ("/all identity, bytes on the wire", "MB", |f| {
            f.identity.wire_bytes as f64 / MB
        }),
        ("/all gzip, best download", "s", |f| f.gzip.seconds),
        ("/all gzip, server CPU per download", "CPU-s", |f| {
            f.gzip.cpu_s
        }),
        ("/all gzip, bytes on the wire", "MB", |f| {
            f.gzip.wire_bytes as f64 / MB
        }),
        ("RSS after the downloads", "MiB", |f| f.rss_mib),
        ("peak RSS", "MiB", |f| f.peak_mib),
    ];
    println!("| figure | catalogd | olm-registry | catalogd / olm-registry |");
    println!("|---|---|---|---|");
    for (name, unit, value) in rows {
        let (a, b) = (value(theirs), value(ours));
        println!("| {name} | {a:.2} {unit} | {b:.2} {unit} | {:.2}x |", a / b);
    }
}
