//! The work of OLM's bundle unpack Jobs, which nothing runs here (no kubelet): for each Job
//! the catalog operator creates, what its containers would do — the `pull` init container
//! copies the bundle image's files to /bundle, the `extract` container runs `opm alpha bundle
//! extract` with OLM's arguments — then the Job is marked complete as the Job controller
//! would.
use super::run_ok;
use crate::common::BIN;
use crate::common::control_plane::ControlPlane;
use crate::common::kube::Kube;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const JOBS: &str = "/apis/batch/v1/namespaces/olm/jobs";

pub(super) struct JobRunner {
    kubeconfig: PathBuf,
    /// Our binary under the name OLM's Job calls.
    opm: PathBuf,
    work: PathBuf,
    /// The bundle images unpacked, in order.
    done: RefCell<Vec<String>>,
    seen: RefCell<BTreeSet<String>>,
}

impl JobRunner {
    pub(super) fn new(cp: &ControlPlane, work: &Path) -> JobRunner {
        let bin = work.join("job-bin");
        std::fs::create_dir_all(&bin).unwrap();
        let opm = bin.join("opm");
        std::os::unix::fs::symlink(BIN, &opm).unwrap();
        JobRunner {
            kubeconfig: cp.kubeconfig.clone(),
            opm,
            work: work.to_owned(),
            done: RefCell::default(),
            seen: RefCell::default(),
        }
    }

    /// The bundle images whose Jobs were run, in order.
    pub(super) fn done(&self) -> Vec<String> {
        self.done.borrow().clone()
    }

    /// Runs every unpack Job not yet run.
    pub(super) async fn run_pending(&self, kube: &Kube) {
        for job in kube.list(JOBS).await {
            let name = job["metadata"]["name"].as_str().unwrap().to_owned();
            if !self.seen.borrow_mut().insert(name.clone()) {
                continue;
            }
            let spec = &job["spec"]["template"]["spec"];
            let container = |list: &str, name: &str| -> Value {
                spec[list]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["name"] == name))
                    .cloned()
                    .unwrap_or_else(|| panic!("Job {name}: no {list} container {name}: {job:#}"))
            };
            let image = container("initContainers", "pull")["image"]
                .as_str()
                .unwrap()
                .to_owned();
            let command: Vec<String> = container("containers", "extract")["command"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_owned())
                .collect();
            let bundle = self.work.join("unpacked").join(&name);
            pull_files(&image, &bundle).await;
            self.extract(&command, &bundle);
            complete(kube, &name).await;
            self.done.borrow_mut().push(image);
        }
    }

    /// Runs the extract container's command (`opm alpha bundle extract -m /bundle/ ...`) with
    /// the bundle where this test put it, and the test's kubeconfig instead of the pod's
    /// service account.
    fn extract(&self, command: &[String], bundle: &Path) {
        assert_eq!(
            command.first().map(String::as_str),
            Some("opm"),
            "{command:?}"
        );
        let mut args: Vec<String> = command[1..].to_vec();
        let m = args
            .iter()
            .position(|a| a == "-m" || a == "--manifestsdir")
            .unwrap_or_else(|| panic!("no -m in {command:?}"));
        assert_eq!(args[m + 1], "/bundle/", "{command:?}");
        args[m + 1] = format!("{}/", bundle.display());
        run_ok(
            Command::new(&self.opm)
                .args(&args)
                .arg("-k")
                .arg(&self.kubeconfig),
        );
    }
}

/// Marks Job olm/`name` as succeeded, with the conditions the Job controller sets.
async fn complete(kube: &Kube, name: &str) {
    let now = now_rfc3339();
    let condition = |kind: &str| json!({"type": kind, "status": "True", "lastProbeTime": now, "lastTransitionTime": now});
    kube.merge_patch(
        &format!("{JOBS}/{name}/status"),
        json!({"status": {
            "conditions": [condition("SuccessCriteriaMet"), condition("Complete")],
            "startTime": now, "completionTime": now, "succeeded": 1,
        }}),
    )
    .await;
}

/// Now, as RFC 3339 in UTC to the second (what Kubernetes' timestamps hold).
fn now_rfc3339() -> String {
    let out = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The pull container's work: the image's files, layer by layer, into `dir`. The image is in
/// the test's plain-HTTP registry.
async fn pull_files(image: &str, dir: &Path) {
    let (host, rest) = image.split_once('/').unwrap();
    let (repo, reference) = match rest.split_once('@') {
        Some((repo, digest)) => (repo, digest),
        None => rest.rsplit_once(':').unwrap(),
    };
    let http = reqwest::Client::new();
    let manifest: Value = http
        .get(format!("http://{host}/v2/{repo}/manifests/{reference}"))
        .header(
            reqwest::header::ACCEPT,
            "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json",
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    std::fs::create_dir_all(dir).unwrap();
    for layer in manifest["layers"]
        .as_array()
        .unwrap_or_else(|| panic!("{image}: {manifest}"))
    {
        let digest = layer["digest"].as_str().unwrap();
        let blob = http
            .get(format!("http://{host}/v2/{repo}/blobs/{digest}"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let gzipped = layer["mediaType"]
            .as_str()
            .is_some_and(|t| t.ends_with("gzip"));
        let reader: Box<dyn std::io::Read> = if gzipped {
            Box::new(flate2::read::GzDecoder::new(&blob[..]))
        } else {
            Box::new(&blob[..])
        };
        tar::Archive::new(reader).unpack(dir).unwrap();
    }
}
