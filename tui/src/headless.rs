//! `provetop run --headless` (and `watch --headless`, `provetop serve`): no terminal. Records,
//! evaluates alerts (printed to stderr), answers its control socket ([`control`]: attach, ls,
//! stop), survives the hangup of the terminal that started it, and exits with the child's
//! status (128 + signal for a signal). A live screen that detaches goes on here ([`serve`]).

use std::path::Path;

use provetop_collect::supervisor::ExitInfo;

use crate::model::Model;
use crate::monitor::control::{self, ControlServer};
use crate::monitor::signals::{exit_status, served_stop_signal, signal_name};
use crate::monitor::{self, Monitor, Target};
use crate::settings::Setup;

/// What the screen's header would show: the counts of what went wrong on the way in.
pub fn report(m: &Model, recorded: Option<std::path::PathBuf>) {
    let mut lost = Vec::new();
    if m.notes.bad_lines > 0 {
        lost.push(format!("{} bad event lines", m.notes.bad_lines));
    }
    if m.notes.dropped_events > 0 {
        lost.push(format!("{} events dropped", m.notes.dropped_events));
    }
    if m.notes.dropped_samples > 0 {
        lost.push(format!("{} samples dropped", m.notes.dropped_samples));
    }
    if !lost.is_empty() {
        crate::say!("provetop: {}", lost.join(", "));
    }
    if let Some(s) = crate::text::stopped_proofs(m.prover.proofs_stopped) {
        crate::say!("provetop: {s}");
    }
    if let Some(p) = recorded {
        crate::say!(
            "provetop: session recorded to {} ({} records)",
            p.display(),
            m.records()
        );
    }
}

/// Monitor `target` without a screen until it ends, or until a signal or the control
/// socket's `stop` stops it (a supervised child is stopped first). A hangup does not stop
/// it ([`served_stop_signal`]).
pub fn main(s: Setup, target: Target) -> anyhow::Result<i32> {
    let rt = monitor::runtime()?;
    let served = Served::new(&target);
    let mut m = Model::new(s.thresholds);
    let (code, recorded, dead) = rt.block_on(async {
        // Caught from before the child starts: a SIGTERM during start-up stops it cleanly.
        let stop = served_stop_signal();
        let mut mon = Monitor::start(&s, target, &mut m).await?;
        let control = served.control(&s, &mut mon, &mut m);
        serve(mon, &mut m, served, control, stop).await
    })?;
    report(&m, recorded);
    match dead {
        Some(d) => Err(anyhow::anyhow!("{d}: the session was stopped")),
        None => Ok(code),
    }
}

/// What a screenless session needs to know about its target besides the monitor.
pub struct Served {
    /// What is watched, named ("pid 12", "unit curio.service"; None: a supervised command).
    pub watched: Option<String>,
    /// The child's log, for its last lines on a failure.
    pub child_log: Option<std::path::PathBuf>,
    command: Vec<String>,
    restartable: bool,
}

impl Served {
    /// Before `target` is handed to the monitor.
    pub fn new(target: &Target) -> Served {
        let (watched, restartable) = match target {
            Target::Pid { .. } | Target::Cgroup { .. } => (target.watched_name(), false),
            Target::Command(spec) => (
                None,
                matches!(
                    spec.restart,
                    provetop_collect::supervisor::Restart::OnFailure { .. }
                ),
            ),
        };
        Served {
            watched,
            child_log: child_log(target),
            command: target.command(),
            restartable,
        }
    }

    /// The session's control socket; a socket that cannot be made is a warning (the session
    /// goes on without it).
    pub fn control(&self, s: &Setup, mon: &mut Monitor, m: &mut Model) -> Option<ControlServer> {
        // `ls` lists the recording wherever `--record` put it.
        if let Some(r) = &s.record {
            crate::recordings::remember(r);
        }
        match control::for_session(s.record.as_deref(), self.command.clone(), self.restartable) {
            Ok(mut c) => {
                c.thresholds = Some(s.thresholds);
                c.rule_lines = crate::settings::rule_lines(&s.rules);
                Some(c)
            }
            Err(e) => {
                crate::say!("provetop: warning: no control socket: {e:#}");
                mon.pipeline.note(
                    m,
                    format!("no control socket (attach will not work): {e:#}"),
                );
                None
            }
        }
    }
}

/// Run a started session with no screen until it ends: pump records, answer the control
/// socket, stop on a stop signal or a `stop` request. Returns the exit status, the
/// recording, and why the sampler died if it did.
pub async fn serve(
    mut mon: Monitor,
    m: &mut Model,
    served: Served,
    mut control: Option<ControlServer>,
    stop: impl std::future::Future<Output = i32>,
) -> anyhow::Result<(i32, Option<std::path::PathBuf>, Option<String>)> {
    let watched = served.watched.is_some();
    mon.pipeline.to_stderr = true;
    mon.pipeline.pump_every(monitor::PUMP_EVERY);
    tokio::pin!(stop);
    let mut dead = None;
    let mut gone = None;
    let (ended, by_itself, recorded) = loop {
        tokio::select! {
            // Records are pumped when they come; a request is answered on arrival, from
            // records pumped just before it.
            _ = mon.pipeline.wait() => {}
            _ = async {
                match control.as_mut() {
                    Some(c) => c.request().await,
                    None => std::future::pending().await,
                }
            } => {}
            e = Monitor::child_ended(&mut mon.supervisor) => {
                break (Some(e), true, mon.finish(m).await)
            }
            sig = &mut stop => {
                let why = format!("got {}", signal_name(sig));
                if !watched {
                    crate::say!("provetop: {why}: stopping the child");
                }
                let (e, r) = mon.stop(m, &why).await;
                break (e, false, r);
            }
        }
        mon.pump(m);
        if mon.pipeline.watched_gone() {
            gone = mon.pipeline.watched_end_text().map(str::to_string);
            break (None, true, mon.finish(m).await);
        }
        // A dead sampler is fatal: no more samples would come.
        if let Some(d) = mon.pipeline.sampler_died().map(str::to_string) {
            let (e, r) = mon.stop(m, &d).await;
            dead = Some(d);
            break (e, false, r);
        }
        if let Some(why) = control
            .as_mut()
            .and_then(|c| control::answer(c, &mut mon, m))
        {
            crate::say!("provetop: {why}: stopping the child");
            let (e, r) = mon.stop(m, &why).await;
            break (e, false, r);
        }
    };
    drop(control);
    let code = match &ended {
        Some(exit) => {
            crate::say!("provetop: child {}", exit.reason);
            if by_itself {
                say_child_tail(m, served.child_log.as_deref(), exit);
            }
            exit_status(exit)
        }
        None => {
            if let Some(text) = gone.filter(|_| by_itself) {
                crate::say!("provetop: {text}");
            }
            // A watched process's status is its parent's; only the kernel's kill is known.
            match &m.child {
                crate::model::ChildStatus::Exited {
                    oom_kill: true,
                    signal: Some(sig),
                    ..
                } if by_itself => 128 + sig,
                _ => 0,
            }
        }
    };
    Ok((code, recorded, dead))
}

/// How many of the child's last output lines a failure shows.
pub const CHILD_TAIL_LINES: usize = 10;
/// How much of the end of the child's log is read for them.
const CHILD_TAIL_BYTES: u64 = 16 * 1024;

/// Where a supervised child's output goes (its `.child.log`), if anywhere.
pub fn child_log(target: &Target) -> Option<std::path::PathBuf> {
    match target {
        Target::Command(spec) => spec.log_path.clone(),
        Target::Pid { .. } | Target::Cgroup { .. } => None,
    }
}

/// The child's last output lines (at most [`CHILD_TAIL_LINES`], non-empty, inert, with
/// their source: `err`/`out`) from the session's own records of them, oldest first.
pub fn output_tail(m: &Model) -> Vec<String> {
    let mut tail: Vec<String> = m
        .log
        .iter()
        .rev()
        .filter_map(|e| match &e.what {
            crate::model::Logged::Output(o) if !o.text.trim().is_empty() => {
                Some(crate::text::log_text(&e.what))
            }
            _ => None,
        })
        .take(CHILD_TAIL_LINES)
        .collect();
    tail.reverse();
    tail
}

/// A child that ended by itself and failed: its last output lines on stderr, from the
/// session's own records of them (recorded or not), else from its side log.
pub fn say_child_tail(m: &Model, log: Option<&Path>, exit: &ExitInfo) {
    say_tail_lines(&output_tail(m), log, exit)
}

/// [`say_child_tail`] with the lines already taken from the model ([`output_tail`]).
pub fn say_tail_lines(tail: &[String], log: Option<&Path>, exit: &ExitInfo) {
    if !exit.failed() {
        return;
    }
    if tail.is_empty() {
        return say_child_failure(log, exit);
    }
    crate::say!("provetop: the child's last output:");
    for l in tail {
        crate::say!("  {l}");
    }
}

/// A child that ended by itself and failed: its last output lines on stderr, since its own
/// error (the bundled prover's "invalid value '0' for '--partitions'") is what tells why.
pub fn say_child_failure(log: Option<&Path>, exit: &ExitInfo) {
    if !exit.failed() {
        return;
    }
    let Some(log) = log else { return };
    let lines = child_tail(log, CHILD_TAIL_LINES);
    if lines.is_empty() {
        return;
    }
    crate::say!("provetop: the child's last output ({}):", log.display());
    for l in lines {
        crate::say!("  {l}");
    }
}

/// The last `n` non-empty lines of a regular file, read from its last 16 KiB only (bounded
/// whatever the child wrote), shown inert ([`crate::text::inert`]).
pub fn child_tail(path: &Path, n: usize) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let Ok(meta) = f.metadata() else {
        return Vec::new();
    };
    if !meta.is_file() {
        return Vec::new();
    }
    let from = meta.len().saturating_sub(CHILD_TAIL_BYTES);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err()
        || f.take(CHILD_TAIL_BYTES).read_to_end(&mut buf).is_err()
    {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<&str> = text.lines().collect();
    if from > 0 && !lines.is_empty() {
        // The first line read is a cut one.
        lines.remove(0);
    }
    let mut tail: Vec<String> = lines
        .iter()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(n)
        .map(|l| crate::text::inert(l).into_owned())
        .collect();
    tail.reverse();
    tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_tail_reads_the_last_lines_of_the_end_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.log");
        let mut text = "x".repeat(100_000);
        text.push('\n');
        for i in 0..30 {
            text.push_str(&format!("line {i}\n\n"));
        }
        text.push_str("\x1b[2Jlast");
        std::fs::write(&p, text).unwrap();
        let t = child_tail(&p, 3);
        assert_eq!(t, vec!["line 28", "line 29", "\\x1b[2Jlast"]);
        assert!(child_tail(&dir.path().join("none"), 3).is_empty());
        assert!(child_tail(dir.path(), 3).is_empty());
    }
}
