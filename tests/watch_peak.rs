//! `provetop watch` of a process it did not start, end to end: its VmHWM (which other tools
//! read: `/usr/bin/time`'s max RSS) is left alone unless `--reset-peak` asks, and a second
//! provetop sampling the same tree is noticed and said.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use provetop_testkit::bins::{memhog, provetop};
use provetop_testkit::faults::{child_pid_from, headless_cmd};
use provetop_testkit::procs::{signal, status_kb};

/// A memhog that touched 64 MiB and freed it: VmHWM high, VmRSS low.
struct Hog {
    child: Child,
    pid: u32,
}

impl Hog {
    fn start() -> Hog {
        let mut child = Command::new(memhog())
            .arg("--stdin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let pid: u32 = line.trim().strip_prefix("ready ").unwrap().parse().unwrap();
        let stdin = child.stdin.as_mut().unwrap();
        for cmd in ["anon 64", "free"] {
            writeln!(stdin, "{cmd}").unwrap();
            line.clear();
            out.read_line(&mut line).unwrap();
            assert_eq!(line.trim(), "ok", "{cmd}");
        }
        child.stdout = Some(out.into_inner());
        Hog { child, pid }
    }

    fn hwm_kb(&self) -> u64 {
        status_kb(self.pid, "VmHWM").unwrap()
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `provetop watch PID --headless --no-record EXTRA...` with a private runtime directory.
fn watch(dir: &Path, pid: u32, extra: &[&str]) -> Child {
    Command::new(provetop())
        .args(["watch", &pid.to_string(), "--headless", "--no-record"])
        .args(extra)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_RUNTIME_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// SIGTERM a provetop, and what it said.
fn end(mut p: Child) -> String {
    signal(p.id(), Signal::SIGTERM);
    p.wait().unwrap();
    let mut err = String::new();
    p.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    err
}

#[test]
fn watch_leaves_the_peak_of_a_process_it_did_not_start_alone_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let hog = Hog::start();
    let before = hog.hwm_kb();
    assert!(before >= 60 << 10, "VmHWM {before} kB");
    let pt = watch(dir.path(), hog.pid, &[]);
    std::thread::sleep(Duration::from_millis(1500));
    let err = end(pt);
    let after = hog.hwm_kb();
    assert!(
        after >= before,
        "watch reset VmHWM from {before} kB to {after} kB\n{err}"
    );
    // Asked for: reset, so VmHWM falls back to about the RSS now.
    let pt = watch(dir.path(), hog.pid, &["--reset-peak"]);
    std::thread::sleep(Duration::from_millis(1500));
    let err = end(pt);
    let reset = hog.hwm_kb();
    assert!(
        reset < before / 2,
        "--reset-peak left VmHWM at {reset} kB (was {before} kB)\n{err}"
    );
}

#[test]
fn reset_peak_help_states_the_trade_off() {
    let o = Command::new(provetop())
        .args(["watch", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(o.stdout).unwrap();
    assert!(help.contains("--reset-peak"), "{help}");
    assert!(help.contains("/usr/bin/time"), "{help}");
    assert!(help.contains("only VmRSS"), "{help}");
}

#[test]
fn a_second_provetop_on_the_same_process_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let hog = Hog::start();
    let first = watch(dir.path(), hog.pid, &[]);
    let first_pid = first.id();
    std::thread::sleep(Duration::from_millis(1000));
    let second = watch(dir.path(), hog.pid, &[]);
    std::thread::sleep(Duration::from_millis(1000));
    let err2 = end(second);
    let err1 = end(first);
    assert!(
        err2.contains(&format!(
            "pid {} is also sampled by another provetop (pid {first_pid})",
            hog.pid
        )),
        "second: {err2}"
    );
    assert!(!err1.contains("also sampled"), "first: {err1}");
}

#[test]
fn watching_the_child_of_a_supervising_provetop_is_said_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("run.ptop");
    let run = headless_cmd(dir.path(), &s, &["--", "sleep", "300"])
        .env("XDG_RUNTIME_DIR", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let child = child_pid_from(&s, Duration::from_secs(20)).expect("child started");
    let w = dir.path().join("watch.ptop");
    let watcher = Command::new(provetop())
        .args(["watch", &child.to_string(), "--headless", "--record"])
        .arg(&w)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("XDG_RUNTIME_DIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let err = end(watcher);
    let _ = end(run);
    assert!(err.contains("also sampled by another provetop"), "{err}");
    let l = provetop_testkit::faults::session(&w);
    assert!(
        provetop_testkit::faults::marks(&l)
            .iter()
            .any(|(_, m)| matches!(
                m,
                provetop_shared::Mark::Warning { text } if text.contains("also sampled")
            )),
        "not recorded"
    );
}
