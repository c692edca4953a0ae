//! What a resolution request may make the server do to other catalog servers: a `serve`
//! process resolves against catalog servers written here (real tonic api.Registry servers
//! that misbehave on purpose) and must stay bounded in memory, time and connections.

use crate::common::{Server, fixture};
use api::resolution::resolution_client::ResolutionClient;
use api::resolution::{
    BundleLookup, Catalog, ChosenBundle, InstallPlan, Mode, ResolveRequest, ResolveResponse,
    Result as Answer, Step, Subscription, UpdatedSubscription,
};
use api::server::registry_server::{Registry, RegistryServer};
use api::{self, RawMessage};
use prost::Message;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::watch;
use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Request, Response, Status};

type Streamed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// What the fake catalog server's ListBundles does.
#[derive(Clone)]
enum Bundles {
    /// Streams copies of one bundle until the client goes away.
    Endless,
    /// Sends one bundle whose CSV is this many bytes.
    Huge(usize),
    /// Waits until the value turns true, then sends one bundle, or fails when `fail`.
    Held {
        release: watch::Receiver<bool>,
        fail: bool,
    },
    /// Sends one bundle without an image, whose manifests only GetBundle would give.
    Imageless,
}

/// A catalog server of one package, `big`, whose channel `stable` holds `big.v1.0.0`.
struct Fake {
    bundles: Bundles,
    list_bundles_calls: Arc<AtomicUsize>,
}

fn bundle(csv_json: String) -> RawMessage {
    RawMessage(big(csv_json).encode_to_vec().into())
}

fn big(csv_json: String) -> api::Bundle {
    api::Bundle {
        csv_name: "big.v1.0.0".into(),
        package_name: "big".into(),
        channel_name: "stable".into(),
        bundle_path: "registry.example.com/big-bundle:v1.0.0".into(),
        csv_json,
        properties: vec![api::Property {
            r#type: "olm.package".into(),
            value: r#"{"packageName":"big","version":"1.0.0"}"#.into(),
        }],
        version: "1.0.0".into(),
        ..api::Bundle::default()
    }
}

fn unimplemented<T>() -> Result<T, Status> {
    Err(Status::unimplemented("not in this fake"))
}

#[tonic::async_trait]
impl Registry for Fake {
    type ListPackagesStream = Streamed<api::PackageName>;
    type GetChannelEntriesThatReplaceStream = Streamed<api::ChannelEntry>;
    type GetChannelEntriesThatProvideStream = Streamed<api::ChannelEntry>;
    type GetLatestChannelEntriesThatProvideStream = Streamed<api::ChannelEntry>;
    type ListBundlesStream = Streamed<RawMessage>;

    async fn list_packages(
        &self,
        _: Request<api::ListPackageRequest>,
    ) -> Result<Response<Self::ListPackagesStream>, Status> {
        let name = api::PackageName { name: "big".into() };
        Ok(Response::new(Box::pin(tokio_stream::once(Ok(name)))))
    }

    async fn get_package(
        &self,
        _: Request<api::GetPackageRequest>,
    ) -> Result<Response<api::Package>, Status> {
        Ok(Response::new(api::Package {
            name: "big".into(),
            channels: vec![api::Channel {
                name: "stable".into(),
                csv_name: "big.v1.0.0".into(),
                ..api::Channel::default()
            }],
            default_channel_name: "stable".into(),
            ..api::Package::default()
        }))
    }

    async fn list_bundles(
        &self,
        _: Request<api::ListBundlesRequest>,
    ) -> Result<Response<Self::ListBundlesStream>, Status> {
        self.list_bundles_calls.fetch_add(1, Ordering::SeqCst);
        let stream: Self::ListBundlesStream = match self.bundles.clone() {
            Bundles::Endless => {
                let one = bundle("x".repeat(4096));
                Box::pin(tokio_stream::iter(std::iter::repeat(one).map(Ok)))
            }
            Bundles::Huge(bytes) => Box::pin(tokio_stream::once(Ok(bundle("x".repeat(bytes))))),
            Bundles::Held { mut release, fail } => {
                release.wait_for(|r| *r).await.unwrap();
                let answer = if fail {
                    Err(Status::unavailable("the fake is down"))
                } else {
                    Ok(bundle(String::new()))
                };
                Box::pin(tokio_stream::once(answer))
            }
            Bundles::Imageless => {
                let b = api::Bundle {
                    bundle_path: String::new(),
                    ..big(String::new())
                };
                Box::pin(tokio_stream::once(Ok(RawMessage(b.encode_to_vec().into()))))
            }
        };
        Ok(Response::new(stream))
    }

    async fn get_bundle(
        &self,
        _: Request<api::GetBundleRequest>,
    ) -> Result<Response<RawMessage>, Status> {
        unimplemented()
    }

    async fn get_bundle_for_channel(
        &self,
        _: Request<api::GetBundleInChannelRequest>,
    ) -> Result<Response<RawMessage>, Status> {
        unimplemented()
    }

    async fn get_channel_entries_that_replace(
        &self,
        _: Request<api::GetAllReplacementsRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatReplaceStream>, Status> {
        unimplemented()
    }

    async fn get_bundle_that_replaces(
        &self,
        _: Request<api::GetReplacementRequest>,
    ) -> Result<Response<RawMessage>, Status> {
        unimplemented()
    }

    async fn get_channel_entries_that_provide(
        &self,
        _: Request<api::GetAllProvidersRequest>,
    ) -> Result<Response<Self::GetChannelEntriesThatProvideStream>, Status> {
        unimplemented()
    }

    async fn get_latest_channel_entries_that_provide(
        &self,
        _: Request<api::GetLatestProvidersRequest>,
    ) -> Result<Response<Self::GetLatestChannelEntriesThatProvideStream>, Status> {
        unimplemented()
    }

    async fn get_default_bundle_that_provides(
        &self,
        _: Request<api::GetDefaultProviderRequest>,
    ) -> Result<Response<RawMessage>, Status> {
        unimplemented()
    }
}

/// A running fake: its address and what it has seen.
struct FakeServer {
    addr: String,
    connections: Arc<AtomicUsize>,
    list_bundles_calls: Arc<AtomicUsize>,
}

async fn fake(bundles: Bundles) -> FakeServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let connections = Arc::new(AtomicUsize::new(0));
    let list_bundles_calls = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener).map(move |c| {
        counted.fetch_add(1, Ordering::SeqCst);
        c
    });
    let service = RegistryServer::new(Fake {
        bundles,
        list_bundles_calls: list_bundles_calls.clone(),
    })
    .max_encoding_message_size(usize::MAX);
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    FakeServer {
        addr,
        connections,
        list_bundles_calls,
    }
}

/// A `serve` of the primary fixture that may read `allowed`, with `extra` flags.
async fn primary(allowed: &[&str], extra: &[&str]) -> Server {
    let allowed = allowed.join(",");
    let mut flags = vec!["--resolution-allowed-catalogs", &allowed];
    flags.extend_from_slice(extra);
    Server::serving(&fixture("resolution/primary"), &flags).await
}

/// A subscription to `big` in the catalog at `address`, nothing installed.
fn subscribe_big(address: &str) -> ResolveRequest {
    ResolveRequest {
        mode: Mode::Classic as i32,
        namespace: "operators".into(),
        catalogs: vec![Catalog {
            name: "fake".into(),
            namespace: "olm".into(),
            address: address.into(),
            ..Catalog::default()
        }],
        subscriptions: vec![Subscription {
            name: "big-stable".into(),
            package: "big".into(),
            channel: "stable".into(),
            source: "fake".into(),
            source_namespace: "olm".into(),
            ..Subscription::default()
        }],
        ..ResolveRequest::default()
    }
}

/// The answer to [`subscribe_big`] when the catalog could not be read, for `error`.
fn unread(error: &str) -> ResolveResponse {
    ResolveResponse {
        mode: Mode::Classic as i32,
        namespace: "operators".into(),
        results: vec![Answer {
            request: "big-stable".into(),
            package: "big".into(),
            error: format!("its catalog fake/olm cannot be read: {error}"),
            ..Answer::default()
        }],
        warnings: vec![format!("catalog fake/olm is left out: {error}")],
        // The rest of the namespace resolved, to nothing.
        install_plan: Some(InstallPlan::default()),
        ..ResolveResponse::default()
    }
}

async fn resolve(server: &Server, request: ResolveRequest) -> Result<ResolveResponse, Status> {
    let mut client = ResolutionClient::new(server.channel().await);
    client.resolve(request).await.map(|r| r.into_inner())
}

/// The most memory the process has held, from /proc (Linux).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test]
async fn an_endless_catalog_stops_at_the_byte_cap_with_memory_bounded() {
    let fake = fake(Bundles::Endless).await;
    let server = primary(&[&fake.addr], &["--resolution-max-catalog-bytes", "32M"]).await;
    let answer = resolve(&server, subscribe_big(&fake.addr)).await.unwrap();
    let error = format!(
        "catalog server {} sent more than the 33554432 bytes allowed for one catalog \
         (--resolution-max-catalog-bytes)",
        fake.addr
    );
    assert_eq!(answer, unread(&error));
    // 32 MiB of bundles, held once as messages; the bound is generous, an unbounded read
    // grows by hundreds of MiB a second.
    let peak = peak_rss_kib(server.pid());
    assert!(peak < 256 << 10, "peak RSS {peak} KiB");
}

#[tokio::test]
async fn a_message_over_the_cap_is_refused_before_it_is_read() {
    let fake = fake(Bundles::Huge(20 << 20)).await;
    let server = primary(&[&fake.addr], &[]).await;
    let answer = resolve(&server, subscribe_big(&fake.addr)).await.unwrap();
    let error = format!(
        "catalog server {} sent a ListBundles message larger than the 16777216 bytes allowed \
         (--resolution-max-catalog-message)",
        fake.addr
    );
    assert_eq!(answer, unread(&error));
    let peak = peak_rss_kib(server.pid());
    assert!(peak < 128 << 10, "peak RSS {peak} KiB");
}

/// The error of a catalog server that used up the 1 s budget.
fn out_of_time(address: &str) -> String {
    format!(
        "catalog server {address} did not answer within the 1s time budget (--resolution-timeout)"
    )
}

#[tokio::test]
async fn a_server_that_never_answers_uses_up_the_time_budget() {
    // Connections complete (the kernel accepts them) but nobody speaks HTTP/2.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    // A full accept queue: the kernel drops further SYNs, so connecting hangs as it does to
    // a host that has gone.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let full = socket.listen(0).unwrap();
    let full_addr = full.local_addr().unwrap().to_string();
    let _queued = std::net::TcpStream::connect(&full_addr).unwrap();

    let server = primary(&[&silent_addr, &full_addr], &["--resolution-timeout", "1s"]).await;
    for addr in [&silent_addr, &full_addr] {
        let answer = resolve(&server, subscribe_big(addr)).await.unwrap();
        assert_eq!(answer, unread(&out_of_time(addr)));
    }
    // Both in one request: read side by side, each named in its own error.
    let mut both = subscribe_big(&silent_addr);
    both.catalogs.push(Catalog {
        name: "full".into(),
        namespace: "olm".into(),
        address: full_addr.clone(),
        ..Catalog::default()
    });
    let answer = resolve(&server, both).await.unwrap();
    assert_eq!(
        answer.warnings,
        vec![
            format!(
                "catalog fake/olm is left out: {}",
                out_of_time(&silent_addr)
            ),
            format!("catalog full/olm is left out: {}", out_of_time(&full_addr)),
        ]
    );
}

#[tokio::test]
async fn a_closed_port_fails_at_once_naming_the_address() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let server = primary(&[&closed], &[]).await;
    let answer = resolve(&server, subscribe_big(&closed)).await.unwrap();
    let error = format!(
        "catalog server {closed} cannot be reached: transport error: tcp connect error: \
         Connection refused (os error 111)"
    );
    assert_eq!(answer, unread(&error));
}

/// The install plan of a bundle without an image holds its manifests; a catalog server that
/// does not send them leaves the plan unmade for now: UNAVAILABLE (another try may
/// succeed), not FAILED_PRECONDITION, which says the catalogs rule the answer out.
#[tokio::test]
async fn manifests_a_catalog_server_does_not_send_are_unavailable() {
    let fake = fake(Bundles::Imageless).await;
    let server = primary(&[&fake.addr], &[]).await;
    let status = resolve(&server, subscribe_big(&fake.addr))
        .await
        .unwrap_err();
    let message = format!(
        "failed to turn bundle into steps: catalog server {} failed GetBundle: not in this fake",
        fake.addr
    );
    assert_eq!(
        (status.code(), status.message()),
        (Code::Unavailable, message.as_str())
    );
}

const WAITERS: usize = 8;

/// Sends [`WAITERS`] requests for the fake's catalog at once and releases the fake's
/// ListBundles once all but the first wait for the read the first started.
async fn concurrent(
    server: &Server,
    fake: &FakeServer,
    release: &watch::Sender<bool>,
) -> Vec<ResolveResponse> {
    let client = ResolutionClient::new(server.channel().await);
    let requests: Vec<_> = (0..WAITERS)
        .map(|_| {
            let mut client = client.clone();
            let request = subscribe_big(&fake.addr);
            tokio::spawn(async move { client.resolve(request).await })
        })
        .collect();
    server
        .wait_for_log_lines(
            "waiting for the read of this catalog under way",
            WAITERS - 1,
        )
        .await;
    release.send_replace(true);
    let mut answers = Vec::with_capacity(WAITERS);
    for r in requests {
        answers.push(r.await.unwrap().unwrap().into_inner());
    }
    answers
}

#[tokio::test]
async fn concurrent_requests_for_one_catalog_share_one_read() {
    let (release, held) = watch::channel(false);
    let fake = fake(Bundles::Held {
        release: held,
        fail: false,
    })
    .await;
    let server = primary(&[&fake.addr], &[]).await;
    let answers = concurrent(&server, &fake, &release).await;
    let image = "registry.example.com/big-bundle:v1.0.0";
    let installed = ResolveResponse {
        mode: Mode::Classic as i32,
        namespace: "operators".into(),
        results: vec![Answer {
            request: "big-stable".into(),
            package: "big".into(),
            bundle: Some(ChosenBundle {
                name: "big.v1.0.0".into(),
                version: "1.0.0".into(),
                channel: "stable".into(),
                catalog: "fake/olm".into(),
                image: image.into(),
                ..ChosenBundle::default()
            }),
            path: vec![Step {
                to: "big.v1.0.0".into(),
                version: "1.0.0".into(),
                image: image.into(),
                ..Step::default()
            }],
            ..Answer::default()
        }],
        install_plan: Some(InstallPlan {
            bundle_lookups: vec![BundleLookup {
                identifier: "big.v1.0.0".into(),
                path: image.into(),
                catalog: "fake/olm".into(),
                properties: r#"{"properties":[{"type":"olm.package","value":{"packageName":"big","version":"1.0.0"}}]}"#.into(),
                ..BundleLookup::default()
            }],
            updated_subscriptions: vec![UpdatedSubscription {
                name: "big-stable".into(),
                current_csv: "big.v1.0.0".into(),
                ..UpdatedSubscription::default()
            }],
            ..InstallPlan::default()
        }),
        ..ResolveResponse::default()
    };
    assert_eq!(answers, vec![installed; WAITERS]);
    assert_eq!(fake.list_bundles_calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn concurrent_requests_share_a_failed_read_and_the_next_request_reads_again() {
    let (release, held) = watch::channel(false);
    let fake = fake(Bundles::Held {
        release: held,
        fail: true,
    })
    .await;
    let server = primary(&[&fake.addr], &[]).await;
    let answers = concurrent(&server, &fake, &release).await;
    let error = format!(
        "catalog server {} failed ListBundles: the fake is down (Unavailable)",
        fake.addr
    );
    assert_eq!(answers, vec![unread(&error); WAITERS]);
    assert_eq!(fake.list_bundles_calls.load(Ordering::SeqCst), 1);

    let again = resolve(&server, subscribe_big(&fake.addr)).await.unwrap();
    assert_eq!(again, unread(&error));
    assert_eq!(fake.list_bundles_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_address_not_allowed_is_refused_without_connecting() {
    let fake = fake(Bundles::Endless).await;
    let other = fake.addr.replace("127.0.0.1", "localhost");
    // Allowed entries match exactly: the same server by another name is not allowed.
    let server = primary(&[&other], &[]).await;
    let refused = resolve(&server, subscribe_big(&fake.addr))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert_eq!(
        refused.message(),
        format!(
            "catalogs[0].address: {} is not allowed; this server reads only its own catalog \
             and the addresses given with --resolution-allowed-catalogs",
            fake.addr
        )
    );
    assert_eq!(fake.connections.load(Ordering::SeqCst), 0);

    // By default no address at all may be named.
    let closed_by_default = Server::serving(&fixture("resolution/primary"), &[]).await;
    let refused = resolve(&closed_by_default, subscribe_big(&fake.addr))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied);
    assert_eq!(fake.connections.load(Ordering::SeqCst), 0);
}
