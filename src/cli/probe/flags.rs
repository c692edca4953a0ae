//! grpc_health_probe's flags (`-name=value` or `-name value`), and the `-http` ones.
use std::path::PathBuf;
use std::time::Duration;

/// What to check and how.
pub(super) struct Probe {
    pub(super) addr: String,
    pub(super) service: String,
    pub(super) connect_timeout: Duration,
    pub(super) rpc_timeout: Duration,
    /// `-http`: the URL of an HTTP check, instead of the gRPC one.
    pub(super) http: Option<String>,
    pub(super) user_agent: Option<String>,
    pub(super) headers: Vec<(String, String)>,
    pub(super) tls_ca_cert: Option<PathBuf>,
    pub(super) tls_no_verify: bool,
    pub(super) tls_server_name: Option<String>,
}

impl Default for Probe {
    fn default() -> Probe {
        Probe {
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
        }
    }
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

pub(super) fn parse(args: &[String]) -> Result<Probe, String> {
    let mut probe = Probe::default();
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
        probe.set(name, &mut value)?;
    }
    probe.checked()
}

impl Probe {
    /// Applies flag `name`, taking its value from `value` when it has one.
    fn set(
        &mut self,
        name: &str,
        value: &mut dyn FnMut() -> Result<String, String>,
    ) -> Result<(), String> {
        match name {
            "addr" => self.addr = value()?,
            "service" => self.service = value()?,
            "connect-timeout" => {
                let v = value()?;
                self.connect_timeout =
                    parse_duration(&v).ok_or(format!("invalid -connect-timeout {v:?}"))?;
            }
            "rpc-timeout" => {
                let v = value()?;
                self.rpc_timeout =
                    parse_duration(&v).ok_or(format!("invalid -rpc-timeout {v:?}"))?;
            }
            "http" => self.http = Some(value()?),
            "user-agent" => self.user_agent = Some(value()?),
            "rpc-header" => {
                let v = value()?;
                let (name, val) = v
                    .split_once(':')
                    .ok_or(format!("-rpc-header {v:?} is not NAME: VALUE"))?;
                self.headers
                    .push((name.trim().to_owned(), val.trim().to_owned()));
            }
            "tls-ca-cert" => self.tls_ca_cert = Some(PathBuf::from(value()?)),
            "tls-server-name" => self.tls_server_name = Some(value()?),
            "tls-no-verify" => self.tls_no_verify = true,
            "v" | "alts" | "tls" | "spiffe" | "gzip" => {}
            "tls-client-cert" | "tls-client-key" => {
                value()?;
            }
            other => return Err(format!("unknown flag -{other}")),
        }
        Ok(())
    }

    /// The probe once every flag is in: flags that cannot go together refused, `-addr=:PORT`
    /// made this host's.
    fn checked(mut self) -> Result<Probe, String> {
        if let Some(url) = &self.http {
            if !self.addr.is_empty() {
                return Err("-addr and -http cannot be used together".into());
            }
            let https = url.starts_with("https://");
            if !https && (self.tls_ca_cert.is_some() || self.tls_no_verify) {
                return Err("-tls-ca-cert and -tls-no-verify need an https:// URL".into());
            }
            if self.tls_ca_cert.is_some() && self.tls_no_verify {
                return Err("-tls-ca-cert and -tls-no-verify cannot be used together".into());
            }
            return Ok(self);
        }
        if self.addr.is_empty() {
            return Err("-addr (or -http) not specified".into());
        }
        // ":50051" means this host.
        if self.addr.starts_with(':') {
            self.addr = format!("127.0.0.1{}", self.addr);
        }
        Ok(self)
    }
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
