//! `provetop run --headless`: no terminal, exit status passes through, session written.

use std::process::Command;

use provetop_shared::session::load;
use provetop_shared::{Event, Mark, RecordBody};
use provetop_testkit::bins::{memhog, prover, provetop};

fn headless(
    dir: &std::path::Path,
    session: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    Command::new(provetop())
        .args(["run", "--headless", "--record"])
        .arg(session)
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .expect("run provetop")
}

/// provetop exited with `code`; its stderr says why when not.
fn exited_with(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn exit_code_passes_through() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("code.ptop");
    let out = headless(dir.path(), &s, &["--", "sh", "-c", "sleep 0.5; exit 3"]);
    exited_with(&out, 3);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("session recorded to"), "{err}");
    let l = load(&s).unwrap();
    assert!(l
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Sample(_))));
    assert!(l.records.iter().any(|r| matches!(
        r.body,
        RecordBody::Mark(Mark::ChildExited { code: Some(3), .. })
    )));
    assert!(dir.path().join("code.ptop.child.log").exists());
}

#[test]
fn signal_is_128_plus() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("sig.ptop");
    let out = headless(dir.path(), &s, &["--", "sh", "-c", "kill -KILL $$"]);
    assert_eq!(out.status.code(), Some(128 + 9));
    assert!(load(&s).unwrap().records.iter().any(|r| matches!(
        r.body,
        RecordBody::Mark(Mark::ChildExited {
            signal: Some(9),
            ..
        })
    )));
}

#[test]
fn alerts_go_to_stderr_and_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("alert.ptop");
    let out = headless(
        dir.path(),
        &s,
        &["--alert", "crit: rss > 1KiB", "--", "sleep", "1"],
    );
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ALERT crit: rss > 1KiB"), "{err}");
    assert!(load(&s)
        .unwrap()
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Alert(_))));
}

#[test]
fn missing_command_is_one_line_and_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("none.ptop");
    let out = headless(dir.path(), &s, &["--", "/nonexistent/prover"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/prover"), "{err}");
    // Named once: the supervisor's error already says what could not start.
    assert_eq!(err.matches("/nonexistent/prover").count(), 1, "{err}");
    assert!(!s.exists());
}

#[test]
fn real_prover_events_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("prover.ptop");
    let p = prover().display().to_string();
    let out = headless(
        dir.path(),
        &s,
        &[
            "--",
            &p,
            "--proofs",
            "1",
            "--partitions",
            "2",
            "--constraints",
            "1000",
        ],
    );
    exited_with(&out, 0);
    let l = load(&s).unwrap();
    let ev = |f: &dyn Fn(&Event) -> bool| {
        l.records
            .iter()
            .any(|r| matches!(&r.body, RecordBody::Event(e) if f(e)))
    };
    assert!(ev(&|e| matches!(e, Event::Hello { .. })));
    assert!(ev(&|e| matches!(e, Event::PhaseStarted { .. })));
    assert!(ev(&|e| matches!(e, Event::ProofFinished { ok: true, .. })));
}

/// The memory forecast on the real prover: once a proof of a shape has finished, the next one
/// of that shape gets a `predicted_free` reading (here caught by a rule that always holds
/// then), and none before.
#[test]
fn predicted_free_starts_once_a_proof_of_the_shape_has_finished() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("forecast.ptop");
    let p = prover().display().to_string();
    let out = headless(
        dir.path(),
        &s,
        &[
            "--alert",
            "info: predicted_free < 1000TiB",
            "--",
            &p,
            "--proofs",
            "3",
            "--partitions",
            "2",
            "--constraints",
            "8192",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let l = load(&s).unwrap();
    let first_done = l
        .records
        .iter()
        .find(|r| {
            matches!(
                &r.body,
                RecordBody::Event(Event::ProofFinished {
                    proof_id: 1,
                    ok: true,
                    ..
                })
            )
        })
        .expect("proof 1 finished")
        .t;
    let fired: Vec<_> = l
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Alert(a)
                if a.metric == "predicted_free"
                    && a.state == provetop_shared::AlertState::Firing =>
            {
                Some((r.t, a))
            }
            _ => None,
        })
        .collect();
    assert!(!fired.is_empty(), "no predicted_free alert: {err}");
    let (t, a) = fired[0];
    assert!(
        t > first_done,
        "a forecast before any proof of the shape finished"
    );
    assert!(
        a.message.contains("predicted to peak at")
            && a.message.contains("like the last single proofs"),
        "{}",
        a.message
    );
    assert!(
        a.message.starts_with("predicted_free (proof 2 ")
            || a.message.starts_with("predicted_free (proof 3 "),
        "{}",
        a.message
    );
    // What it predicts from: MemAvailable less a need no larger than proof 1's peak.
    assert!(a.value > 0.0 && a.value.is_finite(), "{}", a.value);
}

#[test]
fn watch_errors_are_one_line() {
    let out = Command::new(provetop())
        .args(["watch", "--pid", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim(), "provetop: pid 0: not a process id");
    // The pid as an argument or as --pid: the same check.
    for args in [
        ["watch", "--pid", "4000000"],
        ["watch", "4000000", "--no-record"],
    ] {
        let out = Command::new(provetop()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.trim(),
            "provetop: no process with pid 4000000",
            "{args:?}"
        );
    }
    // Both at once is a usage error (clap's, exit 2).
    let out = Command::new(provetop())
        .args(["watch", "1", "--pid", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_sigterm_the_instant_the_child_starts_still_stops_the_session_cleanly() {
    // The child signals provetop before its first instruction of real work: the stop
    // signals must already be caught then, or SIGTERM's default action ends provetop
    // unrecorded (a race a loaded machine makes likely).
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("early.ptop");
    let out = headless(
        dir.path(),
        &s,
        &["--", "sh", "-c", "kill -TERM $PPID; sleep 30"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("got SIGTERM: stopping the child"), "{err}");
    assert!(err.contains("session recorded to"), "{err}");
    assert_eq!(out.status.code(), Some(128 + 15), "{err}");
    let l = load(&s).unwrap();
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
}

#[test]
fn a_session_ends_with_a_note_of_what_its_vmhwm_resets_cost_and_samples_keep_the_rate() {
    // The headless pipeline has no timer: it is woken by the sampler (at most every 250 ms)
    // and by the child's records. Every sample still arrives, and the session's last note
    // says how many peak resets were made and how long they waited. A reset is made after a
    // sample whose high-water mark is above its RSS: here after each of the child's spikes
    // (one every 60 ms, so nearly every 50 ms sample follows one).
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("resets.ptop");
    let hog = memhog().display().to_string();
    let out = headless(
        dir.path(),
        &s,
        &[
            "--hz",
            "20",
            "--",
            "timeout",
            "2",
            &hog,
            "--spike",
            "4",
            "--hold-ms",
            "5",
            "--every-ms",
            "60",
        ],
    );
    // `timeout` ends the child with SIGTERM: status 124.
    exited_with(&out, 124);
    let l = load(&s).unwrap();
    let samples = l
        .records
        .iter()
        .filter(|r| matches!(r.body, RecordBody::Sample(_)))
        .count();
    assert!(
        (25..=45).contains(&samples),
        "{samples} samples in 2 s at 20 Hz"
    );
    let note = l
        .records
        .iter()
        .find_map(|r| match &r.body {
            RecordBody::Mark(Mark::Note { text }) if text.starts_with("VmHWM resets: ") => {
                Some(text.clone())
            }
            _ => None,
        })
        .expect("a note of the resets");
    let n: u64 = note["VmHWM resets: ".len()..]
        .split(',')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{note}"));
    assert!(n >= 15, "{note}");
}

/// The percents of a note `provetop's own CPU: T % of one core over W s (a P %, b Q %)`:
/// the total, then the parts.
fn own_cpu_percents(note: &str) -> (f64, Vec<f64>) {
    let rest = note
        .strip_prefix("provetop's own CPU: ")
        .unwrap_or_else(|| panic!("{note}"));
    let total: f64 = rest
        .split(" %")
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{note}"));
    let parts = match rest.find(" (") {
        Some(i) => rest[i + 2..]
            .trim_end_matches(')')
            .split(", ")
            .map(|p| {
                p.trim_end_matches(" %")
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("{note}"))
            })
            .collect(),
        None => Vec::new(),
    };
    (total, parts)
}

#[test]
fn a_short_sessions_note_of_provetops_own_cpu_is_never_below_its_per_thread_parts() {
    // The total and its parts are the same nanoseconds: as printed (to 0.01 %, each
    // rounded), the total is at least the parts' sum. Short sessions are where a total in
    // truncated clock ticks read below them.
    let dir = tempfile::tempdir().unwrap();
    for i in 0..3 {
        let s = dir.path().join(format!("own{i}.ptop"));
        let out = headless(dir.path(), &s, &["--hz", "50", "--", "sleep", "0.3"]);
        exited_with(&out, 0);
        let note = load(&s)
            .unwrap()
            .records
            .iter()
            .find_map(|r| match &r.body {
                RecordBody::Mark(Mark::Note { text }) if text.starts_with("provetop's own CPU") => {
                    Some(text.clone())
                }
                _ => None,
            })
            .expect("a note of provetop's own CPU");
        let (total, parts) = own_cpu_percents(&note);
        assert!(!parts.is_empty(), "{note}");
        let sum: f64 = parts.iter().sum();
        let rounding = 0.005 * (parts.len() + 1) as f64;
        assert!(total + rounding >= sum, "{note}");
    }
}

#[test]
fn headless_stderr_says_each_restart_and_the_exit_that_caused_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("restarts.ptop");
    let out = headless(
        dir.path(),
        &s,
        &[
            "--restart",
            "on-failure",
            "--max-restarts",
            "2",
            "--",
            "sh",
            "-c",
            "exit 3",
        ],
    );
    exited_with(&out, 3);
    let err = String::from_utf8_lossy(&out.stderr);
    let restarts: Vec<&str> = err.lines().filter(|l| l.contains("restarting")).collect();
    assert_eq!(restarts.len(), 2, "{err}");
    for (i, l) in restarts.iter().enumerate() {
        assert!(l.starts_with("provetop: child "), "{err}");
        assert!(
            l.contains(" exited with code 3: restarting it in "),
            "{err}"
        );
        assert!(l.ends_with(&format!("(restart {})", i + 1)), "{err}");
    }
}

#[test]
fn a_sigterm_says_the_proof_in_flight_was_stopped_and_does_not_count_it_as_failed() {
    // A prover that answers SIGTERM as the bundled one does: its proof in flight finishes
    // not ok ("aborted"). That is the stop's doing, not a failure of the proof.
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("stopped.ptop");
    let ready = dir.path().join("ready");
    let script = format!(
        r#"ev() {{ printf '{{"ts":0,"type":"%s",%s}}\n' "$1" "$2" >&3; }}
trap 'ev proof_finished "\"proof_id\":1,\"ok\":false,\"verified\":false,\"duration_s\":0.5,\"mode\":\"single\",\"error\":\"aborted\""; exit 0' TERM
ev hello '"protocol":"1.1","prover_version":"0.1.0","pid":'$$',"backend":"cpu","config":{{"partitions":1,"constraints":1,"circuit":"demo","mode":"single"}}'
ev proof_started '"proof_id":1,"mode":"single","sectors":1,"partitions":1,"constraints":1'
touch {ready}
while :; do sleep 0.05; done
"#,
        ready = ready.display()
    );
    let child = Command::new(provetop())
        .args(["run", "--headless", "--record"])
        .arg(&s)
        .args(["--", "sh", "-c", &script])
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run provetop");
    let start = std::time::Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the prover never started its proof"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The proof_started event is read before provetop is stopped.
    std::thread::sleep(std::time::Duration::from_millis(300));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("got SIGTERM: stopping the child"), "{err}");
    assert!(
        err.contains(
            "provetop: 1 proof in flight was stopped with the session (not counted as failed)"
        ),
        "{err}"
    );
    let store = provetop::store::Store::open(&s).expect("the session replays");
    let m = store.model_at(store.end());
    assert_eq!(
        (m.prover.proofs_stopped, m.prover.proofs_failed),
        (1, 0),
        "{err}"
    );
}

#[test]
fn run_and_watch_without_a_terminal_name_their_own_headless_form() {
    let dir = tempfile::tempdir().unwrap();
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id().to_string();
    for (args, want) in [
        (
            vec!["run", "--no-record", "--", "true"],
            "`provetop run --headless`",
        ),
        (
            vec!["watch", "--no-record", pid.as_str()],
            "`provetop watch --headless`",
        ),
    ] {
        let out = Command::new(provetop())
            .args(&args)
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("is not a terminal") && err.contains(want),
            "{args:?}: {err}"
        );
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// A kernel thread's pid: kthreadd (2) where it is one, else the first found.
fn a_kernel_thread() -> u32 {
    let kthread = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            let rest = &s[s.rfind(')').unwrap() + 1..];
            let flags: u64 = rest.split_whitespace().nth(6).unwrap().parse().unwrap();
            flags & 0x0020_0000 != 0
        })
    };
    std::iter::once(2)
        .chain(
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok()),
        )
        .find(|&p| kthread(p))
        .expect("no kernel thread in /proc")
}

#[test]
fn watching_a_kernel_thread_or_a_zombie_says_at_once_why_nothing_can_be_sampled() {
    let dir = tempfile::tempdir().unwrap();
    let watch = |pid: u32| {
        let start = std::time::Instant::now();
        let out = Command::new(provetop())
            .args(["watch", &pid.to_string(), "--headless", "--record"])
            .arg(dir.path().join(format!("{pid}.ptop")))
            .env("XDG_CONFIG_HOME", dir.path())
            .output()
            .unwrap();
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!err.contains("is gone"), "{err}");
        assert!(!dir.path().join(format!("{pid}.ptop")).exists());
        err
    };
    let k = a_kernel_thread();
    let err = watch(k);
    assert!(err.contains(&format!("pid {k} (")), "{err}");
    assert!(err.contains("is a kernel thread"), "{err}");
    assert!(err.contains("nothing to sample"), "{err}");

    // A child of this test that has exited and is not reaped yet.
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    let zombie = || {
        std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
            s.lines()
                .any(|l| l.starts_with("State:") && l.contains('Z'))
        })
    };
    let t0 = std::time::Instant::now();
    while !zombie() {
        assert!(t0.elapsed() < std::time::Duration::from_secs(10));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let err = watch(pid);
    assert!(err.contains("has exited (a zombie"), "{err}");
    child.wait().unwrap();
}
