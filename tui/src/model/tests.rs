//! The reducer's unit tests: one stream of records in, state and effects out.

use super::*;
use crate::series::{Metric, Reading};
use crate::text::{log_text, srs};
use provetop_shared::classify::ThresholdPhase;
use provetop_shared::protocol::{ProverConfig, ProverState};
use provetop_shared::units::{GIB, MIB};
use provetop_shared::{
    Alert, AlertLevel, AlertState, Backend, BatchMode, Control, Event, Mark, Phase, Record,
    RecordBody, Sample, SrsSource,
};

const S: u64 = 1_000_000_000;

fn sample(t: u64, rss: u64) -> Record {
    Record::new(
        t,
        RecordBody::Sample(Sample {
            rss,
            peak: Some(rss + MIB),
            pinned: Some(10 * MIB),
            gpu_used: Some(GIB),
            ..Sample::default()
        }),
    )
}

fn ev(t: u64, e: Event) -> Record {
    Record::new(t, RecordBody::Event(e))
}

fn hello() -> Event {
    Event::Hello {
        protocol: "1.0".into(),
        prover_version: "0.1.0".into(),
        pid: 42,
        backend: Backend::Cpu,
        gpus: vec![],
        config: ProverConfig {
            partitions: 2,
            constraints: 1000,
            circuit: "c".into(),
            mode: BatchMode::Single,
            threads: None,
        },
    }
}

fn phase(t: u64, id: u64, ph: Phase, part: Option<u32>, start: bool) -> Record {
    ev(
        t,
        if start {
            Event::PhaseStarted {
                proof_id: id,
                phase: ph,
                partition: part,
            }
        } else {
            Event::PhaseEnded {
                proof_id: id,
                phase: ph,
                partition: part,
                duration_s: 1.0,
            }
        },
    )
}

fn proof_run(m: &mut Model, id: u64, t0: u64) {
    m.apply(&ev(
        t0,
        Event::ProofStarted {
            proof_id: id,
            mode: BatchMode::Single,
            sectors: 1,
            partitions: 2,
            constraints: 2000,
        },
    ));
    m.apply(&phase(t0, id, Phase::Synthesis, Some(0), true));
    m.apply(&phase(t0, id, Phase::Synthesis, Some(1), true));
    m.apply(&sample(t0 + S / 2, 2 * GIB));
    m.apply(&phase(t0 + S, id, Phase::Synthesis, Some(0), false));
    m.apply(&phase(t0 + S, id, Phase::Synthesis, Some(1), false));
    m.apply(&phase(t0 + S, id, Phase::Prove, None, true));
    m.apply(&sample(t0 + 3 * S / 2, 3 * GIB));
    m.apply(&phase(t0 + 2 * S, id, Phase::Prove, None, false));
    m.apply(&ev(
        t0 + 2 * S,
        Event::ProofFinished {
            proof_id: id,
            ok: true,
            verified: true,
            duration_s: 2.0,
            mode: BatchMode::Single,
            phases: vec![],
            error: None,
            cancelled: false,
            requeued_as: vec![],
        },
    ));
}

/// Start and finish a proof of `sectors` sectors in `mode` (no phases).
/// A proof that ended without a proof, at 10 s.
fn not_ok(id: u64, duration_s: f64, error: &str, cancelled: bool, requeued_as: Vec<u64>) -> Record {
    ev(
        10 * S,
        Event::ProofFinished {
            proof_id: id,
            ok: false,
            verified: false,
            duration_s,
            mode: BatchMode::Single,
            phases: vec![],
            error: Some(error.into()),
            cancelled,
            requeued_as,
        },
    )
}

fn bare_proof(m: &mut Model, id: u64, mode: BatchMode, sectors: u32, from: u64, to: u64) {
    m.apply(&ev(
        from,
        Event::ProofStarted {
            proof_id: id,
            mode,
            sectors,
            partitions: 2,
            constraints: 2000,
        },
    ));
    m.apply(&ev(
        to,
        Event::ProofFinished {
            proof_id: id,
            ok: true,
            verified: true,
            duration_s: (to - from) as f64 / 1e9,
            mode,
            phases: vec![],
            error: None,
            cancelled: false,
            requeued_as: vec![],
        },
    ));
}

/// The rate counts overlapping (pipelined) proofs once and idle gaps not at all, per mode;
/// seconds per proof would say 4 s/proof for both modes below.
#[test]
fn throughput_is_sectors_over_busy_time_per_mode() {
    let mut m = Model::new(Thresholds::default());
    m.apply(&ev(0, hello()));
    let single = BatchMode::Single;
    assert_eq!(m.throughput(single), None);
    // single: 4 s each, 10 s of idle between them: 2 sectors in 8 busy seconds.
    bare_proof(&mut m, 1, single, 1, 0, 4 * S);
    assert_eq!(m.throughput(single), None, "one proof is no rate");
    bare_proof(&mut m, 2, single, 1, 14 * S, 18 * S);
    assert!((m.throughput(single).unwrap() - 900.0).abs() < 1e-6);
    // pipelined:2: 4 s each, each starting 2 s after the one before: 3 sectors in 8 s.
    let pipelined = BatchMode::Pipelined(2);
    bare_proof(&mut m, 3, pipelined, 1, 20 * S, 24 * S);
    bare_proof(&mut m, 4, pipelined, 1, 22 * S, 26 * S);
    bare_proof(&mut m, 5, pipelined, 1, 24 * S, 28 * S);
    assert!((m.throughput(pipelined).unwrap() - 1350.0).abs() < 1e-6);
    assert!((m.throughput(single).unwrap() - 900.0).abs() < 1e-6);
    // batch:2 counts its sectors.
    let batch = BatchMode::Batch(2);
    bare_proof(&mut m, 6, batch, 2, 30 * S, 36 * S);
    bare_proof(&mut m, 7, batch, 2, 36 * S, 42 * S);
    assert!((m.throughput(batch).unwrap() - 1200.0).abs() < 1e-6);
    assert_eq!((m.prover.proofs_done, m.prover.sectors_done), (7, 9));
}

#[test]
fn mode_rows_sum_per_mode_in_the_order_modes_ran() {
    let (single, pipelined) = (BatchMode::Single, BatchMode::Pipelined(2));
    let rows = mode_rows(&[
        (single, 0, 4 * S, 1, 3 * GIB),
        (pipelined, 10 * S, 14 * S, 1, 5 * GIB),
        // Overlaps the one before: the busy time counts 12–14 s once.
        (pipelined, 12 * S, 16 * S, 1, 6 * GIB),
        (pipelined, 14 * S, 18 * S, 1, 4 * GIB),
        (single, 20 * S, 24 * S, 1, 2 * GIB),
    ]);
    let modes: Vec<BatchMode> = rows.iter().map(|r| r.mode).collect();
    assert_eq!(modes, [single, pipelined]);
    let p = &rows[1];
    assert_eq!((p.proofs, p.sectors), (3, 3));
    assert_eq!(p.busy_s, 8.0);
    assert!((p.s_per_sector() - 8.0 / 3.0).abs() < 1e-9);
    assert!((p.sectors_per_hour() - 1350.0).abs() < 1e-9);
    assert_eq!((p.peak_median, p.peak_max), (5 * GIB, 6 * GIB));
    assert_eq!((rows[0].busy_s, rows[0].sectors), (8.0, 2));
}

#[test]
fn a_proof_that_fails_while_the_session_stops_is_counted_as_stopped_not_failed() {
    let failed = |id: u64| not_ok(id, 1.0, "aborted", false, vec![]);
    // Before any stop: a failure.
    let mut m = Model::new(Thresholds::default());
    m.apply(&ev(0, hello()));
    m.apply(&failed(1));
    assert_eq!((m.prover.proofs_failed, m.prover.proofs_stopped), (1, 0));
    // After provetop's stop note: stopped.
    m.apply(&Record::new(
        9 * S,
        RecordBody::Mark(Mark::Note {
            text: format!("{}: got SIGTERM", STOPPING_NOTE),
        }),
    ));
    m.apply(&failed(2));
    assert_eq!((m.prover.proofs_failed, m.prover.proofs_stopped), (1, 1));
    // A prover told to stop otherwise (its own `state: stopping`): stopped too.
    let mut m = Model::new(Thresholds::default());
    m.apply(&ev(0, hello()));
    m.apply(&ev(
        S,
        Event::State {
            state: ProverState::Stopping,
        },
    ));
    m.apply(&failed(1));
    assert_eq!((m.prover.proofs_failed, m.prover.proofs_stopped), (0, 1));
}

#[test]
fn cancelled_proofs_are_counted_apart_from_failures() {
    let mut m = Model::new(Thresholds::default());
    m.apply(&ev(0, hello()));
    proof_run(&mut m, 1, S);
    let end =
        |id, error: &str, cancelled, requeued_as| not_ok(id, 0.0, error, cancelled, requeued_as);
    let stop = "cancelled before it started (signal)";
    m.apply(&end(2, stop, true, vec![]));
    m.apply(&end(3, stop, true, vec![]));
    m.apply(&end(4, "out of memory", false, vec![]));
    // A 1.0 recording: the same text without the flag.
    m.apply(&end(5, stop, false, vec![]));
    // Requeued by a mode switch: its sectors are still to come, nothing was dropped.
    m.apply(&end(6, "requeued under batch:2", true, vec![9]));
    assert_eq!(m.prover.proofs_done, 1);
    assert_eq!(m.prover.proofs_cancelled, 3);
    assert_eq!(m.prover.proofs_failed, 1);
    // A proof that never ran leaves no proof span behind; the failed one does.
    let ids: Vec<u64> = m.proofs.finished.iter().map(|p| p.proof_id).collect();
    assert_eq!(ids, [1, 4]);
}

#[test]
fn phases_proofs_and_stats() {
    let mut m = Model::new(Thresholds::default());
    m.apply(&ev(0, hello()));
    m.apply(&sample(0, GIB));
    proof_run(&mut m, 1, S);
    proof_run(&mut m, 2, 4 * S);
    assert_eq!(m.prover.proofs_done, 2);
    assert_eq!(m.prover.last_s, Some(2.0));
    assert_eq!(m.prover.avg_s(), Some(2.0));
    assert_eq!(m.spans.closed.len(), 6);
    assert!(m.spans.open.is_empty());
    let at = m.spans_at(S + S / 2);
    assert_eq!(at.len(), 2);
    assert!(at.iter().all(|s| s.phase == Phase::Synthesis));
    let synth = &m.spans.closed[0];
    assert_eq!(synth.rss.max, 2 * GIB);
    assert_eq!(synth.pinned.max, 10 * MIB);
    let prove = m
        .spans
        .closed
        .iter()
        .find(|s| s.phase == Phase::Prove)
        .unwrap();
    assert_eq!(prove.rss.mean(), Some(3 * GIB));
    assert_eq!(prove.gpu.max, GIB);
    assert_eq!(m.phase_rows(0, 10 * S).len(), 3);
    assert_eq!(m.spans_in(4 * S, 10 * S).count(), 3);
    assert_eq!(m.proofs.finished.len(), 2);
    assert_eq!(m.proofs.finished[0].rss.max, 3 * GIB + MIB);
    assert!(m
        .log
        .iter()
        .any(|l| log_text(&l.what).contains("proof 2 done")));
}

#[test]
fn current_phase_text_and_open_spans() {
    let mut m = Model::new(Thresholds::default());
    m.apply(&ev(0, hello()));
    m.apply(&phase(S, 1, Phase::Synthesis, Some(0), true));
    m.apply(&phase(S, 1, Phase::Synthesis, Some(1), true));
    assert_eq!(m.current_phase_text(), "synthesis ×2");
    m.apply(&sample(2 * S, GIB));
    assert_eq!(m.spans_at(2 * S).len(), 2);
    m.apply(&phase(3 * S, 1, Phase::Synthesis, Some(1), false));
    assert_eq!(m.current_phase_text(), "synthesis p0");
    // An end without a start is reconstructed from its duration.
    m.apply(&phase(5 * S, 1, Phase::Verify, None, false));
    assert_eq!(m.spans.closed.back().unwrap().start, 4 * S);
}

#[test]
fn threshold_runs_without_events() {
    let mut m = Model::new(Thresholds::default());
    for (i, g) in [1u64, 1, 20, 20, 120, 190, 60, 45].iter().enumerate() {
        m.apply(&sample(i as u64 * S, g * GIB));
    }
    assert!(!m.has_events());
    assert_eq!(m.threshold_phase_at(0), Some(ThresholdPhase::IdlePre));
    assert_eq!(m.threshold_phase_at(3 * S), Some(ThresholdPhase::IdlePost));
    assert_eq!(m.threshold_phase_at(5 * S), Some(ThresholdPhase::PeakSynth));
    assert_eq!(m.threshold_phase_at(7 * S), Some(ThresholdPhase::IdlePost));
    assert_eq!(m.runs_in(0, 10 * S).len(), 6);
    assert_eq!(m.current_phase_text(), "idle_post (threshold)");
    let runs = m.runs_in(4 * S, 5 * S);
    assert!(runs.iter().any(|r| r.phase == ThresholdPhase::Synth));
}

#[test]
fn alerts_marks_controls() {
    let mut m = Model::new(Thresholds::default());
    let alert = |state| Alert {
        rule: "rss > 1GiB".into(),
        level: AlertLevel::Crit,
        state,
        metric: "rss".into(),
        value: 2.0,
        threshold: 1.0,
        message: "rss 2 GiB > 1 GiB".into(),
    };
    m.apply(&Record::new(
        S,
        RecordBody::Alert(alert(AlertState::Firing)),
    ));
    assert_eq!(m.alerts.active.len(), 1);
    m.apply(&Record::new(
        2 * S,
        RecordBody::Alert(alert(AlertState::Cleared)),
    ));
    assert!(m.alerts.active.is_empty());
    assert_eq!(m.alert_times().collect::<Vec<_>>(), vec![S]);
    m.apply(&Record::new(
        3 * S,
        RecordBody::Mark(Mark::Dropped {
            what: "samples".into(),
            count: 7,
        }),
    ));
    m.apply(&Record::new(
        3 * S,
        RecordBody::Mark(Mark::ChildStarted {
            pid: 9,
            command: vec!["x".into()],
        }),
    ));
    m.apply(&Record::new(3 * S, RecordBody::Control(Control::Pause)));
    assert_eq!(m.notes.dropped_samples, 7);
    assert!(matches!(m.child, ChildStatus::Running { pid: 9, .. }));
    assert_eq!(log_text(&m.log.back().unwrap().what), "→ pause");
    for i in 0..10 {
        m.apply(&Record::new(
            4 * S + i,
            RecordBody::Mark(Mark::BadLine {
                error: "e".into(),
                excerpt: "x".into(),
            }),
        ));
    }
    assert_eq!(m.notes.bad_lines, 10);
    assert_eq!(
        m.log
            .iter()
            .filter(|l| log_text(&l.what).starts_with("bad event"))
            .count(),
        5
    );
}

#[test]
fn bounded_over_long_run() {
    let mut m = Model::new(Thresholds::default());
    // 3 hours at 20 Hz.
    for i in 0..(3 * 3600 * 20u64) {
        m.apply(&sample(i * S / 20, GIB + (i % 100) * MIB));
    }
    assert!(m.series.recent_len() <= 80_001);
    assert!(m.series.history_len() <= 16_384);
    assert!(m.series.heap_bytes() < 24 << 20);
    assert_eq!(m.series.total(), 3 * 3600 * 20);
    // Old history is still there as min/max.
    let r = m.value_at(10 * S).unwrap();
    assert!(matches!(r, Reading::Range(_)));
    // The 1 s bucket at 10 s holds samples 200..220.
    assert_eq!(r.range(Metric::Rss).unwrap(), (GIB, GIB + 19 * MIB));
}

#[test]
fn mode_and_state() {
    let mut m = Model::new(Thresholds::default());
    m.apply(&ev(0, hello()));
    assert_eq!(m.prover.mode, Some(BatchMode::Single));
    m.apply(&ev(
        S,
        Event::ModeChanged {
            from: BatchMode::Single,
            to: BatchMode::Sps,
        },
    ));
    m.apply(&ev(
        S,
        Event::State {
            state: ProverState::Paused,
        },
    ));
    assert_eq!(m.prover.mode, Some(BatchMode::Sps));
    assert_eq!(m.proofs.mode_changes.len(), 1);
    assert_eq!(m.current_phase_text(), "paused");
    m.apply(&ev(
        2 * S,
        Event::SrsReady {
            bytes: GIB,
            pinned_bytes: 0,
            source: SrsSource::Disk,
            duration_s: 0.5,
        },
    ));
    assert_eq!(srs(&m.prover.srs), "1.0 GiB (disk 500ms)");
    // SrsReady without SrsLoading: no span. With it: a span on the timeline.
    m.apply(&ev(
        3 * S,
        Event::SrsLoading {
            source: SrsSource::Generated,
            bytes: None,
        },
    ));
    assert_eq!(m.header_phase_text(), "srs_generate");
    m.apply(&ev(
        5 * S,
        Event::SrsReady {
            bytes: GIB,
            pinned_bytes: 0,
            source: SrsSource::Generated,
            duration_s: 2.0,
        },
    ));
    let srs = m.spans.closed.back().unwrap();
    assert_eq!(
        (srs.phase.clone(), srs.start, srs.end),
        (Phase::SrsGenerate, 3 * S, Some(5 * S))
    );
}

/// `apply` says what each record changed: a phase's first partition starts the phase, a
/// restart of the same key closes the lost one first, and a proof's end closes what it left
/// open before the proof itself finishes.
#[test]
fn apply_tells_what_each_record_changed() {
    let mut m = Model::new(Thresholds::default());
    assert!(m.apply(&ev(0, hello())).is_empty());
    let opened = |fx: &Effects| -> Vec<bool> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::SpanOpened { first_of_phase, .. } => Some(*first_of_phase),
                _ => None,
            })
            .collect()
    };
    let fx = m.apply(&phase(S, 1, Phase::Synthesis, Some(0), true));
    assert_eq!(opened(&fx), [true]);
    let fx = m.apply(&phase(S, 1, Phase::Synthesis, Some(1), true));
    assert_eq!(opened(&fx), [false], "a second partition is no new phase");
    // Partition 1 starts again: its lost end is closed, then it opens again.
    let fx = m.apply(&phase(2 * S, 1, Phase::Synthesis, Some(1), true));
    assert!(
        matches!(&fx[..], [Effect::SpanClosed { span, .. }, Effect::SpanOpened { first_of_phase: false, .. }]
            if span.partition == Some(1) && span.end == Some(2 * S)),
        "{fx:?}"
    );
    let fx = m.apply(&ev(
        3 * S,
        Event::ProofFinished {
            proof_id: 1,
            ok: false,
            verified: false,
            duration_s: 3.0,
            mode: BatchMode::Single,
            phases: vec![],
            error: Some("boom".into()),
            cancelled: false,
            requeued_as: vec![],
        },
    ));
    let kinds: Vec<&str> = fx
        .iter()
        .map(|e| match e {
            Effect::SpanClosed { .. } => "closed",
            Effect::ProofFinished(_) => "finished",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["closed", "closed", "finished"]);
    assert!(m.spans.open.is_empty());
    let fx = m.apply(&ev(
        4 * S,
        Event::ModeChanged {
            from: BatchMode::Single,
            to: BatchMode::Sps,
        },
    ));
    assert_eq!(
        fx,
        [Effect::ModeChanged {
            from: BatchMode::Single,
            to: BatchMode::Sps
        }]
    );
    let fx = m.apply(&Record::new(
        5 * S,
        RecordBody::Mark(Mark::ChildExited {
            pid: 9,
            code: Some(0),
            signal: None,
            oom_kill: false,
            reason: "exited 0".into(),
        }),
    ));
    assert_eq!(
        fx,
        [Effect::ChildExited {
            pid: 9,
            code: Some(0)
        }]
    );
}

/// Closing one of many open partitions finds it by key: the spans that stay open keep their
/// start order, and the header's count follows.
#[test]
fn many_open_partitions_close_in_any_order() {
    let mut m = Model::new(Thresholds::default());
    m.apply(&ev(0, hello()));
    for p in 0..1000 {
        m.apply(&phase(S, 1, Phase::Synthesis, Some(p), true));
    }
    assert_eq!(m.current_phase_text(), "synthesis ×1000");
    for p in (0..1000).filter(|p| p % 2 == 0) {
        m.apply(&phase(2 * S, 1, Phase::Synthesis, Some(p), false));
    }
    assert_eq!(m.spans.open.len(), 500);
    let parts: Vec<u32> = m.spans.open.iter().filter_map(|s| s.partition).collect();
    assert_eq!(parts, (0..1000).filter(|p| p % 2 == 1).collect::<Vec<_>>());
    assert_eq!(m.current_phase_text(), "synthesis ×500");
    assert_eq!(m.spans.closed.len(), 500);
}

/// Spans opened between the same two samples share their memory stats while open; one that
/// opens later sees only the samples after it, and a closed one keeps what it saw.
#[test]
fn each_span_sees_exactly_the_samples_taken_while_it_was_open() {
    let mut m = Model::new(Thresholds::default());
    m.apply(&ev(0, hello()));
    m.apply(&phase(S, 1, Phase::Synthesis, Some(0), true));
    m.apply(&phase(S, 1, Phase::Synthesis, Some(1), true));
    m.apply(&sample(2 * S, GIB));
    m.apply(&phase(3 * S, 1, Phase::Synthesis, Some(2), true));
    m.apply(&sample(4 * S, 3 * GIB));
    m.apply(&phase(5 * S, 1, Phase::Synthesis, Some(0), false));
    m.apply(&sample(6 * S, 2 * GIB));
    let open: Vec<(Option<u32>, u64, u64)> = m
        .spans
        .open
        .with_stats()
        .map(|s| (s.partition, s.rss.n, s.rss.max))
        .collect();
    assert_eq!(open, [(Some(1), 3, 3 * GIB), (Some(2), 2, 3 * GIB)]);
    let closed = m.spans.closed.back().unwrap();
    assert_eq!(
        (closed.partition, closed.rss.n, closed.rss.min),
        (Some(0), 2, GIB)
    );
    m.apply(&phase(7 * S, 1, Phase::Synthesis, Some(2), false));
    let last = m.spans.closed.back().unwrap();
    assert_eq!(
        (last.partition, last.rss.n, last.rss.min),
        (Some(2), 2, 2 * GIB)
    );
}

#[test]
fn the_log_counts_the_entries_its_bound_and_a_snapshots_cut_let_go() {
    let mut log = Log::default();
    for t in 0..(log::MAX_LOG as u64 + 5) {
        log.push(t, Logged::Mark(Mark::Note { text: "x".into() }));
    }
    assert_eq!((log.len(), log.older()), (log::MAX_LOG, 5));
    let cut = log.newest(10);
    assert_eq!((cut.len(), cut.older()), (10, 5 + log::MAX_LOG as u64 - 10));
    assert_eq!(cut.iter().next().unwrap().t, log::MAX_LOG as u64 - 5);
}

fn derived(t: u64, e: Event) -> Record {
    Record::new(
        t,
        RecordBody::Derived(provetop_shared::Derived {
            grammar: "bellperson".into(),
            event: e,
            nvtx: None,
        }),
    )
}

/// The spans over `[t0, t1]` as the timeline reads them (their memory left out).
fn drawn_spans(m: &Model, t0: u64, t1: u64) -> Vec<(String, u64, Option<u64>, bool, bool)> {
    m.spans_in(t0, t1)
        .map(|s| (s.label(), s.start, s.end, s.failed, s.derived))
        .collect()
}

#[test]
fn a_light_model_filled_from_the_archive_shows_the_spans_a_whole_model_shows() {
    // Spans read from log lines (dropped when the protocol speaks), then the prover's own,
    // some ending out of order, more than the archive keeps in memory; a light copy taken at
    // each of the first records, then every 61st.
    let mut recs = vec![
        derived(
            S,
            Event::PhaseStarted {
                proof_id: 1,
                phase: Phase::Synthesis,
                partition: None,
            },
        ),
        derived(
            2 * S,
            Event::PhaseEnded {
                proof_id: 1,
                phase: Phase::Synthesis,
                partition: None,
                duration_s: 1.0,
            },
        ),
        ev(3 * S, hello()),
    ];
    for k in 0..1000u64 {
        let t = 4 * S + k * 10 * S;
        let part = Some((k % 3) as u32);
        recs.push(phase(t, k, Phase::MsmH, part, true));
        recs.push(phase(t + S, k, Phase::FftH, None, true));
        recs.push(phase(t + 2 * S, k, Phase::FftH, None, false));
        // A late end: recorded after a later one.
        recs.push(phase(
            t + if k % 5 == 0 { 7 * S } else { 3 * S },
            k,
            Phase::MsmH,
            part,
            false,
        ));
    }
    let mut whole = Model::new(Thresholds::default());
    let mut archive = SpanArchive::default();
    let mut lights = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        if i < 12 || i % 61 == 0 {
            lights.push((i, whole.light(crate::series::Limits::default(), 8, 64)));
        }
        for e in whole.apply(r) {
            if let Effect::SpanClosed { span, .. } = e {
                archive.push(&span);
            }
        }
    }
    assert!(
        archive.on_disk() > 0,
        "some spans are in the archive's file"
    );
    let mut played = Vec::new();
    for (i, light) in lights {
        assert!(light.spans.closed.is_empty());
        let mut m = light;
        for r in &recs[i..] {
            m.apply(r);
        }
        played.push(m);
    }
    let end = whole.now();
    for m in &mut played {
        for t0 in [end, end - 30 * S, end - 200 * S, end - 6000 * S, 0] {
            m.spans.fill(&archive, t0).unwrap();
            assert_eq!(
                drawn_spans(m, t0, end),
                drawn_spans(&whole, t0, end),
                "from {t0}"
            );
        }
    }
    assert!(
        !drawn_spans(&whole, 0, end).iter().any(|s| s.4),
        "the derived span went"
    );
}
