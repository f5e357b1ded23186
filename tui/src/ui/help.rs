//! The `?` help screen, generated from the key tables of the screen in use.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use crate::app::App;

/// Draw the help over the middle of `area`.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let mut lines: Vec<(String, String, bool)> = Vec::new(); // (key, text, is_title)
    for s in app.sections() {
        lines.push((s.title.to_string(), String::new(), true));
        for b in s.bindings {
            lines.push((b.label.to_string(), b.help.to_string(), false));
        }
    }
    let key_w = lines
        .iter()
        .filter(|l| !l.2)
        .map(|l| l.0.chars().count())
        .max()
        .unwrap_or(1);
    let text_w = lines.iter().map(|l| l.1.chars().count()).max().unwrap_or(1);
    let col_w = key_w + 2 + text_w;
    let inner_h = area.height.saturating_sub(2) as usize;
    // One column if it fits, else two side by side.
    let ncols = if lines.len() <= inner_h { 1 } else { 2 };
    let per_col = lines.len().div_ceil(ncols);
    let max_w = area.width.saturating_sub(2) as usize;
    let col_w = col_w.min(max_w / ncols - 1);
    let w = ((col_w + 1) * ncols + 1).min(max_w) as u16 + 2;
    let h = (per_col.min(inner_h) + 2) as u16;
    let rect = super::overlay(buf, area, w, h, " keys (? or Esc closes) ", app);
    for (i, (key, text, title)) in lines.iter().enumerate() {
        let (col, r) = (i / per_col, i % per_col);
        if r >= inner_h {
            continue;
        }
        let cx = rect.x + 2 + (col * (col_w + 1)) as u16;
        let cy = rect.y + 1 + r as u16;
        if *title {
            buf.set_stringn(cx, cy, key, col_w, t.bold());
        } else {
            buf.set_stringn(cx, cy, format!("{key:>key_w$}"), key_w, t.bold());
            let room = col_w.saturating_sub(key_w + 2);
            buf.set_stringn(cx + key_w as u16 + 2, cy, text, room, Style::default());
        }
    }
}
