//! What the supervisor runs and how: the command, its environment and side log, the restart
//! policy and its backoff, the stop grace, and the user's log-line rules for its output.

use std::path::PathBuf;
use std::time::Duration;

#[cfg(doc)]
use super::LOG_CAP;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// Program and arguments (no shell).
    pub argv: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// File the child's stdout and stderr are also appended to, byte for byte (created 0600;
    /// at most [`LOG_CAP`] bytes, then one line saying the rest is dropped); `None`: none
    /// (the lines are records of the session either way).
    pub log_path: Option<PathBuf>,
    pub restart: Restart,
    /// Time between SIGTERM and SIGKILL on stop.
    pub grace: Duration,
    /// The user's log-line rules (the config file's), read before the built-in grammars
    /// on every line the child prints.
    pub log_rules: Vec<crate::loglines::Rule>,
    /// NVTX: the injection library handed to the child, or why none is
    /// ([`crate::nvtx`]).
    pub nvtx: crate::nvtx::Injection,
}

impl Default for ChildSpec {
    fn default() -> Self {
        ChildSpec {
            argv: Vec::new(),
            env: Vec::new(),
            log_path: None,
            restart: Restart::Never,
            grace: Duration::from_secs(5),
            log_rules: Vec::new(),
            nvtx: crate::nvtx::Injection::default(),
        }
    }
}

/// When to start the child again after it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    Never,
    /// After a failure (non-zero exit or a signal, not a stop), at most `max` times in a row,
    /// waiting 1 s, 2 s, 4 s … (capped at 30 s) before each start. A run of 10 minutes or
    /// more resets the count.
    OnFailure {
        /// Most restarts in a row.
        max: u32,
    },
}

/// First restart backoff; doubles each attempt.
pub const BACKOFF_START: Duration = Duration::from_secs(1);
/// Longest restart backoff.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A run this long resets the restart count.
pub const HEALTHY_RUN: Duration = Duration::from_secs(600);
