//! The text of a screen drawn into ratatui's `TestBackend`, for snapshots and assertions.

use ratatui::buffer::Buffer;

/// The buffer's cells row by row, each row without its trailing blanks and ended by a
/// newline.
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        for x in area.left()..area.right() {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The buffer's colours and attributes, for a snapshot of a theme: one letter per cell
/// (`.` for a blank cell of the default style), row by row like [`buffer_text`], then a
/// legend naming each letter's style (foreground, background, modifiers), in the order first
/// seen.
pub fn buffer_styles(buf: &Buffer) -> String {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let area = buf.area;
    let mut styles: Vec<String> = Vec::new();
    let mut grid = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        for x in area.left()..area.right() {
            let c = &buf[(x, y)];
            let name = format!("fg {:?} bg {:?} {:?}", c.fg, c.bg, c.modifier);
            let plain = c.fg == ratatui::style::Color::Reset
                && c.bg == ratatui::style::Color::Reset
                && c.modifier.is_empty();
            if plain && c.symbol() == " " {
                line.push('.');
                continue;
            }
            let i = match styles.iter().position(|s| *s == name) {
                Some(i) => i,
                None => {
                    styles.push(name);
                    styles.len() - 1
                }
            };
            line.push(LETTERS.get(i).map_or('?', |b| *b as char));
        }
        grid.push_str(line.trim_end_matches('.'));
        grid.push('\n');
    }
    grid.push_str("--\n");
    for (i, s) in styles.iter().enumerate() {
        let l = LETTERS.get(i).map_or('?', |b| *b as char);
        grid.push_str(&format!("{l}: {s}\n"));
    }
    grid
}
