//! Helpers for the fault tests: headless runs of the real `provetop`, and reading the
//! sessions they record back.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use provetop_shared::session::{load, Loaded};
use provetop_shared::{Alert, AlertState, Event, Mark, Phase, Record, RecordBody, Sample};

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

/// `provetop run --headless ARGS` with no `--record`, run to its end: it records where it
/// does by default, the state directory DIR/state (config from DIR/config).
pub fn headless_default(dir: &Path, args: &[&str]) -> Output {
    Command::new(provetop())
        .args(["run", "--headless"])
        .args(args)
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .output()
        .expect("run provetop")
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

/// The marks among `recs`, in their order (records read without a session file).
pub fn record_marks(recs: &[Record]) -> Vec<&Mark> {
    recs.iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(m) => Some(m),
            _ => None,
        })
        .collect()
}

/// The text of the warnings among `recs`' marks, in their order.
pub fn record_warnings(recs: &[Record]) -> Vec<&str> {
    record_marks(recs)
        .into_iter()
        .filter_map(|m| match m {
            Mark::Warning { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
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

/// A phase span rebuilt from a session's derived events.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub grammar: String,
    pub proof: u64,
    pub phase: Phase,
    pub partition: Option<u32>,
    pub start: u64,
    /// `None` while the phase has not ended.
    pub end: Option<u64>,
    /// What the end event said the phase took.
    pub duration_s: Option<f64>,
}

impl Span {
    /// The span's length in seconds; panics on one that has not ended.
    pub fn secs(&self) -> f64 {
        (self.end.expect("closed") - self.start) as f64 / 1e9
    }

    /// Whether the span lies within `outer`.
    pub fn inside(&self, outer: &Span) -> bool {
        outer.start <= self.start && self.end <= outer.end
    }
}

/// The phase spans of the derived records among `recs`, in start order: an end closes the
/// open start of its proof, phase and partition (a start again before the end leaves the
/// earlier span open for good); an end without its start (a phantom) panics.
pub fn phase_spans(recs: &[Record]) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    // (proof, phase, partition) of each open span, and where it is in `out`.
    type Key = (u64, Phase, Option<u32>);
    let mut open: Vec<(Key, usize)> = Vec::new();
    let mut recs: Vec<&Record> = recs.iter().collect();
    recs.sort_by_key(|r| r.t);
    for r in recs {
        let RecordBody::Derived(d) = &r.body else {
            continue;
        };
        match &d.event {
            Event::PhaseStarted {
                proof_id,
                phase,
                partition,
            } => {
                let key = (*proof_id, phase.clone(), *partition);
                open.retain(|(k, _)| *k != key);
                open.push((key, out.len()));
                out.push(Span {
                    grammar: d.grammar.clone(),
                    proof: *proof_id,
                    phase: phase.clone(),
                    partition: *partition,
                    start: r.t,
                    end: None,
                    duration_s: None,
                });
            }
            Event::PhaseEnded {
                proof_id,
                phase,
                partition,
                duration_s,
            } => {
                let key = (*proof_id, phase.clone(), *partition);
                let at = open
                    .iter()
                    .position(|(k, _)| *k == key)
                    .unwrap_or_else(|| panic!("phantom end of {phase} at {}", r.t));
                let (_, i) = open.remove(at);
                out[i].end = Some(r.t);
                out[i].duration_s = Some(*duration_s);
            }
            _ => {}
        }
    }
    out
}
