//! The upstream bundle-validation corpus: valid bundles render and pass the content checks;
//! every invalid one is refused with a message naming its problem.

use crate::common::shared_testdata;
use bundle::content;
use bundle::dir::BundleDir;
use bundle::manifests::read_objects;
use catalog::file::ReadLimits;

/// The problems reading the bundle directory `rel` reports.
fn read_problems(rel: &str) -> Option<Vec<String>> {
    let dir = shared_testdata("upstream/bundle-validation")?.join(rel);
    let err = BundleDir::read(&dir, ReadLimits::default()).expect_err(rel);
    assert_eq!(err.bundle, dir.display().to_string());
    assert!(
        err.to_string()
            .starts_with(&format!("invalid bundle {:?}:\n  ", err.bundle))
    );
    Some(err.problems)
}

/// Content problems of a directory of manifests (the flat invalid_manifests_bundle cases).
fn content_problems(rel: &str) -> Option<Vec<String>> {
    let dir = shared_testdata("upstream/bundle-validation")?.join(rel);
    Some(content::check(
        &read_objects(&dir, ReadLimits::default()).unwrap(),
    ))
}

#[test]
fn valid_bundles_pass_every_check() {
    let Some(root) = shared_testdata("upstream/bundle-validation") else {
        return;
    };
    for rel in ["valid_bundle", "valid_bundle_2"] {
        let b = BundleDir::read(&root.join(rel), ReadLimits::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(content::check(&b.objects), Vec::<String>::new(), "{rel}");
    }
}

#[test]
fn unknown_media_type_is_refused() {
    let Some(problems) = read_problems("invalid_annotations_bundle") else {
        return;
    };
    assert_eq!(
        problems,
        [
            r#"metadata/annotations.yaml: operators.operatorframework.io.bundle.mediatype.v1 is "registry+v2"; only "registry+v1" bundles can be rendered"#
        ]
    );
}

#[test]
fn invalid_dependencies_are_refused() {
    let cases: [(&str, &[&str]); 4] = [
        (
            "invalid_dependency_type",
            &[
                "metadata/dependencies.yaml: dependencies[0] (olm.crd): unsupported dependency type olm.crd",
            ],
        ),
        (
            "invalid_gvk_dependency",
            &[
                "metadata/dependencies.yaml: dependencies[0] (olm.gvk): API Group is empty",
                "metadata/dependencies.yaml: dependencies[0] (olm.gvk): API Version is empty",
                "metadata/dependencies.yaml: dependencies[0] (olm.gvk): API Kind is empty",
            ],
        ),
        (
            "invalid_label_dependency",
            &[
                "metadata/dependencies.yaml: dependencies[0] (olm.label): Label information is missing",
            ],
        ),
        (
            "invalid_package_dependency",
            &[
                "metadata/dependencies.yaml: dependencies[0] (olm.package): Package name is empty",
                r#"metadata/dependencies.yaml: dependencies[1] (olm.package): Invalid semver format version ">!0.2.0": Could not parse Range ">!0.2.0": Could not parse comparator ">!" in ">!0.2.0""#,
                "metadata/dependencies.yaml: dependencies[2] (olm.package): Package version is empty",
            ],
        ),
    ];
    for (rel, expected) in cases {
        let Some(problems) = read_problems(&format!("invalid_dependencies_bundle/{rel}")) else {
            return;
        };
        assert_eq!(problems, expected, "{rel}");
    }
}

#[test]
fn invalid_manifests_are_named() {
    let csv = "etcdoperator.v0.9.4.clusterserviceversion.yaml";
    let cases: [(&str, Vec<String>); 8] = [
        (
            "invalid_annotation_name",
            vec![
                format!("{csv}: CSV etcdoperator.v0.9.4: annotation olm.operatorgroup is set by OLM and must not be in the CSV"),
                format!("{csv}: CSV etcdoperator.v0.9.4: annotation olm.operatornamespace is set by OLM and must not be in the CSV"),
                format!("{csv}: CSV etcdoperator.v0.9.4: annotation olm.skiprange is misspelled, it must be olm.skipRange"),
            ],
        ),
        (
            "invalid_bundle",
            vec![format!(
                "{csv}: CSV etcdoperator.v0.9.4 owns CRD etcdclusters.etcd.database.coreos.com/v1beta2 EtcdCluster, but no CustomResourceDefinition in manifests/ serves it (found: [etcdbackups.etcd.database.coreos.com/v1beta2 EtcdBackup, etcdrestores.etcd.database.coreos.com/v1beta2 EtcdRestore])"
            )],
        ),
        (
            "invalid_bundle_2",
            vec!["etcdclusters.etcd.database.coreos.com.crd.yaml: CRD etcdclusters.etcd.database.coreos.com is in the bundle but CSV etcdoperator.v0.9.4 does not own it (spec.customresourcedefinitions.owned)".to_owned()],
        ),
        (
            "invalid_crd",
            vec!["etcdrestores.etcd.database.coreos.com.crd.yaml: CRD etcdrestores.etcd.database.coreos.com: version v1beta2 is listed twice".to_owned()],
        ),
        (
            "invalid_csv",
            vec![format!("{csv}: CSV etcdoperator.v0.9.4: spec.installModes must list at least one install mode")],
        ),
        (
            "invalid_sa",
            vec![r#"etcd.serviceaccount.yaml: ServiceAccount "etcd": metadata.namespace must be a string, got 0"#.to_owned()],
        ),
        (
            "invalid_type",
            vec!["etcd.resourcequota.yaml: kind ResourceQuota is not supported in a registry+v1 bundle".to_owned()],
        ),
        (
            "invalid_v1_crd/manifests",
            vec!["objectbuckets.objectbucket.io.crd.yaml: CRD objectbuckets.objectbucket.io: spec.version is not a field of apiextensions.k8s.io/v1 (use spec.versions)".to_owned()],
        ),
    ];
    for (rel, expected) in cases {
        let Some(problems) = content_problems(&format!("invalid_manifests_bundle/{rel}")) else {
            return;
        };
        assert_eq!(problems, expected, "{rel}");
    }
}

#[test]
fn a_bundle_missing_an_owned_crd_does_not_render() {
    let Some(src) =
        shared_testdata("upstream/bundle-validation/invalid_manifests_bundle/invalid_bundle")
    else {
        return;
    };
    let Some(valid) = shared_testdata("upstream/bundle-validation/valid_bundle") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("bundle");
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.join("manifests").join(p.file_name().unwrap())).unwrap();
    }
    std::fs::copy(
        valid.join("metadata/annotations.yaml"),
        dir.join("metadata/annotations.yaml"),
    )
    .unwrap();
    let err = BundleDir::read(&dir, ReadLimits::default()).unwrap_err();
    assert_eq!(
        err.problems,
        [
            "CSV etcdoperator.v0.9.4 owns CRD etcdclusters.etcd.database.coreos.com/v1beta2 EtcdCluster, but no CustomResourceDefinition in manifests/ serves it (found: [etcdbackups.etcd.database.coreos.com/v1beta2 EtcdBackup, etcdrestores.etcd.database.coreos.com/v1beta2 EtcdRestore])"
        ]
    );
}
