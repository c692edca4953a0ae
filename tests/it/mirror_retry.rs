//! `mirror` against a source registry behind a proxy that answers the first requests (the
//! `GET /v2/` version check aside) with an error itself: 503s and 429s are retried (a 429
//! after the wait its Retry-After asks for) up to `--retry-times`, each retry logged; a 404
//! is not retried.
use crate::common::proxy::RefusingProxy;
use crate::common::registry::TestRegistry;
use crate::common::run;
use image::{ClientOptions, Registry};
use std::path::Path;

const UNAVAILABLE: &str = "HTTP/1.1 503 Service Unavailable\r\n";

// A tag's digest is looked up with a HEAD and, when that fails, a GET (oci-client's way):
// each attempt at it takes two refusals.

/// A catalog image pushed to `source`, then named through `proxy` by tag or by digest.
struct Setup {
    source: TestRegistry,
    target: TestRegistry,
    digest: String,
    work: tempfile::TempDir,
}

async fn setup() -> Setup {
    let (source, target) = (TestRegistry::plain(), TestRegistry::plain());
    let work = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/catalog");
    let image = source.push_catalog(&example, "olm/catalog:v1", &work.path().join("push"));
    let digest = client(&source.addr, work.path())
        .resolve_digest(&image.parse().unwrap())
        .await
        .unwrap();
    Setup {
        source,
        target,
        digest,
        work,
    }
}

fn client(addr: &str, work: &Path) -> Registry {
    Registry::new(&ClientOptions {
        insecure_registries: vec![addr.to_owned()],
        cache_dir: work.join("client-cache"),
        ..Default::default()
    })
    .unwrap()
}

impl Setup {
    /// `mirror` of `image` (through `proxy`) to the target, with `extra` flags.
    fn mirror(&self, proxy: &RefusingProxy, image: &str, extra: &[&str]) -> (i32, String, String) {
        let work = self.work.path();
        let config = work.join("isc.yaml");
        std::fs::write(
            &config,
            format!(
                "kind: ImageSetConfiguration\napiVersion: mirror.openshift.io/v2alpha1\nmirror:\n  additionalImages:\n  - name: {}/{image}\n",
                proxy.addr
            ),
        )
        .unwrap();
        let to = format!("docker://{}/mirror", self.target.addr);
        let (cache, workspace) = (work.join("cache"), work.join("workspace"));
        let mut args = vec![
            "mirror",
            "-c",
            config.to_str().unwrap(),
            "--to",
            &to,
            "--insecure-registry",
            &proxy.addr,
            "--insecure-registry",
            &self.target.addr,
            "--image-cache-dir",
            cache.to_str().unwrap(),
            "--workspace",
            workspace.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        run(&args)
    }

    /// The digest the target holds for the mirrored image.
    async fn mirrored(&self) -> String {
        let r = format!("{}/mirror/olm/catalog:v1", self.target.addr);
        client(&self.target.addr, self.work.path())
            .resolve_digest(&r.parse().unwrap())
            .await
            .unwrap()
    }
}

/// The retry lines of a run's log.
fn retries(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(", retrying in "))
        .collect()
}

#[tokio::test]
async fn mirror_retries_503s_until_the_registry_answers() {
    let s = setup().await;
    let proxy = RefusingProxy::start(&s.source.addr, UNAVAILABLE, 6);
    let (code, stdout, stderr) = s.mirror(&proxy, "olm/catalog:v1", &["--retry-delay", "10ms"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(proxy.refused(), 6);
    let logged = retries(&stderr);
    assert_eq!(logged.len(), 3, "{stderr}");
    for (n, line) in logged.iter().enumerate() {
        assert!(
            line.contains(&format!(
                "resolve {}/olm/catalog:v1: registry answered 503 (attempt {} of 5, retrying in ",
                proxy.addr,
                n + 1
            )),
            "{line}"
        );
    }
    assert_eq!(s.mirrored().await, s.digest);
}

#[tokio::test]
async fn mirror_waits_as_long_as_a_429_asks() {
    let s = setup().await;
    let proxy = RefusingProxy::start(
        &s.source.addr,
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\n",
        1,
    );
    // By digest: the first request is the manifest GET, whose answer's headers are read.
    let image = format!("olm/catalog@{}", s.digest);
    let (code, stdout, stderr) = s.mirror(&proxy, &image, &["--retry-delay", "10ms"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(proxy.refused(), 1);
    let logged = retries(&stderr);
    assert_eq!(logged.len(), 1, "{stderr}");
    assert!(
        logged[0].contains("registry answered 429 (attempt 1 of 5, retrying in 1000 ms)"),
        "{stderr}"
    );
}

#[tokio::test]
async fn retry_times_0_fails_at_the_first_503() {
    let s = setup().await;
    let proxy = RefusingProxy::start(&s.source.addr, UNAVAILABLE, 2);
    let (code, stdout, stderr) = s.mirror(&proxy, "olm/catalog:v1", &["--retry-times", "0"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert_eq!(proxy.refused(), 2);
    assert_eq!(retries(&stderr), Vec::<&str>::new());
    // The whole log: the error, naming the image, and no retry.
    assert_eq!(
        stderr,
        format!(
            "error: resolve {}/olm/catalog:v1: registry answered 503\n",
            proxy.addr
        )
    );
}

#[tokio::test]
async fn a_404_is_not_retried() {
    let s = setup().await;
    let proxy = RefusingProxy::start(&s.source.addr, "HTTP/1.1 404 Not Found\r\n", 2);
    let (code, stdout, stderr) = s.mirror(&proxy, "olm/catalog:v1", &["--retry-delay", "10ms"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert_eq!(proxy.refused(), 2);
    assert_eq!(
        stderr,
        format!(
            "error: resolve {}/olm/catalog:v1: registry answered 404\n",
            proxy.addr
        )
    );
}

#[test]
fn a_bad_retry_delay_is_refused() {
    let (code, stdout, stderr) = run(&[
        "mirror",
        "-c",
        "x.yaml",
        "--to",
        "file:///x",
        "--retry-delay",
        "soon",
    ]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert!(
        stderr.contains("invalid value 'soon' for '--retry-delay <DURATION>': \"soon\": expected a number and a unit, e.g. 500ms, 2s, 1m"),
        "{stderr}"
    );
}
