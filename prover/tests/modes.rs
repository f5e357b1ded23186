//! Batch modes switched live through the control protocol (the daemon's stdin).

use std::collections::HashMap;

use crate::common::*;
use provetop_shared::protocol::{BatchMode, Event, EventMsg, Phase};

fn set_mode(d: &mut Daemon, m: &str) {
    d.send(&format!(r#"{{"ts":1,"type":"set_mode","mode":"{m}"}}"#));
}

fn prove(d: &mut Daemon, n: u32) {
    d.send(&format!(r#"{{"ts":1,"type":"prove","count":{n}}}"#));
}

fn finished(d: &mut Daemon, id: u64) -> EventMsg {
    d.wait_for(
        "proof finished",
        move |e| matches!(e, Event::ProofFinished { proof_id, .. } if *proof_id == id),
    )
}

/// Every proof: started and finished in the same mode, all its phases inside its
/// started…finished window, ok and verified; proofs overlap only in `pipelined` mode; mode
/// changes only between proofs.
fn check_stream(ev: &[EventMsg]) -> Vec<(u64, BatchMode, u32)> {
    let mut open: Vec<u64> = Vec::new();
    let mut mode_at_start: HashMap<u64, BatchMode> = HashMap::new();
    let mut current = None;
    let mut out = Vec::new();
    for m in ev {
        match &m.event {
            Event::Hello { config, .. } => current = Some(config.mode),
            Event::ProofStarted {
                proof_id,
                mode,
                sectors,
                ..
            } => {
                assert!(
                    open.is_empty() || matches!(mode, BatchMode::Pipelined(_)),
                    "proof {proof_id} started inside {open:?} in {mode}"
                );
                assert_eq!(
                    Some(*mode),
                    current,
                    "proof {proof_id} runs in the current mode"
                );
                open.push(*proof_id);
                mode_at_start.insert(*proof_id, *mode);
                out.push((*proof_id, *mode, *sectors));
            }
            Event::PhaseStarted { proof_id, .. } | Event::PhaseEnded { proof_id, .. } => {
                assert!(open.contains(proof_id), "phase of {proof_id} outside it");
            }
            Event::ProofFinished {
                proof_id,
                ok,
                verified,
                mode,
                error,
                ..
            } if open.contains(proof_id) => {
                open.retain(|p| p != proof_id);
                assert!(*ok && *verified, "proof {proof_id} in {mode}: {error:?}");
                assert_eq!(mode_at_start[proof_id], *mode);
            }
            Event::ModeChanged { from, to } => {
                assert!(open.is_empty(), "mode changed while {open:?} in flight");
                assert_eq!(Some(*from), current);
                current = Some(*to);
            }
            _ => {}
        }
    }
    out
}

#[test]
fn modes_switch_at_proof_boundaries_and_every_proof_verifies() {
    let cache = tempfile::tempdir().unwrap();
    let mut d = Daemon::spawn(&TINY, cache.path());
    d.wait_for("idle", |e| matches!(e, Event::State { .. }));

    // Switch requested while proof 1 runs: lands after it, before proof 2.
    prove(&mut d, 2);
    d.wait_for("proof 1 started", |e| {
        matches!(e, Event::ProofStarted { proof_id: 1, .. })
    });
    set_mode(&mut d, "sps");
    let changed = d.wait_for("mode changed", |e| matches!(e, Event::ModeChanged { .. }));
    assert!(matches!(
        changed.event,
        Event::ModeChanged {
            from: BatchMode::Single,
            to: BatchMode::Sps
        }
    ));
    let fin1 = d
        .seen
        .iter()
        .position(|m| matches!(m.event, Event::ProofFinished { proof_id: 1, .. }));
    assert!(fin1.is_some(), "mode change came after proof 1 finished");
    finished(&mut d, 2);

    // While idle a switch is immediate.
    set_mode(&mut d, "pipelined:2");
    d.wait_for("mode changed", |e| {
        matches!(
            e,
            Event::ModeChanged {
                to: BatchMode::Pipelined(2),
                ..
            }
        )
    });
    prove(&mut d, 1);
    finished(&mut d, 3);
    // Alone in flight, the pipelined proof held one sector (2 × 1024 constraints), not D.
    assert!(d.seen.iter().any(|m| matches!(&m.event,
        Event::Log { message, .. } if message.contains("proof 3:") && message.contains(" 2048 live in pipelined:2"))));

    set_mode(&mut d, "batch:2");
    d.wait_for("mode changed", |e| {
        matches!(
            e,
            Event::ModeChanged {
                to: BatchMode::Batch(2),
                ..
            }
        )
    });
    prove(&mut d, 2); // one proof of two sectors
    finished(&mut d, 4);

    set_mode(&mut d, "single");
    prove(&mut d, 1);
    finished(&mut d, 5);
    d.close_stdin();
    let (status, ev) = d.finish();
    assert!(status.success());

    let proofs = check_stream(&ev);
    assert_eq!(
        proofs,
        [
            (1, BatchMode::Single, 1),
            (2, BatchMode::Sps, 1),
            (3, BatchMode::Pipelined(2), 1),
            (4, BatchMode::Batch(2), 2),
            (5, BatchMode::Single, 1),
        ]
    );
    // sps proves one partition per call: its prove phases carry the partition; single,
    // pipelined and batch prove all partitions of a sector (or of N sectors) in one call.
    let prove_parts = |id: u64| -> Vec<Option<u32>> {
        ev.iter()
            .filter_map(|m| match &m.event {
                Event::PhaseStarted {
                    proof_id,
                    phase: Phase::Prove,
                    partition,
                } if *proof_id == id => Some(*partition),
                _ => None,
            })
            .collect()
    };
    assert_eq!(prove_parts(1), [None]);
    assert_eq!(prove_parts(2), [Some(0), Some(1)]);
    assert_eq!(prove_parts(3), [None]);
    assert_eq!(prove_parts(4), [None]);
    // The batch proof synthesized and verified all four partitions of its two sectors.
    let verified_parts: Vec<u32> = ev
        .iter()
        .filter_map(|m| match &m.event {
            Event::PhaseEnded {
                proof_id: 4,
                phase: Phase::Verify,
                partition,
                ..
            } => *partition,
            _ => None,
        })
        .collect();
    assert_eq!(verified_parts, [0, 1, 2, 3]);
    assert_eq!(bye(&ev).1, 5);
}

/// Sectors queued under one mode and still waiting when a switch lands are cut again for
/// the new mode: batch:2 proves two sectors a call from the next proof on (and single one),
/// each old proof is cancelled naming the new proofs that hold its sectors, and no sector is
/// lost or proved twice.
#[test]
fn a_switch_cuts_the_waiting_queue_to_the_new_mode() {
    let cache = tempfile::tempdir().unwrap();
    let mut d = Daemon::spawn(&TINY, cache.path());
    d.wait_for("idle", |e| matches!(e, Event::State { .. }));
    // Eight one-sector proofs; the switch is asked for while the first runs.
    prove(&mut d, 8);
    d.wait_for("proof 1 started", |e| {
        matches!(e, Event::ProofStarted { proof_id: 1, .. })
    });
    set_mode(&mut d, "batch:2");
    d.wait_for("queue drained", |e| {
        matches!(e, Event::State { state } if *state == provetop_shared::protocol::ProverState::Idle)
    });
    // Three two-sector proofs; back to single while the first runs.
    prove(&mut d, 6);
    let first = d.wait_for("a batch proof started", |e| {
        matches!(e, Event::ProofStarted { sectors: 2, .. })
    });
    set_mode(&mut d, "single");
    d.wait_for("queue drained", |e| {
        matches!(e, Event::State { state } if *state == provetop_shared::protocol::ProverState::Idle)
    });
    d.close_stdin();
    let (status, ev) = d.finish();
    assert!(status.success());
    let started = check_stream(&ev);

    let mut queued: HashMap<u64, u32> = HashMap::new();
    let mut requeues = Vec::new();
    for m in &ev {
        match &m.event {
            Event::ProofQueued {
                proof_id, sectors, ..
            } => {
                queued.insert(*proof_id, *sectors);
            }
            Event::ProofFinished {
                proof_id,
                ok,
                cancelled: true,
                requeued_as,
                error,
                mode,
                ..
            } => {
                assert!(!ok);
                assert_eq!(
                    error.as_deref(),
                    Some(format!("requeued under {mode}").as_str())
                );
                requeues.push((*proof_id, *mode, requeued_as.clone()));
            }
            _ => {}
        }
    }
    // Both switches found proofs waiting in the other mode's size.
    for mode in [BatchMode::Batch(2), BatchMode::Single] {
        assert!(
            requeues.iter().any(|r| r.1 == mode),
            "nothing requeued under {mode}: {requeues:?}"
        );
    }
    // What was cancelled is exactly what was queued anew: each switch's cancelled proofs
    // hold as many sectors as the new proofs they name, and each names the proofs its own
    // sectors went to (one sector goes to one proof).
    for mode in [BatchMode::Batch(2), BatchMode::Single] {
        let these: Vec<_> = requeues.iter().filter(|r| r.1 == mode).collect();
        let old: u32 = these.iter().map(|r| queued[&r.0]).sum();
        let mut new: Vec<u64> = these.iter().flat_map(|r| r.2.clone()).collect();
        new.sort_unstable();
        new.dedup();
        assert_eq!(old, new.iter().map(|i| queued[i]).sum::<u32>(), "{these:?}");
        for r in these {
            assert!(
                !r.2.is_empty() && r.2.len() <= queued[&r.0] as usize,
                "{r:?}"
            );
        }
    }
    // Every proof that ran was cut for the mode it ran in, and all 14 sectors ran once.
    for (id, mode, sectors) in &started {
        match mode {
            BatchMode::Single => assert_eq!(*sectors, 1, "proof {id}"),
            BatchMode::Batch(2) => assert!(*sectors == 2 || queued[id] == 1, "proof {id}"),
            m => panic!("proof {id} in {m}"),
        }
    }
    assert_eq!(started.iter().map(|p| p.2).sum::<u32>(), 14, "{started:?}");
    let cancelled: Vec<u64> = requeues.iter().map(|r| r.0).collect();
    assert!(started.iter().all(|p| !cancelled.contains(&p.0)));
    assert!(matches!(
        first.event,
        Event::ProofStarted {
            mode: BatchMode::Batch(2),
            ..
        }
    ));
}

#[test]
fn pipelined_overlaps_synthesis_of_the_next_proof_with_proving() {
    let cache = tempfile::tempdir().unwrap();
    let args = workload(4, 2048, &["--mode", "pipelined:2", "--proofs", "4"]);
    let mut d = Daemon::spawn(&args, cache.path());
    finished(&mut d, 4);
    d.close_stdin();
    let (status, ev) = d.finish();
    assert!(status.success());
    let proofs = check_stream(&ev);
    assert_eq!(proofs.len(), 4);
    assert!(proofs.iter().all(|p| p.1 == BatchMode::Pipelined(2)));
    // Proof k+1 starts synthesis while proof k is proving, and never are more than D=2 proofs
    // between proof_started and proof_finished.
    let mut live: Vec<u64> = Vec::new();
    let mut proving: Vec<u64> = Vec::new();
    let (mut max_live, mut overlapped) = (0, false);
    for m in &ev {
        match &m.event {
            Event::ProofStarted { proof_id, .. } => {
                live.push(*proof_id);
                max_live = max_live.max(live.len());
            }
            Event::ProofFinished { proof_id, .. } => live.retain(|p| p != proof_id),
            Event::PhaseStarted {
                proof_id,
                phase: Phase::Synthesis,
                ..
            } => overlapped |= proving.iter().any(|p| p != proof_id),
            Event::PhaseStarted {
                proof_id,
                phase: Phase::Prove,
                ..
            } => proving.push(*proof_id),
            Event::PhaseEnded {
                proof_id,
                phase: Phase::Prove,
                ..
            } => proving.retain(|p| p != proof_id),
            _ => {}
        }
    }
    assert!(
        overlapped,
        "a proof synthesized while the previous one was proving"
    );
    assert_eq!(max_live, 2, "at most D=2 proofs in flight");
    // Proofs still finish in order, and the bye counts all four.
    let order: Vec<u64> = ev
        .iter()
        .filter_map(|m| match m.event {
            Event::ProofFinished { proof_id, .. } => Some(proof_id),
            _ => None,
        })
        .collect();
    assert_eq!(order, [1, 2, 3, 4]);
    assert_eq!(bye(&ev).1, 4);
}

#[test]
fn mem_budget_refuses_a_mode_predicted_to_exceed_it() {
    let cache = tempfile::tempdir().unwrap();
    let a = workload(
        2,
        1024,
        &["--mode", "sps", "--mem-budget", "1MiB", "--proofs", "1"],
    );
    let mut d = Daemon::spawn(&a, cache.path());
    finished(&mut d, 1);
    set_mode(&mut d, "batch:64");
    let r = d.wait_for("refused", |e| matches!(e, Event::ModeRefused { .. }));
    match &r.event {
        Event::ModeRefused { requested, reason } => {
            assert_eq!(*requested, BatchMode::Batch(64));
            assert!(reason.contains("exceeds --mem-budget"), "{reason}");
            assert!(reason.contains("measured over 1 proof"), "{reason}");
        }
        _ => unreachable!(),
    }
    // The mode did not change: the next proof still runs in sps.
    prove(&mut d, 1);
    let f = finished(&mut d, 2);
    assert!(matches!(
        f.event,
        Event::ProofFinished {
            mode: BatchMode::Sps,
            verified: true,
            ..
        }
    ));
    d.close_stdin();
    let (_, ev) = d.finish();
    assert!(!ev
        .iter()
        .any(|m| matches!(m.event, Event::ModeChanged { .. })));

    // A generous budget lets the switch through.
    let a = workload(2, 1024, &["--mem-budget", "4GiB"]);
    let mut d = Daemon::spawn(&a, cache.path());
    d.wait_for("idle", |e| matches!(e, Event::State { .. }));
    set_mode(&mut d, "batch:2");
    d.wait_for("changed", |e| {
        matches!(
            e,
            Event::ModeChanged {
                to: BatchMode::Batch(2),
                ..
            }
        )
    });
    d.close_stdin();
    d.finish();
}

/// The floor of the memory wave: once a proof is over and the prover idle, its RSS falls back
/// towards the floor it had before the proof (freed heap goes back to the kernel).
#[test]
fn rss_falls_back_to_the_floor_between_proofs() {
    let cache = tempfile::tempdir().unwrap();
    let mut d = Daemon::spawn(&workload(4, 32768, &["--proofs", "0"]), cache.path());
    let idle = |e: &Event| {
        matches!(
            e,
            Event::State {
                state: provetop_shared::protocol::ProverState::Idle
            }
        )
    };
    d.wait_for("idle with the SRS", idle);
    let floor = d.status_kb("VmRSS:").unwrap();
    prove(&mut d, 1);
    finished(&mut d, 1);
    d.wait_for("idle after the proof", idle);
    let (rss, hwm) = (
        d.status_kb("VmRSS:").unwrap(),
        d.status_kb("VmHWM:").unwrap(),
    );
    d.close_stdin();
    d.finish();
    // Most of what the proof took above the floor went back. Malloc's arenas keep a few MiB
    // of fragments, more when other processes load the machine (up to 38 % of this working
    // set seen under load; 100 % when glibc keeps freed heap).
    assert!(
        (rss - floor) * 2 < hwm - floor,
        "RSS {rss} kB when idle after the proof, {floor} kB before it, peak {hwm} kB"
    );
}

/// The `predicted peak` a `mode_refused` reason quotes, in bytes.
fn predicted_peak(reason: &str) -> u64 {
    let rest = reason
        .split("predicted peak ")
        .nth(1)
        .unwrap_or_else(|| panic!("{reason}"));
    let rest = rest.strip_prefix("RSS ").unwrap_or(rest);
    let size: String = rest.split(" exceeds").next().unwrap().to_string();
    provetop_shared::units::parse_bytes(&size).unwrap_or_else(|e| panic!("{reason}: {e}"))
}

#[test]
fn mem_budget_predicts_the_rss_peak_a_mode_reaches_not_only_its_heap() {
    // The bundled prover's default shape (8 partitions of 2^12) and a wider one.
    for (partitions, constraints) in [(8, 4096), (2, 16384)] {
        batch_2_peak_is_predicted(partitions, constraints);
    }
}

fn batch_2_peak_is_predicted(partitions: u32, constraints: u64) {
    let cache = tempfile::tempdir().unwrap();
    let shape = |extra: &[&str]| workload(partitions, constraints, extra);
    // One measured proof in sps, then the prediction for batch:2 (a 1 MiB budget refuses
    // every mode, quoting its prediction).
    let mut d = Daemon::spawn(
        &shape(&["--mode", "sps", "--mem-budget", "1MiB", "--proofs", "1"]),
        cache.path(),
    );
    finished(&mut d, 1);
    set_mode(&mut d, "batch:2");
    let r = d.wait_for("refused", |e| matches!(e, Event::ModeRefused { .. }));
    let Event::ModeRefused { reason, .. } = &r.event else {
        unreachable!()
    };
    let predicted = predicted_peak(reason);
    d.close_stdin();
    d.finish();

    // What a batch:2 proof (two sectors) really peaks at: the daemon's VmHWM, reset once it
    // is idle so that loading the parameters does not count.
    let mut d = Daemon::spawn(
        &shape(&["--mode", "batch:2", "--proofs", "0"]),
        cache.path(),
    );
    d.wait_for("idle", |e| matches!(e, Event::State { .. }));
    std::fs::write(format!("/proc/{}/clear_refs", d.pid()), "5").unwrap();
    prove(&mut d, 2);
    finished(&mut d, 1);
    let hwm = d.status_kb("VmHWM:").unwrap() * 1024;
    d.close_stdin();
    d.finish();
    eprintln!("predicted {predicted} B, VmHWM {hwm} B: {reason}");
    assert!(
        predicted >= hwm,
        "batch:2 peaks at {hwm} B of RSS, above the {predicted} B predicted: {reason}"
    );
    assert!(
        (predicted as f64) < hwm as f64 * 1.5,
        "the prediction {predicted} B is far above the {hwm} B peak: {reason}"
    );
    assert!(reason.contains("RSS"), "{reason}");
}
