//! How a child ended, in numbers and in words ("killed by SIGKILL (OOM kill of pid 42
//! (memhog))").

use std::time::Duration;

use nix::sys::signal::Signal;

use crate::kmsg::Victim;

/// How long a child's SIGKILL end waits for the kernel log to name it as an OOM victim (the
/// line follows the kill by microseconds; the wait only covers a slow console path).
pub const OOM_NAME_WAIT: Duration = Duration::from_millis(100);

/// How the child ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ExitInfo {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
    /// SIGKILL while the oom_kill counter of a cgroup it was in moved, or the kernel log
    /// named it as the OOM killer's victim.
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

    pub(super) fn from_status(
        st: std::process::ExitStatus,
        oom: bool,
        stopped: bool,
        victim: Option<&Victim>,
    ) -> ExitInfo {
        use std::os::unix::process::ExitStatusExt;
        let code = st.code();
        let signal = st.signal();
        let oom_kill = (oom || victim.is_some()) && signal == Some(Signal::SIGKILL as i32);
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
                match victim.filter(|_| oom_kill) {
                    Some(v) => r.push_str(&format!(" (OOM kill of pid {} ({}))", v.pid, v.command)),
                    None if oom_kill => r.push_str(" (OOM kill)"),
                    None => {}
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
