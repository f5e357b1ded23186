//! The chart's cursor: a reversed column, and a box of the exact values there (the phase, every
//! series, the baseline's RSS and the difference to it, then what the kernel said last at
//! that time: the limit that binds, the cgroup's memory.stat breakdown, memory pressure), on
//! the side away from the cursor.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use provetop_shared::units::fmt_bytes;

use crate::app::{App, Screen, NS};
use crate::delta::{delta, fmt_pct, fmt_signed};
use crate::series::{Metric, Reading};
use crate::ui::{fmt_clock, short_bytes};

/// The cursor: a reversed column and a box with exact values.
pub(super) fn cursor(buf: &mut Buffer, plot: Rect, app: &App) {
    let Some(c) = app.cursor() else {
        return;
    };
    let (t0, t1) = app.window();
    let span = t1.saturating_sub(t0).max(1);
    let cx =
        plot.x + (c.saturating_sub(t0) as u128 * (plot.width as u128 - 1) / span as u128) as u16;
    for r in 0..plot.height {
        if let Some(cell) = buf.cell_mut((cx, plot.y + r)) {
            cell.set_style(app.theme.cursor());
        }
    }
    cursor_box(buf, plot, cx, c, app);
}

/// Exact values at the cursor, in a box on the side away from it.
fn cursor_box(buf: &mut Buffer, plot: Rect, cx: u16, c: u64, app: &App) {
    let t = &app.theme;
    let m = &app.model;
    let mut lines: Vec<(String, Style)> = Vec::new();
    let when = if matches!(app.screen, Screen::Replay(_)) {
        format!("at {}", fmt_clock(c.saturating_sub(app.origin), true))
    } else {
        format!(
            "at -{:.2}s",
            app.window_end().saturating_sub(c) as f64 / NS as f64
        )
    };
    match m.value_at(c) {
        Some(r) => {
            let exact = matches!(r, Reading::Exact(_));
            lines.push((
                if exact {
                    when
                } else {
                    format!("{when} (min–max)")
                },
                t.bold(),
            ));
            for metric in Metric::SERIES {
                if let Some((lo, hi)) = r.range(metric) {
                    let v = if lo == hi {
                        fmt_bytes(hi)
                    } else {
                        format!("{}–{}", short_bytes(lo), short_bytes(hi))
                    };
                    lines.push((format!("{:<10} {v:>10}", metric.name()), t.metric(metric)));
                    if metric == Metric::Rss {
                        lines.extend(baseline_lines(app, c, hi));
                    }
                }
            }
        }
        None => lines.push((format!("{when}: no sample"), t.bold())),
    }
    lines.extend(kernel_lines(app, c));
    if !lines.iter().any(|l| l.0.starts_with("base ")) {
        // No sample of the shown session here: the baseline's value still is one.
        if let Some(b) = &app.baseline {
            if let Some(v) = b.value_at(m, c).and_then(|r| r.range(Metric::Rss)) {
                lines.push((
                    format!("{:<10} {:>10}", "base rss", fmt_bytes(v.1)),
                    t.dim(),
                ));
            }
        }
    }
    // The phase under the cursor goes right under the time: the box may be cut short.
    let mut phase_line: Vec<(String, Style)> = Vec::new();
    let spans = m.spans_at(c);
    if !spans.is_empty() {
        let mut names: Vec<String> = spans
            .iter()
            .map(|s| crate::text::inert(&s.label()).into_owned())
            .collect();
        names.dedup();
        phase_line.push((format!("phase {}", names.join(",")), t.bold()));
    } else if !m.has_phases() {
        if let Some(p) = m.threshold_phase_at(c) {
            phase_line.push((format!("phase {p}"), t.bold()));
        }
    }
    let at = lines.len().min(1);
    for (k, l) in phase_line.into_iter().enumerate() {
        lines.insert(at + k, l);
    }
    let w = lines.iter().map(|l| l.0.chars().count()).max().unwrap_or(0) as u16 + 2;
    let w = w.min(plot.width).min(34);
    let h = (lines.len() as u16).min(plot.height);
    let x = if cx >= plot.x + plot.width / 2 {
        plot.x + 1
    } else {
        plot.x + plot.width - w - 1
    };
    let area = Rect::new(x, plot.y, w, h);
    for (i, (text, style)) in lines.iter().take(h as usize).enumerate() {
        let y = area.y + i as u16;
        for xx in area.x..area.x + area.width {
            if let Some(cell) = buf.cell_mut((xx, y)) {
                cell.set_char(' ').set_style(Style::default());
            }
        }
        buf.set_stringn(area.x + 1, y, text, (w - 2) as usize, *style);
    }
}

/// The kernel reading at or before the cursor: the limit that binds (size and name), the
/// cgroup's memory.stat breakdown (`cg anon`, …; what the kernel charges the cgroup, page
/// cache and kernel memory included), and memory pressure. Nothing without a reading.
fn kernel_lines(app: &App, c: u64) -> Vec<(String, Style)> {
    let Some((_, k)) = app.model.kernel_at(c) else {
        return Vec::new();
    };
    let t = &app.theme;
    let row = |name: &str, v: String| format!("{name:<10} {v:>10}");
    let mut out = Vec::new();
    if let Some(b) = &k.binding {
        out.push((row("limit", fmt_bytes(b.limit)), t.bold()));
        out.push((format!(" {}", crate::text::inert(&b.name)), t.dim()));
    }
    if let Some(cg) = &k.cgroup {
        if let Some(cur) = cg.current {
            out.push((row("cgroup", fmt_bytes(cur)), t.text()));
        }
        let st = &cg.stat;
        for (name, v) in [
            ("cg anon", st.anon),
            ("cg file", st.file),
            ("cg shmem", st.shmem),
            ("cg kernel", st.kernel),
            ("cg sock", st.sock),
            ("cg ptables", st.pagetables),
        ] {
            if let Some(v) = v {
                out.push((row(name, fmt_bytes(v)), t.dim()));
            }
        }
    }
    if let Some(p) = provetop_shared::metric::psi_of(k).and_then(|p| p.memory.as_ref()) {
        let full = p
            .full
            .as_ref()
            .map_or(String::new(), |f| format!(" full {:.1}%", f.avg10));
        out.push((format!("psi mem {:.1}%{full}", p.some.avg10), t.dim()));
    }
    out
}

/// The baseline's RSS at the cursor and the difference to the shown RSS `rss`: "base rss
/// 3.2 GiB", "Δ rss +200.0 MiB (+6.2%)".
fn baseline_lines(app: &App, c: u64, rss: u64) -> Vec<(String, Style)> {
    let Some(b) = &app.baseline else {
        return Vec::new();
    };
    let dim = app.theme.dim();
    let Some((lo, hi)) = b.value_at(&app.model, c).and_then(|r| r.range(Metric::Rss)) else {
        return vec![(format!("{:<10} {:>10}", "base rss", "-"), dim)];
    };
    let v = if lo == hi {
        fmt_bytes(hi)
    } else {
        format!("{}–{}", short_bytes(lo), short_bytes(hi))
    };
    let d = delta(hi as f64, rss as f64);
    vec![
        (format!("{:<10} {v:>10}", "base rss"), dim),
        (
            format!(
                "{:<10} {:>10} ({})",
                "Δ rss",
                fmt_signed(d.diff, |mag| fmt_bytes(mag as u64)),
                fmt_pct(&d)
            ),
            app.theme.bold(),
        ),
    ]
}
