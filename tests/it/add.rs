//! `add`: bundles placed into a file-based catalog in replaces and semver mode; conflicts
//! leave the catalog byte for byte as it was.

use crate::common::{run, shared_testdata};
use std::path::Path;

fn foo(version: &str) -> Option<String> {
    shared_testdata(&format!("upstream/render-bundles/foo-bundle-v{version}"))
        .map(|p| p.display().to_string())
}

fn add(catalog: &Path, bundles: &[&str], mode: &str) -> (i32, String) {
    let mut args = vec!["add", catalog.to_str().unwrap()];
    args.extend_from_slice(bundles);
    args.extend_from_slice(&["--mode", mode]);
    let (code, _, stderr) = run(&args);
    (code, stderr)
}

/// (channel, bundle, replaces, skips) of the catalog, sorted, as `render` sees it.
fn graph(catalog: &Path) -> Vec<String> {
    let (code, stdout, stderr) = run(&["render", catalog.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let mut out = Vec::new();
    for doc in serde_json::Deserializer::from_str(&stdout).into_iter::<serde_json::Value>() {
        let doc = doc.unwrap();
        match doc["schema"].as_str().unwrap() {
            "olm.package" => out.push(format!(
                "package {} default {}",
                doc["name"], doc["defaultChannel"]
            )),
            "olm.channel" => {
                for e in doc["entries"].as_array().unwrap() {
                    out.push(format!(
                        "{} {} replaces {} skips {}",
                        doc["name"], e["name"], e["replaces"], e["skips"]
                    ));
                }
            }
            _ => {}
        }
    }
    out.sort();
    out
}

/// Every file of the catalog with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(snapshot(&p));
        } else {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn replaces_mode_follows_the_csvs() {
    let (Some(v1), Some(v2), Some(v31)) = (foo("0.1.0"), foo("0.2.0"), foo("0.3.1")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = add(dir.path(), &[&v1, &v2], "replaces");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "wrote package \"foo\" to {}\n",
            dir.path().join("foo/catalog.json").display()
        )
    );
    let (code, stderr) = add(dir.path(), &[&v31], "replaces");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        graph(dir.path()),
        [
            r#""beta" "foo.v0.1.0" replaces null skips null"#,
            r#""beta" "foo.v0.2.0" replaces "foo.v0.1.0" skips ["foo.v0.1.1","foo.v0.1.2"]"#,
            r#""beta" "foo.v0.3.1" replaces "foo.v0.2.0" skips ["foo.v0.3.0"]"#,
            r#""stable" "foo.v0.2.0" replaces "foo.v0.1.0" skips ["foo.v0.1.1","foo.v0.1.2"]"#,
            r#"package "foo" default "beta""#,
        ]
    );
    assert_eq!(run(&["validate", dir.path().to_str().unwrap()]).0, 0);
}

#[test]
fn conflicts_leave_the_catalog_unchanged() {
    let (Some(v1), Some(v2), Some(v3)) = (foo("0.1.0"), foo("0.2.0"), foo("0.3.0")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(add(dir.path(), &[&v1], "replaces").0, 0);
    let before = snapshot(dir.path());

    let (code, stderr) = add(dir.path(), &[&v1], "replaces");
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            "error: adding foo.v0.1.0: bundle \"foo.v0.1.0\" is already in package \"foo\"\n"
        )
    );
    let (code, stderr) = add(dir.path(), &[&v3], "replaces");
    assert_eq!(
        (code, stderr.as_str()),
        (
            1,
            "error: adding foo.v0.3.0: bundle \"foo.v0.3.0\" replaces \"foo.v0.2.0\", which is not in package \"foo\"\n"
        )
    );
    // All or nothing: the good first bundle is not written when the second fails.
    let (code, _) = add(dir.path(), &[&v2, &v1], "replaces");
    assert_eq!(code, 1);
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn semver_mode_orders_by_version() {
    let (Some(v1), Some(v2), Some(v3)) = (foo("0.1.0"), foo("0.2.0"), foo("0.3.0")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = add(dir.path(), &[&v3, &v1, &v2], "semver");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        graph(dir.path()),
        [
            r#""beta" "foo.v0.1.0" replaces null skips null"#,
            r#""beta" "foo.v0.2.0" replaces "foo.v0.1.0" skips ["foo.v0.1.1","foo.v0.1.2"]"#,
            r#""beta" "foo.v0.3.0" replaces "foo.v0.2.0" skips null"#,
            r#""stable" "foo.v0.2.0" replaces null skips ["foo.v0.1.1","foo.v0.1.2"]"#,
            r#"package "foo" default "beta""#,
        ]
    );
}
