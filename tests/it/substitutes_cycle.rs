//! A catalog whose `olm.substitutesFor` annotations form cycles (a bundle naming itself, two
//! naming each other): opm's loader once followed such chains until it ran out of memory
//! (opm #2038). Every command that reads the catalog finishes, accepts it as opm v1.73 does,
//! and warns once per cycle in the words of opm's loader.
use crate::common::{Server, collect, fixture, run};
use api::ListBundlesRequest;

const WARNINGS: [&str; 2] = [
    r#"WARN cyclic substitutesFor chain detected involving "pair.v1.0.0" package=pair"#,
    r#"WARN cyclic substitutesFor chain detected involving "self.v1.0.0" package=self"#,
];

/// The log lines of `stderr` without their timestamps.
fn log_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .map(|l| l.split_once(' ').map_or(l, |(_, rest)| rest.trim_start()))
        .collect()
}

#[test]
fn validate_accepts_the_cycles_and_warns() {
    let catalog = fixture("substitutes-cycle");
    let (code, stdout, stderr) = run(&["validate", catalog.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    assert_eq!(log_lines(&stderr), WARNINGS);
}

#[tokio::test]
async fn serve_serves_the_catalog_and_warns() {
    let catalog = fixture("substitutes-cycle");
    let server = Server::serving(&catalog, &[]).await;
    let mut c = server.client().await;
    let bundles = collect(
        c.list_bundles(ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner(),
    )
    .await;
    let mut names: Vec<String> = bundles.into_iter().map(|b| b.csv_name).collect();
    names.sort();
    assert_eq!(names, ["pair.v1.0.0", "pair.v1.0.1", "self.v1.0.0"]);
    let log = server.log();
    let warnings: Vec<&str> = log_lines(&log)
        .into_iter()
        .filter(|l| l.starts_with("WARN"))
        .collect();
    assert_eq!(warnings, WARNINGS, "{log}");
}

/// A substitutes template listing the catalog as it is renders it unchanged, with the same
/// warnings.
#[test]
fn render_template_renders_the_cycles_and_warns() {
    let catalog = fixture("substitutes-cycle");
    let (code, rendered, stderr) = run(&["render", catalog.to_str().unwrap()]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let dir = tempfile::tempdir().unwrap();
    let fbc = dir.path().join("catalog.json");
    crate::common::write(&fbc, &rendered);
    let (code, template, stderr) = run(&["convert-template", "substitutes", fbc.to_str().unwrap()]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let file = dir.path().join("template.json");
    crate::common::write(&file, &template);
    let (code, stdout, stderr) = run(&["render-template", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(log_lines(&stderr), WARNINGS);
    assert_eq!(stdout, rendered);
}
