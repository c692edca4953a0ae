//! A `grpc_health_probe` stand-in. OLM's catalog pods probe readiness and liveness with
//! `grpc_health_probe -addr=:50051`; an image whose only binary is olm-registry links that
//! name to it, and `main` dispatches here when invoked under that name.
//!
//! Flags and exit codes follow grpc_health_probe: 0 serving, 1 bad arguments, 2 connection
//! failure, 3 RPC failure, 4 not serving.
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
            "v" | "alts" | "tls" | "spiffe" | "gzip" => {}
            "user-agent" | "rpc-header" | "tls-ca-cert" | "tls-client-cert" | "tls-client-key"
            | "tls-server-name" => {
                value()?;
            }
            other => return Err(format!("unknown flag -{other}")),
        }
    }
    if probe.addr.is_empty() {
        return Err("-addr not specified".into());
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
        assert_eq!(parse(&args(&[])).err().unwrap(), "-addr not specified");
        assert_eq!(
            parse(&args(&["-addr=:1", "-bogus"])).err().unwrap(),
            "unknown flag -bogus"
        );
    }
}
