//! The two header lines: who is running and how it is doing.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use provetop_shared::protocol::ProverState;
use provetop_shared::units::fmt_secs;

use crate::app::{App, Screen, NS};
use crate::model::ChildStatus;
use crate::ui::short_bytes;

/// Draw the header into `area` (two rows).
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let m = &app.model;
    let sep = || Span::styled(" │ ", t.dim());
    let mut l1: Vec<Span> = Vec::new();
    if area.width >= 100 {
        l1.push(Span::styled("provetop ", t.bold()));
    }

    // Child state and pid.
    match (&app.screen, &m.child) {
        (Screen::Watch { pid }, ChildStatus::Exited { reason, .. }) => {
            l1.push(Span::styled(format!("■ pid {pid} {reason}"), t.bad()));
        }
        (Screen::Watch { pid }, _) => {
            l1.push(Span::styled(format!("◉ watching pid {pid}"), t.ok()));
        }
        (Screen::Replay(_), ChildStatus::None) => l1.push(Span::styled("▷ replay", t.dim())),
        (_, ChildStatus::None) => l1.push(Span::styled("○ starting", t.dim())),
        (_, ChildStatus::Running { pid, .. }) => {
            let paused = m.prover.state == Some(ProverState::Paused);
            if paused {
                l1.push(Span::styled(format!("‖ paused pid {pid}"), t.warn()));
            } else {
                l1.push(Span::styled(format!("▶ running pid {pid}"), t.ok()));
            }
        }
        (
            _,
            ChildStatus::Exited {
                pid, code, reason, ..
            },
        ) => {
            let style = if *code == Some(0) { t.text() } else { t.bad() };
            l1.push(Span::styled(format!("■ pid {pid} {reason}"), style));
        }
        (_, ChildStatus::Restarting { attempt, backoff_s }) => {
            l1.push(Span::styled(
                format!("↻ restart #{attempt} in {backoff_s:.0}s"),
                t.warn(),
            ));
        }
    }
    if let Some(s) = &m.last_sample {
        if s.procs > 1 {
            l1.push(Span::styled(format!(" ({} procs)", s.procs), t.dim()));
        }
    }

    if let Some(h) = &m.prover.hello {
        l1.push(sep());
        l1.push(Span::raw(h.backend.to_string()));
        if !h.gpus.is_empty() {
            l1.push(Span::styled(format!("×{}", h.gpus.len()), t.dim()));
        }
    } else if !m.has_events() && !matches!(m.child, ChildStatus::None) {
        l1.push(sep());
        l1.push(Span::styled("no events", t.dim()));
    }
    if let Some(mode) = m.prover.mode {
        l1.push(sep());
        l1.push(Span::styled("mode ", t.dim()));
        l1.push(Span::styled(mode.to_string(), t.bold()));
    }
    if m.has_events() {
        l1.push(sep());
        l1.push(Span::styled("proofs ", t.dim()));
        l1.push(Span::styled(m.prover.proofs_done.to_string(), t.bold()));
        // One parenthesis for what else the count hides: sectors (batch:N), failures,
        // cancellations.
        let p = &m.prover;
        let notes: Vec<Span> = [
            (p.sectors_done != p.proofs_done)
                .then(|| Span::styled(format!("{} sectors", p.sectors_done), t.dim())),
            (p.proofs_failed > 0)
                .then(|| Span::styled(format!("{} failed", p.proofs_failed), t.bad())),
            (p.proofs_cancelled > 0)
                .then(|| Span::styled(format!("{} cancelled", p.proofs_cancelled), t.dim())),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !notes.is_empty() {
            l1.push(Span::styled(" (", t.dim()));
            for (i, n) in notes.into_iter().enumerate() {
                if i > 0 {
                    l1.push(Span::styled(", ", t.dim()));
                }
                l1.push(n);
            }
            l1.push(Span::styled(")", t.dim()));
        }
        if let Some(last) = m.prover.last_s {
            let text = format!("{}/proof", fmt_secs(last));
            // Whole or not at all.
            if sep().width() + text.chars().count() <= room_left(&l1, area) {
                l1.push(sep());
                l1.push(Span::raw(text));
            }
        }
        let avg = (m.prover.last_s.and(m.prover.avg_s()))
            .map(|avg| Span::styled(format!(" avg {}", fmt_secs(avg)), t.dim()));
        // Seconds per proof understate a mode that overlaps proofs: the rate says what the
        // current mode delivers. Shown whole or not at all: the short form, then dropping the
        // average, on narrow screens.
        let room = room_left(&l1, area);
        let avg_w = avg.as_ref().map_or(0, |a| a.width());
        let rate = m.prover.mode.and_then(|mode| m.throughput(mode));
        let choice = rate.and_then(|r| {
            let (long, short) = (format!("{r:.0} sectors/h"), format!("{r:.0}/h"));
            [(long, true), (short.clone(), true), (short, false)]
                .into_iter()
                .find(|(text, keep_avg)| {
                    sep().width() + text.chars().count() + if *keep_avg { avg_w } else { 0 } <= room
                })
        });
        match choice {
            Some((text, keep_avg)) => {
                if keep_avg {
                    l1.extend(avg);
                }
                l1.push(sep());
                l1.push(Span::raw(text));
            }
            None => {
                if avg_w <= room {
                    l1.extend(avg);
                }
            }
        }
    }

    // Line 2: phase, SRS, uptime, drops, alerts.
    let mut l2: Vec<Span> = vec![Span::styled("phase ", t.dim())];
    l2.push(Span::styled(m.header_phase_text(), t.bold()));
    if m.has_events() {
        l2.push(sep());
        l2.push(Span::styled("SRS ", t.dim()));
        l2.push(Span::raw(m.prover.srs.describe()));
    }
    let up = match &m.child {
        ChildStatus::Running { since, .. } => Some(app.clock.saturating_sub(*since)),
        _ => m.first_t().map(|f| app.clock.saturating_sub(f)),
    };
    if let Some(up) = up {
        l2.push(sep());
        l2.push(Span::styled("up ", t.dim()));
        l2.push(Span::raw(fmt_secs(up as f64 / NS as f64)));
    }
    l2.push(sep());
    let drops = m.dropped_samples;
    l2.push(Span::styled(
        format!("drops {drops}"),
        if drops > 0 { t.warn() } else { t.dim() },
    ));
    if m.dropped_events > 0 {
        l2.push(Span::styled(
            format!(" events dropped {}", m.dropped_events),
            t.warn(),
        ));
    }
    if m.bad_lines > 0 {
        l2.push(Span::styled(format!(" bad {}", m.bad_lines), t.warn()));
    }
    if app.recording_failing {
        l2.push(sep());
        l2.push(Span::styled("✖ rec failing", t.bad()));
    }
    if let Some(a) = m.active_alerts.iter().max_by_key(|a| a.alert.level) {
        l2.push(sep());
        let more = if m.active_alerts.len() > 1 {
            format!(" +{}", m.active_alerts.len() - 1)
        } else {
            String::new()
        };
        l2.push(Span::styled(
            format!("⚠ {}{more}", a.alert.rule),
            t.alert(a.alert.level),
        ));
    } else if app.recording.is_some() {
        l2.push(sep());
        l2.push(Span::styled("● rec", t.metric(crate::series::Metric::Peak)));
    }
    // MemAvailable last, and only when it fits whole.
    if let Some(avail) = m.last_sample.as_ref().and_then(|s| s.mem_available) {
        let text = format!("avail {}", short_bytes(avail));
        if sep().width() + text.chars().count() <= room_left(&l2, area) {
            l2.push(sep());
            l2.push(Span::styled(text, t.dim()));
        }
    }
    buf.set_line(area.x, area.y, &Line::from(l1), area.width);
    if area.height > 1 {
        buf.set_line(area.x, area.y + 1, &Line::from(l2), area.width);
    }
}

/// Columns `area` has left after `line`: what optional items are measured against, so that
/// they are shown whole or not at all.
fn room_left(line: &[Span], area: Rect) -> usize {
    (area.width as usize).saturating_sub(line.iter().map(|s| s.width()).sum())
}
