//! Process facts from /proc, signals, waiting, and a memory cgroup with a limit.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Whether a process exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
    }
}

/// Wait until `pred` holds (polling every 20 ms); false on timeout.
pub fn wait_until(timeout: Duration, mut pred: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if pred() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Send a signal to a process.
pub fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig)
        .unwrap_or_else(|e| panic!("kill -{sig} {pid}: {e}"));
}

/// A `/proc/PID/status` field in kB (VmHWM, VmRSS, …).
pub fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A new memory cgroup with a `limit` in bytes and no swap to escape to (so the OOM killer
/// acts), under `parent`, the caller's own memory cgroup directory (`v1`: the legacy memory
/// controller, else cgroup v2). `None` where one may not be made (not root, no writable
/// controller). The caller removes the directory when done.
pub fn limited_cgroup(parent: &Path, v1: bool, limit: u64) -> Option<PathBuf> {
    let dir = parent.join(format!("provetop-test-oom-{}", std::process::id()));
    std::fs::create_dir(&dir).ok()?;
    let f = if v1 {
        "memory.limit_in_bytes"
    } else {
        "memory.max"
    };
    if std::fs::write(dir.join(f), limit.to_string()).is_err() {
        let _ = std::fs::remove_dir(&dir);
        return None;
    }
    let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), limit.to_string());
    let _ = std::fs::write(dir.join("memory.swap.max"), "0");
    Some(dir)
}

/// What a finished child cost: its exit status, its peak resident memory (KiB, the
/// kernel's `ru_maxrss`) and its CPU time (user + system).
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    /// Exit code (None: killed by a signal).
    pub code: Option<i32>,
    /// Peak RSS, KiB.
    pub peak_kib: u64,
    /// CPU seconds.
    pub cpu_s: f64,
}

/// Run `program` with `args` to its end (standard output to `stdout`, standard error
/// inherited) and tell what it cost, measured by [`crate::bins::cost`] (its own peak: a test
/// process that forked it directly would lend it its own high-water mark).
pub fn cost_of(program: &Path, args: &[&str], stdout: std::fs::File) -> Cost {
    let out = std::process::Command::new(crate::bins::cost())
        .arg(program)
        .args(args)
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("provetop-cost {}: {e}", program.display()));
    let err = String::from_utf8_lossy(&out.stderr);
    eprint!("{err}");
    let line = err
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("provetop-cost: peak_kib="))
        .unwrap_or_else(|| panic!("no cost line from provetop-cost:\n{err}"));
    let field = |name: &str| -> String {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(name))
            .unwrap_or_default()
            .to_string()
    };
    let peak: String = line.chars().take_while(char::is_ascii_digit).collect();
    let code: i32 = field("code=").parse().unwrap_or(-1);
    Cost {
        code: (code >= 0).then_some(code),
        peak_kib: peak.parse().unwrap_or(0),
        cpu_s: field("cpu_s=").parse().unwrap_or(0.0),
    }
}
