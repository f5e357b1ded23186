//! How the stream reads in words: log lines (the log pane), alert lines (headless stderr),
//! controls (footer messages), the SRS and the prover's state (header). The model keeps
//! data; the words are made here, where they are shown.

use std::borrow::Cow;

use provetop_shared::units::{fmt_bytes, fmt_secs};
use provetop_shared::{Alert, AlertLevel, AlertState, Control, Event, Mark, SrsSource};

pub use crate::model::prover::state_name;
use crate::model::{HelloInfo, LogLevel, Logged, SrsState};

/// How a person's mark reads in the session's notes (the control socket's `mark`, the
/// screen's `M`): the timeline marks the notes that start so.
pub const MARK_PREFIX: &str = "mark: ";

/// The note of a mark with `text` (made inert: it comes from a person or a script).
pub fn mark_note(text: &str) -> String {
    format!("{MARK_PREFIX}{}", inert(text))
}

/// Text from a child (phase names, messages, log lines) made safe to print on a terminal or
/// in a table: every control character (C0, DEL, C1: ESC, BEL, CR, LF, TAB…) and every
/// bidirectional override is shown as a visible escape (`\x1b`, `\r`, `\n`, `\u{202e}`), so
/// a clear-screen or an OSC 52 clipboard write is read, never obeyed, and one value stays
/// on one line. Text without such characters is returned as it is.
pub fn inert(s: &str) -> Cow<'_, str> {
    fn bad(c: char) -> bool {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !s.contains(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if bad(c) && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// What the end of a recording that provetop did not stop says (header and log).
pub const ABRUPT_END: &str = "recording ends here without provetop's stop (killed?)";

/// "pause", "prove 1", "set mode batch:2", "shutdown".
pub fn control_text(c: &Control) -> String {
    match c {
        Control::Prove { count } => format!("prove {count}"),
        Control::SetMode { mode } => format!("set mode {mode}"),
        Control::Pause => "pause".into(),
        Control::Resume => "resume".into(),
        Control::Shutdown { abort } => {
            if *abort {
                "shutdown (abort)".into()
            } else {
                "shutdown".into()
            }
        }
    }
}

/// An alert's rule without its level prefix ("rss > 1GiB" for "crit: rss > 1GiB") and its
/// message without the "cleared: " the engine starts a cleared one with.
pub fn alert_parts(a: &Alert) -> (&str, &str) {
    let rule = a
        .rule
        .strip_prefix(a.level.name())
        .and_then(|r| r.strip_prefix(':'))
        .unwrap_or(&a.rule)
        .trim();
    let detail = a.message.strip_prefix("cleared: ").unwrap_or(&a.message);
    (rule, detail)
}

/// "ALERT warn: rss > 1GiB: rss 1.2 GiB > 1.0 GiB" / "alert cleared: …" (headless stderr).
/// Shown inert ([`inert`]): a phase name in the message is the child's text.
pub fn alert_line(a: &Alert) -> String {
    let (rule, detail) = alert_parts(a);
    let line = match a.state {
        AlertState::Firing => format!("ALERT {}: {rule}: {detail}", a.level.name()),
        AlertState::Cleared => format!("alert cleared: {rule}: {detail}"),
    };
    inert(&line).into_owned()
}

/// "child 4242 exited with code 3: restarting it in 2.0s (restart 2)" (headless stderr): the exit
/// that caused a restart (`exit`: its `ChildExited`, when one came before), then the restart.
pub fn restart_line(exit: Option<&Mark>, restart: &Mark) -> Option<String> {
    let Mark::Restart { attempt, backoff_s } = restart else {
        return None;
    };
    let exited = match exit {
        Some(Mark::ChildExited { pid, reason, .. }) => format!("child {pid} {reason}"),
        _ => "child ended".to_string(),
    };
    let line = format!(
        "{exited}: restarting it in {} (restart {attempt})",
        fmt_secs(*backoff_s)
    );
    Some(inert(&line).into_owned())
}

/// What the stop did to the proofs in flight (headless stderr at the end), when it ended
/// any: they are counted apart from failures.
pub fn stopped_proofs(n: u64) -> Option<String> {
    match n {
        0 => None,
        1 => Some("1 proof in flight was stopped with the session (not counted as failed)".into()),
        n => Some(format!(
            "{n} proofs in flight were stopped with the session (not counted as failed)"
        )),
    }
}

fn source_name(s: SrsSource) -> &'static str {
    match s {
        SrsSource::Generated => "gen",
        SrsSource::Disk => "disk",
        SrsSource::Memory => "memory",
    }
}

/// Short text for the header: "1.2 GiB (disk 400ms)", "disk 40%".
pub fn srs(s: &SrsState) -> String {
    match s {
        SrsState::Unknown => "-".into(),
        SrsState::Loading {
            source, progress, ..
        } => {
            let src = source_name(*source);
            match progress {
                Some((d, t)) if *t > 0 => format!("{src} {}%", d * 100 / t),
                _ => format!("{src}…"),
            }
        }
        SrsState::Ready {
            bytes,
            source,
            duration_s,
            ..
        } => format!(
            "{} ({} {})",
            fmt_bytes(*bytes),
            source_name(*source),
            fmt_secs(*duration_s)
        ),
    }
}

/// How severe a log entry is (its colour).
pub fn log_level(l: &Logged) -> LogLevel {
    match l {
        Logged::ProofDone { verified, .. } => {
            if *verified {
                LogLevel::Info
            } else {
                LogLevel::Warn
            }
        }
        Logged::Event(e) => match e {
            Event::ProofStarted { .. } | Event::State { .. } => LogLevel::Debug,
            Event::ProofFinished { .. } if e.is_cancelled_proof() => LogLevel::Info,
            Event::ProofFinished { .. } | Event::Error { .. } => LogLevel::Error,
            Event::ModeRefused { .. } => LogLevel::Warn,
            Event::Log { level, .. } => match level.as_str() {
                "error" => LogLevel::Error,
                "warn" => LogLevel::Warn,
                "info" => LogLevel::Info,
                _ => LogLevel::Debug,
            },
            _ => LogLevel::Info,
        },
        Logged::Mark(m) => match m {
            Mark::ChildExited { code, .. } if *code != Some(0) => LogLevel::Error,
            Mark::Restart { .. }
            | Mark::ChildStopped { .. }
            | Mark::Dropped { .. }
            | Mark::BadLine { .. }
            | Mark::Warning { .. } => LogLevel::Warn,
            _ => LogLevel::Info,
        },
        Logged::Alert(a) => match (a.state, a.level) {
            (AlertState::Cleared, _) => LogLevel::Info,
            (_, AlertLevel::Crit) => LogLevel::Error,
            (_, AlertLevel::Warn) => LogLevel::Warn,
            (_, AlertLevel::Info) => LogLevel::Info,
        },
        Logged::Control(_) => LogLevel::Info,
        Logged::Output(o) => output_level(&o.text),
    }
}

/// The level a line of the child's output reads as: a level word near its start (`ERROR`,
/// `WARN`, `panicked at`), else info.
fn output_level(text: &str) -> LogLevel {
    let head: String = text
        .chars()
        .take(64)
        .collect::<String>()
        .to_ascii_uppercase();
    let word = |w: &str| {
        head.match_indices(w).any(|(i, _)| {
            let before = head[..i].chars().next_back();
            let after = head[i + w.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_alphanumeric())
                && !after.is_some_and(|c| c.is_ascii_alphanumeric())
        })
    };
    if word("ERROR") || word("PANICKED") || word("FATAL") || text.contains("panicked at") {
        LogLevel::Error
    } else if word("WARN") || word("WARNING") {
        LogLevel::Warn
    } else if word("DEBUG") || word("TRACE") {
        LogLevel::Debug
    } else {
        LogLevel::Info
    }
}

/// The words of a log entry, shown inert ([`inert`]): most of them are the child's.
pub fn log_text(l: &Logged) -> String {
    let text = log_words(l);
    match inert(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(o) => o,
    }
}

fn log_words(l: &Logged) -> String {
    match l {
        Logged::Control(c) => format!("→ {}", control_text(c)),
        Logged::ProofDone {
            proof_id,
            duration_s,
            mode,
            verified,
            peak,
        } => {
            let v = if *verified {
                "verified"
            } else {
                "NOT verified"
            };
            format!(
                "proof {proof_id} done in {} ({mode}), {v}, peak {}",
                fmt_secs(*duration_s),
                fmt_bytes(*peak)
            )
        }
        Logged::Event(e) => event_text(e),
        Logged::Mark(m) => mark_text(m),
        Logged::Output(o) => match o.cut {
            Some(len) => format!(
                "{} {} [cut: the line had {len} bytes]",
                o.source.marker(),
                o.text
            ),
            None => format!("{} {}", o.source.marker(), o.text),
        },
        Logged::Alert(a) => {
            // The level once: "CRIT rss > 1GiB", not "CRIT crit: rss > 1GiB".
            let (rule, detail) = alert_parts(a);
            match a.state {
                AlertState::Firing => {
                    format!("{} {rule}: {detail}", a.level.name().to_uppercase())
                }
                AlertState::Cleared => format!("cleared {rule}: {detail}"),
            }
        }
    }
}

fn hello(h: &HelloInfo) -> String {
    let gpu = if h.gpus.is_empty() {
        String::new()
    } else {
        format!(", {} GPU(s)", h.gpus.len())
    };
    format!(
        "hello: prover {} pid {}, {}{gpu}, {} × {} constraints, {}",
        h.prover_version,
        h.pid,
        h.backend,
        h.config.partitions,
        h.config.constraints,
        h.config.mode
    )
}

fn event_text(e: &Event) -> String {
    match e {
        Event::Hello { .. } => HelloInfo::of(e).map(|h| hello(&h)).unwrap_or_default(),
        Event::SrsLoading { source, .. } => {
            let what = match source {
                SrsSource::Generated => "generating",
                SrsSource::Disk => "loading from disk",
                SrsSource::Memory => "already in memory",
            };
            format!("SRS {what}…")
        }
        Event::SrsReady { .. } => format!("SRS ready: {}", srs(&SrsState::ready_of(e))),
        Event::ProofStarted {
            proof_id,
            mode,
            sectors,
            ..
        } => format!("proof {proof_id} started ({mode}, {sectors} sector(s))"),
        Event::ProofFinished {
            proof_id,
            duration_s,
            error,
            ..
        } => {
            if e.is_cancelled_proof() {
                format!(
                    "proof {proof_id} {}",
                    error.as_deref().unwrap_or("cancelled before it started")
                )
            } else {
                format!(
                    "proof {proof_id} FAILED after {}: {}",
                    fmt_secs(*duration_s),
                    error.as_deref().unwrap_or("no reason given")
                )
            }
        }
        Event::ModeChanged { from, to } => format!("mode {from} → {to}"),
        Event::ModeRefused { requested, reason } => {
            format!("mode {requested} refused: {reason}")
        }
        Event::State { state } => format!("prover {}", state_name(*state)),
        Event::Log {
            target, message, ..
        } => {
            let short = target.rsplit("::").next().unwrap_or(target);
            if short.is_empty() {
                message.clone()
            } else {
                format!("{short}: {message}")
            }
        }
        Event::Error { message, fatal } => {
            let f = if *fatal { "fatal error" } else { "error" };
            format!("prover {f}: {message}")
        }
        Event::Bye {
            reason,
            proofs_done,
        } => format!("prover bye: {reason} ({proofs_done} proofs)"),
        // Not logged by the model; named if one ever is.
        other => format!("{other:?}"),
    }
}

/// A mark in words, as the log pane and headless stderr give it (inert).
pub fn mark_line(m: &Mark) -> String {
    inert(&mark_text(m)).into_owned()
}

fn mark_text(m: &Mark) -> String {
    match m {
        Mark::Note { text } | Mark::Warning { text } | Mark::OomKill { text, .. } => text.clone(),
        Mark::MemoryEvent {
            cgroup,
            counter,
            delta,
            total,
        } => format!("{cgroup}: {counter} +{delta} (now {total})"),
        Mark::Stall {
            scope,
            resource,
            line,
            stall_us,
            window_us,
        } => format!(
            "{scope} {resource} pressure: {line} stall over {:.0} ms within {:.1} s",
            *stall_us as f64 / 1e3,
            *window_us as f64 / 1e6
        ),
        Mark::ChildStarted { pid, command } => {
            format!("child {pid} started: {}", command.join(" "))
        }
        Mark::ChildExited { pid, reason, .. } | Mark::ChildStopped { pid, reason, .. } => {
            format!("child {pid} {reason}")
        }
        Mark::ChildContinued { pid } => format!("child {pid} continued"),
        Mark::Restart { attempt, backoff_s } => {
            format!("restarting child (attempt {attempt}, after {backoff_s:.0}s)")
        }
        Mark::Dropped { what, count } => format!("dropped {count} {what}"),
        Mark::BadLine { error, excerpt } => {
            format!("bad event line ({error}): {}", excerpt.trim_end())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_line_names_the_exit_that_caused_it_and_when_the_child_starts_again() {
        let exit = Mark::ChildExited {
            pid: 4242,
            code: Some(3),
            signal: None,
            oom_kill: false,
            reason: "exited with code 3".into(),
        };
        let restart = Mark::Restart {
            attempt: 2,
            backoff_s: 2.0,
        };
        assert_eq!(
            restart_line(Some(&exit), &restart).as_deref(),
            Some("child 4242 exited with code 3: restarting it in 2.0s (restart 2)")
        );
        assert_eq!(
            restart_line(None, &restart).as_deref(),
            Some("child ended: restarting it in 2.0s (restart 2)")
        );
        assert_eq!(restart_line(None, &exit), None);
    }

    #[test]
    fn inert_shows_control_characters_as_visible_escapes() {
        assert_eq!(inert("synthesis"), "synthesis");
        assert!(matches!(inert("synthesis"), Cow::Borrowed(_)));
        assert_eq!(inert("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(
            inert("\x1b]52;c;aGk=\x07\r\n\t"),
            "\\x1b]52;c;aGk=\\x07\\r\\n\\t"
        );
        assert_eq!(inert("\u{9b}x\u{7f}"), "\\x9bx\\x7f");
        assert_eq!(inert("abc\u{202e}def"), "abc\\u{202e}def");
        assert_eq!(inert("ünïcode ✓"), "ünïcode ✓");
    }
}
