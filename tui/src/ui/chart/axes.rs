//! The chart's axes: the vertical scale (a "nice" maximum, values to dot rows; linear from
//! 0, logarithmic, or split in two linear halves) with its labels, and the time axis with
//! its ticks on round times.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use provetop_shared::units::{GIB, KIB, MIB};

use crate::app::{App, Screen, NS};
use crate::ui::{fmt_clock, short_bytes};

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

/// The vertical scale: values from 0 to `top` over the plot's dots, bottom up.
pub(super) struct Scale {
    pub(super) top: u64,
    pub(super) dots_h: u32,
    pub(super) kind: Kind,
}

/// How values map to heights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Linear from 0.
    Linear,
    /// Logarithmic from `lo` (values at or below it sit on the bottom row).
    Log { lo: u64 },
    /// Linear from 0 to `at` over the lower half, from `at` to the top over the upper half.
    Split { at: u64 },
}

/// Round values a log axis is labelled at: 1, 10, 100 of each unit.
const DECADES: [u64; 9] = [
    KIB,
    10 * KIB,
    100 * KIB,
    MIB,
    10 * MIB,
    100 * MIB,
    GIB,
    10 * GIB,
    100 * GIB,
];

impl Kind {
    /// A log axis whose bottom is the round value at or below `min` (the smallest value
    /// drawn above 0), at least 1 MiB and at most a sixteenth of `top`.
    pub(super) fn log(min: u64, top: u64) -> Kind {
        let lo = DECADES
            .iter()
            .copied()
            .filter(|d| *d <= min.max(MIB))
            .max()
            .unwrap_or(MIB);
        Kind::Log {
            lo: lo.min(top / 16).max(KIB),
        }
    }

    /// A split axis: the lower half up to a round value over `low` (where the small values
    /// lie), kept between a sixty-fourth and a quarter of `top`.
    pub(super) fn split(low: u64, top: u64) -> Kind {
        let at = nice_max(low).clamp((top / 64).max(1), (top / 4).max(1));
        Kind::Split { at }
    }
}

impl Scale {
    /// Where `v` lies between the bottom (0) and the top (1).
    fn frac(&self, v: u64) -> f64 {
        let top = self.top.max(1) as f64;
        let v = v as f64;
        match self.kind {
            Kind::Linear => v / top,
            Kind::Log { lo } => {
                let lo = lo.max(1) as f64;
                if v <= lo {
                    0.0
                } else {
                    (v / lo).ln() / (top / lo).ln().max(f64::MIN_POSITIVE)
                }
            }
            Kind::Split { at } => {
                let at = at.max(1) as f64;
                if v <= at {
                    v / at * 0.5
                } else {
                    0.5 + (v - at) / (top - at).max(1.0) * 0.5
                }
            }
        }
    }

    /// The dot row of value `v` (clamped to the plot).
    pub(super) fn ydot(&self, v: u64) -> u32 {
        (self.frac(v) * (self.dots_h - 1) as f64)
            .round()
            .clamp(0.0, (self.dots_h - 1) as f64) as u32
    }

    /// The values labelled on the axis, bottom up, for a plot of `rows` rows: the top, the
    /// bottom and the halves (quarters on a tall chart) of a linear axis; the round values of
    /// a log axis; 0, the split, the top (and the middle of each half on a tall chart).
    fn labels(&self, rows: u16) -> Vec<u64> {
        let parts: u64 = if rows >= 16 {
            4
        } else if rows >= 5 {
            2
        } else {
            1
        };
        let top = self.top;
        match self.kind {
            Kind::Linear => (0..=parts)
                .map(|k| if k == parts { top } else { top / parts * k })
                .collect(),
            Kind::Log { lo } => std::iter::once(lo)
                .chain(DECADES.iter().copied().filter(|d| *d > lo && *d < top))
                .chain([top])
                .collect(),
            Kind::Split { at } if parts >= 4 => vec![0, at / 2, at, at + (top - at) / 2, top],
            Kind::Split { at } => vec![0, at, top],
        }
    }
}

/// The Y axis: its line, and labels at the top, the bottom and the halves (quarters on a
/// tall chart).
pub(super) fn y_axis(
    buf: &mut Buffer,
    area: Rect,
    plot: Rect,
    gutter: u16,
    scale: &Scale,
    app: &App,
) {
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
    // Bottom up; a label whose row is taken (a log axis's decades close together) is left
    // out, the top's always shown.
    let labels = scale.labels(plot.height);
    let mut rows: Vec<(u16, u64)> = Vec::new();
    for (i, v) in labels.iter().enumerate() {
        let row = plot.height - 1 - (scale.ydot(*v) / 4) as u16;
        let last = i + 1 == labels.len();
        if let Some(at) = rows.iter().position(|(r, _)| *r == row) {
            if !last {
                continue;
            }
            rows.remove(at);
        }
        rows.push((row, *v));
    }
    for (row, v) in rows {
        label_at(buf, row, v);
    }
    if let Kind::Split { at } = scale.kind {
        // The break: the axis line changes where the scale does.
        let row = plot.height - 1 - (scale.ydot(at) / 4) as u16;
        buf.set_string(area.x + gutter - 1, plot.y + row, "╪", dim);
    }
}

/// The X axis: time labels on round times.
pub(super) fn x_axis(buf: &mut Buffer, area: Rect, plot: Rect, gutter: u16, app: &App) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_axis_gives_a_small_series_beside_a_large_one_room_to_show_its_shape() {
        let lin = Scale {
            top: 8 * GIB,
            dots_h: 80,
            kind: Kind::Linear,
        };
        let log = Scale {
            kind: Kind::log(300 * MIB, 8 * GIB),
            ..lin
        };
        // 686 MiB under an 8 GiB top: near the floor of the linear axis, halfway up the log one.
        let a = 686 * MIB;
        assert!(lin.ydot(a) <= 7, "{}", lin.ydot(a));
        assert!(
            log.ydot(a) >= 4 * lin.ydot(a) && log.ydot(a) > 30,
            "{}",
            log.ydot(a)
        );
        assert_eq!(log.ydot(8 * GIB), 79);
        assert_eq!(log.labels(20)[0], 100 * MIB);
        assert!(log.labels(20).contains(&GIB));
    }

    #[test]
    fn a_split_axis_puts_the_small_values_in_its_lower_half() {
        let split = Scale {
            top: 8 * GIB,
            dots_h: 81,
            kind: Kind::split(900 * MIB, 8 * GIB),
        };
        let at = 1000 * MIB;
        assert_eq!(split.kind, Kind::Split { at });
        assert_eq!(split.ydot(at), 40);
        assert!(split.ydot(700 * MIB) > 25);
        assert!(split.ydot(6 * GIB) > 60);
        let mid = at + (8 * GIB - at) / 2;
        assert_eq!(split.labels(20), vec![0, at / 2, at, mid, 8 * GIB]);
        // A "low" as large as the top keeps the split at a quarter of it.
        assert_eq!(Kind::split(8 * GIB, 8 * GIB), Kind::Split { at: 2 * GIB });
    }

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
}
