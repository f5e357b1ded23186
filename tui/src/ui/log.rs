//! The event/alert log pane: newest lines at the bottom, scrollable.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::text::{log_level, log_text};
use crate::ui::{fmt_clock, title_line, Item};

/// Draw the title row and as many log lines as fit.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    if area.height == 0 {
        return;
    }
    let t = &app.theme;
    let log = &app.model.log;
    let mut items = Vec::new();
    if app.view.log_back > 0 {
        items.push(Item::new(
            0,
            vec![Span::styled(
                format!("{} lines back (↓ for newer)", app.view.log_back),
                t.warn(),
            )],
        ));
    }
    title_line(
        buf,
        Rect::new(area.x, area.y, area.width, 1),
        app,
        "log",
        items,
    );
    let h = (area.height - 1) as usize;
    let end = log.len().saturating_sub(app.view.log_back);
    let start = end.saturating_sub(h);
    for (i, line) in log.range(start..end).enumerate() {
        let stamp = fmt_clock(line.t.saturating_sub(app.origin), true);
        let l = Line::from(vec![
            Span::styled(format!("{stamp:>9} "), t.dim()),
            Span::styled(log_text(&line.what), t.log(log_level(&line.what))),
        ]);
        buf.set_line(area.x, area.y + 1 + i as u16, &l, area.width);
    }
}
