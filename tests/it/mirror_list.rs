//! `mirror list operators`: what a catalog offers, in the tables oc-mirror's `list operators`
//! prints (opm's `alpha list packages` and `alpha list channels PACKAGE`, and a VERSIONS
//! column for one channel), read from a catalog image in a real registry or an FBC directory.

use crate::common::registry::TestRegistry;
use crate::common::run;
use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog")
}

const PACKAGES: &str = "\
NAME            DISPLAY NAME  DEFAULT CHANNEL
cache-operator                stable
queue-operator                stable
";

const CACHE_CHANNELS: &str = "\
PACKAGE         CHANNEL  HEAD
cache-operator  fast     cache-operator.v2.0.0-rc.1
cache-operator  stable   cache-operator.v1.2.0
";

/// `mirror list operators --catalog REF EXTRA... --image-cache-dir CACHE` against a plain
/// registry.
fn list(reg: &TestRegistry, catalog: &str, cache: &Path, extra: &[&str]) -> (i32, String, String) {
    let cache = cache.to_str().unwrap();
    let mut args = vec!["mirror", "list", "operators", "--catalog", catalog];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--insecure-registry", &reg.addr, "--image-cache-dir", cache]);
    run(&args)
}

#[test]
fn mirror_list_operators_reads_a_catalog_image() {
    let reg = TestRegistry::plain();
    let work = tempfile::tempdir().unwrap();
    let catalog = reg.push_catalog(&example(), "catalogs/example:v1", &work.path().join("push"));
    let cache = work.path().join("cache");
    let ok = |stdout: &str| (0, stdout.to_owned(), String::new());

    assert_eq!(list(&reg, &catalog, &cache, &[]), ok(PACKAGES));
    assert_eq!(
        list(&reg, &catalog, &cache, &["--package", "cache-operator"]),
        ok(CACHE_CHANNELS)
    );
    // Oldest first, whatever order the channel lists its entries in.
    assert_eq!(
        list(
            &reg,
            &catalog,
            &cache,
            &["--package", "cache-operator", "--channel", "stable"]
        ),
        ok("VERSIONS\n1.0.0\n1.1.0\n1.2.0\n")
    );
    assert_eq!(
        list(
            &reg,
            &catalog,
            &cache,
            &["--package", "cache-operator", "--channel", "fast"]
        ),
        ok("VERSIONS\n1.2.0\n2.0.0-rc.1\n")
    );

    // Names the catalog lacks are errors that say which, not an empty table.
    assert_eq!(
        list(&reg, &catalog, &cache, &["--package", "db-operator"]),
        (
            1,
            String::new(),
            format!("error: catalog {catalog}: package \"db-operator\" not found\n")
        )
    );
    assert_eq!(
        list(
            &reg,
            &catalog,
            &cache,
            &["--package", "db-operator", "--channel", "stable"]
        ),
        (
            1,
            String::new(),
            format!("error: catalog {catalog}: package \"db-operator\" not found\n")
        )
    );
    assert_eq!(
        list(
            &reg,
            &catalog,
            &cache,
            &["--package", "cache-operator", "--channel", "beta"]
        ),
        (
            1,
            String::new(),
            format!(
                "error: catalog {catalog}: package \"cache-operator\" has no channel \"beta\" (its channels: fast, stable)\n"
            )
        )
    );
}

#[test]
fn mirror_list_operators_answers_from_the_cache_when_the_registry_is_gone() {
    let mut reg = TestRegistry::plain();
    let work = tempfile::tempdir().unwrap();
    let catalog = reg.push_catalog(&example(), "catalogs/example:v1", &work.path().join("push"));
    let cache = work.path().join("cache");
    assert_eq!(list(&reg, &catalog, &cache, &[]).1, PACKAGES);
    reg.stop();
    // The tag resolves to the digest pulled before, whose content is in the cache.
    let (code, stdout, stderr) = list(&reg, &catalog, &cache, &["--package", "cache-operator"]);
    assert_eq!((code, stdout.as_str()), (0, CACHE_CHANNELS), "{stderr}");
    assert!(
        stderr.contains("using the copy cached when it was last pulled"),
        "{stderr}"
    );
}

#[test]
fn mirror_list_operators_reads_an_fbc_directory() {
    let dir = example();
    let dir = dir.to_str().unwrap();
    let list = |extra: &[&str]| {
        let mut args = vec!["mirror", "list", "operators", "--catalog", dir];
        args.extend_from_slice(extra);
        run(&args)
    };
    assert_eq!(list(&[]), (0, PACKAGES.to_owned(), String::new()));
    assert_eq!(
        list(&["--package", "queue-operator", "--channel", "stable"]),
        (0, "VERSIONS\n0.5.0\n0.6.0\n".to_owned(), String::new())
    );
}
