//! `explain` against a real cluster: kube-apiserver (RBAC on) and OLM v0's operators from
//! `../shared/tools/olm-e2e`, in a private network namespace, with catalog servers we start
//! (`address:` CatalogSources) and one image CatalogSource whose pod never runs (no node):
//! a catalog that is down, which fails OLM's resolution of every namespace that sees it. One cluster, one namespace per situation, each made stuck on
//! purpose; for each, OLM's own word (the Subscription's condition, or the CSV's) is recorded
//! beside ours, and ours must name the planted cause. Where OLM goes on (an install, then an
//! upgrade, each waiting for approval), the InstallPlan explain predicts is the one OLM makes.
mod catalogs;
mod v1;

use crate::common::control_plane::ControlPlane;
use crate::common::kube::{Kube, eventually};
use crate::common::olm::{OLM_PATIENCE, Olm, olm_test, wait_for_catalog_state};
use crate::common::registry::TestRegistry;
use crate::common::{BIN, Server};
use catalogs::{down_bundles, gap_bundles, main_bundles, write};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const MAIN_ADDR: &str = "127.0.0.1:50061";
const GAP_V1_ADDR: &str = "127.0.0.1:50062";
const GAP_V2_ADDR: &str = "127.0.0.1:50063";
const SUBS: &str = "/apis/operators.coreos.com/v1alpha1/namespaces";

/// One planted situation: a namespace, its Subscription, and what explain must say.
struct Situation {
    namespace: &'static str,
    subscription: &'static str,
    cause: &'static str,
    /// Words the facts must hold (the planted cause named exactly).
    facts: &'static [&'static str],
}

const SITUATIONS: &[Situation] = &[
    Situation {
        namespace: "dep-down",
        subscription: "needs-down",
        cause: "dependencyMissing",
        facts: &[
            "needs-down.v1.0.0 requires package downdep in range >=1.0.0",
            "catalog dep-down/down would provide it (downdep.v1.2.0)",
        ],
    },
    Situation {
        namespace: "no-gvk",
        subscription: "needs-api",
        cause: "dependencyMissing",
        facts: &[
            "needs-api.v1.0.0 requires API Gizmo (example.com/v1)",
            "no READY catalog visible from namespace no-gvk provides API Gizmo (example.com/v1)",
        ],
    },
    Situation {
        namespace: "two-owners",
        subscription: "beta",
        cause: "apiOwnedTwice",
        facts: &[
            "beta.v1.0.0 provides Widget (example.com/v1)",
            "CSV alpha.v1.0.0 provides Widget (example.com/v1) in namespace two-owners too",
        ],
    },
    Situation {
        namespace: "gap",
        subscription: "gappy",
        cause: "upgradeGap",
        facts: &[
            "gappy.v1.0.0 (version 1.0.0) is installed",
            "the channel's newest bundle is gappy.v1.2.0 (version 1.2.0)",
            "no bundle of the channel replaces gappy.v1.0.0, skips it, or has a skipRange holding 1.0.0; the channel's edges: gappy.v1.2.0 (replaces gappy.v1.1.0, skipRange >=1.1.0 <1.2.0); gappy.v1.1.0",
        ],
    },
    Situation {
        namespace: "channel",
        subscription: "chan",
        cause: "channelGone",
        facts: &[
            "package chan in catalog olm/main has no channel beta; its channels: stable (default stable)",
        ],
    },
    Situation {
        namespace: "modes",
        subscription: "ownonly",
        cause: "installModeForbidden",
        facts: &["all namespaces"],
    },
    Situation {
        namespace: "starting",
        subscription: "chan",
        cause: "startingCsvMissing",
        facts: &[
            "channel stable of package chan in catalog olm/main has no bundle chan.v9.9.9; its bundles: chan.v1.0.0",
        ],
    },
    Situation {
        namespace: "no-og",
        subscription: "chan",
        cause: "operatorGroup",
        facts: &["namespace no-og has no OperatorGroup"],
    },
];

#[test]
fn explain_names_what_keeps_subscriptions_stuck() {
    olm_test("explain end-to-end test", run);
}

async fn run(tools: PathBuf) {
    let started = Instant::now();
    let cp = ControlPlane::start_rbac().expect("the olm-e2e tools are present");
    cp.apply_crds(&tools.join("crds"));
    let kube = Kube(cp.client().await);
    let namespaces = ["olm", "gap", "upgrade", "broken"]
        .into_iter()
        .chain(SITUATIONS.iter().map(|s| s.namespace));
    for ns in namespaces {
        let path = "/api/v1/namespaces";
        if kube.get(&format!("{path}/{ns}")).await.is_none() {
            kube.create(
                path,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .await;
        }
    }
    let work = tempfile::tempdir().unwrap();
    let registry = TestRegistry::plain();
    let down_image = format!("{}/explain/down:v1", registry.addr);
    let down_dir = write(&work.path().join("down"), &down_bundles());
    run_ok(
        Command::new(BIN)
            .args(["--use-http", "build", "catalog"])
            .arg(&down_dir)
            .args(["--tag", &down_image]),
    );
    let _main = Server::start_at(
        &write(&work.path().join("main"), &main_bundles()),
        MAIN_ADDR,
        &[],
    );
    let _gap_v1 = Server::start_at(
        &write(&work.path().join("gap-v1"), &gap_bundles(false)),
        GAP_V1_ADDR,
        &[],
    );
    let _gap_v2 = Server::start_at(
        &write(&work.path().join("gap-v2"), &gap_bundles(true)),
        GAP_V2_ADDR,
        &[],
    );
    let olm = Olm::start(&cp, work.path());
    catalog_source(&kube, "olm", "main", json!({"address": MAIN_ADDR})).await;
    // Down in its namespace only: OLM fails every resolution that sees a catalog it cannot list.
    catalog_source(&kube, "dep-down", "down", json!({"image": down_image})).await;
    catalog_source(&kube, "gap", "gap", json!({"address": GAP_V1_ADDR})).await;
    wait_for_catalog_state(&kube, "olm", "main", |s| s == "READY").await;
    wait_for_catalog_state(&kube, "gap", "gap", |s| s == "READY").await;
    eprintln!(
        "control plane, OLM and catalogs up in {:?}",
        started.elapsed()
    );

    // The situations that need something installed first.
    operator_group(
        &kube,
        "two-owners",
        json!({"targetNamespaces": ["two-owners"]}),
    )
    .await;
    // Manual, so that the test approves a plan only once OLM has settled on it (see
    // `settled_plan`).
    let manual = json!({"installPlanApproval": "Manual"});
    subscription(&kube, "two-owners", "alpha", manual.clone()).await;
    operator_group(&kube, "upgrade", json!({"targetNamespaces": ["upgrade"]})).await;
    subscription(
        &kube,
        "upgrade",
        "upgrader",
        json!({"startingCSV": "upgrader.v1.0.0", "installPlanApproval": "Manual"}),
    )
    .await;
    operator_group(&kube, "gap", json!({"targetNamespaces": ["gap"]})).await;
    subscription(
        &kube,
        "gap",
        "gappy",
        json!({"source": "gap", "sourceNamespace": "gap", "installPlanApproval": "Manual"}),
    )
    .await;
    install(&kube, "two-owners", "alpha", "alpha.v1.0.0").await;
    install(&kube, "gap", "gappy", "gappy.v1.0.0").await;
    let kubeconfig = cp.kubeconfig.to_str().unwrap().to_owned();
    // Before the stuck namespaces exist: OLM re-resolves those in a loop, which slows every
    // resolution and widens a race of its own (see `approve_when_referenced`).
    upgrade_waits_for_approval(&kube, &kubeconfig).await;
    kube.merge_patch(
        &format!("{SUBS}/gap/catalogsources/gap"),
        json!({"spec": {"address": GAP_V2_ADDR}}),
    )
    .await;
    // The rest.
    for (ns, targets) in [
        ("dep-down", json!({"targetNamespaces": ["dep-down"]})),
        ("no-gvk", json!({"targetNamespaces": ["no-gvk"]})),
        ("channel", json!({"targetNamespaces": ["channel"]})),
        ("modes", json!({})),
        ("starting", json!({"targetNamespaces": ["starting"]})),
    ] {
        operator_group(&kube, ns, targets).await;
    }
    subscription(&kube, "two-owners", "beta", json!({})).await;
    subscription(&kube, "dep-down", "needs-down", json!({})).await;
    subscription(&kube, "no-gvk", "needs-api", json!({})).await;
    subscription(&kube, "channel", "chan", json!({"channel": "beta"})).await;
    subscription(&kube, "modes", "ownonly", json!({})).await;
    subscription(
        &kube,
        "starting",
        "chan",
        json!({"startingCSV": "chan.v9.9.9"}),
    )
    .await;
    subscription(&kube, "no-og", "chan", json!({})).await;

    // What OLM says, once it has said it.
    let mut seen = Vec::new();
    for s in SITUATIONS {
        let said = olm_says(&kube, s).await;
        seen.push((s, said));
    }
    let mut one_namespace = Duration::ZERO;
    let mut one_calls = 0;
    for (s, said) in &seen {
        let (code, report, took) = explain(&kubeconfig, &["-n", s.namespace, s.subscription]);
        let sub = &report["namespaces"][0]["subscriptions"][0];
        eprintln!(
            "SITUATION {}: OLM: {said}\n  ours: {} [{}]\n    {}",
            s.namespace,
            sub["summary"],
            sub["cause"],
            sub["facts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect::<Vec<_>>()
                .join("\n    ")
        );
        assert_eq!(code, 1, "{}: {report:#}", s.namespace);
        assert_eq!(sub["name"], s.subscription, "{report:#}");
        assert_eq!(sub["verdict"], "stuck", "{}: {report:#}", s.namespace);
        assert_eq!(sub["cause"], s.cause, "{}: {report:#}", s.namespace);
        let facts: Vec<&str> = sub["facts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        let facts = facts.join("\n");
        for f in s.facts {
            assert!(
                facts.contains(f),
                "{}: no fact {f:?} in\n{facts}",
                s.namespace
            );
        }
        one_namespace = one_namespace.max(took);
        one_calls = report["apiCalls"].as_u64().unwrap();
    }

    // Every namespace at once.
    let (code, all, all_took) = explain(&kubeconfig, &["-A"]);
    assert_eq!(code, 1, "{all:#}");
    // Each planted cause, and alpha, held up by beta: OLM resolves a namespace as a whole.
    let mut causes: Vec<String> = all["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|n| n["subscriptions"].as_array().unwrap())
        .filter(|s| s["verdict"] == "stuck")
        .map(|s| {
            format!(
                "{}/{}",
                s["name"].as_str().unwrap(),
                s["cause"].as_str().unwrap()
            )
        })
        .collect();
    causes.sort();
    let mut planted: Vec<String> = SITUATIONS
        .iter()
        .map(|s| format!("{}/{}", s.subscription, s.cause))
        .chain(["alpha/blockedByOther".to_owned()])
        .collect();
    planted.sort();
    assert_eq!(causes, planted, "{all:#}");

    bad_input(&kube, &cp, &kubeconfig, &registry.addr).await;
    eprintln!(
        "FIGURES: explain one namespace {one_namespace:?} ({one_calls} API calls); every namespace \
         ({} namespaces) {all_took:?} ({} API calls); whole test {:?}",
        all["namespaces"].as_array().unwrap().len(),
        all["apiCalls"],
        started.elapsed()
    );
    drop(olm);
}

/// An install waiting for approval, then the upgrade after it: explain's InstallPlan is the
/// one OLM makes.
async fn upgrade_waits_for_approval(kube: &Kube, kubeconfig: &str) {
    let first = settled_plan(kube, "upgrade", "upgrader", "upgrader.v1.0.0").await;
    let predicted = predicted_plan(kubeconfig);
    assert_eq!(predicted, ["upgrader.v1.0.0"]);
    assert_eq!(plan_csvs(&first), predicted);
    approve(kube, &first).await;
    installed(kube, "upgrade", "upgrader", "upgrader.v1.0.0").await;
    let predicted = predicted_plan(kubeconfig);
    let second = waiting_plan(kube, "upgrade", "upgrader.v2.0.0").await;
    assert_eq!(predicted, ["upgrader.v2.0.0"]);
    assert_eq!(plan_csvs(&second), predicted);
}

/// Runs `explain -o json` with `args`: exit code, report, time taken.
fn explain(kubeconfig: &str, args: &[&str]) -> (i32, Value, Duration) {
    let started = Instant::now();
    let out = Command::new(BIN)
        .args(["--use-http", "explain", "-k", kubeconfig, "-o", "json"])
        .args(args)
        .output()
        .unwrap();
    let took = started.elapsed();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "explain {args:?}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), report, took)
}

/// The CSVs of the InstallPlan explain predicts for namespace upgrade.
fn predicted_plan(kubeconfig: &str) -> Vec<String> {
    let (code, report, _) = explain(kubeconfig, &["-n", "upgrade"]);
    assert_eq!(code, 0, "{report:#}");
    serde_json::from_value(
        report["namespaces"][0]["installPlan"]["clusterServiceVersionNames"].clone(),
    )
    .unwrap_or_else(|e| panic!("{e}: {report:#}"))
}

/// Exit 2 with a message naming what is wrong: an API server nobody answers at, a user
/// without rights, a CatalogSource image that is not there.
async fn bad_input(kube: &Kube, cp: &ControlPlane, kubeconfig: &str, registry: &str) {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let server = format!("https://127.0.0.1:{}", cp.api_port);
    assert!(text.contains(&server), "the kubeconfig names {server}");
    let nowhere = dir.path().join("nowhere");
    std::fs::write(&nowhere, text.replace(&server, "https://127.0.0.1:1")).unwrap();
    let (code, stderr) = explain_err(&nowhere, &["-n", "gap"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("error: cannot reach the API server at https://127.0.0.1:1/: ")
            && stderr.contains("Connection refused"),
        "{stderr}"
    );
    eprintln!("BAD INPUT (unreachable): {stderr}");

    // A service account with no Role at all.
    kube.create(
        "/api/v1/namespaces/gap/serviceaccounts",
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nobody"}}),
    )
    .await;
    let token = kube
        .create(
            "/api/v1/namespaces/gap/serviceaccounts/nobody/token",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        )
        .await["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let nobody = dir.path().join("nobody");
    let admin_token = cp.token.clone();
    assert!(
        text.contains(&admin_token),
        "the kubeconfig holds the admin token"
    );
    std::fs::write(&nobody, text.replace(&admin_token, &token)).unwrap();
    let (code, stderr) = explain_err(&nobody, &["-n", "gap"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr
            .contains("no permission to list catalogsources.operators.coreos.com in namespace gap"),
        "{stderr}"
    );
    eprintln!("BAD INPUT (no rights): {stderr}");

    // A CatalogSource whose image is not in the registry.
    let missing = format!("{registry}/explain/missing:v1");
    catalog_source(kube, "broken", "broken", json!({"image": missing})).await;
    operator_group(kube, "broken", json!({"targetNamespaces": ["broken"]})).await;
    subscription(
        kube,
        "broken",
        "chan",
        json!({"source": "broken", "sourceNamespace": "broken"}),
    )
    .await;
    let (code, stderr) = explain_err(Path::new(kubeconfig), &["-n", "broken"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "CatalogSource broken/broken (image {missing}) cannot be read"
        )),
        "{stderr}"
    );
    eprintln!("BAD INPUT (image): {stderr}");
}

fn explain_err(kubeconfig: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["--use-http", "explain", "-k"])
        .arg(kubeconfig)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What OLM shows for a situation, once it shows it: the Subscription's ResolutionFailed
/// message, the failed CSV's message, or the Subscription's state when it says no more.
async fn olm_says(kube: &Kube, s: &Situation) -> String {
    let sub_path = format!("{SUBS}/{}/subscriptions/{}", s.namespace, s.subscription);
    match s.cause {
        "installModeForbidden" => {
            let csvs = format!(
                "{SUBS}/{}/clusterserviceversions/ownonly.v1.0.0",
                s.namespace
            );
            eventually("the CSV's failure", OLM_PATIENCE, || async {
                let csv = kube.get(&csvs).await?;
                (csv["status"]["reason"] == "UnsupportedOperatorGroup").then(|| {
                    format!(
                        "CSV {}: {}",
                        csv["status"]["reason"], csv["status"]["message"]
                    )
                })
            })
            .await
        }
        "upgradeGap" => {
            // OLM re-lists the catalog at its new address and stays where it is.
            eventually("the Subscription's state", OLM_PATIENCE, || async {
                let sub = kube.get(&sub_path).await?;
                let state = sub["status"]["state"].as_str()?;
                (state == "AtLatestKnown" && sub["status"]["currentCSV"] == "gappy.v1.0.0")
                    .then(|| format!("state {state}, no condition"))
            })
            .await
        }
        "operatorGroup" => "nothing: the Subscription has no status".to_owned(),
        _ => {
            eventually("OLM's ResolutionFailed", OLM_PATIENCE, || async {
                let sub = kube.get(&sub_path).await?;
                sub["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .find(|c| c["type"] == "ResolutionFailed" && c["status"] == "True")
                    .map(|c| format!("ResolutionFailed: {}", c["message"].as_str().unwrap_or("")))
            })
            .await
        }
    }
}

async fn catalog_source(kube: &Kube, ns: &str, name: &str, spec: Value) {
    let mut spec = spec;
    spec["sourceType"] = json!("grpc");
    kube.create(
        &format!("{SUBS}/{ns}/catalogsources"),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
               "metadata": {"name": name, "namespace": ns}, "spec": spec}),
    )
    .await;
}

async fn operator_group(kube: &Kube, ns: &str, spec: Value) {
    kube.create(
        &format!("/apis/operators.coreos.com/v1/namespaces/{ns}/operatorgroups"),
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
               "metadata": {"name": ns, "namespace": ns}, "spec": spec}),
    )
    .await;
}

/// Subscription `package` in `ns`, from olm/main channel stable unless `extra` says otherwise.
async fn subscription(kube: &Kube, ns: &str, package: &str, extra: Value) {
    let mut spec = json!({"name": package, "channel": "stable", "source": "main",
                          "sourceNamespace": "olm", "installPlanApproval": "Automatic"});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    kube.create(
        &format!("{SUBS}/{ns}/subscriptions"),
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "metadata": {"name": package, "namespace": ns}, "spec": spec}),
    )
    .await;
}

/// Waits until Subscription `name` of `ns` has `csv` installed.
async fn installed(kube: &Kube, ns: &str, name: &str, csv: &str) {
    let path = format!("{SUBS}/{ns}/subscriptions/{name}");
    eventually(
        &format!("{csv} installed in {ns}"),
        OLM_PATIENCE,
        || async {
            let sub = kube.get(&path).await?;
            (sub["status"]["installedCSV"] == csv).then_some(())
        },
    )
    .await;
}

/// Waits for an InstallPlan of `ns` for `csv` that waits for approval.
async fn waiting_plan(kube: &Kube, ns: &str, csv: &str) -> Value {
    let path = format!("{SUBS}/{ns}/installplans");
    eventually(
        &format!("an InstallPlan for {csv}"),
        OLM_PATIENCE,
        || async {
            kube.list(&path)
                .await
                .into_iter()
                .find(|p| waits_to_install(p, csv))
        },
    )
    .await
}

/// How long a Subscription must stay as it is before the test approves the plan it points
/// at (see [`settled_plan`]).
const SETTLED: Duration = Duration::from_secs(5);

/// The InstallPlan for `csv` that Subscription `sub` of `ns` points at and that waits for
/// approval, once the Subscription has not changed for [`SETTLED`].
///
/// Why wait: OLM v0.31.0 writes a resolution's copy of a Subscription's status back whole, and
/// a resolution that read its cache just before the plan was made drops the plan's reference
/// (OLM then makes a new plan and points at that). A plan executed in between leaves a CSV no
/// Subscription claims, and every later resolution of the namespace fails ("exists and is not
/// referenced by a subscription"), for good; seen in CI. A user approves the plan the
/// Subscription shows; the pause lets a resolution already under way finish first.
async fn settled_plan(kube: &Kube, ns: &str, sub: &str, csv: &str) -> Value {
    let sub_path = format!("{SUBS}/{ns}/subscriptions/{sub}");
    // The Subscription's resourceVersion when it last pointed at a waiting plan, and since when.
    let seen = std::cell::RefCell::new(None::<(Value, Instant)>);
    eventually(
        &format!("Subscription {ns}/{sub} settled on an InstallPlan for {csv}"),
        OLM_PATIENCE,
        || async {
            let subscription = kube.get(&sub_path).await?;
            let status = &subscription["status"];
            let plan = match status["installPlanRef"]["name"].as_str() {
                Some(name) if status["state"] == "UpgradePending" => {
                    kube.get(&format!("{SUBS}/{ns}/installplans/{name}")).await
                }
                _ => None,
            }
            .filter(|p| waits_to_install(p, csv));
            let Some(plan) = plan else {
                *seen.borrow_mut() = None;
                return None;
            };
            let version = subscription["metadata"]["resourceVersion"].clone();
            let mut seen = seen.borrow_mut();
            match &*seen {
                Some((v, since)) if *v == version && since.elapsed() >= SETTLED => Some(plan),
                Some((v, _)) if *v == version => None,
                _ => {
                    *seen = Some((version, Instant::now()));
                    None
                }
            }
        },
    )
    .await
}

async fn approve(kube: &Kube, plan: &Value) {
    let path = format!(
        "{SUBS}/{}/installplans/{}",
        plan["metadata"]["namespace"].as_str().unwrap(),
        plan["metadata"]["name"].as_str().unwrap()
    );
    kube.merge_patch(&path, json!({"spec": {"approved": true}}))
        .await;
}

/// Subscription `sub` of `ns` (approval Manual) installs `csv`: its plan approved once settled.
async fn install(kube: &Kube, ns: &str, sub: &str, csv: &str) {
    let plan = settled_plan(kube, ns, sub, csv).await;
    approve(kube, &plan).await;
    installed(kube, ns, sub, csv).await;
}

/// Whether InstallPlan `plan` waits for approval and installs `csv`.
fn waits_to_install(plan: &Value, csv: &str) -> bool {
    plan["status"]["phase"] == "RequiresApproval" && plan_csvs(plan).iter().any(|c| c == csv)
}

fn plan_csvs(plan: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        serde_json::from_value(plan["spec"]["clusterServiceVersionNames"].clone()).unwrap();
    names.sort();
    names
}

fn run_ok(command: &mut Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
