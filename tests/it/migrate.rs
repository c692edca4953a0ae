//! `migrate <ref> <out-dir>` and the legacy inputs it converts: SQLite index databases
//! (catalog-formats.md §E, built here from the schema the spec documents) and
//! package-manifest trees (§D).

use crate::common::{files_below, run, shared_testdata};
use rusqlite::{Connection, params};
use serde_json::{Value, json};
use std::path::Path;

/// The tables of schema v13 (catalog-formats.md §E).
const SCHEMA_V13: &str = "
CREATE TABLE schema_migrations (version BIGINT NOT NULL, timestamp TEXT);
CREATE TABLE package (name TEXT PRIMARY KEY, default_channel TEXT);
CREATE TABLE channel (name TEXT, package_name TEXT, head_operatorbundle_name TEXT, PRIMARY KEY (name, package_name));
CREATE TABLE channel_entry (entry_id INTEGER PRIMARY KEY, channel_name TEXT, package_name TEXT, operatorbundle_name TEXT, replaces INTEGER, depth INTEGER);
CREATE TABLE operatorbundle (name TEXT PRIMARY KEY, csv TEXT, bundle TEXT, bundlepath TEXT, skiprange TEXT, version TEXT, replaces TEXT, skips TEXT, substitutesfor TEXT);
CREATE UNIQUE INDEX operatorbundle_identity ON operatorbundle (name, version, bundlepath);
CREATE TABLE properties (type TEXT, value TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
CREATE TABLE dependencies (type TEXT, value TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
CREATE TABLE api (group_name TEXT, version TEXT, kind TEXT, plural TEXT NOT NULL, PRIMARY KEY (group_name, version, kind));
CREATE TABLE api_provider (group_name TEXT, version TEXT, kind TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
CREATE TABLE api_requirer (group_name TEXT, version TEXT, kind TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
CREATE TABLE related_image (image TEXT, operatorbundle_name TEXT);
CREATE TABLE deprecated (operatorbundle_name TEXT PRIMARY KEY);
INSERT INTO schema_migrations VALUES (13, '2023-02-01');
";

/// An early schema: no properties, dependencies, deprecations, graph columns or bundle
/// images; the graph and versions live only in the CSVs.
const SCHEMA_EARLY: &str = "
CREATE TABLE package (name TEXT PRIMARY KEY, default_channel TEXT);
CREATE TABLE channel (name TEXT, package_name TEXT, head_operatorbundle_name TEXT, PRIMARY KEY (name, package_name));
CREATE TABLE channel_entry (entry_id INTEGER PRIMARY KEY, channel_name TEXT, package_name TEXT, operatorbundle_name TEXT, replaces INTEGER, depth INTEGER);
CREATE TABLE operatorbundle (name TEXT PRIMARY KEY, csv TEXT, bundle TEXT);
CREATE TABLE api_provider (group_name TEXT, version TEXT, kind TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
CREATE TABLE api_requirer (group_name TEXT, version TEXT, kind TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT, operatorbundle_path TEXT);
";

fn csv(name: &str, version: &str, replaces: &str, skips: &[&str]) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name, "annotations": {"olm.skipRange": "<3.0.0"}},
        "spec": {
            "version": version,
            "replaces": replaces,
            "skips": skips,
            "icon": [{"base64data": "iVBO Rw0K Ggo=", "mediatype": "image/png"}],
            "install": {"strategy": "deployment", "spec": {"deployments": [
                {"name": "op", "spec": {"template": {"spec": {"containers": [{"image": "quay.io/foo/operator:3"}]}}}}
            ]}},
            "relatedImages": [{"name": "db", "image": "quay.io/foo/db:1"}],
        }
    })
}

fn crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "foos.example.com"},
           "spec": {"group": "example.com", "names": {"kind": "Foo", "plural": "foos"}, "versions": [{"name": "v1"}]}})
}

/// A v13 database: foo.v3 (head, with manifests) replaces foo.v2 (skips the absent
/// foo.v1.5) replaces foo.v1; foo.v0 is deprecated. Graph rows follow upstream's encoding.
pub(crate) fn build_v13(path: &Path) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(SCHEMA_V13).unwrap();
    db.execute("INSERT INTO package VALUES ('foo', 'stable')", [])
        .unwrap();
    for ch in ["stable", "fast"] {
        db.execute("INSERT INTO channel VALUES (?1, 'foo', 'foo.v3')", [ch])
            .unwrap();
        let rows: &[(&str, Option<i64>, i64)] = &[
            ("foo.v3", Some(2), 0),
            ("foo.v2", Some(5), 1),
            ("foo.v1.5", None, 1),
            ("foo.v2", Some(3), 1),
            ("foo.v1", None, 2),
        ];
        let base: i64 = db
            .query_row(
                "SELECT IFNULL(MAX(entry_id), 0) FROM channel_entry",
                [],
                |r| r.get(0),
            )
            .unwrap();
        for (name, replaces, depth) in rows {
            db.execute(
                "INSERT INTO channel_entry (channel_name, package_name, operatorbundle_name, replaces, depth) VALUES (?1, 'foo', ?2, ?3, ?4)",
                params![ch, name, replaces.map(|r| r + base), depth],
            )
            .unwrap();
        }
    }
    db.execute("INSERT INTO channel_entry (channel_name, package_name, operatorbundle_name, depth) VALUES ('fast', 'foo', 'foo.v0', 3)", []).unwrap();
    let head = csv("foo.v3", "3.0.0", "foo.v2", &[]);
    let manifests = format!("{}\n{}\n", crd(), head);
    db.execute(
        "INSERT INTO operatorbundle VALUES ('foo.v3', ?1, ?2, 'quay.io/foo/bundle:v3', '<3.0.0', '3.0.0', 'foo.v2', '', '')",
        params![format!("{head}\n"), manifests],
    )
    .unwrap();
    db.execute("INSERT INTO operatorbundle VALUES ('foo.v2', NULL, NULL, 'quay.io/foo/bundle:v2', '', '2.0.0', 'foo.v1', 'foo.v1.5', '')", []).unwrap();
    db.execute("INSERT INTO operatorbundle VALUES ('foo.v1', NULL, NULL, 'quay.io/foo/bundle:v1', '', '1.0.0', '', '', '')", []).unwrap();
    db.execute("INSERT INTO operatorbundle VALUES ('foo.v0', NULL, NULL, 'quay.io/foo/bundle:v0', '', '0.1.0', '', '', '')", []).unwrap();
    db.execute("INSERT INTO deprecated VALUES ('foo.v0')", [])
        .unwrap();
    let props: &[(&str, &str, &str)] = &[
        (
            "foo.v3",
            "olm.package",
            r#"{"packageName":"foo","version":"3.0.0"}"#,
        ),
        (
            "foo.v3",
            "olm.package",
            r#"{"packageName":"foo","version":"3.0.0"}"#,
        ),
        (
            "foo.v3",
            "olm.gvk",
            r#"{"group":"example.com","kind":"Foo","version":"v1"}"#,
        ),
        ("foo.v3", "olm.label", r#"{"label": "certified"}"#),
        (
            "foo.v2",
            "olm.package",
            r#"{"packageName":"foo","version":"2.0.0"}"#,
        ),
        (
            "foo.v1",
            "olm.package",
            r#"{"packageName":"foo","version":"1.0.0"}"#,
        ),
        (
            "foo.v0",
            "olm.package",
            r#"{"packageName":"foo","version":"0.1.0"}"#,
        ),
        ("foo.v0", "olm.deprecated", "{}"),
    ];
    for (b, t, v) in props {
        db.execute(
            "INSERT INTO properties (type, value, operatorbundle_name) VALUES (?1, ?2, ?3)",
            params![t, v, b],
        )
        .unwrap();
    }
    let deps: &[(&str, &str)] = &[
        (
            "olm.gvk",
            r#"{"group":"example.com","kind":"Bar","version":"v1"}"#,
        ),
        (
            "olm.package",
            r#"{"packageName":"bar","version":">=1.0.0"}"#,
        ),
        ("olm.label", r#"{"label":"x"}"#),
    ];
    for (t, v) in deps {
        db.execute(
            "INSERT INTO dependencies (type, value, operatorbundle_name) VALUES (?1, ?2, 'foo.v3')",
            params![t, v],
        )
        .unwrap();
    }
    for (b, image) in [
        ("foo.v3", "quay.io/foo/operator:3"),
        ("foo.v3", "quay.io/foo/bundle:v3"),
        ("foo.v3", "quay.io/foo/extra:1"),
        ("foo.v2", "quay.io/foo/bundle:v2"),
        ("foo.v1", "quay.io/foo/bundle:v1"),
    ] {
        db.execute("INSERT INTO related_image VALUES (?1, ?2)", [image, b])
            .unwrap();
    }
}

/// The documents of a JSON stream.
fn documents(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

/// The `olm.bundle.object` of a manifest: its JSON as Go writes it (sorted keys, `<`
/// escaped), base64.
fn object(v: &Value) -> Value {
    use base64::Engine;
    let go_json = serde_json::to_string(v).unwrap().replace('<', "\\u003c");
    let text = base64::engine::general_purpose::STANDARD.encode(go_json);
    json!({"type": "olm.bundle.object", "value": {"data": text}})
}

fn expected_v13() -> Vec<Value> {
    let entries = json!([
        {"name": "foo.v1"},
        {"name": "foo.v2", "replaces": "foo.v1", "skips": ["foo.v1.5"]},
        {"name": "foo.v3", "replaces": "foo.v2", "skipRange": "<3.0.0"},
    ]);
    let small = |n: &str, v: &str| {
        json!({"schema": "olm.bundle", "name": n, "package": "foo", "image": format!("quay.io/foo/bundle:{n}").replace("foo.", ""),
               "properties": [{"type": "olm.package", "value": {"packageName": "foo", "version": v}}],
               "relatedImages": [{"name": "", "image": format!("quay.io/foo/bundle:{n}").replace("foo.", "")}]})
    };
    let gvk = |k: &str| json!({"group": "example.com", "kind": k, "version": "v1"});
    vec![
        json!({"schema": "olm.package", "name": "foo", "defaultChannel": "stable", "icon": {"base64data": "iVBORw0KGgo=", "mediatype": "image/png"}}),
        json!({"schema": "olm.channel", "name": "fast", "package": "foo", "entries": entries}),
        json!({"schema": "olm.channel", "name": "stable", "package": "foo", "entries": entries}),
        small("foo.v1", "1.0.0"),
        small("foo.v2", "2.0.0"),
        json!({"schema": "olm.bundle", "name": "foo.v3", "package": "foo", "image": "quay.io/foo/bundle:v3",
        "properties": [
            {"type": "olm.gvk", "value": gvk("Foo")},
            {"type": "olm.gvk.required", "value": gvk("Bar")},
            {"type": "olm.label", "value": {"label": "certified"}},
            {"type": "olm.label", "value": {"label": "x"}},
            {"type": "olm.package", "value": {"packageName": "foo", "version": "3.0.0"}},
            {"type": "olm.package.required", "value": {"packageName": "bar", "versionRange": ">=1.0.0"}},
            object(&crd()),
            object(&csv("foo.v3", "3.0.0", "foo.v2", &[])),
        ],
        "relatedImages": [
            {"name": "", "image": "quay.io/foo/bundle:v3"},
            {"name": "db", "image": "quay.io/foo/db:1"},
            {"name": "", "image": "quay.io/foo/extra:1"},
            {"name": "", "image": "quay.io/foo/operator:3"},
        ]}),
    ]
}

#[test]
fn index_db_v13_migrates_to_one_file_per_package() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("index.db");
    build_v13(&db);
    let out = tmp.path().join("out");
    let (code, stdout, stderr) = run(&["migrate", db.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "rendering catalog {:?} as file-based catalog",
            db.display().to_string()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "wrote rendered file-based catalog to {:?}",
            out.display().to_string()
        )),
        "{stderr}"
    );
    let files: Vec<String> = files_below(&out);
    assert_eq!(files, ["foo/catalog.json"]);
    let text = std::fs::read_to_string(out.join("foo/catalog.json")).unwrap();
    assert_eq!(documents(&text), expected_v13());
    // The result is a valid catalog, and render reads the database the same way.
    assert_eq!(run(&["validate", out.to_str().unwrap()]).0, 0);
    let (code, rendered, _) = run(&["render", db.to_str().unwrap()]);
    assert_eq!((code, rendered), (0, text));
}

#[test]
fn early_schema_falls_back_to_the_csvs_and_api_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("old.db");
    let db = Connection::open(&path).unwrap();
    db.execute_batch(SCHEMA_EARLY).unwrap();
    db.execute("INSERT INTO package VALUES ('foo', 'stable')", [])
        .unwrap();
    db.execute("INSERT INTO channel VALUES ('stable', 'foo', 'foo.v3')", [])
        .unwrap();
    for (name, replaces) in [("foo.v3", Some(2)), ("foo.v2", None)] {
        db.execute("INSERT INTO channel_entry (channel_name, package_name, operatorbundle_name, replaces, depth) VALUES ('stable', 'foo', ?1, ?2, 0)", params![name, replaces]).unwrap();
    }
    let v3 = csv("foo.v3", "3.0.0", "foo.v2", &["foo.v2.5"]);
    let v2 = csv("foo.v2", "2.0.0", "", &[]);
    db.execute(
        "INSERT INTO operatorbundle VALUES ('foo.v3', ?1, NULL)",
        [v3.to_string()],
    )
    .unwrap();
    db.execute(
        "INSERT INTO operatorbundle VALUES ('foo.v2', ?1, NULL)",
        [v2.to_string()],
    )
    .unwrap();
    db.execute(
        "INSERT INTO api_provider VALUES ('example.com', 'v1', 'Foo', 'foo.v3', '3.0.0', '')",
        [],
    )
    .unwrap();
    db.execute(
        "INSERT INTO api_requirer VALUES ('example.com', 'v1', 'Bar', 'foo.v3', '3.0.0', '')",
        [],
    )
    .unwrap();
    drop(db);
    let (code, text, err) = run(&["render", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let docs = documents(&text);
    assert_eq!(
        docs[1]["entries"],
        json!([
            {"name": "foo.v2", "skipRange": "<3.0.0"},
            {"name": "foo.v3", "replaces": "foo.v2", "skips": ["foo.v2.5"], "skipRange": "<3.0.0"},
        ])
    );
    let types: Vec<String> = docs[3]["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{} {}", p["type"].as_str().unwrap(), p["value"]))
        .collect();
    assert_eq!(
        types[..3],
        [
            r#"olm.gvk {"group":"example.com","kind":"Foo","version":"v1"}"#,
            r#"olm.gvk.required {"group":"example.com","kind":"Bar","version":"v1"}"#,
            r#"olm.package {"packageName":"foo","version":"3.0.0"}"#,
        ]
    );
    assert_eq!(
        types.len(),
        4,
        "three properties and the CSV as the only manifest"
    );
}

#[test]
fn a_file_that_is_not_an_index_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("empty.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let out = tmp.path().join("out");
    let (code, _, err) = run(&["migrate", path.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.ends_with(&format!(
            "error: {}: not an operator registry index database (no table \"package\")\n",
            path.display()
        )),
        "{err}"
    );
    assert!(!out.exists(), "nothing is written on failure");
    let text = tmp.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    let (code, _, err) = run(&["render", text.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "error: ref {:?} is not a directory: not allowed\n",
            text.display().to_string()
        )
    );
}

#[test]
fn package_manifest_tree_migrates_and_validates() {
    let Some(root) = shared_testdata("upstream/manifests") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (code, _, err) = run(&[
        "migrate",
        root.to_str().unwrap(),
        out.to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        files_below(&out),
        [
            "etcd/catalog.yaml",
            "prometheus/catalog.yaml",
            "strimzi-kafka-operator/catalog.yaml"
        ]
    );
    let (code, _, err) = run(&["validate", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // render refuses the tree and points at migrate instead.
    let (code, _, err) = run(&["render", root.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "error: ref {:?} is a legacy package-manifest tree: convert it with `migrate {} <output-dir>`\n",
            root.display().to_string(),
            root.display()
        )
    );
}

#[test]
fn output_dir_must_be_empty_and_package_less_documents_go_to_the_top() {
    let Some(root) = shared_testdata("upstream/custom-schema-fbc") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let (code, _, err) = run(&["migrate", root.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(
        (code, err),
        (
            1,
            format!(
                "error: output dir {:?} must be empty\n",
                out.display().to_string()
            )
        )
    );
    assert_eq!(files_below(&out), ["keep.txt"]);
    std::fs::remove_file(out.join("keep.txt")).unwrap();
    let (code, _, err) = run(&["migrate", root.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (_, rendered, _) = run(&["render", root.to_str().unwrap()]);
    let (_, again, _) = run(&["render", out.to_str().unwrap()]);
    assert_eq!(documents(&again), documents(&rendered));
    assert_eq!(files_below(&out), ["catalog.json", "testpkg/catalog.json"]);
}

#[test]
fn a_corrupt_manifest_column_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("index.db");
    build_v13(&path);
    let db = Connection::open(&path).unwrap();
    db.execute(
        "UPDATE operatorbundle SET bundle = '{\"kind\":' WHERE name = 'foo.v3'",
        [],
    )
    .unwrap();
    drop(db);
    let (code, _, err) = run(&["render", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "error: {}: operatorbundle \"foo.v3\": column bundle is not JSON: EOF while parsing a value at line 1 column 8\n",
            path.display()
        )
    );
}
