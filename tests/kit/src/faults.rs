//! Helpers for the fault tests: headless runs of the real `provetop`, and reading the
//! sessions they record back.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use provetop_shared::session::{load, Loaded};
use provetop_shared::{Alert, AlertState, Mark, RecordBody, Sample};

use crate::bins::{provetop, run_provetop};
use crate::procs::wait_until;

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
    let out = run_provetop(&["classify", p.to_str().expect("utf-8 path")]);
    assert_eq!(
        out.code,
        0,
        "provetop classify {} failed: {}",
        p.display(),
        out.stderr
    );
}

/// The records of one kind in a session, with their times.
fn bodies<'a, T>(l: &'a Loaded, pick: fn(&'a RecordBody) -> Option<&'a T>) -> Vec<(u64, &'a T)> {
    l.records
        .iter()
        .filter_map(|r| pick(&r.body).map(|x| (r.t, x)))
        .collect()
}

/// The marks of a session with their times.
pub fn marks(l: &Loaded) -> Vec<(u64, &Mark)> {
    bodies(l, |b| match b {
        RecordBody::Mark(m) => Some(m),
        _ => None,
    })
}

/// The samples of a session with their times.
pub fn samples(l: &Loaded) -> Vec<(u64, &Sample)> {
    bodies(l, |b| match b {
        RecordBody::Sample(s) => Some(s),
        _ => None,
    })
}

/// The alerts of a session with their times.
pub fn alerts(l: &Loaded) -> Vec<(u64, &Alert)> {
    bodies(l, |b| match b {
        RecordBody::Alert(a) => Some(a),
        _ => None,
    })
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
