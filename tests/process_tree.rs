//! The supervised child's whole process tree, end to end through the real `provetop`
//! binary: descendants that leave the child's process group (`setsid`) or are orphaned do
//! not outlive provetop's stop, nor the child's own end.

use std::process::Child;
use std::time::Duration;

use nix::sys::signal::Signal;
use provetop_testkit::faults::*;
use provetop_testkit::procs::{alive, signal, wait_until};

/// A `sleep` argument no other process has: this test's own marker.
fn token(n: u32) -> String {
    format!("{}.{:03}{n}", 300 + n, std::process::id() % 1000)
}

/// Live processes whose command line is exactly `sleep TOKEN`.
fn sleeps(token: &str) -> Vec<u32> {
    let want = format!("sleep\0{token}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == want.as_bytes())
                && alive(*p)
        })
        .collect()
}

fn ppid(pid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Kill what a failed test left behind.
struct Reap(Vec<String>);
impl Drop for Reap {
    fn drop(&mut self) {
        for t in &self.0 {
            for p in sleeps(t) {
                let _ =
                    nix::sys::signal::kill(nix::unistd::Pid::from_raw(p as i32), Signal::SIGKILL);
            }
        }
    }
}

fn start(dir: &std::path::Path, script: &str) -> Child {
    let s = dir.join("s.ptop");
    spawn_headless(dir, &s, &["--", "sh", "-c", script])
}

fn finish(mut pt: Child) -> String {
    use std::io::Read;
    let _ = pt.wait().unwrap();
    let mut err = String::new();
    pt.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    err
}

/// The markers of a test's two sleeps (tokens N and N+1), and their reaper.
fn two_sleeps(n: u32) -> (String, String, Reap) {
    let (a, b) = (token(n), token(n + 1));
    let reap = Reap(vec![a.clone(), b.clone()]);
    (a, b, reap)
}

/// Assert that both sleeps start within 20 s.
#[track_caller]
fn assert_started(a: &str, b: &str) {
    assert!(
        wait_until(Duration::from_secs(20), || sleeps(a).len() == 1
            && sleeps(b).len() == 1),
        "the child's sleeps never started"
    );
}

/// `provetop` of `setsid sleep A & sleep B` (markers N and N+1) recording in DIR, once both
/// sleeps run: the markers, their reaper and provetop.
fn setsid_and_sleep(dir: &std::path::Path, n: u32) -> (String, String, Reap, Child) {
    let (a, b, reap) = two_sleeps(n);
    let pt = start(dir, &format!("setsid sleep {a} & sleep {b}"));
    assert_started(&a, &b);
    (a, b, reap, pt)
}

/// Assert that both sleeps are gone within 5 s; `what` leads the message if not.
#[track_caller]
fn assert_gone(a: &str, b: &str, what: &str) {
    assert!(
        wait_until(Duration::from_secs(5), || sleeps(a).is_empty()
            && sleeps(b).is_empty()),
        "{what}: setsid sleep {:?}, sleep {:?}",
        sleeps(a),
        sleeps(b)
    );
}

/// SIGKILL provetop once its supervisor's once-a-second walk has seen the tree, and assert
/// that the processes `before` are gone within 5 s (`detail` ends the message if not).
#[track_caller]
fn kill_9_and_assert_gone(pt: Child, before: &[u32], detail: impl Fn() -> String) {
    std::thread::sleep(Duration::from_millis(1500));
    signal(pt.id(), Signal::SIGKILL);
    let _ = finish(pt);
    assert!(
        wait_until(Duration::from_secs(5), || before.iter().all(|&p| !alive(p))),
        "left behind after kill -9 of provetop: {}",
        detail()
    );
}

#[test]
fn a_grandchild_that_calls_setsid_does_not_survive_a_sigterm_of_provetop() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, _reap, pt) = setsid_and_sleep(dir.path(), 1);
    signal(pt.id(), Signal::SIGTERM);
    let err = finish(pt);
    assert!(err.contains("session recorded to"), "{err}");
    assert_gone(&a, &b, &format!("left behind (stderr: {err})"));
}

#[test]
fn an_orphaned_grandchild_is_reparented_to_provetop_and_killed_with_the_tree() {
    let (a, b, _reap) = two_sleeps(3);
    let dir = tempfile::tempdir().unwrap();
    // The subshell exits at once: its setsid sleep is an orphan in another session.
    let pt = start(dir.path(), &format!("(setsid sleep {a} &); sleep {b}"));
    let me = pt.id();
    assert!(
        wait_until(Duration::from_secs(20), || {
            sleeps(&a).first().and_then(|p| ppid(*p)) == Some(me) && sleeps(&b).len() == 1
        }),
        "the orphan was not reparented to provetop (ppid {:?}, provetop {me})",
        sleeps(&a).first().and_then(|p| ppid(*p))
    );
    // Long enough for the supervisor's once-a-second walk to have seen the orphan.
    std::thread::sleep(Duration::from_millis(1500));
    signal(pt.id(), Signal::SIGTERM);
    let err = finish(pt);
    assert_gone(&a, &b, &format!("left behind (stderr: {err})"));
}

#[test]
fn a_setsid_grandchild_goes_with_a_child_that_exits_by_itself() {
    let a = token(5);
    let _reap = Reap(vec![a.clone()]);
    let dir = tempfile::tempdir().unwrap();
    let pt = start(dir.path(), &format!("setsid sleep {a} & sleep 2"));
    assert!(
        wait_until(Duration::from_secs(20), || sleeps(&a).len() == 1),
        "the setsid sleep never started"
    );
    let err = finish(pt);
    assert!(err.contains("child exited 0"), "{err}");
    assert!(
        wait_until(Duration::from_secs(5), || sleeps(&a).is_empty()),
        "left behind: {:?}\n{err}",
        sleeps(&a)
    );
}

#[test]
fn a_setsid_grandchild_does_not_survive_q_on_the_screen() {
    use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};
    if !have_tmux("a_setsid_grandchild_does_not_survive_q_on_the_screen") {
        return;
    }
    let (a, b, _reap) = two_sleeps(6);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let cmd = format!(
        "cd {d} && env XDG_STATE_HOME={d}/state XDG_CACHE_HOME={d}/cache XDG_CONFIG_HOME={d}/config {} run --no-record -- sh -c {}; echo PROVETOP-EXIT; sleep 600",
        sh_quote(&provetop_testkit::bins::provetop().display().to_string()),
        sh_quote(&format!("setsid sleep {a} & sleep {b}")),
    );
    let tmux = Tmux::start("tree-q", 100, 30, &cmd);
    assert_started(&a, &b);
    tmux.keys(&["q"]);
    tmux.wait_for("provetop's exit", Duration::from_secs(30), |s| {
        s.contains("PROVETOP-EXIT")
    });
    assert_gone(&a, &b, "left behind after q");
}

#[test]
fn a_setsid_grandchild_does_not_survive_a_sigkill_of_provetop() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, _reap, pt) = setsid_and_sleep(dir.path(), 8);
    let before: Vec<u32> = sleeps(&a).into_iter().chain(sleeps(&b)).collect();
    kill_9_and_assert_gone(pt, &before, || {
        format!(
            "{:?} (setsid sleep {:?}, sleep {:?})",
            before.iter().filter(|&&p| alive(p)).collect::<Vec<_>>(),
            sleeps(&a),
            sleeps(&b)
        )
    });
}

#[test]
fn a_wrapper_scripts_setsid_child_does_not_survive_a_sigkill_of_provetop() {
    let a = token(10);
    let _reap = Reap(vec![a.clone()]);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("wrapper.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nsh -c 'setsid sleep {a} & wait' &\nwait\n"),
    )
    .unwrap();
    let s = dir.path().join("s.ptop");
    let pt = spawn_headless(dir.path(), &s, &["--", "sh", script.to_str().unwrap()]);
    assert!(
        wait_until(Duration::from_secs(20), || sleeps(&a).len() == 1),
        "the wrapper's setsid sleep never started"
    );
    let before = sleeps(&a);
    kill_9_and_assert_gone(pt, &before, || format!("{before:?}"));
}
