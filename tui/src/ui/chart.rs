//! The memory chart: braille plot of every series over the time window.
//!
//! Each plot column (two braille dots per cell) is the min/max of the samples that fall in
//! it (see [`crate::series::Series::columns`]), drawn as a vertical stroke joined to its
//! neighbour, so a spike of one sample stays visible at any zoom. RSS is the main stroke, the
//! interval peak (VmHWM, reset every sample) its upper envelope; anon, file, shmem, pinned
//! and GPU memory are thinner layers under it; threshold lines are dashed. A baseline
//! (`--baseline`, [`crate::baseline`]) is a dim dotted line of its RSS top with its
//! peak envelope, under everything else, on the same scale; the cursor box gives its value
//! and the difference.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;

use provetop_shared::units::{fmt_bytes, GIB, KIB, MIB};

use crate::app::{App, Screen, NS};
use crate::delta::{delta, fmt_pct, fmt_signed};
use crate::series::{Bucket, Metric, Reading};
use crate::ui::{fmt_clock, short_bytes, title_line, Item};

/// A grid of braille cells; dot (x, y) with y = 0 at the bottom.
pub struct Braille {
    w: u16,
    h: u16,
    bits: Vec<u8>,
    style: Vec<Style>,
}

impl Braille {
    /// Empty grid of `w`×`h` cells.
    pub fn new(w: u16, h: u16) -> Self {
        let n = w as usize * h as usize;
        Braille {
            w,
            h,
            bits: vec![0; n],
            style: vec![Style::default(); n],
        }
    }

    /// Dots across.
    pub fn dots_w(&self) -> u32 {
        self.w as u32 * 2
    }

    /// Dots down.
    pub fn dots_h(&self) -> u32 {
        self.h as u32 * 4
    }

    /// Set one dot.
    pub fn set(&mut self, x: u32, y: u32, style: Style) {
        if x >= self.dots_w() || y >= self.dots_h() {
            return;
        }
        let yt = self.dots_h() - 1 - y; // from the top
        let (cx, cy) = ((x / 2) as usize, (yt / 4) as usize);
        let (dx, dy) = (x % 2, yt % 4);
        const MAP: [[u8; 4]; 2] = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];
        let i = cy * self.w as usize + cx;
        self.bits[i] |= MAP[dx as usize][dy as usize];
        self.style[i] = style;
    }

    /// A vertical stroke from `y0` to `y1` (inclusive, any order).
    pub fn vline(&mut self, x: u32, y0: u32, y1: u32, style: Style) {
        for y in y0.min(y1)..=y0.max(y1) {
            self.set(x, y, style);
        }
    }

    /// Paint into a buffer at `area` (same size as the grid).
    pub fn render(&self, buf: &mut Buffer, area: Rect) {
        for cy in 0..self.h.min(area.height) {
            for cx in 0..self.w.min(area.width) {
                let i = cy as usize * self.w as usize + cx as usize;
                if self.bits[i] != 0 {
                    let ch = char::from_u32(0x2800 + self.bits[i] as u32).unwrap_or(' ');
                    if let Some(cell) = buf.cell_mut((area.x + cx, area.y + cy)) {
                        cell.set_char(ch).set_style(self.style[i]);
                    }
                }
            }
        }
    }
}

/// A "nice" axis maximum ≥ `v`: 1, 2, 2.5, 5 × 10^k of the unit that fits.
pub fn nice_max(v: u64) -> u64 {
    let v = v.max(MIB);
    let unit = if v >= GIB {
        GIB
    } else if v >= MIB {
        MIB
    } else {
        KIB
    };
    let x = v as f64 / unit as f64;
    let p = 10f64.powf(x.log10().floor());
    let m = [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .into_iter()
        .find(|m| m * p >= x - 1e-9)
        .unwrap_or(10.0);
    (m * p * unit as f64).ceil() as u64
}

/// A round tick step (ns) giving at most `max_ticks` ticks over `span`.
pub fn tick_step(span: u64, max_ticks: u64) -> u64 {
    const STEPS: &[u64] = &[
        1,
        2,
        5,
        10,
        15,
        30,
        60,
        120,
        300,
        600,
        900,
        1800,
        3600,
        7200,
        3 * 3600,
        6 * 3600,
        12 * 3600,
        86400,
    ];
    let max_ticks = max_ticks.max(1);
    if let Some(s) = STEPS.iter().map(|s| s * NS).find(|s| span / s <= max_ticks) {
        return s;
    }
    // Longer than days (a damaged or absurd clock): 1, 2, 5 × 10^k days, up to what a u64
    // holds, so there are never more than `max_ticks` ticks.
    let mut unit = 86400 * NS;
    loop {
        for m in [1, 2, 5] {
            let s = unit.saturating_mul(m);
            if span / s <= max_ticks || s == u64::MAX {
                return s;
            }
        }
        unit = unit.saturating_mul(10);
    }
}

/// Series drawn, bottom layer first.
fn layers(app: &App) -> &'static [Metric] {
    if app.theme.color {
        &[
            Metric::File,
            Metric::Shmem,
            Metric::Anon,
            Metric::Gpu,
            Metric::Pinned,
            Metric::PinnedReported,
            Metric::Rss,
            Metric::Peak,
        ]
    } else {
        // Without colour only distinct shapes are readable: the RSS stroke and its peaks.
        &[Metric::Rss, Metric::Peak]
    }
}

/// Horizontal lines: the seed's threshold bands and alert rules, with labels. A band's line
/// is where RSS enters it, so its label names the band and says "≥" ("band
/// gpu_or_transition ≥ 50.0G"; "band gpu ≥ 50.0G" on a narrow plot): it must not read as a
/// measurement beside the GPU series.
fn lines(app: &App, wide: bool) -> Vec<(String, u64)> {
    let names: [&str; 4] = if wide {
        ["idle_post", "gpu_or_transition", "synth", "peak_synth"]
    } else {
        ["idle", "gpu", "synth", "peak"]
    };
    let mut v: Vec<(String, u64)> = names
        .iter()
        .zip(app.model.thresholds().lines_bytes())
        .map(|(n, b)| (format!(" band {n} ≥ {}", short_bytes(b)), b))
        .collect();
    // An alert rule's line: its label and value.
    v.extend(
        app.rule_lines
            .iter()
            .map(|(n, b)| (format!(" {n} {}", short_bytes(*b)), *b)),
    );
    v
}

/// Legend items: values of a reading. On a narrow screen the least telling go first (file,
/// shmem, the prover's own pinned report), RSS and its peak last.
fn legend(app: &App, r: Option<&Reading>) -> Vec<Item<'static>> {
    let t = &app.theme;
    let Some(r) = r else {
        return vec![Item::new(0, vec![Span::styled("no samples yet", t.dim())])];
    };
    let mut out = Vec::new();
    for (m, name, rank) in Metric::legend() {
        if let Some((_, hi)) = r.range(m) {
            // Spaces lead (none before the first): the last value may end at the edge.
            let lead = if out.is_empty() { "" } else { " " };
            let sep = if m == Metric::Peak { "" } else { " " };
            out.push(Item::new(
                rank,
                vec![
                    Span::styled(format!("{lead}{name}{sep}"), t.metric(m)),
                    Span::raw(short_bytes(hi)),
                ],
            ));
        }
    }
    out
}

/// Draw the chart (title/legend row, plot, time axis) into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, gutter: u16, app: &App) {
    if area.height < 3 || area.width <= gutter + 2 {
        return;
    }
    let t = &app.theme;
    let (t0, t1) = app.window();
    let plot = Rect::new(
        area.x + gutter,
        area.y + 1,
        area.width - gutter,
        area.height - 2,
    );
    title(buf, Rect::new(area.x, area.y, area.width, 1), app);

    let mut grid = Braille::new(plot.width, plot.height);
    let ncols = grid.dots_w() as usize;
    let cols: Vec<Bucket> = app.model.columns(t0, t1, ncols);
    let layers = drawn_layers(app, &cols);
    let base_cols: Option<Vec<Bucket>> = app
        .baseline
        .as_ref()
        .map(|b| b.columns(&app.model, t0, t1, ncols));
    let (scale, hlines) = scale(app, plot, &grid, &cols, &layers, base_cols.as_deref());

    threshold_lines(&mut grid, &hlines, &scale, app);
    if let Some(bc) = &base_cols {
        baseline_line(&mut grid, bc, &scale, t.dim());
    }
    series(&mut grid, &cols, &layers, &scale, app);
    grid.render(buf, plot);
    threshold_labels(buf, plot, &hlines, &scale, app);
    y_axis(buf, area, plot, gutter, &scale, app);
    x_axis(buf, area, plot, gutter, app);
    cursor(buf, plot, app);
}

/// The title row: the legend's values at the cursor (else the newest), and the baseline's
/// RSS there.
fn title(buf: &mut Buffer, row: Rect, app: &App) {
    let t = &app.theme;
    let m = &app.model;
    let cursor = app.cursor();
    let latest = m.last_point().map(|p| Reading::Exact(*p));
    let shown = match cursor {
        Some(c) => m.value_at(c),
        None => latest,
    };
    let mut items = legend(app, shown.as_ref());
    if let Some(b) = &app.baseline {
        let at = cursor.unwrap_or_else(|| shown.map_or(app.clock, |r| r.t()));
        let v = b
            .value_at(m, at)
            .and_then(|r| r.range(Metric::Rss))
            .map(|r| r.1);
        items.push(Item::new(
            3,
            vec![
                Span::styled(format!(" base@{} ", b.align_text()), t.dim()),
                Span::styled(v.map_or("-".into(), short_bytes), t.dim()),
            ],
        ));
    }
    title_line(buf, row, app, "memory", items);
}

/// The layers drawn over `cols`: a series that is zero across the window (no pinned memory,
/// no GPU) would only draw a line over the axis, so it is left out (the legend still gives
/// its value); RSS always stays.
fn drawn_layers(app: &App, cols: &[Bucket]) -> Vec<Metric> {
    layers(app)
        .iter()
        .copied()
        .filter(|l| *l == Metric::Rss || cols.iter().any(|c| c.max(*l).unwrap_or(0) > 0))
        .collect()
}

/// The vertical scale: values from 0 to `top` over the plot's dots, bottom up.
struct Scale {
    top: u64,
    dots_h: u32,
}

impl Scale {
    /// The dot row of value `v` (clamped to the plot).
    fn ydot(&self, v: u64) -> u32 {
        ((v as f64 / self.top as f64) * (self.dots_h - 1) as f64)
            .round()
            .clamp(0.0, (self.dots_h - 1) as f64) as u32
    }
}

/// The scale over the largest drawn value (the baseline's too), and the threshold lines
/// within reach of it, which the scale takes in.
fn scale(
    app: &App,
    plot: Rect,
    grid: &Braille,
    cols: &[Bucket],
    layers: &[Metric],
    base_cols: Option<&[Bucket]>,
) -> (Scale, Vec<(String, u64)>) {
    let data_max = cols
        .iter()
        .flat_map(|c| layers.iter().filter_map(|l| c.max(*l)))
        .chain(
            base_cols
                .into_iter()
                .flatten()
                .flat_map(|c| [c.max(Metric::Rss), c.max(Metric::Peak)])
                .flatten(),
        )
        .max()
        .unwrap_or(0);
    let hlines: Vec<(String, u64)> = lines(app, plot.width >= 100)
        .into_iter()
        .filter(|(_, b)| *b > 0 && (*b as f64) <= data_max as f64 * 1.5)
        .collect();
    let top = nice_max(
        hlines
            .iter()
            .map(|l| l.1)
            .chain([data_max.saturating_add(data_max / 20)])
            .max()
            .unwrap_or(MIB),
    );
    let scale = Scale {
        top,
        dots_h: grid.dots_h(),
    };
    (scale, hlines)
}

/// Threshold lines, dashed across the plot.
fn threshold_lines(grid: &mut Braille, hlines: &[(String, u64)], scale: &Scale, app: &App) {
    for (_, b) in hlines {
        let y = scale.ydot(*b);
        for x in (0..grid.dots_w()).step_by(4) {
            grid.set(x, y, app.theme.threshold());
        }
    }
}

/// Threshold labels at the right end of their line.
fn threshold_labels(
    buf: &mut Buffer,
    plot: Rect,
    hlines: &[(String, u64)],
    scale: &Scale,
    app: &App,
) {
    for (label, b) in hlines {
        let row = plot.y + plot.height - 1 - (scale.ydot(*b) / 4) as u16;
        let w = label.chars().count() as u16;
        let x = plot.x + plot.width.saturating_sub(w);
        buf.set_stringn(x, row, label, w as usize, app.theme.threshold());
    }
}

/// Every layer's strokes, bottom layer first: per column a vertical stroke from its lowest
/// to its highest value, joined to the neighbour; the interval peak only where it rises above
/// the RSS stroke.
fn series(grid: &mut Braille, cols: &[Bucket], layers: &[Metric], scale: &Scale, app: &App) {
    for &layer in layers {
        let style = app.theme.metric(layer);
        let mut prev: Option<(u32, u32)> = None;
        for (x, c) in cols.iter().enumerate() {
            let Some((lo, hi)) = c.range(layer) else {
                prev = None;
                continue;
            };
            let (mut a, mut b) = (scale.ydot(lo), scale.ydot(hi));
            if layer == Metric::Peak {
                // The envelope: only where the interval peak rises above the RSS stroke.
                let rss_hi = c.max(Metric::Rss).map(|v| scale.ydot(v)).unwrap_or(0);
                if b > rss_hi {
                    grid.set(x as u32, b, style);
                }
                continue;
            }
            // Join to the neighbour so a jump is a stroke, not two dots.
            if let Some((pa, pb)) = prev {
                if a > pb {
                    a = pb;
                }
                if b < pa {
                    b = pa;
                }
            }
            grid.vline(x as u32, a, b, style);
            prev = Some((scale.ydot(lo), scale.ydot(hi)));
        }
    }
}

/// The Y axis: its line, and labels at the top, the bottom and the halves (quarters on a
/// tall chart).
fn y_axis(buf: &mut Buffer, area: Rect, plot: Rect, gutter: u16, scale: &Scale, app: &App) {
    let dim = app.theme.dim();
    for r in 0..plot.height {
        buf.set_string(area.x + gutter - 1, plot.y + r, "│", dim);
    }
    let label_at = |buf: &mut Buffer, row: u16, v: u64| {
        let s = if v == 0 {
            "0".to_string()
        } else {
            short_bytes(v)
        };
        let w = (gutter - 1) as usize;
        buf.set_stringn(
            area.x,
            plot.y + row,
            format!("{s:>w$}┤"),
            gutter as usize,
            dim,
        );
    };
    let parts: u64 = if plot.height >= 16 {
        4
    } else if plot.height >= 5 {
        2
    } else {
        1
    };
    let top = scale.top;
    for k in 0..=parts {
        let v = top / parts * k;
        let row = plot.height - 1 - (scale.ydot(v) / 4) as u16;
        label_at(buf, row, if k == parts { top } else { v });
    }
}

/// The X axis: time labels on round times.
fn x_axis(buf: &mut Buffer, area: Rect, plot: Rect, gutter: u16, app: &App) {
    let dim = app.theme.dim();
    let (t0, t1) = app.window();
    let axis_y = area.y + area.height - 1;
    buf.set_stringn(area.x + gutter - 1, axis_y, "└", 1, dim);
    let span = t1.saturating_sub(t0).max(1);
    let live = !matches!(app.screen, Screen::Replay(_));
    // Ticks on round times: every `step`, counted back from the end (live) or from the
    // session start (replay), at most one label per 12 columns.
    let max_ticks = (plot.width / 12).max(1) as u64;
    let step = tick_step(span, max_ticks);
    let origin = if live { t1 } else { app.origin };
    let col = |tt: u64| -> u16 {
        (tt.saturating_sub(t0) as u128 * (plot.width as u128 - 1) / span as u128) as u16
    };
    let mut taken_until: i32 = -1;
    for tt in ticks(live, t0, t1, origin, step, max_ticks) {
        let label = if live {
            let back = t1.saturating_sub(tt);
            if back == 0 {
                if app.view.frozen.is_some() {
                    "frozen".to_string()
                } else {
                    "now".to_string()
                }
            } else {
                format!("-{}", crate::app::fmt_window(back))
            }
        } else {
            fmt_clock(tt.saturating_sub(origin), step < NS)
        };
        let w = label.chars().count() as i32;
        let x = plot.x as i32 + col(tt) as i32 - w / 2;
        let x = x.clamp(plot.x as i32, (plot.x + plot.width) as i32 - w);
        if x <= taken_until {
            continue;
        }
        buf.set_stringn(x as u16, axis_y, &label, label.len(), dim);
        taken_until = x + w;
    }
}

/// The tick times over `[t0, t1]`, ascending: every `step` back from `t1` (live), or from
/// `origin` on (replay). Bounded however the times lie: every step saturates and there are
/// at most `max_ticks` + 2 of them (the step is chosen so).
fn ticks(live: bool, t0: u64, t1: u64, origin: u64, step: u64, max_ticks: u64) -> Vec<u64> {
    let most = max_ticks as usize + 2;
    let mut ticks: Vec<u64> = Vec::new();
    if live {
        let mut tt = t1;
        while ticks.len() < most {
            ticks.push(tt);
            if tt < t0.saturating_add(step) {
                break;
            }
            tt -= step;
        }
    } else {
        let first = t0
            .saturating_sub(origin)
            .div_ceil(step)
            .saturating_mul(step)
            .checked_add(origin);
        let mut tt = first;
        while let Some(x) = tt.filter(|x| *x <= t1 && ticks.len() < most) {
            ticks.push(x);
            tt = x.checked_add(step);
        }
    }
    ticks.sort_unstable();
    ticks
}

/// The cursor: a reversed column and a box with exact values.
fn cursor(buf: &mut Buffer, plot: Rect, app: &App) {
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

/// The baseline: its RSS top as one dot per column (two where it jumps, so it reads as a
/// line without covering the data's strokes) and its interval peak where it rises above.
fn baseline_line(grid: &mut Braille, cols: &[Bucket], scale: &Scale, style: Style) {
    let mut prev: Option<u32> = None;
    for (x, c) in cols.iter().enumerate() {
        let Some(hi) = c.max(Metric::Rss).map(|v| scale.ydot(v)) else {
            prev = None;
            continue;
        };
        grid.set(x as u32, hi, style);
        if let Some(p) = prev {
            // A jump of more than a dot: a sparse dotted riser, every other dot.
            let (a, b) = (p.min(hi), p.max(hi));
            for y in (a + 1..b).step_by(2) {
                grid.set(x as u32, y, style);
            }
        }
        if let Some(pk) = c
            .max(Metric::Peak)
            .map(|v| scale.ydot(v))
            .filter(|pk| *pk > hi + 1)
        {
            grid.set(x as u32, pk, style);
        }
        prev = Some(hi);
    }
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
    } else if !m.has_events() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_scale() {
        assert_eq!(nice_max(530 * MIB), 600 * MIB);
        assert_eq!(nice_max(190 * GIB), 200 * GIB);
        assert_eq!(nice_max(0), MIB);
        assert!(nice_max(1_234_567_890) >= 1_234_567_890);
    }

    #[test]
    fn tick_steps_keep_the_ticks_bounded_over_any_span() {
        assert_eq!(tick_step(60 * NS, 5), 15 * NS);
        for span in [0, 1, 86400 * NS * 30, u64::MAX / 2, u64::MAX] {
            for max in [0, 1, 5, 16] {
                let s = tick_step(span, max);
                assert!(s > 0 && span / s <= max.max(1), "{span} {max}: {s}");
            }
        }
    }

    #[test]
    fn braille_dots() {
        let mut g = Braille::new(2, 1);
        g.set(0, 3, Style::default()); // top-left
        g.set(3, 0, Style::default()); // bottom-right
        let mut buf = Buffer::empty(Rect::new(0, 0, 2, 1));
        g.render(&mut buf, Rect::new(0, 0, 2, 1));
        assert_eq!(buf[(0, 0)].symbol(), "⠁");
        assert_eq!(buf[(1, 0)].symbol(), "⢀");
    }
}
