//! The real `provetop-prover` binary on tiny circuits: event order, SRS residency and cache,
//! every bad-input case of the brief.

use std::time::Duration;

use crate::common::*;
use provetop_shared::protocol::{Event, Phase, SrsSource};

fn is_srs(e: &Event) -> bool {
    matches!(
        e,
        Event::SrsLoading { .. } | Event::SrsProgress { .. } | Event::SrsReady { .. }
    )
}

/// The phases of one proof, in stream order, as (kind, phase, partition).
fn phases_of(
    ev: &[provetop_shared::protocol::EventMsg],
    id: u64,
) -> Vec<(bool, Phase, Option<u32>)> {
    ev.iter()
        .filter_map(|m| match &m.event {
            Event::PhaseStarted {
                proof_id,
                phase,
                partition,
            } if *proof_id == id => Some((true, phase.clone(), *partition)),
            Event::PhaseEnded {
                proof_id,
                phase,
                partition,
                ..
            } if *proof_id == id => Some((false, phase.clone(), *partition)),
            _ => None,
        })
        .collect()
}

fn check_proof_phases(ev: &[provetop_shared::protocol::EventMsg], id: u64, partitions: u32) {
    let ph = phases_of(ev, id);
    let at = |start: bool, p: Phase, part: Option<u32>| {
        ph.iter()
            .position(|x| *x == (start, p.clone(), part))
            .unwrap_or_else(|| {
                panic!(
                    "proof {id}: no {} {p} {part:?} in {ph:?}",
                    if start { "start" } else { "end" }
                )
            })
    };
    let prove_start = at(true, Phase::Prove, None);
    let prove_end = at(false, Phase::Prove, None);
    for p in 0..partitions {
        assert!(at(true, Phase::Synthesis, Some(p)) < at(false, Phase::Synthesis, Some(p)));
        assert!(
            at(false, Phase::Synthesis, Some(p)) < prove_start,
            "synthesis before prove"
        );
        assert!(
            at(true, Phase::Verify, Some(p)) > prove_end,
            "verify after prove"
        );
    }
    for sub in [
        Phase::FftH,
        Phase::MsmH,
        Phase::MsmL,
        Phase::MsmAB1,
        Phase::MsmB2,
    ] {
        let (s, e) = (at(true, sub.clone(), None), at(false, sub.clone(), None));
        assert!(
            prove_start < s && s < e && e < prove_end,
            "{sub} inside prove: {ph:?}"
        );
    }
    // FFT comes before every multiexp.
    assert!(at(false, Phase::FftH, None) < at(true, Phase::MsmH, None));
}

#[test]
fn standalone_two_proofs_verify_and_the_second_loads_nothing() {
    let cache = tempfile::tempdir().unwrap();
    let ev = events_of(tiny(cache.path()).args(["--proofs", "2"]));
    let k = kinds(&ev);
    assert_eq!(k[0], "hello", "{k:?}");
    assert_eq!(*k.last().unwrap(), "bye");
    assert!(
        ev.windows(2).all(|w| w[0].ts <= w[1].ts),
        "timestamps monotonic"
    );
    match &ev[0].event {
        Event::Hello {
            protocol, config, ..
        } => {
            assert_eq!(protocol, provetop_shared::PROTOCOL_VERSION);
            assert_eq!(config.constraints, 1024);
            assert_eq!(config.partitions, 2);
        }
        _ => unreachable!(),
    }
    // hello → srs_loading(generated) → progress → srs_ready → queued → started …
    let loading = pos(&ev, |e| {
        matches!(
            e,
            Event::SrsLoading {
                source: SrsSource::Generated,
                ..
            }
        )
    })
    .unwrap();
    let progress = pos(&ev, |e| matches!(e, Event::SrsProgress { .. })).unwrap();
    let ready = pos(&ev, |e| {
        matches!(
            e,
            Event::SrsReady {
                source: SrsSource::Generated,
                ..
            }
        )
    })
    .unwrap();
    let queued = pos(&ev, |e| matches!(e, Event::ProofQueued { proof_id: 1, .. })).unwrap();
    let started1 = pos(&ev, |e| {
        matches!(e, Event::ProofStarted { proof_id: 1, .. })
    })
    .unwrap();
    let finished1 = pos(&ev, |e| {
        matches!(e, Event::ProofFinished { proof_id: 1, .. })
    })
    .unwrap();
    let started2 = pos(&ev, |e| {
        matches!(e, Event::ProofStarted { proof_id: 2, .. })
    })
    .unwrap();
    assert!(0 < loading && loading < progress && progress < ready && ready < queued);
    assert!(queued < started1 && started1 < finished1 && finished1 < started2);
    // The SRS stays resident: nothing SRS-related once proving began.
    assert!(!ev[started1..].iter().any(|m| is_srs(&m.event)), "{k:?}");
    for id in [1, 2] {
        check_proof_phases(&ev, id, 2);
        let fin = ev
            .iter()
            .find_map(|m| match &m.event {
                Event::ProofFinished {
                    proof_id,
                    ok,
                    verified,
                    phases,
                    ..
                } if *proof_id == id => Some((*ok, *verified, phases.clone())),
                _ => None,
            })
            .unwrap();
        assert!(fin.0 && fin.1, "proof {id} ok and verified");
        let names: Vec<Phase> = fin.2.iter().map(|p| p.phase.clone()).collect();
        for p in [
            Phase::Synthesis,
            Phase::Prove,
            Phase::FftH,
            Phase::MsmH,
            Phase::Verify,
        ] {
            assert!(names.contains(&p), "breakdown has {p}: {names:?}");
        }
    }
    assert_eq!(bye(&ev), ("done", 2));
    assert!(k.contains(&"memory_report"));

    // A second run finds the cache.
    let ev = events_of(&mut tiny(cache.path()));
    assert!(pos(&ev, |e| matches!(
        e,
        Event::SrsReady {
            source: SrsSource::Disk,
            ..
        }
    ))
    .is_some());
    assert!(pos(&ev, |e| matches!(
        e,
        Event::SrsLoading {
            source: SrsSource::Generated,
            ..
        }
    ))
    .is_none());
    assert!(pos(&ev, |e| matches!(
        e,
        Event::ProofFinished { verified: true, .. }
    ))
    .is_some());
}

fn one_line_error(args: &[&str]) -> String {
    let out = bin()
        .args(args)
        .env_remove("PROVETOP_EVENTS_FD")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line for {args:?}: {err:?}"
    );
    assert!(out.stdout.is_empty(), "no events on a usage error");
    err
}

#[test]
fn bad_flags_exit_2_with_one_line() {
    assert!(one_line_error(&["--bogus"]).contains("--bogus"));
    assert!(one_line_error(&["--constraints", "100"]).contains("--constraints"));
    assert!(one_line_error(&["--constraints", "lots"]).contains("--constraints"));
    assert!(one_line_error(&["--constraints", "4000000000"]).contains("2^31"));
    assert!(one_line_error(&["--constraints", "2000000000"]).contains("memory"));
    assert!(one_line_error(&["--proofs=-1"]).contains("--proofs"));
    assert!(one_line_error(&["--mode", "turbo"]).contains("turbo"));
    assert!(one_line_error(&["--partitions", "0"]).contains("--partitions"));
    assert!(one_line_error(&["--repeat-every", "5"]).contains("--daemon"));
    assert!(one_line_error(&["--events-fd", "977"]).contains("977"));
    assert!(one_line_error(&["--mem-budget", "3 parsecs"]).contains("--mem-budget"));
    assert!(one_line_error(&["--on-sigterm", "explode"]).contains("explode"));
    assert!(one_line_error(&["--gpus", "0,0"]).contains("named twice"));
    assert!(one_line_error(&["--gpus", "first"]).contains("not a GPU index"));
    if cfg!(not(any(feature = "cuda", feature = "supraseal"))) {
        assert!(one_line_error(&["--gpus", "0"]).contains("built for the CPU"));
    }
    let out = bin().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--proofs",
        "--daemon",
        "--repeat-every",
        "--mode",
        "--srs-cache",
        "--events-fd",
        "--on-sigterm",
        "--mem-budget",
        "--threads",
        "--seed",
        "--gpus",
    ] {
        assert!(help.contains(flag), "--help lists {flag}");
    }
}

#[test]
fn malformed_control_lines_are_reported_and_the_daemon_keeps_running() {
    let cache = tempfile::tempdir().unwrap();
    let mut d = Daemon::spawn(&TINY, cache.path());
    d.wait_for("srs ready", |e| matches!(e, Event::SrsReady { .. }));
    d.send("this is not json");
    let e = d.wait_for("error event", |e| matches!(e, Event::Error { .. }));
    assert!(
        matches!(&e.event, Event::Error { message, fatal: false } if message.contains("line 1") && message.contains("JSON"))
    );
    d.send(r#"{"ts":1,"type":"teleport"}"#);
    let e = d.wait_for("error event", |e| matches!(e, Event::Error { .. }));
    assert!(matches!(&e.event, Event::Error { message, .. } if message.contains("teleport")));
    d.send(r#"{"ts":1,"type":"prove","count":"many"}"#);
    let e = d.wait_for("error event", |e| matches!(e, Event::Error { .. }));
    assert!(matches!(&e.event, Event::Error { message, .. } if message.contains("prove")));
    // Still alive and working.
    d.send(r#"{"ts":1,"type":"prove","count":1}"#);
    let f = d.wait_for("proof finished", |e| {
        matches!(e, Event::ProofFinished { .. })
    });
    assert!(matches!(
        f.event,
        Event::ProofFinished {
            ok: true,
            verified: true,
            ..
        }
    ));
    // stdin closed → clean shutdown with bye.
    d.close_stdin();
    let (status, ev) = d.finish();
    assert!(status.success());
    assert_eq!(bye(&ev), ("stdin closed", 1));
}

#[test]
fn stdin_closed_at_once_says_bye() {
    let cache = tempfile::tempdir().unwrap();
    let ev = events_of(
        tiny(cache.path())
            .arg("--daemon")
            .stdin(std::process::Stdio::null()),
    );
    assert_eq!(kinds(&ev)[0], "hello");
    assert_eq!(bye(&ev).0, "stdin closed");
}

fn corrupt_then_check(damage: impl Fn(&std::path::Path), what: &str) {
    let cache = tempfile::tempdir().unwrap();
    let run = || events_of(&mut tiny(cache.path()));
    run();
    let file = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "params"))
        .expect("cache file written");
    damage(&file);
    let ev = run();
    let warn = pos(&ev, |e| matches!(e, Event::Log { level, message, .. } if level == "warn" && message.contains("unusable"))).unwrap_or_else(|| panic!("{what}: warning event"));
    let regen = pos(&ev, |e| {
        matches!(
            e,
            Event::SrsLoading {
                source: SrsSource::Generated,
                ..
            }
        )
    })
    .unwrap_or_else(|| panic!("{what}: regenerated"));
    assert!(warn < regen);
    assert!(pos(&ev, |e| matches!(
        e,
        Event::ProofFinished { verified: true, .. }
    ))
    .is_some());
    // The regenerated file is good again.
    let ev = run();
    assert!(
        pos(&ev, |e| matches!(
            e,
            Event::SrsReady {
                source: SrsSource::Disk,
                ..
            }
        ))
        .is_some(),
        "{what}: reloaded"
    );
    assert!(pos(
        &ev,
        |e| matches!(e, Event::Log { level, .. } if level == "warn")
    )
    .is_none());
}

#[test]
fn corrupt_or_truncated_cache_is_regenerated_never_used() {
    corrupt_then_check(
        |p| {
            let mut b = std::fs::read(p).unwrap();
            let i = b.len() / 2;
            b[i] ^= 0x40;
            std::fs::write(p, b).unwrap();
        },
        "flipped bit",
    );
    corrupt_then_check(
        |p| {
            let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
            let len = f.metadata().unwrap().len();
            f.set_len(len * 2 / 3).unwrap();
        },
        "truncated",
    );
}

#[test]
fn sigterm_finishes_or_aborts_the_proof_then_bye() {
    let cache = tempfile::tempdir().unwrap();
    // Proofs long enough to be caught in flight (about a second each in a debug build); three
    // queued, so one is still in flight even if this test reads the events late on a loaded
    // machine.
    for (policy, want_verified) in [("finish", true), ("abort", false)] {
        let a = workload(2, 8192, &["--proofs", "3", "--on-sigterm", policy]);
        let mut d = Daemon::spawn(&a, cache.path());
        d.wait_for("proof started", |e| {
            matches!(
                e,
                Event::PhaseStarted {
                    phase: Phase::Synthesis,
                    ..
                }
            )
        });
        sigterm(d.pid());
        let (status, ev) = d.wait();
        assert!(status.success(), "{policy}: {status:?} {:?}", kinds(&ev));
        let fins: Vec<(bool, bool, Option<String>, bool)> = ev
            .iter()
            .filter_map(|m| match &m.event {
                Event::ProofFinished {
                    ok,
                    verified,
                    error,
                    cancelled,
                    ..
                } => Some((*ok, *verified, error.clone(), *cancelled)),
                _ => None,
            })
            .collect();
        // Every queued proof is answered; those that never started say so.
        assert_eq!(fins.len(), 3, "{policy}: {fins:?}");
        for f in &fins {
            let never_started = f.2.as_deref() == Some("cancelled before it started (signal)");
            assert_eq!(f.3, never_started, "{policy}: {f:?}");
            assert!(
                !(f.3 && f.0),
                "{policy}: a cancelled proof is not ok: {f:?}"
            );
        }
        // The signal came during the first proof's synthesis: the last one cannot have started.
        assert!(fins[2].3, "{policy}: {fins:?}");
        // Whatever completed is verified; queued proofs are cancelled, never started.
        for f in &fins {
            assert_eq!(f.0, f.1, "{policy}: a completed proof must verify: {f:?}");
        }
        let aborted = fins.iter().any(|f| f.2.as_deref() == Some("aborted"));
        if want_verified {
            assert!(
                fins.iter().any(|f| f.1),
                "{policy}: the proof in flight finished: {fins:?}"
            );
            assert!(!aborted, "{policy}: {fins:?}");
        } else {
            assert!(
                aborted,
                "{policy}: the proof in flight was aborted: {fins:?}"
            );
        }
        assert_eq!(bye(&ev).0, "signal", "{policy}");
    }
    // Idle daemon: SIGTERM → bye at once.
    let mut d = Daemon::spawn(&TINY, cache.path());
    d.wait_for("idle", |e| matches!(e, Event::State { .. }));
    sigterm(d.pid());
    let (status, ev) = d.wait();
    assert!(status.success());
    assert_eq!(bye(&ev), ("signal", 0));
}

#[test]
fn pause_resume_repeat_and_shutdown() {
    let cache = tempfile::tempdir().unwrap();
    let mut d = Daemon::spawn(&TINY, cache.path());
    d.wait_for("idle", |e| matches!(e, Event::State { .. }));
    d.send(r#"{"ts":1,"type":"pause"}"#);
    d.wait_for("paused", |e| {
        matches!(
            e,
            Event::State {
                state: provetop_shared::protocol::ProverState::Paused
            }
        )
    });
    d.send(r#"{"ts":1,"type":"prove","count":1}"#);
    d.wait_for("queued", |e| matches!(e, Event::ProofQueued { .. }));
    assert!(
        d.none_within(Duration::from_millis(800), |e| matches!(
            e,
            Event::ProofStarted { .. }
        )),
        "no proof starts while paused"
    );
    d.send(r#"{"ts":1,"type":"resume"}"#);
    d.wait_for("finished", |e| {
        matches!(e, Event::ProofFinished { verified: true, .. })
    });
    d.send(r#"{"ts":1,"type":"shutdown"}"#);
    let (status, ev) = d.finish();
    assert!(status.success());
    assert_eq!(bye(&ev), ("shutdown", 1));

    // --repeat-every queues work on its own when idle.
    let mut d = Daemon::spawn(&workload(2, 1024, &["--repeat-every", "0.2"]), cache.path());
    d.wait_for("first", |e| {
        matches!(
            e,
            Event::ProofFinished {
                proof_id: 1,
                verified: true,
                ..
            }
        )
    });
    d.wait_for("second", |e| {
        matches!(
            e,
            Event::ProofFinished {
                proof_id: 2,
                verified: true,
                ..
            }
        )
    });
    d.send(r#"{"ts":1,"type":"shutdown","abort":true}"#);
    let (status, ev) = d.finish();
    assert!(status.success());
    bye(&ev);
}

#[test]
fn events_go_to_the_fd_from_the_environment() {
    let cache = tempfile::tempdir().unwrap();
    let out = tiny(cache.path())
        .env("PROVETOP_EVENTS_FD", "2")
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty(), "nothing on stdout");
    let ev: Vec<_> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| provetop_shared::protocol::parse_event(l).unwrap())
        .collect();
    assert_eq!(ev[0].event.kind(), "hello");
    assert_eq!(ev.last().unwrap().event.kind(), "bye");
}
