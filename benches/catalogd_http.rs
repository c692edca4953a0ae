//! catalogd HTTP benchmark (issue #11): the real server's `/api/v1/all` downloaded by 1, 8
//! and 32 concurrent clients, against Debian's nginx serving the same bytes as a static file
//! on the same machine, gzip off and on, in one run; the server's RSS around each load; metas
//! for one package at 32 clients (p50/p99); and the soak's gRPC mix (p50/p99) with and
//! without `/all` downloads running.
//!
//!   apt-get install nginx-light        # or nginx; any Debian nginx with the gzip modules
//!   python3 ../shared/tools/gen_catalog.py --packages 400 --bundles 20 --seed 1 --out /tmp/synth-large
//!   cargo bench --bench catalogd_http -- [/tmp/synth-large] [--seconds 8] [--clients 1,8,32]
//!       [--nginx-only]
//!
//! nginx runs from a config written to a temporary directory (`daemon off`, `sendfile on`,
//! workers = cores, no access log) on three loopback ports: plain; `gzip on` at level 1 for
//! `application/jsonl`, which compresses every response on the fly (and so cannot use
//! sendfile), as our server now does too (it stores no compressed copy); and `gzip_static on`
//! serving a `.gz` written beforehand, the best case of a server that stores one. The bytes
//! nginx serves are those our server answered, identity and gzip. With `--nginx-only` (or
//! before the server has an HTTP listener) only nginx is measured, on the catalog re-encoded
//! here as compact JSON lines (the same size to within the escaping, not catalogd's order).
//!
//! Our server's CPU (user + system, from `/proc`) over each window is given per GB of catalog
//! delivered (uncompressed bytes, whatever went on the wire): the figure the client does not
//! distort.
//!
//! The HTTP client is reqwest (one connection per client, HTTP/1.1, bodies counted and
//! dropped) running in this process: it shares the machine's cores with the server under
//! test, and nginx is measured the same way. MB/s count the bytes on the wire (compressed
//! bytes when gzip is on), up to the end of each timed window.
#[path = "common/load.rs"]
mod load;
#[path = "common/registry_load.rs"]
mod registry_load;
#[path = "common/server.rs"]
mod server;

use load::Load;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::time::timeout_at;

/// The catalog name the server is started with, and so the path prefix on both servers.
const NAME: &str = "bench";

struct Options {
    catalog: PathBuf,
    seconds: u64,
    clients: Vec<usize>,
    nginx_only: bool,
}

fn options() -> Options {
    let mut opts = Options {
        catalog: PathBuf::from("/tmp/synth-large"),
        seconds: 8,
        clients: vec![1, 8, 32],
        nginx_only: false,
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--seconds" => opts.seconds = value().parse().expect("--seconds N"),
            "--clients" => {
                opts.clients = value()
                    .split(',')
                    .map(|n| n.parse().expect("--clients N[,N...]"))
                    .collect()
            }
            "--nginx-only" => opts.nginx_only = true,
            path => opts.catalog = PathBuf::from(path),
        }
    }
    if !opts.catalog.is_dir() {
        eprintln!(
            "{} is not a catalog directory; make the 8,000-bundle one with\n  python3 ../shared/tools/gen_catalog.py --packages 400 --bundles 20 --seed 1 --out {}",
            opts.catalog.display(),
            opts.catalog.display()
        );
        std::process::exit(2);
    }
    opts
}

fn all_path() -> String {
    format!("/catalogs/{NAME}/api/v1/all")
}

/// Waits until something accepts connections on `addr` (a readiness check, bounded).
async fn accepting(addr: SocketAddr, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(Instant::now() < deadline, "{what} never listened on {addr}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The whole body of one GET, with the Content-Encoding it came with.
async fn fetch(url: &str, gzip: bool) -> (Vec<u8>, Option<String>) {
    let response = server::http_client()
        .get(url)
        .header("accept-encoding", if gzip { "gzip" } else { "identity" })
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    assert!(
        response.status().is_success(),
        "GET {url}: {}",
        response.status()
    );
    let encoding = response
        .headers()
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (response.bytes().await.unwrap().to_vec(), encoding)
}

/// nginx on three loopback ports (see the module documentation), serving `all` and `all_gz`
/// at our server's path.
struct Nginx {
    child: Child,
    plain: SocketAddr,
    gzip: SocketAddr,
    gzip_static: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Nginx {
    async fn start(all: &[u8], all_gz: &[u8]) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("www");
        let file = root.join(all_path().trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, all).unwrap();
        std::fs::write(file.with_file_name("all.gz"), all_gz).unwrap();
        // Workers run as nobody when the bench runs as root: let them read the files.
        Command::new("chmod")
            .args(["-R", "a+rX"])
            .arg(dir.path())
            .status()
            .unwrap();
        let [plain, gzip, gzip_static] =
            [0; 3].map(|_| SocketAddr::from(([127, 0, 0, 1], server::free_port())));
        let temp = dir.path().display();
        let config = format!(
            r#"daemon off;
worker_processes auto;
pid {temp}/nginx.pid;
error_log {temp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    default_type application/jsonl;
    client_body_temp_path {temp}/client_body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    root {root};
    server {{ listen {plain}; }}
    server {{ listen {gzip}; gzip on; gzip_comp_level 1; gzip_types application/jsonl; }}
    server {{ listen {gzip_static}; gzip_static on; }}
}}
"#,
            root = root.display()
        );
        let conf = dir.path().join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        let child = Command::new("nginx")
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf)
            .stderr(Stdio::inherit())
            .spawn()
            .expect("nginx is installed (apt-get install nginx-light)");
        for addr in [plain, gzip, gzip_static] {
            accepting(addr, "nginx").await;
        }
        Nginx {
            child,
            plain,
            gzip,
            gzip_static,
            _dir: dir,
        }
    }

    fn url(addr: SocketAddr) -> String {
        format!("http://{addr}{}", all_path())
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers (a SIGKILL would leave them running).
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// What `clients` downloaders did in one timed window.
struct Downloads {
    bytes: u64,
    elapsed: f64,
    /// Responses that were not 200 with the expected Content-Encoding, and transport errors.
    errors: Vec<String>,
}

impl Downloads {
    fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / self.elapsed / 1e6
    }

    /// Whole downloads of `size` bytes per second that the bytes received amount to (at
    /// 32 clients few downloads finish within a window).
    fn downloads_per_s(&self, size: usize) -> f64 {
        self.bytes as f64 / size as f64 / self.elapsed
    }
}

/// `clients` clients, each on its own connection, GET `url` over and over for `seconds`,
/// asking for gzip or not; bytes are counted as they arrive, so a download cut off by the
/// end of the window counts for what it delivered.
async fn downloads(url: &str, clients: usize, gzip: bool, seconds: f64) -> Downloads {
    let bytes = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (bytes, url, http) = (bytes.clone(), url.to_owned(), server::http_client());
        tasks.spawn(async move {
            let mut errors = Vec::new();
            'requests: while tokio::time::Instant::now() < deadline {
                let sent = http
                    .get(&url)
                    .header("accept-encoding", if gzip { "gzip" } else { "identity" })
                    .send();
                let mut response = match timeout_at(deadline, sent).await {
                    Err(_) => break,
                    Ok(Err(e)) => {
                        errors.push(e.to_string());
                        continue;
                    }
                    Ok(Ok(r)) => r,
                };
                let encoding = response.headers().get("content-encoding").cloned();
                let expected = gzip.then_some("gzip");
                if response.status() != 200
                    || encoding.as_ref().map(|e| e.as_bytes()) != expected.map(str::as_bytes)
                {
                    errors.push(format!(
                        "{} content-encoding {encoding:?}",
                        response.status()
                    ));
                }
                loop {
                    match timeout_at(deadline, response.chunk()).await {
                        Err(_) => break 'requests,
                        Ok(Ok(Some(chunk))) => {
                            bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                        }
                        Ok(Ok(None)) => break,
                        Ok(Err(e)) => {
                            errors.push(e.to_string());
                            break;
                        }
                    }
                }
            }
            errors
        });
    }
    let mut result = Downloads {
        bytes: 0,
        elapsed: 0.0,
        errors: Vec::new(),
    };
    for errors in tasks.join_all().await {
        result.errors.extend(errors);
    }
    result.elapsed = started.elapsed().as_secs_f64().min(seconds);
    result.bytes = bytes.load(Ordering::Relaxed);
    result
}

/// The catalog as compact JSON lines with sorted keys, for `--nginx-only`: catalogd's size,
/// not its order or escaping.
fn reencoded(catalog: &Path) -> Vec<u8> {
    let mut files: Vec<PathBuf> = ignore::WalkBuilder::new(catalog)
        .build()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read(&file).unwrap();
        for doc in serde_json::Deserializer::from_slice(&text).into_iter::<serde_json::Value>() {
            serde_json::to_writer(&mut out, &doc.unwrap()).unwrap();
            out.push(b'\n');
        }
    }
    out
}

fn gzipped(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Our server with its HTTP listener, when it has one.
struct Ours {
    running: server::Running,
    http: SocketAddr,
    _cache: tempfile::TempDir,
}

async fn start_ours(catalog: &Path) -> Option<Ours> {
    let cache = tempfile::tempdir().unwrap();
    let (running, http) = server::start_http(catalog, cache.path(), NAME).await;
    if tokio::net::TcpStream::connect(http).await.is_err() {
        println!("our server has no HTTP listener on {http} (no --http-addr yet?): nginx only");
        return None;
    }
    Some(Ours {
        running,
        http,
        _cache: cache,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// metas queries `query` with `{P}` replaced by a package, round robin over `packages`,
/// from `clients` clients for `seconds`, each body read whole.
async fn metas(
    http: SocketAddr,
    packages: &[String],
    query: &str,
    clients: usize,
    seconds: u64,
) -> Load {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let urls: Arc<Vec<String>> = Arc::new(
        packages
            .iter()
            .map(|p| {
                let query = query.replace("{P}", p);
                format!("http://{http}/catalogs/{NAME}/api/v1/metas?{query}")
            })
            .collect(),
    );
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let (http_client, urls) = (server::http_client(), urls.clone());
        tasks.spawn(async move {
            let (mut latencies, mut errors, mut bytes, mut n) = (Vec::new(), 0, 0, c * 7919);
            while Instant::now() < deadline {
                let t = Instant::now();
                match http_client.get(&urls[n % urls.len()]).send().await {
                    Ok(r) if r.status() == 200 => match r.bytes().await {
                        // Every query names a package that is there: no documents is wrong.
                        Ok(body) if !body.is_empty() => {
                            latencies.push(t.elapsed());
                            bytes += body.len();
                        }
                        _ => errors += 1,
                    },
                    _ => errors += 1,
                }
                n += 1;
            }
            (latencies, errors, bytes)
        });
    }
    load::total(tasks.join_all().await)
}

#[tokio::main]
async fn main() {
    let opts = options();
    // reqwest is built without a crypto provider of its own (plain HTTP here, but it asks).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let secs = opts.seconds as f64;
    let ours = if opts.nginx_only {
        None
    } else {
        start_ours(&opts.catalog).await
    };
    let all_url = ours
        .as_ref()
        .map(|o| format!("http://{}{}", o.http, all_path()));

    // The bytes nginx serves: our server's answers, or the catalog re-encoded here.
    let (all, all_gz) = match &all_url {
        Some(url) => {
            let (all, identity) = fetch(url, false).await;
            let (gz, encoding) = fetch(url, true).await;
            assert_eq!(identity, None, "/all without gzip came encoded");
            assert_eq!(
                encoding.as_deref(),
                Some("gzip"),
                "/all with gzip was not gzip"
            );
            (all, gz)
        }
        None => {
            let catalog = opts.catalog.clone();
            tokio::task::spawn_blocking(move || {
                let all = reencoded(&catalog);
                let gz = gzipped(&all);
                (all, gz)
            })
            .await
            .unwrap()
        }
    };
    let nginx = Nginx::start(&all, &all_gz).await;
    let (served, _) = fetch(&Nginx::url(nginx.plain), false).await;
    assert!(served == all, "nginx does not serve the same bytes");
    let nginx_version = Command::new("nginx")
        .arg("-v")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_owned())
        .unwrap_or_default();

    println!(
        "catalog {}: /all {:.1} MB, gzip {:.1} MB ({}); {nginx_version}; {} s per cell; the client runs in this process and shares the machine's {} cores with the server measured",
        opts.catalog.display(),
        all.len() as f64 / 1e6,
        all_gz.len() as f64 / 1e6,
        if ours.is_some() {
            "our server's bytes"
        } else {
            "re-encoded here, nginx only"
        },
        opts.seconds,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    );
    println!(
        "{:<34} {:>7} | {:>9} {:>7} {:>14} {:>9} | {:>9} {:>7} | {:>10}",
        "/all",
        "clients",
        "ours MB/s",
        "/all/s",
        "RSS MiB",
        "CPU-s/GB",
        "nginx MB/s",
        "/all/s",
        "ours/nginx"
    );
    let mut errors = 0;
    for (label, gzip, nginx_addr) in [
        ("identity (nginx sendfile)", false, nginx.plain),
        ("gzip (nginx gzip_static)", true, nginx.gzip_static),
        ("gzip (nginx on the fly, level 1)", true, nginx.gzip),
    ] {
        let body = if gzip { all_gz.len() } else { all.len() };
        for &clients in &opts.clients {
            let n = downloads(&Nginx::url(nginx_addr), clients, gzip, secs).await;
            errors += n.errors.len();
            let (ours_cols, ratio) = match (&ours, &all_url) {
                (Some(o), Some(url)) => {
                    let pid = o.running.child.id();
                    let (_, before) = server::memory(pid);
                    let cpu = server::cpu_seconds(pid);
                    let d = downloads(url, clients, gzip, secs).await;
                    let cpu = server::cpu_seconds(pid) - cpu;
                    let (peak, after) = server::memory(pid);
                    let catalog_gb = d.bytes as f64 * all.len() as f64 / body as f64 / 1e9;
                    errors += d.errors.len();
                    for e in d.errors.iter().take(3) {
                        println!("  ours: {e}");
                    }
                    (
                        format!(
                            "{:>9.0} {:>7.2} {:>14} {:>9.2}",
                            d.mb_per_s(),
                            d.downloads_per_s(body),
                            format!("{before:.0}->{after:.0} ({peak:.0})"),
                            cpu / catalog_gb
                        ),
                        format!("{:>10.2}", d.mb_per_s() / n.mb_per_s()),
                    )
                }
                _ => (
                    format!("{:>9} {:>7} {:>14} {:>9}", "-", "-", "-", "-"),
                    format!("{:>10}", "-"),
                ),
            };
            println!(
                "{label:<34} {clients:>7} | {ours_cols} | {:>10.0} {:>7.2} | {ratio}",
                n.mb_per_s(),
                n.downloads_per_s(body)
            );
            for e in n.errors.iter().take(3) {
                println!("  nginx: {e}");
            }
        }
    }

    if let Some(o) = &ours {
        let mut packages: Vec<String> = std::fs::read_dir(&opts.catalog)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        packages.sort();
        let queries = [
            ("package=P (every document of P)", "package={P}"),
            (
                "schema=olm.package&name=P (one)",
                "schema=olm.package&name={P}",
            ),
        ];
        for (label, query) in queries {
            let m = metas(o.http, &packages, query, 32, opts.seconds).await;
            errors += m.errors;
            println!(
                "metas?{label}, 32 clients: {} requests, {} errors, {:.0} req/s, {:.2} KB per answer, p50 {:.2} ms, p99 {:.2} ms",
                m.requests,
                m.errors,
                m.requests as f64 / secs,
                m.bytes as f64 / m.latencies.len().max(1) as f64 / 1e3,
                ms(server::percentile(&m.latencies, 0.50)),
                ms(server::percentile(&m.latencies, 0.99)),
            );
        }

        let mut clients = Vec::new();
        for _ in 0..4 {
            clients.push(
                registry_load::Client::new(server::channel(&o.running.addr).await)
                    .max_decoding_message_size(usize::MAX),
            );
        }
        let keys = Arc::new(registry_load::keys(&mut clients[0].clone()).await);
        let url = all_url.clone().unwrap();
        for downloaders in [0, 8] {
            let background = (downloaders > 0).then(|| {
                let url = url.clone();
                tokio::spawn(async move { downloads(&url, downloaders, false, secs + 1.0).await })
            });
            let p = registry_load::phase(&clients, keys.clone(), 8, opts.seconds).await;
            let downloaded = match background {
                Some(task) => {
                    let d = task.await.unwrap();
                    format!(", /all meanwhile {:.0} MB/s", d.mb_per_s())
                }
                None => String::new(),
            };
            errors += p.errors.len();
            println!(
                "gRPC soak mix, 8 callers, {downloaders} /all downloads running: {:.0} calls/s, {} errors, p50 {:.2} ms, p99 {:.2} ms{downloaded}",
                p.calls as f64 / p.elapsed,
                p.errors.len(),
                ms(server::percentile(&p.latencies, 0.50)),
                ms(server::percentile(&p.latencies, 0.99)),
            );
        }
    }
    if errors > 0 {
        println!("{errors} errors");
        std::process::exit(1);
    }
}
