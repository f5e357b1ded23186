//! Every signal that ends provetop restores the terminal: the ones it can stop on (SIGQUIT,
//! SIGUSR1, SIGALRM, a real-time signal: the session stops as on SIGTERM) and the faults that
//! end it anyway (SIGABRT: the terminal is restored, then the signal ends it). In tmux, with
//! the real binary.

use std::time::Duration;

use nix::sys::signal::Signal;
use provetop_shared::session::load;
use provetop_shared::{Mark, RecordBody};
use provetop_testkit::procs::{alive, wait_until};
use provetop_testkit::tmux::{have_tmux, start_sleeper};

/// Send `sig` (a number: real-time signals have no `Signal`) to provetop on a screen; the
/// screen after it exited, with its exit status checked, the terminal restored and the
/// child gone.
fn end_with(name: &str, sig: i32, dir: &std::path::Path) -> String {
    let (tmux, me, child) = start_sleeper(name, None, dir);
    assert_eq!(tmux.format("#{alternate_on}"), "1");
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { nix::libc::kill(me as i32, sig) }, 0);
    let s = tmux.wait_for("exit", Duration::from_secs(30), |s| {
        s.contains("PROVETOP-EXIT=")
    });
    assert!(s.contains(&format!("PROVETOP-EXIT={}", 128 + sig)), "{s}");
    assert_eq!(
        tmux.format("#{alternate_on}"),
        "0",
        "terminal not restored: {s}"
    );
    assert_eq!(tmux.format("#{cursor_flag}"), "1", "cursor still hidden");
    // Raw mode is off: the shell's line starts at column 0.
    assert!(
        s.lines().any(|l| l.starts_with("PROVETOP-EXIT=")),
        "raw mode left on: {s}"
    );
    assert!(
        wait_until(Duration::from_secs(10), || !alive(child)),
        "child {child} outlived provetop"
    );
    s
}

/// A stop signal: the session is finalized as on SIGTERM, with the signal named.
fn stops_cleanly(name: &str, sig: i32) {
    if !have_tmux(name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let s = end_with(name, sig, dir.path());
    assert!(s.contains("session recorded to"), "{s}");
    let l = load(&dir.path().join("s.ptop")).unwrap();
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert!(
        l.records.iter().any(|r| matches!(
            &r.body,
            RecordBody::Mark(Mark::Note { text }) if text.starts_with("provetop stopping: got ")
        )),
        "no stopping note"
    );
    assert!(l
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Mark(Mark::ChildExited { .. }))));
}

#[test]
fn sigquit_restores_the_terminal_stops_the_child_and_finalizes_the_recording() {
    stops_cleanly(
        "sigquit_restores_the_terminal_stops_the_child_and_finalizes_the_recording",
        Signal::SIGQUIT as i32,
    );
}

#[test]
fn sigusr1_restores_the_terminal_stops_the_child_and_finalizes_the_recording() {
    stops_cleanly(
        "sigusr1_restores_the_terminal_stops_the_child_and_finalizes_the_recording",
        Signal::SIGUSR1 as i32,
    );
}

#[test]
fn sigalrm_restores_the_terminal_stops_the_child_and_finalizes_the_recording() {
    stops_cleanly(
        "sigalrm_restores_the_terminal_stops_the_child_and_finalizes_the_recording",
        Signal::SIGALRM as i32,
    );
}

#[test]
fn a_real_time_signal_restores_the_terminal_and_stops_the_child() {
    stops_cleanly(
        "a_real_time_signal_restores_the_terminal_and_stops_the_child",
        nix::libc::SIGRTMIN() + 3,
    );
}

#[test]
fn sigabrt_restores_the_terminal_before_it_ends_provetop() {
    let name = "sigabrt_restores_the_terminal_before_it_ends_provetop";
    if !have_tmux(name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // What an abort does (a failed allocation, a panic while panicking): provetop cannot
    // stop cleanly, but the terminal is given back and the child dies with it.
    end_with(name, Signal::SIGABRT as i32, dir.path());
    // The recording keeps what was flushed.
    assert!(load(&dir.path().join("s.ptop")).is_ok());
}
