//! The files in `deploy/`: the core kinds validate (strictly: no unknown fields) against
//! Kubernetes' own schemas with `kubernetes-validate` (PyPI; the schemas ship with it, no
//! cluster needed), and the pieces that refer to each other agree (ports, names, labels, the
//! command line).

use crate::common;
use crate::common::control_plane::ControlPlane;
use crate::common::kube::Kube;
use serde::Deserialize;
use serde_json::json;
use serde_yaml::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Kubernetes version the files are checked against: the oldest still supported by most
/// distributions, with gRPC probes long GA.
const KUBERNETES: &str = "1.29.0";

fn deploy(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(file)
}

fn documents(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(deploy(file)).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .collect()
}

/// The entry of `list` (containers' mounts, a pod's volumes, env) whose `name` is `name`.
fn named<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {name:?} in {list:?}"))
}

/// The items of a list of strings (a container's args).
fn strings(list: &Value) -> Vec<&str> {
    list.as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

fn validate(files: &[PathBuf]) -> (bool, Vec<String>) {
    let out = Command::new("kubernetes-validate")
        .args(["--strict", "-k", KUBERNETES])
        .args(files)
        .current_dir(deploy(""))
        .output()
        .expect("kubernetes-validate is installed (scripts/test.sh installs it)");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&out.stderr).lines())
        .map(str::to_owned)
        .collect();
    lines.sort();
    (out.status.success(), lines)
}

#[test]
fn deployment_files_validate_against_the_kubernetes_schemas() {
    // Named from deploy/, as the checker's lines name them.
    let files = [
        "catalogd.yaml",
        "catalogsource.yaml",
        "deployment.yaml",
        "servicemonitor.yaml",
    ]
    .map(PathBuf::from);
    let (ok, lines) = validate(&files);
    let crd = |file: &str, kind: &str, api: &str| {
        format!(
            "WARN {file} Couldn't find schema for kind {kind} with api version {api} for kubernetes version 1.29"
        )
    };
    // The two custom kinds have no schema in the package: only the core kinds are checked.
    let mut want = vec![
        crd(
            "catalogsource.yaml",
            "CatalogSource",
            "operators.coreos.com/v1alpha1",
        ),
        crd(
            "catalogsource.yaml",
            "CatalogSource",
            "operators.coreos.com/v1alpha1",
        ),
        "INFO deployment.yaml passed for resource deployment/olm-registry against version 1.29"
            .to_owned(),
        "INFO deployment.yaml passed for resource service/olm-registry against version 1.29"
            .to_owned(),
        crd(
            "servicemonitor.yaml",
            "ServiceMonitor",
            "monitoring.coreos.com/v1",
        ),
    ];
    want.extend(
        [
            "serviceaccount/olm-registry-catalogd",
            "clusterrole/olm-registry-catalogd",
            "clusterrolebinding/olm-registry-catalogd",
            "role/olm-registry-catalogd-leader-election",
            "rolebinding/olm-registry-catalogd-leader-election",
            "deployment/olm-registry-catalogd",
            "service/catalogd-service",
        ]
        .map(|r| format!("INFO catalogd.yaml passed for resource {r} against version 1.29")),
    );
    want.sort();
    assert_eq!((ok, lines), (true, want));
}

/// The checker is strict: a misspelt field or a wrong type fails.
#[test]
fn the_schema_checker_rejects_a_broken_deployment() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yaml");
    let text = std::fs::read_to_string(deploy("deployment.yaml"))
        .unwrap()
        .replace(
            "readOnlyRootFilesystem: true",
            "readOnlyRootFilesytem: true",
        );
    std::fs::write(&broken, text).unwrap();
    let (ok, lines) = validate(&[broken]);
    assert!(!ok, "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("readOnlyRootFilesytem")),
        "{lines:?}"
    );
}

#[test]
fn ports_names_labels_and_command_line_agree() {
    let deployment = &documents("deployment.yaml");
    let (workload, service) = (&deployment[0], &deployment[1]);
    let pod = &workload["spec"]["template"];
    let container = &pod["spec"]["containers"][0];
    let container_ports: Vec<(String, u64)> = container["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                p["containerPort"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        container_ports,
        [("grpc".to_owned(), 50051), ("metrics".to_owned(), 9090)]
    );
    let args = strings(&container["args"]);
    assert!(args.contains(&"--metrics-addr=9090"), "{args:?}");
    // The command line parses: clap reaches --help only when every argument before it is
    // accepted.
    let mut with_help = args.clone();
    with_help.push("--help");
    let (code, _, stderr) = crate::common::run(&with_help);
    assert_eq!((code, stderr), (0, String::new()));

    let service_ports: Vec<(String, u64, String)> = service["spec"]["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                p["port"].as_u64().unwrap(),
                p["targetPort"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        service_ports,
        [
            ("grpc".to_owned(), 50051, "grpc".to_owned()),
            ("metrics".to_owned(), 9090, "metrics".to_owned())
        ]
    );
    let labels = &pod["metadata"]["labels"];
    assert_eq!(&service["spec"]["selector"], labels);
    assert_eq!(&workload["spec"]["selector"]["matchLabels"], labels);

    let monitor = &documents("servicemonitor.yaml")[0];
    assert_eq!(
        &monitor["spec"]["selector"]["matchLabels"],
        &service["metadata"]["labels"]
    );
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");
    assert_eq!(monitor["spec"]["endpoints"][0]["path"], "/metrics");

    let served = &documents("catalogsource.yaml")[1];
    let address = format!(
        "{}.{}.svc:50051",
        service["metadata"]["name"].as_str().unwrap(),
        service["metadata"]["namespace"].as_str().unwrap()
    );
    assert_eq!(served["spec"]["address"].as_str(), Some(address.as_str()));
}

/// deploy/catalogd.yaml runs `catalogd` as the upstream install does: its command line parses,
/// the Service answers on 443 what the container serves, `urls.base` names that Service, the
/// certificate files are in the mounted Secret the Service's annotation fills, and the roles
/// bound to the pod's service account grant every call the controller makes.
#[test]
fn catalogd_manifests_agree_with_the_controller() {
    let docs = documents("catalogd.yaml");
    let find = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"].as_str() == Some(kind))
            .unwrap_or_else(|| panic!("no {kind} in catalogd.yaml"))
    };
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    let (deployment, service) = (find("Deployment"), find("Service"));
    let namespace = text(&deployment["metadata"]["namespace"]);
    let pod = &deployment["spec"]["template"];
    let container = &pod["spec"]["containers"][0];
    let args = strings(&container["args"]);
    assert_eq!(args[0], "catalogd");
    let mut with_help = args.clone();
    with_help.push("--help");
    let (code, _, stderr) = crate::common::run(&with_help);
    assert_eq!((code, stderr), (0, String::new()));
    let flag = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")))
            .unwrap_or_else(|| panic!("no --{name}"))
            .to_owned()
    };

    let port = &container["ports"][0];
    assert_eq!(
        flag("http-addr"),
        port["containerPort"].as_u64().unwrap().to_string()
    );
    let service_port = &service["spec"]["ports"][0];
    assert_eq!(service_port["port"].as_u64(), Some(443));
    assert_eq!(service_port["targetPort"], port["name"]);
    assert_eq!(service["spec"]["selector"], pod["metadata"]["labels"]);
    assert_eq!(
        deployment["spec"]["selector"]["matchLabels"],
        pod["metadata"]["labels"]
    );
    assert_eq!(
        flag("base-url"),
        format!(
            "https://{}.{namespace}.svc",
            text(&service["metadata"]["name"])
        )
    );
    assert_eq!(text(&service["metadata"]["namespace"]), namespace);

    let mount = named(&container["volumeMounts"], "certs");
    let dir = text(&mount["mountPath"]);
    assert_eq!(flag("tls-cert-file"), format!("{dir}/tls.crt"));
    assert_eq!(flag("tls-key-file"), format!("{dir}/tls.key"));
    let secret = named(&pod["spec"]["volumes"], "certs");
    assert_eq!(
        secret["secret"]["secretName"],
        service["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"]
    );

    let account = text(&find("ServiceAccount")["metadata"]["name"]);
    assert_eq!(text(&pod["spec"]["serviceAccountName"]), account);
    let lease_namespace = named(&container["env"], "POD_NAMESPACE");
    assert_eq!(
        lease_namespace["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        Some("metadata.namespace")
    );
    for (binding, role) in [
        ("ClusterRoleBinding", "ClusterRole"),
        ("RoleBinding", "Role"),
    ] {
        let binding = find(binding);
        assert_eq!(binding["roleRef"]["name"], find(role)["metadata"]["name"]);
        assert_eq!(text(&binding["subjects"][0]["name"]), account);
        assert_eq!(text(&binding["subjects"][0]["namespace"]), namespace);
    }
    assert_eq!(text(&find("Role")["metadata"]["namespace"]), namespace);
    let allows = |role: &Value, group: &str, resource: &str, verb: &str| {
        let has = |rule: &Value, key: &str, want: &str| {
            rule[key]
                .as_sequence()
                .is_some_and(|all| all.iter().any(|v| v.as_str() == Some(want)))
        };
        role["rules"].as_sequence().unwrap().iter().any(|rule| {
            has(rule, "apiGroups", group)
                && has(rule, "resources", resource)
                && has(rule, "verbs", verb)
        })
    };
    // The calls of crates/catalogd: list and watch ClusterCatalogs, merge-patch their
    // finalizers (which the OwnerReferencesPermissionEnforcement admission checks as an update
    // of clustercatalogs/finalizers) and their status; get, create and update the Lease.
    let catalogs = find("ClusterRole");
    for (resource, verb) in [
        ("clustercatalogs", "list"),
        ("clustercatalogs", "watch"),
        ("clustercatalogs", "patch"),
        ("clustercatalogs/finalizers", "update"),
        ("clustercatalogs/status", "patch"),
    ] {
        assert!(
            allows(catalogs, "olm.operatorframework.io", resource, verb),
            "{resource} {verb}"
        );
    }
    for verb in ["get", "create", "update"] {
        assert!(
            allows(find("Role"), "coordination.k8s.io", "leases", verb),
            "{verb}"
        );
    }
}

/// Every document of every file in `deploy/` is created in a real kube-apiserver (with the CRDs
/// it needs: OLM's CatalogSource, the Prometheus Operator's ServiceMonitor from a real bundle)
/// with strict field validation, and read back holding every field the file gives, unchanged:
/// nothing unknown, mistyped or pruned.
#[tokio::test]
async fn deploy_files_are_accepted_by_a_real_api_server() {
    let Some(cp) = ControlPlane::start() else {
        return;
    };
    let tools = ControlPlane::tools().unwrap();
    cp.apply_crds(&tools.join("crds"));
    let monitoring = tempfile::tempdir().unwrap();
    let servicemonitor_crd = common::shared_testdata(
        "real/bundles/prometheus/0.56.3/manifests/monitoring.coreos.com_servicemonitors.yaml",
    )
    .expect("../shared/testdata/real is absent");
    std::fs::copy(
        &servicemonitor_crd,
        monitoring.path().join("servicemonitors.yaml"),
    )
    .unwrap();
    cp.apply_crds(monitoring.path());
    let kube = Kube(cp.client().await);
    for namespace in ["olm", "olmv1-system"] {
        kube.create(
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        )
        .await;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut created = 0;
    for file in &files {
        let name = file.file_name().unwrap().to_str().unwrap();
        for doc in documents(name) {
            let doc: serde_json::Value = serde_json::to_value(&doc).unwrap();
            let collection = collection_path(&doc);
            kube.create(&format!("{collection}?fieldValidation=Strict"), doc.clone())
                .await;
            let stored = kube
                .get(&format!(
                    "{collection}/{}",
                    doc["metadata"]["name"].as_str().unwrap()
                ))
                .await
                .unwrap();
            assert_kept(&doc, &stored, &format!("{name}: {}", doc["kind"]));
            created += 1;
        }
    }
    // catalogd.yaml (seven), deployment.yaml (Deployment, Service), catalogsource.yaml (two),
    // servicemonitor.yaml.
    assert_eq!(created, 12);
}

/// The REST collection an object of deploy/ is created in.
fn collection_path(doc: &serde_json::Value) -> String {
    let plural = match doc["kind"].as_str().unwrap() {
        "Deployment" => "deployments",
        "Service" => "services",
        "ServiceAccount" => "serviceaccounts",
        "CatalogSource" => "catalogsources",
        "ServiceMonitor" => "servicemonitors",
        "ClusterRole" => "clusterroles",
        "ClusterRoleBinding" => "clusterrolebindings",
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        other => panic!("deploy/ has a {other}: add its plural here"),
    };
    let scope = match doc["metadata"]["namespace"].as_str() {
        Some(ns) => format!("namespaces/{ns}/"),
        None => String::new(),
    };
    match doc["apiVersion"].as_str().unwrap() {
        "v1" => format!("/api/v1/{scope}{plural}"),
        group_version => format!("/apis/{group_version}/{scope}{plural}"),
    }
}

/// Every field of `given` is in `stored` with the same value (the server may add defaults).
fn assert_kept(given: &serde_json::Value, stored: &serde_json::Value, at: &str) {
    use serde_json::Value as J;
    match (given, stored) {
        (J::Object(g), J::Object(s)) => {
            for (k, v) in g {
                let at = format!("{at}.{k}");
                let kept = s
                    .get(k)
                    .unwrap_or_else(|| panic!("{at}: dropped by the API server"));
                assert_kept(v, kept, &at);
            }
        }
        (J::Array(g), J::Array(s)) => {
            assert_eq!(g.len(), s.len(), "{at}: length");
            for (i, (g, s)) in g.iter().zip(s).enumerate() {
                assert_kept(g, s, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(given, stored, "{at}"),
    }
}
