//! Golden NDJSON lines: what a prover writes and a monitor reads, byte for byte.
//! If one of these breaks, the wire format changed: bump the protocol version.

use provetop_shared::protocol::{parse_control, parse_event, PhaseTime, ProverState};
use provetop_shared::{BatchMode, Control, ControlMsg, Event, EventMsg, Phase, SrsSource};
use provetop_testkit::fixtures::h200_hello;

fn events() -> Vec<(EventMsg, &'static str)> {
    let e = |ts, event| EventMsg { ts, event };
    vec![
        (
            e(1, h200_hello(150_754_820_096, 10, 1_048_576, 16)),
            r#"{"ts":1,"type":"hello","protocol":"1.0","prover_version":"0.1.0","pid":4242,"backend":"cuda","gpus":[{"index":0,"name":"NVIDIA H200","compute_capability":"9.0","memory_bytes":150754820096}],"config":{"partitions":10,"constraints":1048576,"circuit":"porep-shaped","mode":"single","threads":16}}"#,
        ),
        (
            e(
                2,
                Event::SrsLoading {
                    source: SrsSource::Disk,
                    bytes: Some(1 << 30),
                },
            ),
            r#"{"ts":2,"type":"srs_loading","source":"disk","bytes":1073741824}"#,
        ),
        (
            e(3, Event::SrsProgress { done: 3, total: 10 }),
            r#"{"ts":3,"type":"srs_progress","done":3,"total":10}"#,
        ),
        (
            e(
                4,
                Event::SrsReady {
                    bytes: 1 << 30,
                    pinned_bytes: 0,
                    source: SrsSource::Generated,
                    duration_s: 12.5,
                },
            ),
            r#"{"ts":4,"type":"srs_ready","bytes":1073741824,"pinned_bytes":0,"source":"generated","duration_s":12.5}"#,
        ),
        (
            e(
                5,
                Event::ProofQueued {
                    proof_id: 1,
                    mode: BatchMode::Batch(4),
                    sectors: 4,
                    partitions: 10,
                    constraints: 40,
                },
            ),
            r#"{"ts":5,"type":"proof_queued","proof_id":1,"mode":"batch:4","sectors":4,"partitions":10,"constraints":40}"#,
        ),
        (
            e(
                6,
                Event::ProofStarted {
                    proof_id: 1,
                    mode: BatchMode::Sps,
                    sectors: 1,
                    partitions: 10,
                    constraints: 10,
                },
            ),
            r#"{"ts":6,"type":"proof_started","proof_id":1,"mode":"sps","sectors":1,"partitions":10,"constraints":10}"#,
        ),
        (
            e(
                7,
                Event::PhaseStarted {
                    proof_id: 1,
                    phase: Phase::Synthesis,
                    partition: Some(3),
                },
            ),
            r#"{"ts":7,"type":"phase_started","proof_id":1,"phase":"synthesis","partition":3}"#,
        ),
        (
            e(
                8,
                Event::PhaseEnded {
                    proof_id: 1,
                    phase: Phase::MsmB2,
                    partition: None,
                    duration_s: 0.25,
                },
            ),
            r#"{"ts":8,"type":"phase_ended","proof_id":1,"phase":"msm_b2","partition":null,"duration_s":0.25}"#,
        ),
        (
            e(
                9,
                Event::ProofFinished {
                    proof_id: 1,
                    ok: true,
                    verified: true,
                    duration_s: 3.5,
                    mode: BatchMode::Pipelined(2),
                    phases: vec![
                        PhaseTime {
                            phase: Phase::Synthesis,
                            duration_s: 2.0,
                        },
                        PhaseTime {
                            phase: Phase::FftH,
                            duration_s: 0.5,
                        },
                    ],
                    error: None,
                    cancelled: false,
                    requeued_as: vec![],
                },
            ),
            r#"{"ts":9,"type":"proof_finished","proof_id":1,"ok":true,"verified":true,"duration_s":3.5,"mode":"pipelined:2","phases":[{"phase":"synthesis","duration_s":2.0},{"phase":"fft_h","duration_s":0.5}],"error":null}"#,
        ),
        (
            e(
                9,
                Event::ProofFinished {
                    proof_id: 2,
                    ok: false,
                    verified: false,
                    duration_s: 0.0,
                    mode: BatchMode::Single,
                    phases: vec![],
                    error: Some("cancelled before it started (signal)".into()),
                    cancelled: true,
                    requeued_as: vec![],
                },
            ),
            r#"{"ts":9,"type":"proof_finished","proof_id":2,"ok":false,"verified":false,"duration_s":0.0,"mode":"single","phases":[],"error":"cancelled before it started (signal)","cancelled":true}"#,
        ),
        (
            e(
                9,
                Event::ProofFinished {
                    proof_id: 3,
                    ok: false,
                    verified: false,
                    duration_s: 0.0,
                    mode: BatchMode::Batch(2),
                    phases: vec![],
                    error: Some("requeued under batch:2".into()),
                    cancelled: true,
                    requeued_as: vec![9],
                },
            ),
            r#"{"ts":9,"type":"proof_finished","proof_id":3,"ok":false,"verified":false,"duration_s":0.0,"mode":"batch:2","phases":[],"error":"requeued under batch:2","cancelled":true,"requeued_as":[9]}"#,
        ),
        (
            e(
                10,
                Event::ModeChanged {
                    from: BatchMode::Single,
                    to: BatchMode::Sps,
                },
            ),
            r#"{"ts":10,"type":"mode_changed","from":"single","to":"sps"}"#,
        ),
        (
            e(
                11,
                Event::ModeRefused {
                    requested: BatchMode::Batch(8),
                    reason: "predicted peak 90 GiB > budget 64 GiB".into(),
                },
            ),
            r#"{"ts":11,"type":"mode_refused","requested":"batch:8","reason":"predicted peak 90 GiB > budget 64 GiB"}"#,
        ),
        (
            e(
                12,
                Event::MemoryReport {
                    pinned_bytes: 5,
                    gpu_bytes: 6,
                    srs_bytes: 7,
                    gpu_live_bytes: None,
                    gpu_reserved_bytes: None,
                },
            ),
            r#"{"ts":12,"type":"memory_report","pinned_bytes":5,"gpu_bytes":6,"srs_bytes":7}"#,
        ),
        (
            e(
                12,
                Event::MemoryReport {
                    pinned_bytes: 5,
                    gpu_bytes: 8,
                    srs_bytes: 7,
                    gpu_live_bytes: Some(3),
                    gpu_reserved_bytes: Some(8),
                },
            ),
            r#"{"ts":12,"type":"memory_report","pinned_bytes":5,"gpu_bytes":8,"srs_bytes":7,"gpu_live_bytes":3,"gpu_reserved_bytes":8}"#,
        ),
        (
            e(
                13,
                Event::State {
                    state: ProverState::Paused,
                },
            ),
            r#"{"ts":13,"type":"state","state":"paused"}"#,
        ),
        (
            e(
                14,
                Event::Log {
                    level: "debug".into(),
                    target: "bellperson::groth16::prover".into(),
                    message: "multiexp h".into(),
                },
            ),
            r#"{"ts":14,"type":"log","level":"debug","target":"bellperson::groth16::prover","message":"multiexp h"}"#,
        ),
        (
            e(
                15,
                Event::Error {
                    message: "bad control line".into(),
                    fatal: false,
                },
            ),
            r#"{"ts":15,"type":"error","message":"bad control line","fatal":false}"#,
        ),
        (
            e(
                16,
                Event::Bye {
                    reason: "stdin closed".into(),
                    proofs_done: 2,
                },
            ),
            r#"{"ts":16,"type":"bye","reason":"stdin closed","proofs_done":2}"#,
        ),
    ]
}

fn controls() -> Vec<(ControlMsg, &'static str)> {
    let c = |ts, control| ControlMsg { ts, control };
    vec![
        (
            c(1, Control::Prove { count: 3 }),
            r#"{"ts":1,"type":"prove","count":3}"#,
        ),
        (
            c(
                2,
                Control::SetMode {
                    mode: BatchMode::Batch(2),
                },
            ),
            r#"{"ts":2,"type":"set_mode","mode":"batch:2"}"#,
        ),
        (c(3, Control::Pause), r#"{"ts":3,"type":"pause"}"#),
        (c(4, Control::Resume), r#"{"ts":4,"type":"resume"}"#),
        (
            c(5, Control::Shutdown { abort: true }),
            r#"{"ts":5,"type":"shutdown","abort":true}"#,
        ),
    ]
}

#[test]
fn every_event_serializes_to_its_golden_line_and_back() {
    let all = events();
    // Every variant is covered.
    let kinds: std::collections::BTreeSet<_> = all.iter().map(|(m, _)| m.event.kind()).collect();
    assert_eq!(kinds.len(), 16, "a new event type needs a golden line");
    for (msg, line) in all {
        assert_eq!(msg.to_line(), line);
        assert_eq!(parse_event(line).unwrap(), msg, "{line}");
        assert_eq!(
            parse_event(&format!("{line}\r\n")).unwrap(),
            msg,
            "CRLF tolerated"
        );
    }
}

#[test]
fn every_control_serializes_to_its_golden_line_and_back() {
    for (msg, line) in controls() {
        assert_eq!(msg.to_line(), line);
        assert_eq!(parse_control(line).unwrap(), msg);
    }
}

#[test]
fn optional_fields_may_be_absent_and_unknown_fields_are_ignored() {
    let m = parse_event(
        r#"{"ts":7,"type":"phase_started","proof_id":1,"phase":"synthesis","future":{"x":1}}"#,
    )
    .unwrap();
    assert_eq!(
        m.event,
        Event::PhaseStarted {
            proof_id: 1,
            phase: Phase::Synthesis,
            partition: None
        }
    );
    let c = parse_control(r#"{"ts":1,"type":"shutdown"}"#).unwrap();
    assert_eq!(c.control, Control::Shutdown { abort: false });
}

#[test]
fn bad_lines_are_clear_errors() {
    let err = |l: &str| parse_event(l).unwrap_err().to_string();
    assert_eq!(
        err(r#"{"ts":1,"type":"warp"}"#),
        "unknown message type \"warp\""
    );
    assert!(err(r#"{"ts":1,"type":"bye"}"#).starts_with("bad \"bye\" message: missing field"));
    assert!(err(r#"{"ts":1,"type":"proof_queued","proof_id":1,"mode":"turbo","sectors":1,"partitions":1,"constraints":1}"#)
        .contains("unknown batch mode"));
    assert!(err("[1,2]").starts_with("not a JSON object"));
    let cerr = parse_control(r#"{"ts":1,"type":"set_mode","mode":"batch:0"}"#)
        .unwrap_err()
        .to_string();
    assert!(cerr.contains("bad count"), "{cerr}");
    assert_eq!(
        parse_control(r#"{"ts":1,"type":"hello"}"#)
            .unwrap_err()
            .to_string(),
        "unknown message type \"hello\""
    );
}
