//! The catalog OLM installs from, made of real bundles (`../shared/testdata/real/bundles`):
//! `etcd` 0.9.2 and 0.9.4 as bundle images pushed to the loopback registry (with `build
//! bundle`), and `prometheus` 0.47.0 (and, in the second version of the catalog, 0.56.3
//! replacing it) rendered from their directories with no image, each requiring etcd.
use super::run_ok;
use crate::common::{BIN, shared_testdata};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) struct E2eCatalogs {
    /// etcd and prometheus 0.47.0.
    pub(super) v1: PathBuf,
    /// The same with prometheus 0.56.3 as the new head of `beta`.
    pub(super) v2: PathBuf,
    registry: String,
    bundles: PathBuf,
}

const ETCD: [&str; 2] = ["0.9.2", "0.9.4"];
const PROMETHEUS: [&str; 2] = ["0.47.0", "0.56.3"];

impl E2eCatalogs {
    pub(super) fn build(work: &Path, registry: &str) -> E2eCatalogs {
        let bundles = shared_testdata("real/bundles").expect("../shared/testdata/real is absent");
        let catalogs = E2eCatalogs {
            v1: work.join("catalog-v1"),
            v2: work.join("catalog-v2"),
            registry: registry.to_owned(),
            bundles,
        };
        let mut etcd_refs = Vec::new();
        for v in ETCD {
            let image = catalogs.etcd_image(v);
            let dir = catalogs.bundles.join("etcd").join(v);
            run_ok(
                Command::new(BIN)
                    .args(["--use-http", "build", "bundle"])
                    .arg(&dir)
                    .args(["--tag", &image]),
            );
            etcd_refs.push(image);
        }
        let mut render = Command::new(BIN);
        render.args(["--use-http", "render"]).args(&etcd_refs);
        let etcd = bundles_of(&run_ok(&mut render));
        let mut render = Command::new(BIN);
        render.arg("render");
        for v in PROMETHEUS {
            render.arg(catalogs.bundles.join("prometheus").join(v));
        }
        let mut prometheus = bundles_of(&run_ok(&mut render));
        for b in &mut prometheus {
            assert_eq!(b["image"], "", "a bundle directory renders with no image");
            b["properties"].as_array_mut().unwrap().push(json!({
                "type": "olm.package.required",
                "value": {"packageName": "etcd", "versionRange": ">=0.9.0"},
            }));
        }
        let etcd_docs = [
            json!({"schema": "olm.package", "name": "etcd", "defaultChannel": "singlenamespace-alpha"}),
            json!({"schema": "olm.channel", "package": "etcd", "name": "singlenamespace-alpha", "entries": [
                {"name": "etcdoperator.v0.9.2"},
                {"name": "etcdoperator.v0.9.4", "replaces": "etcdoperator.v0.9.2"},
            ]}),
        ];
        let package =
            json!({"schema": "olm.package", "name": "prometheus", "defaultChannel": "beta"});
        let v1_channel = json!({"schema": "olm.channel", "package": "prometheus", "name": "beta",
            "entries": [{"name": "prometheusoperator.0.47.0"}]});
        let v2_channel = json!({"schema": "olm.channel", "package": "prometheus", "name": "beta",
            "entries": [{"name": "prometheusoperator.0.47.0"},
                        {"name": "prometheusoperator.0.56.3", "replaces": "prometheusoperator.0.47.0"}]});
        for (dir, channel, count) in [(&catalogs.v1, v1_channel, 1), (&catalogs.v2, v2_channel, 2)]
        {
            let etcd_docs = etcd_docs.iter().chain(&etcd).cloned();
            write_docs(&dir.join("etcd/catalog.json"), etcd_docs);
            let prometheus_docs = [package.clone(), channel]
                .into_iter()
                .chain(prometheus[..count].iter().cloned());
            write_docs(&dir.join("prometheus/catalog.json"), prometheus_docs);
        }
        catalogs
    }

    /// The loopback registry's reference of the etcd bundle image of `version`.
    pub(super) fn etcd_image(&self, version: &str) -> String {
        format!("{}/e2e/etcd-bundle:v{version}", self.registry)
    }

    /// (kind, name) of every object of a bundle, read from the bundle's directory.
    pub(super) fn objects(&self, csv: &str) -> BTreeSet<(String, String)> {
        let dir = match csv.split_once(".v").or_else(|| csv.split_once('.')) {
            Some(("etcdoperator", v)) => self.bundles.join("etcd").join(v),
            Some(("prometheusoperator", v)) => self.bundles.join("prometheus").join(v),
            _ => panic!("not a bundle of this catalog: {csv}"),
        };
        super::fbc::bundle_objects(&dir)
    }
}

fn bundles_of(rendered: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(rendered)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .filter(|d| d["schema"] == "olm.bundle")
        .collect()
}

fn write_docs(file: &Path, docs: impl Iterator<Item = Value>) {
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text: String = docs.map(|d| d.to_string() + "\n").collect();
    std::fs::write(file, text).unwrap();
}
