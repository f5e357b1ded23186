//! What provetop says about a child that is stopped (SIGSTOP) or that closed its stdin, end
//! to end through the real `provetop` binary: recorded marks, the header, the flash.

use std::time::Duration;

use nix::sys::signal::Signal;
use provetop_shared::Mark;
use provetop_testkit::bins::provetop;
use provetop_testkit::faults::*;
use provetop_testkit::procs::{signal, wait_until};
use provetop_testkit::tmux::{have_tmux, header_pid, sh_quote, Tmux};

#[test]
fn a_stopped_child_is_recorded_as_stopped_and_then_continued() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.ptop");
    let mut pt = spawn_headless(dir.path(), &s, &["--", "sleep", "300"]);
    let child = child_pid_from(&s, Duration::from_secs(20)).expect("child started");
    std::thread::sleep(Duration::from_millis(300));
    signal(child, Signal::SIGSTOP);
    std::thread::sleep(Duration::from_secs(1));
    signal(child, Signal::SIGCONT);
    std::thread::sleep(Duration::from_secs(1));
    signal(pt.id(), Signal::SIGTERM);
    pt.wait().unwrap();
    let l = session(&s);
    let said: Vec<String> = marks(&l)
        .into_iter()
        .filter_map(|(_, m)| match m {
            Mark::ChildStopped { pid, reason, .. } if *pid == child => Some(reason.clone()),
            Mark::ChildContinued { pid } if *pid == child => Some("continued".into()),
            _ => None,
        })
        .collect();
    assert_eq!(said, ["stopped (SIGSTOP)", "continued"]);
}

/// `provetop run --no-record -- sh -c SCRIPT` on a screen.
fn screen(name: &str, dir: &std::path::Path, script: &str) -> Tmux {
    let d = dir.display().to_string();
    let cmd = format!(
        "cd {d} && env XDG_STATE_HOME={d}/state XDG_CACHE_HOME={d}/cache XDG_CONFIG_HOME={d}/config {} run --no-record -- sh -c {}; sleep 600",
        sh_quote(&provetop().display().to_string()),
        sh_quote(script),
    );
    Tmux::start(name, 120, 30, &cmd)
}

#[test]
fn the_header_says_stopped_for_a_sigstopped_child_and_running_again_after_sigcont() {
    if !have_tmux("the_header_says_stopped_for_a_sigstopped_child") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmux = screen("stopped", dir.path(), "exec sleep 300");
    let long = Duration::from_secs(30);
    let s = tmux.wait_for("running", long, |s| s.contains("running pid"));
    let pid = header_pid(&s).expect("pid in the header");
    signal(pid, Signal::SIGSTOP);
    let s = tmux.wait_for("stopped in the header", long, |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.contains(&format!("pid {pid} stopped (SIGSTOP)")))
    });
    assert!(
        s.contains(&format!("child {pid} stopped (SIGSTOP)")),
        "not in the log:\n{s}"
    );
    signal(pid, Signal::SIGCONT);
    let s = tmux.wait_for("running again", long, |s| {
        s.lines().next().is_some_and(|l| l.contains("running pid"))
    });
    assert!(s.contains(&format!("child {pid} continued")), "{s}");
    tmux.keys(&["q"]);
    assert!(wait_until(Duration::from_secs(20), || {
        !provetop_testkit::procs::alive(pid)
    }));
}

#[test]
fn a_control_to_a_child_that_closed_its_stdin_is_not_said_sent() {
    if !have_tmux("a_control_to_a_child_that_closed_its_stdin") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // It speaks the protocol (so the keys are offered), then closes its stdin.
    let script =
        r#"printf '{"ts":1,"type":"state","state":"proving"}\n' >&3; exec 0<&-; exec sleep 300"#;
    let tmux = screen("stdin", dir.path(), script);
    let long = Duration::from_secs(30);
    tmux.wait_for("running", long, |s| s.contains("running pid"));
    std::thread::sleep(Duration::from_millis(500));
    tmux.keys(&["p"]);
    let s = tmux.wait_for("the flash", long, |s| s.contains("not sent"));
    assert!(s.contains("closed its stdin"), "{s}");
    assert!(!s.contains("sent: pause"), "{s}");
    tmux.keys(&["q"]);
}
