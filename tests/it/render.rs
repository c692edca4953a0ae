//! `render`: normalised FBC out, byte-compatible with opm's writer, and stable on round trips.

use crate::common::{run, shared_testdata};
use std::path::Path;

fn render(dir: &Path, format: &str) -> String {
    let (code, stdout, stderr) = run(&["render", dir.to_str().unwrap(), "-o", format]);
    assert_eq!(code, 0, "{stderr}");
    stdout
}

#[test]
fn render_reproduces_opm_output_byte_for_byte() {
    let Some(root) = shared_testdata("upstream/manifests-fbc") else {
        return;
    };
    // opm migrate wrote one file per package; render writes packages in name order.
    let expected: String = ["etcd", "prometheus", "strimzi-kafka-operator"]
        .iter()
        .map(|p| std::fs::read_to_string(root.join(p).join("catalog.json")).unwrap())
        .collect();
    assert_eq!(render(&root, "json"), expected);
}

#[test]
fn json_and_yaml_round_trip_to_the_same_catalog() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let json = render(&example, "json");
    let yaml = render(&example, "yaml");
    assert!(yaml.starts_with("---\ndefaultChannel: stable\n"), "{yaml}");

    let from_json = tempfile::tempdir().unwrap();
    std::fs::write(from_json.path().join("catalog.json"), &json).unwrap();
    let from_yaml = tempfile::tempdir().unwrap();
    std::fs::write(from_yaml.path().join("catalog.yaml"), &yaml).unwrap();
    for dir in [from_json.path(), from_yaml.path()] {
        assert_eq!(run(&["validate", dir.to_str().unwrap()]).0, 0);
        assert_eq!(render(dir, "json"), json);
    }
}

#[test]
fn render_names_what_it_cannot_read() {
    assert_eq!(
        run(&["render", "Cargo.toml"]),
        (
            1,
            String::new(),
            "error: ref \"Cargo.toml\" is not a directory: not allowed\n".into()
        )
    );
    let (code, _, stderr) = run(&["render", "examples/catalog", "--migrate-level", "sideways"]);
    assert_eq!(
        (code, stderr.as_str()),
        (1, "error: unknown migration level \"sideways\"\n")
    );
}
