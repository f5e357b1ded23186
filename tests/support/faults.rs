//! Helpers for the fault tests: the memory-hog helper binary, headless runs of the real
//! `provetop`, reading sessions back, and process facts from /proc.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use provetop_shared::session::{load, Loaded};
use provetop_shared::{Alert, AlertState, Mark, RecordBody, Sample};

use super::tui::provetop;

/// `provetop-memhog` (a bin of provetop-collect), built next to `provetop`.
pub fn memhog() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = provetop().parent().expect("bin dir").to_path_buf();
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut cmd = Command::new(cargo);
            cmd.args([
                "build",
                "-q",
                "-p",
                "provetop-collect",
                "--bin",
                "provetop-memhog",
            ]);
            if dir.file_name().and_then(|n| n.to_str()) == Some("release") {
                cmd.arg("--release");
            }
            let st = cmd.status().expect("run cargo build -p provetop-collect");
            assert!(st.success(), "cargo build of provetop-memhog failed");
            let p = dir.join("provetop-memhog");
            assert!(p.is_file(), "{} missing after the build", p.display());
            p
        })
        .clone()
}

/// `provetop run --headless --record SESSION ARGS...` with a private config/cache/state.
pub fn headless_cmd(dir: &Path, session: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(provetop());
    c.args(["run", "--headless", "--record"])
        .arg(session)
        .args(args)
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .stdin(Stdio::null());
    c
}

/// Run a headless session to its end.
pub fn headless(dir: &Path, session: &Path, args: &[&str]) -> Output {
    headless_cmd(dir, session, args)
        .output()
        .expect("run provetop")
}

/// Start a headless session (stdout/stderr piped).
pub fn spawn_headless(dir: &Path, session: &Path, args: &[&str]) -> Child {
    headless_cmd(dir, session, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start provetop")
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Load a session, or fail the test with the loader's one-line error.
pub fn session(p: &Path) -> Loaded {
    load(p).unwrap_or_else(|e| panic!("{} does not load: {e}", p.display()))
}

/// `provetop classify FILE` succeeds (the recording replays through the whole offline path).
pub fn assert_classifies(p: &Path) {
    let o = Command::new(provetop())
        .arg("classify")
        .arg(p)
        .output()
        .expect("run provetop classify");
    assert!(
        o.status.success(),
        "provetop classify {} failed: {}",
        p.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The marks of a session with their times.
pub fn marks(l: &Loaded) -> Vec<(u64, &Mark)> {
    l.records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(m) => Some((r.t, m)),
            _ => None,
        })
        .collect()
}

/// The samples of a session with their times.
pub fn samples(l: &Loaded) -> Vec<(u64, &Sample)> {
    l.records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => Some((r.t, s)),
            _ => None,
        })
        .collect()
}

/// The alerts of a session with their times.
pub fn alerts(l: &Loaded) -> Vec<(u64, &Alert)> {
    l.records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Alert(a) => Some((r.t, a)),
            _ => None,
        })
        .collect()
}

/// Time of the first alert of `metric` in `state`.
pub fn alert_at(l: &Loaded, metric: &str, state: AlertState) -> Option<u64> {
    alerts(l)
        .into_iter()
        .find(|(_, a)| a.metric == metric && a.state == state)
        .map(|(t, _)| t)
}

/// How the child ended, from the session's exit mark.
pub fn exit_mark(l: &Loaded) -> (Option<i32>, Option<i32>, bool, String) {
    marks(l)
        .into_iter()
        .find_map(|(_, m)| match m {
            Mark::ChildExited {
                code,
                signal,
                oom_kill,
                reason,
                ..
            } => Some((*code, *signal, *oom_kill, reason.clone())),
            _ => None,
        })
        .expect("no ChildExited mark in the session")
}

/// A `/proc/PID/status` field in kB (VmHWM, VmRSS, …).
pub fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
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

/// The pid of the supervised child, once its ChildStarted mark is on disk; `None` if
/// provetop did not record one within `timeout`.
pub fn child_pid_from(session: &Path, timeout: Duration) -> Option<u32> {
    let mut pid = None;
    wait_until(timeout, || {
        pid = load(session).ok().and_then(|l| {
            marks(&l).into_iter().find_map(|(_, m)| match m {
                Mark::ChildStarted { pid, .. } => Some(*pid),
                _ => None,
            })
        });
        pid.is_some()
    });
    pid
}
