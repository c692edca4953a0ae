//! `mirror delete` (issue #20 item 3) against docker-registry 2.8 with deletes enabled: the
//! plan `--generate` writes (oc-mirror's DeleteImageList), a plan for another mirror refused
//! whole, the delete itself with a platform manifest a kept tag still names, a cosign
//! signature going with its image, and `garbage-collect` afterwards: deleted images answer
//! 404 and their blobs are gone, kept images still pull.
use crate::common::registry::TestRegistry;
use crate::common::run;
use crate::mirror::{client, image_of, mirror, write_image_set};
use crate::mirror_platforms::{App, publish_app};
use crate::mirror_signatures::attach_sbom;
use image::{ImageRef, Registry};
use std::path::Path;

fn layer_of(manifest: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(manifest).unwrap();
    v["layers"][0]["digest"].as_str().unwrap().to_owned()
}

/// Pulls an image whole (manifest, config, layers) into a fresh cache.
async fn pulls(insecure: &[&str], image: &str) -> Result<(), String> {
    let cache = tempfile::tempdir().unwrap();
    let r: Registry = client(insecure, cache.path());
    r.pull(&ImageRef::parse(image).unwrap())
        .await
        .map(drop)
        .map_err(|e| e.message)
}

fn delete(args: &[&str], insecure: &[&str], work: &Path) -> (i32, String, String) {
    let mut all = vec!["mirror", "delete"];
    all.extend_from_slice(args);
    for r in insecure {
        all.extend(["--insecure-registry", r]);
    }
    let cache = work.join("cache");
    all.extend(["--image-cache-dir", cache.to_str().unwrap()]);
    run(&all)
}

#[tokio::test]
async fn delete_plans_then_removes_what_an_image_set_mirrored() {
    let source = TestRegistry::plain();
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let addr = source.addr.clone();
    let App { operand, tool } = publish_app(&source, work.path()).await;
    let src = client(&[&addr], &cache);
    let mut layers = std::collections::BTreeMap::new();
    for name in ["extra", "keep"] {
        let image = image_of(&[(name, name.as_bytes().repeat(1000))]);
        layers.insert(name, layer_of(&image.manifest));
        src.push(
            &image,
            &ImageRef::parse(&format!("{addr}/apps/{name}:v1")).unwrap(),
        )
        .await
        .unwrap();
    }

    let dest = TestRegistry::plain();
    let insecure = [addr.as_str(), dest.addr.as_str()];
    let to = format!("docker://{}/m", dest.addr);
    let isc = work.path().join("isc.yaml");
    write_image_set(
        &isc,
        &format!(
            "  operators:
  - catalog: {addr}/apps/catalog:v1
  additionalImages:
  - name: {addr}/apps/tool:v1
  - name: {addr}/apps/tool:v1-amd64
  - name: {addr}/apps/extra:v1
  - name: {addr}/apps/keep:v1
"
        ),
    );
    let (code, _, stderr) = mirror(
        &["-c", isc.to_str().unwrap(), "--to", &to],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    let d = client(&insecure, &cache);
    let at = |path: &str| -> oci_client::Reference {
        format!("{}/m/{path}", dest.addr).parse().unwrap()
    };
    let digest = async |path: &str| d.resolve_digest(&at(path)).await;
    let extra = digest("apps/extra:v1").await.unwrap();
    let bundle = digest("apps/app-bundle:v1").await.unwrap();
    let catalog = digest("apps/catalog:v1").await.unwrap();
    // A signature of extra, in cosign's tag scheme, at the mirror.
    let signature = image_of(&[("signature", b"signed".to_vec())]);
    let sig_tag = format!("{}.sig", extra.replace(':', "-"));
    let sig = d
        .push(
            &signature,
            &ImageRef::parse(&format!("{}/m/apps/extra:{sig_tag}", dest.addr)).unwrap(),
        )
        .await
        .unwrap();
    // And an SBOM, as an OCI 1.1 referrer listed under the fallback tag sha256-<hex>.
    let sbom = attach_sbom(&d, &dest.addr, "m/apps/extra", &extra).await;
    let referrers = digest(&format!("apps/extra:{}", extra.replace(':', "-")))
        .await
        .unwrap();

    let disc = work.path().join("delete-isc.yaml");
    std::fs::write(
        &disc,
        format!(
            "kind: DeleteImageSetConfiguration
apiVersion: mirror.openshift.io/v2alpha1
delete:
  operators:
  - catalog: {addr}/apps/catalog:v1
  additionalImages:
  - name: {addr}/apps/tool:v1
  - name: {addr}/apps/extra:v1
"
        ),
    )
    .unwrap();
    let workspace = work.path().join("workspace");
    let disc_path = disc.to_str().unwrap();
    let (code, stdout, stderr) = delete(
        &[
            "-c",
            disc_path,
            "--to",
            &to,
            "--generate",
            "--workspace",
            workspace.to_str().unwrap(),
        ],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    let plan = workspace.join("working-dir/delete/delete-images.yaml");
    assert!(stdout.starts_with(&format!(
        "wrote {}: 5 images to delete from {}/m; nothing deleted",
        plan.display(),
        dest.addr
    )));
    let list: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    assert_eq!(list["kind"], "DeleteImageList");
    assert_eq!(list["apiVersion"], "mirror.openshift.io/v2alpha1");
    let items: Vec<(String, String, String)> = list["items"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|i| {
            let s = |k: &str| i[k].as_str().unwrap().to_owned();
            (s("imageReference"), s("imageName"), s("type"))
        })
        .collect();
    let m = format!("docker://{}/m/apps", dest.addr);
    let s = format!("docker://{addr}/apps");
    let expected = [
        (
            format!("{m}/app-bundle:v1@{bundle}"),
            format!("{s}/app-bundle:v1"),
            "operatorBundle",
        ),
        (
            format!("{m}/catalog:v1@{catalog}"),
            format!("{s}/catalog:v1"),
            "operatorCatalog",
        ),
        (
            format!("{m}/extra:v1@{extra}"),
            format!("{s}/extra:v1"),
            "generic",
        ),
        (
            format!("{m}/operand@{}", operand.digest),
            format!("{s}/operand@{}", operand.digest),
            "operatorRelatedImage",
        ),
        (
            format!("{m}/tool:v1@{}", tool.digest),
            format!("{s}/tool:v1"),
            "generic",
        ),
    ]
    .map(|(a, b, c)| (a, b, c.to_owned()));
    assert_eq!(items, expected);
    // Generating deleted nothing.
    assert_eq!(digest("apps/extra:v1").await.unwrap(), extra);

    // A plan naming another registry: refused whole, nothing deleted.
    let text = std::fs::read_to_string(&plan).unwrap();
    let foreign = work.path().join("foreign.yaml");
    std::fs::write(
        &foreign,
        text.replacen(
            &format!("{m}/extra"),
            "docker://other.example:5000/m/apps/extra",
            1,
        ),
    )
    .unwrap();
    let (code, _, stderr) = delete(
        &["--delete-yaml-file", foreign.to_str().unwrap(), "--to", &to],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 1);
    assert_eq!(
        stderr,
        format!(
            "error: {}: invalid DeleteImageList:\n  items[2].imageReference \
             \"docker://other.example:5000/m/apps/extra:v1@{extra}\": not in the mirror --to \
             names (docker://{}/m)\n  nothing deleted\n",
            foreign.display(),
            dest.addr
        )
    );
    assert_eq!(digest("apps/extra:v1").await.unwrap(), extra);
    // A registry that refuses deletes: said so, for each repository, and nothing is gone.
    let refusing = TestRegistry::plain_without_deletes();
    let insecure_refusing = [addr.as_str(), refusing.addr.as_str()];
    let to_refusing = format!("docker://{}/m", refusing.addr);
    let extra_only = work.path().join("extra-only.yaml");
    write_image_set(
        &extra_only,
        &format!("  additionalImages:\n  - name: {addr}/apps/extra:v1\n"),
    );
    let (code, _, stderr) = mirror(
        &["-c", extra_only.to_str().unwrap(), "--to", &to_refusing],
        &insecure_refusing,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    let refusing_plan = work.path().join("refusing.yaml");
    std::fs::write(
        &refusing_plan,
        format!(
            "kind: DeleteImageList
apiVersion: mirror.openshift.io/v2alpha1
items:
- imageName: docker://{addr}/apps/extra:v1
  imageReference: {to_refusing}/apps/extra:v1@{extra}
  type: generic
"
        ),
    )
    .unwrap();
    let (code, _, stderr) = delete(
        &[
            "--delete-yaml-file",
            refusing_plan.to_str().unwrap(),
            "--to",
            &to_refusing,
        ],
        &insecure_refusing,
        work.path(),
    );
    assert_eq!(code, 1);
    assert_eq!(
        stderr,
        format!(
            "error: not everything planned was deleted (a rerun deletes what is left):\n  \
             m/apps/extra: delete manifest {}/m/apps/extra@{extra}: unsupported: The operation \
             is unsupported. (does the registry allow deletes? distribution: \
             storage.delete.enabled) (nothing more deleted in it)\n",
            refusing.addr
        )
    );
    let r = client(&insecure_refusing, &cache);
    let there: oci_client::Reference = format!("{}/m/apps/extra:v1", refusing.addr)
        .parse()
        .unwrap();
    assert_eq!(r.resolve_digest(&there).await.unwrap(), extra);

    // Neither step named: nothing happens.
    let (code, _, _) = delete(&["--to", &to], &insecure, work.path());
    assert_eq!(code, 2);

    let plan_path = plan.to_str().unwrap();
    let (code, stdout, stderr) = delete(
        &["--delete-yaml-file", plan_path, "--to", &to],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "deleted 15 manifests from {}/m, kept 1 still referenced, 0 already absent",
            dest.addr
        )
    );
    let mut deleted: Vec<&str> = lines
        .clone()
        .filter_map(|l| l.strip_prefix("  deleted  "))
        .collect();
    deleted.sort();
    let mut want = vec![
        format!("m/apps/app-bundle@{bundle} ({s}/app-bundle:v1)"),
        format!("m/apps/catalog@{catalog} ({s}/catalog:v1)"),
        format!("m/apps/extra@{extra} ({s}/extra:v1)"),
        format!("m/apps/extra@{sig} ({sig_tag}, of {s}/extra:v1)"),
        format!("m/apps/extra@{sbom} (a referrer of {s}/extra:v1)"),
        format!("m/apps/extra@{referrers} (the referrers index of {s}/extra:v1)"),
        format!(
            "m/apps/operand@{} ({s}/operand@{})",
            operand.digest, operand.digest
        ),
        format!("m/apps/tool@{} ({s}/tool:v1)", tool.digest),
    ];
    for (arch, child) in &operand.children {
        want.push(format!(
            "m/apps/operand@{child} (linux/{arch} of {s}/operand@{})",
            operand.digest
        ));
    }
    for (arch, child) in &tool.children {
        if *arch != "amd64" {
            want.push(format!("m/apps/tool@{child} (linux/{arch} of {s}/tool:v1)"));
        }
    }
    want.sort();
    assert_eq!(deleted, want);
    assert_eq!(
        lines
            .filter_map(|l| l.strip_prefix("  kept     "))
            .collect::<Vec<_>>(),
        [format!(
            "m/apps/tool@{} (linux/amd64 of {s}/tool:v1): still referenced by m/apps/tool:v1-amd64",
            tool.children["amd64"]
        )]
    );

    dest.garbage_collect();
    let sig_ref = format!("apps/extra:{sig_tag}");
    let sbom_ref = format!("apps/extra@{sbom}");
    for gone in [
        &sbom_ref,
        "apps/extra:v1",
        "apps/tool:v1",
        "apps/catalog:v1",
        "apps/app-bundle:v1",
        &sig_ref,
    ] {
        let e = d.resolve_digest(&at(gone)).await.unwrap_err();
        assert_eq!(e.kind, image::ErrorKind::NotFound, "{gone}: {}", e.message);
    }
    for child in operand.children.values() {
        let e = d
            .get_manifest(&at(&format!("apps/operand@{child}")))
            .await
            .unwrap_err();
        assert_eq!(e.kind, image::ErrorKind::NotFound, "{child}");
    }
    assert!(!dest.blob_file(&layers["extra"]).exists());
    assert!(dest.blob_file(&layers["keep"]).exists());
    pulls(&insecure, &format!("{}/m/apps/keep:v1", dest.addr))
        .await
        .unwrap();
    pulls(&insecure, &format!("{}/m/apps/tool:v1-amd64", dest.addr))
        .await
        .unwrap();

    // A rerun finds nothing left to delete.
    let (code, stdout, stderr) = delete(
        &["--delete-yaml-file", plan_path, "--to", &to],
        &insecure,
        work.path(),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with(&format!(
            "deleted 0 manifests from {}/m, kept 0 still referenced, 5 already absent\n",
            dest.addr
        )),
        "{stdout}"
    );
}
