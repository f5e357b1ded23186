//! The phase timeline (Gantt), on the chart's time axis.
//!
//! With prover events: one row per phase and partition (grouped per phase when the screen is
//! short), each interval a bar at half-cell resolution. Without events: one row per
//! threshold phase of the seed classifier (or one shaded row when even those do not fit).
//! With a baseline (`--baseline`), its phases follow as a second, dim row set when there is
//! room: one row per phase, else one lettered row, else none.
//!
//! The parts: `rows.rs` which rows the data wants and which of them fit; `legend.rs` the
//! letters and shades rows are drawn with and the legend naming them; `axis.rs` the window's
//! time axis over the plot and the bars and lettered cells drawn on it; `baseline.rs` the
//! baseline's rows; `marks.rs` the warnings, mode switches and cursor over the rows. This
//! file draws the title and the shown session's rows.

mod axis;
mod baseline;
mod legend;
mod marks;
mod rows;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;

use provetop_shared::Phase;

use crate::app::App;
use crate::text::inert;
use crate::ui::{title_line, Item};
use axis::{distinct_labels, gutter_label, Axis};
use baseline::baseline_rows;
use legend::shade;
pub use legend::{legend, letter, Letters};
use marks::{cursor_column, kernel_marks, mode_marks, warning_marks};
use rows::{fit, prover_phases, Fit};
pub use rows::{rows, short_phase, Group, RowKey};

/// The Gantt lines `wanted` fills when given `h`: fewer than `h` when it falls back to a
/// coarser form (ten partitions that do not fit one row each fold to one row per phase), so
/// the layout can give the lines left over back to the chart.
pub fn lines_used(app: &App, wanted: &[RowKey], h: usize) -> usize {
    let f = fit(wanted, h, prover_phases(&app.model));
    f.rows.len() + f.base_rows.len()
}

/// Draw the title row and the Gantt rows into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, gutter: u16, app: &App, wanted: &[RowKey]) {
    if area.height == 0 || area.width <= gutter + 1 {
        return;
    }
    let h = (area.height - 1) as usize;
    let fit = fit(wanted, h, prover_phases(&app.model));
    title_line(buf, area, app, "phases", title_items(app, &fit));
    if fit.rows.is_empty() || fit.single_threshold_row {
        if area.height < 2 {
            return;
        }
        if fit.single_threshold_row {
            threshold_row(buf, area, gutter, app);
        } else {
            let msg = if prover_phases(&app.model) {
                "no phase in this window"
            } else {
                "waiting for samples"
            };
            let dim = app.theme.dim();
            buf.set_stringn(
                area.x + gutter,
                area.y + 1,
                msg,
                (area.width - gutter) as usize,
                dim,
            );
        }
        cursor_column(buf, area, gutter, app);
        return;
    }
    let labels: Vec<String> = fit.rows.iter().map(RowKey::label).collect();
    let labels = distinct_labels(&labels, (gutter - 1) as usize);
    let letters = window_letters(app);
    for (i, (key, label)) in fit.rows.iter().zip(&labels).enumerate() {
        let y = area.y + 1 + i as u16;
        row(buf, area, gutter, app, y, (key, label, &letters));
    }
    baseline_rows(buf, area, gutter, app, &fit.base_rows, fit.rows.len());
    mode_marks(buf, area, gutter, app);
    warning_marks(buf, area, gutter, app);
    kernel_marks(buf, area, gutter, app);
    cursor_column(buf, area, gutter, app);
}

/// What the title says: the proof and its phases (and the legend of lettered rows, and how
/// many rows are left out), or the thresholds the rows are cut by.
fn title_items<'a>(app: &'a App, fit: &Fit) -> Vec<Item<'a>> {
    let t = &app.theme;
    let m = &app.model;
    let (t0, t1) = app.window();
    let mut items: Vec<Item> = Vec::new();
    if !prover_phases(m) {
        let th = m.thresholds();
        items.push(Item::new(
            0,
            vec![Span::styled(
                format!(
                    "by RSS thresholds {}/{}/{}/{} GiB",
                    th.idle, th.gpu, th.synth, th.peak
                ),
                t.dim(),
            )],
        ));
        return items;
    }
    if let Some(p) = m.proofs.running.last() {
        items.push(Item::new(
            2,
            vec![
                Span::styled(format!("proof {} ", p.proof_id), t.dim()),
                Span::styled(inert(&m.current_phase_text()).into_owned(), t.bold()),
            ],
        ));
    } else if let Some(p) = m.proofs.finished.back() {
        items.push(Item::new(
            2,
            vec![Span::styled(format!("last proof {} ", p.proof_id), t.dim())],
        ));
    }
    if !m.has_events() {
        let from = if m.has_derived() {
            "from its log lines "
        } else {
            "from NVTX ranges "
        };
        items.push(Item::new(2, vec![Span::styled(from.to_string(), t.dim())]));
    }
    if fit.lettered {
        // Every letter a lettered row draws in this window.
        let drawn: Vec<&Phase> = m
            .spans_in(t0, t1)
            .filter(|s| {
                fit.rows.iter().any(|r| match r {
                    RowKey::Group(g) => Group::of(&s.phase) == *g,
                    RowKey::Rest(g) => Group::of(&s.phase) == *g && s.partition.is_none(),
                    _ => false,
                })
            })
            .map(|s| &s.phase)
            .collect();
        // It stays longer than the proof's name: without it the letters say nothing.
        let letters = window_letters(app);
        let text = |short| format!("  {}", legend(drawn.iter().copied(), short, &letters));
        items.push(
            Item::new(1, vec![Span::styled(text(false), t.dim())])
                .or(0, vec![Span::styled(text(true), t.dim())]),
        );
    }
    if fit.hidden > 0 {
        items.push(Item::new(
            1,
            vec![Span::styled(format!("  +{} rows", fit.hidden), t.dim())],
        ));
    }
    items
}

/// The one shaded row of every threshold phase (when one row per phase does not fit).
fn threshold_row(buf: &mut Buffer, area: Rect, gutter: u16, app: &App) {
    let t = &app.theme;
    let (t0, t1) = app.window();
    let y = area.y + 1;
    let plot_x = area.x + gutter;
    let axis = Axis::new(area, gutter, app);
    buf.set_stringn(
        area.x,
        y,
        format!("{:>w$}│", "threshold", w = (gutter - 1) as usize),
        gutter as usize,
        t.dim(),
    );
    for r in app.model.runs_in(t0, t1) {
        if r.end < t0 || r.start > t1 {
            continue;
        }
        let (a, b) = (axis.half(r.start) / 2, axis.half(r.end) / 2);
        for x in a..=b {
            if let Some(cell) = buf.cell_mut((plot_x + x as u16, y)) {
                cell.set_char(shade(r.phase))
                    .set_style(t.threshold_phase(r.phase));
            }
        }
    }
}

/// One of the shown session's rows, at line `y`.
/// The letters of the phases in the window (the rows and the title's legend agree).
fn window_letters(app: &App) -> Letters {
    let (t0, t1) = app.window();
    Letters::of(app.model.spans_in(t0, t1).map(|s| &s.phase))
}

type Row<'a> = (&'a RowKey, &'a str, &'a Letters);

fn row(buf: &mut Buffer, area: Rect, gutter: u16, app: &App, y: u16, row: Row<'_>) {
    let (key, label, letters) = row;
    let t = &app.theme;
    let m = &app.model;
    let (t0, t1) = app.window();
    let axis = Axis::new(area, gutter, app);
    // Open spans run to the latest time seen.
    let now = app.clock.max(m.now());
    gutter_label(buf, area, gutter, y, label, t.dim());
    if let RowKey::Group(g) | RowKey::Rest(g) = key {
        // Each cell shows the innermost (latest started) phase of the group over it.
        let rest = matches!(key, RowKey::Rest(_));
        let best = axis.innermost(
            m.spans_in(t0, t1)
                .filter(|s| Group::of(&s.phase) == *g && !(rest && s.partition.is_some()))
                .map(|s| (s.start, s.end_or(now), &s.phase))
                .filter(|&(_, end, _)| end >= t0),
        );
        axis.letters(
            buf,
            y,
            &best,
            |p| letters.get(p),
            |p| t.phase(p).add_modifier(Modifier::REVERSED),
        );
        return;
    }
    let mut cover = axis.no_cover();
    let style: Style = match key {
        RowKey::Part(p, _) | RowKey::Phase(p) => {
            let mut bars: Vec<(u64, u64)> = m
                .spans_in(t0, t1)
                .filter(|s| match key {
                    RowKey::Part(p2, part) => &s.phase == p2 && s.partition == *part,
                    _ => &s.phase == p,
                })
                .map(|s| (s.start, s.end_or(now)))
                .filter(|&(_, end)| end >= t0)
                .collect();
            bars.sort_unstable();
            for &(start, end) in &bars {
                axis.cover(&mut cover, start, end);
            }
            axis.part(&mut cover, &bars);
            t.phase(p)
        }
        RowKey::Group(_) | RowKey::Rest(_) | RowKey::Base(_) | RowKey::BaseAll => {
            unreachable!("drawn above or below")
        }
        RowKey::Threshold(ph) => {
            for r in m.runs_in(t0, t1) {
                if r.phase == *ph && r.end >= t0 && r.start <= t1 {
                    axis.cover(&mut cover, r.start, r.end);
                }
            }
            t.threshold_phase(*ph)
        }
    };
    axis.bar(buf, y, &cover, '█', style);
}
