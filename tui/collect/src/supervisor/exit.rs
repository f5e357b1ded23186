//! How a child ended, in numbers and in words ("killed by SIGKILL (OOM kill)").

use nix::sys::signal::Signal;

/// How the child ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ExitInfo {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
    /// SIGKILL while the cgroup's oom_kill counter moved.
    pub oom_kill: bool,
    /// Human text: "exited 0", "exited with code 1", "killed by SIGKILL (OOM kill)", …
    pub reason: String,
}

impl ExitInfo {
    /// Whether this counts as a failure for the restart policy.
    pub fn failed(&self) -> bool {
        self.code != Some(0)
    }

    /// An end whose status is unknown, told by `reason`.
    pub(super) fn unknown(reason: String) -> ExitInfo {
        ExitInfo {
            code: None,
            signal: None,
            oom_kill: false,
            reason,
        }
    }

    pub(super) fn from_status(st: std::process::ExitStatus, oom: bool, stopped: bool) -> ExitInfo {
        use std::os::unix::process::ExitStatusExt;
        let code = st.code();
        let signal = st.signal();
        let oom_kill = oom && signal == Some(Signal::SIGKILL as i32);
        let mut reason = match (code, signal) {
            (Some(0), _) => "exited 0".to_string(),
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => {
                let name = Signal::try_from(s)
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_else(|_| format!("signal {s}"));
                let mut r = format!("killed by {name}");
                if st.core_dumped() {
                    r.push_str(" (core dumped)");
                }
                if oom_kill {
                    r.push_str(" (OOM kill)");
                }
                r
            }
            (None, None) => "ended (unknown status)".to_string(),
        };
        if stopped {
            reason = format!("stopped: {reason}");
        }
        ExitInfo {
            code,
            signal,
            oom_kill,
            reason,
        }
    }
}
