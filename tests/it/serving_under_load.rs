//! `serve` keeps answering under the load a catalog pod really sees (OLM re-listing
//! everything while others query) and stays bounded against clients that misbehave: ones that
//! never read, never speak, sit idle, send something that is not gRPC, or open more
//! connections than the process has descriptors for.

use crate::common::{Server, collect, generated_catalog};
use api::{
    GetAllProvidersRequest, GetAllReplacementsRequest, GetBundleInChannelRequest, GetBundleRequest,
    GetDefaultProviderRequest, GetLatestProvidersRequest, GetPackageRequest, GetReplacementRequest,
    ListBundlesRequest, ListPackageRequest,
};
use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use std::future::Future;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;

/// A call that has no answer by then means the server froze: a bound, not a measurement.
const LIVENESS: Duration = Duration::from_secs(60);

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIVENESS, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {LIVENESS:?}: the server froze"))
}

/// The example catalog plus a generated package of `n` bundles with manifests of `bytes`.
fn catalog_with_big_package(dir: &Path, n: usize, bytes: usize) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    for package in ["cache-operator", "queue-operator"] {
        std::fs::create_dir_all(dir.join(package)).unwrap();
        for file in std::fs::read_dir(examples.join(package)).unwrap() {
            let file = file.unwrap();
            std::fs::copy(file.path(), dir.join(package).join(file.file_name())).unwrap();
        }
    }
    generated_catalog(dir, n, bytes);
}

async fn health_status(server: &Server) -> i32 {
    server
        .health()
        .await
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .status
}

/// Streams that stop reading used to keep an index connection each, and unary calls then
/// waited for one on the runtime's worker threads: with more such streams than connections,
/// the whole server (health included) froze for good.
#[tokio::test]
async fn list_bundles_readers_that_stop_reading_do_not_freeze_other_calls() {
    let dir = tempfile::tempdir().unwrap();
    generated_catalog(dir.path(), 400, 20_000);
    let server = Server::serving(dir.path(), &[]).await;

    // More stalled streams than the index has connections, each on its own connection.
    let mut stalled = Vec::new();
    for _ in 0..6 {
        let mut client = server.client().await;
        let mut stream = within("ListBundles", client.list_bundles(ListBundlesRequest {}))
            .await
            .unwrap()
            .into_inner();
        let first = within("first bundle", stream.message())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.csv_name, "big.v0.0.0");
        stalled.push((client, stream));
    }

    let client = server.client().await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..8 {
        let mut client = client.clone();
        calls.spawn(async move {
            client
                .get_bundle(GetBundleRequest {
                    pkg_name: "big".into(),
                    channel_name: "stable".into(),
                    csv_name: format!("big.v{i}.0.0"),
                })
                .await
                .map(|r| r.into_inner().csv_name)
        });
    }
    let mut answered = within("GetBundle beside stalled streams", calls.join_all()).await;
    answered.sort_by_key(|r| format!("{r:?}"));
    let want: Vec<String> = (0..8).map(|i| format!("big.v{i}.0.0")).collect();
    assert_eq!(
        answered.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        want
    );
    assert_eq!(
        within("health", health_status(&server)).await,
        ServingStatus::Serving as i32
    );

    // The stalled streams are intact: read now, each delivers every bundle.
    for (_client, stream) in stalled {
        let rest = within("the rest of a stalled stream", collect(stream)).await;
        assert_eq!(rest.len(), 399);
    }
}

/// One call of each RPC (and one that fails), in a fixed order.
#[derive(Clone, Copy)]
enum Call {
    ListPackages,
    GetPackage,
    MissingPackage,
    GetBundle,
    GetBundleForChannel,
    EntriesThatReplace,
    BundleThatReplaces,
    EntriesThatProvide,
    LatestEntriesThatProvide,
    DefaultBundleThatProvides,
    ListBundles,
}

const UNARY_MIX: [Call; 10] = [
    Call::ListPackages,
    Call::GetPackage,
    Call::MissingPackage,
    Call::GetBundle,
    Call::GetBundleForChannel,
    Call::EntriesThatReplace,
    Call::BundleThatReplaces,
    Call::EntriesThatProvide,
    Call::LatestEntriesThatProvide,
    Call::DefaultBundleThatProvides,
];

type Client = api::registry_client::RegistryClient<tonic::transport::Channel>;

#[allow(deprecated)] // GetBundleForChannel is deprecated upstream, and still served.
/// The answer to `call` as comparable text: every message's encoding, or the error.
async fn answer(client: &mut Client, call: Call, slow: bool) -> String {
    fn encoded<M: Message>(items: &[M]) -> String {
        items
            .iter()
            .map(|m| format!("{:x?}", m.encode_to_vec()))
            .collect::<Vec<_>>()
            .join("\n")
    }
    let gvk = || {
        (
            "cache.example.com".to_owned(),
            "v1".to_owned(),
            "CacheCluster".to_owned(),
        )
    };
    let result: Result<String, tonic::Status> = async {
        Ok(match call {
            Call::ListPackages => encoded(
                &collect(
                    client
                        .list_packages(ListPackageRequest {})
                        .await?
                        .into_inner(),
                )
                .await,
            ),
            Call::GetPackage => encoded(&[client
                .get_package(GetPackageRequest {
                    name: "cache-operator".into(),
                })
                .await?
                .into_inner()]),
            Call::MissingPackage => encoded(&[client
                .get_package(GetPackageRequest {
                    name: "no-such-operator".into(),
                })
                .await?
                .into_inner()]),
            Call::GetBundle => encoded(&[client
                .get_bundle(GetBundleRequest {
                    pkg_name: "cache-operator".into(),
                    channel_name: "stable".into(),
                    csv_name: "cache-operator.v1.1.0".into(),
                })
                .await?
                .into_inner()]),
            Call::GetBundleForChannel => encoded(&[client
                .get_bundle_for_channel(GetBundleInChannelRequest {
                    pkg_name: "queue-operator".into(),
                    channel_name: "stable".into(),
                })
                .await?
                .into_inner()]),
            Call::EntriesThatReplace => encoded(
                &collect(
                    client
                        .get_channel_entries_that_replace(GetAllReplacementsRequest {
                            csv_name: "cache-operator.v1.0.0".into(),
                        })
                        .await?
                        .into_inner(),
                )
                .await,
            ),
            Call::BundleThatReplaces => encoded(&[client
                .get_bundle_that_replaces(GetReplacementRequest {
                    csv_name: "big.v10.0.0".into(),
                    pkg_name: "big".into(),
                    channel_name: "stable".into(),
                })
                .await?
                .into_inner()]),
            Call::EntriesThatProvide => {
                let (group, version, kind) = gvk();
                encoded(
                    &collect(
                        client
                            .get_channel_entries_that_provide(GetAllProvidersRequest {
                                group,
                                version,
                                kind,
                                plural: String::new(),
                            })
                            .await?
                            .into_inner(),
                    )
                    .await,
                )
            }
            Call::LatestEntriesThatProvide => {
                let (group, version, kind) = gvk();
                encoded(
                    &collect(
                        client
                            .get_latest_channel_entries_that_provide(GetLatestProvidersRequest {
                                group,
                                version,
                                kind,
                                plural: String::new(),
                            })
                            .await?
                            .into_inner(),
                    )
                    .await,
                )
            }
            Call::DefaultBundleThatProvides => {
                let (group, version, kind) = gvk();
                encoded(&[client
                    .get_default_bundle_that_provides(GetDefaultProviderRequest {
                        group,
                        version,
                        kind,
                        plural: String::new(),
                    })
                    .await?
                    .into_inner()])
            }
            Call::ListBundles => {
                let mut stream = client
                    .list_bundles(ListBundlesRequest {})
                    .await?
                    .into_inner();
                let mut bundles = Vec::new();
                while let Some(b) = stream.message().await? {
                    bundles.push(b);
                    if slow {
                        // A client that reads slowly, as a busy packageserver does.
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
                encoded(&bundles)
            }
        })
    }
    .await;
    result.unwrap_or_else(|s| format!("error {:?}: {}", s.code(), s.message()))
}

/// 64 callers on 8 connections mixing every RPC, 5% of calls ListBundles (some read slowly),
/// while health is checked throughout: every call gets exactly the answer it gets alone.
#[tokio::test]
async fn sixty_four_callers_mixing_every_rpc_get_every_answer() {
    const CALLERS: usize = 64;
    const CALLS: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    catalog_with_big_package(dir.path(), 300, 4_000);
    let server = Server::serving(dir.path(), &[]).await;

    let mut alone = server.client().await;
    let mut expected = std::collections::HashMap::new();
    for call in UNARY_MIX.into_iter().chain([Call::ListBundles]) {
        expected.insert(call as usize, answer(&mut alone, call, false).await);
    }
    assert!(expected[&(Call::ListBundles as usize)].lines().count() == 307);
    assert_eq!(
        expected[&(Call::MissingPackage as usize)],
        "error Unknown: package \"no-such-operator\" not found"
    );
    let expected = std::sync::Arc::new(expected);

    let mut connections = Vec::new();
    for _ in 0..8 {
        connections.push(server.client().await);
    }
    let (done_tx, mut done_rx) = tokio::sync::watch::channel(false);
    let health = server.health().await;
    let checker = tokio::spawn(async move {
        let mut checks = 0;
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        loop {
            tokio::select! {
                _ = done_rx.changed() => return checks,
                _ = tick.tick() => {}
            }
            let mut health = health.clone();
            let status = tokio::time::timeout(
                LIVENESS,
                health.check(HealthCheckRequest {
                    service: String::new(),
                }),
            )
            .await
            .expect("health check answered")
            .expect("health check succeeded")
            .into_inner()
            .status;
            assert_eq!(status, ServingStatus::Serving as i32);
            checks += 1;
        }
    });

    let mut callers = tokio::task::JoinSet::new();
    for c in 0..CALLERS {
        let mut client = connections[c % connections.len()].clone();
        let expected = expected.clone();
        callers.spawn(async move {
            let mut failures = Vec::new();
            for k in 0..CALLS {
                let n = c * CALLS + k;
                let call = if n % 20 == 7 {
                    Call::ListBundles
                } else {
                    UNARY_MIX[(c * 7 + k * 3) % UNARY_MIX.len()]
                };
                let got = answer(&mut client, call, c % 16 == 0).await;
                if got != expected[&(call as usize)] {
                    failures.push(format!(
                        "caller {c} call {k}: {}",
                        got.lines().next().unwrap_or("")
                    ));
                }
            }
            failures
        });
    }
    let failures: Vec<String> = within("64 callers", callers.join_all())
        .await
        .into_iter()
        .flatten()
        .collect();
    done_tx.send(true).unwrap();
    let checks = checker.await.unwrap();
    assert_eq!(failures, Vec::<String>::new());
    assert!(checks > 0, "health was never checked");
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// An HTTP/2 connection of our own, for behaviour no gRPC client library would show.
async fn raw_connection(
    addr: &str,
    window: u32,
) -> (
    h2::client::SendRequest<Bytes>,
    tokio::sync::oneshot::Receiver<()>,
) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(window)
        .handshake(tcp)
        .await
        .unwrap();
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _ = connection.await;
        let _ = closed_tx.send(());
    });
    (client, closed_rx)
}

fn grpc_frame(message: &impl Message) -> Bytes {
    let body = message.encode_to_vec();
    let mut frame = BytesMut::with_capacity(5 + body.len());
    frame.put_u8(0);
    frame.put_u32(body.len() as u32);
    frame.put_slice(&body);
    frame.freeze()
}

fn post(addr: &str, method: &str, content_type: &str) -> http::Request<()> {
    http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/api.Registry/{method}"))
        .header("content-type", content_type)
        .header("te", "trailers")
        .body(())
        .unwrap()
}

/// A client that opens thousands of GetBundle calls on one connection and never reads the
/// answers (flow-control window 0) used to make the server hold every answer: ~485 KiB per
/// call, 1.4 GiB for 3,000. Now the connection gets 100 concurrent calls at most, and the
/// answers it holds stay within its allowance, while others are served.
#[tokio::test]
async fn a_connection_that_never_reads_holds_a_bounded_amount() {
    let dir = tempfile::tempdir().unwrap();
    generated_catalog(dir.path(), 60, 480_000);
    let server = Server::serving(dir.path(), &[]).await;
    let before = rss_kib(server.pid());

    let (mut hog, _closed) = raw_connection(&server.addr, 0).await;
    hog = within("handshake", hog.ready()).await.unwrap();
    // Until the server's SETTINGS arrive the client assumes no stream limit, and the server
    // refuses (REFUSED_STREAM) what it sends past 100: wait for them, as a real client's
    // calls would after the first round trip.
    within("server settings", async {
        while hog.current_max_send_streams() != 100 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await;
    let mut answers = tokio::task::JoinSet::new();
    for i in 0..3000 {
        let (answer, mut body) =
            match hog.send_request(post(&server.addr, "GetBundle", "application/grpc"), false) {
                Ok(sent) => sent,
                // The client library refuses past the server's stream limit: the bound holds.
                Err(_) => break,
            };
        body.send_data(
            grpc_frame(&GetBundleRequest {
                pkg_name: "big".into(),
                channel_name: "stable".into(),
                csv_name: format!("big.v{}.0.0", i % 60),
            }),
            true,
        )
        .unwrap();
        answers.spawn(answer);
    }
    // Calls within the connection's allowance have answers waiting (headers are not
    // flow-controlled).
    for _ in 0..12 {
        let response = within("GetBundle headers", answers.join_next()).await;
        assert_eq!(response.unwrap().unwrap().unwrap().status(), 200);
    }
    // Everyone else is served meanwhile.
    let mut client = server.client().await;
    for i in 0..50 {
        let b = within(
            "GetBundle on another connection",
            client.get_bundle(GetBundleRequest {
                pkg_name: "big".into(),
                channel_name: "stable".into(),
                csv_name: format!("big.v{}.0.0", i % 60),
            }),
        )
        .await
        .unwrap()
        .into_inner();
        assert_eq!(b.csv_name, format!("big.v{}.0.0", i % 60));
    }
    let grown_mib = rss_kib(server.pid()).saturating_sub(before) / 1024;
    // 100 calls at most, each holding one ~485 KiB answer, plus allocator slack.
    assert!(grown_mib < 160, "the server grew by {grown_mib} MiB");
}

/// Connections that never send their HTTP/2 preface are closed after the handshake timeout,
/// so they cannot use up the connection limit; a real client gets in once they are gone.
#[tokio::test]
async fn silent_connections_are_closed_and_make_room() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let server = Server::serving(
        &catalog,
        &["--handshake-timeout", "1s", "--max-connections", "3"],
    )
    .await;
    // The harness's own health watch may still hold a slot; fill the rest with silence.
    let mut silent = Vec::new();
    for _ in 0..3 {
        silent.push(tokio::net::TcpStream::connect(&server.addr).await.unwrap());
    }
    let mut client = server.client().await;
    let package = within(
        "GetPackage behind silent connections",
        client.get_package(GetPackageRequest {
            name: "cache-operator".into(),
        }),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(package.name, "cache-operator");
    for mut s in silent {
        // The server's own preface (SETTINGS) may come first; then the end.
        let mut buf = [0u8; 256];
        within("the server closing a silent connection", async {
            while let Ok(n) = s.read(&mut buf).await
                && n > 0
            {}
        })
        .await;
    }
}

/// A connection with no call in progress is closed after the idle timeout; one with a call
/// in progress (here a health watch) is not.
#[tokio::test]
async fn idle_connections_are_closed_busy_ones_are_kept() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let server = Server::serving(&catalog, &["--idle-timeout", "1s"]).await;

    let (idle, closed) = raw_connection(&server.addr, 65_535).await;
    let mut idle = within("handshake", idle.ready()).await.unwrap();
    let (answer, mut body) = idle
        .send_request(
            post(&server.addr, "ListPackages", "application/grpc"),
            false,
        )
        .unwrap();
    body.send_data(grpc_frame(&ListPackageRequest {}), true)
        .unwrap();
    let mut answer = within("ListPackages", answer).await.unwrap().into_body();
    while let Some(chunk) = within("ListPackages body", answer.data()).await {
        let chunk = chunk.unwrap();
        let _ = answer.flow_control().release_capacity(chunk.len());
    }
    within("the idle connection to be closed", closed)
        .await
        .unwrap();

    // A watch keeps its connection busy well past the idle timeout.
    let mut health = server.health().await;
    let mut watch = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status,
        ServingStatus::Serving as i32
    );
    // Waiting out the timeout is the point here; no readiness signal can stand in for it.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let status = health
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("the busy connection is still open")
        .into_inner()
        .status;
    assert_eq!(status, ServingStatus::Serving as i32);
}

/// Requests that are not gRPC are refused as grpc-go refuses them, not decoded.
#[tokio::test]
async fn requests_that_are_not_grpc_get_415() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let server = Server::serving(&catalog, &[]).await;
    let (client, _closed) = raw_connection(&server.addr, 65_535).await;
    let mut client = within("handshake", client.ready()).await.unwrap();
    let (answer, mut body) = client
        .send_request(post(&server.addr, "ListPackages", "text/plain"), false)
        .unwrap();
    body.send_data(grpc_frame(&ListPackageRequest {}), true)
        .unwrap();
    let response = within("ListPackages as text/plain", answer).await.unwrap();
    assert_eq!(response.status(), 415);
    let headers = response.headers();
    assert_eq!(headers["grpc-status"], "13");
    assert_eq!(
        headers["grpc-message"],
        "invalid gRPC request content-type \"text/plain\""
    );
}

/// A request's strings come back in error messages, capped.
#[tokio::test]
async fn error_messages_echo_at_most_a_kibibyte_of_the_request() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let server = Server::serving(&catalog, &[]).await;
    let mut client = server.client().await;
    let status = client
        .get_package(GetPackageRequest {
            name: "x".repeat(100_000),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unknown);
    // `package "` + 100,000 x + `" not found` is 100,020 bytes; 1,024 are kept.
    assert_eq!(
        status.message(),
        format!("package \"{}… (98996 more bytes)", "x".repeat(1015))
    );
}

/// Out of file descriptors, the server slows its accepting down and says why, instead of
/// spinning silently; it accepts again once descriptors are free.
#[tokio::test]
async fn running_out_of_descriptors_is_reported_and_survived() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let mut limited = Command::new("prlimit");
    limited.args(["--nofile=48:48", "--", crate::common::BIN]);
    let server = Server::start_with(limited, &catalog, &[]);
    server.wait_for_status(ServingStatus::Serving).await;
    let mut flood = Vec::new();
    for _ in 0..80 {
        flood.push(tokio::net::TcpStream::connect(&server.addr).await.unwrap());
    }
    within(
        "the descriptor warning",
        server.wait_for_log("cannot accept a connection: Too many open files"),
    )
    .await;
    drop(flood);
    // Accepting resumes: a fresh client is answered.
    let mut client = server.client().await;
    let package = within(
        "GetPackage after the flood",
        client.get_package(GetPackageRequest {
            name: "queue-operator".into(),
        }),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(package.name, "queue-operator");
}
