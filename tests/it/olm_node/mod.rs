//! OLM on a real node (`node.sh` of `../shared/tools/olm-e2e`): a CatalogSource names our
//! `build catalog --server` image by `spec.image`, and OLM v0.31.0's catalog operator makes
//! everything else as in a cluster — the registry pod (its own command, probes and the
//! restricted security context), the Service it then dials by name, the new pod when the tag
//! moves under `registryPoll` — while the kubelet runs the pods and the operator's Deployment.
//! Everything runs in a private network namespace; the images are in a loopback registry.
mod catalog;
mod faults;

use crate::common::control_plane::ControlPlane;
use crate::common::kube::{Kube, eventually};
use crate::common::node::{Node, ServiceHosts};
use crate::common::olm::{
    CatalogOperatorOptions, OLM_PATIENCE, Olm, olm_test, wait_for_catalog_state,
    wait_for_install_plan,
};
use crate::common::registry::TestRegistry;
use catalog::{NodeCatalog, UNPACK};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Instant;

const CATALOG_SOURCES: &str = "/apis/operators.coreos.com/v1alpha1/namespaces/olm/catalogsources";
const CSVS: &str = "/apis/operators.coreos.com/v1alpha1/namespaces/e2e/clusterserviceversions";
const PACKAGESERVER: &str = "https://127.0.0.1:5443";
/// How often OLM looks for a new digest under the catalog's tag (OLM sets no minimum).
const POLL_INTERVAL: &str = "10s";

#[test]
fn olm_runs_our_catalog_image_on_a_node() {
    olm_test("the OLM node test", run);
}

async fn run(tools: PathBuf) {
    let started = Instant::now();
    let cluster = Cluster::start(&tools).await;
    let kube = &cluster.kube;
    eprintln!("cluster up in {:?}", started.elapsed());
    let catalog = &cluster.catalog;
    let pushed = Instant::now();
    let v1 = catalog.push(1);
    catalog.push_tools();
    eprintln!("catalog built and pushed in {:?}", pushed.elapsed());

    // a. OLM's registry pod, Service and READY through the Service's name.
    let created = Instant::now();
    let polled = json!({"registryPoll": {"interval": POLL_INTERVAL}});
    create_catalog_source(kube, "node", &catalog.tag(), json!({}), polled).await;
    let pod = wait_for_registry_pod(kube, "node", &v1).await;
    let to_pod_ready = created.elapsed();
    check_restricted(&pod, &catalog.tag());
    wait_for_catalog_state(kube, "olm", "node", |s| s == "READY").await;
    let to_ready = created.elapsed();
    let source = kube.get(&format!("{CATALOG_SOURCES}/node")).await.unwrap();
    assert_eq!(
        source["status"]["connectionState"]["address"], "node.olm.svc:50051",
        "{source:#}"
    );
    assert_eq!(
        source["status"]["registryService"]["serviceName"], "node",
        "{source:#}"
    );

    // b. packageserver lists the package, from the same Service.
    let manifest = package_manifest(&cluster.olm_token, "node", "node-op.v1.0.0").await;
    assert_eq!(manifest["status"]["catalogSource"], "node");
    assert_eq!(manifest["status"]["defaultChannel"], "stable");
    let to_listed = created.elapsed();

    // c. A Subscription installs node-op, whose Deployment the kubelet runs.
    let subscribed = Instant::now();
    subscribe(kube, "node-op", "stable", "node").await;
    wait_for_install_plan(kube, "e2e", "node-op.v1.0.0", || async {}).await;
    let to_plan = subscribed.elapsed();
    wait_for_csv_succeeded(kube, "node-op.v1.0.0").await;
    let to_csv = subscribed.elapsed();

    // c'. node-unpack's bundle is an image: OLM's own unpack Job runs on the node, from our
    // tools image and the bundle image, and fills the ConfigMap OLM installs from.
    let subscribed = Instant::now();
    subscribe(kube, UNPACK, "stable", "node").await;
    let job = wait_for_unpack_job(kube, &catalog.unpack_image()).await;
    let to_job = subscribed.elapsed();
    check_unpack_job(&job, &catalog.tools_tag(), &catalog.unpack_image());
    check_unpacked_config_map(kube, job["metadata"]["name"].as_str().unwrap()).await;
    let csv = format!("{UNPACK}.v1.0.0");
    wait_for_install_plan(kube, "e2e", &csv, || async {}).await;
    wait_for_csv_succeeded(kube, &csv).await;
    let unpacked_csv = subscribed.elapsed();

    // d. A new head under the same tag: OLM's poll finds the new digest, starts a new pod,
    // swaps, and the Subscription upgrades.
    let pushed = Instant::now();
    let v2 = catalog.push(2);
    let push_took = pushed.elapsed();
    wait_for_registry_pod(kube, "node", &v2).await;
    let to_new_pod = pushed.elapsed();
    wait_for_csv_succeeded(kube, "node-op.v1.1.0").await;
    let to_new_csv = pushed.elapsed();
    let pods = registry_pods(kube, "node").await;
    assert_eq!(pods.len(), 1, "the old registry pod stays: {pods:#?}");

    // e. extractContent, as OpenShift's default catalogs: OLM's utility image (ours) copies
    // `copy-content` out, which copies /configs and the cache out of the catalog image, and
    // the opm image (ours) serves the copies.
    let created = Instant::now();
    let extract = json!({"extractContent": {"catalogDir": "/configs", "cacheDir": "/tmp/cache"}});
    create_catalog_source(kube, "extracted", &catalog.tag(), extract, Value::Null).await;
    let pod = wait_for_registry_pod(kube, "extracted", &v2).await;
    check_extract_content(&pod, &catalog.tools_tag());
    wait_for_catalog_state(kube, "olm", "extracted", |s| s == "READY").await;
    let extracted_ready = created.elapsed();
    package_manifest(&cluster.olm_token, "extracted", "node-op.v1.1.0").await;
    let extracted_listed = created.elapsed();

    eprintln!(
        "FIGURES: CatalogSource create -> registry pod Ready {to_pod_ready:?}; -> READY \
         {to_ready:?}; -> PackageManifest listed {to_listed:?}; Subscription -> InstallPlan \
         Complete {to_plan:?}; -> CSV Succeeded {to_csv:?}; bundle image: Subscription -> \
         unpack Job Complete {to_job:?}; -> CSV Succeeded {unpacked_csv:?}; poll ({POLL_INTERVAL}): push \
         ({push_took:?}) -> new registry pod Ready {to_new_pod:?}; -> new CSV Succeeded \
         {to_new_csv:?}; extractContent: create -> READY {extracted_ready:?}; -> PackageManifest \
         listed {extracted_listed:?}; whole test {:?}",
        started.elapsed()
    );
}

/// A control plane, a node, a loopback registry and OLM's operators, with a hosts file for
/// Service names; stopped in the reverse order (fields drop in declaration order).
struct Cluster {
    kube: Kube,
    catalog: NodeCatalog,
    olm_token: String,
    _olm: Olm,
    _hosts: ServiceHosts,
    registry: TestRegistry,
    _node: Node,
    _cp: ControlPlane,
    _work: tempfile::TempDir,
}

impl Cluster {
    async fn start(tools: &Path) -> Cluster {
        let cp = ControlPlane::start_for_pods().expect("the olm-e2e tools are present");
        cp.apply_crds(&tools.join("crds"));
        let kube = Kube(cp.client().await);
        // The restricted Pod Security Standard, enforced by the API server, for the registry
        // pods OLM makes.
        let restricted = json!({"pod-security.kubernetes.io/enforce": "restricted"});
        for (ns, labels) in [("olm", restricted), ("e2e", json!({}))] {
            kube.create(
                "/api/v1/namespaces",
                json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": ns, "labels": labels}}),
            )
            .await;
        }
        let work = tempfile::tempdir().unwrap();
        let registry = TestRegistry::plain();
        let catalog = NodeCatalog::new(work.path(), &registry.addr);
        let node_started = Instant::now();
        let node = Node::start(&cp, tools, &[&registry.addr]);
        eprintln!("node Ready in {:?}", node_started.elapsed());
        let hosts = ServiceHosts::start(&cp, &work.path().join("hosts"));
        let olm = Olm::start_with(
            &cp,
            work.path(),
            &CatalogOperatorOptions {
                // As OLM's chart runs it (registry pods and unpack Jobs as user 1001), with our
                // image as its utility and opm images.
                args: vec![
                    "--set-workload-user-id=true".to_owned(),
                    format!("--util-image={}", catalog.tools_tag()),
                    format!("--opmImage={}", catalog.tools_tag()),
                ],
                hosts_file: Some(hosts.path.clone()),
            },
        );
        kube.create(
            "/apis/operators.coreos.com/v1/namespaces/e2e/operatorgroups",
            json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                   "metadata": {"name": "e2e", "namespace": "e2e"},
                   "spec": {"targetNamespaces": ["e2e"]}}),
        )
        .await;
        Cluster {
            kube,
            catalog,
            olm_token: cp.token.clone(),
            _olm: olm,
            _hosts: hosts,
            registry,
            _node: node,
            _cp: cp,
            _work: work,
        }
    }
}

/// CatalogSource olm/`name` of `image`, its pod restricted, with more `grpc_pod_config` and
/// an `update_strategy` (or none: null).
async fn create_catalog_source(
    kube: &Kube,
    name: &str,
    image: &str,
    grpc_pod_config: Value,
    update_strategy: Value,
) {
    let mut pod_config = json!({"securityContextConfig": "restricted"});
    pod_config
        .as_object_mut()
        .unwrap()
        .extend(grpc_pod_config.as_object().unwrap().clone());
    let mut spec = json!({"sourceType": "grpc", "image": image, "displayName": name,
                          "publisher": "e2e", "grpcPodConfig": pod_config});
    if !update_strategy.is_null() {
        spec["updateStrategy"] = update_strategy;
    }
    kube.create(
        CATALOG_SOURCES,
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": name, "namespace": "olm"}, "spec": spec}),
    )
    .await;
}

/// The registry pods of CatalogSource olm/`name` (serving and update pods).
async fn registry_pods(kube: &Kube, name: &str) -> Vec<Value> {
    kube.list(&format!(
        "/api/v1/namespaces/olm/pods?labelSelector=olm.catalogSource%3D{name}"
    ))
    .await
}

/// Waits until a registry pod of CatalogSource olm/`name` runs the catalog image `pushed`
/// (`REF@sha256:...`, as `build` prints it) and is Ready; returns the pod.
async fn wait_for_registry_pod(kube: &Kube, name: &str, pushed: &str) -> Value {
    let digest = pushed.rsplit_once('@').unwrap().1;
    eventually(
        &format!("a Ready registry pod of {name} running {digest}"),
        OLM_PATIENCE,
        || async {
            registry_pods(kube, name).await.into_iter().find(|pod| {
                let ready = pod["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                });
                ready && catalog_image_id(pod).ends_with(digest)
            })
        },
    )
    .await
}

/// The image ID of a registry pod's catalog image, where OLM looks for it: the second init
/// container's with extractContent (which runs in the catalog image), else the container's.
fn catalog_image_id(pod: &Value) -> &str {
    let status = &pod["status"];
    let init = status["initContainerStatuses"]
        .as_array()
        .map_or(0, Vec::len);
    let container = match init {
        2 => &status["initContainerStatuses"][1],
        _ => &status["containerStatuses"][0],
    };
    container["imageID"].as_str().unwrap_or_default()
}

/// Waits until OLM's unpack Job of bundle image `bundle` (in olm, the CatalogSource's
/// namespace) is Complete, failing at once if it Failed; returns the Job.
async fn wait_for_unpack_job(kube: &Kube, bundle: &str) -> Value {
    let jobs = "/apis/batch/v1/namespaces/olm/jobs";
    eventually(
        &format!("OLM's unpack Job of {bundle} Complete"),
        OLM_PATIENCE,
        || async {
            let job =
                kube.list(jobs).await.into_iter().find(|j| {
                    j["spec"]["template"]["spec"]["initContainers"][1]["image"] == bundle
                })?;
            let condition = |kind: &str| {
                job["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == kind && c["status"] == "True")
                })
            };
            if condition("Failed") {
                let pods = kube.list("/api/v1/namespaces/olm/pods").await;
                panic!("the unpack Job failed: {job:#}\npods: {pods:#?}");
            }
            condition("Complete").then_some(job)
        },
    )
    .await
}

/// The unpack Job is OLM's, run from our images only: the tools image copies `cpb` out
/// (`cp`), the bundle image runs it, and the tools image's `opm alpha bundle extract` writes
/// the ConfigMap named like the Job.
fn check_unpack_job(job: &Value, tools: &str, bundle: &str) {
    let spec = &job["spec"]["template"]["spec"];
    let init = &spec["initContainers"];
    assert_eq!(init[0]["image"], tools, "{job:#}");
    assert_eq!(
        init[0]["command"],
        json!(["/bin/cp", "-Rv", "/bin/cpb", "/util/cpb"]),
        "{job:#}"
    );
    assert_eq!(init[1]["image"], bundle, "{job:#}");
    assert_eq!(
        init[1]["command"],
        json!(["/util/cpb", "/bundle"]),
        "{job:#}"
    );
    let extract = &spec["containers"][0];
    assert_eq!(extract["image"], tools, "{job:#}");
    let name = job["metadata"]["name"].as_str().unwrap();
    assert_eq!(
        extract["command"],
        json!([
            "opm", "alpha", "bundle", "extract", "-m", "/bundle/", "-n", "olm", "-c", name, "-z"
        ]),
        "{job:#}"
    );
    assert_eq!(job["status"]["succeeded"], 1, "{job:#}");
}

/// ConfigMap olm/`name`, as the Job's extract container left it: the bundle's annotations
/// and its one manifest, gzipped.
async fn check_unpacked_config_map(kube: &Kube, name: &str) {
    let cm = kube
        .get(&format!("/api/v1/namespaces/olm/configmaps/{name}"))
        .await
        .unwrap_or_else(|| panic!("no ConfigMap olm/{name}"));
    let annotations = &cm["metadata"]["annotations"];
    assert_eq!(
        annotations["operators.operatorframework.io.bundle.package.v1"], UNPACK,
        "{cm:#}"
    );
    let keys: Vec<&String> = cm["binaryData"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        [&format!("{UNPACK}.clusterserviceversion.yaml")],
        "{cm:#}"
    );
}

/// With extractContent, OLM's pod runs our tools image twice: `cp` of `copy-content` in the
/// first init container, `/bin/opm serve` on the copies in the registry container.
fn check_extract_content(pod: &Value, tools: &str) {
    let spec = &pod["spec"];
    let init = &spec["initContainers"];
    assert_eq!(init[0]["image"], tools, "{pod:#}");
    assert_eq!(init[0]["command"], json!(["cp"]), "{pod:#}");
    assert_eq!(
        init[1]["command"],
        json!(["/utilities/copy-content"]),
        "{pod:#}"
    );
    let container = &spec["containers"][0];
    assert_eq!(container["image"], tools, "{pod:#}");
    assert_eq!(
        container["args"],
        json!([
            "serve",
            "/extracted-catalog/catalog",
            "--cache-dir=/extracted-catalog/cache"
        ]),
        "{pod:#}"
    );
}

/// The registry pod is OLM's, as OLM makes it with `securityContextConfig: restricted`: our
/// image, its own probe command, user 1001 and not root, no privilege escalation, every
/// capability dropped (namespace olm enforces the restricted Pod Security Standard, so the API
/// server would have refused anything less).
fn check_restricted(pod: &Value, image: &str) {
    let spec = &pod["spec"];
    let container = &spec["containers"][0];
    assert_eq!(container["image"], image, "{pod:#}");
    assert_eq!(
        container["readinessProbe"]["exec"]["command"],
        json!(["grpc_health_probe", "-addr=:50051"]),
        "{pod:#}"
    );
    assert_eq!(
        spec["securityContext"],
        json!({"runAsNonRoot": true, "runAsUser": 1001, "seccompProfile": {"type": "RuntimeDefault"}}),
        "{pod:#}"
    );
    assert_eq!(
        container["securityContext"],
        json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
               "readOnlyRootFilesystem": false}),
        "{pod:#}"
    );
}

/// packageserver's PackageManifest of node-op from CatalogSource olm/`catalog`, once the
/// head of its channel `stable` is `head`.
async fn package_manifest(token: &str, catalog: &str, head: &str) -> Value {
    // packageserver serves a certificate it made itself.
    let http = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    let url = format!(
        "{PACKAGESERVER}/apis/packages.operators.coreos.com/v1/namespaces/e2e/packagemanifests?labelSelector=catalog%3D{catalog}"
    );
    eventually(
        &format!("a PackageManifest of {catalog} with head {head}"),
        OLM_PATIENCE,
        || async {
            let list: Value = http
                .get(&url)
                .bearer_auth(token)
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            let items = list["items"].as_array()?;
            let manifest = items.iter().find(|m| m["metadata"]["name"] == "node-op")?;
            let channels = manifest["status"]["channels"].as_array()?;
            channels
                .iter()
                .any(|c| c["name"] == "stable" && c["currentCSV"] == head)
                .then(|| manifest.clone())
        },
    )
    .await
}

/// Subscription e2e/`package` to `channel` of CatalogSource olm/`source`, approved
/// automatically.
async fn subscribe(kube: &Kube, package: &str, channel: &str, source: &str) {
    kube.create(
        "/apis/operators.coreos.com/v1alpha1/namespaces/e2e/subscriptions",
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": package, "namespace": "e2e"},
               "spec": {"name": package, "channel": channel, "source": source,
                        "sourceNamespace": "olm", "installPlanApproval": "Automatic"}}),
    )
    .await;
}

/// Waits until CSV e2e/`name` is Succeeded: its Deployment ran and is available.
async fn wait_for_csv_succeeded(kube: &Kube, name: &str) {
    let path = format!("{CSVS}/{name}");
    eventually(&format!("CSV {name} Succeeded"), OLM_PATIENCE, || async {
        let csv = kube.get(&path).await?;
        let phase = csv["status"]["phase"].as_str().unwrap_or_default();
        assert_ne!(phase, "Failed", "CSV {name} failed: {csv:#}");
        (phase == "Succeeded").then_some(())
    })
    .await
}
