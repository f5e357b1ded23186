//! The supervised (or watched) process ([`ChildStatus`]), and what the monitor itself notes
//! in the stream ([`Notes`]): child lifecycle, restarts, dropped records, bad protocol lines,
//! warnings, notes, and the controls it sent.

use provetop_shared::{Control, Mark};

use super::effects::{Effect, Effects};
use super::log::{Log, Logged};

/// Most marks kept.
pub const MAX_MARKS: usize = 10_000;
/// Bad protocol lines logged one by one; after that only the header's count grows.
const BAD_LINES_LOGGED: u64 = 5;

/// The supervised (or watched) process.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ChildStatus {
    /// Nothing started yet.
    #[default]
    None,
    /// Running since `since` (ns).
    Running {
        pid: u32,
        since: u64,
        command: Vec<String>,
        /// Stopped by a signal, in words ("stopped (SIGSTOP)"): alive, not running.
        stopped: Option<String>,
    },
    /// Gone at `at` (ns).
    Exited {
        pid: u32,
        code: Option<i32>,
        signal: Option<i32>,
        oom_kill: bool,
        /// How it ended, in words ("exited 0", "killed by SIGKILL").
        reason: String,
        at: u64,
    },
    /// Restarting after a failure.
    Restarting { attempt: u32, backoff_s: f64 },
}

impl ChildStatus {
    /// A mark at `t`: the child's lifecycle.
    pub fn apply(&mut self, t: u64, m: &Mark, fx: &mut Effects) {
        match m {
            Mark::ChildStarted { pid, command } => {
                *self = ChildStatus::Running {
                    pid: *pid,
                    since: t,
                    command: command.clone(),
                    stopped: None,
                };
                fx.push(Effect::ChildStarted { pid: *pid });
            }
            Mark::ChildExited {
                pid,
                code,
                signal,
                oom_kill,
                reason,
            } => {
                *self = ChildStatus::Exited {
                    pid: *pid,
                    code: *code,
                    signal: *signal,
                    oom_kill: *oom_kill,
                    reason: reason.clone(),
                    at: t,
                };
                fx.push(Effect::ChildExited {
                    pid: *pid,
                    code: *code,
                });
            }
            Mark::ChildStopped { pid, reason, .. } => self.set_stopped(*pid, Some(reason.clone())),
            Mark::ChildContinued { pid } => self.set_stopped(*pid, None),
            Mark::Restart { attempt, backoff_s } => {
                *self = ChildStatus::Restarting {
                    attempt: *attempt,
                    backoff_s: *backoff_s,
                };
            }
            Mark::Dropped { .. }
            | Mark::BadLine { .. }
            | Mark::Note { .. }
            | Mark::Warning { .. }
            | Mark::OomKill { .. }
            | Mark::MemoryEvent { .. }
            | Mark::Stall { .. } => {}
        }
    }

    /// The running child `pid` was stopped (`Some`: how) or continued (`None`).
    fn set_stopped(&mut self, pid: u32, how: Option<String>) {
        if let ChildStatus::Running {
            pid: running,
            stopped,
            ..
        } = self
        {
            if *running == pid {
                *stopped = how;
            }
        }
    }
}

/// What the monitor noted in the stream: its marks and the controls it sent, oldest first
/// (each bounded by [`MAX_MARKS`]), and the losses the marks count.
#[derive(Debug, Clone, Default)]
pub struct Notes {
    /// Marks, oldest first.
    pub marks: super::bounded::History<(u64, Mark)>,
    /// Controls sent, oldest first.
    pub controls: super::bounded::History<(u64, Control)>,
    /// Samples reported dropped.
    pub dropped_samples: u64,
    /// Events reported dropped.
    pub dropped_events: u64,
    /// Invalid protocol lines.
    pub bad_lines: u64,
}

impl Notes {
    /// A mark at `t`: counted, kept, and logged.
    pub fn apply(&mut self, t: u64, m: &Mark, log: &mut Log) {
        let logged = match m {
            Mark::Dropped { what, count } => {
                if what == "samples" {
                    self.dropped_samples += count;
                } else {
                    self.dropped_events += count;
                }
                true
            }
            Mark::BadLine { .. } => {
                self.bad_lines += 1;
                // One line per bad line would flood the pane with a chatty child: log the
                // first few, then only the count (shown in the header).
                self.bad_lines <= BAD_LINES_LOGGED
            }
            Mark::ChildStarted { .. }
            | Mark::ChildExited { .. }
            | Mark::ChildStopped { .. }
            | Mark::ChildContinued { .. }
            | Mark::Restart { .. }
            | Mark::Note { .. }
            | Mark::Warning { .. }
            | Mark::OomKill { .. }
            | Mark::MemoryEvent { .. }
            | Mark::Stall { .. } => true,
        };
        if logged {
            log.push(t, Logged::Mark(m.clone()));
        }
        self.marks.push_bounded((t, m.clone()), MAX_MARKS);
    }

    /// A control sent at `t`: kept and logged.
    pub fn control(&mut self, t: u64, c: &Control, log: &mut Log) {
        log.push(t, Logged::Control(c.clone()));
        self.controls.push_bounded((t, c.clone()), MAX_MARKS);
    }
}

/// Whether a recording whose last lifecycle mark is `m` ends abruptly: a start (of the child,
/// a restart, or watching a pid) does, the child's exit or provetop's stop note does not;
/// `None` for a mark that is no lifecycle mark.
pub fn abrupt_after(m: &Mark) -> Option<bool> {
    match m {
        Mark::Note { text } if text.starts_with(super::STOPPING_NOTE) => Some(false),
        Mark::ChildExited { .. } => Some(false),
        Mark::Note { text } if text.starts_with("watching pid") => Some(true),
        Mark::ChildStarted { .. } | Mark::Restart { .. } => Some(true),
        _ => None,
    }
}
