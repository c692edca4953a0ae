//! A `grpc_health_probe` stand-in. OLM's catalog pods probe readiness and liveness with
//! `grpc_health_probe -addr=:50051`; an image whose only binary is olm-registry links that
//! name to it, and `main` dispatches here when invoked under that name.
//!
//! Flags and exit codes follow grpc_health_probe: 0 serving, 1 bad arguments, 2 connection
//! failure, 3 RPC failure, 4 not serving.
//!
//! `-http=URL` checks an HTTP endpoint instead, as a Kubernetes `httpGet` probe would, for
//! images that have no curl: a GET (no proxy, no redirects followed, HTTP/1.1), exit 0 on a
//! 2xx status, 4 on any other (printed with the start of the body), 2 when no connection or
//! TLS session could be made, 3 when the response does not come. For `https://` URLs the
//! server is checked against `-tls-ca-cert` (that CA alone) or the system's roots, or not at
//! all with `-tls-no-verify`; `-tls-server-name` sends another name than the URL's host.
use std::path::PathBuf;
use std::time::Duration;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

pub const PROGRAM: &str = "grpc_health_probe";

struct Probe {
    addr: String,
    service: String,
    connect_timeout: Duration,
    rpc_timeout: Duration,
    /// `-http`: the URL of an HTTP check, instead of the gRPC one.
    http: Option<String>,
    user_agent: Option<String>,
    headers: Vec<(String, String)>,
    tls_ca_cert: Option<PathBuf>,
    tls_no_verify: bool,
    tls_server_name: Option<String>,
}

fn parse_duration(s: &str) -> Option<Duration> {
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let n: f64 = s[..split].parse().ok()?;
    let secs = match &s[split..] {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

fn parse(args: &[String]) -> Result<Probe, String> {
    let mut probe = Probe {
        addr: String::new(),
        service: String::new(),
        connect_timeout: Duration::from_secs(1),
        rpc_timeout: Duration::from_secs(1),
        http: None,
        user_agent: None,
        headers: Vec::new(),
        tls_ca_cert: None,
        tls_no_verify: false,
        tls_server_name: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let flag = arg.trim_start_matches('-');
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (flag, None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or(format!("flag -{name} needs a value"))
        };
        match name {
            "addr" => probe.addr = value()?,
            "service" => probe.service = value()?,
            "connect-timeout" => {
                let v = value()?;
                probe.connect_timeout =
                    parse_duration(&v).ok_or(format!("invalid -connect-timeout {v:?}"))?;
            }
            "rpc-timeout" => {
                let v = value()?;
                probe.rpc_timeout =
                    parse_duration(&v).ok_or(format!("invalid -rpc-timeout {v:?}"))?;
            }
            "http" => probe.http = Some(value()?),
            "user-agent" => probe.user_agent = Some(value()?),
            "rpc-header" => {
                let v = value()?;
                let (name, val) = v
                    .split_once(':')
                    .ok_or(format!("-rpc-header {v:?} is not NAME: VALUE"))?;
                probe
                    .headers
                    .push((name.trim().to_owned(), val.trim().to_owned()));
            }
            "tls-ca-cert" => probe.tls_ca_cert = Some(PathBuf::from(value()?)),
            "tls-server-name" => probe.tls_server_name = Some(value()?),
            "tls-no-verify" => probe.tls_no_verify = true,
            "v" | "alts" | "tls" | "spiffe" | "gzip" => {}
            "tls-client-cert" | "tls-client-key" => {
                value()?;
            }
            other => return Err(format!("unknown flag -{other}")),
        }
    }
    if let Some(url) = &probe.http {
        if !probe.addr.is_empty() {
            return Err("-addr and -http cannot be used together".into());
        }
        let https = url.starts_with("https://");
        if !https && (probe.tls_ca_cert.is_some() || probe.tls_no_verify) {
            return Err("-tls-ca-cert and -tls-no-verify need an https:// URL".into());
        }
        if probe.tls_ca_cert.is_some() && probe.tls_no_verify {
            return Err("-tls-ca-cert and -tls-no-verify cannot be used together".into());
        }
        return Ok(probe);
    }
    if probe.addr.is_empty() {
        return Err("-addr (or -http) not specified".into());
    }
    // ":50051" means this host.
    if probe.addr.starts_with(':') {
        probe.addr = format!("127.0.0.1{}", probe.addr);
    }
    Ok(probe)
}

/// Runs the probe with the arguments after the program name; returns the exit code.
pub fn run(args: &[String]) -> i32 {
    let probe = match parse(args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    if let Some(url) = &probe.http {
        return runtime.block_on(http_check(&probe, url));
    }
    runtime.block_on(async {
        let endpoint =
            match tonic::transport::Endpoint::from_shared(format!("http://{}", probe.addr)) {
                Ok(e) => e
                    .connect_timeout(probe.connect_timeout)
                    .timeout(probe.rpc_timeout),
                Err(e) => {
                    eprintln!("error: invalid -addr {:?}: {e}", probe.addr);
                    return 1;
                }
            };
        let channel = match tokio::time::timeout(probe.connect_timeout, endpoint.connect()).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                eprintln!("error: failed to connect service at {:?}: {e}", probe.addr);
                return 2;
            }
            Err(_) => {
                eprintln!(
                    "timeout: failed to connect service {:?} within {:?}",
                    probe.addr, probe.connect_timeout
                );
                return 2;
            }
        };
        let mut client = HealthClient::new(channel);
        match client
            .check(HealthCheckRequest {
                service: probe.service.clone(),
            })
            .await
        {
            Ok(resp) if resp.get_ref().status == ServingStatus::Serving as i32 => {
                println!("status: SERVING");
                0
            }
            Ok(resp) => {
                let status = ServingStatus::try_from(resp.get_ref().status)
                    .map_or("UNKNOWN", |s| s.as_str_name());
                eprintln!("service unhealthy (responded with {status:?})");
                4
            }
            Err(e) => {
                eprintln!("error: health rpc failed: {e}");
                3
            }
        }
    })
}

/// The `-http` check: see the module documentation for the exit codes.
async fn http_check(probe: &Probe, url: &str) -> i32 {
    let (client, url) = match http_client(probe, url).await {
        Ok(c) => c,
        Err((code, e)) => {
            eprintln!("error: {e}");
            return code;
        }
    };
    let mut request = client.get(url.clone());
    for (name, value) in &probe.headers {
        request = request.header(name, value);
    }
    // The client's own connect timeout ends a connection attempt; this one ends the wait for
    // the answer after it.
    let sent = tokio::time::timeout(probe.connect_timeout + probe.rpc_timeout, request.send());
    let response = match sent.await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) if e.is_connect() => {
            eprintln!("error: failed to connect to {url}: {}", chain(&e));
            return 2;
        }
        Ok(Err(e)) => {
            eprintln!("error: request to {url} failed: {}", chain(&e));
            return 3;
        }
        Err(_) => {
            eprintln!(
                "timeout: no response from {url} within {:?}",
                probe.rpc_timeout
            );
            return 3;
        }
    };
    let status = response.status();
    if status.is_success() {
        // The body is not read: the URL may name a large download.
        println!("status: {status}");
        return 0;
    }
    let body = tokio::time::timeout(probe.rpc_timeout, body_start(response))
        .await
        .unwrap_or_default();
    eprintln!("unhealthy: {url} answered {status}: {}", body.trim_end());
    4
}

/// A client for the URL `raw` as `probe` asks, and the URL to request (its host replaced by
/// `-tls-server-name`, which is then resolved to the original host's addresses). Errors come
/// with their exit code.
async fn http_client(
    probe: &Probe,
    raw: &str,
) -> Result<(reqwest::Client, reqwest::Url), (i32, String)> {
    let mut url =
        reqwest::Url::parse(raw).map_err(|e| (1, format!("invalid -http {raw:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err((
            1,
            format!("invalid -http {raw:?}: not an http:// or https:// URL"),
        ));
    }
    // reqwest is built without a crypto provider of its own; the process's is ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder =
        reqwest::Client::builder()
            .http1_only()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(probe.connect_timeout)
            .user_agent(probe.user_agent.clone().unwrap_or_else(|| {
                format!("olm-registry-health-probe/{}", env!("CARGO_PKG_VERSION"))
            }));
    if let Some(file) = &probe.tls_ca_cert {
        let pem = std::fs::read(file).map_err(|e| {
            (
                1,
                format!("cannot read -tls-ca-cert {}: {e}", file.display()),
            )
        })?;
        let roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
            (
                1,
                format!("-tls-ca-cert {}: not PEM certificates: {e}", file.display()),
            )
        })?;
        builder = builder.tls_certs_only(roots);
    }
    if probe.tls_no_verify {
        builder = builder.danger_accept_invalid_certs(true);
    }
    if let Some(name) = &probe.tls_server_name {
        let host = url
            .host_str()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_owned();
        let port = url.port_or_known_default().unwrap_or(443);
        let addrs: Vec<_> = tokio::time::timeout(
            probe.connect_timeout,
            tokio::net::lookup_host((host.as_str(), port)),
        )
        .await
        .map_err(|_| {
            (
                2,
                format!("cannot resolve {host} within {:?}", probe.connect_timeout),
            )
        })?
        .map_err(|e| (2, format!("cannot resolve {host}: {e}")))?
        .collect();
        url.set_host(Some(name))
            .map_err(|e| (1, format!("invalid -tls-server-name {name:?}: {e}")))?;
        builder = builder.resolve_to_addrs(name, &addrs);
    }
    let client = builder
        .build()
        .map_err(|e| (1, format!("setting up the HTTP client: {e}")))?;
    Ok((client, url))
}

/// The first few hundred bytes of an error response, for the message.
async fn body_start(mut response: reqwest::Response) -> String {
    const SHOWN: usize = 256;
    let mut body = Vec::new();
    while body.len() < SHOWN {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(SHOWN);
    String::from_utf8_lossy(&body).into_owned()
}

/// An error with its causes, which reqwest keeps apart ("error sending request" alone says
/// nothing).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_grpc_health_probe_flags() {
        let p = parse(&args(&[
            "-addr=:50051",
            "-connect-timeout",
            "2s",
            "-rpc-timeout=500ms",
            "-service",
            "Registry",
        ]))
        .unwrap();
        assert_eq!(p.addr, "127.0.0.1:50051");
        assert_eq!(p.service, "Registry");
        assert_eq!(p.connect_timeout, Duration::from_secs(2));
        assert_eq!(p.rpc_timeout, Duration::from_millis(500));
        assert_eq!(
            parse(&args(&[])).err().unwrap(),
            "-addr (or -http) not specified"
        );
        assert_eq!(
            parse(&args(&["-addr=:1", "-bogus"])).err().unwrap(),
            "unknown flag -bogus"
        );
    }

    #[test]
    fn parses_the_http_mode_and_refuses_flags_that_cannot_apply() {
        let p = parse(&args(&[
            "-http=https://127.0.0.1:8443/readyz",
            "-tls-ca-cert",
            "/ca.crt",
            "-tls-server-name=localhost",
            "-rpc-header",
            "X-Probe: yes",
            "-user-agent=kubelet",
        ]))
        .unwrap();
        assert_eq!(p.http.as_deref(), Some("https://127.0.0.1:8443/readyz"));
        assert_eq!(p.tls_ca_cert, Some(PathBuf::from("/ca.crt")));
        assert_eq!(p.tls_server_name.as_deref(), Some("localhost"));
        assert_eq!(p.headers, [("X-Probe".to_owned(), "yes".to_owned())]);
        assert_eq!(p.user_agent.as_deref(), Some("kubelet"));
        for (bad, why) in [
            (
                &["-http=http://a/", "-addr=:1"][..],
                "-addr and -http cannot be used together",
            ),
            (
                &["-http=http://a/", "-tls-no-verify"],
                "-tls-ca-cert and -tls-no-verify need an https:// URL",
            ),
            (
                &["-http=https://a/", "-tls-no-verify", "-tls-ca-cert=/c"],
                "-tls-ca-cert and -tls-no-verify cannot be used together",
            ),
            (
                &["-http=http://a/", "-rpc-header=nocolon"],
                "-rpc-header \"nocolon\" is not NAME: VALUE",
            ),
        ] {
            assert_eq!(parse(&args(bad)).err().unwrap(), why, "{bad:?}");
        }
    }
}
