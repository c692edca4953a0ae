//! `alpha bundle extract` against a real kube-apiserver: the binary is run as OLM's bundle
//! unpack Job runs opm (under the name `opm`, with the Job's flags), into a ConfigMap made as
//! OLM makes it, and the result is read back by OLM's own rule.
use crate::common::control_plane::ControlPlane;
use crate::common::{BIN, fixture};
use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, PostParams};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The test bundle: a CSV, a CRD, a Service, annotations and dependencies.
fn bundle_dir() -> PathBuf {
    fixture("extract-bundle")
}

/// The fixture's files and the ConfigMap key each is stored under (annotations.yaml is not
/// stored: it becomes the annotations).
const FILES: [(&str, &str); 4] = [
    (
        "manifests/cache-operator-metrics_v1_service.yaml",
        "cache-operator-metrics_v1_service.yaml",
    ),
    (
        "manifests/cache-operator.clusterserviceversion.yaml",
        "cache-operator.clusterserviceversion.yaml",
    ),
    (
        "manifests/cache.example.com_cacheclusters.yaml",
        "cache.example.com_cacheclusters.yaml",
    ),
    ("metadata/dependencies.yaml", "dependencies.yaml"),
];

/// The six bundle annotations opm copies from the fixture's annotations.yaml (not its
/// `operators.operatorframework.io.test.config.v1`), plus `extra`.
fn bundle_annotations(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    [
        (
            "operators.operatorframework.io.bundle.channel.default.v1",
            "stable",
        ),
        (
            "operators.operatorframework.io.bundle.channels.v1",
            "stable,fast",
        ),
        (
            "operators.operatorframework.io.bundle.manifests.v1",
            "manifests/",
        ),
        (
            "operators.operatorframework.io.bundle.mediatype.v1",
            "registry+v1",
        ),
        (
            "operators.operatorframework.io.bundle.metadata.v1",
            "metadata/",
        ),
        (
            "operators.operatorframework.io.bundle.package.v1",
            "cache-operator",
        ),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The owner OLM gives the ConfigMap: the CatalogSource (v0.31.0 bundle_unpacker.go,
/// `ensureConfigmap`, with `ownerRef`).
fn catalog_source_owner() -> OwnerReference {
    OwnerReference {
        api_version: "operators.coreos.com/v1alpha1".into(),
        kind: "CatalogSource".into(),
        name: "cache-catalog".into(),
        uid: "0b7a3b4e-5f59-4d1c-9a3e-1f2d3c4b5a69".into(),
        block_owner_deletion: Some(false),
        controller: Some(false),
    }
}

/// A namespace and an empty ConfigMap in it, labelled and owned as OLM's unpacker makes it.
async fn olm_configmap(client: &kube::Client, namespace: &str, name: &str) -> Api<ConfigMap> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("olm.managed".into(), "true".into())])),
            owner_references: Some(vec![catalog_source_owner()]),
            ..Default::default()
        },
        ..Default::default()
    };
    api.create(&PostParams::default(), &cm).await.unwrap();
    api
}

/// A link named `opm` to the binary, as OLM's Job calls it.
fn opm(dir: &Path) -> PathBuf {
    let link = dir.join("opm");
    std::os::unix::fs::symlink(BIN, &link).unwrap();
    link
}

/// Runs `program alpha bundle extract ARGS` with `env` (and no $KUBECONFIG, which would win
/// over -k): exit code and the `error:` line, if any.
fn extract(program: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, Option<String>) {
    let out = Command::new(program)
        .args(["alpha", "bundle", "extract"])
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("CONTAINER_IMAGE")
        .envs(env.iter().copied())
        .output()
        .expect("run extract");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = stderr
        .lines()
        .find_map(|l| l.strip_prefix("error: "))
        .map(str::to_owned);
    (out.status.code().unwrap_or(-1), error)
}

/// `DIR/` with a trailing slash, as OLM passes `-m /bundle/`.
fn dir_arg(dir: &Path) -> String {
    format!("{}/", dir.display())
}

fn gunzip_base64(stored: &[u8]) -> String {
    let compressed = base64::engine::general_purpose::STANDARD
        .decode(stored)
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&compressed[..])
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// Keys and decoded contents of the ConfigMap's `data`, or of its `binaryData` when it is
/// gzip-encoded.
fn stored_files(cm: &ConfigMap) -> BTreeMap<String, String> {
    let gzip = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("olm.contentEncoding"))
        .is_some_and(|e| e == "gzip+base64");
    if gzip {
        cm.binary_data
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, gunzip_base64(&v.0)))
            .collect()
    } else {
        cm.data.clone().unwrap_or_default()
    }
}

/// What OLM makes of the ConfigMap: the name of the CSV and the objects of the bundle.
///
/// The rule is operator-registry v1.50.0 (OLM v0.31.0's dependency) `pkg/configmap`
/// `BundleLoader.Load` → `loadBundle`, called by OLM's `ConfigMapUnpacker.UnpackBundle`:
/// when the annotation `olm.contentEncoding` is `gzip+base64` only `binaryData` is read, each
/// value base64-decoded then gunzipped (`decodeGzipBinaryData`), else only `data`; a value
/// that decodes as a Kubernetes object (a `kind`) is one of the bundle's objects, others are
/// skipped; the ClusterServiceVersion names the bundle. `UnpackBundle` takes the bundle only
/// when it has objects.
fn olm_load(cm: &ConfigMap) -> (String, Vec<String>) {
    let mut csv_name = String::new();
    let mut kinds = Vec::new();
    for (key, content) in stored_files(cm) {
        let Ok(object) = serde_yaml::from_str::<serde_json::Value>(&content) else {
            continue;
        };
        let Some(kind) = object["kind"].as_str().filter(|k| !k.is_empty()) else {
            continue;
        };
        if kind == "ClusterServiceVersion" {
            csv_name = object["metadata"]["name"].as_str().unwrap().to_owned();
        }
        kinds.push(format!("{key}: {kind}"));
    }
    (csv_name, kinds)
}

/// The fixture's files by key, read from `dir`.
fn expected_files(dir: &Path) -> BTreeMap<String, String> {
    FILES
        .iter()
        .map(|(file, key)| {
            (
                key.to_string(),
                std::fs::read_to_string(dir.join(file)).unwrap(),
            )
        })
        .collect()
}

/// A copy of the fixture bundle in `to`.
fn copy_bundle(to: &Path) {
    for sub in ["manifests", "metadata"] {
        std::fs::create_dir_all(to.join(sub)).unwrap();
        for entry in std::fs::read_dir(bundle_dir().join(sub)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(sub).join(entry.file_name())).unwrap();
        }
    }
}

#[tokio::test]
async fn gzip_extract_as_olms_unpack_job_runs_it() {
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    let client = plane.client().await;
    let api = olm_configmap(&client, "olm-unpack", "bundle-abc123").await;
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = plane.kubeconfig.to_str().unwrap();
    // v0.31.0 bundle_unpacker.go: `opm alpha bundle extract -m /bundle/ -n NS -c NAME -z`,
    // with CONTAINER_IMAGE set to the bundle image.
    let (code, error) = extract(
        &opm(tmp.path()),
        &[
            "-m",
            &dir_arg(&bundle_dir()),
            "-n",
            "olm-unpack",
            "-c",
            "bundle-abc123",
            "-z",
            "-k",
            kubeconfig,
        ],
        &[(
            "CONTAINER_IMAGE",
            "quay.io/example/cache-operator-bundle:v1.2.0",
        )],
    );
    assert_eq!((code, error), (0, None));

    let cm = api.get("bundle-abc123").await.unwrap();
    assert_eq!(cm.data.clone().unwrap_or_default(), BTreeMap::new());
    let keys: Vec<String> = cm
        .binary_data
        .clone()
        .unwrap_or_default()
        .into_keys()
        .collect();
    assert_eq!(keys, FILES.map(|(_, key)| key.to_owned()));
    assert_eq!(stored_files(&cm), expected_files(&bundle_dir()));
    assert_eq!(
        cm.metadata.annotations.clone().unwrap_or_default(),
        bundle_annotations(&[
            ("olm.contentEncoding", "gzip+base64"),
            (
                "olm.sourceImage",
                "quay.io/example/cache-operator-bundle:v1.2.0"
            ),
        ])
    );
    assert_eq!(
        cm.metadata.owner_references,
        Some(vec![catalog_source_owner()])
    );
    assert_eq!(
        cm.metadata.labels,
        Some(BTreeMap::from([("olm.managed".into(), "true".into())]))
    );
    assert_eq!(
        olm_load(&cm),
        (
            "cache-operator.v1.2.0".to_owned(),
            vec![
                "cache-operator-metrics_v1_service.yaml: Service".to_owned(),
                "cache-operator.clusterserviceversion.yaml: ClusterServiceVersion".to_owned(),
                "cache.example.com_cacheclusters.yaml: CustomResourceDefinition".to_owned(),
            ]
        )
    );
}

#[tokio::test]
async fn plain_extract_stores_text_under_translated_keys() {
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    let client = plane.client().await;
    let api = olm_configmap(&client, "plain", "bundle").await;
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    copy_bundle(&bundle);
    // A name with characters a ConfigMap key cannot hold: each becomes `-`.
    let odd = "kind: Role\napiVersion: rbac.authorization.k8s.io/v1\nmetadata:\n  name: reader\n";
    std::fs::write(bundle.join("manifests/extra role+binding:v1.yaml"), odd).unwrap();
    let kubeconfig = plane.kubeconfig.to_str().unwrap();
    let args = |gzip: bool| {
        let mut args = vec![
            "-m".to_owned(),
            bundle.display().to_string(),
            "-n".into(),
            "plain".into(),
            "-c".into(),
            "bundle".into(),
            "-k".into(),
            kubeconfig.into(),
        ];
        if gzip {
            args.push("-z".into());
        }
        args
    };
    let run = |gzip: bool| {
        let args = args(gzip);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        extract(Path::new(BIN), &args, &[])
    };
    // Compressed first, then plain over it: the plain write must leave nothing that says
    // compressed, or OLM would read the (now empty) binaryData.
    assert_eq!(run(true), (0, None));
    assert_eq!(run(false), (0, None));

    let cm = api.get("bundle").await.unwrap();
    assert_eq!(cm.binary_data.clone().unwrap_or_default(), BTreeMap::new());
    let mut expected = expected_files(&bundle);
    expected.insert("extra-role-binding-v1.yaml".into(), odd.into());
    assert_eq!(cm.data.clone().unwrap_or_default(), expected);
    assert_eq!(
        cm.metadata.annotations.clone().unwrap_or_default(),
        bundle_annotations(&[])
    );
    assert_eq!(
        cm.metadata.owner_references,
        Some(vec![catalog_source_owner()])
    );
    assert_eq!(
        olm_load(&cm),
        (
            "cache-operator.v1.2.0".to_owned(),
            vec![
                "cache-operator-metrics_v1_service.yaml: Service".to_owned(),
                "cache-operator.clusterserviceversion.yaml: ClusterServiceVersion".to_owned(),
                "cache.example.com_cacheclusters.yaml: CustomResourceDefinition".to_owned(),
                "extra-role-binding-v1.yaml: Role".to_owned(),
            ]
        )
    );
}

#[tokio::test]
async fn over_the_data_limit_or_without_its_configmap_nothing_is_written() {
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    let client = plane.client().await;
    let api = olm_configmap(&client, "limits", "bundle").await;
    let before = api.get("bundle").await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    copy_bundle(&bundle);
    // First in name order, 2000 bytes that compress to far less.
    let big = format!("# {}\n", "x".repeat(1997));
    assert_eq!(big.len(), 2000);
    std::fs::write(bundle.join("manifests/big.yaml"), &big).unwrap();
    let kubeconfig = plane.kubeconfig.to_str().unwrap();
    let dir = bundle.display().to_string();
    let common = ["-m", &dir, "-n", "limits", "-k", kubeconfig];
    let with = |extra: &[&str]| {
        let args: Vec<&str> = common.iter().chain(extra).copied().collect();
        extract(Path::new(BIN), &args, &[])
    };

    assert_eq!(
        with(&["-c", "bundle", "-l", "1999"]),
        (
            1,
            Some(format!(
                "bundle files exceeded the data limit of 1999 bytes (-l/--datalimit): \
                 2000 bytes with {dir}/manifests/big.yaml"
            ))
        )
    );
    assert_eq!(api.get("bundle").await.unwrap(), before);

    // The limit counts what is stored: compressed, the same bundle fits.
    assert_eq!(with(&["-c", "bundle", "-l", "1999", "-z"]), (0, None));
    let cm = api.get("bundle").await.unwrap();
    assert_eq!(stored_files(&cm)["big.yaml"], big);

    assert_eq!(
        with(&["-c", "absent"]),
        (
            1,
            Some(
                "ConfigMap limits/absent not found: it must exist before the bundle is \
                 extracted into it (OLM creates it, owned by the CatalogSource, before it \
                 starts the unpack Job)"
                    .to_owned()
            )
        )
    );
}

#[test]
fn a_missing_manifests_dir_fails_before_any_cluster_is_asked() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("metadata")).unwrap();
    let dir = tmp.path().display().to_string();
    // The kubeconfig does not exist either: the bundle is read first.
    let (code, error) = extract(
        Path::new(BIN),
        &["-m", &dir, "-c", "bundle", "-k", "/nonexistent/kubeconfig"],
        &[],
    );
    assert_eq!(
        (code, error),
        (
            1,
            Some(format!(
                "{dir}/manifests: no such directory; a bundle directory holds manifests/ and metadata/"
            ))
        )
    );
}

#[tokio::test]
async fn in_cluster_configuration_as_the_unpack_pod_has_it() {
    let Some(plane) = ControlPlane::start() else {
        return;
    };
    let client = plane.client().await;
    let api = olm_configmap(&client, "in-cluster", "bundle").await;
    // The pod's service account files, mounted for the binary alone: a private mount
    // namespace with a tmpfs over /run (/var/run is a link to it).
    let tmp = tempfile::tempdir().unwrap();
    let account = tmp.path().join("account");
    std::fs::create_dir(&account).unwrap();
    std::fs::write(account.join("token"), &plane.token).unwrap();
    std::fs::copy(&plane.ca_file, account.join("ca.crt")).unwrap();
    std::fs::write(account.join("namespace"), "in-cluster").unwrap();
    let script = "mount -t tmpfs tmpfs /run && \
        mkdir -p /run/secrets/kubernetes.io/serviceaccount && \
        cp \"$1\"/token \"$1\"/ca.crt \"$1\"/namespace /run/secrets/kubernetes.io/serviceaccount/ && \
        shift && exec \"$@\"";
    let probe = Command::new("unshare")
        .args(["-m", "--propagation", "private", "true"])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!(
            "\n!!! SKIPPED: cannot make a private mount namespace (unshare -m needs root) !!!\n"
        );
        return;
    }
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
        .arg(&account)
        .arg(opm(tmp.path()))
        .args(["alpha", "bundle", "extract", "-m"])
        .arg(dir_arg(&bundle_dir()))
        .args(["-n", "in-cluster", "-c", "bundle", "-z"])
        .env_remove("KUBECONFIG")
        .env_remove("CONTAINER_IMAGE")
        .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        .env("KUBERNETES_SERVICE_PORT", plane.api_port.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cm = api.get("bundle").await.unwrap();
    assert_eq!(stored_files(&cm), expected_files(&bundle_dir()));
    assert_eq!(
        cm.metadata.annotations.clone().unwrap_or_default(),
        bundle_annotations(&[("olm.contentEncoding", "gzip+base64")])
    );
}
