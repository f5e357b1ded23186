//! The log pane: provetop's events, alerts and marks and the child's output lines (with
//! their source), newest at the bottom, scrollable, filtered by `o`, searched with `/`.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::app::{App, LogFilter, Screen};
use crate::model::LogEntry;
use crate::text::{inert, log_level, log_text};
use crate::ui::{fmt_clock, overlay, title_line, Item};

/// Draw the title row and as many log lines as fit.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    if area.height == 0 {
        return;
    }
    let t = &app.theme;
    let log = shown(app);
    let mut items = Vec::new();
    if app.view.log_filter != LogFilter::All {
        items.push(Item::new(
            1,
            vec![Span::styled(
                format!("o: {} only", app.view.log_filter.name()),
                t.warn(),
            )],
        ));
    }
    if let Some(q) = &app.view.log_query {
        let text = if app.view.searching {
            format!(" · /{}▏", inert(q))
        } else {
            format!(" · /{} ({} lines)", inert(q), log.len())
        };
        items.push(Item::new(1, vec![Span::styled(text, t.warn())]));
    }
    if app.view.log_back > 0 {
        items.push(Item::new(
            0,
            vec![Span::styled(
                format!("{} lines back (↓ for newer)", app.view.log_back),
                t.warn(),
            )],
        ));
        let older = app.model.log.older();
        if older > 0 && app.view.log_back + 1 >= app.model.log.len() {
            // At the oldest entry held: the lines before it are not lost, only not here.
            let text = if matches!(app.screen, Screen::Replay(_)) {
                format!(" · {older} older: seek back for them")
            } else {
                format!(" · {older} older not kept")
            };
            items.push(
                Item::new(1, vec![Span::styled(text, t.dim())])
                    .or(2, vec![Span::styled(format!(" · {older} older"), t.dim())]),
            );
        }
    }
    title_line(buf, area, app, "log", items);
    let h = (area.height - 1) as usize;
    let end = log.len().saturating_sub(app.view.log_back);
    // The line scrolled back to (what `l` opens) is the bottom one, until the lines above it
    // no longer fill the pane: then the pane stays full from the oldest line, and that line's
    // time is marked.
    let pinned = app.view.log_back > 0 && end < h;
    let (start, stop) = if pinned {
        (0, log.len().min(h))
    } else {
        (end.saturating_sub(h), end)
    };
    let marked = pinned.then(|| end.saturating_sub(1));
    for (i, line) in log[start..stop].iter().enumerate() {
        let stamp = fmt_clock(line.t.saturating_sub(app.origin), true);
        let style = if marked == Some(start + i) {
            t.cursor()
        } else {
            t.dim()
        };
        let l = Line::from(vec![
            Span::styled(format!("{stamp:>9} "), style),
            Span::styled(log_text(&line.what), t.log(log_level(&line.what))),
        ]);
        buf.set_line(area.x, area.y + 1 + i as u16, &l, area.width);
    }
}

/// The entries the pane shows: those the filter (`o`) passes and, with a search (`/`),
/// whose words hold it (case-insensitive).
pub fn shown(app: &App) -> Vec<&LogEntry> {
    let q = app
        .view
        .log_query
        .as_deref()
        .filter(|q| !q.is_empty())
        .map(str::to_lowercase);
    app.model
        .log
        .iter()
        .filter(|e| app.view.log_filter.shows(&e.what))
        .filter(|e| {
            q.as_ref()
                .is_none_or(|q| log_text(&e.what).to_lowercase().contains(q.as_str()))
        })
        .collect()
}

/// The newest shown log line (the newest, or the one scrolled back to) whole: wrapped in a
/// box over the screen, for lines the pane cuts at its width.
pub fn draw_whole(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let log = shown(app);
    let title = "log line (l or Esc closes)";
    let end = log.len().saturating_sub(app.view.log_back);
    let Some(line) = end.checked_sub(1).and_then(|i| log.get(i)) else {
        let rect = overlay(buf, area, 40, 3, title, app);
        buf.set_stringn(rect.x + 2, rect.y + 1, "no log line yet", 36, t.dim());
        return;
    };
    let stamp = fmt_clock(line.t.saturating_sub(app.origin), true);
    let text = format!("{stamp} {}", log_text(&line.what));
    let inner = area.width.saturating_sub(6).max(1) as usize;
    // No more than the screen can show, whatever the line's length.
    let text: String = text.chars().take(inner * area.height as usize).collect();
    let rows = wrap(&text, inner);
    let longest = rows.iter().map(|r| r.chars().count()).max().unwrap_or(0);
    let w = (longest.max(title.chars().count() + 2) + 4) as u16;
    let h = (rows.len() as u16).saturating_add(2);
    let rect = overlay(buf, area, w, h, title, app);
    let style = t.log(log_level(&line.what));
    for (i, r) in rows.iter().enumerate() {
        let y = rect.y + 1 + i as u16;
        if y + 1 >= rect.y + rect.height {
            break;
        }
        buf.set_stringn(
            rect.x + 2,
            y,
            r,
            rect.width.saturating_sub(4) as usize,
            style,
        );
    }
}

/// `text` in rows of at most `w` characters, broken at spaces where there is one.
pub fn wrap(text: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut rows = Vec::new();
    let mut rest: Vec<char> = text.chars().collect();
    while rest.len() > w {
        let cut = rest[..=w]
            .iter()
            .rposition(|c| *c == ' ')
            .filter(|&i| i > 0)
            .unwrap_or(w);
        rows.push(
            rest[..cut]
                .iter()
                .collect::<String>()
                .trim_end()
                .to_string(),
        );
        let skip = if rest.get(cut) == Some(&' ') {
            cut + 1
        } else {
            cut
        };
        rest.drain(..skip);
    }
    rows.push(rest.into_iter().collect());
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_at_spaces_and_loses_nothing() {
        assert_eq!(wrap("abc def ghi", 7), vec!["abc def", "ghi"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), vec![""]);
        let long = "word ".repeat(50);
        let rows = wrap(&long, 13);
        assert!(rows.iter().all(|r| r.chars().count() <= 13));
        assert_eq!(rows.join(" ").split_whitespace().count(), 50);
    }
}
