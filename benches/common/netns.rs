//! Benches whose peers bind every interface (opm, OLM v1's catalogd) run themselves again in
//! a private network namespace with only loopback up (`unshare --net`: root and `ip`).

use std::process::Command;

/// Runs this bench again, with the same arguments and `marker` set in its environment, under
/// `unshare --net` plus `unshare_extra`, after `setup` (shell commands run in the namespaces
/// first); returns its exit status.
pub fn rerun_in_namespaces(marker: &str, unshare_extra: &[&str], setup: &str) -> i32 {
    let exe = std::env::current_exe().unwrap();
    let name = exe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let status = Command::new("unshare")
        .arg("--net")
        .args(unshare_extra)
        .args([
            "--",
            "sh",
            "-c",
            &format!("ip link set lo up && {setup} exec \"$0\" \"$@\""),
        ])
        .arg(&exe)
        .args(std::env::args_os().skip(1))
        .env(marker, "1")
        .status();
    match status {
        Ok(s) if s.success() => 0,
        Ok(s) => {
            eprintln!(
                "{name} in its network namespace ended with {s} (the namespace itself needs root and `ip`)"
            );
            s.code().unwrap_or(1)
        }
        Err(e) => {
            eprintln!("{name}: cannot run `unshare` ({e}): it needs util-linux and root");
            1
        }
    }
}
