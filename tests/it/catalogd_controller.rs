//! `olm-registry catalogd` as OLM v1 meets it: two replicas against a real kube-apiserver with
//! operator-controller's ClusterCatalog CRD, catalog images in a real registry on loopback, and
//! operator-controller's client reproduced (GET `status.urls.base` + `api/v1/all`, gzip, no
//! conditional headers). A ClusterCatalog is created, its tag moved to new content (found by
//! polling), pinned to a digest, pointed at an image that does not exist, made unavailable and deleted; others
//! name an image the registry refuses and one whose catalog is invalid; the status
//! is checked field by field at each step, and both replicas serve the same bytes throughout
//! while one holds the Lease.
use crate::catalogd_http::{client, lines};
use crate::common::control_plane::ControlPlane;
use crate::common::kube::{Kube, eventually};
use crate::common::olmv1::inflated;
use crate::common::registry::TestRegistry;
use crate::common::{BIN, fixture, run, write};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How long a change may take to show (a tag is polled once a minute at the most often).
const PATIENCE: Duration = Duration::from_secs(150);
const CATALOGS: &str = "/apis/olm.operatorframework.io/v1/clustercatalogs";
const LEASE: &str =
    "/apis/coordination.k8s.io/v1/namespaces/olmv1-system/leases/catalogd-operator-lock";
/// What the replicas write before `/catalogs/NAME` (the Service's address in a cluster).
const BASE_URL: &str = "http://catalogd.test";
const FINALIZER: &str = "olm.operatorframework.io/delete-server-cache";

/// One `olm-registry catalogd` process.
struct Replica {
    child: Child,
    identity: String,
    /// `http://HOST:PORT` of its catalogd API.
    addr: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Replica {
    fn start(identity: &str, kubeconfig: &Path, flags: &[&str]) -> Replica {
        let mut child = Command::new(BIN)
            .arg("catalogd")
            .args(["--http-addr", "127.0.0.1:0", "--base-url", BASE_URL])
            .args(["--lease-namespace", "olmv1-system", "--identity", identity])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(flags)
            .args(["--shutdown-grace", "2s"])
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let (stderr, sink) = (child.stderr.take().unwrap(), log.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split("serving the catalogd API on ").nth(1) {
                    let _ = tx.send(url.trim_end_matches("/catalogs/").to_owned());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!(
                    "{identity} did not listen:\n{}",
                    log.lock().unwrap().join("\n")
                )
            });
        Replica {
            child,
            identity: identity.to_owned(),
            addr,
            log,
        }
    }

    /// operator-controller's request: `url.JoinPath(status.urls.base, "api/v1/all")`, sent to
    /// this replica (standing in for the Service), with Go's transport's `Accept-Encoding:
    /// gzip` and nothing conditional; the status code and the inflated body.
    async fn all(&self, base: &str) -> (u16, String) {
        let path = base
            .strip_prefix(BASE_URL)
            .expect("urls.base under --base-url");
        let response = client(None)
            .get(format!("{}{path}/api/v1/all", self.addr))
            .header("Accept-Encoding", "gzip")
            .send()
            .await
            .unwrap();
        inflated(response).await
    }

    fn stop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().unwrap();
        assert!(
            status.success(),
            "{}: {status}\n{}",
            self.identity,
            self.log()
        );
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `build catalog DIR --tag TAG` pushed to `registry`; the digest.
fn push(dir: &Path, tag: &str, registry: &str, cache: &Path) -> String {
    let (code, stdout, stderr) = run(&[
        "build",
        "catalog",
        dir.to_str().unwrap(),
        "--tag",
        tag,
        "--insecure-registry",
        registry,
        "--image-cache-dir",
        cache.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    stdout.trim().rsplit_once('@').unwrap().1.to_owned()
}

fn condition<'a>(object: &'a Value, kind: &str) -> &'a Value {
    object["status"]["conditions"]
        .as_array()
        .and_then(|all| all.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

/// (status, reason, message) of a condition.
fn said(object: &Value, kind: &str) -> (String, String, String) {
    let c = condition(object, kind);
    let text = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
    (text("status"), text("reason"), text("message"))
}

fn owned(a: &str, b: &str, c: &str) -> (String, String, String) {
    (a.into(), b.into(), c.into())
}

/// The catalog once its status says it serves `reference` (by digest) for its generation.
async fn serving(kube: &Kube, name: &str, reference: &str) -> Value {
    eventually(&format!("{name} serving {reference}"), PATIENCE, || async {
        let object = kube.get(&format!("{CATALOGS}/{name}")).await?;
        let generation = &object["metadata"]["generation"];
        let done = object["status"]["resolvedSource"]["image"]["ref"] == reference
            && condition(&object, "Serving")["observedGeneration"] == *generation
            && condition(&object, "Progressing")["reason"] == "Succeeded";
        done.then_some(object)
    })
    .await
}

/// Every replica's answer to operator-controller's request, once all give `want`.
async fn all_serve(replicas: &[&Replica], base: &str, want: (u16, &str)) {
    for replica in replicas {
        eventually(
            &format!("{} answering {} for {base}", replica.identity, want.0),
            PATIENCE,
            || async {
                let (status, body) = replica.all(base).await;
                (status == want.0 && body == want.1).then_some(())
            },
        )
        .await;
    }
}

#[tokio::test]
async fn cluster_catalogs_served_by_every_replica_and_reported() {
    let Some(cp) = ControlPlane::start() else {
        return;
    };
    let tools = ControlPlane::tools().unwrap();
    cp.apply_crds(&tools.join("crds-olmv1"));
    let kube = Kube(cp.client().await);
    kube.create(
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "olmv1-system"}}),
    )
    .await;

    let registry = TestRegistry::plain();
    let locked = TestRegistry::secure();
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("build-cache");
    let tiny = fixture("catalogd/tiny");
    // catalogd's /all of the two catalogs (catalogd-http.md §11).
    let tiny_all = lines(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let beta = work.path().join("beta");
    let beta_all = lines(&[6, 7, 8]);
    write(&beta.join("catalog.json"), &beta_all);
    let tag = format!("{}/catalogs/community:latest", registry.addr);
    let repository = format!("{}/catalogs/community", registry.addr);
    let first = push(&tiny, &tag, &registry.addr, &cache);

    let flags = [
        "--insecure-registry",
        &registry.addr,
        "--ca-file",
        locked.ca_file.as_ref().unwrap().to_str().unwrap(),
    ];
    let image_caches = [work.path().join("cache-a"), work.path().join("cache-b")];
    let start = |identity: &str, cache: &Path| {
        let mut all = flags.to_vec();
        all.extend(["--image-cache-dir", cache.to_str().unwrap()]);
        Replica::start(identity, &cp.kubeconfig, &all)
    };
    let a = start("replica-a", &image_caches[0]);
    let b = start("replica-b", &image_caches[1]);

    // Created with a tag polled every minute: served, and reported as catalogd reports it.
    let created = Instant::now();
    kube.create(
        CATALOGS,
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": "community"},
            "spec": {"source": {"type": "Image",
                                "image": {"ref": tag, "pollIntervalMinutes": 1}}},
        }),
    )
    .await;
    let object = serving(&kube, "community", &format!("{repository}@{first}")).await;
    let base = format!("{BASE_URL}/catalogs/community");
    assert_eq!(object["status"]["urls"], json!({"base": base}));
    assert_eq!(
        object["status"]["resolvedSource"],
        json!({"type": "Image", "image": {"ref": format!("{repository}@{first}")}})
    );
    let unpacked = object["status"]["lastUnpacked"].as_str().unwrap();
    assert!(
        unpacked.len() == 20 && unpacked.ends_with('Z') && unpacked.as_bytes()[10] == b'T',
        "{unpacked}"
    );
    assert_eq!(
        said(&object, "Serving"),
        owned(
            "True",
            "Available",
            "Serving desired content from resolved source"
        )
    );
    assert_eq!(
        said(&object, "Progressing"),
        owned(
            "True",
            "Succeeded",
            "Successfully unpacked and stored content from resolved source"
        )
    );
    assert_eq!(object["metadata"]["finalizers"], json!([FINALIZER]));
    all_serve(&[&a, &b], &base, (200, &tiny_all)).await;
    eprintln!(
        "ClusterCatalog created: served by both replicas and reported {:.1} s later",
        created.elapsed().as_secs_f64()
    );
    let lease = kube.get(LEASE).await.expect("the Lease");
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap().to_owned();
    assert!(holder == "replica-a" || holder == "replica-b", "{holder}");

    // An image the registry refuses without credentials: Progressing says so, nothing is
    // served for it, and the other catalog is untouched.
    let refused = format!("{}/catalogs/private:v1", locked.addr);
    kube.create(
        CATALOGS,
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": "private"},
            "spec": {"source": {"type": "Image", "image": {"ref": refused}}},
        }),
    )
    .await;
    let private = eventually("private retrying", PATIENCE, || async {
        let object = kube.get(&format!("{CATALOGS}/private")).await?;
        (condition(&object, "Progressing")["reason"] == "Retrying").then_some(object)
    })
    .await;
    let (status, _, message) = said(&private, "Progressing");
    assert_eq!(status, "True");
    assert!(
        message.starts_with("source catalog content: ") && message.contains("nauthorized"),
        "{message}"
    );
    assert_eq!(condition(&private, "Serving"), &Value::Null);
    assert_eq!(private["status"]["urls"], Value::Null);
    let private_base = format!("{BASE_URL}/catalogs/private");
    all_serve(&[&a, &b], &private_base, (404, "404 Not Found\n")).await;

    // An image whose catalog fails validation: the same, with the problem named.
    let invalid = work.path().join("invalid");
    write(
        &invalid.join("catalog.json"),
        "{\"schema\":\"olm.channel\",\"name\":\"s\",\"package\":\"nope\",\"entries\":[{\"name\":\"x\"}]}\n",
    );
    let broken_tag = format!("{}/catalogs/broken:v1", registry.addr);
    push(&invalid, &broken_tag, &registry.addr, &cache);
    kube.create(
        CATALOGS,
        json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": "broken"},
            "spec": {"source": {"type": "Image", "image": {"ref": broken_tag}}},
        }),
    )
    .await;
    let broken = eventually("broken retrying", PATIENCE, || async {
        let object = kube.get(&format!("{CATALOGS}/broken")).await?;
        (condition(&object, "Progressing")["reason"] == "Retrying").then_some(object)
    })
    .await;
    let message = said(&broken, "Progressing").2;
    assert!(
        message.starts_with("source catalog content: ")
            && message.contains("unknown package \"nope\" for channel \"s\""),
        "{message}"
    );
    let broken_base = format!("{BASE_URL}/catalogs/broken");
    all_serve(&[&a, &b], &broken_base, (404, "404 Not Found\n")).await;
    all_serve(&[&a, &b], &base, (200, &tiny_all)).await;

    // New content under the same tag: found by the next poll, served by both replicas.
    let pushed = Instant::now();
    let second = push(&beta, &tag, &registry.addr, &cache);
    assert_ne!(second, first);
    serving(&kube, "community", &format!("{repository}@{second}")).await;
    all_serve(&[&a, &b], &base, (200, &beta_all)).await;
    eprintln!(
        "tag moved to new content: served by both replicas {:.1} s after the push (poll interval 1 min)",
        pushed.elapsed().as_secs_f64()
    );

    // Pinned to the first digest (a spec change, seen through the watch): served at once.
    let pinned = Instant::now();
    kube.merge_patch(
        &format!("{CATALOGS}/community"),
        json!({"spec": {"source": {"image": {"ref": format!("{repository}@{first}"),
                                             "pollIntervalMinutes": null}}}}),
    )
    .await;
    serving(&kube, "community", &format!("{repository}@{first}")).await;
    all_serve(&[&a, &b], &base, (200, &tiny_all)).await;
    eprintln!(
        "ref changed to another digest: served by both replicas and reported {:.1} s later",
        pinned.elapsed().as_secs_f64()
    );

    // The leader stops (releasing the Lease): the other replica takes it over and writes the
    // status from then on.
    let mut replicas = vec![a, b];
    let leader = replicas.iter().position(|r| r.identity == holder).unwrap();
    replicas.remove(leader).stop();
    let mut survivor = replicas.pop().unwrap();
    eventually("the other replica holding the Lease", PATIENCE, || async {
        let lease = kube.get(LEASE).await?;
        (lease["spec"]["holderIdentity"] == survivor.identity.as_str()).then_some(())
    })
    .await;

    // A tag that does not exist: Progressing says so, and the content served before keeps
    // being served and reported.
    let community = format!("{CATALOGS}/community");
    let missing = format!("{}/catalogs/none:v1", registry.addr);
    kube.merge_patch(
        &community,
        json!({"spec": {"source": {"image": {"ref": missing}}}}),
    )
    .await;
    let failing = eventually("community retrying", PATIENCE, || async {
        let object = kube.get(&community).await?;
        let progressing = condition(&object, "Progressing");
        (progressing["reason"] == "Retrying"
            && progressing["observedGeneration"] == object["metadata"]["generation"])
            .then_some(object)
    })
    .await;
    let (status, _, message) = said(&failing, "Progressing");
    assert_eq!(status, "True");
    assert!(message.starts_with("source catalog content: "), "{message}");
    assert_eq!(said(&failing, "Serving").1, "Available");
    assert_eq!(
        failing["status"]["resolvedSource"]["image"]["ref"],
        format!("{repository}@{first}")
    );
    all_serve(&[&survivor], &base, (200, &tiny_all)).await;

    // Unavailable: no longer served, what clients read is cleared, the finalizer removed.
    kube.merge_patch(
        &community,
        json!({"spec": {"availabilityMode": "Unavailable", "source": {"image": {"ref": tag}}}}),
    )
    .await;
    let unavailable = eventually("community unavailable", PATIENCE, || async {
        let object = kube.get(&community).await?;
        let done = condition(&object, "Serving")["reason"] == "UserSpecifiedUnavailable"
            && object["metadata"]["finalizers"]
                .as_array()
                .is_none_or(Vec::is_empty);
        done.then_some(object)
    })
    .await;
    let words = "Catalog availability mode is set to Unavailable";
    assert_eq!(
        said(&unavailable, "Serving"),
        owned("False", "UserSpecifiedUnavailable", words)
    );
    assert_eq!(
        said(&unavailable, "Progressing"),
        owned("True", "Succeeded", words)
    );
    for field in ["urls", "resolvedSource", "lastUnpacked"] {
        assert_eq!(unavailable["status"][field], Value::Null, "{field}");
    }
    all_serve(&[&survivor], &base, (404, "404 Not Found\n")).await;

    // Available again, then deleted: the finalizer holds the object until its content is no
    // longer served.
    kube.merge_patch(
        &community,
        json!({"spec": {"availabilityMode": "Available"}}),
    )
    .await;
    serving(&kube, "community", &format!("{repository}@{second}")).await;
    all_serve(&[&survivor], &base, (200, &beta_all)).await;
    kube.delete(&community).await;
    kube.delete(&format!("{CATALOGS}/private")).await;
    kube.delete(&format!("{CATALOGS}/broken")).await;
    eventually("every ClusterCatalog gone", PATIENCE, || async {
        let left = kube.list(CATALOGS).await;
        left.is_empty().then_some(())
    })
    .await;
    all_serve(&[&survivor], &base, (404, "404 Not Found\n")).await;
    survivor.stop();
}
