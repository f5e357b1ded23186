//! End to end in a pseudo-terminal (tmux): the real `provetop` supervising the real bundled
//! prover on a tiny workload. The screen must show phase names and memory numbers from the
//! run, the prover must obey the keys, `q` must restore the terminal and leave no child.

use std::time::Duration;

use provetop_shared::session::load;
use provetop_shared::{Control, Event, RecordBody};
use provetop_testkit::bins::{panicking_screen, prover, provetop};
use provetop_testkit::procs::alive;
use provetop_testkit::tmux::{have_tmux, header_pid, sh_quote, start_sleeper, Tmux};

fn proofs_done(screen: &str) -> u64 {
    screen
        .split("proofs ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn has_memory_number(screen: &str) -> bool {
    // The legend: "rss 50.6M" — a number with a unit right after "rss ".
    screen.lines().any(|l| {
        l.split("rss ").skip(1).any(|rest| {
            let num: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            !num.is_empty() && rest[num.len()..].starts_with(['K', 'M', 'G'])
        })
    })
}

#[test]
fn live_screen_with_real_prover() {
    if !have_tmux("live_screen_with_real_prover") {
        return;
    }
    prover();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let session = dir.path().join("live.ptop");
    let cmd = format!(
        "cd {d} && env XDG_STATE_HOME={d}/state XDG_CACHE_HOME={d}/cache XDG_CONFIG_HOME={d}/config {} run --partitions 2 --constraints 1000 --record {}; echo PROVETOP-EXIT=$?; sleep 600",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&session.display().to_string()),
    );
    let tmux = Tmux::start("live", 80, 24, &cmd);
    let long = Duration::from_secs(180);

    // Phase names from the prover's events and memory numbers from the sampler.
    let screen = tmux.wait_for("phase names and memory numbers", long, |s| {
        // Gantt rows are "label│bars": a prover phase name left of the bar.
        let phases = s.lines().any(|l| {
            l.split_once('│').is_some_and(|(label, bars)| {
                ["synth", "msm", "fft_h", "prove", "verify"]
                    .iter()
                    .any(|p| label.contains(p))
                    && !bars.trim().is_empty()
            })
        });
        phases && has_memory_number(s) && proofs_done(s) >= 1
    });
    assert!(screen.contains("running pid"), "{screen}");
    let pid = header_pid(&screen).expect("pid in the header");
    assert!(alive(pid), "prover {pid} should be running");
    assert_eq!(
        tmux.format("#{alternate_on}"),
        "1",
        "TUI runs on the alternate screen"
    );

    // Keys reach the prover: pause, resume, a mode switch.
    tmux.keys(&["p"]);
    tmux.wait_for("the prover to pause", long, |s| s.contains("paused pid"));
    tmux.keys(&["p"]);
    tmux.wait_for("the prover to resume", long, |s| s.contains("running pid"));
    tmux.keys(&["3"]);
    tmux.wait_for("mode sps", long, |s| s.contains("mode sps"));

    // Help is drawn from the key table.
    tmux.keys(&["?"]);
    // (A capture may land while the terminal is still drawing the box: waited for whole.)
    let help = tmux.wait_for("help", Duration::from_secs(10), |s| {
        s.contains("keys (? or Esc") && s.contains("pause / resume the prover")
    });
    assert!(help.contains("q  quit"), "{help}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("help closed", Duration::from_secs(10), |s| {
        !s.contains("keys (? or Esc")
    });

    tmux.keys(&["q"]);
    let after = tmux.wait_for("provetop to exit", Duration::from_secs(60), |s| {
        s.contains("PROVETOP-EXIT=")
    });
    assert!(after.contains("PROVETOP-EXIT=0"), "{after}");
    assert!(after.contains("session recorded to"), "{after}");
    assert_eq!(
        tmux.format("#{alternate_on}"),
        "0",
        "terminal left the alternate screen"
    );
    assert!(!alive(pid), "prover {pid} outlived provetop");

    let loaded = load(&session).expect("session loads");
    let has = |f: &dyn Fn(&RecordBody) -> bool| loaded.records.iter().any(|r| f(&r.body));
    assert!(has(&|b| matches!(b, RecordBody::Sample(_))));
    assert!(has(&|b| matches!(
        b,
        RecordBody::Event(Event::PhaseStarted { .. })
    )));
    assert!(has(&|b| matches!(b, RecordBody::Control(Control::Pause))));
    assert!(has(&|b| matches!(
        b,
        RecordBody::Control(Control::SetMode { .. })
    )));
}

#[test]
fn sigterm_restores_terminal_and_stops_child() {
    if !have_tmux("sigterm_restores_terminal_and_stops_child") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (tmux, me, child) = start_sleeper("sigterm", None, dir.path());
    assert!(alive(child));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(me as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let s = tmux.wait_for("exit", Duration::from_secs(30), |s| {
        s.contains("PROVETOP-EXIT=")
    });
    assert!(s.contains("PROVETOP-EXIT=143"), "{s}");
    assert!(s.contains("session recorded to"), "{s}");
    assert_eq!(tmux.format("#{alternate_on}"), "0");
    assert!(!alive(child), "child {child} outlived provetop");
}

#[test]
fn panic_restores_terminal_kills_child_keeps_recording() {
    if !have_tmux("panic_restores_terminal_kills_child_keeps_recording") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The live screen as `provetop run` builds it (same monitor, panic hook and cleanup),
    // with a driver that panics 3 s in: provetop itself has no such switch.
    let program = format!(
        "env RUST_BACKTRACE=0 {} 3000 {}/s.ptop",
        sh_quote(&panicking_screen().display().to_string()),
        dir.path().display()
    );
    let (tmux, _me, child) = start_sleeper("panic", Some(program), dir.path());
    let s = tmux.wait_for("exit", Duration::from_secs(30), |s| {
        s.contains("PROVETOP-EXIT=")
    });
    assert!(s.contains("PROVETOP-EXIT=101"), "{s}");
    assert!(s.contains("panicking on purpose"), "{s}");
    assert_eq!(tmux.format("#{alternate_on}"), "0");
    assert_eq!(
        tmux.format("#{mouse_any_flag}"),
        "0",
        "mouse capture left on"
    );
    assert!(!alive(child), "child {child} outlived provetop");
    let l = load(&dir.path().join("s.ptop")).expect("recording survives the panic");
    assert!(l
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Sample(_))));
}
