//! `olm-registry catalogd` under RBAC for real: a control plane with
//! `--authorization-mode=RBAC`, catalogd run with its ServiceAccount's token and exactly the
//! roles of `deploy/catalogd.yaml`, through everything it does (list and watch, status,
//! finalizer, the Lease, a new image, Unavailable and back, delete) with no 403; then the same
//! ClusterRole without one rule, which catalogd reports naming the verb and the resource.
use crate::catalogd_http::lines;
use crate::common::control_plane::ControlPlane;
use crate::common::fixture;
use crate::common::kube::Kube;
use crate::common::olmv1::{CATALOGS, Catalogd, condition, push};
use crate::common::registry::TestRegistry;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(120);
const CLUSTER_ROLE: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles/olm-registry-catalogd";
const FINALIZER: &str = "olm.operatorframework.io/delete-server-cache";

/// The API path that creates `object` (the kinds `deploy/catalogd.yaml` holds), or None for
/// the workload itself (Deployment, Service), which this test runs as a process.
fn collection(object: &Value) -> Option<String> {
    let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    Some(match object["kind"].as_str().unwrap() {
        "ServiceAccount" => format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        "ClusterRole" => format!("{rbac}/clusterroles"),
        "ClusterRoleBinding" => format!("{rbac}/clusterrolebindings"),
        "Role" => format!("{rbac}/namespaces/{ns}/roles"),
        "RoleBinding" => format!("{rbac}/namespaces/{ns}/rolebindings"),
        _ => return None,
    })
}

/// Every document of `deploy/catalogd.yaml`.
fn deploy_objects() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/catalogd.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// The object at `path` once `check` accepts it; fails after [`PATIENCE`] with the object
/// as last seen and catalogd's log tail.
async fn wait(
    kube: &Kube,
    catalogd: &Catalogd,
    path: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let object = kube.get(path).await.unwrap_or(Value::Null);
        if check(&object) {
            return object;
        }
        assert!(
            Instant::now() < deadline,
            "{path} last seen:\n{object:#}\n{}",
            catalogd.daemon.tail(40)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether a catalog serves `reference` and says so for its current generation.
fn serving(object: &Value, reference: &str) -> bool {
    let progressing = condition(object, "Progressing");
    object["status"]["resolvedSource"]["image"]["ref"] == reference
        && progressing["reason"] == "Succeeded"
        && progressing["observedGeneration"] == object["metadata"]["generation"]
        && condition(object, "Serving")["reason"] == "Available"
}

#[tokio::test]
async fn catalogd_does_all_its_work_with_exactly_its_roles_and_names_a_missing_one() {
    let Some(cp) = ControlPlane::start_rbac() else {
        return;
    };
    let tools = ControlPlane::tools().unwrap();
    cp.apply_crds(&tools.join("olmv1/crds"));
    let admin = Kube(cp.client().await);
    admin
        .create(
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "olmv1-system"}}),
        )
        .await;
    let mut cluster_role = Value::Null;
    for object in deploy_objects() {
        if let Some(path) = collection(&object) {
            if object["kind"] == "ClusterRole" {
                cluster_role = object.clone();
            }
            admin.create(&path, object).await;
        }
    }
    // The ServiceAccount's token, as the kubelet would mount it.
    let request = admin
        .create(
            "/api/v1/namespaces/olmv1-system/serviceaccounts/olm-registry-catalogd/token",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 3600}}),
        )
        .await;
    let token = request["status"]["token"].as_str().unwrap();
    let work = tempfile::tempdir().unwrap();
    let kubeconfig = work.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: e2e\n  cluster: {{server: \
             \"https://127.0.0.1:{}\", insecure-skip-tls-verify: true}}\nusers:\n- name: \
             catalogd\n  user: {{token: \"{token}\"}}\ncontexts:\n- name: e2e\n  context: \
             {{cluster: e2e, user: catalogd}}\ncurrent-context: e2e\n",
            cp.api_port
        ),
    )
    .unwrap();

    let registry = TestRegistry::plain();
    let cache = work.path().join("build-cache");
    let tiny_dir = fixture("catalogd/tiny");
    let beta_dir = work.path().join("beta");
    let beta_all = lines(&[6, 7, 8]);
    std::fs::create_dir_all(&beta_dir).unwrap();
    std::fs::write(beta_dir.join("catalog.json"), &beta_all).unwrap();
    let one = push(
        "catalog",
        &tiny_dir,
        &registry.addr,
        "catalogs/tiny:v1",
        &cache,
    );
    let two = push(
        "catalog",
        &beta_dir,
        &registry.addr,
        "catalogs/tiny:v2",
        &cache,
    );
    let catalogd = Catalogd::start(&kubeconfig, &registry.addr, &work.path().join("cd"));

    // Created: served, status and finalizer written, the Lease taken.
    let path = format!("{CATALOGS}/tiny");
    let tag = |t: &str| format!("{}/catalogs/tiny:{t}", registry.addr);
    admin
        .create(
            CATALOGS,
            json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
                   "metadata": {"name": "tiny"},
                   "spec": {"source": {"type": "Image", "image": {"ref": tag("v1")}}}}),
        )
        .await;
    let object = wait(&admin, &catalogd, &path, |o| serving(o, &one)).await;
    assert_eq!(object["metadata"]["finalizers"], json!([FINALIZER]));
    assert_eq!(
        catalogd.all("tiny").await,
        (200, lines(&[1, 2, 3, 4, 5, 6, 7, 8]))
    );
    let lease = admin
        .get("/apis/coordination.k8s.io/v1/namespaces/olmv1-system/leases/catalogd-operator-lock")
        .await
        .expect("the Lease");
    assert!(lease["spec"]["holderIdentity"].is_string(), "{lease:#}");

    // A new image; Unavailable; available again; deleted.
    admin
        .merge_patch(
            &path,
            json!({"spec": {"source": {"image": {"ref": tag("v2")}}}}),
        )
        .await;
    wait(&admin, &catalogd, &path, |o| serving(o, &two)).await;
    assert_eq!(catalogd.all("tiny").await, (200, beta_all));
    admin
        .merge_patch(&path, json!({"spec": {"availabilityMode": "Unavailable"}}))
        .await;
    wait(&admin, &catalogd, &path, |o| {
        condition(o, "Serving")["reason"] == "UserSpecifiedUnavailable"
            && o["metadata"]["finalizers"].is_null()
    })
    .await;
    admin
        .merge_patch(&path, json!({"spec": {"availabilityMode": "Available"}}))
        .await;
    wait(&admin, &catalogd, &path, |o| {
        serving(o, &two) && o["metadata"]["finalizers"] == json!([FINALIZER])
    })
    .await;
    admin.delete(&path).await;
    wait(&admin, &catalogd, &path, Value::is_null).await;
    assert_eq!(catalogd.all("tiny").await.0, 404);
    let log = catalogd.daemon.tail(usize::MAX);
    assert!(
        !log.contains("403") && !log.to_lowercase().contains("forbidden"),
        "{log}"
    );

    // One rule fewer (patching the status): catalogd says which verb on which resource.
    let mut fewer = cluster_role.clone();
    let rules = fewer["rules"].as_array_mut().unwrap();
    let before = rules.len();
    rules.retain(|r| r["resources"] != json!(["clustercatalogs/status"]));
    assert_eq!(rules.len(), before - 1);
    admin
        .merge_patch(CLUSTER_ROLE, json!({"rules": fewer["rules"]}))
        .await;
    admin
        .create(
            CATALOGS,
            json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
                   "metadata": {"name": "second"},
                   "spec": {"source": {"type": "Image", "image": {"ref": tag("v1")}}}}),
        )
        .await;
    let deadline = Instant::now() + PATIENCE;
    let line = loop {
        let log = catalogd.daemon.tail(usize::MAX);
        if let Some(line) = log
            .lines()
            .find(|l| l.contains("cannot patch resource \"clustercatalogs/status\""))
        {
            break line.to_owned();
        }
        assert!(Instant::now() < deadline, "no 403 reported:\n{log}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // An error, not a warning: it will not mend itself.
    let (_, said) = line
        .split_once(" ERROR ")
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(
        said,
        "writing the status: clustercatalogs.olm.operatorframework.io \"second\" is forbidden: \
         User \"system:serviceaccount:olmv1-system:olm-registry-catalogd\" cannot patch resource \
         \"clustercatalogs/status\" in API group \"olm.operatorframework.io\" at the cluster \
         scope (403 Forbidden: the ServiceAccount lacks this permission; deploy/catalogd.yaml \
         lists the rules catalogd needs) catalog=second"
    );
    let second = admin.get(&format!("{CATALOGS}/second")).await.unwrap();
    assert!(second["status"]["conditions"].is_null(), "{second:#}");
}
