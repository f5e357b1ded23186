//! Replay: the driver in process (seek, jump, speed against the store), and end to end in
//! tmux (open a recorded session, seek, pause, jump, quit cleanly).

use std::time::Duration;

use provetop::app::{Action, Screen, NS};
use provetop::event_loop::Driver as _;
use provetop::model::Model;
use provetop::replay::ReplayDriver;
use provetop::store::Store;
use provetop::theme::Theme;
use provetop_shared::Phase;
use provetop_testkit::bins::provetop;
use provetop_testkit::synth::{self, records, SynthConfig};
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};

/// Two minutes of the synthetic prover, recorded under `dir`.
fn recorded(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("recorded.ptop");
    synth::write_session(
        &path,
        SynthConfig {
            seconds: 120.0,
            ..SynthConfig::default()
        },
    );
    path
}

#[test]
fn synthetic_session_is_shaped_like_a_prover() {
    let recs = records(SynthConfig::default());
    let mut m = Model::new(Default::default());
    for r in &recs {
        m.apply(r);
    }
    assert_eq!(m.series.total(), 1200);
    assert!(m.prover.proofs_done >= 6, "{}", m.prover.proofs_done);
    assert!(m.spans.closed.iter().any(|s| s.phase == Phase::MsmH));
    assert!(
        m.spans
            .closed
            .iter()
            .filter(|s| s.phase == Phase::Synthesis)
            .count()
            >= 24
    );
    // Records are in time order.
    assert!(recs.windows(2).all(|w| w[0].t <= w[1].t));
}

#[test]
fn seek_play_and_jump() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = ReplayDriver::new(Store::open(&recorded(dir.path())).unwrap());
    let mut app = d.app(1.0, Theme::mono());
    let start = d.start();
    d.act(&mut app, Action::Seek(60));
    assert_eq!(app.clock, start + 60 * NS);
    let done = app.model.prover.proofs_done;
    assert!(done >= 6, "{done}");
    d.act(&mut app, Action::Seek(-10));
    assert_eq!(app.clock, start + 50 * NS);
    assert!(app.model.prover.proofs_done < done);
    // Same state as applying the records directly.
    assert_eq!(
        app.model.records(),
        d.store().unwrap().index_at(start + 50 * NS) as u64
    );
    d.act(&mut app, Action::NextPhase);
    let t = app.clock;
    assert!(t > start + 50 * NS);
    d.act(&mut app, Action::PrevPhase);
    assert!(app.clock < t);
    d.act(&mut app, Action::End);
    assert_eq!(app.clock, d.end());
    d.act(&mut app, Action::Start);
    assert_eq!(app.clock, start);
    for _ in 0..20 {
        d.act(&mut app, Action::SpeedUp);
    }
    let Screen::Replay(p) = &app.screen else {
        panic!()
    };
    assert_eq!(p.speed, 64.0);
    for _ in 0..20 {
        d.act(&mut app, Action::SpeedDown);
    }
    let Screen::Replay(p) = &app.screen else {
        panic!()
    };
    assert_eq!(p.speed, 0.25);
    d.act(&mut app, Action::PlayPause);
    let Screen::Replay(p) = &app.screen else {
        panic!()
    };
    assert!(!p.playing);
    assert!(!d.poll(&mut app));
}

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
    let path = recorded(dir.path());
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

/// The replay's header (first line) and log at the driver's position, drawn at 120×30.
fn screen_at(d: &mut ReplayDriver, app: &mut provetop::app::App, t: u64) -> String {
    d.seek(app, t);
    crate::drawn::screen_text(app, 120, 30)
}

#[test]
fn a_recording_provetop_did_not_stop_says_so_at_its_end() {
    use provetop::text::ABRUPT_END;
    use provetop_testkit::faults::{child_pid_from, spawn_headless};
    let dir = tempfile::tempdir().unwrap();
    // provetop killed -9 while recording: no stop note, no exit mark.
    let killed = dir.path().join("killed.ptop");
    let mut pt = spawn_headless(dir.path(), &killed, &["--", "sleep", "30"]);
    let child = child_pid_from(&killed, Duration::from_secs(20)).expect("child started");
    assert!(provetop_testkit::procs::wait_until(
        Duration::from_secs(20),
        || { Store::open(&killed).is_ok_and(|s| s.records().len() > 3) }
    ));
    pt.kill().unwrap();
    pt.wait().unwrap();
    // The child goes with provetop (parent-death signal); make sure of it.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    // And one that ended as it should.
    let clean = dir.path().join("clean.ptop");
    let out = provetop_testkit::faults::headless(dir.path(), &clean, &["--", "sleep", "0.3"]);
    assert_eq!(out.status.code(), Some(0));

    let mut d = ReplayDriver::new(Store::open(&killed).unwrap());
    let mut app = d.app(1.0, Theme::mono());
    let (start, end) = (d.start(), d.end());
    let s = screen_at(&mut d, &mut app, start);
    assert!(!s.contains(ABRUPT_END), "{s}");
    let s = screen_at(&mut d, &mut app, end);
    let header = s.lines().next().unwrap();
    assert!(header.contains(ABRUPT_END), "{s}");
    assert!(
        s.lines().skip(1).any(|l| l.contains(ABRUPT_END)),
        "the log says it: {s}"
    );
    // A seek back forgets it; the end says it again, once.
    let s = screen_at(&mut d, &mut app, start);
    assert!(!s.contains(ABRUPT_END), "{s}");
    let s = screen_at(&mut d, &mut app, end);
    assert_eq!(
        s.matches(ABRUPT_END).count(),
        2,
        "header and one log line: {s}"
    );

    let mut d = ReplayDriver::new(Store::open(&clean).unwrap());
    let mut app = d.app(1.0, Theme::mono());
    let end = d.end();
    let s = screen_at(&mut d, &mut app, end);
    assert!(!s.contains(ABRUPT_END), "{s}");
}

/// `replay` (and `replay --follow`) without a terminal: one line saying that replay needs
/// one and naming what reads a session without one, never `run --headless`.
#[test]
fn replay_without_a_terminal_says_it_needs_one_and_names_classify_and_export() {
    let dir = tempfile::tempdir().unwrap();
    let file = recorded(dir.path());
    for follow in [false, true] {
        let mut c = std::process::Command::new(provetop());
        c.arg("replay");
        if follow {
            c.arg("--follow");
        }
        let out = c
            .arg(&file)
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "follow {follow}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "follow {follow}: {err}");
        assert!(
            err.contains("not a terminal")
                && err.contains("replay needs one")
                && err.contains("provetop classify")
                && err.contains("provetop export"),
            "follow {follow}: {err}"
        );
        assert!(!err.contains("--headless"), "follow {follow}: {err}");
    }
}
