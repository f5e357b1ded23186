//! The commands that reach live sessions: `attach`, `ls`, `status`, `mark` (here or, through
//! `ssh HOST`, on another machine).

use clap::Args;
use provetop_shared::classify::Thresholds;

use super::ScreenOpts;

/// `provetop attach`.
#[derive(Debug, Clone, Args)]
pub struct AttachArgs {
    /// The session: its id (as `provetop ls` shows it, or a unique part of it), or its
    /// session file. Without it, the only live session. `HOST:SESSION` attaches to a
    /// session on another machine through `ssh HOST` (the user's keys, config and agent),
    /// read-only unless `--control`.
    #[arg(value_name = "SESSION", conflicts_with = "latest")]
    pub session: Option<String>,
    /// With `HOST:SESSION`: send controls (keys) and let q stop the remote prover.
    #[arg(long, conflicts_with = "read_only")]
    pub control: bool,
    /// With `HOST:SESSION`: the provetop to run on the remote side [default: `provetop`,
    /// found by the remote PATH].
    #[arg(long, value_name = "PATH", env = "PROVETOP_REMOTE_PROVETOP")]
    pub remote_provetop: Option<String>,
    /// The live session started last.
    #[arg(long)]
    pub latest: bool,
    /// A screen that cannot send controls (the supervisor refuses them).
    #[arg(long)]
    pub read_only: bool,
    /// Phase threshold lines in GiB: idle,gpu,synth,peak (default: the supervisor's).
    #[arg(long, value_name = "GIB,GIB,GIB,GIB")]
    pub thresholds: Option<Thresholds>,
    /// The screen's theme and mouse.
    #[command(flatten)]
    pub screen: ScreenOpts,
}

/// `provetop ls`.
#[derive(Debug, Clone, Args)]
pub struct LsArgs {
    /// How many recent recordings to list.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub recent: usize,
    /// List the live sessions of another machine, through `ssh HOST`.
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// With HOST: the provetop to run there [default: `provetop`, found by the remote PATH].
    #[arg(long, value_name = "PATH", env = "PROVETOP_REMOTE_PROVETOP")]
    pub remote_provetop: Option<String>,
    /// One JSON document: every live session (its status, its recording's path wherever
    /// `--record` put it) and the recent recordings.
    #[arg(long)]
    pub json: bool,
}

/// `provetop status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// The session: its id (as `provetop ls` shows it, or a unique part of it), its session
    /// file or its socket. Without it, the only live session.
    #[arg(value_name = "SESSION", conflicts_with = "latest")]
    pub session: Option<String>,
    /// The live session started last.
    #[arg(long)]
    pub latest: bool,
    /// The control socket's status reply as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `provetop mark`.
#[derive(Debug, Clone, Args)]
pub struct MarkArgs {
    /// The session (as `status` takes it) and the mark's text; with one word only, it is the
    /// text, for the only live session.
    #[arg(value_names = ["SESSION", "TEXT"], num_args = 1..=2, required = true)]
    pub words: Vec<String>,
    /// The live session started last (then give the TEXT alone).
    #[arg(long)]
    pub latest: bool,
}

impl MarkArgs {
    /// The session asked for (if any) and the text.
    pub fn session_and_text(&self) -> (Option<&str>, &str) {
        match self.words.as_slice() {
            [session, text] => (Some(session.as_str()), text.as_str()),
            [text] => (None, text.as_str()),
            // Clap takes one or two words.
            _ => (None, ""),
        }
    }
}
