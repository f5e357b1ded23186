//! Batch modes switched live through the control protocol (the daemon's stdin).

mod common;

use std::collections::HashMap;

use common::*;
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
/// started…finished window, ok and verified; mode changes only between proofs.
fn check_stream(ev: &[EventMsg]) -> Vec<(u64, BatchMode, u32)> {
    let mut open: Option<(u64, BatchMode)> = None;
    let mut mode_at_start: HashMap<u64, BatchMode> = HashMap::new();
    let mut out = Vec::new();
    let mut current = None;
    for m in ev {
        match &m.event {
            Event::Hello { config, .. } => current = Some(config.mode),
            Event::ProofStarted {
                proof_id,
                mode,
                sectors,
                ..
            } => {
                assert!(open.is_none(), "proof {proof_id} started inside another");
                assert_eq!(
                    Some(*mode),
                    current,
                    "proof {proof_id} runs in the current mode"
                );
                open = Some((*proof_id, *mode));
                mode_at_start.insert(*proof_id, *mode);
                out.push((*proof_id, *mode, *sectors));
            }
            Event::PhaseStarted { proof_id, .. } | Event::PhaseEnded { proof_id, .. } => {
                assert_eq!(
                    open.map(|o| o.0),
                    Some(*proof_id),
                    "phase outside its proof"
                );
            }
            Event::ProofFinished {
                proof_id,
                ok,
                verified,
                mode,
                error,
                ..
            } => {
                if let Some((id, _)) = open {
                    if id == *proof_id {
                        open = None;
                        assert!(*ok && *verified, "proof {proof_id} in {mode}: {error:?}");
                        assert_eq!(mode_at_start[proof_id], *mode);
                    }
                }
            }
            Event::ModeChanged { from, to } => {
                assert!(
                    open.is_none(),
                    "mode changed while proof {open:?} in flight"
                );
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
    // sps and pipelined prove one partition per call: their prove phases carry the partition;
    // single and batch prove all partitions in one call.
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
    let mut p3 = prove_parts(3);
    p3.sort();
    assert_eq!(p3, [Some(0), Some(1)]);
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
    assert!(matches!(
        &ev.last().unwrap().event,
        Event::Bye { proofs_done: 5, .. }
    ));
}

#[test]
fn pipelined_overlaps_synthesis_of_the_next_unit_with_proving() {
    let cache = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--partitions",
        "4",
        "--constraints",
        "2048",
        "--mode",
        "pipelined:2",
    ];
    args.extend(["--proofs", "1"]);
    let mut d = Daemon::spawn(&args, cache.path());
    finished(&mut d, 1);
    d.close_stdin();
    let (_, ev) = d.finish();
    check_stream(&ev);
    // Unit k+1's synthesis starts before unit k's prove ends, and never more than two units
    // are between their synthesis start and prove end.
    let mut live = 0i32;
    let mut max_live = 0;
    let mut overlapped = false;
    let mut proving: Vec<u32> = Vec::new();
    for m in &ev {
        match &m.event {
            Event::PhaseStarted {
                phase: Phase::Synthesis,
                ..
            } => {
                live += 1;
                max_live = max_live.max(live);
                overlapped |= !proving.is_empty();
            }
            Event::PhaseStarted {
                phase: Phase::Prove,
                partition: Some(p),
                ..
            } => proving.push(*p),
            Event::PhaseEnded {
                phase: Phase::Prove,
                partition: Some(p),
                ..
            } => {
                proving.retain(|x| x != p);
                live -= 1;
            }
            _ => {}
        }
    }
    assert!(overlapped, "some synthesis ran while a unit was proving");
    assert!(max_live <= 2, "at most D=2 units in flight, saw {max_live}");
}

#[test]
fn mem_budget_refuses_a_mode_predicted_to_exceed_it() {
    let cache = tempfile::tempdir().unwrap();
    let mut a: Vec<&str> = TINY.to_vec();
    a.extend(["--mode", "sps", "--mem-budget", "1MiB", "--proofs", "1"]);
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
    let mut a: Vec<&str> = TINY.to_vec();
    a.extend(["--mem-budget", "4GiB"]);
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
