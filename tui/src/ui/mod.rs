//! Drawing: the whole screen from an [`App`], into any ratatui backend.
//!
//! ```text
//!  header     child state, pid, backend, mode, proofs, s/proof, phase, SRS, uptime, drops
//!  ─ memory ─ legend (values now, or under the cursor)
//!  chart      RSS band + interval-peak envelope, anon/file/shmem, pinned, GPU, seed bands
//!  ─ usage ─  cores busy (tree, host), GPU utilisation and memory: only with such readings
//!  usage      one line per resource, or per GPU on a tall screen (same time axis)
//!  ─ phases ─
//!  timeline   Gantt rows per phase/partition (events) or per threshold phase
//!  ─ log ─
//!  log        events, alerts, controls, child lifecycle
//!  [position bar: replay only]
//!  footer     key hints, messages
//! ```
//!
//! Overlays: help (`?`), the batch modes (`m`), the process table (`t`).

pub mod chart;
pub mod header;
pub mod help;
pub mod log;
pub mod modes;
pub mod posbar;
pub mod procs;
pub mod timeline;
pub mod usage;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use provetop_shared::units::{GIB, KIB, MIB, TIB};

use crate::app::{App, Drawn, Screen, NS};

/// How long a footer message stays.
pub const FLASH_FOR: std::time::Duration = std::time::Duration::from_secs(4);

/// Smallest screen drawn in full.
pub const MIN_W: u16 = 40;
/// Smallest screen height drawn in full.
pub const MIN_H: u16 = 12;

/// Rows of each part of the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub header: Rect,
    /// Chart with its title and axis.
    pub chart: Rect,
    /// Utilisation panel with its title (zero height without utilisation data).
    pub usage: Rect,
    /// Timeline with its title.
    pub timeline: Rect,
    /// Log with its title.
    pub log: Rect,
    /// Replay position bar (zero height live).
    pub posbar: Rect,
    pub footer: Rect,
    /// Width of the label gutter left of the plot.
    pub gutter: u16,
}

fn row(area: Rect, y: u16, h: u16) -> Rect {
    Rect::new(area.x, area.y + y, area.width, h)
}

/// Rows the chart keeps, title and axis included, when the utilisation panel takes a form.
const CHART_KEEPS: u16 = 7;
/// Rows the chart keeps for the panel's full form (one line per GPU).
const CHART_KEEPS_FULL: u16 = 20;

/// The widest of a column's header and cells, in characters.
pub(crate) fn column_width(header: &str, cells: &[String]) -> usize {
    cells
        .iter()
        .map(|c| c.chars().count())
        .chain([header.chars().count()])
        .max()
        .unwrap_or(0)
}

/// Leave out whole columns until the rest `fits`: the highest `rank` first, the rightmost
/// of equals; a column of rank 0 is never left out.
pub(crate) fn drop_columns<C>(
    cols: &mut Vec<C>,
    rank: impl Fn(&C) -> u8,
    fits: impl Fn(&[C]) -> bool,
) {
    while !fits(cols) {
        let Some(i) = (0..cols.len())
            .filter(|&i| rank(&cols[i]) > 0)
            .max_by_key(|&i| (rank(&cols[i]), i))
        else {
            break;
        };
        cols.remove(i);
    }
}

/// Lay the screen out; `timeline_rows` is how many Gantt rows the data would like, `usage`
/// the utilisation panel's heights (compact, full; see [`usage::heights`]). The panel's rows
/// come out of the chart's: its full form while the chart keeps 20 rows, else its compact
/// form, else its title and one strip, else its title line alone, while the chart keeps 7.
pub fn layout(area: Rect, replay: bool, timeline_rows: u16, usage: (u16, u16)) -> Layout {
    let header_h = 2;
    let footer_h = 1;
    let pos_h = u16::from(replay);
    let rest = area.height.saturating_sub(header_h + footer_h + pos_h);
    let log_h = (rest / 5).clamp(3, 12) + 1;
    // A fifth of the rows; on a tall screen up to two fifths, as long as the chart keeps
    // 20 (one row per partition of an 8-partition proof beside the other phases).
    let tall = rest.saturating_sub(log_h + 20).min(rest * 2 / 5);
    let tl_rows = timeline_rows.clamp(1, (rest / 5).clamp(2, 16).max(tall));
    let tl_h = tl_rows + 1;
    let mut chart_h = rest.saturating_sub(log_h + tl_h);
    let (compact, full) = usage;
    let usage_h = if compact == 0 {
        0
    } else if chart_h >= full + CHART_KEEPS_FULL {
        full
    } else if chart_h >= compact + CHART_KEEPS {
        compact
    } else if compact > 2 && chart_h >= 2 + CHART_KEEPS {
        // One strip at least (the title and its first line) while the chart keeps its 7.
        2
    } else if chart_h > CHART_KEEPS {
        1
    } else {
        0
    };
    chart_h -= usage_h;
    // The rows from the top, each under the one before.
    let mut y = 0;
    let mut next = |h: u16| {
        let r = row(area, y, h);
        y += h;
        r
    };
    let [header, chart, usage, timeline, log, posbar] =
        [header_h, chart_h, usage_h, tl_h, log_h, pos_h].map(&mut next);
    let below = header_h + chart_h + usage_h + tl_h + log_h + pos_h;
    let footer = row(area, below, footer_h.min(area.height.saturating_sub(below)));
    let gutter = if area.width >= 120 { 12 } else { 11 };
    Layout {
        header,
        chart,
        usage,
        timeline,
        log,
        posbar,
        footer,
        gutter,
    }
}

/// Draw the whole screen; returns what the next key needs to know of it.
pub fn draw(f: &mut Frame, app: &App) -> Drawn {
    let area = f.area();
    let buf = f.buffer_mut();
    if area.width < MIN_W || area.height < MIN_H {
        let msg = format!(
            "provetop needs at least {MIN_W}×{MIN_H} (this is {}×{}); q quits",
            area.width, area.height
        );
        buf.set_stringn(area.x, area.y, msg, area.width as usize, Style::default());
        return app.view.drawn;
    }
    let replay = matches!(app.screen, Screen::Replay(_));
    let (t0, t1) = app.window();
    let rows = timeline::rows(app, t0, t1, 64);
    let heights = usage::heights(app);
    let mut l = layout(area, replay, rows.len() as u16, heights);
    // The rows may fold to fewer lines than were set aside for them: the chart takes the rest.
    let lines = l.timeline.height.saturating_sub(1) as usize;
    let used = timeline::lines_used(app, &rows, lines);
    if used < lines {
        l = layout(area, replay, used as u16, heights);
    }
    let mut drawn = Drawn {
        plot_cols: l.chart.width.saturating_sub(l.gutter),
        help_scroll_max: 0,
        procs_scroll_max: 0,
        areas: crate::areas::Areas {
            chart: l.chart,
            usage: l.usage,
            timeline: l.timeline,
            log: l.log,
            gutter: l.gutter,
            ..Default::default()
        },
    };
    header::draw(buf, l.header, app);
    crate::mouse::header_targets(buf, l.header, &mut drawn.areas);
    chart::draw(buf, l.chart, l.gutter, app);
    usage::draw(
        buf,
        l.usage,
        l.gutter,
        app,
        usage::rows_for(app, l.usage.height),
    );
    timeline::draw(buf, l.timeline, l.gutter, app, &rows);
    log::draw(buf, l.log, app);
    if let Screen::Replay(p) = &app.screen {
        posbar::draw(buf, l.posbar, app, p);
    }
    footer(buf, l.footer, app, &mut drawn.areas);
    timeline_targets(l.timeline, l.gutter, &mut drawn.areas);
    if app.view.procs {
        drawn.procs_scroll_max = procs::draw(buf, area, app);
    }
    if app.view.modes {
        modes::draw(buf, area, app);
    }
    if app.view.log_line && !app.view.help {
        log::draw_whole(buf, area, app);
    }
    if app.view.help {
        drawn.help_scroll_max = help::draw(buf, area, app);
    }
    drawn
}

/// A cleared, bordered box of `w`×`h` in the middle of `area` with `title` on its top
/// border (help and the modes table draw into it); returns the box.
pub fn overlay(buf: &mut Buffer, area: Rect, w: u16, h: u16, title: &str, app: &App) -> Rect {
    let t = &app.theme;
    let (w, h) = (w.min(area.width), h.min(area.height));
    let x = area.x + (area.width - w) / 2;
    let y = area.y + (area.height - h) / 2;
    let rect = Rect::new(x, y, w, h);
    for yy in rect.y..rect.y + rect.height {
        for xx in rect.x..rect.x + rect.width {
            if let Some(c) = buf.cell_mut((xx, yy)) {
                c.reset();
            }
        }
    }
    let dim = t.dim();
    let bottom = rect.y + rect.height - 1;
    for xx in rect.x..rect.x + rect.width {
        buf.set_string(xx, rect.y, "─", dim);
        buf.set_string(xx, bottom, "─", dim);
    }
    for yy in rect.y..=bottom {
        buf.set_string(rect.x, yy, "│", dim);
        buf.set_string(rect.x + rect.width - 1, yy, "│", dim);
    }
    buf.set_string(rect.x, rect.y, "┌", dim);
    buf.set_string(rect.x + rect.width - 1, rect.y, "┐", dim);
    buf.set_string(rect.x, bottom, "└", dim);
    buf.set_string(rect.x + rect.width - 1, bottom, "┘", dim);
    buf.set_stringn(
        rect.x + 2,
        rect.y,
        title,
        rect.width.saturating_sub(4) as usize,
        t.bold(),
    );
    rect
}

/// One item of a header or title line: shown whole or left out whole (a cut value reads as
/// another value: "gpu 6" for 6.41G), possibly in a narrower form first. Each form has a
/// rank: while the line is too wide, the shown form of highest rank gives way (to the item's
/// next form, or out); among equal ranks, the later item.
pub struct Item<'a> {
    forms: Vec<(u8, Vec<Span<'a>>)>,
}

impl<'a> Item<'a> {
    pub fn new(rank: u8, spans: Vec<Span<'a>>) -> Self {
        Self {
            forms: vec![(rank, spans)],
        }
    }

    /// A narrower form, used when the wider one has to give way.
    pub fn or(mut self, rank: u8, spans: Vec<Span<'a>>) -> Self {
        self.forms.push((rank, spans));
        self
    }
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| s.width()).sum()
}

/// The spans of `items` that fit in `room` columns, in order.
pub fn fit(items: Vec<Item<'_>>, room: usize) -> Vec<Span<'_>> {
    // Per item: index of the form shown, or None once left out.
    let mut shown: Vec<Option<usize>> = vec![Some(0); items.len()];
    let width = |shown: &[Option<usize>]| -> usize {
        items
            .iter()
            .zip(shown)
            .filter_map(|(it, f)| f.map(|f| spans_width(&it.forms[f].1)))
            .sum()
    };
    while width(&shown) > room {
        let Some(i) = (0..items.len())
            .filter(|&i| shown[i].is_some())
            .max_by_key(|&i| (items[i].forms[shown[i].unwrap_or(0)].0, i))
        else {
            break;
        };
        let next = shown[i].map_or(0, |f| f + 1);
        shown[i] = (next < items[i].forms.len()).then_some(next);
    }
    items
        .into_iter()
        .zip(shown)
        .filter_map(|(mut it, f)| f.map(|f| it.forms.swap_remove(f).1))
        .flatten()
        .collect()
}

/// A section title on the first row of `area`: `─ name ─ items … ───`, items that do not
/// fit left out whole.
pub fn title_line(buf: &mut Buffer, area: Rect, app: &App, name: &str, items: Vec<Item<'_>>) {
    if area.height == 0 {
        return;
    }
    let dim = app.theme.dim();
    let mut spans = vec![
        Span::styled("─ ", dim),
        Span::styled(name.to_string(), app.theme.bold()),
    ];
    let sep = Span::styled(" ─ ", dim);
    // The space before the fill may fall off the edge: items end at the last column.
    let fixed: usize = spans_width(&spans) + sep.width();
    let kept = fit(items, (area.width as usize).saturating_sub(fixed));
    if !kept.is_empty() {
        spans.push(sep);
        spans.extend(kept);
    }
    spans.push(Span::raw(" "));
    let used: usize = spans.iter().map(|s| s.width()).sum();
    let fill = (area.width as usize).saturating_sub(used);
    spans.push(Span::styled("─".repeat(fill), dim));
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}

/// A click on a timeline row's name opens the modes table (the phases of each mode compared).
fn timeline_targets(area: Rect, gutter: u16, areas: &mut crate::areas::Areas) {
    if area.height > 1 {
        let names = Rect::new(area.x, area.y + 1, gutter, area.height - 1);
        areas.target(names, crate::app::Action::Modes);
    }
}

fn footer(buf: &mut Buffer, area: Rect, app: &App, areas: &mut crate::areas::Areas) {
    if area.height == 0 {
        return;
    }
    let t = &app.theme;
    let mut spans: Vec<Span> = Vec::new();
    if let Some((at, text)) = &app.view.mark {
        // The mark being typed takes the footer.
        let when = fmt_clock(at.saturating_sub(app.origin), true);
        let spans = vec![
            Span::styled(format!("mark at {when}: "), t.bold()),
            Span::raw(text.clone()),
            Span::styled("▏", t.bold()),
            Span::styled("  Enter adds · Esc drops", t.dim()),
        ];
        buf.set_line(area.x, area.y, &Line::from(spans), area.width);
        return;
    }
    if app.view.frozen.is_some() {
        spans.push(Span::styled(" FROZEN ", t.cursor()));
        spans.push(Span::raw(" "));
    }
    let fresh = app.flash.as_ref().filter(|fl| fl.at.elapsed() < FLASH_FOR);
    if let Some(fl) = fresh {
        let style = if fl.error { t.bad() } else { t.bold() };
        spans.push(Span::styled(fl.text.clone(), style));
        spans.push(Span::raw("  "));
    }
    // Hints whole or not at all, the later ones first (`?` lists them all); each one's
    // trailing space may fall off the edge.
    // The prover's keys once the child has said it speaks the protocol.
    let prover_keys = app.model.has_events();
    let items = crate::keymap::hints_for(app.sections(), prover_keys)
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            Item::new(
                i.min(u8::MAX as usize) as u8,
                vec![
                    Span::styled(h.keys.to_string(), t.bold()),
                    Span::styled(format!(":{} ", h.what), t.dim()),
                ],
            )
        })
        .collect();
    let room = (area.width as usize + 1).saturating_sub(spans_width(&spans));
    let lead = spans.len();
    spans.extend(fit(items, room));
    // Each hint kept is its keys' span then its ":what " span: a click on either is its key.
    let mut x = area.x + spans_width(&spans[..lead]) as u16;
    let sections = app.sections();
    for pair in spans[lead..].chunks(2) {
        let w = spans_width(pair) as u16;
        if let Some(a) = crate::keymap::hint_action(sections, &pair[0].content) {
            let w = w.min((area.x + area.width).saturating_sub(x));
            areas.target(Rect::new(x, area.y, w, 1), a);
        }
        x = x.saturating_add(w);
    }
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}

/// A mark's text as a live session records it: the text, and the cursor's session time when
/// the mark was put back in time (the note itself is recorded now; more than a second back,
/// the text says where it belongs).
pub fn mark_text(app: &App, at: u64, text: &str) -> String {
    if app.clock.saturating_sub(at) > NS {
        format!(
            "{text} (at {})",
            fmt_clock(at.saturating_sub(app.origin), true)
        )
    } else {
        text.to_string()
    }
}

/// Compact bytes for tight places: "0", "512K", "1.5M", "12.3G", "203G".
pub fn short_bytes(b: u64) -> String {
    let (v, unit) = if b < KIB {
        return format!("{b}B");
    } else if b < MIB {
        (b as f64 / KIB as f64, "K")
    } else if b < GIB {
        (b as f64 / MIB as f64, "M")
    } else if b < TIB {
        (b as f64 / GIB as f64, "G")
    } else {
        (b as f64 / TIB as f64, "T")
    };
    if v < 10.0 {
        format!("{v:.2}{unit}")
    } else if v < 100.0 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

/// Session time for labels: "0:05", "1:05", "1:02:03"; with tenths when `fine`.
pub fn fmt_clock(ns: u64, fine: bool) -> String {
    let s = ns / NS;
    let (h, m, sec) = (s / 3600, (s / 60) % 60, s % 60);
    let tenth = (ns % NS) / (NS / 10);
    let base = if h > 0 {
        format!("{h}:{m:02}:{sec:02}")
    } else {
        format!("{m}:{sec:02}")
    };
    if fine {
        format!("{base}.{tenth}")
    } else {
        base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(spans: &[Span<'_>]) -> String {
        spans.iter().map(|s| s.content.as_ref()).collect()
    }

    /// Items give way by rank (later first among equals), narrower forms before leaving out,
    /// and nothing is ever cut.
    #[test]
    fn fit_leaves_items_out_whole_by_rank() {
        let items = || {
            vec![
                Item::new(0, vec![Span::raw("state")]),
                Item::new(3, vec![Span::raw(" aaaa")]),
                Item::new(8, vec![Span::raw(" rate long")]).or(5, vec![Span::raw(" r")]),
                Item::new(3, vec![Span::raw(" bbbb")]),
            ]
        };
        assert_eq!(text(&fit(items(), 100)), "state aaaa rate long bbbb");
        assert_eq!(text(&fit(items(), 24)), "state aaaa r bbbb");
        assert_eq!(text(&fit(items(), 15)), "state aaaa bbbb");
        assert_eq!(text(&fit(items(), 14)), "state aaaa");
        assert_eq!(text(&fit(items(), 5)), "state");
        // At worst nothing is shown, never a cut item.
        assert_eq!(text(&fit(items(), 2)), "");
    }

    #[test]
    fn formats() {
        assert_eq!(short_bytes(0), "0B");
        assert_eq!(short_bytes(512 * KIB), "512K");
        assert_eq!(short_bytes(3 * MIB / 2), "1.50M");
        assert_eq!(short_bytes(203 * GIB), "203G");
        assert_eq!(short_bytes(12 * GIB + 300 * MIB), "12.3G");
        assert_eq!(fmt_clock(65 * NS + NS / 2, true), "1:05.5");
        assert_eq!(fmt_clock(3723 * NS, false), "1:02:03");
    }

    #[test]
    fn a_replay_at_80x24_keeps_a_usage_strip_beside_four_timeline_rows() {
        let l = layout(Rect::new(0, 0, 80, 24), true, 4, (4, 7));
        assert_eq!(l.timeline.height, 5, "{l:?}");
        assert_eq!(l.usage.height, 2, "{l:?}");
        assert!(l.chart.height >= CHART_KEEPS, "{l:?}");
        assert_eq!(l.footer.y, 23);
        // 200×60 beside a timeline of sixteen partitions and more: the compact form.
        let l = layout(Rect::new(0, 0, 200, 60), true, 24, (5, 9));
        assert!(l.timeline.height >= 17, "{l:?}");
        assert_eq!(l.usage.height, 5, "{l:?}");
    }

    #[test]
    fn layout_80x24_fits() {
        let l = layout(Rect::new(0, 0, 80, 24), false, 3, (0, 0));
        assert_eq!(l.footer.y, 23);
        assert!(l.chart.height >= 8, "{l:?}");
        let l = layout(Rect::new(0, 0, 80, 24), true, 9, (0, 0));
        assert_eq!(l.footer.y, 23);
        assert_eq!(l.posbar.height, 1);
        assert!(l.chart.height >= 7, "{l:?}");
        assert_eq!(l.usage.height, 0);
    }

    #[test]
    fn the_usage_panel_takes_its_rows_from_the_chart_in_the_form_that_fits() {
        let small = Rect::new(0, 0, 80, 24);
        let plain = layout(small, false, 3, (0, 0));
        // 80×24: the compact form (title and three lines), the chart keeps 8.
        let l = layout(small, false, 3, (4, 7));
        assert_eq!(l.usage.height, 4, "{l:?}");
        assert_eq!(l.chart.height, plain.chart.height - 4);
        assert_eq!(l.usage.y, l.chart.y + l.chart.height);
        assert_eq!(l.timeline.y, l.usage.y + 4);
        assert_eq!(l.footer.y, 23);
        // 200×60: each GPU its lines.
        let l = layout(Rect::new(0, 0, 200, 60), false, 9, (4, 7));
        assert_eq!(l.usage.height, 7, "{l:?}");
        assert!(l.chart.height >= 20);
        // Eight GPUs on 200×60: the full form would leave the chart too few rows.
        let l = layout(Rect::new(0, 0, 200, 60), false, 9, (4, 19));
        assert_eq!(l.usage.height, 4, "{l:?}");
        // Less room: the title and one strip, then the title line alone (the chart keeps
        // its 7), then nothing.
        let l = layout(Rect::new(0, 0, 80, 20), false, 3, (4, 7));
        assert_eq!(l.usage.height, 2, "{l:?}");
        assert!(l.chart.height >= CHART_KEEPS, "{l:?}");
        let l = layout(Rect::new(0, 0, 80, 19), false, 3, (4, 7));
        assert_eq!(l.usage.height, 1, "{l:?}");
        assert!(l.chart.height >= CHART_KEEPS, "{l:?}");
        let l = layout(Rect::new(0, 0, 80, 16), false, 3, (4, 7));
        assert_eq!(l.usage.height, 0, "{l:?}");
    }
}
