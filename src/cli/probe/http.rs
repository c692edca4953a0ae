//! The `-http` check: a GET of the URL, as a Kubernetes `httpGet` probe makes it (see the
//! module documentation above for the exit codes).
use super::Failure;
use super::flags::Probe;
use reqwest::{Client, ClientBuilder, Response, Url};

/// The status of a 2xx answer, or the failure with its exit code.
pub(super) async fn check(probe: &Probe, url: &str) -> Result<String, Failure> {
    let (client, url) = client(probe, url).await?;
    let response = send(probe, &client, &url).await?;
    let status = response.status();
    if status.is_success() {
        // The body is not read: the URL may name a large download.
        return Ok(status.to_string());
    }
    let body = tokio::time::timeout(probe.rpc_timeout, body_start(response))
        .await
        .unwrap_or_default();
    Err(Failure {
        code: 4,
        message: format!("unhealthy: {url} answered {status}: {}", body.trim_end()),
    })
}

async fn send(probe: &Probe, client: &Client, url: &Url) -> Result<Response, Failure> {
    let mut request = client.get(url.clone());
    for (name, value) in &probe.headers {
        request = request.header(name, value);
    }
    // The client's own connect timeout ends a connection attempt; this one ends the wait for
    // the answer after it.
    let sent = tokio::time::timeout(probe.connect_timeout + probe.rpc_timeout, request.send());
    match sent.await {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) if e.is_connect() => Err(Failure::error(
            2,
            format_args!("failed to connect to {url}: {}", chain(&e)),
        )),
        Ok(Err(e)) => Err(Failure::error(
            3,
            format_args!("request to {url} failed: {}", chain(&e)),
        )),
        Err(_) => Err(Failure {
            code: 3,
            message: format!(
                "timeout: no response from {url} within {:?}",
                probe.rpc_timeout
            ),
        }),
    }
}

/// A client for the URL `raw` as `probe` asks, and the URL to request (its host replaced by
/// `-tls-server-name`, which is then resolved to the original host's addresses).
async fn client(probe: &Probe, raw: &str) -> Result<(Client, Url), Failure> {
    let invalid =
        |e: &dyn std::fmt::Display| Failure::error(1, format_args!("invalid -http {raw:?}: {e}"));
    let mut url = Url::parse(raw).map_err(|e| invalid(&e))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid(&"not an http:// or https:// URL"));
    }
    // reqwest is built without a crypto provider of its own; the process's is ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let user_agent = probe
        .user_agent
        .clone()
        .unwrap_or_else(|| format!("olm-registry-health-probe/{}", env!("CARGO_PKG_VERSION")));
    let mut builder = Client::builder()
        .http1_only()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(probe.connect_timeout)
        .user_agent(user_agent);
    builder = trust(builder, probe)?;
    if let Some(name) = &probe.tls_server_name {
        builder = send_server_name(builder, &mut url, name, probe).await?;
    }
    let client = builder
        .build()
        .map_err(|e| Failure::error(1, format_args!("setting up the HTTP client: {e}")))?;
    Ok((client, url))
}

/// The servers `builder` trusts: only `-tls-ca-cert`'s when given, any with `-tls-no-verify`.
fn trust(mut builder: ClientBuilder, probe: &Probe) -> Result<ClientBuilder, Failure> {
    if let Some(file) = &probe.tls_ca_cert {
        let pem = std::fs::read(file).map_err(|e| {
            let text = format!("cannot read -tls-ca-cert {}: {e}", file.display());
            Failure::error(1, text)
        })?;
        let roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
            let text = format!("-tls-ca-cert {}: not PEM certificates: {e}", file.display());
            Failure::error(1, text)
        })?;
        builder = builder.tls_certs_only(roots);
    }
    if probe.tls_no_verify {
        builder = builder.danger_accept_invalid_certs(true);
    }
    Ok(builder)
}

/// Makes `url` name `name` (sent as SNI and Host) while connecting to the addresses of its
/// original host.
async fn send_server_name(
    builder: ClientBuilder,
    url: &mut Url,
    name: &str,
    probe: &Probe,
) -> Result<ClientBuilder, Failure> {
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let lookup = tokio::net::lookup_host((host.as_str(), port));
    let addrs: Vec<_> = tokio::time::timeout(probe.connect_timeout, lookup)
        .await
        .map_err(|_| {
            let text = format!("cannot resolve {host} within {:?}", probe.connect_timeout);
            Failure::error(2, text)
        })?
        .map_err(|e| Failure::error(2, format_args!("cannot resolve {host}: {e}")))?
        .collect();
    url.set_host(Some(name))
        .map_err(|e| Failure::error(1, format_args!("invalid -tls-server-name {name:?}: {e}")))?;
    Ok(builder.resolve_to_addrs(name, &addrs))
}

/// The first few hundred bytes of an error response, for the message.
async fn body_start(mut response: Response) -> String {
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
