//! The supervised (or watched) process, and what the monitor itself notes in the stream:
//! child lifecycle, restarts, dropped records, bad protocol lines, warnings, notes.

use provetop_shared::Mark;

use super::effects::{Effect, Effects};
use super::log::Logged;
use super::{push_bounded, Model};

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

impl Model {
    /// The running child `pid` was stopped (`Some`: how) or continued (`None`).
    fn set_stopped(&mut self, pid: u32, how: Option<String>) {
        if let ChildStatus::Running {
            pid: running,
            stopped,
            ..
        } = &mut self.child
        {
            if *running == pid {
                *stopped = how;
            }
        }
    }

    pub(super) fn on_mark(&mut self, t: u64, m: &Mark, fx: &mut Effects) {
        let logged = match m {
            Mark::ChildStarted { pid, command } => {
                self.child = ChildStatus::Running {
                    pid: *pid,
                    since: t,
                    command: command.clone(),
                    stopped: None,
                };
                fx.push(Effect::ChildStarted { pid: *pid });
                true
            }
            Mark::ChildExited {
                pid,
                code,
                signal,
                oom_kill,
                reason,
            } => {
                self.child = ChildStatus::Exited {
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
                true
            }
            Mark::ChildStopped { pid, reason, .. } => {
                self.set_stopped(*pid, Some(reason.clone()));
                true
            }
            Mark::ChildContinued { pid } => {
                self.set_stopped(*pid, None);
                true
            }
            Mark::Restart { attempt, backoff_s } => {
                self.child = ChildStatus::Restarting {
                    attempt: *attempt,
                    backoff_s: *backoff_s,
                };
                true
            }
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
            Mark::Note { .. } | Mark::Warning { .. } => true,
        };
        if logged {
            self.push_log(t, Logged::Mark(m.clone()));
        }
        push_bounded(&mut self.marks, (t, m.clone()), MAX_MARKS);
    }
}
