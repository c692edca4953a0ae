//! Hostile catalog directories ("Never stop serving", items 2, 5, 6 and 10): `validate`,
//! `render` and `serve` (the real binary) give the same clear refusal for each, exit 1, and
//! never crash, hang or read outside the catalog.

use crate::common::{BIN, Server, files_below, package_names, write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Longer than any of these commands takes; reaching it means the command hangs.
const BOUND: Duration = Duration::from_secs(300);

const PACKAGE: &str = r#"{"schema":"olm.package","name":"p","defaultChannel":"s"}"#;
const CHANNEL: &str =
    r#"{"schema":"olm.channel","package":"p","name":"s","entries":[{"name":"p.v1"}]}"#;
const BUNDLE: &str = r#"{"schema":"olm.bundle","package":"p","name":"p.v1","image":"q/p:1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}"#;

fn valid_catalog() -> String {
    [PACKAGE, CHANNEL, BUNDLE].join("\n") + "\n"
}

/// How a command ended: exit code (None if killed by a signal), stdout, stderr.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the binary, failing the test if it has not exited within [`BOUND`].
fn run_bounded(args: &[&std::ffi::OsStr]) -> Ran {
    let child = Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start olm-registry");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(BOUND) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            // SAFETY: kill(2) on the pid of our own child, which has not been reaped.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("olm-registry {args:?} did not exit within {BOUND:?}");
        }
    };
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

/// `validate`, `render` and `serve` of `dir` all exit 1 with `report` (the load error report)
/// as their whole error output; `serve` also writes it to its termination log.
fn assert_refused_everywhere(dir: &Path, report: &str) {
    let d = dir.as_os_str();
    let v = run_bounded(&[os("validate"), d]);
    assert_eq!(
        (v.code, v.stdout.as_str(), v.stderr.as_str()),
        (Some(1), "", format!("{report}\n").as_str()),
        "validate"
    );
    let r = run_bounded(&[os("render"), d]);
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (Some(1), "", format!("error: {report}\n").as_str()),
        "render"
    );
    let logs = tempfile::tempdir().unwrap();
    let termination = logs.path().join("termination-log");
    let s = run_bounded(&[
        os("serve"),
        d,
        os("-p"),
        os("127.0.0.1:0"),
        os("-t"),
        termination.as_os_str(),
    ]);
    assert_eq!(s.code, Some(1), "serve: {}", s.stderr);
    assert_eq!(
        std::fs::read_to_string(&termination).unwrap(),
        format!("{report}\n"),
        "serve"
    );
    assert!(s.stderr.contains(report), "serve stderr: {}", s.stderr);
}

fn one_error(line: &str) -> String {
    format!("the catalog has 1 unreadable document(s):\n  {line}")
}

fn symlink(target: impl AsRef<Path>, at: &Path) {
    std::os::unix::fs::symlink(target, at).unwrap();
}

#[test]
fn links_that_leave_the_catalog_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.json");
    write(&secret, PACKAGE);
    for target in [secret.clone(), PathBuf::from("/dev/zero")] {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("catalog.json"), &valid_catalog());
        std::fs::create_dir(dir.path().join("p")).unwrap();
        symlink(&target, &dir.path().join("p/x.json"));
        assert_refused_everywhere(
            dir.path(),
            &one_error(&format!(
                "p/x.json: symbolic link to {:?} leads outside the catalog directory; only links to files inside it are followed",
                target.display().to_string()
            )),
        );
    }
}

#[tokio::test]
async fn a_configmap_volume_loads_and_serves() {
    // The layout kubelet writes: the visible name is a link through `..data`, itself a link
    // to the timestamped directory holding the data.
    let dir = tempfile::tempdir().unwrap();
    let data = "..2026_11_26_01_02_03.4242";
    write(
        &dir.path().join(data).join("catalog.json"),
        &valid_catalog(),
    );
    symlink(data, &dir.path().join("..data"));
    symlink("..data/catalog.json", &dir.path().join("catalog.json"));

    let v = run_bounded(&[os("validate"), dir.path().as_os_str()]);
    assert_eq!((v.code, v.stderr.as_str()), (Some(0), ""));
    let r = run_bounded(&[os("render"), dir.path().as_os_str()]);
    assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""));
    assert_eq!(r.stdout.matches(r#""schema": "olm.package""#).count(), 1);
    assert_eq!(r.stdout.matches(r#""schema": "olm.bundle""#).count(), 1);

    let server = Server::serving(dir.path(), &[]).await;
    assert_eq!(package_names(&mut server.client().await).await, ["p"]);
}

#[test]
fn special_files_and_directory_loops_are_refused_without_hanging() {
    let fifo = tempfile::tempdir().unwrap();
    write(&fifo.path().join("catalog.json"), &valid_catalog());
    let path = std::ffi::CString::new(fifo.path().join("p.json").as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo(3) with a valid, NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    assert_refused_everywhere(
        fifo.path(),
        &one_error("p.json: a named pipe: only regular files can be catalog files"),
    );

    let looped = tempfile::tempdir().unwrap();
    write(&looped.path().join("d/catalog.json"), &valid_catalog());
    symlink("..", &looped.path().join("d/up"));
    assert_refused_everywhere(
        looped.path(),
        &one_error(r#"d/up: symbolic link loop: it leads back to ".", which contains it"#),
    );
}

/// A catalog whose only file `name` holds `text`.
fn catalog_with(name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join(name), text);
    dir
}

#[test]
fn deep_nesting_is_refused_cleanly() {
    for levels in [8_000, 100_000] {
        let flow = "[".repeat(levels) + &"]".repeat(levels);
        let dir = catalog_with("c.yaml", &format!("schema: x\nv: {flow}\n"));
        assert_refused_everywhere(
            dir.path(),
            &one_error("c.yaml:2: invalid YAML: nesting deeper than 100 levels"),
        );

        let dir = catalog_with("c.json", &format!("{{\"schema\":\"x\",\"v\":{flow}}}\n"));
        assert_refused_everywhere(
            dir.path(),
            &one_error(
                "c.json:1: invalid JSON: nesting deeper than 100 levels at line 1 column 118",
            ),
        );

        // One level per line (libyaml alone would take minutes over this).
        let lines = "[\n".repeat(levels - 1) + &"]".repeat(levels - 1);
        let dir = catalog_with("c.yaml", &format!("schema: x\nv: [\n{lines}]\n"));
        assert_refused_everywhere(
            dir.path(),
            &one_error("c.yaml:101: invalid YAML: nesting deeper than 100 levels"),
        );

        // Compact block sequences: `- - - x`.
        let block = format!("schema: x\nv:\n{}x\n", "- ".repeat(levels));
        let dir = catalog_with("c.yaml", &block);
        assert_refused_everywhere(
            dir.path(),
            &one_error("c.yaml:3: invalid YAML: nesting deeper than 100 levels"),
        );
    }
    // Indented block mappings (100,000 levels of them would take 5 GB).
    let block: String = (0..8_000)
        .map(|i| format!("{}k:\n", " ".repeat(i)))
        .collect();
    let dir = catalog_with("c.yaml", &format!("schema: x\n{block}"));
    assert_refused_everywhere(
        dir.path(),
        &one_error("c.yaml:102: invalid YAML: nesting deeper than 100 levels"),
    );
}

/// Nine levels of ten aliases each: a billion `lol`s from a few hundred bytes.
fn billion_laughs(head: &str) -> String {
    let mut doc = format!("{head}a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        doc.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    doc
}

#[test]
fn an_alias_bomb_gets_one_verdict() {
    let dir = catalog_with("c.yaml", &billion_laughs("schema: olm.package\nname: p\n"));
    assert_refused_everywhere(
        dir.path(),
        &one_error("c.yaml:1: invalid YAML: repetition limit exceeded"),
    );

    // The same bomb as a bundle's manifest: serve decodes manifests, so validate and render
    // must too.
    use base64::Engine;
    let manifest =
        base64::engine::general_purpose::STANDARD.encode(billion_laughs("kind: ConfigMap\n"));
    let bundle = BUNDLE.replace(
        "]}",
        &format!(r#",{{"type":"olm.bundle.object","value":{{"data":"{manifest}"}}}}]}}"#),
    );
    let dir = catalog_with("c.json", &[PACKAGE, CHANNEL, &bundle].join("\n"));
    assert_refused_everywhere(
        dir.path(),
        &one_error(
            r#"c.json:3: package "p" bundle "p.v1": property "olm.bundle.object": manifest is neither JSON nor YAML: repetition limit exceeded"#,
        ),
    );
}

#[tokio::test]
async fn a_file_name_that_is_not_utf8_loads_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"cat\xffalog.json");
    std::fs::write(dir.path().join(name), valid_catalog()).unwrap();
    let v = run_bounded(&[os("validate"), dir.path().as_os_str()]);
    assert_eq!((v.code, v.stderr.as_str()), (Some(0), ""));
    let r = run_bounded(&[os("render"), dir.path().as_os_str()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.matches(r#""schema": "olm.bundle""#).count(), 1);
    let server = Server::serving(dir.path(), &[]).await;
    assert_eq!(package_names(&mut server.client().await).await, ["p"]);

    // Its errors name it, with U+FFFD for the byte that is not UTF-8.
    std::fs::write(dir.path().join(name), "{\"name\":\"x\"}").unwrap();
    assert_refused_everywhere(
        dir.path(),
        &one_error(
            "cat\u{fffd}alog.json:1: object '{\"name\":\"x\"}' is missing root schema field",
        ),
    );
}

#[test]
fn files_over_the_size_cap_are_refused_unread() {
    // A sparse 1 GiB file: refused by its size, without reading (or allocating) a gigabyte.
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("catalog.json"), &valid_catalog());
    std::fs::File::create(dir.path().join("huge.json"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    assert_refused_everywhere(
        dir.path(),
        &one_error(
            "huge.json: larger than 268435456 bytes, the most a catalog file may hold (see --max-file-size)",
        ),
    );

    // The flag moves the cap for every command.
    let dir = catalog_with("catalog.json", &valid_catalog());
    let d = dir.path().as_os_str();
    let report = one_error(
        "catalog.json: larger than 100 bytes, the most a catalog file may hold (see --max-file-size)",
    );
    let v = run_bounded(&[os("validate"), d, os("--max-file-size"), os("100")]);
    assert_eq!((v.code, v.stderr), (Some(1), format!("{report}\n")));
    let r = run_bounded(&[os("render"), d, os("--max-file-size"), os("100")]);
    assert_eq!((r.code, r.stderr), (Some(1), format!("error: {report}\n")));
    let s = run_bounded(&[
        os("serve"),
        d,
        os("-p"),
        os("127.0.0.1:0"),
        os("--max-file-size"),
        os("100"),
    ]);
    assert_eq!(s.code, Some(1));
    assert!(s.stderr.contains(&report), "{}", s.stderr);
    let v = run_bounded(&[os("validate"), d, os("--max-file-size"), os("1K")]);
    assert_eq!((v.code, v.stderr.as_str()), (Some(0), ""));
}

/// A 2 MiB tmpfs, unmounted when dropped.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    /// Needs root; `None` (with a loud note) elsewhere.
    fn mount() -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("\n!!! SKIPPED: mounting a small tmpfs needs root !!!\n");
            return None;
        }
        Some(SmallDisk(dir))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_ends_the_ingest_with_one_error_and_keeps_the_cached_index() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let cache = disk.0.path();
    let dir = catalog_with("catalog.json", &valid_catalog());
    let d = dir.path().as_os_str();
    let cache_only = |d| {
        run_bounded(&[
            os("serve"),
            d,
            os("--cache-only"),
            os("--cache-dir"),
            cache.as_os_str(),
        ])
    };
    assert_eq!(cache_only(d).code, Some(0));
    let index = cache.join("olm-registry.v1/index.db");
    let good = std::fs::read(&index).unwrap();

    // Three times more manifest bytes than the disk holds.
    crate::common::generated_catalog(dir.path(), 300, 20_000);

    let s = cache_only(d);
    assert_eq!(s.code, Some(1), "{}", s.stderr);
    let expected = format!(
        "writing the index: {}: disk full (database or disk is full)",
        cache.join("olm-registry.v1").display()
    );
    assert_eq!(
        s.stderr.matches("ERROR").count(),
        1,
        "one error, not one per document:\n{}",
        s.stderr
    );
    assert!(s.stderr.contains(&expected), "{}", s.stderr);
    assert_eq!(
        std::fs::read(&index).unwrap(),
        good,
        "the good index is untouched"
    );
    assert_eq!(files_below(cache), ["olm-registry.v1/index.db"]);
}

#[tokio::test]
async fn deeply_nested_directories_load_everywhere() {
    // 2,000 levels: as deep as a path can go, and far deeper than a thread's stack would
    // allow a recursive walk on the server's loading thread.
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("a/".repeat(2_000));
    write(&deep.join("catalog.json"), &valid_catalog());
    let v = run_bounded(&[os("validate"), dir.path().as_os_str()]);
    assert_eq!((v.code, v.stderr.as_str()), (Some(0), ""));
    let r = run_bounded(&[os("render"), dir.path().as_os_str()]);
    assert_eq!((r.code, r.stderr.as_str()), (Some(0), ""));
    assert_eq!(r.stdout.matches(r#""schema": "olm.bundle""#).count(), 1);
    let server = Server::serving(dir.path(), &[]).await;
    assert_eq!(package_names(&mut server.client().await).await, ["p"]);
}

/// Bundle directories (and bundle images, unpacked into one) obey the same cap on each file.
#[test]
fn bundle_files_over_the_size_cap_are_refused() {
    let bundle = tempfile::tempdir().unwrap();
    write(
        &bundle.path().join("metadata/annotations.yaml"),
        "annotations:\n  operators.operatorframework.io.bundle.package.v1: small\n  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n",
    );
    let csv = bundle
        .path()
        .join("manifests/small.clusterserviceversion.yaml");
    write(
        &csv,
        &format!(
            "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: small.v1.0.0\nspec:\n  version: 1.0.0\n  description: {}\n",
            "x".repeat(4096)
        ),
    );
    let d = bundle.path().as_os_str();
    let r = run_bounded(&[os("render"), d, os("--max-file-size"), os("1K")]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "{}: larger than 1024 bytes, the most a catalog file may hold (see --max-file-size)",
            csv.display()
        )),
        "{}",
        r.stderr
    );
    let r = run_bounded(&[os("render"), d]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}
