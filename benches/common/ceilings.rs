//! Reference figures for the image benchmarks, taken on the same machine against the same
//! registries: what `curl` gets (download to /dev/null and to a file, one monolithic upload),
//! what SHA-256 costs per core, and how much CPU a process spent.
#![allow(dead_code)]

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const MIB: f64 = 1048576.0;

fn curl(args: &[&str]) -> String {
    let out = Command::new("curl")
        .args(["-s", "-S", "-f"])
        .args(args)
        .output()
        .expect("curl is needed for the reference figures");
    assert!(
        out.status.success(),
        "curl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// MiB/s of `curl` fetching a blob to `to` (a file, or /dev/null).
pub fn curl_get(addr: &str, repository: &str, digest: &str, to: &Path) -> f64 {
    let url = format!("http://{addr}/v2/{repository}/blobs/{digest}");
    let out = curl(&["-o", to.to_str().unwrap(), "-w", "%{speed_download}", &url]);
    out.trim().parse::<f64>().unwrap() / MIB
}

/// MiB/s of `curl` uploading a file as one blob (one PUT, as our client does), and the CPU
/// seconds the registry spent on it.
pub fn curl_put(
    addr: &str,
    repository: &str,
    file: &Path,
    registry_pid: Option<u32>,
) -> (f64, f64) {
    let digest = sha256_file(file).0;
    let before = registry_pid.map(cpu_seconds).unwrap_or_default();
    let headers = curl(&[
        "-i",
        "-X",
        "POST",
        "-H",
        "Content-Length: 0",
        &format!("http://{addr}/v2/{repository}/blobs/uploads/"),
    ]);
    let location = headers
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("location"))
                .map(|(_, v)| v.trim().to_owned())
        })
        .expect("the registry names an upload location");
    let location = if location.starts_with("http") {
        location
    } else {
        format!("http://{addr}{location}")
    };
    let separator = if location.contains('?') { '&' } else { '?' };
    let out = curl(&[
        "-o",
        "/dev/null",
        "-w",
        "%{speed_upload}",
        "-H",
        "Content-Type: application/octet-stream",
        "-T",
        file.to_str().unwrap(),
        &format!("{location}{separator}digest={digest}"),
    ]);
    let cpu = registry_pid.map(cpu_seconds).unwrap_or_default() - before;
    (out.trim().parse::<f64>().unwrap() / MIB, cpu)
}

/// MiB/s of reading a file 1 MiB at a time and handing each piece to `each`.
fn read_through(path: &Path, mut each: impl FnMut(&[u8])) -> f64 {
    let t = Instant::now();
    let mut file = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let read = file.read(&mut buf).unwrap();
        if read == 0 {
            break;
        }
        each(&buf[..read]);
        n += read as u64;
    }
    n as f64 / MIB / t.elapsed().as_secs_f64()
}

/// MiB/s of reading a file.
pub fn read_rate(path: &Path) -> f64 {
    read_through(path, |_| {})
}

/// The digest of a file and the MiB/s of reading and hashing it on one core.
pub fn sha256_file(path: &Path) -> (String, f64) {
    let mut hasher = Sha256::new();
    let rate = read_through(path, |piece| hasher.update(piece));
    (format!("sha256:{:x}", hasher.finalize()), rate)
}

/// User + system CPU seconds a live process has used so far.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at state (field 3).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// User + system CPU seconds this process has used so far.
pub fn own_cpu_seconds() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The process whose command line names `needle` (a registry, by its config file).
pub fn pid_with_argument(needle: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        cmdline
            .split(|&b| b == 0)
            .any(|arg| arg == needle.as_bytes())
            .then_some(pid)
    })
}
