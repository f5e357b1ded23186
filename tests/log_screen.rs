//! The screen of a child whose phases come from its log lines: the proofs the lines
//! announce in the header, back-to-back proofs as bars apart, rows of long call names told
//! apart, and the compact timeline's letters named.
//!
//! The records are what the real line grammars make of rust-fil-proofs' and bellperson's
//! lines (in fil_logger's format), fed with samples to the app as live mode feeds it.

use super::drawn::screen_text;
use provetop::app::{App, Screen, NS};
use provetop::theme::Theme;
use provetop_collect::loglines::Engine;
use provetop_shared::{Mark, Record, RecordBody, Sample};

/// When the session starts (monotonic ns).
const T0: u64 = 1_000 * NS;

/// The live app after `lines` (each `(seconds after the start, target, message)`), a sample
/// every 100 ms up to `secs`.
fn app_of(lines: &[(f64, &str, &str)], secs: f64) -> App {
    let mut app = App::new(Screen::Run, Default::default(), Theme::mono(), T0);
    let mut recs = vec![Record::new(
        T0,
        RecordBody::Mark(Mark::ChildStarted {
            pid: 4242,
            command: vec!["fil-seal".into()],
        }),
    )];
    let mut e = Engine::new(Vec::new());
    e.set_floor(T0);
    for (at, target, msg) in lines {
        let t = T0 + (at * 1e9) as u64;
        e.line(&format!("INFO {target}: {msg}"), t, &mut recs);
    }
    let mut t = T0;
    while t <= T0 + (secs * 1e9) as u64 {
        recs.push(Record::new(
            t,
            RecordBody::Sample(Sample {
                rss: 1 << 30,
                ..Sample::default()
            }),
        ));
        t += NS / 10;
    }
    recs.sort_by_key(|r| r.t);
    app.view.zoom = provetop::app::View::zoom_for(secs);
    for r in recs {
        app.clock = app.clock.max(r.t);
        app.model.apply(&r);
    }
    app
}

const BP: &str = "bellperson::groth16::prover::native";
const API: &str = "filecoin_proofs::api";

/// Four bellperson proofs back to back, 2 s each.
fn four_proofs() -> Vec<(f64, &'static str, &'static str)> {
    let mut lines = Vec::new();
    for i in 0..4 {
        let at = 1.0 + 2.0 * i as f64;
        lines.push((at, BP, "Bellperson 0.27.0 is being used!"));
        lines.push((at + 1.0, BP, "synthesis time: 1s"));
        lines.push((at + 1.0, BP, "starting proof timer"));
        lines.push((at + 2.0, BP, "prover time: 1s"));
    }
    lines
}

#[test]
fn the_header_counts_proofs_read_from_log_lines_with_seconds_per_proof() {
    let app = app_of(&four_proofs(), 10.0);
    let s = screen_text(&app, 120, 30);
    let header = s.lines().next().unwrap();
    assert!(header.contains("proofs 4"), "{s}");
    assert!(header.contains("2.0s/proof"), "{s}");
}

#[test]
fn back_to_back_proofs_are_bars_apart_on_the_timeline() {
    // Four window PoSts, each starting as the one before it finishes.
    let mut lines = Vec::new();
    for i in 0..4 {
        let at = 1.0 + 2.0 * i as f64;
        lines.push((at, API, "generate_window_post:start"));
        lines.push((at + 2.0, API, "generate_window_post:finish"));
    }
    let app = app_of(&lines, 10.0);
    assert_eq!(app.model.prover.proofs_done, 4);
    let s = screen_text(&app, 120, 30);
    let row = s
        .lines()
        .find(|l| l.trim_start().starts_with("generate"))
        .unwrap_or_else(|| panic!("{s}"));
    let bar = row.split('│').nth(1).unwrap();
    // Four bars: runs of full cells broken by a gap or a half cell.
    let runs = bar
        .split(|c: char| c != '█')
        .filter(|r| !r.is_empty())
        .count();
    assert_eq!(runs, 4, "{row}");
}

#[test]
fn rows_of_calls_whose_names_begin_alike_keep_distinct_labels() {
    let lines = [
        (1.0, API, "generate_window_post:start"),
        (3.0, API, "generate_window_post:finish"),
        (3.0, API, "generate_winning_post:start"),
        (5.0, API, "generate_winning_post:finish"),
    ];
    let app = app_of(&lines, 6.0);
    let s = screen_text(&app, 120, 30);
    let labels: Vec<&str> = s
        .lines()
        .filter(|l| l.contains('│') && l.contains("post"))
        .map(|l| l.split('│').next().unwrap().trim())
        .collect();
    assert_eq!(labels.len(), 2, "{s}");
    assert_ne!(labels[0], labels[1], "{s}");
}

#[test]
fn the_compact_timeline_names_the_letters_of_phases_read_from_log_lines() {
    let mut lines = vec![
        (
            0.5,
            "filecoin_proofs::api::seal",
            "seal_pre_commit_phase1:start: SectorId(7)",
        ),
        (
            1.0,
            "filecoin_proofs::api::seal",
            "seal_pre_commit_phase1:finish: SectorId(7)",
        ),
        (
            1.0,
            "filecoin_proofs::api::seal",
            "seal_commit_phase1:start: SectorId(7)",
        ),
        (
            1.5,
            "filecoin_proofs::api::seal",
            "seal_commit_phase1:finish: SectorId(7)",
        ),
    ];
    lines.extend(four_proofs());
    let app = app_of(&lines, 10.0);
    // A short screen: the phases share lettered rows, one per group.
    let s = screen_text(&app, 120, 18);
    let title = s
        .lines()
        .find(|l| l.contains("─ phases ─"))
        .unwrap_or_else(|| panic!("{s}"));
    let other = s
        .lines()
        .find(|l| l.trim_start().starts_with("other│"))
        .unwrap_or_else(|| panic!("{s}"));
    let mut drawn: Vec<char> = other
        .split('│')
        .nth(1)
        .unwrap()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    drawn.dedup();
    // Two calls, two letters, neither synthesis' `s`, each named in the legend.
    assert_eq!(drawn.len(), 2, "{other}");
    for c in drawn {
        assert_ne!(c, 's', "{s}");
        assert!(title.contains(&format!(" {c} ")), "{c}: {title}");
    }
    assert!(title.contains("PC1") && title.contains("C1"), "{title}");
}
