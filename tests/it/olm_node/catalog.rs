//! The catalog of the node test: one package, `node-op`, whose bundles (written here, no
//! image: OLM installs them from `Bundle.object`) deploy a Deployment the node can run with no
//! upstream image — our catalog image itself, serving. Version 1 of the catalog has
//! node-op 1.0.0; version 2 adds 1.1.0, replacing it, as the new head of `stable`. Every
//! version also has `node-unpack` 1.0.0, the same kind of bundle but as a bundle image (`build
//! bundle`, rendered from the image): OLM installs it with its bundle unpack Job.
use crate::common::{BIN, run, write};
use std::cell::OnceCell;
use std::path::{Path, PathBuf};

pub(super) struct NodeCatalog {
    work: PathBuf,
    registry: String,
    /// The FBC of package node-unpack, once its bundle image is pushed.
    unpack_docs: OnceCell<String>,
}

/// The package whose bundle OLM unpacks from its image.
pub(super) const UNPACK: &str = "node-unpack";

const VERSIONS: [&str; 2] = ["1.0.0", "1.1.0"];

impl NodeCatalog {
    pub(super) fn new(work: &Path, registry: &str) -> NodeCatalog {
        NodeCatalog {
            work: work.to_owned(),
            registry: registry.to_owned(),
            unpack_docs: OnceCell::new(),
        }
    }

    /// The bundle image of node-unpack 1.0.0, as the catalog names it.
    pub(super) fn unpack_image(&self) -> String {
        self.bundle_image(UNPACK, "1.0.0")
    }

    fn bundle_image(&self, package: &str, version: &str) -> String {
        format!("{}/e2e/{package}-bundle:v{version}", self.registry)
    }

    /// Builds the bundle of `package` `version` as a bundle image and pushes it; its reference.
    pub(super) fn push_bundle(&self, package: &str, version: &str) -> String {
        let image = self.bundle_image(package, version);
        let dir = self.package_bundle_dir(package, version);
        let (code, _, err) = run(&[
            "--use-http",
            "build",
            "bundle",
            dir.to_str().unwrap(),
            "--tag",
            &image,
        ]);
        assert_eq!(code, 0, "build bundle {}: {err}", dir.display());
        image
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

    /// Builds version 1 as the tools image ([`Self::tools_tag`]) with the static build of our
    /// binary: the unpack Job copies it (as `cpb`) into the bundle image, which has no loader.
    pub(super) fn push_tools(&self) -> String {
        self.build_and_push(1, &self.tools_tag(), static_binary().to_str().unwrap())
    }

    /// Builds version `n` (1 or 2) of the catalog as a `--server` image and pushes it under
    /// [`Self::tag`]; what `build` prints (`REF@sha256:...`).
    pub(super) fn push(&self, n: usize) -> String {
        self.build_and_push(n, &self.tag(), BIN)
    }

    /// Version `n` as an image whose server exits at once (`/bin/false` in its place) under
    /// [`Self::tag`]: a catalog image that cannot serve.
    pub(super) fn push_broken(&self, n: usize) -> String {
        self.build_and_push(n, &self.tag(), "/bin/false")
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
        write(
            &dir.join(format!("{UNPACK}/catalog.json")),
            self.unpack_docs(),
        );
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

    /// Package node-unpack's FBC: its bundle image built and pushed, then rendered from the
    /// registry (so the bundle names its image), once.
    fn unpack_docs(&self) -> &str {
        self.unpack_docs.get_or_init(|| {
            let image = self.push_bundle(UNPACK, "1.0.0");
            let (code, bundle, err) = run(&["--use-http", "render", &image]);
            assert_eq!(code, 0, "render {image}: {err}");
            format!(
                "{{\"schema\":\"olm.package\",\"name\":\"{UNPACK}\",\"defaultChannel\":\"stable\"}}\n\
                 {{\"schema\":\"olm.channel\",\"package\":\"{UNPACK}\",\"name\":\"stable\",\
                 \"entries\":[{{\"name\":\"{UNPACK}.v1.0.0\"}}]}}\n{}\n",
                bundle.trim()
            )
        })
    }

    /// A bundle directory of node-op `version`, written once.
    fn bundle_dir(&self, version: &str) -> PathBuf {
        self.package_bundle_dir("node-op", version)
    }

    /// A bundle directory of `package` `version` (CSV `PACKAGE.vVERSION`, Deployment
    /// `PACKAGE`), written once.
    fn package_bundle_dir(&self, package: &str, version: &str) -> PathBuf {
        let dir = self.work.join(format!("bundles/{package}-{version}"));
        if dir.exists() {
            return dir;
        }
        write(
            &dir.join("metadata/annotations.yaml"),
            &format!(
                "annotations:\n\
             \x20 operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n\
             \x20 operators.operatorframework.io.bundle.manifests.v1: manifests/\n\
             \x20 operators.operatorframework.io.bundle.metadata.v1: metadata/\n\
             \x20 operators.operatorframework.io.bundle.package.v1: {package}\n\
             \x20 operators.operatorframework.io.bundle.channels.v1: stable\n\
             \x20 operators.operatorframework.io.bundle.channel.default.v1: stable\n"
            ),
        );
        let csv = serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": format!("{package}.v{version}")},
            "spec": {
                "displayName": "Node Op", "version": version,
                "installModes": [
                    {"type": "OwnNamespace", "supported": true},
                    {"type": "SingleNamespace", "supported": true},
                    {"type": "MultiNamespace", "supported": false},
                    {"type": "AllNamespaces", "supported": false},
                ],
                "install": {"strategy": "deployment", "spec": {"deployments": [{
                    "name": package,
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": package}},
                        "template": {
                            "metadata": {"labels": {"app": package}},
                            // Any image that runs will do: ours, serving its own catalog.
                            "spec": {"containers": [{"name": "server", "image": self.tag()}]},
                        },
                    },
                }]}},
            },
        });
        write(
            &dir.join(format!("manifests/{package}.clusterserviceversion.yaml")),
            &serde_yaml::to_string(&csv).unwrap(),
        );
        dir
    }
}

/// The static build of our binary beside the test build (`target/olm-registry-static`), which
/// scripts/test.sh makes: a bundle image is usually built on nothing, so the `cpb` that OLM's
/// unpack Job runs in it must need no loader or C library.
fn static_binary() -> PathBuf {
    let target = Path::new(BIN).parent().and_then(Path::parent).unwrap();
    let path = target.join("olm-registry-static");
    assert!(
        path.is_file(),
        "{} is missing: scripts/test.sh makes it, or by hand: `cargo rustc --bin olm-registry \
         -- -C target-feature=+crt-static && cp target/debug/olm-registry {}` (then build the \
         tests again, which links the normal binary anew)",
        path.display(),
        path.display()
    );
    path
}
