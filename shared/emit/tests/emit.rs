//! provetop-emit against real `tracing` spans, real `log` records and a real child process
//! reading its environment.

use std::process::Command;
use std::sync::{Arc, Mutex};

use log::{Level, Log, Metadata, Record};
use provetop_emit::layer::{PhaseLayer, SpanKind};
use provetop_emit::logger::{Bridge, Intercept};
use provetop_emit::{
    Backend, BatchMode, Emitter, Event, EventMsg, Phase, ProverConfig, PROTOCOL_VERSION,
};
use tracing_subscriber::layer::SubscriberExt;

fn kinds(e: &Emitter) -> Vec<Event> {
    e.taken().into_iter().map(|m| m.event).collect()
}

/// What a tracing layer wrote after its `hello`, which must come first and name the protocol.
fn after_hello(e: &Emitter) -> Vec<EventMsg> {
    let mut got = e.taken();
    assert!(!got.is_empty(), "nothing written");
    let hello = got.remove(0);
    match &hello.event {
        Event::Hello { protocol, pid, .. } => {
            assert_eq!(protocol, PROTOCOL_VERSION);
            assert_eq!(*pid, std::process::id());
        }
        other => panic!("the layer's first event is {other:?}, not hello"),
    }
    assert!(
        !got.iter().any(|m| matches!(m.event, Event::Hello { .. })),
        "a second hello: {got:?}"
    );
    got
}

/// The events a tracing layer wrote after its `hello`.
fn layer_kinds(e: &Emitter) -> Vec<Event> {
    after_hello(e).into_iter().map(|m| m.event).collect()
}

#[test]
fn spans_become_a_proof_and_its_phases_with_ids_and_partitions_inherited() {
    let e = Emitter::memory();
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(e.clone()));
    tracing::subscriber::with_default(subscriber, || {
        let proof = tracing::info_span!("proof", proof_id = 7u64, verified = false);
        let _p = proof.enter();
        {
            let part = tracing::info_span!("partition", partition = 2u64);
            let _q = part.enter();
            let _s = tracing::info_span!("Constraint synthesis").entered();
        }
        let _h = tracing::info_span!("sha256 rounds").entered();
        drop(_h);
        proof.record("verified", true);
    });
    let got = layer_kinds(&e);
    let summary: Vec<String> = got
        .iter()
        .map(|ev| match ev {
            Event::ProofStarted { proof_id, .. } => format!("proof+{proof_id}"),
            Event::ProofFinished {
                proof_id,
                ok,
                verified,
                ..
            } => format!("proof-{proof_id} ok={ok} verified={verified}"),
            Event::PhaseStarted {
                proof_id,
                phase,
                partition,
            } => format!("+{} p{proof_id} {partition:?}", phase.as_str()),
            Event::PhaseEnded {
                proof_id,
                phase,
                partition,
                ..
            } => format!("-{} p{proof_id} {partition:?}", phase.as_str()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        summary,
        [
            "proof+7",
            "+partition p7 Some(2)",
            "+synthesis p7 Some(2)",
            "-synthesis p7 Some(2)",
            "-partition p7 Some(2)",
            "+sha256 rounds p7 None",
            "-sha256 rounds p7 None",
            "proof-7 ok=true verified=true",
        ]
    );
}

#[test]
fn proofs_without_ids_are_numbered_and_a_recorded_error_fails_one() {
    let e = Emitter::memory();
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(e.clone()));
    tracing::subscriber::with_default(subscriber, || {
        for i in 0..2 {
            let proof = tracing::info_span!("proof", error = tracing::field::Empty);
            let _p = proof.enter();
            let _s = tracing::info_span!("msm_h").entered();
            if i == 1 {
                proof.record("error", "out of memory");
            }
        }
        // A span created but never entered says nothing.
        let _idle = tracing::info_span!("synthesis");
    });
    let got = layer_kinds(&e);
    let finished: Vec<(u64, bool, Option<String>)> = got
        .iter()
        .filter_map(|ev| match ev {
            Event::ProofFinished {
                proof_id,
                ok,
                error,
                ..
            } => Some((*proof_id, *ok, error.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        [
            (1, true, None),
            (2, false, Some("out of memory".to_string()))
        ]
    );
    assert!(got.iter().any(|ev| matches!(ev,
        Event::PhaseEnded { proof_id: 2, phase: Phase::MsmH, duration_s, .. } if *duration_s >= 0.0)));
    assert_eq!(got.len(), 8, "{got:?}");
}

#[test]
fn a_map_can_rename_spans_and_leave_others_out() {
    let e = Emitter::memory();
    let layer = PhaseLayer::new(e.clone()).with_map(|name| match name {
        "groth16" => Some(SpanKind::Phase(Phase::Prove)),
        _ => None,
    });
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, || {
        let _a = tracing::info_span!("http request").entered();
        let _b = tracing::info_span!("groth16", proof_id = 3u64).entered();
    });
    let got = layer_kinds(&e);
    assert_eq!(got.len(), 2);
    assert!(matches!(
        &got[0],
        Event::PhaseStarted {
            proof_id: 3,
            phase: Phase::Prove,
            ..
        }
    ));
}

/// A logger standing for the one the prover already had.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Vec<String>>>);

impl Log for Kept {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= Level::Debug
    }
    fn log(&self, r: &Record<'_>) {
        self.0
            .lock()
            .unwrap()
            .push(format!("{} {}", r.level(), r.args()));
    }
    fn flush(&self) {}
}

struct TakeMarkers;

impl Intercept for TakeMarkers {
    fn record(&self, _r: &Record<'_>, message: &str) -> bool {
        message.starts_with("multiexp")
    }
}

fn record(bridge: &Bridge, level: Level, target: &str, message: &str) {
    bridge.log(
        &Record::builder()
            .level(level)
            .target(target)
            .args(format_args!("{message}"))
            .build(),
    );
}

#[test]
fn the_log_bridge_writes_info_records_as_events_and_hands_every_record_on() {
    let e = Emitter::memory();
    let kept = Kept::default();
    let bridge = Bridge::new(e.clone())
        .inner(kept.clone())
        .intercept(TakeMarkers);
    record(
        &bridge,
        Level::Info,
        "bellperson::groth16::prover",
        "starting proof timer",
    );
    record(
        &bridge,
        Level::Info,
        "bellperson::groth16::prover",
        "multiexp h",
    );
    record(
        &bridge,
        Level::Debug,
        "bellperson::groth16::prover",
        "get h",
    );
    let got = kinds(&e);
    assert_eq!(
        got,
        [Event::Log {
            level: "info".into(),
            target: "bellperson::groth16::prover".into(),
            message: "starting proof timer".into(),
        }]
    );
    assert_eq!(
        *kept.0.lock().unwrap(),
        [
            "INFO starting proof timer",
            "INFO multiexp h",
            "DEBUG get h"
        ]
    );
    // With no monitor, records still reach the inner logger and nothing is kept.
    let quiet = Bridge::new(Emitter::disabled()).inner(kept.clone());
    assert!(quiet.enabled(&Metadata::builder().level(Level::Debug).build()));
    assert!(
        !Bridge::new(Emitter::disabled()).enabled(&Metadata::builder().level(Level::Error).build())
    );
}

/// Run inside the child the tests below start: emit through what the environment says.
#[test]
fn child_emits_through_the_environment() {
    if std::env::var_os("PROVETOP_EMIT_TEST_CHILD").is_none() {
        return;
    }
    let e = provetop_emit::from_env();
    e.phase_started(1, Phase::Synthesis, Some(0));
    e.memory_report(1, 2, 3);
}

fn child_event_lines(env: &[(&str, &str)]) -> Vec<serde_json::Value> {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_emits_through_the_environment",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("PROVETOP_EMIT_TEST_CHILD", "1")
    .env_remove("PROVETOP_EVENTS_FD")
    .env_remove("PROVETOP_EVENTS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        // The harness writes "test … ... " before the test's own output on the same line.
        .filter_map(|l| l.find("{\"ts\"").map(|at| &l[at..]))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn events_go_to_the_fd_named_in_provetop_events_fd_and_nowhere_without_it_or_when_off() {
    let lines = child_event_lines(&[("PROVETOP_EVENTS_FD", "1")]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["type"], "phase_started");
    assert_eq!(lines[0]["phase"], "synthesis");
    assert_eq!(lines[1]["type"], "memory_report");
    assert_eq!(lines[1]["srs_bytes"], 3);
    assert!(child_event_lines(&[]).is_empty());
    assert!(
        child_event_lines(&[("PROVETOP_EVENTS_FD", "1"), ("PROVETOP_EVENTS", "off")]).is_empty()
    );
    assert!(child_event_lines(&[("PROVETOP_EVENTS_FD", "99")]).is_empty());
}

#[test]
fn a_phase_ends_when_it_was_last_left_not_when_a_kept_clone_of_it_closes() {
    let e = Emitter::memory();
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(e.clone()));
    tracing::subscriber::with_default(subscriber, || {
        // As arkworks' constraint system does: a clone of the current span kept per constraint.
        let kept = {
            let _s = tracing::info_span!("synthesis", proof_id = 1u64).entered();
            std::thread::sleep(std::time::Duration::from_millis(20));
            tracing::Span::current()
        };
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(kept);
    });
    let got = after_hello(&e);
    let (start, end) = (&got[0], &got[1]);
    let Event::PhaseEnded { duration_s, .. } = &end.event else {
        panic!("{got:?}")
    };
    assert!((0.02..0.15).contains(duration_s), "{duration_s}");
    let stamped = (end.ts - start.ts) as f64 / 1e9;
    assert!(
        (stamped - duration_s).abs() < 0.005,
        "{stamped} vs {duration_s}"
    );
}

#[test]
fn a_phase_entered_on_several_threads_ends_with_the_last_of_them() {
    let e = Emitter::memory();
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(e.clone()));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("msm_h", proof_id = 2u64);
        let dispatch = tracing::dispatcher::get_default(|d| d.clone());
        std::thread::scope(|scope| {
            for ms in [10u64, 120] {
                let (span, dispatch) = (span.clone(), dispatch.clone());
                scope.spawn(move || {
                    tracing::dispatcher::with_default(&dispatch, || {
                        let _e = span.enter();
                        std::thread::sleep(std::time::Duration::from_millis(ms));
                    })
                });
            }
        });
    });
    let got = layer_kinds(&e);
    assert_eq!(got.len(), 2, "{got:?}");
    let Event::PhaseEnded { duration_s, .. } = &got[1] else {
        panic!("{got:?}")
    };
    assert!(*duration_s >= 0.11, "{duration_s}");
}

/// A proof of two partitions, each a `partition` span with a synthesis span inside that says
/// its constraints; `counts` are the proof span's own count fields, if any.
fn two_partition_proof(proof_id: u64, counts: Option<(u32, u64)>) {
    let proof = match counts {
        Some((p, c)) => tracing::info_span!("proof", proof_id, partitions = p, constraints = c),
        None => tracing::info_span!("proof", proof_id),
    };
    let _p = proof.enter();
    for partition in 0..2u32 {
        let _q = tracing::info_span!("partition", partition).entered();
        let _s = tracing::info_span!("synthesis", constraints = 1500u64).entered();
    }
}

fn started_counts(got: &[Event]) -> Vec<(u64, u32, u64)> {
    got.iter()
        .filter_map(|ev| match ev {
            Event::ProofStarted {
                proof_id,
                partitions,
                constraints,
                ..
            } => Some((*proof_id, *partitions, *constraints)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_layer_says_hello_first_and_counts_partitions_and_constraints_of_proofs_with_two_partition_spans(
) {
    // Counts the proof span does not give: unknown (0) for the first proof, then what the
    // previous proof's partition spans showed.
    let e = Emitter::memory();
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(e.clone()));
    tracing::subscriber::with_default(subscriber, || {
        two_partition_proof(1, None);
        two_partition_proof(2, None);
        two_partition_proof(3, Some((4, 9000)));
    });
    let got = layer_kinds(&e);
    assert_eq!(
        started_counts(&got),
        [(1, 0, 0), (2, 2, 3000), (3, 4, 9000)],
        "{got:?}"
    );

    // The prover's own hello is not repeated; the layer's hello says what it was told.
    let e = Emitter::memory();
    e.hello("mine 1.0", Backend::Cuda, config(8, 100));
    let subscriber = tracing_subscriber::registry().with(PhaseLayer::new(e.clone()));
    tracing::subscriber::with_default(subscriber, || two_partition_proof(1, Some((2, 3000))));
    let got = after_hello(&e);
    assert!(matches!(
        got[0].event,
        Event::ProofStarted {
            partitions: 2,
            constraints: 3000,
            ..
        }
    ));

    let e = Emitter::memory();
    let layer = PhaseLayer::new(e.clone()).with_hello("told 2.0", Backend::Cpu, None);
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, || two_partition_proof(1, Some((2, 3000))));
    match &e.taken()[0].event {
        Event::Hello {
            prover_version,
            config,
            ..
        } => {
            assert_eq!(prover_version, "told 2.0");
            assert_eq!((config.partitions, config.constraints), (2, 1500));
        }
        other => panic!("{other:?}"),
    }
}

fn config(partitions: u32, constraints: u64) -> ProverConfig {
    ProverConfig {
        partitions,
        constraints,
        circuit: "c".into(),
        mode: BatchMode::Single,
        threads: None,
    }
}
