//! Signatures and referrers travel with their images (issue #20): images signed here in
//! cosign's format (an ECDSA P-256 key, the simple-signing payload as the layer, the
//! signature in the `dev.cosignproject.cosign/signature` annotation, tag `sha256-H.sig`) and
//! an SBOM pushed as an OCI 1.1 referrer (listed by the fallback tag `sha256-H`, as
//! docker-registry 2.8 has no referrers API), mirrored registry to registry and through an
//! archive with the source gone, then verified at the mirror by the sigstore project's own
//! cosign verification with the public key.
use crate::common::registry::TestRegistry;
use crate::mirror::{client, mirror, write_image_set};
use base64::Engine;
use bytes::Bytes;
use image::layout::digest_of;
use image::{BuiltImage, ImageRef, Registry, build_image};
use oci_client::Reference;
use serde_json::{Value, json};
use sigstore::cosign::verification_constraint::{PublicKeyVerifier, VerificationConstraintVec};
use sigstore::cosign::{ClientBuilder, CosignCapabilities, verify_constraints};
use sigstore::crypto::{SigStoreSigner, SigningScheme};
use sigstore::registry::{Auth, ClientConfig, ClientProtocol, OciReference};
use std::collections::BTreeMap;
use std::path::Path;

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const SBOM_TYPE: &str = "application/spdx+json";

fn image_of(name: &str, text: &str) -> BuiltImage {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), text).unwrap();
    build_image(&[(dir.path(), "/data")], &BTreeMap::new()).unwrap()
}

fn at(addr: &str, repository: &str, tag_or_digest: &str) -> Reference {
    if tag_or_digest.starts_with("sha256:") {
        Reference::with_digest(addr.into(), repository.into(), tag_or_digest.into())
    } else {
        Reference::with_tag(addr.into(), repository.into(), tag_or_digest.into())
    }
}

async fn put_blob(registry: &Registry, r: &Reference, data: &[u8]) -> Value {
    let digest = digest_of(data);
    let bytes = Bytes::copy_from_slice(data);
    let stream: image::remote::BlobStream =
        Box::pin(tokio_stream::once(Ok::<_, std::io::Error>(bytes)));
    registry
        .put_blob_stream(r, &digest, data.len() as u64, stream)
        .await
        .unwrap();
    json!({"digest": digest, "size": data.len()})
}

/// Signs the manifest `digest` of `addr/repository` as cosign does, claiming `claimed`
/// (the digest itself, unless a test wants a lying signature).
async fn sign(
    registry: &Registry,
    signer: &SigStoreSigner,
    addr: &str,
    repository: &str,
    digest: &str,
    claimed: &str,
) {
    let payload = json!({
        "critical": {
            "identity": {"docker-reference": format!("{addr}/{repository}")},
            "image": {"docker-manifest-digest": claimed},
            "type": "cosign container image signature",
        },
        "optional": null,
    })
    .to_string();
    let signature =
        base64::engine::general_purpose::STANDARD.encode(signer.sign(payload.as_bytes()).unwrap());
    let r = at(addr, repository, digest);
    let mut layer = put_blob(registry, &r, payload.as_bytes()).await;
    layer["mediaType"] = "application/vnd.dev.cosign.simplesigning.v1+json".into();
    layer["annotations"] = json!({"dev.cosignproject.cosign/signature": signature});
    let config = json!({
        "architecture": "", "os": "", "config": {},
        "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]},
    })
    .to_string();
    let mut config = put_blob(registry, &r, config.as_bytes()).await;
    config["mediaType"] = "application/vnd.oci.image.config.v1+json".into();
    let manifest = json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": [layer],
    })
    .to_string();
    let tag = format!("{}.sig", digest.replace(':', "-"));
    registry
        .put_manifest(&at(addr, repository, &tag), manifest.into(), OCI_MANIFEST)
        .await
        .unwrap();
}

/// Pushes an SBOM for `subject` as an OCI 1.1 artifact and lists it (alone) under the
/// fallback tag `sha256-<hex>`, as a client does on a registry without a referrers API.
/// Returns its digest (its content names the repository, so that each repository's SBOM of
/// the same subject is another manifest).
pub(crate) async fn attach_sbom(
    registry: &Registry,
    addr: &str,
    repository: &str,
    subject: &str,
) -> String {
    let r = at(addr, repository, subject);
    let (body, media_type) = registry.get_manifest(&r).await.unwrap();
    let sbom =
        json!({"spdxVersion": "SPDX-2.3", "name": subject, "repository": repository}).to_string();
    let mut layer = put_blob(registry, &r, sbom.as_bytes()).await;
    layer["mediaType"] = SBOM_TYPE.into();
    let mut empty = put_blob(registry, &r, b"{}").await;
    empty["mediaType"] = "application/vnd.oci.empty.v1+json".into();
    let manifest = json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST, "artifactType": SBOM_TYPE,
        "config": empty, "layers": [layer],
        "subject": {"mediaType": media_type, "digest": subject, "size": body.len()},
        "annotations": {"org.opencontainers.image.created": "2026-01-01T00:00:00Z"},
    })
    .to_string();
    let digest = digest_of(manifest.as_bytes());
    registry
        .put_manifest(
            &at(addr, repository, &digest),
            manifest.clone().into(),
            OCI_MANIFEST,
        )
        .await
        .unwrap();
    let index = json!({
        "schemaVersion": 2, "mediaType": OCI_INDEX,
        "manifests": [{
            "mediaType": OCI_MANIFEST, "digest": digest, "size": manifest.len(),
            "artifactType": SBOM_TYPE,
        }],
    })
    .to_string();
    let fallback = at(addr, repository, &subject.replace(':', "-"));
    registry
        .put_manifest(&fallback, index.into(), OCI_INDEX)
        .await
        .unwrap();
    digest
}

/// What the source holds: a signed single-platform image with an SBOM (by tag), and a
/// signed two-platform index whose platform manifests are signed too (by digest).
pub(crate) struct Signed {
    single: String,
    sbom: String,
    /// The index's SBOM: the index is named by digest only, so at a registry without a
    /// referrers API its fallback tag is also the tag a mirror gives the index.
    multi_sbom: String,
    pub(crate) multi: String,
    pub(crate) platforms: Vec<String>,
    public_key: String,
    signer: SigStoreSigner,
}

pub(crate) async fn publish(registry: &Registry, addr: &str) -> Signed {
    let signer = SigningScheme::ECDSA_P256_SHA256_ASN1
        .create_signer()
        .unwrap();
    let public_key = signer
        .to_sigstore_keypair()
        .unwrap()
        .public_key_to_pem()
        .unwrap();
    let push = async |image: &BuiltImage, to: String| {
        registry
            .push(image, &ImageRef::parse(&to).unwrap())
            .await
            .unwrap()
    };
    let single = push(&image_of("app", "single"), format!("{addr}/app/single:v1")).await;
    let mut platforms = Vec::new();
    let mut children = Vec::new();
    for arch in ["amd64", "arm64"] {
        let child = image_of("arch", arch);
        let digest = push(&child, format!("{addr}/app/multi:{arch}")).await;
        children.push(json!({
            "mediaType": OCI_MANIFEST, "digest": digest, "size": child.manifest.len(),
            "platform": {"os": "linux", "architecture": arch},
        }));
        platforms.push(digest);
    }
    let index =
        json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": children}).to_string();
    let multi = digest_of(index.as_bytes());
    registry
        .put_manifest(&at(addr, "app/multi", "v1"), index.into(), OCI_INDEX)
        .await
        .unwrap();
    sign(registry, &signer, addr, "app/single", &single, &single).await;
    for digest in std::iter::once(&multi).chain(&platforms) {
        sign(registry, &signer, addr, "app/multi", digest, digest).await;
    }
    let sbom = attach_sbom(registry, addr, "app/single", &single).await;
    let multi_sbom = attach_sbom(registry, addr, "app/multi", &multi).await;
    Signed {
        single,
        sbom,
        multi_sbom,
        multi,
        platforms,
        public_key,
        signer,
    }
}

/// Publishes into `source` what [`publish`] does and writes an image set of both signed
/// images (the single one by tag, the index by digest): answers the client, what was
/// published and the image set's path.
async fn publish_both(source: &str, insecure: &[&str], work: &Path) -> (Registry, Signed, String) {
    let registry = client(insecure, &work.join("client"));
    let signed = publish(&registry, source).await;
    let config = write_config(
        work,
        &[
            format!("{source}/app/single:v1"),
            format!("{source}/app/multi@{}", signed.multi),
        ],
    );
    (registry, signed, config)
}

fn write_config(dir: &Path, images: &[String]) -> String {
    let list: String = images.iter().map(|i| format!("  - name: {i}\n")).collect();
    let path = dir.join("isc.yaml");
    write_image_set(&path, &format!("  additionalImages:\n{list}"));
    path.display().to_string()
}

/// Verifies `image` (a reference on a plain-HTTP registry) with sigstore's cosign client:
/// it finds the signature itself (the `.sig` tag of the digest it resolves) and checks it
/// with the public key.
async fn verify(image: &str, public_key: &str) -> Result<(), String> {
    let mut cosign = ClientBuilder::default()
        .with_oci_client_config(ClientConfig {
            protocol: ClientProtocol::Http,
            ..Default::default()
        })
        .build()
        .map_err(|e| e.to_string())?;
    let reference: OciReference = image.parse().map_err(|e| format!("{e:?}"))?;
    let layers = cosign
        .trusted_signature_layers(&Auth::Anonymous, &reference)
        .await
        .map_err(|e| e.to_string())?;
    let verifier = PublicKeyVerifier::new(
        public_key.as_bytes(),
        &SigningScheme::ECDSA_P256_SHA256_ASN1,
    )
    .map_err(|e| e.to_string())?;
    let constraints: VerificationConstraintVec = vec![Box::new(verifier)];
    verify_constraints(&layers, constraints.iter()).map_err(|e| {
        format!(
            "{image}: {} signature layers, {} constraints unsatisfied",
            layers.len(),
            e.unsatisfied_constraints.len()
        )
    })
}

/// Every image verifies at `root` (the index, by tag and by digest, and each platform
/// manifest), and the SBOM is listed by the fallback tag of the single image; or, with
/// `expected` false, none verifies and no SBOM is listed.
async fn assert_travelled(root: &str, signed: &Signed, registry: &Registry, expected: bool) {
    let mut images = vec![
        format!("{root}/app/single:v1"),
        format!("{root}/app/single@{}", signed.single),
        format!("{root}/app/multi@{}", signed.multi),
    ];
    images.extend(
        signed
            .platforms
            .iter()
            .map(|p| format!("{root}/app/multi@{p}")),
    );
    for image in &images {
        let verdict = verify(image, &signed.public_key).await;
        assert_eq!(verdict.is_ok(), expected, "{image}: {verdict:?}");
    }
    let (addr, prefix) = root.split_once('/').unwrap();
    let single = format!("{prefix}/app/single");
    let multi = format!("{prefix}/app/multi");
    if expected {
        listed_referrers(registry, addr, &single, &signed.single, &signed.sbom).await;
        listed_referrers(registry, addr, &multi, &signed.multi, &signed.multi_sbom).await;
    } else {
        let fallback = at(addr, &single, &signed.single.replace(':', "-"));
        let listed = registry.get_manifest(&fallback).await;
        assert!(listed.is_err(), "{listed:?}");
        // The index's tag is the index itself.
        let tag = at(addr, &multi, &signed.multi.replace(':', "-"));
        assert_eq!(registry.resolve_digest(&tag).await.unwrap(), signed.multi);
    }
}

/// The fallback tag of `subject` in `addr/repository` lists `sbom` (whose manifest and
/// layer are there, its `subject` the subject); returns every descriptor it lists.
async fn listed_referrers(
    registry: &Registry,
    addr: &str,
    repository: &str,
    subject: &str,
    sbom: &str,
) -> Vec<Value> {
    let fallback = at(addr, repository, &subject.replace(':', "-"));
    let (index, media_type) = registry.get_manifest(&fallback).await.unwrap();
    assert_eq!(media_type, OCI_INDEX);
    let index: Value = serde_json::from_slice(&index).unwrap();
    let manifests = index["manifests"].as_array().unwrap().clone();
    let listed = manifests
        .iter()
        .find(|m| m["digest"] == sbom)
        .unwrap_or_else(|| panic!("{sbom} is not in {index}"));
    assert_eq!(listed["artifactType"], SBOM_TYPE);
    let (body, _) = registry
        .get_manifest(&at(addr, repository, sbom))
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["subject"]["digest"], subject);
    let layer = body["layers"][0]["digest"].as_str().unwrap();
    assert!(
        registry
            .blob_exists(&at(addr, repository, layer), layer)
            .await
            .unwrap()
    );
    manifests
}

#[tokio::test]
async fn signatures_and_an_sbom_travel_registry_to_registry() {
    let (source, target, bare) = (
        TestRegistry::plain(),
        TestRegistry::plain(),
        TestRegistry::plain(),
    );
    let work = tempfile::tempdir().unwrap();
    let insecure = [
        source.addr.as_str(),
        target.addr.as_str(),
        bare.addr.as_str(),
    ];
    let (registry, signed, config) = publish_both(&source.addr, &insecure, work.path()).await;
    let root = format!("{}/mirror", target.addr);
    let to = format!("docker://{root}");
    let (code, stdout, stderr) = mirror(&["-c", &config, "--to", &to], &insecure, work.path());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // 2 images, 4 signatures, 2 SBOMs.
    assert!(stdout.contains("mirrored 8 images"), "{stdout}");
    assert_travelled(&root, &signed, &registry, true).await;
    // The mapping names each attachment with its destination.
    let mapping =
        std::fs::read_to_string(work.path().join("workspace/working-dir/mapping.txt")).unwrap();
    let sig = format!("{}.sig", signed.single.replace(':', "-"));
    assert!(
        mapping.contains(&format!(
            "{}/app/single:{sig}={root}/app/single:{sig}",
            source.addr
        )),
        "{mapping}"
    );
    // Another tool lists its own SBOM at the mirror, alone. A rerun copies nothing and
    // lists ours beside it.
    let theirs = attach_sbom(&registry, &target.addr, "mirror/app/single", &signed.single).await;
    let (code, stdout, stderr) = mirror(&["-c", &config, "--to", &to], &insecure, work.path());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains(" 0 blobs copied"), "{stdout}");
    assert_travelled(&root, &signed, &registry, true).await;
    let listed = listed_referrers(
        &registry,
        &target.addr,
        "mirror/app/single",
        &signed.single,
        &theirs,
    )
    .await;
    let digests: Vec<&str> = listed
        .iter()
        .map(|m| m["digest"].as_str().unwrap())
        .collect();
    assert_eq!(digests, [theirs.as_str(), signed.sbom.as_str()]);
    // The index stays pullable by digest where its tag now lists its referrers.
    registry
        .get_manifest(&at(&target.addr, "mirror/app/multi", &signed.multi))
        .await
        .unwrap();

    let bare_root = format!("{}/mirror", bare.addr);
    let (code, stdout, stderr) = mirror(
        &[
            "-c",
            &config,
            "--to",
            &format!("docker://{bare_root}"),
            "--remove-signatures",
        ],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("mirrored 2 images"), "{stdout}");
    assert_travelled(&bare_root, &signed, &registry, false).await;
    // The images themselves did come.
    registry
        .get_manifest(&at(&bare.addr, "mirror/app/multi", &signed.multi))
        .await
        .unwrap();
}

#[tokio::test]
async fn signatures_and_an_sbom_travel_through_an_archive_with_the_source_gone() {
    let (mut source, target, bare) = (
        TestRegistry::plain(),
        TestRegistry::plain(),
        TestRegistry::plain(),
    );
    let work = tempfile::tempdir().unwrap();
    let insecure = [
        source.addr.as_str(),
        target.addr.as_str(),
        bare.addr.as_str(),
    ];
    let (registry, signed, config) = publish_both(&source.addr, &insecure, work.path()).await;
    let archive = format!("file://{}", work.path().join("archive").display());
    let (code, stdout, stderr) = mirror(&["-c", &config, "--to", &archive], &insecure, work.path());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("mirrored 8 images"), "{stdout}");
    let insecure = [target.addr.as_str(), bare.addr.as_str()];
    source.stop();

    let root = format!("{}/site", target.addr);
    let (code, stdout, stderr) = mirror(
        &["--from", &archive, "--to", &format!("docker://{root}")],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("mirrored 8 images"), "{stdout}");
    assert_travelled(&root, &signed, &registry, true).await;

    let bare_root = format!("{}/site", bare.addr);
    let (code, stdout, stderr) = mirror(
        &[
            "--from",
            &archive,
            "--to",
            &format!("docker://{bare_root}"),
            "--remove-signatures",
        ],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("mirrored 2 images"), "{stdout}");
    assert_travelled(&bare_root, &signed, &registry, false).await;
}

#[tokio::test]
async fn a_signature_of_another_digest_is_refused_before_anything_is_copied() {
    let (source, target) = (TestRegistry::plain(), TestRegistry::plain());
    let work = tempfile::tempdir().unwrap();
    let insecure = [source.addr.as_str(), target.addr.as_str()];
    let registry = client(&insecure, &work.path().join("client"));
    let signed = publish(&registry, &source.addr).await;
    // The single image's signature now claims the first platform manifest of the index.
    let other = &signed.platforms[0];
    sign(
        &registry,
        &signed.signer,
        &source.addr,
        "app/single",
        &signed.single,
        other,
    )
    .await;
    let config = write_config(work.path(), &[format!("{}/app/single:v1", source.addr)]);
    let sig = format!("{}.sig", signed.single.replace(':', "-"));
    let (code, stdout, stderr) = mirror(
        &[
            "-c",
            &config,
            "--to",
            &format!("docker://{}/m", target.addr),
        ],
        &insecure,
        work.path(),
    );
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    let lying = registry
        .resolve_digest(&at(&source.addr, "app/single", &sig))
        .await
        .unwrap();
    assert!(
        stderr.contains(&format!(
            "{}/app/single:{sig} ({lying}) is attached to {} but its payload names {other}",
            source.addr, signed.single
        )),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was copied"), "{stderr}");
    // Nothing reached the mirror: not the image, not its signature.
    let tags = registry
        .list_tags(&at(&target.addr, "m/app/single", "v1"))
        .await
        .unwrap();
    assert!(tags.is_empty(), "{tags:?}");
    // To disk: no plan is written, so the directory is no archive to carry.
    let dir = work.path().join("archive");
    let (code, _, stderr) = mirror(
        &["-c", &config, "--to", &format!("file://{}", dir.display())],
        &insecure,
        work.path(),
    );
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("but its payload names"), "{stderr}");
    assert!(!dir.join("mirror-plan.json").exists());
    // Left behind on purpose, it is not looked at.
    let (code, stdout, stderr) = mirror(
        &[
            "-c",
            &config,
            "--to",
            &format!("docker://{}/m", target.addr),
            "--remove-signatures",
        ],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

/// Every request the registry answered so far, up to one made now (the last), once the
/// access log shows it.
async fn requests_so_far(registry: &TestRegistry) -> Vec<String> {
    static MARKERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = MARKERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let marker = format!("/v2/marker-{n}/tags/list");
    reqwest::get(format!("http://{}{marker}", registry.addr))
        .await
        .unwrap();
    for _ in 0..200 {
        let requests = registry.requests();
        if let Some(end) = requests.iter().position(|r| r.contains(&marker)) {
            return requests[..=end].to_vec();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the marker request never reached the access log");
}

/// The requests the source answered during one `mirror` run.
async fn requests_of(source: &TestRegistry, run: impl FnOnce()) -> Vec<String> {
    let before = requests_so_far(source).await.len();
    run();
    let after = requests_so_far(source).await;
    after[before..after.len() - 1].to_vec()
}

#[tokio::test]
async fn an_image_without_attachments_costs_one_tag_list_and_one_referrers_probe() {
    let (source, target) = (TestRegistry::plain(), TestRegistry::plain());
    let work = tempfile::tempdir().unwrap();
    let insecure = [source.addr.as_str(), target.addr.as_str()];
    let registry = client(&insecure, &work.path().join("client"));
    let mut images = Vec::new();
    for name in ["one", "two", "three"] {
        let to = format!("{}/plain/{name}:v1", source.addr);
        registry
            .push(&image_of(name, name), &ImageRef::parse(&to).unwrap())
            .await
            .unwrap();
        images.push(to);
    }
    let config = write_config(work.path(), &images);
    let count =
        |requests: &[String], what: &str| requests.iter().filter(|r| r.contains(what)).count();
    // Each run into a repository of its own, so that each copies the same blobs.
    let run_into = |to: &str, extra: &[&str]| {
        let mut args = vec!["-c", config.as_str(), "--to", to];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = mirror(&args, &insecure, work.path());
        assert_eq!(code, 0, "{stdout}\n{stderr}");
    };
    let without = requests_of(&source, || {
        run_into(
            &format!("docker://{}/without", target.addr),
            &["--remove-signatures"],
        )
    })
    .await;
    assert_eq!(count(&without, "/tags/list"), 0, "{without:#?}");
    assert_eq!(count(&without, "/referrers/"), 0, "{without:#?}");
    let with = requests_of(&source, || {
        run_into(&format!("docker://{}/with", target.addr), &[])
    })
    .await;
    // One tag list per repository; one referrers request for the whole registry, which
    // answers 404 (no referrers API).
    assert_eq!(count(&with, "/tags/list"), 3, "{with:#?}");
    assert_eq!(count(&with, "/referrers/"), 1, "{with:#?}");
    // Nothing else: the same requests as without, plus those four (the `GET /v2/` version
    // checks the registry client makes as it opens connections aside).
    let counted = |requests: &[String]| {
        requests
            .iter()
            .filter(|r| !r.starts_with("GET /v2/ "))
            .count()
    };
    assert_eq!(
        counted(&with),
        counted(&without) + 4,
        "{with:#?}\n{without:#?}"
    );
    // Nothing at the destination's fallback tags either.
    let tags = registry
        .list_tags(&at(&target.addr, "with/plain/one", "v1"))
        .await
        .unwrap();
    assert_eq!(tags, vec!["v1".to_owned()]);
}
