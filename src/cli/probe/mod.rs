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
mod flags;
mod grpc;
mod http;

pub const PROGRAM: &str = "grpc_health_probe";

/// How a probe ended badly: its exit code and the line it prints to stderr.
struct Failure {
    code: i32,
    message: String,
}

impl Failure {
    /// An `error: ` line.
    fn error(code: i32, text: impl std::fmt::Display) -> Failure {
        let message = format!("error: {text}");
        Failure { code, message }
    }
}

/// Runs the probe with the arguments after the program name; returns the exit code.
pub fn run(args: &[String]) -> i32 {
    match probe(args) {
        Ok(status) => {
            println!("status: {status}");
            0
        }
        Err(Failure { code, message }) => {
            eprintln!("{message}");
            code
        }
    }
}

/// The status a healthy server answered.
fn probe(args: &[String]) -> Result<String, Failure> {
    let probe = flags::parse(args).map_err(|e| Failure::error(1, e))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::error(2, e))?;
    match &probe.http {
        Some(url) => runtime.block_on(http::check(&probe, url)),
        None => runtime.block_on(grpc::check(&probe)),
    }
}
