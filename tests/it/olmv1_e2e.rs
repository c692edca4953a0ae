//! OLM v1's operator-controller installing and upgrading from `olm-registry catalogd` on a real
//! control plane (`common::olmv1`), with real bundles (`../shared/testdata/real/bundles/etcd`:
//! 0.6.1, 0.9.0, 0.9.2-clusterwide and 0.9.4-clusterwide, every one AllNamespaces with v1 CRDs)
//! as images in a loopback registry, in two ClusterCatalogs told apart by a label.
//!
//! The bundles share their CRDs, so one ClusterExtension walks through the scenarios by
//! editing its spec: an exact version (a deprecated bundle), a range that pins below the head,
//! a channel, no selector (ambiguous between the catalogs), the selector back, then the
//! catalog's tag moved to a newer head (found by the poll) while the other catalog's tag moves
//! to broken content. At each step the status is compared field by field with what
//! operator-controller (release-4.19) writes: `Installed` ("Installed bundle IMAGE
//! successfully"), `Progressing` ("desired state reached", or the resolution error), the four
//! deprecation conditions, and `status.install.bundle`.
use crate::common::olmv1::{CATALOGS, EXTENSIONS, INSTALL_NAMESPACE, OlmV1, cond, condition, said};
use crate::common::shared_testdata;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Instant;

/// The deprecation message of etcdoperator.v0.6.1 in the main catalog.
const DEPRECATED: &str = "etcdoperator.v0.6.1 is deprecated: use a 0.9 release";

/// Writes `docs` as the catalog `dir/etcd/catalog.json`.
fn write_catalog(dir: &Path, docs: &[Value]) {
    let text: String = docs.iter().map(|d| d.to_string() + "\n").collect();
    std::fs::create_dir_all(dir.join("etcd")).unwrap();
    std::fs::write(dir.join("etcd/catalog.json"), text).unwrap();
}

/// An `olm.channel` of etcd.
fn channel(name: &str, entries: Value) -> Value {
    json!({"schema": "olm.channel", "package": "etcd", "name": name, "entries": entries})
}

/// The `olm.package` version of a rendered bundle.
fn version(bundle: &Value) -> &Value {
    &bundle["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "olm.package")
        .unwrap()["value"]["version"]
}

/// What operator-controller reports for an extension with `bundle` installed, the desired
/// state reached, and `deprecated` the bundle deprecation message if any: the install status
/// and every condition, field by field.
fn assert_installed(object: &Value, bundle: &Value, deprecated: Option<&str>) {
    let name = object["metadata"]["name"].as_str().unwrap();
    let image = bundle["image"].as_str().unwrap();
    assert_eq!(
        object["status"]["install"],
        json!({"bundle": {"name": bundle["name"], "version": version(bundle)}}),
        "{name}: {object:#}"
    );
    let (flag, joined, own) = match deprecated {
        // The Deprecated condition joins the messages; each specific one puts a line break
        // before every message (operator-controller's SetDeprecationStatus).
        Some(message) => ("True", message.to_owned(), format!("\n{message}")),
        None => ("False", String::new(), String::new()),
    };
    assert_eq!(
        conditions(object),
        [
            cond(
                "Installed",
                "True",
                "Succeeded",
                &format!("Installed bundle {image} successfully")
            ),
            cond("Progressing", "True", "Succeeded", "desired state reached"),
            cond("Deprecated", flag, "Deprecated", &joined),
            cond("PackageDeprecated", "False", "Deprecated", ""),
            cond("ChannelDeprecated", "False", "Deprecated", ""),
            cond("BundleDeprecated", flag, "Deprecated", &own),
        ],
        "{name}: {object:#}"
    );
}

/// Every condition operator-controller writes on a ClusterExtension, in one order.
fn conditions(object: &Value) -> Vec<(String, String, String, String)> {
    [
        "Installed",
        "Progressing",
        "Deprecated",
        "PackageDeprecated",
        "ChannelDeprecated",
        "BundleDeprecated",
    ]
    .iter()
    .map(|kind| said(object, kind))
    .collect()
}

#[tokio::test]
async fn operator_controller_installs_pins_selects_and_upgrades_from_our_catalogd() {
    let Some(etcd) = shared_testdata("real/bundles/etcd") else {
        return;
    };
    let Some(olm) = OlmV1::start().await else {
        return;
    };
    let work = olm.work.path().to_owned();
    let [v061, v090, v092, v094] = ["0.6.1", "0.9.0", "0.9.2-clusterwide", "0.9.4-clusterwide"]
        .map(|v| olm.push_bundle(&etcd.join(v), &format!("bundles/etcd:v{v}")));
    let package = json!({"schema": "olm.package", "name": "etcd", "defaultChannel": "alpha"});
    let alpha = channel(
        "alpha",
        json!([{"name": "etcdoperator.v0.6.1"},
               {"name": "etcdoperator.v0.9.0", "replaces": "etcdoperator.v0.6.1"}]),
    );
    let deprecations = json!({"schema": "olm.deprecations", "package": "etcd", "entries": [
        {"reference": {"schema": "olm.bundle", "name": "etcdoperator.v0.6.1"},
         "message": DEPRECATED}]});
    let clusterwide = |head: Option<&Value>| {
        let mut entries = vec![
            json!({"name": "etcdoperator.v0.9.0"}),
            json!({"name": "etcdoperator.v0.9.2-clusterwide", "replaces": "etcdoperator.v0.9.0",
                   "skips": ["etcdoperator.v0.6.1"]}),
        ];
        if head.is_some() {
            entries.push(json!({"name": "etcdoperator.v0.9.4-clusterwide",
                                "replaces": "etcdoperator.v0.9.2-clusterwide"}));
        }
        channel("clusterwide-alpha", Value::Array(entries))
    };
    // The main catalog, and the same with 0.9.4-clusterwide as the new head.
    let (main_v1, main_v2) = (work.join("main-v1"), work.join("main-v2"));
    let main = |head: Option<&Value>| {
        let mut docs = vec![package.clone(), alpha.clone(), clusterwide(head)];
        docs.extend([&v061, &v090, &v092].map(Clone::clone));
        docs.extend(head.cloned());
        docs.push(deprecations.clone());
        docs
    };
    write_catalog(&main_v1, &main(None));
    write_catalog(&main_v2, &main(Some(&v094)));
    // The other catalog offers 0.9.2-clusterwide in the same channel.
    let other = work.join("other");
    write_catalog(
        &other,
        &[
            json!({"schema": "olm.package", "name": "etcd", "defaultChannel": "clusterwide-alpha"}),
            channel(
                "clusterwide-alpha",
                json!([{"name": "etcdoperator.v0.9.2-clusterwide"}]),
            ),
            v092.clone(),
        ],
    );
    // A catalog that does not load: a channel of a package it does not have.
    let broken = work.join("broken");
    write_catalog(
        &broken,
        &[
            json!({"schema": "olm.channel", "package": "nope", "name": "s", "entries": [{"name": "x"}]}),
        ],
    );
    let main_first = olm.push_catalog(&main_v1, "catalogs/main:latest");
    let other_first = olm.push_catalog(&other, "catalogs/other:latest");
    olm.create_catalog("main", "catalogs/main:latest", json!({"tier": "main"}))
        .await;
    olm.create_catalog("other", "catalogs/other:latest", json!({"tier": "other"}))
        .await;
    let main_served = olm.wait_for_catalog("main", &main_first, "Succeeded").await;
    assert_eq!(
        main_served["status"]["urls"]["base"],
        format!("{}/catalogs/main", olm.catalogd.url),
        "{main_served:#}"
    );
    olm.wait_for_catalog("other", &other_first, "Succeeded")
        .await;
    let (code, other_all) = olm.catalogd.all("other").await;
    assert_eq!(code, 200, "{other_all}");

    // 1. An exact version, from the catalog the selector names: the deprecated 0.6.1 is
    // installed and its deprecation reported.
    let ce = format!("{EXTENSIONS}/etcd");
    let on_main = json!({"matchLabels": {"tier": "main"}});
    let created = Instant::now();
    olm.create_extension(
        "etcd",
        json!({"packageName": "etcd", "version": "0.6.1", "selector": on_main}),
    )
    .await;
    let object = olm.wait_for_install("etcd", "etcdoperator.v0.6.1").await;
    let to_installed = created.elapsed();
    assert_installed(&object, &v061, Some(DEPRECATED));
    let deployment = olm
        .kube
        .get(&format!(
            "/apis/apps/v1/namespaces/{INSTALL_NAMESPACE}/deployments/etcd-operator"
        ))
        .await
        .expect("the etcd-operator Deployment applied");
    assert_eq!(
        deployment["metadata"]["labels"]["olm.operatorframework.io/owner-name"], "etcd",
        "{deployment:#}"
    );

    // 2. A range that pins below the head (0.9.2-clusterwide skips 0.6.1): 0.9.0.
    olm.kube
        .merge_patch(
            &ce,
            json!({"spec": {"source": {"catalog": {"version": ">=0.6.0, <0.9.1"}}}}),
        )
        .await;
    let object = olm.wait_for_install("etcd", "etcdoperator.v0.9.0").await;
    assert_installed(&object, &v090, None);

    // 3. A channel: its head, the AllNamespaces 0.9.2-clusterwide.
    olm.kube
        .merge_patch(
            &ce,
            json!({"spec": {"source": {"catalog": {"version": null,
                                                   "channels": ["clusterwide-alpha"]}}}}),
        )
        .await;
    let object = olm
        .wait_for_install("etcd", "etcdoperator.v0.9.2-clusterwide")
        .await;
    assert_installed(&object, &v092, None);

    // 4. No selector: both catalogs offer a bundle, and operator-controller refuses to choose;
    // what is installed stays.
    olm.kube
        .merge_patch(
            &ce,
            json!({"spec": {"source": {"catalog": {"selector": null}}}}),
        )
        .await;
    let refused = "error upgrading from currently installed version \"0.9.2-clusterwide\": \
                   found bundles for package \"etcd\" in channels [clusterwide-alpha] in \
                   multiple catalogs with the same priority [main other]";
    let object = olm
        .wait_for_condition("etcd", "Progressing", "True", "Retrying")
        .await;
    assert_eq!(
        conditions(&object),
        [
            cond(
                "Installed",
                "True",
                "Succeeded",
                &format!(
                    "Installed bundle {} successfully",
                    v092["image"].as_str().unwrap()
                )
            ),
            cond("Progressing", "True", "Retrying", refused),
            cond("Deprecated", "False", "Deprecated", ""),
            cond("PackageDeprecated", "False", "Deprecated", ""),
            cond("ChannelDeprecated", "False", "Deprecated", ""),
            cond("BundleDeprecated", "False", "Deprecated", ""),
        ],
        "{object:#}"
    );
    assert_eq!(
        object["status"]["install"]["bundle"]["name"],
        "etcdoperator.v0.9.2-clusterwide"
    );

    // 5. The selector back; then main's tag moves to a newer head and other's to broken
    // content, both found by the next poll: the extension upgrades from main, while other
    // keeps serving (and reporting) what it served.
    olm.kube
        .merge_patch(
            &ce,
            json!({"spec": {"source": {"catalog": {"selector": on_main}}}}),
        )
        .await;
    let object = olm
        .wait_for_install("etcd", "etcdoperator.v0.9.2-clusterwide")
        .await;
    assert_installed(&object, &v092, None);
    let pushed = Instant::now();
    let main_second = olm.push_catalog(&main_v2, "catalogs/main:latest");
    let other_broken = olm.push_catalog(&broken, "catalogs/other:latest");
    assert_ne!(other_broken, other_first);
    let (moved, upgraded) = tokio::join!(
        async {
            olm.wait_for_catalog("main", &main_second, "Succeeded")
                .await;
            Instant::now()
        },
        async {
            let object = olm
                .wait_for_install("etcd", "etcdoperator.v0.9.4-clusterwide")
                .await;
            (object, Instant::now())
        },
    );
    let (object, upgraded_at) = upgraded;
    assert_installed(&object, &v094, None);
    let broken_seen = olm
        .wait_for(&format!("{CATALOGS}/other"), "other retrying", |c| {
            condition(c, "Progressing")["reason"] == "Retrying"
        })
        .await;
    let (_, status, _, message) = said(&broken_seen, "Progressing");
    assert_eq!(status, "True");
    assert!(
        message.starts_with("source catalog content: ")
            && message.contains("unknown package \"nope\" for channel \"s\""),
        "{message}"
    );
    assert_eq!(
        broken_seen["status"]["resolvedSource"]["image"]["ref"],
        other_first.as_str(),
        "{broken_seen:#}"
    );
    assert_eq!(
        said(&broken_seen, "Serving"),
        cond(
            "Serving",
            "True",
            "Available",
            "Serving desired content from resolved source"
        )
    );
    assert_eq!(olm.catalogd.all("other").await, (200, other_all));
    let still = olm.kube.get(&ce).await.unwrap();
    assert_installed(&still, &v094, None);
    eprintln!(
        "FIGURES: ClusterExtension create -> Installed {:.1} s; tag moved -> catalog serving the \
         new head {:.1} s (poll 1 min); catalog move -> upgraded {:.1} s",
        to_installed.as_secs_f64(),
        (moved - pushed).as_secs_f64(),
        upgraded_at.saturating_duration_since(moved).as_secs_f64(),
    );
}
