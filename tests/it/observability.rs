//! What a platform team sees of a running `serve`: a real Prometheus scrapes `--metrics-addr`
//! after known traffic and answers PromQL with the exact counts; the exposition passes
//! promtool's checker; JSON logs parse line by line.
use crate::common::prometheus;

use crate::common::{Server, fixture};
use api::resolution::resolution_client::ResolutionClient;
use api::resolution::{Catalog, Mode, ResolveRequest, Subscription};
use api::{GetPackageRequest, ListPackageRequest};
use prometheus::{TestPrometheus, get};
use std::io::Write;
use std::process::{Command, Stdio};

/// The metrics address a server announced.
pub(crate) async fn metrics_addr(server: &Server) -> String {
    server.wait_for_log("serving metrics on http://").await;
    let log = server.log();
    log.split("serving metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split("/metrics").next())
        .unwrap_or_else(|| panic!("no metrics address in the log:\n{log}"))
        .to_owned()
}

/// The catalog digest of the server's "catalog loaded" log line.
fn logged_digest(server: &Server) -> String {
    let log = server.log();
    log.split("digest=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no digest in the log:\n{log}"))
        .to_owned()
}

fn catalog(name: &str, address: &str) -> Catalog {
    Catalog {
        name: name.into(),
        namespace: "olm".into(),
        address: address.into(),
        ..Catalog::default()
    }
}

fn subscribe(package: &str, channel: &str, catalogs: Vec<Catalog>) -> ResolveRequest {
    ResolveRequest {
        mode: Mode::Classic as i32,
        namespace: "operators".into(),
        catalogs,
        subscriptions: vec![Subscription {
            name: package.into(),
            package: package.into(),
            channel: channel.into(),
            source: "primary".into(),
            source_namespace: "olm".into(),
            ..Subscription::default()
        }],
        ..ResolveRequest::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn prometheus_reads_exact_figures_after_known_traffic() {
    let (primary, secondary) = (
        fixture("resolution/primary"),
        fixture("resolution/secondary"),
    );
    let secondary = Server::serving(&secondary, &[]).await;
    let primary = Server::serving(
        &primary,
        &[
            "--metrics-addr",
            "127.0.0.1:0",
            "--resolution-allowed-catalogs",
            &secondary.addr,
        ],
    )
    .await;
    let metrics = metrics_addr(&primary).await;

    let mut registry = primary.client().await;
    for name in ["a", "a", "no-such-package"] {
        let _ = registry
            .get_package(GetPackageRequest { name: name.into() })
            .await;
    }
    for _ in 0..3 {
        crate::common::collect(
            registry
                .list_packages(ListPackageRequest {})
                .await
                .unwrap()
                .into_inner(),
        )
        .await;
    }
    let mut resolution = ResolutionClient::new(primary.channel().await);
    let both = || {
        vec![
            catalog("primary", ""),
            catalog("secondary", &secondary.addr),
        ]
    };
    // The secondary's catalog is fetched once, then answered from the cache.
    for request in [
        subscribe("c", "stable", both()),
        subscribe("c", "stable", both()),
        subscribe("no-such-package", "stable", vec![catalog("primary", "")]),
        ResolveRequest {
            mode: Mode::Unspecified as i32,
            ..subscribe("c", "stable", both())
        },
    ] {
        let _ = resolution.resolve(request).await;
    }

    let prometheus = tokio::task::block_in_place(|| {
        let prometheus = TestPrometheus::scraping(&metrics);
        prometheus.wait_for_fresh_scrape();
        prometheus
    });
    let get_package = r#"grpc_service="api.Registry",grpc_method="GetPackage",grpc_type="unary""#;
    let list_packages =
        r#"grpc_service="api.Registry",grpc_method="ListPackages",grpc_type="server_stream""#;
    let resolve = r#"grpc_service="olmregistry.resolution.v1.Resolution",grpc_method="Resolve""#;
    for (promql, want) in [
        ("up", 1.0),
        (&format!("grpc_server_started_total{{{get_package}}}"), 3.0),
        (
            &format!(r#"grpc_server_handled_total{{{get_package},grpc_code="OK"}}"#),
            2.0,
        ),
        (
            &format!(r#"grpc_server_handled_total{{{get_package},grpc_code="Unknown"}}"#),
            1.0,
        ),
        (
            &format!(r#"sum(grpc_server_handled_total{{{get_package}}})"#),
            3.0,
        ),
        (
            &format!("grpc_server_handling_seconds_count{{{get_package}}}"),
            3.0,
        ),
        (
            &format!(r#"grpc_server_handling_seconds_bucket{{{get_package},le="+Inf"}}"#),
            3.0,
        ),
        (&format!("grpc_server_msg_sent_total{{{get_package}}}"), 2.0),
        (
            &format!(r#"grpc_server_handled_total{{{list_packages},grpc_code="OK"}}"#),
            3.0,
        ),
        // Two packages per call.
        (
            &format!("grpc_server_msg_sent_total{{{list_packages}}}"),
            6.0,
        ),
        (
            &format!(r#"grpc_server_handled_total{{{resolve},grpc_code="OK"}}"#),
            3.0,
        ),
        (
            &format!(r#"grpc_server_handled_total{{{resolve},grpc_code="InvalidArgument"}}"#),
            1.0,
        ),
        ("olm_registry_catalog_packages", 2.0),
        ("olm_registry_catalog_channels", 2.0),
        ("olm_registry_catalog_bundles", 3.0),
        (r#"olm_registry_catalog_info{start="cold"}"#, 1.0),
        (
            r#"olm_registry_resolution_requests_total{mode="classic",outcome="resolved"}"#,
            2.0,
        ),
        (
            r#"olm_registry_resolution_requests_total{mode="classic",outcome="unsatisfiable"}"#,
            1.0,
        ),
        (
            r#"olm_registry_resolution_requests_total{mode="unspecified",outcome="invalid"}"#,
            1.0,
        ),
        (r#"sum(olm_registry_resolution_requests_total)"#, 4.0),
        (
            r#"olm_registry_resolution_duration_seconds_count{mode="classic"}"#,
            3.0,
        ),
        (
            r#"olm_registry_remote_catalog_fetches_total{outcome="ok"}"#,
            1.0,
        ),
        (
            r#"olm_registry_remote_catalog_fetches_total{outcome="error"}"#,
            0.0,
        ),
        ("olm_registry_remote_catalog_cache_hits_total", 1.0),
        // Present and plausible: their exact values are the kernel's.
        ("process_resident_memory_bytes > bool 1e6", 1.0),
        ("process_open_fds > bool 5", 1.0),
        ("process_cpu_seconds_total >= bool 0", 1.0),
        ("process_start_time_seconds > bool 1.7e9", 1.0),
    ] {
        let value = tokio::task::block_in_place(|| prometheus.value(promql));
        assert_eq!(value, want, "{promql}");
    }
    let info = tokio::task::block_in_place(|| prometheus.query("olm_registry_catalog_info"));
    let digest = logged_digest(&primary);
    assert_eq!(info.len(), 1);
    assert_eq!(info[0].0["digest"], serde_json::Value::from(digest));
}

#[tokio::test(flavor = "multi_thread")]
async fn exposition_passes_promtool_and_probes_answer() {
    let server = Server::serving(
        &fixture("resolution/primary"),
        &["--metrics-addr", "127.0.0.1:0"],
    )
    .await;
    let metrics = metrics_addr(&server).await;
    let (status, text) = tokio::task::block_in_place(|| get(&metrics, "/metrics")).unwrap();
    assert_eq!(status, 200);
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is installed with prometheus");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert_eq!(
        (
            checked.status.code(),
            String::from_utf8_lossy(&checked.stdout).into_owned(),
            String::from_utf8_lossy(&checked.stderr).into_owned()
        ),
        (Some(0), String::new(), String::new()),
        "{text}"
    );
    for (path, want) in [
        ("/healthz", (200, "ok\n")),
        ("/readyz", (200, "ok\n")),
        ("/other", (404, "not found\n")),
    ] {
        let got = tokio::task::block_in_place(|| get(&metrics, path)).unwrap();
        assert_eq!((got.0, got.1.as_str()), want, "{path}");
    }
}

/// While the catalog is still loading (here: a registry that accepts and never answers),
/// /readyz says 503 and /healthz 200; SIGTERM stops the metrics listener with the server.
#[tokio::test(flavor = "multi_thread")]
async fn readiness_follows_the_load_and_shutdown_closes_the_metrics_listener() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let image = format!("{}/catalog:latest", silent.local_addr().unwrap());
    let mut server = Server::start(
        std::path::Path::new(&image),
        &["--metrics-addr", "127.0.0.1:0", "--use-http"],
    );
    server.wait_for_log("serving metrics on").await;
    let metrics = metrics_addr(&server).await;
    for (path, want) in [
        ("/readyz", (503, "not ready\n")),
        ("/healthz", (200, "ok\n")),
    ] {
        let got = tokio::task::block_in_place(|| get(&metrics, path)).unwrap();
        assert_eq!((got.0, got.1.as_str()), want, "{path}");
    }
    server.signal("TERM");
    assert!(server.wait().await.success(), "{}", server.log());
    assert!(std::net::TcpStream::connect(&metrics).is_err());
    drop(silent);
}

/// `--log-format json`: every line is one object with timestamp, level and message; the
/// start-up line carries the catalog's digest and counts, and each call (at debug level) its
/// method, status and duration.
#[tokio::test]
async fn json_logs_parse_line_by_line_with_the_expected_fields() {
    let mut debug = Command::new("env");
    debug.args(["RUST_LOG=debug", crate::common::BIN]);
    let mut server = Server::start_with(
        debug,
        &fixture("resolution/primary"),
        &["--log-format", "json"],
    );
    server
        .wait_for_status(tonic_health::pb::health_check_response::ServingStatus::Serving)
        .await;
    let mut client = server.client().await;
    client
        .get_package(GetPackageRequest { name: "a".into() })
        .await
        .unwrap();
    server.signal("TERM");
    assert!(server.wait().await.success());

    let lines: Vec<serde_json::Value> = server
        .log()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for line in &lines {
        assert!(line["timestamp"].is_string(), "{line}");
        assert!(line["level"].is_string(), "{line}");
        assert!(line["message"].is_string(), "{line}");
    }
    let find = |message: &str, method: Option<&str>| {
        lines
            .iter()
            .find(|l| l["message"] == message && method.is_none_or(|m| l["method"] == m))
            .unwrap_or_else(|| panic!("no {message:?} line in {lines:?}"))
            .clone()
    };
    let loaded = find("catalog loaded", None);
    assert_eq!(
        (
            &loaded["level"],
            &loaded["packages"],
            &loaded["channels"],
            &loaded["bundles"],
            &loaded["start"],
            loaded["digest"].as_str().map(str::len),
            loaded["load_ms"].is_u64(),
            loaded["index_bytes"].is_u64(),
        ),
        (
            &"INFO".into(),
            &2.into(),
            &2.into(),
            &3.into(),
            &"cold".into(),
            Some(32),
            true,
            true
        )
    );
    let call = find("call", Some("/api.Registry/GetPackage"));
    assert_eq!(
        (
            &call["level"],
            &call["status"],
            call["duration_us"].is_u64()
        ),
        (&"DEBUG".into(), &"OK".into(), true)
    );
}

/// A start that reuses the index in --cache-dir is reported as warm, with the load's time.
#[tokio::test(flavor = "multi_thread")]
async fn a_warm_start_is_reported_as_warm_with_its_load_time() {
    let cache = tempfile::tempdir().unwrap();
    let cache_flag = format!("--cache-dir={}", cache.path().display());
    let catalog = fixture("resolution/primary");
    let mut cold = Server::serving(&catalog, &[&cache_flag]).await;
    cold.signal("TERM");
    assert!(cold.wait().await.success());

    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let warm = Server::serving(&catalog, &[&cache_flag, "--metrics-addr", "127.0.0.1:0"]).await;
    let addr = metrics_addr(&warm).await;
    let (_, text) = tokio::task::block_in_place(|| get(&addr, "/metrics")).unwrap();
    let sample = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
            .parse::<f64>()
            .unwrap()
    };
    let digest = logged_digest(&warm);
    assert_eq!(
        sample(&format!(
            "olm_registry_catalog_info{{digest=\"{digest}\",start=\"warm\"}}"
        )),
        1.0
    );
    let loaded_at = sample("olm_registry_catalog_last_load_timestamp_seconds") as u64;
    assert!(loaded_at >= before, "{loaded_at} < {before}");
    assert!(sample("olm_registry_catalog_load_duration_seconds") > 0.0);
}
