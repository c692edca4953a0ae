//! A real Prometheus server on loopback (Debian's `prometheus`), scraping one target every
//! 200 ms with its own storage; `scripts/test.sh` installs it when missing. Queries go to its
//! HTTP API, over a plain HTTP/1.0 GET.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

const PATIENCE: Duration = Duration::from_secs(60);

pub struct TestPrometheus {
    child: Child,
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl TestPrometheus {
    /// Starts Prometheus scraping `target` (HOST:PORT, path /metrics) as job "olm" and waits
    /// until it is ready.
    pub fn scraping(target: &str) -> TestPrometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global: {{scrape_interval: 200ms, scrape_timeout: 200ms}}\n\
                 scrape_configs:\n  - job_name: olm\n    static_configs: [{{targets: ['{target}']}}]\n"
            ),
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus is installed (scripts/test.sh installs it)");
        let prometheus = TestPrometheus {
            child,
            addr,
            _dir: dir,
        };
        let started = Instant::now();
        while get(&prometheus.addr, "/-/ready").map(|(status, _)| status) != Some(200) {
            assert!(
                started.elapsed() < PATIENCE,
                "prometheus never became ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        prometheus
    }

    /// Waits until a scrape that started after this call has been stored, so that a query
    /// sees everything that happened before it.
    pub fn wait_for_fresh_scrape(&self) {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let started = Instant::now();
        loop {
            let last = self.query(r#"timestamp(up{job="olm"} == 1)"#);
            if last.first().is_some_and(|(_, v)| *v > now) {
                return;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "no successful scrape after {now}: {last:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// An instant PromQL query: each series' labels (as JSON) and value.
    pub fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let (status, body) = get(
            &self.addr,
            &format!("/api/v1/query?query={}", percent_encode(promql)),
        )
        .expect("prometheus answers");
        assert_eq!(status, 200, "query {promql}: {body}");
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        answer["data"]["result"]
            .as_array()
            .unwrap_or_else(|| panic!("query {promql}: {body}"))
            .iter()
            .map(|s| {
                let value = s["value"][1].as_str().unwrap().parse::<f64>().unwrap();
                (s["metric"].clone(), value)
            })
            .collect()
    }

    /// The value of a query that must give exactly one series.
    pub fn value(&self, promql: &str) -> f64 {
        let series = self.query(promql);
        assert_eq!(series.len(), 1, "query {promql}: {series:?}");
        series[0].1
    }
}

impl Drop for TestPrometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET `path` from `addr`: the status and the body, or None when nothing answers.
pub fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(PATIENCE)).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
