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
