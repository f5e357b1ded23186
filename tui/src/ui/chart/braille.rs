//! The chart's canvas: a grid of braille cells, two dots across and four down per cell, each
//! cell in the style of the last dot set in it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

/// A grid of braille cells; dot (x, y) with y = 0 at the bottom.
pub struct Braille {
    w: u16,
    h: u16,
    bits: Vec<u8>,
    style: Vec<Style>,
}

impl Braille {
    /// Empty grid of `w`×`h` cells.
    pub fn new(w: u16, h: u16) -> Self {
        let n = w as usize * h as usize;
        Braille {
            w,
            h,
            bits: vec![0; n],
            style: vec![Style::default(); n],
        }
    }

    /// Dots across.
    pub fn dots_w(&self) -> u32 {
        self.w as u32 * 2
    }

    /// Dots down.
    pub fn dots_h(&self) -> u32 {
        self.h as u32 * 4
    }

    /// Set one dot.
    pub fn set(&mut self, x: u32, y: u32, style: Style) {
        if x >= self.dots_w() || y >= self.dots_h() {
            return;
        }
        let yt = self.dots_h() - 1 - y; // from the top
        let (cx, cy) = ((x / 2) as usize, (yt / 4) as usize);
        let (dx, dy) = (x % 2, yt % 4);
        const MAP: [[u8; 4]; 2] = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];
        let i = cy * self.w as usize + cx;
        self.bits[i] |= MAP[dx as usize][dy as usize];
        self.style[i] = style;
    }

    /// A vertical stroke from `y0` to `y1` (inclusive, any order).
    pub fn vline(&mut self, x: u32, y0: u32, y1: u32, style: Style) {
        for y in y0.min(y1)..=y0.max(y1) {
            self.set(x, y, style);
        }
    }

    /// Paint into a buffer at `area` (same size as the grid).
    pub fn render(&self, buf: &mut Buffer, area: Rect) {
        for cy in 0..self.h.min(area.height) {
            for cx in 0..self.w.min(area.width) {
                let i = cy as usize * self.w as usize + cx as usize;
                if self.bits[i] != 0 {
                    let ch = char::from_u32(0x2800 + self.bits[i] as u32).unwrap_or(' ');
                    if let Some(cell) = buf.cell_mut((area.x + cx, area.y + cy)) {
                        cell.set_char(ch).set_style(self.style[i]);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braille_dots() {
        let mut g = Braille::new(2, 1);
        g.set(0, 3, Style::default()); // top-left
        g.set(3, 0, Style::default()); // bottom-right
        let mut buf = Buffer::empty(Rect::new(0, 0, 2, 1));
        g.render(&mut buf, Rect::new(0, 0, 2, 1));
        assert_eq!(buf[(0, 0)].symbol(), "⠁");
        assert_eq!(buf[(1, 0)].symbol(), "⢀");
    }
}
