//! Render time per frame: the live screen with a 1-hour window of 20 Hz samples (72 000
//! points under the chart) plus prover events, drawn into ratatui's `TestBackend` at 80×24
//! and 200×60. Goal: ≤ 5 ms per frame.

use criterion::{criterion_group, criterion_main, Criterion};
use provetop::app::{App, Screen, View};
use provetop::theme::Theme;
use provetop_testkit::synth::{Synth, SynthConfig};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn app_with_hour() -> App {
    let cfg = SynthConfig {
        seconds: 3700.0,
        hz: 20.0,
        proof_s: 30.0,
        ..SynthConfig::default()
    };
    let mut app = App::new(Screen::Run, Default::default(), Theme::colored(), cfg.t0);
    for r in Synth::new(cfg) {
        app.clock = app.clock.max(r.t);
        app.model.apply(&r);
    }
    app.view.zoom = View::zoom_for(3600.0);
    app
}

fn bench(c: &mut Criterion) {
    let mut app = app_with_hour();
    for (w, h) in [(80u16, 24u16), (200, 60)] {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        c.bench_function(&format!("frame {w}x{h}, 1 h window at 20 Hz"), |b| {
            b.iter(|| {
                term.draw(|f| {
                    provetop::ui::draw(f, &app);
                })
                .unwrap();
            })
        });
    }
    // With the cursor box (a value lookup and the phases under it).
    app.act(provetop::app::Action::Cursor(-40));
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    c.bench_function("frame 200x60 with cursor, 1 h window", |b| {
        b.iter(|| {
            term.draw(|f| {
                provetop::ui::draw(f, &app);
            })
            .unwrap();
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
