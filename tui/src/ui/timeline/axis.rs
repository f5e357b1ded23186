//! The window's time axis over a timeline's plot columns, and the ways a row is drawn on it.
//!
//! An [`Axis`] maps record time to the plot right of the gutter: to half cells for bars (so
//! a bar has half-cell resolution; times past either end are clamped to it) and to columns
//! for instant marks (the window's end is the last column). A row is a gutter label, then
//! either a bar (each cell full, left half `▌`, right half `▐`, or left alone) or a lettered
//! row (each cell the letter of the innermost, latest-started, phase over it).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use provetop_shared::Phase;

use crate::app::App;
use crate::text::inert;

/// The app's window over the plot of a timeline area.
pub(super) struct Axis {
    t0: u64,
    t1: u64,
    /// The window's length, at least 1 ns.
    span: u64,
    /// The plot's first column.
    x: u16,
    /// The plot's width in cells.
    width: u16,
}

impl Axis {
    /// The app's window over `area` right of its `gutter`.
    pub(super) fn new(area: Rect, gutter: u16, app: &App) -> Self {
        let (t0, t1) = app.window();
        Axis {
            t0,
            t1,
            span: t1.saturating_sub(t0).max(1),
            x: area.x + gutter,
            width: area.width.saturating_sub(gutter),
        }
    }

    /// The plot's width in cells.
    pub(super) fn width(&self) -> u16 {
        self.width
    }

    /// The half cell time `t` falls in (a plot at least one cell wide).
    pub(super) fn half(&self, t: u64) -> u64 {
        let halves = self.width as u128 * 2;
        ((t.saturating_sub(self.t0)) as u128 * halves / self.span as u128).min(halves - 1) as u64
    }

    /// Covered half cells, none yet: one flag per half cell of the plot.
    pub(super) fn no_cover(&self) -> Vec<bool> {
        vec![false; self.width as usize * 2]
    }

    /// Mark the half cells from `start` to `end` covered.
    pub(super) fn cover(&self, cover: &mut [bool], start: u64, end: u64) {
        for c in self.half(start)..=self.half(end) {
            cover[c as usize] = true;
        }
    }

    /// Keep back-to-back `bars` (sorted by start) apart: where one starts in the half cell
    /// after (or in) the one the bar before it ended in, the half cell before its start is
    /// left uncovered, so two proofs one after the other are two bars, not one.
    pub(super) fn part(&self, cover: &mut [bool], bars: &[(u64, u64)]) {
        for w in bars.windows(2) {
            let ((a0, a1), (b0, _)) = (w[0], w[1]);
            let (end, start) = (self.half(a1), self.half(b0));
            // Overlapping ones are one phase open throughout; tiny ones keep their cell.
            if b0 >= a1 && start <= end + 1 && start >= 1 && start - 1 > self.half(a0) {
                cover[start as usize - 1] = false;
            }
        }
    }

    /// The column of an instant at `t` (a plot at least one cell wide).
    pub(super) fn column(&self, t: u64) -> u16 {
        self.x
            + (t.saturating_sub(self.t0) as u128 * (self.width as u128 - 1) / self.span as u128)
                as u16
    }

    /// The column of an instant at `t`, `None` outside the window.
    pub(super) fn column_within(&self, t: u64) -> Option<u16> {
        (self.t0..=self.t1).contains(&t).then(|| self.column(t))
    }

    /// Draw `cover` on row `y`: a cell covered whole as `full`, half as `▌` or `▐`.
    pub(super) fn bar(&self, buf: &mut Buffer, y: u16, cover: &[bool], full: char, style: Style) {
        for x in 0..self.width as usize {
            let ch = match (cover[2 * x], cover[2 * x + 1]) {
                (true, true) => full,
                (true, false) => '▌',
                (false, true) => '▐',
                (false, false) => continue,
            };
            if let Some(cell) = buf.cell_mut((self.x + x as u16, y)) {
                cell.set_char(ch).set_style(style);
            }
        }
    }

    /// Each cell's innermost phase among `spans` (start, end, phase): the latest started of
    /// those over it, with its start.
    pub(super) fn innermost<'a>(
        &self,
        spans: impl IntoIterator<Item = (u64, u64, &'a Phase)>,
    ) -> Vec<Option<(u64, &'a Phase)>> {
        let mut best: Vec<Option<(u64, &Phase)>> = vec![None; self.width as usize];
        for (start, end, phase) in spans {
            for c in self.half(start) / 2..=self.half(end) / 2 {
                let slot = &mut best[c as usize];
                if slot.is_none_or(|(st, _)| start >= st) {
                    *slot = Some((start, phase));
                }
            }
        }
        best
    }

    /// Draw each cell's phase of `best` on row `y` as its letter (`letter`), styled by
    /// `style`.
    pub(super) fn letters(
        &self,
        buf: &mut Buffer,
        y: u16,
        best: &[Option<(u64, &Phase)>],
        letter: impl Fn(&Phase) -> char,
        style: impl Fn(&Phase) -> Style,
    ) {
        for (x, b) in best.iter().enumerate() {
            if let Some((_, p)) = b {
                if let Some(cell) = buf.cell_mut((self.x + x as u16, y)) {
                    cell.set_char(letter(p)).set_style(style(p));
                }
            }
        }
    }
}

/// The gutter labels of rows labelled `labels`, each at most `w` characters and made inert:
/// a longer one keeps its head and its tail around a `…` (`generate_window_post` →
/// `gen…dow_post`), the split chosen so that no two labels cut alike (two that would even
/// so end in their index).
pub(super) fn distinct_labels(labels: &[String], w: usize) -> Vec<String> {
    let labels: Vec<Vec<char>> = labels.iter().map(|l| inert(l).chars().collect()).collect();
    let cut = |l: &[char], head: usize| -> String {
        if l.len() <= w {
            return l.iter().collect();
        }
        let head = head.min(w.saturating_sub(1));
        let tail = w.saturating_sub(1 + head);
        let mut s: String = l[..head].iter().collect();
        s.push('…');
        s.extend(&l[l.len() - tail..]);
        s
    };
    let distinct = |v: &[String]| {
        let mut seen = std::collections::HashSet::new();
        v.iter().all(|s| seen.insert(s))
    };
    // The head first (most names differ early), then ever more of the tail.
    let mut heads: Vec<usize> = vec![w.saturating_sub(1)];
    heads.extend((1..w.saturating_sub(1)).rev());
    heads.push(0);
    for head in heads {
        let out: Vec<String> = labels.iter().map(|l| cut(l, head)).collect();
        if distinct(&out) {
            return out;
        }
    }
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let n = i.to_string();
            let mut s: String = l.iter().take(w.saturating_sub(n.len() + 1)).collect();
            s.push('…');
            s.push_str(&n);
            s
        })
        .collect()
}

/// Write `label` right-aligned in the gutter of row `y`, cut to fit, then the gutter's rule.
pub(super) fn gutter_label(
    buf: &mut Buffer,
    area: Rect,
    gutter: u16,
    y: u16,
    label: &str,
    style: Style,
) {
    let w = (gutter - 1) as usize;
    let label: String = inert(label).chars().take(w).collect();
    buf.set_stringn(area.x, y, format!("{label:>w$}│"), gutter as usize, style);
}
