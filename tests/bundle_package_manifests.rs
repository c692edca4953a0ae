//! Legacy package-manifest trees (catalog-formats.md §D) converted to FBC, checked against
//! Dataset M (registry-api.md §10.1) and upstream's own conversion of the same tree.
mod common;

use common::shared_testdata;
use olm_registry::bundle::package_manifests::load;
use olm_registry::catalog::{self, DeclarativeConfig};
use std::collections::BTreeMap;

fn json(dc: &DeclarativeConfig) -> String {
    let mut out = Vec::new();
    catalog::write::write_json(dc, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn manifests_convert_as_upstream_opm_migrate_did() {
    let Some(root) = shared_testdata("upstream") else { return };
    let ours = load(&root.join("manifests"), &BTreeMap::new()).unwrap_or_else(|e| panic!("{e}"));
    for pkg in ["etcd", "prometheus", "strimzi-kafka-operator"] {
        let mut one = ours.clone();
        one.packages.retain(|p| p.name == pkg);
        one.channels.retain(|c| c.package == pkg);
        one.bundles.retain(|b| b.package == pkg);
        let theirs = catalog::walk::load_dir(&root.join("manifests-fbc").join(pkg)).unwrap();
        std::fs::write(format!("/tmp/bt/{pkg}.ours.json"), json(&one)).unwrap();
        std::fs::write(format!("/tmp/bt/{pkg}.theirs.json"), json(&theirs)).unwrap();
        assert_eq!(json(&one), json(&theirs), "{pkg}");
    }
}
