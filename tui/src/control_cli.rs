//! `provetop status [SESSION] [--json]` and `provetop mark [SESSION] TEXT`: a live session's
//! control socket ([`crate::monitor::control`]) from the command line, for scripts and
//! operators, found as `attach` finds it ([`crate::attach::resolve`]).
//!
//! `status --json` prints the socket's status reply as one JSON object (the fields of
//! [`Status`]); the text form says the same, one `key: value` line each. `mark` records a
//! `mark: TEXT` note in the session, as the socket's `mark` request does: replay, export and
//! `classify` show it at its time. Errors are one line (no session, several, not answering).

use std::fmt::Write as _;

use provetop_shared::units::fmt_secs;

use crate::cli::{MarkArgs, StatusArgs};
use crate::monitor::control::{self, Client, Request, Status};

/// How long the session's reply is waited for.
const REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

fn connect(session: Option<&str>, latest: bool) -> anyhow::Result<(String, Client)> {
    let dir = control::socket_dir()?;
    let (id, socket) = crate::attach::resolve(&dir, session, latest)?;
    let c = Client::connect(&socket, REPLY_TIMEOUT).map_err(|e| {
        anyhow::anyhow!("session {id}: cannot connect to {}: {e}", socket.display())
    })?;
    Ok((id, c))
}

/// `provetop status`.
pub fn status(args: &StatusArgs) -> anyhow::Result<i32> {
    let (id, mut c) = connect(args.session.as_deref(), args.latest)?;
    let s = c
        .status()
        .map_err(|e| anyhow::anyhow!("session {id}: no status: {e:#}"))?;
    let mut out = if args.json {
        serde_json::to_string(&s)?
    } else {
        text(&s)
    };
    if !out.ends_with('\n') {
        out.push('\n');
    }
    crate::export::write_stdout(out.as_bytes())?;
    Ok(0)
}

/// `provetop mark`.
pub fn mark(args: &MarkArgs) -> anyhow::Result<i32> {
    let (session, text) = args.session_and_text();
    if args.latest && session.is_some() {
        anyhow::bail!("mark --latest names the session: give the text alone (quote it)");
    }
    if text.trim().is_empty() {
        anyhow::bail!("mark: the text is empty");
    }
    let (id, mut c) = connect(session, args.latest)?;
    c.ask(&Request::Mark {
        text: text.to_string(),
    })
    .map_err(|e| anyhow::anyhow!("session {id}: mark not recorded: {e:#}"))?;
    crate::say!("provetop: marked session {id}");
    Ok(0)
}

/// The status as `key: value` lines.
pub fn text(s: &Status) -> String {
    let mut out = String::new();
    let none = || "-".to_string();
    let inert = |t: &str| crate::text::inert(t).into_owned();
    let mut line = |k: &str, v: String| {
        let _ = writeln!(out, "{k:<11} {v}");
    };
    line("id:", inert(&s.id));
    line("pid:", s.pid.to_string());
    line(
        "child pid:",
        s.child_pid.map_or_else(none, |p| p.to_string()),
    );
    line("command:", inert(&s.command.join(" ")));
    line("prover:", s.prover.as_deref().map_or_else(none, inert));
    line(
        "started:",
        crate::classify::fmt_utc(s.started_unix_s as i64),
    );
    line("uptime:", fmt_secs(s.uptime_s.floor()));
    let proofs = if s.proofs_failed > 0 {
        format!("{} done, {} failed", s.proofs_done, s.proofs_failed)
    } else {
        format!("{} done", s.proofs_done)
    };
    line("proofs:", proofs);
    line("mode:", s.mode.clone().unwrap_or_else(none));
    line("state:", s.state.clone().unwrap_or_else(none));
    line("alerts:", format!("{} firing", s.alerts));
    line(
        "recording:",
        s.session
            .as_ref()
            .map_or_else(none, |p| inert(&p.display().to_string())),
    );
    // The asking connection is one of the clients.
    line("screens:", s.clients.saturating_sub(1).to_string());
    out
}
