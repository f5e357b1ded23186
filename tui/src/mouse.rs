//! The mouse: what a click or the wheel asks for, from where the last frame put things
//! ([`Areas`], kept in [`crate::app::Drawn`]). A mouse event becomes the same [`Action`] a
//! key would, so the screen does one thing whichever asked:
//!
//! - a click (or a drag) on the chart's plot, the usage strips or the timeline's bars puts
//!   the cursor at that column's time;
//! - the wheel over those zooms (up: a shorter window); over the log it scrolls the log, and
//!   while the process table or the help is open it scrolls that;
//! - a click on a header item, a footer hint or a timeline row's name does what its key does
//!   (the header's mode and proofs: the modes table; its cpu, gpu and pid: the process
//!   table); with a box open, a click closes it.
//!
//! The terminal sends these only while mouse capture is on ([`crate::terminal`]).

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::app::{Action, App};
use crate::areas::inside;
pub use crate::areas::Areas;

/// The record time of plot column `x` of `area` (right of `gutter`): the first time whose
/// column, as the chart maps times to columns, is `x`. `None` off the plot.
pub fn time_at(app: &App, area: Rect, gutter: u16, x: u16) -> Option<u64> {
    let px = area.x + gutter;
    let w = area.width.saturating_sub(gutter);
    if w < 2 || x < px || x >= px + w {
        return None;
    }
    let (t0, t1) = app.window();
    let span = t1.saturating_sub(t0).max(1) as u128;
    let k = (x - px) as u128;
    let off = (k * span).div_ceil(w as u128 - 1);
    Some(t0.saturating_add(off.min(u64::MAX as u128) as u64).min(t1))
}

/// The action a mouse event asks for, if any.
pub fn action(app: &App, ev: &MouseEvent) -> Option<Action> {
    let a = &app.view.drawn.areas;
    let (x, y) = (ev.column, ev.row);
    let v = &app.view;
    let boxed = v.help || v.modes || v.procs || v.log_line;
    // The plots, title rows excepted (the chart's time axis row included: it is a column).
    let plot_time = || {
        [(a.chart, 1), (a.usage, 1), (a.timeline, 1)]
            .into_iter()
            .find(|(r, top)| inside(*r, x, y) && y >= r.y + top)
            .and_then(|(r, _)| time_at(app, r, a.gutter, x))
    };
    match ev.kind {
        MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
            let up = ev.kind == MouseEventKind::ScrollUp;
            let (older, newer) = (Action::LogOlder, Action::LogNewer);
            if v.help || v.procs || (!boxed && inside(a.log, x, y)) {
                return Some(if up { older } else { newer });
            }
            let over = [a.chart, a.usage, a.timeline]
                .into_iter()
                .any(|r| inside(r, x, y));
            (!boxed && over).then_some(if up { Action::ZoomIn } else { Action::ZoomOut })
        }
        MouseEventKind::Down(MouseButton::Left) => {
            if boxed {
                return Some(Action::Escape);
            }
            a.hit(x, y).or_else(|| plot_time().map(Action::CursorAt))
        }
        MouseEventKind::Drag(MouseButton::Left) if !boxed => plot_time().map(Action::CursorAt),
        _ => None,
    }
}

/// The header's items that a key opens, found in what was drawn on its rows: each item
/// between two `│` is a target when one of its words names what a key opens (the mode, the
/// proofs and their rate: the modes table, `m`; the cores, the GPUs and the pid: the
/// process table, `t`).
pub fn header_targets(buf: &Buffer, area: Rect, areas: &mut Areas) {
    for y in area.y..area.y + area.height {
        let mut start = area.x;
        let mut words = String::new();
        for x in area.x..=area.x + area.width {
            let sym = if x < area.x + area.width {
                buf.cell((x, y)).map_or(" ", |c| c.symbol())
            } else {
                "│"
            };
            if sym == "│" {
                if let Some(a) = header_action(&words) {
                    areas.target(Rect::new(start, y, x - start, 1), a);
                }
                start = x + 1;
                words.clear();
            } else {
                words.push_str(sym);
            }
        }
    }
}

/// What a header item's words open.
fn header_action(item: &str) -> Option<Action> {
    let words: Vec<&str> = item.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    if has("mode") || has("proofs") || item.contains("/proof") || item.contains("sectors/h") {
        Some(Action::Modes)
    } else if has("cpu") || has("gpu") || has("pid") || item.contains("procs") {
        Some(Action::Procs)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_words_name_what_their_key_opens() {
        assert_eq!(header_action(" mode single "), Some(Action::Modes));
        assert_eq!(header_action(" 2.2s/proof avg 2.5s "), Some(Action::Modes));
        assert_eq!(
            header_action(" proofs 46 (51 sectors) "),
            Some(Action::Modes)
        );
        assert_eq!(header_action(" cpu 4.3/16 "), Some(Action::Procs));
        assert_eq!(
            header_action("provetop ■ pid 664 running "),
            Some(Action::Procs)
        );
        assert_eq!(header_action(" up 1m52s "), None);
    }
}
