//! `health-probe -http=URL`, the real binary: against the metrics listener of a real server
//! (`/readyz`, `/healthz`), and over HTTPS against a loopback listener that uses the
//! server's own TLS acceptor with the test CA of `common::pki`.
use crate::common::pki::{Pki, tls_listener};
use crate::common::{Server, fixture, run, silent_registry};
use crate::observability::metrics_addr;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use server::tls::TlsConfig;
use std::net::SocketAddr;

/// Runs `health-probe` with `args` off the runtime: (exit code, stdout, stderr).
async fn probe(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = ["health-probe"]
        .iter()
        .chain(args)
        .map(|a| a.to_string())
        .collect();
    tokio::task::spawn_blocking(move || run(&args.iter().map(String::as_str).collect::<Vec<_>>()))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn http_mode_checks_the_metrics_listener() {
    let server = Server::serving(
        &fixture("resolution/primary"),
        &["--metrics-addr", "127.0.0.1:0"],
    )
    .await;
    let metrics = metrics_addr(&server).await;
    for path in ["/readyz", "/healthz"] {
        assert_eq!(
            probe(&[&format!("-http=http://{metrics}{path}")]).await,
            (0, "status: 200 OK\n".into(), String::new()),
            "{path}"
        );
    }
    let url = format!("http://{metrics}/nope");
    assert_eq!(
        probe(&["-http", &url, "-rpc-timeout=5s"]).await,
        (
            4,
            String::new(),
            format!("unhealthy: {url} answered 404 Not Found: not found\n")
        )
    );

    // Nothing listens on a port just freed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (code, out, err) = probe(&[&format!("-http=http://{closed}/readyz")]).await;
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.starts_with(&format!(
            "error: failed to connect to http://{closed}/readyz: "
        )),
        "{err}"
    );

    for (args, why) in [
        (
            &["-http=ftp://x/"][..],
            "error: invalid -http \"ftp://x/\": not an http:// or https:// URL\n",
        ),
        (
            &["-http=http://x/", "-tls-no-verify"],
            "error: -tls-ca-cert and -tls-no-verify need an https:// URL\n",
        ),
    ] {
        assert_eq!(
            probe(args).await,
            (1, String::new(), why.into()),
            "{args:?}"
        );
    }
}

/// While the catalog is loading (from a registry that accepts and never answers) `/readyz`
/// is 503, and the probe says so with exit code 4.
#[tokio::test(flavor = "multi_thread")]
async fn http_mode_reports_not_ready_while_loading() {
    let image = format!("{}/catalog:latest", silent_registry());
    let server = Server::start(
        std::path::Path::new(&image),
        &["--metrics-addr", "127.0.0.1:0", "--use-http"],
    );
    server.wait_for_log("serving metrics on").await;
    let url = format!("http://{}/readyz", metrics_addr(&server).await);
    assert_eq!(
        probe(&[&format!("-http={url}")]).await,
        (
            4,
            String::new(),
            format!("unhealthy: {url} answered 503 Service Unavailable: not ready\n")
        )
    );
}

/// An HTTPS listener with leaf `one` that answers 200 to everything, with the request's
/// User-Agent and X-Probe header in the body (the probe does not print a 2xx body, so 200s
/// are checked by exit code and a second path answers 418 to show the headers).
async fn https_server() -> SocketAddr {
    let pki = Pki::get();
    let tls = TlsConfig::load(&pki.file("one.crt"), &pki.file("one.key")).unwrap();
    tls_listener(tls, |stream| async move {
        let service = hyper::service::service_fn(|req: Request<Incoming>| {
            let header = |name: &str| {
                req.headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("-")
                    .to_owned()
            };
            let body = format!("{} {}", header("user-agent"), header("x-probe"));
            let status = if req.uri().path() == "/teapot" {
                418
            } else {
                200
            };
            let response = Response::builder().status(status).body(body).unwrap();
            async move { Ok::<_, std::convert::Infallible>(response) }
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(stream), service)
            .await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn http_mode_over_tls_checks_the_server_as_asked() {
    let pki = Pki::get();
    let ca = format!("-tls-ca-cert={}", pki.file("ca.crt").display());
    let addr = https_server().await;
    let url = format!("https://127.0.0.1:{}/readyz", addr.port());
    let ok = (0, "status: 200 OK\n".to_owned(), String::new());

    assert_eq!(probe(&["-http", &url, &ca]).await, ok);
    assert_eq!(probe(&["-http", &url, "-tls-no-verify"]).await, ok);
    assert_eq!(
        probe(&["-http", &url, &ca, "-tls-server-name=localhost"]).await,
        ok
    );

    // Not trusted by the system's roots; not the name in the certificate.
    for extra in [&[][..], &[ca.as_str(), "-tls-server-name=other.example"]] {
        let mut args = vec!["-http", url.as_str()];
        args.extend_from_slice(extra);
        let (code, out, err) = probe(&args).await;
        assert_eq!((code, out.as_str()), (2, ""), "{extra:?}: {err}");
        assert!(err.contains("certificate"), "{extra:?}: {err}");
    }

    let teapot = format!("https://127.0.0.1:{}/teapot", addr.port());
    assert_eq!(
        probe(&[
            "-http",
            &teapot,
            &ca,
            "-user-agent=kubelet/1.31",
            "-rpc-header=X-Probe: readiness"
        ])
        .await,
        (
            4,
            String::new(),
            format!("unhealthy: {teapot} answered 418 I'm a teapot: kubelet/1.31 readiness\n")
        )
    );
}
