//! Helpers for driving the real `provetop-prover` binary, shared by the integration tests
//! and the bench (which includes this file as its `common` module).
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use provetop_shared::protocol::{parse_event, Event, EventMsg};

/// Tiny workload: proofs take well under a second even in a debug build.
pub const TINY: [&str; 4] = ["--partitions", "2", "--constraints", "1024"];

/// The flags of a workload of `partitions` partitions of `constraints` constraints, then
/// `extra`.
pub fn workload(partitions: u32, constraints: u64, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "--partitions".to_string(),
        partitions.to_string(),
        "--constraints".into(),
        constraints.to_string(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

pub fn bin() -> Command {
    Command::cargo_bin("provetop-prover").expect("binary built")
}

/// The built prover, not a daemon, on the tiny workload with its SRS cache in `cache`.
pub fn tiny(cache: &Path) -> Command {
    let mut c = bin();
    c.args(TINY).arg("--srs-cache").arg(cache);
    c
}

/// The events `prover` prints in a run that must succeed.
pub fn events_of(prover: &mut Command) -> Vec<EventMsg> {
    let out = prover.output().expect("run prover");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_all(&out.stdout)
}

pub fn parse_all(out: &[u8]) -> Vec<EventMsg> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| parse_event(l).unwrap_or_else(|e| panic!("bad event line {l:?}: {e}")))
        .collect()
}

pub fn kinds(ev: &[EventMsg]) -> Vec<&'static str> {
    ev.iter().map(|m| m.event.kind()).collect()
}

pub fn pos(ev: &[EventMsg], f: impl Fn(&Event) -> bool) -> Option<usize> {
    ev.iter().position(|m| f(&m.event))
}

/// The `bye` that ends a stream: why the prover exited and how many proofs it completed.
pub fn bye(ev: &[EventMsg]) -> (&str, u64) {
    match ev.last().map(|m| &m.event) {
        Some(Event::Bye {
            reason,
            proofs_done,
        }) => (reason, *proofs_done),
        _ => panic!(
            "the stream does not end with bye: {:?}",
            ev.iter()
                .rev()
                .take(6)
                .map(|m| &m.event)
                .collect::<Vec<_>>()
        ),
    }
}

/// A daemon with piped stdin/stdout; events are parsed as they arrive.
pub struct Daemon {
    pub child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<EventMsg>,
    pub seen: Vec<EventMsg>,
    /// How long [`Daemon::wait_for`] waits for its event, and the waits for exit for it.
    patience: Duration,
}

impl Daemon {
    /// The built prover as a daemon with `args`, its SRS cache in `cache`.
    pub fn spawn<S: AsRef<OsStr>>(args: &[S], cache: &Path) -> Daemon {
        Daemon::spawn_from(bin(), args, cache, Duration::from_secs(120))
    }

    /// `prover` (a command naming a prover binary) as a daemon with `args`, its SRS cache in
    /// `cache`, waited for up to `patience` at a time.
    pub fn spawn_from<S: AsRef<OsStr>>(
        mut prover: Command,
        args: &[S],
        cache: &Path,
        patience: Duration,
    ) -> Daemon {
        let mut child = prover
            .arg("--daemon")
            .args(args)
            .arg("--srs-cache")
            .arg(cache)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn prover");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let msg = parse_event(&line).unwrap_or_else(|e| panic!("bad event {line:?}: {e}"));
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        Daemon {
            stdin: child.stdin.take(),
            child,
            rx,
            seen: Vec::new(),
            patience,
        }
    }

    pub fn send(&mut self, line: &str) {
        let s = self.stdin.as_mut().expect("stdin open");
        writeln!(s, "{line}").expect("write control");
        s.flush().expect("flush");
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Wait for the first event (after those already seen) matching `f`.
    pub fn wait_for(&mut self, what: &str, f: impl Fn(&Event) -> bool) -> EventMsg {
        let deadline = Instant::now() + self.patience;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(m) => {
                    self.seen.push(m.clone());
                    if f(&m.event) {
                        return m;
                    }
                }
                Err(_) => panic!("timed out waiting for {what}; seen {:?}", kinds(&self.seen)),
            }
        }
    }

    /// Events arriving within `d` (none expected to match `f`).
    pub fn none_within(&mut self, d: Duration, f: impl Fn(&Event) -> bool) -> bool {
        let deadline = Instant::now() + d;
        while let Ok(m) = self
            .rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            let hit = f(&m.event);
            self.seen.push(m);
            if hit {
                return false;
            }
        }
        true
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// A `kB` field of the daemon's `/proc/PID/status` (`key` with its colon: `"VmRSS:"`).
    pub fn status_kb(&self, key: &str) -> Option<u64> {
        provetop_prover::heap::status_kb(Some(self.child.id()), key)
    }

    /// Close stdin, wait for exit; returns the status and every event.
    pub fn finish(mut self) -> (ExitStatus, Vec<EventMsg>) {
        self.stdin = None;
        self.wait()
    }

    /// Wait for exit with stdin still open; returns the status and every event.
    pub fn wait(mut self) -> (ExitStatus, Vec<EventMsg>) {
        let deadline = Instant::now() + self.patience;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("prover did not exit; seen {:?}", kinds(&self.seen));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(m) = self.rx.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(m);
        }
        (status, self.seen)
    }
}

pub fn sigterm(pid: i32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("kill");
}
