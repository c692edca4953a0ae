//! `serve --cache-dir`: warm starts reuse the index; stale, corrupt and foreign caches are
//! rebuilt with a warning; the strict flags fail as opm does.

use crate::common::{Server, run};
use api::GetPackageRequest;
use std::path::{Path, PathBuf};

const INGESTED: &str = "catalog ingested";
const REUSED: &str = "catalog unchanged, serving the cached index";

fn example_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    for pkg in ["cache-operator", "queue-operator"] {
        std::fs::create_dir(dir.path().join(pkg)).unwrap();
        for f in std::fs::read_dir(src.join(pkg)).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.path().join(pkg).join(f.file_name())).unwrap();
        }
    }
    dir
}

fn index_file(cache: &Path) -> PathBuf {
    cache.join("olm-registry.v1/index.db")
}

async fn default_channel(server: &Server, package: &str) -> String {
    let mut c = server.client().await;
    c.get_package(GetPackageRequest {
        name: package.into(),
    })
    .await
    .unwrap()
    .into_inner()
    .default_channel_name
}

/// Starts, answers, stops cleanly, and returns the log.
async fn serve_once(catalog: &Path, cache: &Path) -> String {
    let mut server = Server::serving(catalog, &["--cache-dir", cache.to_str().unwrap()]).await;
    assert_eq!(default_channel(&server, "queue-operator").await, "stable");
    server.signal("TERM");
    assert_eq!(server.wait().await.code(), Some(0));
    server.log()
}

#[tokio::test]
async fn warm_start_reuses_the_index_without_ingesting() {
    let catalog = example_copy();
    let cache = tempfile::tempdir().unwrap();
    let cold = serve_once(catalog.path(), cache.path()).await;
    assert!(cold.contains(INGESTED), "{cold}");
    let built = std::fs::metadata(index_file(cache.path()))
        .unwrap()
        .modified()
        .unwrap();

    let warm = serve_once(catalog.path(), cache.path()).await;
    assert!(warm.contains(REUSED), "{warm}");
    assert!(!warm.contains(INGESTED), "{warm}");
    assert_eq!(
        std::fs::metadata(index_file(cache.path()))
            .unwrap()
            .modified()
            .unwrap(),
        built
    );
}

#[tokio::test]
async fn a_changed_catalog_rebuilds_the_cache() {
    let catalog = example_copy();
    let cache = tempfile::tempdir().unwrap();
    serve_once(catalog.path(), cache.path()).await;

    let file = catalog.path().join("queue-operator/catalog.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace(
            "\"defaultChannel\": \"stable\"",
            "\"defaultChannel\": \"stable\" ",
        ),
    )
    .unwrap();
    let log = serve_once(catalog.path(), cache.path()).await;
    assert!(log.contains("cache requires rebuild"), "{log}");
    assert!(log.contains(INGESTED), "{log}");
}

#[tokio::test]
async fn a_corrupt_or_truncated_cache_is_rebuilt() {
    let catalog = example_copy();
    let cache = tempfile::tempdir().unwrap();
    serve_once(catalog.path(), cache.path()).await;

    std::fs::write(index_file(cache.path()), b"this is not a database").unwrap();
    let log = serve_once(catalog.path(), cache.path()).await;
    assert!(log.contains("unusable cached index"), "{log}");
    assert!(log.contains(INGESTED), "{log}");

    let bytes = std::fs::read(index_file(cache.path())).unwrap();
    std::fs::write(index_file(cache.path()), &bytes[..bytes.len() / 2]).unwrap();
    let log = serve_once(catalog.path(), cache.path()).await;
    assert!(log.contains("unusable cached index"), "{log}");
    assert!(log.contains(INGESTED), "{log}");
}

#[tokio::test]
async fn the_partial_index_of_a_killed_ingest_is_removed() {
    let catalog = example_copy();
    let cache = tempfile::tempdir().unwrap();
    let partial = cache
        .path()
        .join("olm-registry.v1/.index-killed.db.partial");
    std::fs::create_dir_all(partial.parent().unwrap()).unwrap();
    std::fs::write(&partial, b"half an index").unwrap();
    let log = serve_once(catalog.path(), cache.path()).await;
    assert!(
        log.contains("removed the partial index of an interrupted ingest"),
        "{log}"
    );
    assert!(!partial.exists());
    assert!(index_file(cache.path()).exists());
}

#[tokio::test]
async fn an_opm_cache_is_left_alone_and_ours_is_built_beside_it() {
    let catalog = example_copy();
    let cache = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(cache.path().join("pogreb.v1/db")).unwrap();
    std::fs::write(cache.path().join("pogreb.v1/digest"), "0123456789abcdef").unwrap();
    let log = serve_once(catalog.path(), cache.path()).await;
    assert!(
        log.contains("cache directory holds another format (pogreb.v1)"),
        "{log}"
    );
    assert!(cache.path().join("pogreb.v1/digest").exists());
    assert!(index_file(cache.path()).exists());
}

#[test]
fn enforced_integrity_fails_on_a_missing_or_stale_cache() {
    let catalog = example_copy();
    let cache = tempfile::tempdir().unwrap();
    let termination = cache.path().join("termination-log");
    let args = |extra: &[&str]| {
        let mut v = vec![
            "serve".to_string(),
            catalog.path().display().to_string(),
            "-p".into(),
            "127.0.0.1:0".into(),
            "-t".into(),
            termination.display().to_string(),
            "--cache-dir".into(),
            cache.path().display().to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let call = |extra: &[&str]| {
        let owned = args(extra);
        run(&owned.iter().map(String::as_str).collect::<Vec<_>>())
    };

    let (code, _, stderr) = call(&["--cache-enforce-integrity"]);
    assert_eq!(code, 1, "{stderr}");
    let written = std::fs::read_to_string(&termination).unwrap();
    assert!(
        written.starts_with("integrity check failed: cache requires rebuild: "),
        "{written}"
    );

    // --cache-only builds the cache and exits without serving.
    let (code, _, stderr) = call(&["--cache-only"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
    assert!(index_file(cache.path()).exists());
    // Now the strict start succeeds as far as the cache goes: it binds and serves. Checked by
    // --cache-only again, which with integrity enforced only verifies.
    let (code, _, stderr) = call(&["--cache-only", "--cache-enforce-integrity"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("cache is up to date"), "{stderr}");

    let file = catalog.path().join("cache-operator/catalog.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}\n# edited\n")).unwrap();
    let (code, _, stderr) = call(&["--cache-only", "--cache-enforce-integrity=true"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("integrity check failed: cache requires rebuild: cache reports digest as"),
        "{stderr}"
    );
}

#[test]
fn enforce_integrity_needs_a_cache_dir() {
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let dir = tempfile::tempdir().unwrap();
    let termination = dir.path().join("t");
    let (code, _, stderr) = run(&[
        "serve",
        catalog.to_str().unwrap(),
        "-t",
        termination.to_str().unwrap(),
        "--cache-enforce-integrity",
    ]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("--cache-dir must be specified with --cache-enforce-integrity"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(termination).unwrap(),
        "--cache-dir must be specified with --cache-enforce-integrity\n"
    );
}

/// The packages of every bundle ListBundles streams, once each.
async fn listed_packages(
    mut client: api::registry_client::RegistryClient<tonic::transport::Channel>,
) -> Vec<String> {
    let stream = client
        .list_bundles(api::ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut names: Vec<String> = crate::common::collect(stream)
        .await
        .into_iter()
        .map(|b| b.package_name)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Two servers on one cache directory with different catalogs: the second rebuilds the index
/// over the first's file, and each goes on answering from the catalog it loaded, however many
/// of its connections are busy.
#[tokio::test]
async fn two_servers_sharing_a_cache_dir_each_serve_their_own_catalog() {
    let first = tempfile::tempdir().unwrap();
    crate::common::generated_catalog(first.path(), 300, 20_000);
    let second = example_copy();
    let cache = tempfile::tempdir().unwrap();
    let flags = ["--cache-dir", cache.path().to_str().unwrap()];
    let a = Server::serving(first.path(), &flags).await;
    let b = Server::serving(second.path(), &flags).await;
    b.wait_for_log("cache requires rebuild").await;

    // Streams of megabytes each, all at once: every connection of a's pool gets used.
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..16 {
        calls.spawn(listed_packages(a.client().await));
    }
    for names in calls.join_all().await {
        assert_eq!(names, ["big"]);
    }
    assert_eq!(
        listed_packages(b.client().await).await,
        ["cache-operator", "queue-operator"]
    );
}

/// A partial index that another process holds locked is an ingest in progress beside us, not
/// the leftover of a killed one: it is left alone.
#[test]
fn a_partial_index_another_ingest_is_writing_is_left_alone() {
    let catalog = example_copy();
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("olm-registry.v1");
    std::fs::create_dir_all(&dir).unwrap();
    let (busy, stale) = (
        dir.join(".index-busy.db.partial"),
        dir.join(".index-stale.db.partial"),
    );
    std::fs::write(&busy, b"being written").unwrap();
    std::fs::write(&stale, b"abandoned").unwrap();
    let held = std::fs::File::open(&busy).unwrap();
    held.try_lock().unwrap();
    let (code, _, stderr) = run(&[
        "serve",
        catalog.path().to_str().unwrap(),
        "-t",
        "/dev/null",
        "--cache-dir",
        cache.path().to_str().unwrap(),
        "--cache-only",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(busy.exists() && !stale.exists(), "{stderr}");
    assert!(
        stderr.contains("another ingest is writing this partial index; leaving it"),
        "{stderr}"
    );
    assert!(
        stderr.contains("removed the partial index of an interrupted ingest"),
        "{stderr}"
    );
    assert!(index_file(cache.path()).exists());
}

/// The binary, run with `dir` read-only: as root (who may write anywhere) in a mount
/// namespace of its own where `dir` is a read-only bind mount — a read-only filesystem, as a
/// pod's root filesystem is; otherwise with its write bits taken off. Returns the command
/// and the error writing there gives.
fn with_read_only(dir: &Path) -> (std::process::Command, &'static str) {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut command = std::process::Command::new("unshare");
        command
            .args([
                "-m",
                "sh",
                "-c",
                r#"mount --bind -o ro "$0" "$0" && exec "$@""#,
            ])
            .arg(dir)
            .arg(crate::common::BIN);
        (command, "Read-only file system (os error 30)")
    } else {
        use std::os::unix::fs::PermissionsExt;
        for d in [dir.to_path_buf(), dir.join("olm-registry.v1")] {
            if d.exists() {
                std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o555)).unwrap();
            }
        }
        (
            std::process::Command::new(crate::common::BIN),
            "Permission denied (os error 13)",
        )
    }
}

/// A read-only root filesystem with an outdated cache in it: the server serves from a private
/// index instead of crash-looping, and leaves the cache as it was.
#[tokio::test]
async fn a_stale_cache_on_a_read_only_directory_is_served_from_a_private_index() {
    let catalog = example_copy();
    let cache = tempfile::tempdir().unwrap();
    serve_once(catalog.path(), cache.path()).await;
    let built = std::fs::read(index_file(cache.path())).unwrap();
    let file = catalog.path().join("cache-operator/catalog.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}\n# edited\n")).unwrap();

    let (command, _) = with_read_only(cache.path());
    let server = Server::start_with(
        command,
        catalog.path(),
        &["--cache-dir", cache.path().to_str().unwrap()],
    );
    server
        .wait_for_status(tonic_health::pb::health_check_response::ServingStatus::Serving)
        .await;
    assert_eq!(default_channel(&server, "queue-operator").await, "stable");
    let log = server.log();
    assert!(
        log.contains("cache directory is not writable") && log.contains("using a private one"),
        "{log}"
    );
    assert_eq!(std::fs::read(index_file(cache.path())).unwrap(), built);
}

/// `--cache-only` exists to fill the cache: when it cannot be written, that is a failure.
#[test]
fn cache_only_on_a_read_only_directory_fails() {
    let catalog = example_copy();
    let cache = tempfile::tempdir().unwrap();
    let (mut command, why) = with_read_only(cache.path());
    let out = command
        .args(["serve", catalog.path().to_str().unwrap(), "-t", "/dev/null"])
        .args([
            "--cache-dir",
            cache.path().to_str().unwrap(),
            "--cache-only",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let expected = format!(
        "cache directory {} is not writable: {why}",
        cache.path().join("olm-registry.v1").display()
    );
    assert!(stderr.contains(&expected), "{expected}\n{stderr}");
    assert!(!index_file(cache.path()).exists());
}

/// A pod with a read-only root filesystem and nothing writable mounted anywhere (no emptyDir,
/// no tmpfs), whose image holds the index pre-built for its catalog: the server opens that
/// index as it is, read-only, and serves at once — no private copy, no write anywhere.
#[tokio::test]
async fn a_valid_cache_on_a_read_only_filesystem_serves_warm_with_nothing_writable() {
    use std::os::unix::fs::PermissionsExt;
    let top = tempfile::tempdir().unwrap();
    let (catalog, cache, tmp) = (
        top.path().join("configs"),
        top.path().join("cache"),
        top.path().join("tmp"),
    );
    let example = example_copy();
    std::fs::rename(example.path(), &catalog).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    serve_once(&catalog, &cache).await;
    let built = std::fs::read(index_file(&cache)).unwrap();
    // Not root: write bits off everywhere (root is held by the read-only mount instead).
    for d in [&catalog, &cache, &cache.join("olm-registry.v1"), &tmp] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o555)).unwrap();
    }

    let (mut command, _) = with_read_only(top.path());
    command.env("TMPDIR", &tmp);
    let server = Server::start_with(command, &catalog, &["--cache-dir", cache.to_str().unwrap()]);
    server
        .wait_for_status(tonic_health::pb::health_check_response::ServingStatus::Serving)
        .await;
    assert_eq!(default_channel(&server, "queue-operator").await, "stable");
    let log = server.log();
    assert!(
        log.contains(REUSED) && log.contains(r#"start="warm""#),
        "{log}"
    );
    assert!(!log.contains(INGESTED) && !log.contains("private"), "{log}");
    assert_eq!(std::fs::read(index_file(&cache)).unwrap(), built);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    drop(server);
    for d in [&catalog, &cache, &cache.join("olm-registry.v1"), &tmp] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
