//! The resolution service end to end: two `serve` processes, each with its own catalog
//! (tests/fixtures/resolution/{primary,secondary}); requests go to the primary, which reads
//! its own catalog and the secondary's over api.Registry.

use crate::common::{Server, fixture};
use api::resolution::resolution_client::ResolutionClient;
use api::resolution::{
    BundleLookup, Catalog, ChosenBundle, ClusterCrd, ClusterFacts, GroupVersionKind, InstallPlan,
    InstalledCsv, Mode, OpenShift, ResolveRequest, ResolveResponse, Result as Answer, Step,
    Subscription, UpdatedSubscription,
};
use prost::Message;
use tonic::Code;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;

struct Pair {
    primary: Server,
    secondary: Server,
}

async fn pair() -> Pair {
    pair_allowing(&[]).await
}

/// The primary may read the secondary and the `other` addresses.
async fn pair_allowing(other: &[&str]) -> Pair {
    let secondary = Server::start(&fixture("resolution/secondary"), &[]);
    let allowed = [&[secondary.addr.as_str()], other].concat().join(",");
    let catalog = fixture("resolution/primary");
    let flags = ["--resolution-allowed-catalogs", &allowed];
    let (primary, ()) = tokio::join!(
        Server::serving(&catalog, &flags),
        secondary.wait_for_status(ServingStatus::Serving),
    );
    Pair { primary, secondary }
}

impl Pair {
    async fn client(&self) -> ResolutionClient<Channel> {
        ResolutionClient::new(self.primary.channel().await)
    }

    /// The primary's own catalog (priority 10) and the secondary by address (priority 0).
    fn catalogs(&self) -> Vec<Catalog> {
        vec![
            catalog("primary", 10, ""),
            catalog("secondary", 0, &self.secondary.addr),
        ]
    }
}

fn catalog(name: &str, priority: i32, address: &str) -> Catalog {
    Catalog {
        name: name.into(),
        namespace: "olm".into(),
        priority,
        address: address.into(),
        ..Catalog::default()
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

fn csv(
    name: &str,
    provides: Vec<GroupVersionKind>,
    requires: Vec<GroupVersionKind>,
) -> InstalledCsv {
    InstalledCsv {
        name: name.into(),
        version: "1.0.0".into(),
        provided_apis: provides,
        required_apis: requires,
        ..InstalledCsv::default()
    }
}

fn subscription(
    name: &str,
    package: &str,
    channel: &str,
    source: &str,
    installed: &str,
) -> Subscription {
    Subscription {
        name: name.into(),
        package: package.into(),
        channel: channel.into(),
        source: source.into(),
        source_namespace: "olm".into(),
        installed_csv: installed.into(),
        ..Subscription::default()
    }
}

fn classic(
    catalogs: Vec<Catalog>,
    installed: Vec<InstalledCsv>,
    subscriptions: Vec<Subscription>,
) -> ResolveRequest {
    ResolveRequest {
        mode: Mode::Classic as i32,
        namespace: "operators".into(),
        catalogs,
        installed,
        subscriptions,
        ..ResolveRequest::default()
    }
}

/// An upgrade of `request` to `name` from `from`, one step.
fn upgrade(request: &str, package: &str, from: &str, name: &str, catalog: &str) -> Answer {
    let image = format!("registry.example.com/{package}-bundle:v2.0.0");
    Answer {
        request: request.into(),
        package: package.into(),
        bundle: Some(ChosenBundle {
            name: name.into(),
            version: "2.0.0".into(),
            channel: "alpha".into(),
            catalog: catalog.into(),
            image: image.clone(),
            from: from.into(),
            ..ChosenBundle::default()
        }),
        path: vec![Step {
            from: from.into(),
            to: name.into(),
            version: "2.0.0".into(),
            image,
        }],
        ..Answer::default()
    }
}

fn unchanged(request: &str, package: &str, csv: &str) -> Answer {
    Answer {
        request: request.into(),
        package: package.into(),
        unchanged: csv.into(),
        ..Answer::default()
    }
}

/// A classic answer that resolves: its install plan is empty unless the test sets one.
fn response(results: Vec<Answer>) -> ResolveResponse {
    ResolveResponse {
        mode: Mode::Classic as i32,
        namespace: "operators".into(),
        results,
        install_plan: Some(InstallPlan::default()),
        ..ResolveResponse::default()
    }
}

/// The bundle lookup of `name` at version 2.0.0, upgrading `replaces`, with the
/// `olm.package` property followed by `more` (type, value).
fn lookup(name: &str, replaces: &str, catalog: &str, more: &[(&str, &str)]) -> BundleLookup {
    let package = &name[..1];
    let properties: Vec<String> = std::iter::once((
        "olm.package",
        format!(r#"{{"packageName":"{package}","version":"2.0.0"}}"#),
    ))
    .chain(more.iter().map(|(t, v)| (*t, (*v).to_owned())))
    .map(|(t, v)| format!(r#"{{"type":"{t}","value":{v}}}"#))
    .collect();
    BundleLookup {
        identifier: name.into(),
        path: format!("registry.example.com/{package}-bundle:v2.0.0"),
        replaces: replaces.into(),
        catalog: catalog.into(),
        properties: format!(r#"{{"properties":[{}]}}"#, properties.join(",")),
    }
}

fn updated(name: &str, current: &str, installed: &str) -> UpdatedSubscription {
    UpdatedSubscription {
        name: name.into(),
        current_csv: current.into(),
        installed_csv: installed.into(),
    }
}

/// "Version deadlock": a.v1 and b.v1 need each other's APIs, and so do their updates, which
/// live in different catalogs; both upgrade in one resolution.
fn deadlock(pair: &Pair) -> ResolveRequest {
    classic(
        pair.catalogs(),
        vec![
            csv(
                "a.v1",
                vec![gvk("g", "v", "k")],
                vec![gvk("g2", "v2", "k2")],
            ),
            csv(
                "b.v1",
                vec![gvk("g2", "v2", "k2")],
                vec![gvk("g", "v", "k")],
            ),
        ],
        vec![
            subscription("a-alpha", "a", "alpha", "primary", "a.v1"),
            subscription("b-alpha", "b", "alpha", "secondary", "b.v1"),
        ],
    )
}

#[tokio::test]
async fn version_deadlock_upgrades_both_operators_in_one_resolution() {
    let pair = pair().await;
    let answer = pair
        .client()
        .await
        .resolve(deadlock(&pair))
        .await
        .unwrap()
        .into_inner();
    let gvk = |n: u8| format!(r#"{{"group":"g{n}","kind":"k{n}","version":"v{n}"}}"#);
    let (g3, g4) = (gvk(3), gvk(4));
    assert_eq!(
        answer,
        ResolveResponse {
            install_plan: Some(InstallPlan {
                steps: vec![],
                bundle_lookups: vec![
                    lookup(
                        "a.v2",
                        "a.v1",
                        "primary/olm",
                        &[("olm.gvk", &g3), ("olm.gvk.required", &g4)]
                    ),
                    lookup(
                        "b.v2",
                        "b.v1",
                        "secondary/olm",
                        &[("olm.gvk", &g4), ("olm.gvk.required", &g3)]
                    ),
                ],
                updated_subscriptions: vec![
                    updated("a-alpha", "a.v2", "a.v1"),
                    updated("b-alpha", "b.v2", "b.v1"),
                ],
            }),
            ..response(vec![
                upgrade("a-alpha", "a", "a.v1", "a.v2", "primary/olm"),
                upgrade("b-alpha", "b", "b.v1", "b.v2", "secondary/olm"),
            ])
        }
    );
}

#[tokio::test]
async fn deprecating_a_dependent_api_keeps_its_provider() {
    let pair = pair().await;
    let mut client = pair.client().await;
    let api = |kind: &str| gvk(&format!("{}.example.com", kind.to_lowercase()), "v1", kind);
    let y = || subscription("y-stable", "y", "stable", "secondary", "y.v1");
    // x.v1 (no subscription, so it stays) needs API B; y.v2 would drop B for C.
    let request = classic(
        pair.catalogs(),
        vec![
            csv("x.v1", vec![api("A")], vec![api("B")]),
            csv("y.v1", vec![api("B")], vec![]),
        ],
        vec![y()],
    );
    let answer = client.resolve(request).await.unwrap().into_inner();
    assert_eq!(answer, response(vec![unchanged("y-stable", "y", "y.v1")]));

    // Without x.v1 nothing needs B, and y upgrades.
    let request = classic(
        pair.catalogs(),
        vec![csv("y.v1", vec![api("B")], vec![])],
        vec![y()],
    );
    let answer = client.resolve(request).await.unwrap().into_inner();
    let mut up = upgrade("y-stable", "y", "y.v1", "y.v2", "secondary/olm");
    if let Some(b) = up.bundle.as_mut() {
        b.channel = "stable".into();
    }
    let c = r#"{"group":"c.example.com","kind":"C","version":"v1"}"#;
    assert_eq!(
        answer,
        ResolveResponse {
            install_plan: Some(InstallPlan {
                steps: vec![],
                bundle_lookups: vec![lookup("y.v2", "y.v1", "secondary/olm", &[("olm.gvk", c)])],
                updated_subscriptions: vec![updated("y-stable", "y.v2", "y.v1")],
            }),
            ..response(vec![up])
        }
    );
}

#[tokio::test]
async fn the_same_request_gives_byte_identical_responses() {
    let pair = pair().await;
    let mut client = pair.client().await;
    let request = deadlock(&pair);
    let first = client
        .resolve(request.clone())
        .await
        .unwrap()
        .into_inner()
        .encode_to_vec();
    for _ in 1..100 {
        let again = client.resolve(request.clone()).await.unwrap().into_inner();
        assert_eq!(again.encode_to_vec(), first);
    }
}

#[tokio::test]
async fn an_unreachable_catalog_fails_only_the_subscriptions_that_need_it() {
    // A port that was free a moment ago: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let pair = pair_allowing(&[&closed]).await;
    let mut request = deadlock(&pair);
    request.catalogs[1].address = closed.clone();
    // Without b's update, a.v2 (which needs b.v2's API) cannot be taken either.
    let answer = pair
        .client()
        .await
        .resolve(request)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.results.len(), 2, "{answer:?}");
    assert_eq!(answer.results[0], unchanged("a-alpha", "a", "a.v1"));
    let b = &answer.results[1];
    assert_eq!(
        (b.request.as_str(), b.unchanged.as_str()),
        ("b-alpha", "b.v1")
    );
    let want = format!(
        "its catalog secondary/olm cannot be read: catalog server {closed} cannot be reached: "
    );
    assert!(b.error.starts_with(&want), "{}", b.error);
    assert_eq!(answer.warnings.len(), 1);
    assert!(
        answer.warnings[0].starts_with(&format!(
            "catalog secondary/olm is left out: catalog server {closed} cannot be reached: "
        )),
        "{}",
        answer.warnings[0]
    );

    // A subscription to the primary alone still upgrades.
    let request = classic(
        vec![catalog("primary", 10, ""), catalog("secondary", 0, &closed)],
        vec![csv(
            "c.v1",
            vec![gvk("c.example.com", "v1alpha1", "Cache")],
            vec![],
        )],
        vec![subscription("c-stable", "c", "stable", "primary", "c.v1")],
    );
    let answer = pair
        .client()
        .await
        .resolve(request)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.results.len(), 1);
    assert_eq!(
        answer.results[0].bundle.as_ref().map(|b| b.name.as_str()),
        Some("c.v2")
    );
}

#[tokio::test]
async fn invalid_requests_are_refused_naming_the_field() {
    let pair = pair().await;
    let mut client = pair.client().await;
    let mut no_mode = deadlock(&pair);
    no_mode.mode = Mode::Unspecified as i32;
    let mut no_package = deadlock(&pair);
    no_package.subscriptions[1].package.clear();
    let mut no_namespace = deadlock(&pair);
    no_namespace.namespace.clear();
    let mut bad_property = deadlock(&pair);
    bad_property.installed[0].properties = Some(api::resolution::PropertiesAnnotation {
        properties: vec![api::resolution::Property {
            r#type: "olm.gvk".into(),
            value: "{".into(),
        }],
    });
    let mut same_name = deadlock(&pair);
    same_name.catalogs[1].name = "primary".into();
    // The cluster's version is the request's (it was FAILED_PRECONDITION, as if the
    // catalogs were at fault).
    let mut bad_version = deadlock(&pair);
    bad_version.cluster = Some(ClusterFacts {
        openshift_version: "four".into(),
        ..ClusterFacts::default()
    });
    for (request, message) in [
        (no_mode, "mode: required (MODE_CLASSIC or MODE_V1)"),
        (no_package, "subscriptions[1].package: required"),
        (no_namespace, "namespace: required in classic mode"),
        (
            bad_property,
            "installed[0].properties.properties[0].value: not JSON: EOF while parsing an object at line 1 column 1",
        ),
        (
            same_name,
            "catalogs[1].name: \"primary\" is also the name of catalogs[0]",
        ),
        (
            bad_version,
            "cluster.openshiftVersion: failed to parse cluster version \"four\": \
             Invalid character(s) found in major number \"0four\"",
        ),
    ] {
        let status = client.resolve(request).await.unwrap_err();
        assert_eq!(
            (status.code(), status.message()),
            (Code::InvalidArgument, message)
        );
    }
}

#[tokio::test]
async fn cluster_facts_refuse_a_crd_drop_and_report_openshift_upgrades() {
    let pair = pair().await;
    let mut request = classic(
        pair.catalogs(),
        vec![csv(
            "c.v1",
            vec![gvk("c.example.com", "v1alpha1", "Cache")],
            vec![],
        )],
        vec![subscription("c-stable", "c", "stable", "primary", "c.v1")],
    );
    request.cluster = Some(ClusterFacts {
        openshift_version: "4.16.2".into(),
        crds: vec![ClusterCrd {
            name: "caches.c.example.com".into(),
            served_versions: vec!["v1alpha1".into()],
            stored_versions: vec!["v1alpha1".into()],
        }],
        ..ClusterFacts::default()
    });
    let answer = pair
        .client()
        .await
        .resolve(request.clone())
        .await
        .unwrap()
        .into_inner();
    let mut want = response(vec![Answer {
        refused: vec!["c.v2 from primary/olm: its CRD caches.c.example.com drops version v1alpha1, which is still served by the cluster and still in its status.storedVersions".into()],
        ..unchanged("c-stable", "c", "c.v1")
    }]);
    want.openshift = Some(OpenShift {
        cluster_version: "4.16.2".into(),
        upgrade_blocked: false,
        blockers: vec![],
    });
    assert_eq!(answer, want);

    // Once the objects are migrated off v1alpha1 (stored only as v1), the step is safe; c.v2
    // caps OpenShift at 4.16, so it blocks the cluster's next minor upgrade.
    if let Some(c) = request.cluster.as_mut() {
        c.crds[0].served_versions = vec!["v1".into()];
        c.crds[0].stored_versions = vec!["v1".into()];
    }
    let answer = pair
        .client()
        .await
        .resolve(request)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        answer.results[0].bundle.as_ref().map(|b| b.name.as_str()),
        Some("c.v2")
    );
    assert_eq!(
        answer.openshift,
        Some(OpenShift {
            cluster_version: "4.16.2".into(),
            upgrade_blocked: true,
            blockers: vec![
                "c.v2 blocks the upgrade to OpenShift 4.17: its olm.maxOpenShiftVersion is 4.16"
                    .into()
            ],
        })
    );
}

#[tokio::test]
async fn reflection_describes_the_resolution_service() {
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let server = Server::serving(&fixture("resolution/primary"), &[]).await;
    let mut client = ServerReflectionClient::new(server.channel().await);
    let req = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::FileContainingSymbol(
            "olmregistry.resolution.v1.Resolution".into(),
        )),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter(vec![req]))
        .await
        .unwrap()
        .into_inner();
    let Some(MessageResponse::FileDescriptorResponse(files)) =
        responses.message().await.unwrap().unwrap().message_response
    else {
        panic!("no file descriptor");
    };
    let file = files
        .file_descriptor_proto
        .iter()
        .map(|b| prost_types::FileDescriptorProto::decode(b.as_slice()).unwrap())
        .find(|f| f.package() == "olmregistry.resolution.v1")
        .expect("the resolution file");
    let methods: Vec<_> = file.service[0]
        .method
        .iter()
        .map(|m| (m.name(), m.input_type(), m.output_type()))
        .collect();
    assert_eq!(
        methods,
        [(
            "Resolve",
            ".olmregistry.resolution.v1.ResolveRequest",
            ".olmregistry.resolution.v1.ResolveResponse"
        )]
    );
}

/// The catalogs a namespace resolves from are its own and the global namespace's (`olm`
/// unless the request names another, none when excluded); a subscription to any other
/// catalog finds nothing, in OLM's words, and the answer says why.
#[tokio::test]
async fn catalogs_outside_the_resolution_namespaces_are_invisible() {
    let pair = pair().await;
    let mut client = pair.client().await;
    let c = || {
        (
            vec![csv(
                "c.v1",
                vec![gvk("c.example.com", "v1alpha1", "Cache")],
                vec![],
            )],
            vec![subscription("c-stable", "c", "stable", "primary", "c.v1")],
        )
    };
    let (installed, subscriptions) = c();
    let mut request = classic(pair.catalogs(), installed, subscriptions);
    request.global_namespace = "openshift-marketplace".into();
    let answer = client.resolve(request).await.unwrap().into_inner();
    let rule = "OLM resolves only from catalogs of the namespace itself and of the global catalog namespace openshift-marketplace";
    assert_eq!(
        answer,
        ResolveResponse {
            mode: Mode::Classic as i32,
            namespace: "operators".into(),
            unsatisfiable: Some(api::resolution::Unsatisfiable {
                messages: vec![
                    "no operators found from catalog primary in namespace olm referenced by subscription c-stable".into(),
                    "subscription c-stable exists".into(),
                ],
            }),
            warnings: vec![
                format!("catalog primary/olm is not visible from namespace operators: {rule}"),
                format!("catalog secondary/olm is not visible from namespace operators: {rule}"),
            ],
            ..ResolveResponse::default()
        }
    );

    // The namespace's own catalog stays visible when the global namespace is excluded.
    let (installed, mut subscriptions) = c();
    subscriptions[0].source_namespace = "operators".into();
    let mut catalogs = pair.catalogs();
    catalogs[0].namespace = "operators".into();
    let mut request = classic(catalogs, installed, subscriptions);
    request.exclude_global_namespace_resolution = true;
    let answer = client.resolve(request).await.unwrap().into_inner();
    assert_eq!(
        answer.warnings,
        [
            "catalog secondary/olm is not visible from namespace operators: OLM resolves only from catalogs of the namespace itself (its OperatorGroup excludes the global catalog namespace olm)"
        ]
    );
    assert_eq!(
        answer.results[0]
            .bundle
            .as_ref()
            .map(|b| (b.name.as_str(), b.catalog.as_str())),
        Some(("c.v2", "primary/operators"))
    );
}
