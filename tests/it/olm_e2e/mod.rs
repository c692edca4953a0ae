//! OLM itself against our server: a real kube-apiserver and OLM v0.31.0's catalog operator, olm
//! operator and packageserver (`../shared/tools/olm-e2e`), with `serve` beside them, as a
//! cluster runs it. OLM's operators bind ports on every interface, so the whole test runs in a
//! private network namespace with only loopback up.
//!
//! The catalog under test has two real packages: `prometheus`, whose bundles carry their
//! objects and no image (OLM installs straight from `Bundle.object`), and `etcd`, whose bundles
//! are images in a loopback registry (OLM creates an unpack Job; with no kubelet here the test
//! does that Job's work with our `opm alpha bundle extract`). prometheus requires etcd.
mod catalogs;
mod fbc;
mod jobs;
mod packages;
mod resolution;

use crate::common::control_plane::ControlPlane;
use crate::common::kube::Kube;
use crate::common::olm::{
    OLM_PATIENCE as PATIENCE, Olm, olm_test, wait_for_catalog_state, wait_for_install_plan,
};
use crate::common::registry::TestRegistry;
use crate::common::{Server, shared_testdata};
use catalogs::E2eCatalogs;
use jobs::JobRunner;
use packages::PackageServer;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tonic_health::pb::health_check_response::ServingStatus;

/// Where our servers listen inside the private network namespace.
const E2E_ADDR: &str = "127.0.0.1:50051";
const EXAMPLES_ADDR: &str = "127.0.0.1:50052";
const COMMUNITY_ADDR: &str = "127.0.0.1:50053";
const METRICS_ADDR: &str = "127.0.0.1:9091";
const BIG_ADDR: &str = "127.0.0.1:50054";
const BIG_METRICS: &str = "127.0.0.1:9092";
const PACKAGESERVER: &str = "https://127.0.0.1:5443";

#[test]
fn olm_lists_installs_and_upgrades_from_our_server() {
    olm_test("the OLM end-to-end test", run);
}

async fn run(tools: PathBuf) {
    let started = Instant::now();
    let cp = ControlPlane::start().expect("the olm-e2e tools are present");
    cp.apply_crds(&tools.join("crds"));
    let kube = Kube(cp.client().await);
    for ns in ["olm", "e2e"] {
        kube.create(
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .await;
    }
    let work = tempfile::tempdir().unwrap();
    let registry = TestRegistry::plain();
    let catalogs = E2eCatalogs::build(work.path(), &registry.addr);
    let olm = Olm::start(&cp, work.path());
    eprintln!(
        "control plane, registry, catalogs and OLM up in {:?}",
        started.elapsed()
    );

    // a. CatalogSources reach READY.
    let serve_started = Instant::now();
    let mut server = serve(&catalogs.v1, E2E_ADDR, &["--metrics-addr", METRICS_ADDR]);
    let examples_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let community_dir =
        shared_testdata("real/community-catalog-v4.16").expect("../shared/testdata/real is absent");
    let _examples = serve(&examples_dir, EXAMPLES_ADDR, &[]);
    let _community = serve(&community_dir, COMMUNITY_ADDR, &[]);
    for (name, addr) in [
        ("e2e", E2E_ADDR),
        ("examples", EXAMPLES_ADDR),
        ("community", COMMUNITY_ADDR),
    ] {
        create_catalog_source(&kube, name, addr).await;
    }
    for name in ["e2e", "examples", "community"] {
        wait_for_catalog_state(&kube, "olm", name, |s| s == "READY").await;
    }
    let to_ready = serve_started.elapsed();
    let stopped_while_listing = sigterm_while_olm_lists(&kube, work.path()).await;

    // b. packageserver lists what the catalogs say.
    let packages = PackageServer::new(&cp.token);
    for (name, dir) in [
        ("e2e", catalogs.v1.as_path()),
        ("examples", &examples_dir),
        ("community", &community_dir),
    ] {
        packages.check_catalog(name, dir).await;
    }
    let to_listed = serve_started.elapsed();

    // c. A Subscription installs prometheus (from Bundle.object) and its dependency etcd
    // (from the bundle image, through the unpack Job).
    kube.create(
        "/apis/operators.coreos.com/v1/namespaces/e2e/operatorgroups",
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
               "metadata": {"name": "e2e", "namespace": "e2e"}, "spec": {"targetNamespaces": ["e2e"]}}),
    )
    .await;
    // The state OLM resolves from: nothing installed, one Subscription (read back once created,
    // before OLM can have installed anything: that waits for the unpack Job this test runs).
    kube.create(
        "/apis/operators.coreos.com/v1alpha1/namespaces/e2e/subscriptions",
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": "prometheus", "namespace": "e2e"},
               "spec": {"name": "prometheus", "channel": "beta", "source": "e2e",
                        "sourceNamespace": "olm", "installPlanApproval": "Automatic"}}),
    )
    .await;
    let state_c = resolution::cluster_state(&kube).await;
    assert_eq!(state_c["installed"], json!([]), "{state_c:#}");
    // e. (first half) our resolution of that state, from the server OLM uses.
    let resolved_c = resolution::resolve(work.path(), state_c, E2E_ADDR);
    let jobs = JobRunner::new(&cp, work.path());
    let first = wait_for_install_plan(&kube, "e2e", "prometheusoperator.0.47.0", || {
        jobs.run_pending(&kube)
    })
    .await;
    let to_installed = serve_started.elapsed();
    let mut installed = csv_names(&first);
    installed.sort();
    assert_eq!(
        installed,
        ["etcdoperator.v0.9.4", "prometheusoperator.0.47.0"]
    );
    assert_eq!(
        resolved_c.bundles, installed,
        "our resolution differs from OLM's"
    );
    let steps = plan_steps(&first);
    for (bundle, objects) in [
        (
            "prometheusoperator.0.47.0",
            catalogs.objects("prometheusoperator.0.47.0"),
        ),
        (
            "etcdoperator.v0.9.4",
            catalogs.objects("etcdoperator.v0.9.4"),
        ),
    ] {
        for (kind, name) in objects {
            let status = steps.get(&(bundle.to_owned(), kind.clone(), name.clone()));
            assert!(
                matches!(status.map(String::as_str), Some("Created" | "Present")),
                "{bundle}: no completed step for {kind} {name} in {steps:#?}"
            );
        }
    }
    for csv in &installed {
        kube.get(&format!(
            "/apis/operators.coreos.com/v1alpha1/namespaces/e2e/clusterserviceversions/{csv}"
        ))
        .await
        .unwrap_or_else(|| panic!("CSV {csv} was not created"));
    }
    // OLM subscribes to the dependency itself, under the name our resolution gives it.
    let subs = kube
        .list("/apis/operators.coreos.com/v1alpha1/namespaces/e2e/subscriptions")
        .await;
    let mut sub_names: Vec<String> = subs
        .iter()
        .map(|s| s["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    sub_names.sort();
    let mut expected_subs = resolved_c.new_subscriptions.clone();
    expected_subs.push("prometheus".to_owned());
    expected_subs.sort();
    assert_eq!(sub_names, expected_subs);
    // Only etcd has a bundle image; OLM unpacked it once, through our `opm alpha bundle extract`.
    assert_eq!(jobs.done(), [catalogs.etcd_image("0.9.4")]);

    // d. Our server stops (SIGTERM) and comes back on the same address with a newer head:
    // OLM notices, reconnects, re-lists and upgrades, with no restart of its own.
    let stopped_in = stop_cleanly(&mut server).await;
    wait_for_catalog_state(&kube, "olm", "e2e", |s| s != "READY").await;
    let state_d = resolution::cluster_state(&kube).await;
    let restarted = Instant::now();
    let server2 = serve(&catalogs.v2, E2E_ADDR, &["--metrics-addr", METRICS_ADDR]);
    wait_for_catalog_state(&kube, "olm", "e2e", |s| s == "READY").await;
    // e. (second half) our resolution of the installed state, from the restarted server.
    let resolved_d = resolution::resolve(work.path(), state_d, E2E_ADDR);
    let second = wait_for_install_plan(&kube, "e2e", "prometheusoperator.0.56.3", || {
        jobs.run_pending(&kube)
    })
    .await;
    kube.get("/apis/operators.coreos.com/v1alpha1/namespaces/e2e/clusterserviceversions/prometheusoperator.0.56.3")
        .await
        .expect("the upgraded CSV was not created");
    let upgraded_in = restarted.elapsed();
    assert_eq!(csv_names(&second), ["prometheusoperator.0.56.3"]);
    assert_eq!(
        resolved_d.bundles,
        csv_names(&second),
        "our resolution differs from OLM's"
    );
    assert_eq!(resolved_d.new_subscriptions, Vec::<String>::new());
    let calls = grpc_calls(METRICS_ADDR, "grpc_server_handled_total");

    // OLM's clients never met a socket that accepted and then said nothing.
    for log in ["catalog-operator", "package-server"] {
        let text = olm.log(log);
        assert!(
            !text.contains("error reading server preface"),
            "{log} met a connection without an HTTP/2 preface:\n{text}"
        );
    }
    eprintln!(
        "FIGURES: serve start -> CatalogSources READY {to_ready:?}; -> PackageManifests listed \
         {to_listed:?}; -> InstallPlan Complete {to_installed:?}; SIGTERM -> exit {stopped_in:?}, while OLM lists a catalog \
         {stopped_while_listing:?}; \
         restart -> upgraded CSV {upgraded_in:?}; calls on the restarted server {calls:?}; \
         whole test {:?}",
        started.elapsed()
    );
    drop(server2);
    drop(olm);
}

/// Starts `serve DIR` on `addr` (once it listens; OLM's wait for READY is the readiness
/// check that matters here).
fn serve(dir: &Path, addr: &str, extra: &[&str]) -> Server {
    Server::start_at(dir, addr, extra)
}

/// The defect OLM found first: SIGTERM while OLM lists a catalog (a ListBundles whose
/// consumer asks GetPackage for each bundle, on a new connection once the server said GOAWAY).
/// OLM lists a catalog as soon as its CatalogSource appears; this one is big enough (1,500
/// bundles, 30 MB) for the listing to last, and the server is told to stop the moment its
/// metrics show a ListBundles in progress. Every listener closes at once (OLM's new
/// connections are refused, so it moves on), the calls in progress finish, and the process
/// exits well within its grace period. Returns how long the stop took.
async fn sigterm_while_olm_lists(kube: &Kube, work: &Path) -> Duration {
    let dir = work.join("big-catalog");
    std::fs::create_dir_all(&dir).unwrap();
    crate::common::generated_catalog(&dir, 1500, 20_000);
    let mut big = serve(&dir, BIG_ADDR, &["--metrics-addr", BIG_METRICS]);
    big.wait_for_status(ServingStatus::Serving).await;
    create_catalog_source(kube, "big", BIG_ADDR).await;
    // Looked at every few milliseconds: a listing lasts a fraction of a second.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let started = grpc_calls(BIG_METRICS, "grpc_server_started_total");
        let handled = grpc_calls(BIG_METRICS, "grpc_server_handled_total");
        if started.get("ListBundles") > handled.get("ListBundles") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no ListBundles in progress within {PATIENCE:?}: started {started:?}, handled {handled:?}"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let took = stop_cleanly(&mut big).await;
    // Gone for good: OLM resolves against every catalog of its global namespace, and would
    // wait for this one.
    kube.delete("/apis/operators.coreos.com/v1alpha1/namespaces/olm/catalogsources/big")
        .await;
    took
}

/// SIGTERM, then the process exits 0 with no call cut at the end of its grace period;
/// returns how long that took.
async fn stop_cleanly(server: &mut Server) -> Duration {
    let started = Instant::now();
    server.signal("TERM");
    let status = server.wait().await;
    let took = started.elapsed();
    assert_eq!(status.code(), Some(0), "log:\n{}", server.log());
    assert!(
        !server.log().contains("after the grace period"),
        "calls were cut at the end of the grace period:\n{}",
        server.log()
    );
    took
}

/// Runs `command` to success (failing the test with its stderr otherwise); its stdout.
fn run_ok(command: &mut Command) -> Vec<u8> {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A server's gRPC call counter `metric` (`grpc_server_started_total`, ...), by method, from
/// its metrics on `addr`.
fn grpc_calls(addr: &str, metric: &str) -> BTreeMap<String, f64> {
    let (_, text) = crate::common::prometheus::get(addr, "/metrics").unwrap();
    let mut calls = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
    {
        let method = line
            .split("grpc_method=\"")
            .nth(1)
            .and_then(|r| r.split('"').next());
        let value = line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
        if let (Some(m), Some(v)) = (method, value)
            && v > 0.0
        {
            *calls.entry(m.to_owned()).or_insert(0.0) += v;
        }
    }
    calls
}

/// CatalogSource olm/`name` for the catalog server at `addr`.
async fn create_catalog_source(kube: &Kube, name: &str, addr: &str) {
    kube.create(
        "/apis/operators.coreos.com/v1alpha1/namespaces/olm/catalogsources",
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": "olm"},
            "spec": {"sourceType": "grpc", "address": addr, "displayName": name, "publisher": "e2e"},
        }),
    )
    .await;
}

/// The CSVs an InstallPlan installs.
fn csv_names(plan: &Value) -> Vec<String> {
    plan["spec"]["clusterServiceVersionNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

/// (bundle, kind, name) -> status of every step of an InstallPlan.
fn plan_steps(plan: &Value) -> BTreeMap<(String, String, String), String> {
    plan["status"]["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| {
            let r = &step["resource"];
            (
                (
                    step["resolving"].as_str().unwrap().to_owned(),
                    r["kind"].as_str().unwrap().to_owned(),
                    r["name"].as_str().unwrap().to_owned(),
                ),
                step["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}
