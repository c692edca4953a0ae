//! Start-up, readiness, reflection and shutdown of `serve`, as a CatalogSource pod needs them.
use crate::common::proxy;
use crate::common::registry;

use crate::common::{Server, generated_catalog, silent_registry};
use api::{GetPackageRequest, ListBundlesRequest, ListPackageRequest};
use registry::TestRegistry;
use std::path::Path;
use std::time::Duration;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;

async fn status(server: &Server) -> i32 {
    server
        .health()
        .await
        .check(HealthCheckRequest {
            service: "Registry".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
}

/// The port answers before the catalog is loaded: health says NOT_SERVING, registry calls
/// wait instead of failing, and both turn to answers once the catalog is in.
#[tokio::test]
async fn not_serving_until_loaded_and_calls_wait_for_the_catalog() {
    // The catalog is an image behind a registry that answers only when we let it: loading
    // waits for the pull until then.
    let reg = TestRegistry::plain();
    let cache = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    reg.push_catalog(&example, "catalogs/example:v1", &cache.path().join("push"));
    let gate = proxy::GateProxy::start(&reg.addr);
    let image = format!("{}/catalogs/example:v1", gate.addr);
    let pull_cache = cache.path().join("pull");
    let flags = [
        "--insecure-registry",
        &gate.addr,
        "--image-cache-dir",
        pull_cache.to_str().unwrap(),
    ];

    let server = Server::start(Path::new(&image), &flags);
    assert_eq!(status(&server).await, ServingStatus::NotServing as i32);
    assert_eq!(probe(&server.addr).0, 4);
    let mut client = server.client().await;
    let waiting = tokio::spawn(async move {
        client
            .get_package(GetPackageRequest {
                name: "queue-operator".into(),
            })
            .await
    });

    gate.open();
    server.wait_for_status(ServingStatus::Serving).await;
    let package = waiting.await.unwrap().unwrap().into_inner();
    assert_eq!(package.name, "queue-operator");
    assert_eq!(package.default_channel_name, "stable");
    assert_eq!(status(&server).await, ServingStatus::Serving as i32);
    assert_eq!(probe(&server.addr), (0, "status: SERVING\n".to_string()));
}

/// Runs the binary under the name OLM's probes use: (exit code, stdout).
fn probe(addr: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("grpc_health_probe");
    std::os::unix::fs::symlink(crate::common::BIN, &link).unwrap();
    let out = std::process::Command::new(&link)
        .arg(format!("-addr={addr}"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn health_probe_reports_connection_failure() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    assert_eq!(probe(&format!("127.0.0.1:{port}")).0, 2);
}

/// Lists the services through one version of the reflection API (the two versions have the
/// same messages in different packages).
macro_rules! reflection_services {
    ($version:ident, $server:expr) => {{
        use tonic_reflection::pb::$version::ServerReflectionRequest;
        use tonic_reflection::pb::$version::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::$version::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::$version::server_reflection_response::MessageResponse;
        let mut client = ServerReflectionClient::new($server.channel().await);
        let req = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut responses = client
            .server_reflection_info(tokio_stream::iter(vec![req]))
            .await
            .unwrap()
            .into_inner();
        match responses.message().await.unwrap().unwrap().message_response {
            Some(MessageResponse::ListServicesResponse(list)) => {
                let mut names: Vec<_> = list.service.into_iter().map(|s| s.name).collect();
                names.sort();
                names
            }
            other => panic!("unexpected reflection answer {other:?}"),
        }
    }};
}

/// The file that defines `api.Registry`, as reflection v1alpha describes it (what old grpcurl uses).
async fn describe_registry_v1alpha(server: &Server) -> prost_types::FileDescriptorProto {
    use prost::Message;
    use tonic_reflection::pb::v1alpha::ServerReflectionRequest;
    use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
    let mut client = ServerReflectionClient::new(server.channel().await);
    let req = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::FileContainingSymbol("api.Registry".into())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter(vec![req]))
        .await
        .unwrap()
        .into_inner();
    match responses.message().await.unwrap().unwrap().message_response {
        Some(MessageResponse::FileDescriptorResponse(files)) => files
            .file_descriptor_proto
            .iter()
            .map(|b| prost_types::FileDescriptorProto::decode(b.as_slice()).unwrap())
            .find(|f| f.package() == "api")
            .expect("the api file"),
        other => panic!("unexpected reflection answer {other:?}"),
    }
}

#[tokio::test]
async fn reflection_lists_every_service_on_v1_and_v1alpha() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let server = Server::serving(&catalog, &[]).await;
    let want = [
        "api.ExperimentalRegistry",
        "api.Registry",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "olmregistry.resolution.v1.Resolution",
    ];
    assert_eq!(reflection_services!(v1, server), want);
    assert_eq!(reflection_services!(v1alpha, server), want);
    let file = describe_registry_v1alpha(&server).await;
    let registry = file
        .service
        .iter()
        .find(|s| s.name() == "Registry")
        .unwrap();
    let methods: Vec<_> = registry.method.iter().map(|m| m.name()).collect();
    assert_eq!(
        methods,
        [
            "ListPackages",
            "GetPackage",
            "GetBundle",
            "GetBundleForChannel",
            "GetChannelEntriesThatReplace",
            "GetBundleThatReplaces",
            "GetChannelEntriesThatProvide",
            "GetLatestChannelEntriesThatProvide",
            "GetDefaultBundleThatProvides",
            "ListBundles",
        ]
    );
    let bundle = file
        .message_type
        .iter()
        .find(|m| m.name() == "Bundle")
        .unwrap();
    let fields: Vec<_> = bundle
        .field
        .iter()
        .map(|f| (f.name(), f.number()))
        .collect();
    assert_eq!(
        fields,
        [
            ("csvName", 1),
            ("packageName", 2),
            ("channelName", 3),
            ("csvJson", 4),
            ("object", 5),
            ("bundlePath", 6),
            ("providedApis", 7),
            ("requiredApis", 8),
            ("version", 9),
            ("skipRange", 10),
            ("dependencies", 11),
            ("properties", 12),
            ("replaces", 13),
            ("skips", 14),
            ("deprecation", 15),
        ]
    );
}

/// SIGTERM while a ListBundles stream is in flight (OLM's catalog operator re-listing): every
/// listening socket closes at once, so that new connections are refused rather than left
/// without an HTTP/2 preface, while the stream completes; then the process exits 0.
#[tokio::test]
async fn sigterm_closes_listeners_at_once_and_lets_a_list_bundles_stream_finish() {
    let dir = tempfile::tempdir().unwrap();
    generated_catalog(dir.path(), 1500, 20_000);
    let mut server = Server::serving(
        dir.path(),
        &[
            "--shutdown-grace",
            "60s",
            "--metrics-addr",
            "127.0.0.1:0",
            "--http-addr",
            "127.0.0.1:0",
            "--catalog-name",
            "big",
        ],
    )
    .await;
    let logged_addr = |prefix: &str| {
        let log = server.log();
        let rest = log
            .split(prefix)
            .nth(1)
            .unwrap_or_else(|| panic!("{prefix}: {log}"));
        rest.split('/').next().unwrap().to_owned()
    };
    let metrics = logged_addr("serving metrics on http://");
    let catalogd = logged_addr("serving the catalogd API on http://");
    let mut client = server.client().await;
    let mut stream = client
        .list_bundles(ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert_eq!(first.package_name, "big");
    server.signal("TERM");
    server.wait_for_log("received SIGTERM").await;
    // The stream is unread past its first message, so the call is still in progress.
    for addr in [&server.addr, &metrics, &catalogd] {
        let refused = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match tokio::net::TcpStream::connect(addr.as_str()).await {
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break,
                    _ => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        })
        .await;
        assert!(refused.is_ok(), "{addr} still accepts after SIGTERM");
    }
    let mut count = 1;
    while let Some(b) = stream.message().await.unwrap() {
        assert_eq!(b.object.len(), 1, "{}", b.csv_name);
        count += 1;
    }
    assert_eq!(count, 1500);
    let status = server.wait().await;
    assert_eq!(status.code(), Some(0), "log:\n{}", server.log());
}

#[tokio::test]
async fn sigint_on_an_idle_server_exits_zero() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let mut server = Server::serving(&catalog, &[]).await;
    server.signal("INT");
    assert_eq!(
        server.wait().await.code(),
        Some(0),
        "log:\n{}",
        server.log()
    );
}

/// Sends SIGTERM to a server that has not finished loading and waits for it to stop, failing
/// the test if it is still running after a generous bound: a stop that never comes is the
/// bug, not a slow one. Returns the log.
async fn terminate_while_loading(server: &mut Server) -> String {
    server.signal("TERM");
    let bound = std::time::Duration::from_secs(30);
    let status = tokio::time::timeout(bound, server.wait())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "still running {bound:?} after the signal; log:\n{}",
                server.log()
            )
        });
    let log = server.log();
    assert_eq!(status.code(), Some(0), "log:\n{log}");
    assert!(
        log.contains("stopping before the catalog finished loading"),
        "{log}"
    );
    log
}

/// SIGTERM while the catalog is being indexed: the process stops at once, and the partial
/// index it was writing is gone.
#[tokio::test]
async fn sigterm_during_the_ingest_exits_and_leaves_no_partial_index() {
    let dir = tempfile::tempdir().unwrap();
    generated_catalog(dir.path(), 4000, 20_000);
    let cache = tempfile::tempdir().unwrap();
    let index_dir = cache.path().join("olm-registry.v1");
    let mut server = Server::start(
        dir.path(),
        &[
            "--cache-dir",
            cache.path().to_str().unwrap(),
            "--shutdown-grace",
            "1s",
        ],
    );
    let partial = || {
        std::fs::read_dir(&index_dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.ends_with(".db.partial"))
    };
    let writing = tokio::time::timeout(std::time::Duration::from_secs(120), async {
        loop {
            if let Some(name) = partial() {
                return name;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no partial index appeared; log:\n{}", server.log()));
    let log = terminate_while_loading(&mut server).await;
    assert!(log.contains("removed unfinished work"), "{log}");
    assert_eq!(partial(), None, "{writing} was left behind");
    assert!(!index_dir.join("index.db").exists());
}

/// SIGTERM while the catalog is being indexed and a client (OLM connecting to a new pod) is
/// already waiting for it: the waiting call is answered UNAVAILABLE at once and the process
/// exits, instead of holding both for the whole grace period.
#[tokio::test]
async fn sigterm_while_loading_answers_waiting_calls_at_once() {
    let dir = tempfile::tempdir().unwrap();
    generated_catalog(dir.path(), 4000, 20_000);
    let mut server = Server::start(
        dir.path(),
        &["--shutdown-grace", "120s", "--metrics-addr", "127.0.0.1:0"],
    );
    server.wait_for_log("serving metrics on http://").await;
    let log = server.log();
    let metrics = log
        .split("serving metrics on http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_owned();
    let mut client = server.client().await;
    let waiting = tokio::spawn(async move { client.list_packages(ListPackageRequest {}).await });
    // The call is in once the server counts it (before it waits for the catalog).
    let started = "grpc_server_started_total{grpc_method=\"ListPackages\"";
    loop {
        let (_, text) = crate::common::prometheus::get(&metrics, "/metrics").unwrap();
        if text
            .lines()
            .any(|l| l.starts_with(started) && l.ends_with(" 1"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stopped = std::time::Instant::now();
    let log = terminate_while_loading(&mut server).await;
    let answer = waiting.await.unwrap();
    let status = answer.expect_err("no catalog to answer from");
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert_eq!(
        status.message(),
        "the server stopped before its catalog was loaded"
    );
    assert!(
        stopped.elapsed() < Duration::from_secs(60),
        "the stop waited {:?}; log:\n{log}",
        stopped.elapsed()
    );
    assert!(!log.contains("after the grace period"), "{log}");
}

/// SIGTERM while the catalog image is being pulled from a registry that never answers: the
/// process does not wait for the pull.
#[tokio::test]
async fn sigterm_during_a_stuck_image_pull_exits() {
    let host = silent_registry();
    let image = format!("{host}/catalogs/stuck:v1");
    let mut server = Server::start(
        Path::new(&image),
        &["--insecure-registry", &host, "--shutdown-grace", "1s"],
    );
    server.wait_for_log("pulling catalog image").await;
    terminate_while_loading(&mut server).await;
}
