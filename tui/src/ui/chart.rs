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
//!
//! The parts: [`braille`] the canvas, [`axes`] the scale and the two axes, [`cursor`] the
//! cursor's column and box; this file lays the chart out and draws the series, the threshold
//! lines and the baseline.

mod axes;
mod braille;
mod cursor;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;

use provetop_shared::units::MIB;

use crate::app::{App, MemAxis};
use crate::series::{Bucket, Metric, Reading};
use crate::text::inert;
use crate::ui::{short_bytes, title_line, Item};
pub use axes::{nice_max, tick_step};
use axes::{x_axis, y_axis, Kind, Scale};
pub use braille::Braille;
use cursor::cursor;

/// Series drawn, bottom layer first.
fn layers(app: &App) -> &'static [Metric] {
    if app.theme.color {
        &[
            Metric::File,
            Metric::Shmem,
            Metric::Anon,
            Metric::Swap,
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
    // The limit that binds, where the tree's RSS would meet it now (its RSS plus the room
    // left): an operator sees the ceiling the climb is heading for, not only the countdown.
    if let (Some(s), Some((room, _, name))) = (&app.model.last_sample, app.model.binding()) {
        let at = s.rss.saturating_add(room);
        v.push((format!(" limit {} {}", inert(&name), short_bytes(at)), at));
    }
    // A prover with a GPU memory pool says what is live in it: a line under NVML's figure
    // (the pool's size), which alone would read as the prover's need.
    if let Some(live) = app.model.prover.report.and_then(|r| r.gpu_live) {
        v.push((format!(" gpu live {}", short_bytes(live)), live));
    }
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
            if m == Metric::Gpu {
                out.extend(pool_item(app));
            }
        }
    }
    // Swap is recorded always; it is said (and drawn) only where the tree has some.
    if let Some((_, hi)) = r.range(Metric::Swap).filter(|r| r.1 > 0) {
        out.push(Item::new(
            4,
            vec![
                Span::styled(" swap ", t.metric(Metric::Swap)),
                Span::raw(short_bytes(hi)),
            ],
        ));
    }
    out
}

/// The prover's own GPU pool figures beside NVML's (`memory_report`): live of reserved.
fn pool_item(app: &App) -> Option<Item<'static>> {
    let r = app.model.prover.report?;
    let live = r.gpu_live?;
    let mut text = format!(" (live {}", short_bytes(live));
    if let Some(res) = r.gpu_reserved {
        text.push_str(&format!(" of {}", short_bytes(res)));
    }
    text.push(')');
    Some(Item::new(
        9,
        vec![Span::styled(text, app.theme.metric(Metric::Gpu))],
    ))
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
    // The axis is named when it is not the plain one.
    let name = match app.view.mem_axis {
        MemAxis::Linear => "memory",
        MemAxis::Log => "memory (log axis)",
        MemAxis::Split => "memory (split axis)",
    };
    title_line(buf, row, app, name, items);
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
    let kind = match app.view.mem_axis {
        MemAxis::Linear => Kind::Linear,
        MemAxis::Log => Kind::log(lowest_level(cols, layers), top),
        MemAxis::Split => Kind::split(low_rss(cols), top),
    };
    let scale = Scale {
        top,
        dots_h: grid.dots_h(),
        kind,
    };
    (scale, hlines)
}

/// The bottom a log axis needs: the lowest of the drawn series' typical levels (each one's
/// median over the columns; a start-up value near 0 would waste the axis on decades nothing
/// stays in).
fn lowest_level(cols: &[Bucket], layers: &[Metric]) -> u64 {
    layers
        .iter()
        .filter_map(|l| {
            let mut v: Vec<u64> = cols
                .iter()
                .filter_map(|c| c.max(*l))
                .filter(|v| *v > 0)
                .collect();
            let mid = v.len() / 2;
            (!v.is_empty()).then(|| *v.select_nth_unstable(mid).1)
        })
        .min()
        .unwrap_or(MIB)
}

/// Where the small values lie, for a split axis: the median of RSS's low over the columns
/// (the level a prover rests at between its peaks).
fn low_rss(cols: &[Bucket]) -> u64 {
    let mut lows: Vec<u64> = cols.iter().filter_map(|c| c.min(Metric::Rss)).collect();
    if lows.is_empty() {
        return MIB;
    }
    let mid = lows.len() / 2;
    *lows.select_nth_unstable(mid).1
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
