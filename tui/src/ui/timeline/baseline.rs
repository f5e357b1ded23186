//! The baseline's rows (`--baseline`), dim, under the shown session's.
//!
//! A row per phase of the baseline is a bar in lighter shades than the shown session's
//! (`▒` for a full cell): a second set, not more of the same. When those do not fit, one row
//! letters the innermost baseline phase of each cell. An open baseline span counts as
//! ending where it started.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::axis::{gutter_label, Axis};
use super::legend::letter;
use super::rows::RowKey;
use crate::app::App;

/// The baseline's rows under the shown session's (from row `below` on), dim: a bar per
/// phase row, the innermost phase's letter on the lettered row.
pub(super) fn baseline_rows(
    buf: &mut Buffer,
    area: Rect,
    gutter: u16,
    app: &App,
    rows: &[RowKey],
    below: usize,
) {
    let Some(b) = &app.baseline else { return };
    if rows.is_empty() {
        return;
    }
    let (t0, t1) = app.window();
    let axis = Axis::new(area, gutter, app);
    let dim = app.theme.dim();
    let spans = b.spans_in(&app.model, t0, t1);
    for (i, key) in rows.iter().enumerate() {
        let y = area.y + 1 + (below + i) as u16;
        if y >= area.y + area.height {
            break;
        }
        gutter_label(buf, area, gutter, y, &key.label(), dim);
        if *key == RowKey::BaseAll {
            let best = axis.innermost(spans.iter().map(|s| (s.start, s.end_or(s.start), &s.phase)));
            axis.letters(buf, y, &best, letter, |_| dim);
            continue;
        }
        let RowKey::Base(phase) = key else { continue };
        let mut cover = axis.no_cover();
        for s in spans.iter().filter(|s| &s.phase == phase) {
            axis.cover(&mut cover, s.start, s.end_or(s.start));
        }
        // Lighter shades than the shown session's bars: a second set, not more of it.
        axis.bar(buf, y, &cover, '▒', dim);
    }
}
