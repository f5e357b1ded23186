//! The wire types of the control socket: a [`Request`] per line (JSON tagged by `cmd`,
//! unknown commands and fields refused), and the [`Status`] a `status` reply carries. Which
//! requests change something (and so are refused on a read-only connection) is said here.

use std::path::PathBuf;

use provetop_shared::Control;
use serde::{Deserialize, Serialize};

/// What a client may ask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Say who is connecting; `read_only` makes this connection unable to change anything;
    /// `screen` says it is a screen (`provetop attach`): its attaching and detaching are
    /// noted in the session.
    Hello {
        #[serde(default)]
        read_only: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        screen: bool,
    },
    /// The session's [`Status`].
    Status,
    /// Send a control to the prover (what the live screen's keys send).
    Control { control: Control },
    /// Stop the session: the prover is stopped, the recording finished.
    Stop,
    /// Restart the prover (with `--restart on-failure`: its process group is killed and its
    /// restart policy starts it again).
    Restart,
    /// Add a note to the session.
    Mark { text: String },
    /// The alerts firing now and the latest changes.
    Alerts,
}

impl Request {
    /// Whether a read-only connection is refused this request.
    pub fn changes_something(&self) -> bool {
        matches!(
            self,
            Request::Control { .. } | Request::Stop | Request::Restart | Request::Mark { .. }
        )
    }
}

/// A running session, as `status` tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The session's id (its file's stem).
    pub id: String,
    /// The supervisor's pid.
    pub pid: u32,
    /// The supervised child's pid, while one runs.
    pub child_pid: Option<u32>,
    /// What is supervised.
    pub command: Vec<String>,
    /// The prover's name and version from its hello, when it spoke the protocol.
    pub prover: Option<String>,
    /// Wall-clock start, unix seconds.
    pub started_unix_s: u64,
    /// Seconds since the start.
    pub uptime_s: f64,
    /// Proofs finished (ok), failed.
    pub proofs_done: u64,
    pub proofs_failed: u64,
    /// Batch mode and state, as the prover last said.
    pub mode: Option<String>,
    pub state: Option<String>,
    /// Alerts firing now.
    pub alerts: usize,
    /// The session file being recorded.
    pub session: Option<PathBuf>,
    /// Connected clients.
    pub clients: usize,
    /// The phase threshold lines, GiB: idle, gpu, synth, peak (an attached screen draws them).
    #[serde(default)]
    pub thresholds_gib: Option<[f64; 4]>,
    /// The alert rules' lines on the chart: label, bytes.
    #[serde(default)]
    pub rule_lines: Vec<(String, u64)>,
}
