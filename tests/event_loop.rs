//! The real event loop (`provetop::event_loop::run`), driven with scripted keys into
//! ratatui's `TestBackend`: once over a replayed file, once over a live session supervising
//! a real child.

use std::time::Duration;

use provetop::app::{App, Screen};
use provetop::event_loop::{self, Exit};
use provetop::live::LiveDriver;
use provetop::model::ChildStatus;
use provetop::monitor::{Monitor, Target};
use provetop::replay::ReplayDriver;
use provetop::settings::Setup;
use provetop::store::Store;
use provetop::theme::Theme;
use provetop_collect::sampler::SamplerConfig;
use provetop_collect::supervisor::{ChildSpec, Restart};
use provetop_shared::classify::Thresholds;
use provetop_shared::clock::mono_ns;
use provetop_testkit::keys::keys;
use provetop_testkit::synth::{write_session, SynthConfig};
use ratatui::backend::{Backend, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::Terminal;

/// A `TestBackend` that keeps the text of every frame flushed, to read screens that later
/// frames replaced.
struct Frames {
    inner: TestBackend,
    seen: Vec<String>,
}

impl Backend for Frames {
    fn draw<'a, I>(&mut self, content: I) -> std::io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }
    fn hide_cursor(&mut self) -> std::io::Result<()> {
        self.inner.hide_cursor()
    }
    fn show_cursor(&mut self) -> std::io::Result<()> {
        self.inner.show_cursor()
    }
    fn get_cursor_position(&mut self) -> std::io::Result<Position> {
        self.inner.get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, p: P) -> std::io::Result<()> {
        self.inner.set_cursor_position(p)
    }
    fn clear(&mut self) -> std::io::Result<()> {
        self.inner.clear()
    }
    fn size(&self) -> std::io::Result<Size> {
        self.inner.size()
    }
    fn window_size(&mut self) -> std::io::Result<WindowSize> {
        self.inner.window_size()
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.seen.push(buffer_text(self.inner.buffer()));
        self.inner.flush()
    }
}

fn text(term: &Terminal<TestBackend>) -> String {
    buffer_text(term.backend().buffer())
}

fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        for x in 0..area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

fn runtime() -> tokio::runtime::Runtime {
    provetop::monitor::runtime().unwrap()
}

#[test]
fn replay_keys_seek_to_the_end_open_help_and_quit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ptop");
    write_session(
        &path,
        SynthConfig {
            seconds: 60.0,
            ..Default::default()
        },
    );
    let store = Store::open(&path).unwrap();
    let end = store.end();
    let mut driver = ReplayDriver::new(store);
    let mut app = driver.app(1.0, Theme::mono());
    let mut term = Terminal::new(TestBackend::new(100, 30)).unwrap();
    let exit = runtime().block_on(event_loop::run(
        &mut term,
        &mut app,
        &mut driver,
        keys(&[(150, 'G'), (250, '?'), (250, 'q')]),
        std::future::pending(),
    ));
    assert_eq!(exit.unwrap(), Exit::Quit);
    assert_eq!(app.clock, end, "G went to the end");
    let screen = text(&term);
    assert!(screen.contains("keys (? or Esc closes)"), "{screen}");
    assert!(screen.contains("playback"), "{screen}");
    // The loop kept what the last frame was drawn with: the plot is narrower than the screen.
    assert!(app.view.drawn.plot_cols > 0 && app.view.drawn.plot_cols < 100);
}

#[test]
fn live_keys_reach_the_view_and_the_driver_and_q_stops_the_child() {
    let setup = Setup {
        sampler: SamplerConfig {
            hz: 10.0,
            ..SamplerConfig::default()
        },
        rules: Vec::new(),
        hook: None,
        thresholds: Thresholds::default(),
        record: None,
        rotation: None,
        metrics: None,
        log_rules: Vec::new(),
        nvtx_phases: Default::default(),
    };
    let target = Target::Command(ChildSpec {
        argv: vec!["sleep".into(), "30".into()],
        env: Vec::new(),
        log_path: None,
        restart: Restart::Never,
        grace: Duration::from_secs(2),
        log_rules: Vec::new(),
        nvtx: Default::default(),
    });
    let rt = runtime();
    let mut term = Terminal::new(Frames {
        inner: TestBackend::new(80, 24),
        seen: Vec::new(),
    })
    .unwrap();
    let (exit, app) = rt.block_on(async {
        let mut app = App::new(Screen::Run, setup.thresholds, Theme::mono(), mono_ns());
        let monitor = Monitor::start(&setup, target, &mut app.model)
            .await
            .unwrap();
        let mut driver = LiveDriver::new(monitor);
        let exit = event_loop::run(
            &mut term,
            &mut app,
            &mut driver,
            // `p` goes to the driver: the child speaks no protocol, and the footer says so.
            keys(&[(1200, '+'), (200, 'p'), (300, 'q')]),
            std::future::pending(),
        )
        .await;
        let frames = &term.backend().seen;
        assert!(
            frames
                .iter()
                .any(|f| f.contains("pause: the child does not speak the provetop protocol")),
            "{frames:?}"
        );
        // The last frame says the child is being stopped (the loop's farewell).
        let last = frames.last().unwrap();
        assert!(last.contains("stopping…"), "{last}");
        driver
            .monitor
            .stop(&mut app.model, "quit by the user")
            .await;
        (exit, app)
    });
    assert_eq!(exit.unwrap(), Exit::Quit);
    assert_eq!(app.view.window_ns(), 30_000_000_000, "+ zoomed in");
    assert!(app.model.records() > 5, "samples arrived");
    assert!(
        matches!(app.model.child, ChildStatus::Exited { .. }),
        "{:?}",
        app.model.child
    );
}
