//! Replay end to end in tmux: open a recorded session, seek, pause, jump, quit cleanly.

#[path = "support/tui.rs"]
mod support;

use std::time::Duration;

use provetop::synth::{records, SynthConfig};
use provetop_shared::session::{SessionHeader, SessionWriter};
use support::{have_tmux, provetop, sh_quote, Tmux};

/// "0:12.3" from the position bar ("‖ pause    1× 0:12.3 / 1:59.9 ━━●──").
fn position(screen: &str) -> Option<f64> {
    let line = screen.lines().find(|l| {
        l.contains(" / ") && (l.contains("pause") || l.contains("play") || l.contains("end"))
    })?;
    let before = line.split(" / ").next()?;
    let pos = before.split_whitespace().last()?;
    let (m, s) = pos.split_once(':')?;
    Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
}

#[test]
fn replay_seek_pause_quit() {
    if !have_tmux("replay_seek_pause_quit") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recorded.ptop");
    let mut w = SessionWriter::create(
        &path,
        &SessionHeader::now(vec!["provetop-prover".into()], 20.0),
    )
    .unwrap();
    for r in records(SynthConfig {
        seconds: 120.0,
        ..SynthConfig::default()
    }) {
        w.append(&r).unwrap();
    }
    w.sync().unwrap();
    let cmd = format!(
        "{} replay --speed 1 {}; echo REPLAY-EXIT=$?; sleep 600",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&path.display().to_string())
    );
    let tmux = Tmux::start("replay", 80, 24, &cmd);
    let t = Duration::from_secs(20);
    let s = tmux.wait_for("the replay screen", t, |s| {
        s.contains("▶ play") && s.contains("memory")
    });
    assert!(s.contains("synth"), "{s}");

    // Pause: the position stops.
    tmux.keys(&["Space"]);
    let s = tmux.wait_for("pause", t, |s| s.contains("‖ pause"));
    let p0 = position(&s).expect("position");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(position(&tmux.capture()), Some(p0), "paused position moved");

    // Seek forward 10 s, then 60 s, then back 10 s.
    tmux.keys(&["Right"]);
    tmux.wait_for("seek +10 s", t, |s| {
        position(s).is_some_and(|p| (p - (p0 + 10.0)).abs() < 0.15)
    });
    tmux.keys(&["S-Right"]);
    tmux.wait_for("seek +60 s", t, |s| {
        position(s).is_some_and(|p| (p - (p0 + 70.0)).abs() < 0.15)
    });
    tmux.keys(&["Left"]);
    tmux.wait_for("seek -10 s", t, |s| {
        position(s).is_some_and(|p| (p - (p0 + 60.0)).abs() < 0.15)
    });

    // Next phase start, start and end of the file.
    tmux.keys(&["]"]);
    tmux.wait_for("next phase", t, |s| {
        position(s).is_some_and(|p| p > p0 + 60.0 && p < p0 + 70.0)
    });
    tmux.keys(&["g"]);
    tmux.wait_for("start", t, |s| position(s) == Some(0.0));
    tmux.keys(&["G"]);
    tmux.wait_for("end", t, |s| position(s).is_some_and(|p| p > 119.0));

    // The cursor shows exact values.
    tmux.keys(&[","]);
    tmux.wait_for("cursor box", t, |s| s.contains(" at ") && s.contains("GiB"));

    tmux.keys(&["q"]);
    let s = tmux.wait_for("exit", t, |s| s.contains("REPLAY-EXIT="));
    assert!(s.contains("REPLAY-EXIT=0"), "{s}");
    assert_eq!(tmux.format("#{alternate_on}"), "0");
}
