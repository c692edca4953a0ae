//! The acceptance vectors of registry-api.md §10 (Datasets M, D and C), against the real
//! binary over gRPC. They read the upstream corpora in ../shared and say so loudly when absent.
#![allow(deprecated)] // GetBundleForChannel is deprecated upstream, and still served.

use crate::common::{Server, collect, list_order_key, package_names, shared_testdata};
use api::*;
use sha2::{Digest, Sha256};
use tonic::Code;

fn entry(pkg: &str, channel: &str, bundle: &str, replaces: &str) -> ChannelEntry {
    ChannelEntry {
        package_name: pkg.into(),
        channel_name: channel.into(),
        bundle_name: bundle.into(),
        replaces: replaces.into(),
    }
}

fn sorted(mut v: Vec<ChannelEntry>) -> Vec<(String, String, String, String)> {
    let mut out: Vec<_> = v
        .drain(..)
        .map(|e| (e.package_name, e.channel_name, e.bundle_name, e.replaces))
        .collect();
    out.sort();
    out
}

fn gvk(g: &str, v: &str, k: &str) -> GroupVersionKind {
    GroupVersionKind {
        group: g.into(),
        version: v.into(),
        kind: k.into(),
        plural: String::new(),
    }
}

fn prop(t: &str, v: &str) -> Property {
    Property {
        r#type: t.into(),
        value: v.into(),
    }
}

const ETCD_GROUP: &str = "etcd.database.coreos.com";

/// The reference bundle E(ch) of §10.1, as served by point lookups (trimmed).
fn assert_etcd_v092(b: &Bundle, channel: &str) {
    assert_eq!(b.csv_name, "etcdoperator.v0.9.2");
    assert_eq!(b.package_name, "etcd");
    assert_eq!(b.channel_name, channel);
    // This corpus was migrated by v1.26.4, which leaves every image empty.
    assert_eq!(b.bundle_path, "");
    assert_eq!(b.version, "0.9.2");
    assert_eq!(b.skip_range, "< 0.6.0");
    let mut provided: Vec<_> = b
        .provided_apis
        .iter()
        .map(|g| {
            (
                g.group.clone(),
                g.version.clone(),
                g.kind.clone(),
                g.plural.clone(),
            )
        })
        .collect();
    provided.sort();
    assert_eq!(
        provided,
        ["EtcdBackup", "EtcdCluster", "EtcdRestore"].map(|k| (
            ETCD_GROUP.to_string(),
            "v1beta2".to_string(),
            k.to_string(),
            String::new()
        ))
    );
    assert_eq!(b.required_apis, [gvk(ETCD_GROUP, "v1beta2", "EtcdCluster")]);
    assert_eq!(
        b.dependencies,
        [Dependency {
            r#type: "olm.gvk".into(),
            value:
                r#"{"group":"etcd.database.coreos.com","kind":"EtcdCluster","version":"v1beta2"}"#
                    .into()
        }]
    );
    let mut props: Vec<_> = b
        .properties
        .iter()
        .map(|p| (p.r#type.clone(), p.value.clone()))
        .collect();
    props.sort();
    let gvk_value = |k: &str| {
        format!(r#"{{"group":"etcd.database.coreos.com","kind":"{k}","version":"v1beta2"}}"#)
    };
    let mut want = vec![
        (
            "olm.package".to_string(),
            r#"{"packageName":"etcd","version":"0.9.2"}"#.to_string(),
        ),
        ("olm.gvk".into(), gvk_value("EtcdBackup")),
        ("olm.gvk".into(), gvk_value("EtcdCluster")),
        ("olm.gvk".into(), gvk_value("EtcdRestore")),
        ("olm.label".into(), r#"{"label":"testlabel"}"#.into()),
        ("olm.label".into(), r#"{"label":"testlabel1"}"#.into()),
        ("other".into(), r#"{"its":"notdefined"}"#.into()),
        ("olm.gvk.required".into(), gvk_value("EtcdCluster")),
    ];
    want.sort();
    assert_eq!(props, want);
    // The spec's vector (16069 bytes, ce8380381d33ecf3…) comes from the manifests/ tree; this
    // FBC rendering of it carries an older CSV whose description is 24 characters longer. What
    // matters is that the manifest is served byte for byte as the catalog holds it.
    assert_eq!(b.csv_json.len(), 16093);
    let digest = Sha256::digest(b.csv_json.as_bytes());
    assert!(
        format!("{digest:x}").starts_with("d58eefa4391d460d"),
        "csvJson digest {digest:x}"
    );
    assert!(
        b.csv_json.contains(r#"\u003c"#),
        "HTML escapes are kept as written"
    );
    let mut objects: Vec<_> = b.object.iter().map(|o| o.len()).collect();
    objects.sort();
    assert_eq!(objects, [328, 333, 366, 16093]);
    assert!(b.object.contains(&b.csv_json));
    for crd in b.object.iter().filter(|o| **o != b.csv_json) {
        assert!(
            crd.starts_with(
                r#"{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"CustomResourceDefinition","#
            ),
            "{crd}"
        );
    }
}

fn assert_trimmed(b: &Bundle) {
    assert_eq!(b.replaces, "");
    assert!(b.skips.is_empty());
}

fn unknown(status: tonic::Status, message: &str) {
    assert_eq!(status.code(), Code::Unknown, "{status:?}");
    assert_eq!(status.message(), message);
}

#[tokio::test]
async fn dataset_m_manifests() {
    let Some(catalog) = shared_testdata("upstream/manifests-fbc") else {
        return;
    };
    let server = Server::serving(&catalog, &[]).await;
    let mut c = server.client().await;

    // M1
    let mut names = package_names(&mut c).await;
    names.sort();
    assert_eq!(names, ["etcd", "prometheus", "strimzi-kafka-operator"]);

    // M2
    let p = c
        .get_package(GetPackageRequest {
            name: "etcd".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(p.name, "etcd");
    assert_eq!(p.default_channel_name, "alpha");
    assert_eq!(p.deprecation, None);
    let channels: Vec<_> = p
        .channels
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.csv_name.as_str(),
                c.deprecation.is_some(),
            )
        })
        .collect();
    assert_eq!(
        channels,
        [
            ("alpha", "etcdoperator.v0.9.2", false),
            ("beta", "etcdoperator.v0.9.0", false),
            ("stable", "etcdoperator.v0.9.2", false)
        ]
    );

    // M3
    let b = c
        .get_bundle(GetBundleRequest {
            pkg_name: "etcd".into(),
            channel_name: "alpha".into(),
            csv_name: "etcdoperator.v0.9.2".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_etcd_v092(&b, "alpha");
    assert_trimmed(&b);

    // M4
    let head = c
        .get_bundle_for_channel(GetBundleInChannelRequest {
            pkg_name: "etcd".into(),
            channel_name: "alpha".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(head, b);

    // M5
    let entries = collect(
        c.get_channel_entries_that_replace(GetAllReplacementsRequest {
            csv_name: "etcdoperator.v0.6.1".into(),
        })
        .await
        .unwrap()
        .into_inner(),
    )
    .await;
    assert_eq!(
        sorted(entries),
        sorted(
            ["alpha", "beta", "stable"]
                .map(|ch| entry("etcd", ch, "etcdoperator.v0.9.0", "etcdoperator.v0.6.1"))
                .to_vec()
        )
    );

    // M6, M7: a real replaces edge and a "synthetic" one through skips.
    for replaced in ["etcdoperator.v0.9.0", "etcdoperator.v0.9.1"] {
        let b = c
            .get_bundle_that_replaces(GetReplacementRequest {
                csv_name: replaced.into(),
                pkg_name: "etcd".into(),
                channel_name: "alpha".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_etcd_v092(&b, "alpha");
        assert_trimmed(&b);
    }

    // M8
    let provide = GetAllProvidersRequest {
        group: ETCD_GROUP.into(),
        version: "v1beta2".into(),
        kind: "EtcdCluster".into(),
        plural: String::new(),
    };
    let entries = collect(
        c.get_channel_entries_that_provide(provide)
            .await
            .unwrap()
            .into_inner(),
    )
    .await;
    let v = |s: &str| format!("etcdoperator.v{s}");
    let mut want = Vec::new();
    for ch in ["alpha", "beta", "stable"] {
        want.push(entry("etcd", ch, &v("0.6.1"), ""));
        want.push(entry("etcd", ch, &v("0.9.0"), &v("0.6.1")));
        if ch != "beta" {
            want.push(entry("etcd", ch, &v("0.9.2"), &v("0.9.1")));
            want.push(entry("etcd", ch, &v("0.9.2"), &v("0.9.0")));
        }
    }
    assert_eq!(sorted(entries), sorted(want));

    // M9
    let latest = GetLatestProvidersRequest {
        group: ETCD_GROUP.into(),
        version: "v1beta2".into(),
        kind: "EtcdCluster".into(),
        plural: String::new(),
    };
    let entries = collect(
        c.get_latest_channel_entries_that_provide(latest)
            .await
            .unwrap()
            .into_inner(),
    )
    .await;
    assert_eq!(
        sorted(entries),
        sorted(vec![
            entry("etcd", "alpha", &v("0.9.2"), &v("0.9.0")),
            entry("etcd", "beta", &v("0.9.0"), &v("0.6.1")),
            entry("etcd", "stable", &v("0.9.2"), &v("0.9.0")),
        ])
    );

    // M10
    let default = GetDefaultProviderRequest {
        group: ETCD_GROUP.into(),
        version: "v1beta2".into(),
        kind: "EtcdCluster".into(),
        plural: String::new(),
    };
    let b = c
        .get_default_bundle_that_provides(default)
        .await
        .unwrap()
        .into_inner();
    assert_etcd_v092(&b, "alpha");
    assert_trimmed(&b);

    // M11: every per-channel bundle, in (channel, package, name) order, with replaces and skips;
    // bundlePath is empty in this corpus, so manifests stay in.
    let all = collect(
        c.list_bundles(ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner(),
    )
    .await;
    assert_eq!(all.len(), 20);
    let keys: Vec<_> = all.iter().map(list_order_key).collect();
    let mut in_order = keys.clone();
    in_order.sort();
    assert_eq!(keys, in_order);
    let mut names: Vec<_> = all.iter().map(|b| b.csv_name.as_str()).collect();
    names.sort();
    let mut want: Vec<&str> = Vec::new();
    for (name, n) in [
        ("etcdoperator.v0.6.1", 3),
        ("etcdoperator.v0.9.0", 3),
        ("etcdoperator.v0.9.2", 2),
        ("prometheusoperator.0.22.2", 1),
        ("prometheusoperator.0.15.0", 1),
        ("prometheusoperator.0.14.0", 1),
        ("strimzi-cluster-operator.v0.11.0", 3),
        ("strimzi-cluster-operator.v0.11.1", 3),
        ("strimzi-cluster-operator.v0.12.1", 2),
        ("strimzi-cluster-operator.v0.12.2", 1),
    ] {
        want.extend(std::iter::repeat_n(name, n));
    }
    want.sort();
    assert_eq!(names, want);
    for b in all.iter().filter(|b| b.csv_name == "etcdoperator.v0.9.2") {
        assert_eq!(b.replaces, "etcdoperator.v0.9.0");
        assert_eq!(b.skips, ["etcdoperator.v0.9.1"]);
        let mut trimmed = b.clone();
        trimmed.replaces.clear();
        trimmed.skips.clear();
        assert_etcd_v092(&trimmed, &b.channel_name);
    }

    // M12–M18: errors, all UNKNOWN with upstream's texts.
    unknown(
        c.get_package(GetPackageRequest {
            name: "nope".into(),
        })
        .await
        .unwrap_err(),
        r#"package "nope" not found"#,
    );
    unknown(
        c.get_bundle(GetBundleRequest {
            pkg_name: "etcd".into(),
            channel_name: "alpha".into(),
            csv_name: "nope".into(),
        })
        .await
        .unwrap_err(),
        r#"package "etcd", channel "alpha", bundle "nope" not found"#,
    );
    unknown(
        c.get_bundle(GetBundleRequest {
            pkg_name: "nope".into(),
            channel_name: "alpha".into(),
            csv_name: "x".into(),
        })
        .await
        .unwrap_err(),
        r#"package "nope" not found"#,
    );
    unknown(
        c.get_bundle(GetBundleRequest {
            pkg_name: "etcd".into(),
            channel_name: "nope".into(),
            csv_name: "x".into(),
        })
        .await
        .unwrap_err(),
        r#"package "etcd", channel "nope" not found"#,
    );
    unknown(
        c.get_bundle_for_channel(GetBundleInChannelRequest {
            pkg_name: "etcd".into(),
            channel_name: "nope".into(),
        })
        .await
        .unwrap_err(),
        r#"package "etcd", channel "nope" not found"#,
    );
    unknown(
        c.get_bundle_that_replaces(GetReplacementRequest {
            csv_name: "etcdoperator.v0.9.2".into(),
            pkg_name: "etcd".into(),
            channel_name: "alpha".into(),
        })
        .await
        .unwrap_err(),
        r#"no entry found for package "etcd", channel "alpha""#,
    );
    unknown(
        c.get_bundle_that_replaces(GetReplacementRequest {
            csv_name: "x".into(),
            pkg_name: "nope".into(),
            channel_name: "nope".into(),
        })
        .await
        .unwrap_err(),
        "package nope not found",
    );
    // M16: the FBC server reports a skipping bundle with its real replaces.
    let entries = collect(
        c.get_channel_entries_that_replace(GetAllReplacementsRequest {
            csv_name: "etcdoperator.v0.9.1".into(),
        })
        .await
        .unwrap()
        .into_inner(),
    )
    .await;
    assert_eq!(
        sorted(entries),
        sorted(vec![
            entry("etcd", "alpha", &v("0.9.2"), &v("0.9.0")),
            entry("etcd", "stable", &v("0.9.2"), &v("0.9.0")),
        ])
    );
    unknown(
        c.get_channel_entries_that_replace(GetAllReplacementsRequest {
            csv_name: "nope".into(),
        })
        .await
        .unwrap_err(),
        "no channel entries found that replace nope",
    );
    let missing = r#"no channel entries found that provide group:"a" version:"b" kind:"c""#;
    unknown(
        c.get_channel_entries_that_provide(GetAllProvidersRequest {
            group: "a".into(),
            version: "b".into(),
            kind: "c".into(),
            plural: String::new(),
        })
        .await
        .unwrap_err(),
        missing,
    );
    unknown(
        c.get_latest_channel_entries_that_provide(GetLatestProvidersRequest {
            group: "a".into(),
            version: "b".into(),
            kind: "c".into(),
            plural: String::new(),
        })
        .await
        .unwrap_err(),
        missing,
    );
    unknown(
        c.get_default_bundle_that_provides(GetDefaultProviderRequest {
            group: "a".into(),
            version: "b".into(),
            kind: "c".into(),
            plural: String::new(),
        })
        .await
        .unwrap_err(),
        missing,
    );

    // M19
    let mut health = server.health().await;
    for service in ["", "foo", "Registry"] {
        let status = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner()
            .status;
        assert_eq!(
            status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
            "service {service:?}"
        );
    }
}

#[tokio::test]
async fn dataset_d_deprecations() {
    let Some(catalog) = shared_testdata("upstream/deprecations-fbc") else {
        return;
    };
    let server = Server::serving(&catalog, &[]).await;
    let mut c = server.client().await;

    let names = package_names(&mut c).await;
    assert_eq!(names, ["cockroachdb"]);

    let p = c
        .get_package(GetPackageRequest {
            name: "cockroachdb".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(p.default_channel_name, "stable-v6.x");
    assert_eq!(
        p.deprecation,
        Some(Deprecation { message: "package cockroachdb is end of life.  Please use 'nouveau-cockroachdb' package for support.\n".into() })
    );
    assert_eq!(
        p.channels,
        [
            Channel {
                name: "stable-5.x".into(),
                csv_name: "cockroachdb.v5.0.4".into(),
                deprecation: Some(Deprecation { message: "channel stable-5.x is no longer supported.  Please switch to channel 'stable-6.x'.\n".into() }),
            },
            Channel { name: "stable-v6.x".into(), csv_name: "cockroachdb.v6.0.0".into(), deprecation: None },
        ]
    );

    let b = c
        .get_bundle(GetBundleRequest {
            pkg_name: "cockroachdb".into(),
            channel_name: "stable-5.x".into(),
            csv_name: "cockroachdb.v5.0.4".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        b,
        Bundle {
            csv_name: "cockroachdb.v5.0.4".into(),
            package_name: "cockroachdb".into(),
            channel_name: "stable-5.x".into(),
            bundle_path: "quay.io/openshift-community-operators/cockroachdb@sha256:f42337e7b85a46d83c94694638e2312e10ca16a03542399a65ba783c94a32b63".into(),
            provided_apis: vec![gvk("charts.operatorhub.io", "v1alpha1", "Cockroachdb")],
            version: "5.0.4".into(),
            properties: vec![
                prop("olm.gvk", r#"{"group":"charts.operatorhub.io","kind":"Cockroachdb","version":"v1alpha1"}"#),
                prop("olm.package", r#"{"packageName":"cockroachdb","version":"5.0.4"}"#),
            ],
            ..Default::default()
        }
    );

    // The deprecated bundle carries its message in every channel copy.
    let b = c
        .get_bundle(GetBundleRequest {
            pkg_name: "cockroachdb".into(),
            channel_name: "stable-5.x".into(),
            csv_name: "cockroachdb.v5.0.3".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        b.deprecation,
        Some(Deprecation { message: "cockroachdb.v5.0.3 is deprecated. Uninstall and install cockroachdb.v5.0.4 for support.\n".into() })
    );

    let entries = collect(
        c.get_channel_entries_that_replace(GetAllReplacementsRequest {
            csv_name: "cockroachdb.v5.0.3".into(),
        })
        .await
        .unwrap()
        .into_inner(),
    )
    .await;
    assert_eq!(
        entries,
        [entry(
            "cockroachdb",
            "stable-5.x",
            "cockroachdb.v5.0.4",
            "cockroachdb.v5.0.3"
        )]
    );
}

async fn custom(
    c: &mut experimental_registry_client::ExperimentalRegistryClient<tonic::transport::Channel>,
    schema: &str,
    package: &str,
    acknowledge: bool,
) -> Result<Vec<prost_types::Struct>, tonic::Status> {
    let mut req = tonic::Request::new(ExperimentalListPackageCustomSchemasRequest {
        schema: schema.into(),
        package_name: package.into(),
    });
    if acknowledge {
        req.metadata_mut()
            .insert("x-acknowledge-experimental", "true".parse().unwrap());
    }
    let stream = c
        .experimental_list_package_custom_schemas(req)
        .await?
        .into_inner();
    Ok(collect(stream).await)
}

fn string_field<'a>(s: &'a prost_types::Struct, key: &str) -> &'a str {
    match s.fields.get(key).and_then(|v| v.kind.as_ref()) {
        Some(prost_types::value::Kind::StringValue(v)) => v,
        other => panic!("field {key}: {other:?}"),
    }
}

#[tokio::test]
async fn dataset_c_custom_schemas() {
    let Some(catalog) = shared_testdata("upstream/custom-schema-fbc") else {
        return;
    };
    let server = Server::serving(&catalog, &[]).await;
    let mut c =
        experimental_registry_client::ExperimentalRegistryClient::new(server.channel().await);

    let docs = custom(&mut c, "custom.operator.io", "testpkg", true)
        .await
        .unwrap();
    assert_eq!(docs.len(), 2);
    let mut names: Vec<_> = docs.iter().map(|d| string_field(d, "name")).collect();
    names.sort();
    assert_eq!(names, ["another-custom-resource", "my-custom-resource"]);
    for d in &docs {
        assert_eq!(string_field(d, "schema"), "custom.operator.io");
        assert_eq!(string_field(d, "package"), "testpkg");
    }
    assert!(
        custom(&mut c, "custom.operator.io", "nonexistent", true)
            .await
            .unwrap()
            .is_empty()
    );
    let err = custom(&mut c, "", "", true).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(err.message(), "schema is required");
    let err = custom(&mut c, "example.com/v1", "", true)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        err.message(),
        r#"invalid custom schema query: invalid schema "example.com/v1": must match ^[a-zA-Z0-9][a-zA-Z0-9._-]*$"#
    );
    let packageless = custom(&mut c, "custom.packageless", "", true)
        .await
        .unwrap();
    assert_eq!(packageless.len(), 1);
    assert_eq!(string_field(&packageless[0], "name"), "global-config");
    // Built-in schemas are not custom documents; unaware callers see nothing.
    assert!(
        custom(&mut c, "olm.bundle", "testpkg", true)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        custom(&mut c, "custom.operator.io", "testpkg", false)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn list_bundles_strips_manifests_when_bundle_path_is_set() {
    let Some(catalog) = shared_testdata("upstream/bundlepath-fbc") else {
        return;
    };
    let server = Server::serving(&catalog, &[]).await;
    let mut c = server.client().await;
    let all = collect(
        c.list_bundles(ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner(),
    )
    .await;
    let etcd: Vec<_> = all.iter().filter(|b| b.package_name == "etcd").collect();
    assert_eq!(etcd.len(), 8);
    for b in etcd {
        assert!(
            b.bundle_path.starts_with("quay.io/olmtest/example-bundle:"),
            "{}",
            b.bundle_path
        );
        assert_eq!(b.csv_json, "");
        assert!(b.object.is_empty());
    }
    // Point lookups still carry the manifests.
    let b = c
        .get_bundle(GetBundleRequest {
            pkg_name: "etcd".into(),
            channel_name: "alpha".into(),
            csv_name: "etcdoperator.v0.9.2".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(b.object.len(), 4);
    assert!(b.csv_json.contains("\"kind\":\"ClusterServiceVersion\""));
}
