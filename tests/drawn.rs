//! The screen as text: an app drawn once into ratatui's TestBackend (shared by the screen
//! and records groups' files).

use provetop::app::App;
use provetop_testkit::screen::buffer_text;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// `app` drawn at `w`×`h`, one line a row.
pub fn screen_text(app: &App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| {
        provetop::ui::draw(f, app);
    })
    .unwrap();
    buffer_text(term.backend().buffer())
}
