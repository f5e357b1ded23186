//! Record times at the ends of `u64` (a child's `ts = 2^64-1` once became one): the replay
//! screen draws at start, middle and end, the cursor and zoom keys move, and the real event
//! loop with `G` ends — no wrapped tick loop, no memory growing until an abort.

use std::sync::mpsc;
use std::time::Duration;

use provetop::app::{Action, App};
use provetop::event_loop::{self, Driver as _, Exit};
use provetop::replay::ReplayDriver;
use provetop::store::Store;
use provetop::theme::Theme;
use provetop_shared::{
    Alert, AlertLevel, AlertState, BatchMode, Event, Phase, Record, RecordBody, Sample,
};
use provetop_testkit::fixtures::{h200_hello, phase_event, proof_started_of, write_session, GIB};
use provetop_testkit::keys::keys;
use provetop_testkit::screen::buffer_text;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

const MAX: u64 = u64::MAX;

fn sample(t: u64, gib: u64) -> Record {
    Record::new(
        t,
        RecordBody::Sample(Sample {
            rss: gib * GIB,
            peak: Some(gib * GIB + 4096),
            procs: 1,
            ..Sample::default()
        }),
    )
}

fn event(t: u64, e: Event) -> Record {
    Record::new(t, RecordBody::Event(e))
}

/// A session from time 0 to `u64::MAX`: a phase open across the whole span, one ending
/// near the top, an alert at the very end.
fn records() -> Vec<Record> {
    let phase = |t, started: bool, phase: Phase, partition| {
        event(t, phase_event(phase, partition, (!started).then_some(1.0)))
    };
    vec![
        sample(0, 1),
        event(1, h200_hello(141 * GIB, 2, 1_000_000, 2)),
        event(2, proof_started_of(1, BatchMode::Single, 2, 2_000_000)),
        phase(3, true, Phase::Synthesis, Some(0)),
        phase(4, true, Phase::Synthesis, Some(1)),
        sample(1_000_000_000, 20),
        sample(MAX / 2, 100),
        phase(MAX - 3, false, Phase::Synthesis, Some(0)),
        phase(MAX - 2, true, Phase::MsmH, None),
        sample(MAX - 1, 150),
        Record::new(
            MAX,
            RecordBody::Alert(Alert {
                rule: "crit: rss > 1GiB".into(),
                level: AlertLevel::Crit,
                state: AlertState::Firing,
                metric: "rss".into(),
                value: 150.0 * GIB as f64,
                threshold: GIB as f64,
                message: "rss 150 GiB > 1 GiB".into(),
            }),
        ),
        sample(MAX, 150),
    ]
}

fn draw(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| app.view.drawn = provetop::ui::draw(f, app))
        .unwrap();
    buffer_text(term.backend().buffer())
}

fn store(dir: &std::path::Path) -> Store {
    let path = dir.join("huge.ptop");
    write_session(&path, records());
    Store::open(&path).unwrap()
}

#[test]
fn a_session_spanning_all_of_u64_draws_at_start_middle_and_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = ReplayDriver::new(store(dir.path()));
    let mut app = d.app(64.0, Theme::mono());
    // Each size, each position, with and without a cursor, at every zoom.
    let mut screens = 0;
    for pos in [0, 1_000_000_000, MAX / 2, MAX - 2, MAX] {
        d.seek(&mut app, pos);
        for keys in [
            vec![],
            vec![Action::Cursor(-1)],
            vec![Action::Cursor(-1000), Action::Cursor(1000)],
            vec![Action::ZoomOut; 20],
            vec![Action::ZoomIn; 20],
        ] {
            for a in keys {
                if let Some(a) = app.act(a) {
                    d.act(&mut app, a);
                }
            }
            for (w, h) in [(80, 24), (200, 60)] {
                let text = draw(&mut app, w, h);
                assert!(text.contains("memory"), "{text}");
                screens += 1;
            }
        }
        app.act(Action::Escape);
    }
    assert_eq!(screens, 50);
    // The seek keys saturate at both ends.
    d.act(&mut app, Action::End);
    assert_eq!(app.clock, MAX);
    d.act(&mut app, Action::Seek(i32::MAX));
    assert_eq!(app.clock, MAX);
    d.act(&mut app, Action::Start);
    d.act(&mut app, Action::Seek(-i32::MAX));
    assert_eq!(app.clock, 0);
    for _ in 0..20 {
        d.act(&mut app, Action::SpeedUp);
        d.poll(&mut app);
    }
    let text = draw(&mut app, 120, 40);
    assert!(text.contains("memory"), "{text}");
}

#[test]
fn the_event_loop_with_g_on_a_session_spanning_all_of_u64_ends() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let (tx, rx) = mpsc::channel();
    // On its own thread: a loop that never ends fails the test instead of hanging it.
    std::thread::spawn(move || {
        let mut driver = ReplayDriver::new(store);
        let mut app = driver.app(64.0, Theme::mono());
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
        let rt = provetop::monitor::runtime().unwrap();
        let exit = rt.block_on(event_loop::run(
            &mut term,
            &mut app,
            &mut driver,
            keys(&[
                (100, 'G'),
                (100, 'g'),
                (100, 'G'),
                (100, '-'),
                (100, '-'),
                (100, 'q'),
            ]),
            std::future::pending(),
        ));
        let _ = tx.send((exit.map_err(|e| e.to_string()), app.clock));
    });
    let (exit, clock) = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("the event loop ended");
    assert_eq!(exit.unwrap(), Exit::Quit);
    assert_eq!(clock, MAX, "G went to the end");
}
