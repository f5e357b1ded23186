//! The `?` help screen, generated from the key tables of the screen in use.
//!
//! Laid out to fit: one column when it does, else two side by side; on a narrow screen the
//! descriptions wrap (never cut), and when even that does not fit the height, one column that
//! PgUp/PgDn (↑/↓) scroll, with a line saying what is hidden.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use crate::app::App;

/// One row of the help: a section title, a key with (the first line of) its text, or a
/// continuation of a wrapped text.
#[derive(Clone, Debug, PartialEq)]
enum Row {
    Title(String),
    Key(String, String),
    More(String),
}

/// A section title or a key with all its rows: columns break between blocks only.
type Block = Vec<Row>;

/// Greedy word wrap at `width` columns (a word longer than that is split).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let line = lines.last_mut().expect("one line at least");
            let used = line.chars().count();
            let sep = usize::from(used > 0);
            if used + sep + word.len() <= width {
                if sep == 1 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used > 0 {
                lines.push(String::new());
                continue;
            }
            // An over-long word on an empty line: split it.
            line.extend(word.iter().take(width));
            word.drain(..width.min(word.len()));
            if word.is_empty() {
                break;
            }
            lines.push(String::new());
        }
    }
    lines
}

/// The help's blocks with texts wrapped at `text_w` columns.
fn blocks(app: &App, text_w: usize) -> Vec<Block> {
    let mut out = Vec::new();
    for s in sections(app) {
        out.push(vec![Row::Title(s.title.to_string())]);
        for b in s.bindings {
            let mut lines = wrap(b.help, text_w).into_iter();
            let mut block = vec![Row::Key(
                b.label.to_string(),
                lines.next().unwrap_or_default(),
            )];
            block.extend(lines.map(Row::More));
            out.push(block);
        }
    }
    out
}

/// The sections the help lists: the screen's, the mouse's only while the mouse is on.
fn sections(app: &App) -> impl Iterator<Item = &'static crate::keymap::Section> + Clone {
    let mouse = app.mouse;
    app.sections()
        .iter()
        .filter(move |s| mouse || s.title != crate::keymap::MOUSE.title)
}

/// Split `blocks` into `n` columns of about equal height, between blocks.
fn columns(blocks: Vec<Block>, n: usize) -> Vec<Vec<Row>> {
    let total: usize = blocks.iter().map(Vec::len).sum();
    let per = total.div_ceil(n.max(1));
    let mut cols: Vec<Vec<Row>> = vec![Vec::new()];
    for b in blocks {
        let open = cols.len() < n;
        let last = cols.last_mut().expect("one column at least");
        if open && !last.is_empty() && last.len() + b.len() > per {
            cols.push(b);
        } else {
            last.extend(b);
        }
    }
    cols
}

/// Draw the help over the middle of `area`; returns how far it can scroll.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) -> usize {
    let t = &app.theme;
    let bindings = sections(app).flat_map(|s| s.bindings.iter());
    let key_w = bindings
        .clone()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(1);
    let text_w = bindings.map(|b| b.help.chars().count()).max().unwrap_or(1);
    let natural = key_w + 2 + text_w;
    let inner_h = area.height.saturating_sub(2) as usize;
    // Inside the box: a column of padding on the left, one between columns.
    let room = (area.width as usize).saturating_sub(3);

    let one = columns(blocks(app, text_w), 1);
    let (cols, col_w) = if one[0].len() <= inner_h && natural <= room {
        (one, natural)
    } else {
        // Two columns (texts wrapped to fit) if they hold everything, else one, scrolled.
        let two_w = natural.min(room.saturating_sub(1) / 2);
        let two = (two_w >= key_w + 2 + 16)
            .then(|| columns(blocks(app, two_w - key_w - 2), 2))
            .filter(|two| two.iter().all(|c| c.len() <= inner_h));
        match two {
            Some(two) => (two, two_w),
            None => {
                let w = natural.min(room);
                (columns(blocks(app, w.saturating_sub(key_w + 2)), 1), w)
            }
        }
    };
    let rows_h = cols.iter().map(Vec::len).max().unwrap_or(0);
    // Scrolled when one column is still taller than the screen: the last row says so.
    let hidden = rows_h.saturating_sub(inner_h);
    let scroll_max = if hidden > 0 {
        rows_h - inner_h.saturating_sub(1)
    } else {
        0
    };
    let (shown_h, scroll) = if hidden > 0 {
        (
            inner_h.saturating_sub(1),
            app.view.help_scroll.min(scroll_max),
        )
    } else {
        (rows_h, 0)
    };
    let w = ((col_w + 1) * cols.len() + 1) as u16 + 2;
    let h = (shown_h + usize::from(hidden > 0) + 2) as u16;
    let rect = super::overlay(buf, area, w, h, " keys (? or Esc closes) ", app);
    for (c, col) in cols.iter().enumerate() {
        let cx = rect.x + 2 + (c * (col_w + 1)) as u16;
        for (r, row) in col.iter().skip(scroll).take(shown_h).enumerate() {
            let cy = rect.y + 1 + r as u16;
            let text_x = cx + key_w as u16 + 2;
            let text_room = col_w.saturating_sub(key_w + 2);
            match row {
                Row::Title(title) => {
                    buf.set_stringn(cx, cy, title, col_w, t.bold());
                }
                Row::Key(key, text) => {
                    buf.set_stringn(cx, cy, format!("{key:>key_w$}"), key_w, t.bold());
                    buf.set_stringn(text_x, cy, text, text_room, Style::default());
                }
                Row::More(text) => {
                    buf.set_stringn(text_x, cy, text, text_room, Style::default());
                }
            }
        }
    }
    if hidden > 0 {
        let below = rows_h - scroll - shown_h;
        let note = match (scroll, below) {
            (0, b) => format!("{b} more below: PgDn/↓"),
            (a, 0) => format!("{a} more above: PgUp/↑"),
            (a, b) => format!("{a} above, {b} below: PgUp/PgDn"),
        };
        let y = rect.y + rect.height - 2;
        buf.set_stringn(rect.x + 2, y, note, col_w, t.dim());
    }
    scroll_max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_between_words_and_splits_only_overlong_ones() {
        assert_eq!(
            wrap("zoom in (shorter window)", 10),
            ["zoom in", "(shorter", "window)"]
        );
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("fits", 10), ["fits"]);
        assert_eq!(wrap("", 10), [""]);
    }

    #[test]
    fn columns_break_between_blocks() {
        let k = |s: &str| vec![Row::Key(s.into(), String::new())];
        let wrapped = vec![Row::Key("b".into(), String::new()), Row::More("x".into())];
        let cols = columns(vec![k("a"), wrapped.clone(), k("c"), k("d")], 2);
        assert_eq!(cols.len(), 2);
        assert_eq!(cols[0].len() + cols[1].len(), 5);
        // The wrapped block stays in one piece.
        assert!(cols
            .iter()
            .any(|c| c.windows(2).any(|w| w == wrapped.as_slice())));
    }
}
