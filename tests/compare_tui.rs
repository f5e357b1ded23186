//! The baseline overlay on the replay screen: snapshots at 80×24 and 200×60 (ratatui's
//! `TestBackend`), the alignment cycle and the cursor's two values in process, and end to
//! end in tmux (`provetop replay --baseline`: the `b` key, both values under the cursor).

use std::path::{Path, PathBuf};
use std::time::Duration;

use provetop::app::{Action, App, NS};
use provetop::baseline::{Align, Baseline};
use provetop::replay::ReplayDriver;
use provetop::store::Store;
use provetop::theme::Theme;
use provetop_shared::units::GIB;
use provetop_testkit::bins::{prover, provetop};
use provetop_testkit::fixtures::write_session;
use provetop_testkit::screen::buffer_text;
use provetop_testkit::synth::{records, SynthConfig};
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// DIR/NAME: two minutes of the synthetic session `cfg` (its `seconds` set to 120).
fn two_minutes(dir: &Path, name: &str, cfg: SynthConfig) -> PathBuf {
    let p = dir.join(name);
    write_session(
        &p,
        records(SynthConfig {
            seconds: 120.0,
            ..cfg
        }),
    );
    p
}

/// The session shown: two minutes, a proof every 8 s peaking at 200 GiB.
fn shown(dir: &Path) -> PathBuf {
    two_minutes(dir, "today.ptop", SynthConfig::default())
}

/// The baseline: slower proofs (every 11 s) peaking lower (150 GiB over a 40 GiB floor).
fn baseline(dir: &Path) -> PathBuf {
    let cfg = SynthConfig {
        proof_s: 11.0,
        peak: 150 * GIB,
        floor: 40 * GIB,
        ..SynthConfig::default()
    };
    two_minutes(dir, "monday.ptop", cfg)
}

/// A replay of `shown` with `base` drawn in, at 75 s.
fn replay(dir: &Path) -> (ReplayDriver, App) {
    let store = Store::open(&shown(dir)).unwrap();
    let base = Baseline::from_store(&Store::open(&baseline(dir)).unwrap());
    let mut d = ReplayDriver::new(store);
    let mut app = d.app(1.0, Theme::mono());
    app.baseline = Some(base.for_replay(d.store().unwrap(), Align::Start));
    let start = d.start();
    d.seek(&mut app, start + 75 * NS);
    (d, app)
}

fn draw(app: &mut App, w: u16, h: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut drawn = app.view.drawn;
    term.draw(|f| drawn = provetop::ui::draw(f, app)).unwrap();
    app.view.drawn = drawn;
    buffer_text(term.backend().buffer())
}

/// The chart and the timeline (from the memory title to the log's): what the overlay draws
/// into, without the header, log and footer that other snapshots cover.
fn overlay_part(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let from = lines
        .iter()
        .position(|l| l.starts_with("─ memory"))
        .expect("chart");
    let to = lines
        .iter()
        .position(|l| l.starts_with("─ log"))
        .expect("log");
    lines[from..to].join("\n") + "\n"
}

#[test]
fn baseline_overlay_80x24() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut app) = replay(dir.path());
    insta::assert_snapshot!(overlay_part(&draw(&mut app, 80, 24)));
}

#[test]
fn baseline_overlay_200x60() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut app) = replay(dir.path());
    let text = draw(&mut app, 200, 60);
    // The tall screen has room for the baseline's phases as a second row set.
    assert!(text.contains("b synth│"), "{text}");
    insta::assert_snapshot!(overlay_part(&text));
}

#[test]
fn baseline_overlay_with_the_cursor_at_proof_two_200x60() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, mut app) = replay(dir.path());
    draw(&mut app, 200, 60);
    app.act(Action::BaselineAlign);
    app.act(Action::BaselineAlign);
    app.act(Action::Cursor(-1));
    app.act(Action::Cursor(-10));
    insta::assert_snapshot!(overlay_part(&draw(&mut app, 200, 60)));
}

/// `rss`, `base rss` and `Δ rss` from the cursor box, in GiB.
fn cursor_values(screen: &str) -> Option<(f64, f64, f64)> {
    // The value after `key` and its spaces: "93.9 GiB", "+15.2 GiB", "512.0 MiB".
    let value = |rest: &str| -> Option<f64> {
        let mut w = rest.split_whitespace();
        let v: f64 = w.next()?.trim_start_matches('+').parse().ok()?;
        match w.next()? {
            "GiB" => Some(v),
            "MiB" => Some(v / 1024.0),
            _ => None,
        }
    };
    // `key` followed by at least two spaces (the box's columns), whole: "rss" is not the
    // end of "base rss".
    let find = |key: &str| {
        screen.lines().find_map(|l| {
            let pat = format!("{key}  ");
            let mut from = 0;
            while let Some(i) = l[from..].find(&pat) {
                let at = from + i;
                let before = &l[..at];
                if before.ends_with(' ') && !before.ends_with("base ") && !before.ends_with("Δ ") {
                    return value(&l[at + key.len()..]);
                }
                from = at + pat.len();
            }
            None
        })
    };
    Some((find("rss")?, find("base rss")?, find("Δ rss")?))
}

#[test]
fn the_alignment_key_cycles_start_and_each_proof_and_the_cursor_gives_both_values() {
    let dir = tempfile::tempdir().unwrap();
    let (d, mut app) = replay(dir.path());
    let shown_proofs = d.store().unwrap().finished_proofs().len();
    assert!(shown_proofs >= 8, "{shown_proofs}");
    let b = app.baseline.as_ref().unwrap();
    let both = b
        .model()
        .proofs
        .finished
        .iter()
        .filter(|p| p.ok == Some(true))
        .count()
        .min(shown_proofs);
    assert_eq!(b.align, Align::Start);
    // start → proof 1 → … → proof N of both → start.
    let mut seen = vec![app.baseline.as_ref().unwrap().align];
    for _ in 0..both {
        app.act(Action::BaselineAlign);
        seen.push(app.baseline.as_ref().unwrap().align);
    }
    assert_eq!(seen[1], Align::Proof(0));
    assert_eq!(seen[both], Align::Proof(both - 1));
    assert_eq!(
        app.flash.as_ref().unwrap().text,
        format!("baseline aligned at proof {both}")
    );
    app.act(Action::BaselineAlign);
    assert_eq!(app.baseline.as_ref().unwrap().align, Align::Start);

    // Proof 2 of each put together: the baseline's proof 2 starts under the shown proof 2.
    app.act(Action::BaselineAlign);
    app.act(Action::BaselineAlign);
    let b = app.baseline.as_ref().unwrap();
    let starts: Vec<u64> = d
        .store()
        .unwrap()
        .finished_proofs()
        .iter()
        .map(|p| p.unwrap().start)
        .collect();
    let seg = b.segment_at(&app.model, starts[1]).unwrap();
    let mut base_starts: Vec<u64> = b
        .model()
        .proofs
        .finished
        .iter()
        .filter(|p| p.ok == Some(true))
        .map(|p| p.start)
        .collect();
    base_starts.sort_unstable();
    assert_eq!(seg.map(starts[1]), Some(base_starts[1]));

    // The cursor box: the shown RSS, the baseline's, and their difference.
    draw(&mut app, 120, 40);
    app.act(Action::Cursor(-1));
    let s = draw(&mut app, 120, 40);
    let (rss, base, diff) = cursor_values(&s).unwrap_or_else(|| panic!("{s}"));
    assert!((rss - base - diff).abs() < 0.15, "{rss} {base} {diff}\n{s}");
    assert!(s.contains("base@proof 2"), "{s}");
}

#[test]
fn replay_with_a_baseline_in_tmux_cycles_the_alignment_and_shows_both_values() {
    if !have_tmux("replay_with_a_baseline_in_tmux_cycles_the_alignment_and_shows_both_values") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (today, monday) = (shown(dir.path()), baseline(dir.path()));
    let cmd = format!(
        "{} replay --speed 1 --baseline {} {}; echo REPLAY-EXIT=$?; sleep 600",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&monday.display().to_string()),
        sh_quote(&today.display().to_string())
    );
    let tmux = Tmux::start("baseline", 120, 40, &cmd);
    let t = Duration::from_secs(20);
    tmux.wait_for("the replay screen with the baseline", t, |s| {
        s.contains("base@start") && s.contains("b:align")
    });
    tmux.keys(&["Space"]);
    tmux.wait_for("pause", t, |s| s.contains("‖ pause"));
    tmux.keys(&["g"]);
    tmux.keys(&["S-Right"]);
    tmux.keys(&[","]);
    let s = tmux.wait_for("both values under the cursor", t, |s| {
        cursor_values(s).is_some()
    });
    let (rss, base, diff) = cursor_values(&s).unwrap();
    assert!((rss - base - diff).abs() < 0.15, "{rss} {base} {diff}\n{s}");
    tmux.keys(&["b"]);
    let s = tmux.wait_for("aligned at proof 1", t, |s| {
        s.contains("baseline aligned at proof 1") && s.contains("base@proof 1")
    });
    let (rss1, base1, diff1) = cursor_values(&s).unwrap_or_else(|| panic!("{s}"));
    assert_eq!(rss1, rss, "the shown session does not move");
    assert!(
        (rss1 - base1 - diff1).abs() < 0.15,
        "{rss1} {base1} {diff1}\n{s}"
    );
    tmux.keys(&["b"]);
    tmux.wait_for("aligned at proof 2", t, |s| s.contains("base@proof 2"));
    tmux.keys(&["q"]);
    let s = tmux.wait_for("exit", t, |s| s.contains("REPLAY-EXIT="));
    assert!(s.contains("REPLAY-EXIT=0"), "{s}");
    assert_eq!(tmux.format("#{alternate_on}"), "0");
}

#[test]
fn the_live_screen_tracks_each_proof_against_the_baseline() {
    if !have_tmux("the_live_screen_tracks_each_proof_against_the_baseline") {
        return;
    }
    prover();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let base = provetop_testkit::fixtures::repo().join("assets/all-modes-cpu.ptop");
    let cmd = format!(
        "cd {d} && env XDG_STATE_HOME={d}/state XDG_CACHE_HOME={d}/cache XDG_CONFIG_HOME={d}/config {} run --partitions 2 --constraints 1000 --no-record --baseline {}; echo PROVETOP-EXIT=$?; sleep 600",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&base.display().to_string()),
    );
    let tmux = Tmux::start("live-baseline", 120, 40, &cmd);
    let long = Duration::from_secs(180);
    tmux.wait_for("a proof against the baseline", long, |s| {
        s.contains("base@each proof") && s.contains("proof 1 done")
    });
    tmux.keys(&["Left"]);
    let s = tmux.wait_for("both values under the cursor", long, |s| {
        cursor_values(s).is_some()
    });
    let (rss, base, diff) = cursor_values(&s).unwrap();
    // The bundled prover on this workload holds some MiB: shown to 0.1 MiB.
    assert!(rss < 1.0 && base < 1.0, "{rss} {base}\n{s}");
    assert!(
        (rss - base - diff).abs() < 0.15 / 1024.0,
        "{rss} {base} {diff}\n{s}"
    );
    tmux.keys(&["q"]);
    let s = tmux.wait_for("exit", long, |s| s.contains("PROVETOP-EXIT="));
    assert!(s.contains("PROVETOP-EXIT=0"), "{s}");
}

#[test]
fn a_baseline_is_refused_headless_and_while_following() {
    let dir = tempfile::tempdir().unwrap();
    let b = baseline(dir.path());
    let out = provetop_testkit::bins::run_provetop(&[
        "run",
        "--headless",
        "--no-record",
        "--baseline",
        b.to_str().unwrap(),
    ]);
    out.assert_fails(
        1,
        &["--baseline draws on the live screen; --headless has none"],
    );
    let out = provetop_testkit::bins::run_provetop(&[
        "replay",
        "--follow",
        "--baseline",
        b.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    out.assert_fails(2, &["cannot be used with"]);
    let out = provetop_testkit::bins::run_provetop(&[
        "replay",
        "--baseline",
        "/nonexistent/base.ptop",
        b.to_str().unwrap(),
    ]);
    out.assert_fails(1, &["--baseline: ", "/nonexistent/base.ptop"]);
}
