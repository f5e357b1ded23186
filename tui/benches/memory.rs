//! provetop's own memory after a long run: feed 24 hours of 20 Hz samples plus prover events
//! (1.7 M samples, a proof every 30 s) through the model, draw frames along the way as the live
//! screen does, and report this process's RSS. Goal: ≤ 64 MiB.
//!
//! `cargo bench -p provetop --bench memory [-- HOURS]`

use std::time::Instant;

use provetop::app::{App, Screen, View};
use provetop::theme::Theme;
use provetop_testkit::synth::{Synth, SynthConfig};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let hours: f64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(24.0);
    let cfg = SynthConfig {
        seconds: hours * 3600.0,
        hz: 20.0,
        proof_s: 30.0,
        ..SynthConfig::default()
    };
    let rss0 = status_kib("VmRSS:");
    let mut app = App::new(Screen::Run, Default::default(), Theme::colored(), cfg.t0);
    app.view.zoom = View::zoom_for(3600.0);
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let t = Instant::now();
    let mut n = 0u64;
    let mut next_frame = cfg.t0;
    for r in Synth::new(cfg) {
        app.clock = app.clock.max(r.t);
        app.model.apply(&r);
        n += 1;
        // A frame per simulated minute keeps the drawing path in the measurement.
        if r.t >= next_frame {
            term.draw(|f| {
                provetop::ui::draw(f, &app);
            })
            .unwrap();
            next_frame = r.t + 60_000_000_000;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let m = &app.model;
    println!(
        "| run | records | apply rate | series kept | spans | RSS before | RSS after | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| {hours} h at 20 Hz | {n} | {:.2} M records/s | {} full-res + {} buckets of {} s ({:.1} MiB) | {} | {:.1} MiB | {:.1} MiB | {:.1} MiB |",
        n as f64 / secs / 1e6,
        m.series.recent_len(),
        m.series.history_len(),
        m.series.bucket_ns() / 1_000_000_000,
        m.series.heap_bytes() as f64 / (1 << 20) as f64,
        m.spans.closed.len(),
        rss0 as f64 / 1024.0,
        status_kib("VmRSS:") as f64 / 1024.0,
        status_kib("VmHWM:") as f64 / 1024.0,
    );
}
