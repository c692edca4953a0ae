//! The catalog of the node test: one package, `node-op`, whose bundles (written here, no
//! image: OLM installs them from `Bundle.object`) deploy a Deployment the node can run with no
//! upstream image — our catalog image itself, serving. Version 1 of the catalog has
//! node-op 1.0.0; version 2 adds 1.1.0, replacing it, as the new head of `stable`.
use crate::common::{BIN, run, write};
use std::path::{Path, PathBuf};

pub(super) struct NodeCatalog {
    work: PathBuf,
    registry: String,
}

const VERSIONS: [&str; 2] = ["1.0.0", "1.1.0"];

impl NodeCatalog {
    pub(super) fn new(work: &Path, registry: &str) -> NodeCatalog {
        NodeCatalog {
            work: work.to_owned(),
            registry: registry.to_owned(),
        }
    }

    /// The catalog image's tag, which every version is pushed under.
    pub(super) fn tag(&self) -> String {
        format!("{}/e2e/catalog:latest", self.registry)
    }

    /// The image OLM is told to use as its utility and opm images (`--util-image`,
    /// `--opmImage`): a catalog image of ours, which answers to every name OLM's pods run.
    pub(super) fn tools_tag(&self) -> String {
        format!("{}/e2e/olm-tools:v1", self.registry)
    }

    /// Builds version `n` (1 or 2) of the catalog as a `--server` image and pushes it under
    /// [`Self::tag`]; what `build` prints (`REF@sha256:...`).
    pub(super) fn push(&self, n: usize) -> String {
        self.push_as(n, &self.tag())
    }

    /// The same under `tag`.
    pub(super) fn push_as(&self, n: usize, tag: &str) -> String {
        self.build_and_push(n, tag, BIN)
    }

    /// Version `n` as an image whose server exits at once (`/bin/false` in its place) under
    /// [`Self::tag`]: a catalog image that cannot serve.
    pub(super) fn push_broken(&self, n: usize) -> String {
        self.build_and_push(n, &self.tag(), "/bin/false")
    }

    /// The loopback registry's HOST:PORT.
    pub(super) fn registry(&self) -> &str {
        &self.registry
    }

    fn build_and_push(&self, n: usize, tag: &str, server: &str) -> String {
        let dir = self.work.join(format!("catalog-v{n}"));
        let mut docs = vec![
            r#"{"schema":"olm.package","name":"node-op","defaultChannel":"stable"}"#.to_owned(),
        ];
        let entries: Vec<String> = VERSIONS[..n]
            .iter()
            .enumerate()
            .map(|(i, v)| match i {
                0 => format!(r#"{{"name":"node-op.v{v}"}}"#),
                _ => format!(
                    r#"{{"name":"node-op.v{v}","replaces":"node-op.v{}"}}"#,
                    VERSIONS[i - 1]
                ),
            })
            .collect();
        docs.push(format!(
            r#"{{"schema":"olm.channel","package":"node-op","name":"stable","entries":[{}]}}"#,
            entries.join(",")
        ));
        for v in &VERSIONS[..n] {
            let bundle = self.bundle_dir(v);
            let (code, out, err) = run(&["render", bundle.to_str().unwrap()]);
            assert_eq!(code, 0, "render {}: {err}", bundle.display());
            docs.push(out.trim().to_owned());
        }
        write(&dir.join("node-op/catalog.json"), &(docs.join("\n") + "\n"));
        let (code, out, err) = run(&[
            "--use-http",
            "build",
            "catalog",
            dir.to_str().unwrap(),
            "--tag",
            tag,
            "--server",
            "--server-binary",
            server,
        ]);
        assert_eq!(code, 0, "build catalog {}: {err}", dir.display());
        let pushed = out.trim().to_owned();
        assert!(pushed.starts_with(&format!("{tag}@sha256:")), "{pushed}");
        pushed
    }

    /// A bundle directory of node-op `version`, written once.
    pub(super) fn bundle_dir(&self, version: &str) -> PathBuf {
        let dir = self.work.join(format!("bundles/node-op-{version}"));
        if dir.exists() {
            return dir;
        }
        write(
            &dir.join("metadata/annotations.yaml"),
            "annotations:\n\
             \x20 operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n\
             \x20 operators.operatorframework.io.bundle.manifests.v1: manifests/\n\
             \x20 operators.operatorframework.io.bundle.metadata.v1: metadata/\n\
             \x20 operators.operatorframework.io.bundle.package.v1: node-op\n\
             \x20 operators.operatorframework.io.bundle.channels.v1: stable\n\
             \x20 operators.operatorframework.io.bundle.channel.default.v1: stable\n",
        );
        let csv = serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": format!("node-op.v{version}")},
            "spec": {
                "displayName": "Node Op", "version": version,
                "installModes": [
                    {"type": "OwnNamespace", "supported": true},
                    {"type": "SingleNamespace", "supported": true},
                    {"type": "MultiNamespace", "supported": false},
                    {"type": "AllNamespaces", "supported": false},
                ],
                "install": {"strategy": "deployment", "spec": {"deployments": [{
                    "name": "node-op",
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": "node-op"}},
                        "template": {
                            "metadata": {"labels": {"app": "node-op"}},
                            // Any image that runs will do: ours, serving its own catalog.
                            "spec": {"containers": [{"name": "server", "image": self.tag()}]},
                        },
                    },
                }]}},
            },
        });
        write(
            &dir.join("manifests/node-op.clusterserviceversion.yaml"),
            &serde_yaml::to_string(&csv).unwrap(),
        );
        dir
    }
}
