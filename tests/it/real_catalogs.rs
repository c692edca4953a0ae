//! The real community catalogs in ../shared/testdata/real load, validate and serve.

use crate::common::{Server, collect, list_order_key, package_names, run, shared_testdata};
use api::{GetBundleRequest, GetPackageRequest, ListBundlesRequest};
use std::collections::BTreeMap;
use std::path::Path;

/// (channel, package, bundle) of a channel entry.
type EntryKey = (String, String, String);

/// What the catalog holds, counted straight from its YAML: package → default channel, and
/// every channel entry.
fn expected(root: &Path) -> (BTreeMap<String, String>, Vec<EntryKey>) {
    let mut packages = BTreeMap::new();
    let mut entries = Vec::new();
    for dir in std::fs::read_dir(root).unwrap() {
        let file = dir.unwrap().path().join("catalog.yaml");
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let v: serde_yaml::Value = serde::Deserialize::deserialize(doc).unwrap();
            let field = |k: &str| {
                v.get(k)
                    .and_then(|x| x.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            match field("schema").as_str() {
                "olm.package" => {
                    packages.insert(field("name"), field("defaultChannel"));
                }
                "olm.channel" => {
                    for e in v.get("entries").and_then(|e| e.as_sequence()).unwrap() {
                        let name = e.get("name").and_then(|n| n.as_str()).unwrap().to_string();
                        entries.push((field("name"), field("package"), name));
                    }
                }
                _ => {}
            }
        }
    }
    entries.sort();
    (packages, entries)
}

async fn check(rel: &str) {
    let Some(root) = shared_testdata(rel) else {
        return;
    };
    let (code, stdout, stderr) = run(&["validate", root.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}{stderr}");

    let (packages, entries) = expected(&root);
    let server = Server::serving(&root, &[]).await;
    let mut c = server.client().await;

    let listed = package_names(&mut c).await;
    assert_eq!(listed, packages.keys().cloned().collect::<Vec<_>>());
    for (name, default) in &packages {
        let p = c
            .get_package(GetPackageRequest { name: name.clone() })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(&p.default_channel_name, default);
    }

    let bundles = collect(
        c.list_bundles(ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner(),
    )
    .await;
    let keys: Vec<_> = bundles.iter().map(list_order_key).collect();
    assert_eq!(keys, entries);

    // Every listed bundle is also served by a point lookup, with its manifests and a CSV.
    for b in bundles.iter().step_by(7) {
        let full = c
            .get_bundle(GetBundleRequest {
                pkg_name: b.package_name.clone(),
                channel_name: b.channel_name.clone(),
                csv_name: b.csv_name.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (&full.version, &full.bundle_path, &full.properties),
            (&b.version, &b.bundle_path, &b.properties)
        );
        let csv: serde_json::Value = serde_json::from_str(&full.csv_json).unwrap();
        assert_eq!(csv["kind"], "ClusterServiceVersion", "{}", b.csv_name);
        assert_eq!(csv["metadata"]["name"], b.csv_name.as_str());
        assert!(!full.object.is_empty());
    }
}

#[tokio::test]
async fn community_catalog_v4_16_with_bundle_objects() {
    check("real/community-catalog-v4.16").await;
}

#[tokio::test]
async fn community_catalog_v4_20_with_csv_metadata() {
    check("real/community-catalog-v4.20").await;
}
