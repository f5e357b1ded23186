//! Where the last frame drew the parts of the screen that take the mouse, and the cells that
//! do what a key does: kept in [`crate::app::Drawn`] for [`crate::mouse`].

use ratatui::layout::Rect;

use crate::keymap::Action;

/// Most click targets one frame keeps (header items, footer hints, timeline rows).
pub const MAX_TARGETS: usize = 48;

/// Where the last frame drew each part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Areas {
    /// The chart, title and time axis included.
    pub chart: Rect,
    pub usage: Rect,
    pub timeline: Rect,
    pub log: Rect,
    /// Width of the label gutter left of the plots.
    pub gutter: u16,
    /// Cells that do what a key does.
    pub targets: [Option<(Rect, Action)>; MAX_TARGETS],
}

impl Default for Areas {
    fn default() -> Self {
        Areas {
            chart: Rect::default(),
            usage: Rect::default(),
            timeline: Rect::default(),
            log: Rect::default(),
            gutter: 0,
            targets: [None; MAX_TARGETS],
        }
    }
}

impl Areas {
    /// Add a click target (those past [`MAX_TARGETS`] are not kept).
    pub fn target(&mut self, r: Rect, a: Action) {
        if let Some(slot) = self.targets.iter_mut().find(|t| t.is_none()) {
            *slot = Some((r, a));
        }
    }

    /// The action of the target at `(x, y)`, if any.
    pub fn hit(&self, x: u16, y: u16) -> Option<Action> {
        self.targets
            .iter()
            .flatten()
            .find(|(r, _)| inside(*r, x, y))
            .map(|(_, a)| *a)
    }
}

/// Whether cell `(x, y)` is in `r`.
pub fn inside(r: Rect, x: u16, y: u16) -> bool {
    x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
}
