//! What the timeline draws over its rows: the log's warnings, what the kernel did to the
//! tree's memory, the batch-mode switches and the cursor's column.
//!
//! Each is drawn at its time's column; what falls outside the window is not drawn. A warning
//! is a `!` on the top row over a bar or an empty cell alike; so are the kernel's marks: an
//! OOM kill `X`, a limit reached or the OOM killer invoked (memory.events `max`, `oom`, v1
//! `failcnt`) `^`, throttling over memory.high `h`, a pressure stall caught between samples
//! `~`, a mark added by a person (the screen's `M`, `provetop mark`, the control socket's
//! `mark`) `*` (an OOM kill wins its column, then a limit or a mark, then the rest); a mode
//! switch goes into empty
//! cells only (phases stay readable); the cursor restyles its whole column.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use provetop_shared::Mark;

use super::axis::Axis;
use crate::app::App;

/// Warnings read from the child's log lines (bellperson's "GPU … failed! Falling back to
/// CPU"): a `!` in the warning colour on the top row at their time, over an empty cell or a
/// bar alike (the log pane has the words).
pub(super) fn warning_marks(buf: &mut Buffer, area: Rect, gutter: u16, app: &App) {
    let axis = Axis::new(area, gutter, app);
    if axis.width() < 2 || area.height < 2 {
        return;
    }
    let style = app.theme.warn();
    for (t, _) in app.model.log_warnings.iter() {
        let Some(x) = axis.column_within(*t) else {
            continue;
        };
        if let Some(cell) = buf.cell_mut((x, area.y + 1)) {
            cell.set_char('!').set_style(style);
        }
    }
}

/// The kernel's marks on the tree's memory (see the module docs), on the top row.
pub(super) fn kernel_marks(buf: &mut Buffer, area: Rect, gutter: u16, app: &App) {
    let axis = Axis::new(area, gutter, app);
    if axis.width() < 2 || area.height < 2 {
        return;
    }
    let t = &app.theme;
    // (column, precedence, char, style), drawn lowest precedence first.
    let mut marks: Vec<(u16, u8, char, ratatui::style::Style)> = Vec::new();
    for (at, m) in app.model.notes.marks.iter() {
        let mark = match m {
            Mark::OomKill { .. } => (3, 'X', t.bad()),
            Mark::MemoryEvent { counter, .. } => match counter.as_str() {
                "max" | "oom" | "oom_kill" | "oom_group_kill" | "failcnt" => (2, '^', t.warn()),
                _ => (1, 'h', t.dim()),
            },
            Mark::Stall { .. } => (1, '~', t.warn()),
            Mark::Note { text } if text.starts_with(crate::text::MARK_PREFIX) => (2, '*', t.bold()),
            _ => continue,
        };
        if let Some(x) = axis.column_within(*at) {
            marks.push((x, mark.0, mark.1, mark.2));
        }
    }
    marks.sort_by_key(|m| m.1);
    for (x, _, ch, style) in marks {
        if let Some(cell) = buf.cell_mut((x, area.y + 1)) {
            cell.set_char(ch).set_style(style);
        }
    }
}

/// Batch-mode switches: a dotted line down the Gantt rows at the switch and the new mode's
/// name on the bottom row where there is room, so live and replay show which proofs ran in
/// which mode. Drawn into empty cells only: phases stay readable.
pub(super) fn mode_marks(buf: &mut Buffer, area: Rect, gutter: u16, app: &App) {
    let axis = Axis::new(area, gutter, app);
    if axis.width() < 2 || area.height < 2 {
        return;
    }
    let style = app.theme.bold();
    let right = area.x + area.width;
    let bottom = area.y + area.height - 1;
    for (t, _from, to) in app.model.proofs.mode_changes.iter() {
        let Some(x) = axis.column_within(*t) else {
            continue;
        };
        for y in area.y + 1..=bottom {
            if let Some(cell) = buf.cell_mut((x, y)) {
                if cell.symbol() == " " {
                    cell.set_char('┆').set_style(style);
                }
            }
        }
        for (i, ch) in format!("▸{to}").chars().enumerate() {
            let cx = x + i as u16;
            if cx >= right {
                break;
            }
            match buf.cell_mut((cx, bottom)) {
                Some(cell) if cell.symbol() == " " || cell.symbol() == "┆" => {
                    cell.set_char(ch).set_style(style);
                }
                _ => break,
            }
        }
    }
}

/// The cursor's column, restyled down every row.
pub(super) fn cursor_column(buf: &mut Buffer, area: Rect, gutter: u16, app: &App) {
    let Some(c) = app.cursor() else { return };
    let cx = Axis::new(area, gutter, app).column(c);
    for r in 1..area.height {
        if let Some(cell) = buf.cell_mut((cx, area.y + r)) {
            cell.set_style(app.theme.cursor());
        }
    }
}
