//! Golden tests of the line grammars (`provetop_collect::loglines`) on real lines: a real
//! rust-fil-proofs 19.1.0 capture of our own (`tests/foreign/filecoin`'s fil-seal sealing a
//! 2 KiB sector on the 2-core VM, fil_logger at RUST_LOG=debug, bellperson 0.27 on the CPU),
//! and lines in the formats of bellperson's GPU builds, SupraSeal under curio (fil_logger
//! with colours, GOLOG JSON, journald), cuzk, tracing-subscriber and ark-std,
//! written from those projects' format strings. Plus the user's rules and bad input.
//!
//! Each golden file is read as `watch PID --log FILE` reads a finished log: every line
//! arrives at once, so times come from the lines' own timestamps where they have them.

use std::collections::HashMap;
use std::path::PathBuf;

use provetop_collect::loglines::{Action, Engine, Rule};
use provetop_shared::{Event, Phase, Record, RecordBody};
use provetop_testkit::faults::{phase_spans, Span};

/// When the golden files "arrive" (monotonic ns): far enough from 0 for stamps months old.
const ARRIVAL: u64 = 400 * 86_400 * 1_000_000_000;
/// The wall clock at their arrival: 2026-12-03T00:00:00Z (after every golden stamp).
const WALL: i128 = 1_796_256_000 * 1_000_000_000;

fn golden(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/golden/loglines")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every derived record of `text`'s lines, read by `engine`.
fn derive_with(engine: &mut Engine, text: &[u8]) -> Vec<Record> {
    let mut out = Vec::new();
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        // CRLF lines are given as they are: the engine copes.
        let line = String::from_utf8_lossy(line);
        engine.line_at(&line, ARRIVAL + i as u64, Some(WALL), &mut out);
    }
    for r in &out {
        assert!(
            matches!(r.body, RecordBody::Derived(_)),
            "the engine makes derived records only: {r:?}"
        );
    }
    out
}

fn derive(text: &[u8]) -> Vec<Record> {
    derive_with(&mut Engine::new(Vec::new()), text)
}

/// Spans in start order; panics on an end without its start (a phantom), and on an end
/// whose own duration is not the span's.
fn spans(recs: &[Record]) -> Vec<Span> {
    let out = phase_spans(recs);
    for s in &out {
        let (Some(end), Some(duration_s)) = (s.end, s.duration_s) else {
            continue;
        };
        let measured = (end - s.start) as f64 / 1e9;
        assert!(
            (measured - duration_s).abs() < 1e-3,
            "{}: duration_s {duration_s} but the span is {measured}",
            s.phase
        );
    }
    out
}

fn named<'a>(s: &'a [Span], phase: &str) -> Vec<&'a Span> {
    s.iter().filter(|x| x.phase.as_str() == phase).collect()
}

fn one<'a>(s: &'a [Span], phase: &str) -> &'a Span {
    let v = named(s, phase);
    assert_eq!(v.len(), 1, "{phase}: {v:?}");
    v[0]
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn a_real_rust_fil_proofs_seal_becomes_its_sealing_phases_with_c2s_bellperson_proof_inside() {
    let s = spans(&derive(&golden("fil-seal-2kib-19.1.0-debug.log")));
    assert!(s.iter().all(|x| x.end.is_some()), "all closed: {s:?}");
    let pc1 = one(&s, "seal_pre_commit_phase1");
    let pc2 = one(&s, "seal_pre_commit_phase2");
    let c1 = one(&s, "seal_commit_phase1");
    let c2 = one(&s, "seal_commit_phase2");
    let c2c = one(&s, "seal_commit_phase2_circuit_proofs");
    assert_eq!(named(&s, "verify_seal").len(), 2);
    // The pipeline in order, one sector.
    assert!(pc1.end <= Some(pc2.start) && pc2.end <= Some(c1.start) && c1.end <= Some(c2.start));
    assert!(c2c.inside(c2));
    for x in [pc1, c1, c2] {
        assert_eq!(x.proof, pc1.proof, "one sector, one proof: {x:?}");
        assert_eq!(x.grammar, "fil_proofs");
    }
    // PC2's lines name no sector: a proof of its own, not the sector named last.
    assert_ne!(pc2.proof, pc1.proof, "{pc2:?}");
    // 02:00:09.720 → 02:00:09.730 and 02:00:09.731 → 02:01:32.676 (the fil_logger stamps,
    // local time, milliseconds).
    assert!(close(c1.secs(), 0.010, 1e-6), "{}", c1.secs());
    assert!(close(c2.secs(), 82.945, 1e-6), "{}", c2.secs());
    // bellperson inside C2: synthesis 1.696 s (its own figure: 1.696148831 s) and proving
    // 80.965 s (80.965376859 s), on the sector's proof.
    let syn = one(&s, "synthesis");
    let prove = one(&s, "prove");
    assert_eq!(syn.grammar, "bellperson");
    assert!(syn.inside(c2c) && prove.inside(c2c));
    assert_eq!((syn.proof, prove.proof), (c2.proof, c2.proof));
    assert!(close(syn.secs(), 1.696148831, 0.002), "{}", syn.secs());
    assert!(close(prove.secs(), 80.965376859, 0.002), "{}", prove.secs());
    // The FFTs of h: "get h" → "multiexp h" (02:00:11.704 → 02:00:35.850).
    assert!(close(one(&s, "fft_h").secs(), 24.146, 1e-6));
    // A CPU build: its multiexps overlap on bellperson's pool, and the markers do not
    // bound them, so no MSM phase is made up.
    assert!(named(&s, "msm_h").is_empty() && named(&s, "msm_l").is_empty());
    // Parameters: the proving parameters (0.165 s) and the verifying key, each loaded once.
    let params = named(&s, "params_load");
    assert_eq!(params.len(), 2, "{params:?}");
    assert!(close(params[0].secs(), 0.165, 1e-6), "{}", params[0].secs());
    assert!(params[0].inside(c2c));
}

#[test]
fn env_logger_lines_of_a_gpu_build_in_colour_and_crlf_give_its_msm_phases_and_a_warning() {
    let recs = derive(&golden("bellperson-cuda-env_logger.log"));
    let s = spans(&recs);
    for p in [
        "synthesis",
        "prove",
        "fft_h",
        "msm_h",
        "msm_l",
        "msm_a_b1",
        "msm_b2",
    ] {
        let x = one(&s, p);
        assert!(x.end.is_some(), "{p} closed");
    }
    let prove = one(&s, "prove");
    for p in ["fft_h", "msm_h", "msm_l", "msm_a_b1", "msm_b2"] {
        assert!(one(&s, p).inside(prove), "{p} inside prove");
    }
    // env_logger stamps whole seconds: 17:52:40 → 17:52:42.
    assert!(close(one(&s, "synthesis").secs(), 2.0, 1e-6));
    // "multiexp h" came before the kernel line that told this is a GPU build: the MSM still
    // starts at "multiexp h", not at the kernel line.
    assert_eq!(one(&s, "msm_h").end, Some(one(&s, "msm_l").start));
    assert_eq!(one(&s, "fft_h").end, Some(one(&s, "msm_h").start));
    let warns: Vec<&str> = recs
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Derived(d) => match &d.event {
                Event::Log { level, message, .. } if level == "warn" => Some(message.as_str()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        warns,
        ["GPU Multiexp failed! Falling back to CPU... Error: GPU is busy"]
    );
}

#[test]
fn supraseal_under_curio_in_fil_logger_colour_golog_json_and_journald_give_the_same_spans() {
    let fil = spans(&derive(&golden("supraseal-fil_logger-colour.log")));
    let json = spans(&derive(&golden("golog-json.log")));
    let jd = spans(&derive(&golden("journald-curio.log")));
    for s in [&fil, &json, &jd] {
        // 23:00:34.528 → 23:01:53.972 and 23:01:53.972 → 23:02:14.971.
        assert!(close(one(s, "synthesis").secs(), 79.444, 1e-6), "{s:?}");
        assert!(close(one(s, "prove").secs(), 20.999, 1e-6), "{s:?}");
        // SupraSeal logs no MSM steps.
        assert!(named(s, "msm_h").is_empty());
    }
    // GOLOG's +0100 and fil_logger's local time name different instants; the spans are the
    // same length either way. Inside C2 (fil_logger capture): the sector's proof.
    let c2 = one(&fil, "seal_commit_phase2");
    assert!(one(&fil, "synthesis").inside(c2) && one(&fil, "prove").inside(c2));
    assert_eq!(one(&fil, "prove").proof, c2.proof);
}

#[test]
fn cuzk_timeline_lines_give_per_partition_synthesis_queue_and_gpu_spans_on_its_own_clock() {
    let s = spans(&derive(&golden("cuzk-timeline.log")));
    let synth = named(&s, "synthesis");
    assert_eq!(synth.len(), 2);
    fn p<'a>(v: &[&'a Span], n: u32) -> &'a Span {
        v.iter().find(|x| x.partition == Some(n)).copied().unwrap()
    }
    // Placed by cuzk's millisecond offsets, not by when the lines arrived.
    assert!(close(p(&synth, 0).secs(), 1.831, 1e-9));
    assert!(close(p(&synth, 1).secs(), 1.947, 1e-9));
    let gpu = named(&s, "prove");
    assert!(close(p(&gpu, 0).secs(), 2.210, 1e-9));
    assert!(close(p(&gpu, 1).secs(), 2.213, 1e-9));
    let queue = named(&s, "gpu_queue");
    assert!(close(p(&queue, 1).secs(), 2.096, 1e-9));
    assert!(synth.iter().chain(&gpu).all(|x| x.proof == synth[0].proof));
    // SupraSeal's stage lines: durations ending at the line; CUZK_NTT_H's stages one after
    // another, `total` spanning them.
    assert!(close(one(&s, "cuzk_ntt_msm_h").secs(), 1.043, 1e-9));
    let total = one(&s, "cuzk_ntt_h");
    let ntt = one(&s, "cuzk_ntt_h_ntt_kernels");
    let inv = one(&s, "cuzk_ntt_h_msm_invoke");
    assert!(ntt.end <= Some(inv.start) && ntt.inside(total));
    assert!(close(one(&s, "cuzk_pre_lock_cpu").secs(), 0.012, 1e-9));
}

#[test]
fn tracing_span_closes_in_text_with_colour_and_in_json_open_their_spans_in_the_past() {
    let s = spans(&derive(&golden("tracing-close.log")));
    let syn = one(&s, "synthesis");
    assert_eq!(syn.partition, Some(0));
    assert!(close(syn.secs(), 1.21 + 25.1e-6, 1e-6));
    assert!(close(one(&s, "msm_h").secs(), 0.815_1, 1e-6));
    let prove = one(&s, "prove");
    assert!(close(prove.secs(), 2.83, 1e-6));
    assert!(syn.inside(prove) && one(&s, "msm_h").inside(prove));
    assert_eq!(s.len(), 3, "only close events make spans: {s:?}");
}

#[test]
fn ark_std_print_trace_start_and_end_lines_pair_into_nested_spans() {
    let s = spans(&derive(&golden("ark-print-trace.log")));
    let prove = one(&s, "prove");
    for p in ["synthesis", "Inlining LCs", "fft_h", "Compute A"] {
        let x = one(&s, p);
        assert!(x.inside(prove), "{p}");
        assert_eq!(x.grammar, "ark");
    }
    assert_eq!(s.len(), 5);
}

#[test]
fn a_users_rule_maps_named_captures_to_phases_partitions_durations_and_proofs() {
    let rules = vec![
        Rule::new(
            "myprover-start",
            r"^\[myprover\] begin (?P<phase>\w+) part=(?P<partition>\d+) job=(?P<proof>\w+)$",
            Action::Start,
            None,
        )
        .unwrap(),
        Rule::new(
            "myprover-end",
            r"^\[myprover\] done (?P<phase>\w+) part=(?P<partition>\d+) job=(?P<proof>\w+) in (?P<duration>\S+)$",
            Action::End,
            None,
        )
        .unwrap(),
        Rule::new("myprover-gc", r"GC pause", Action::Instant, Some("gc")).unwrap(),
    ];
    let mut e = Engine::new(rules);
    let text = b"[myprover] begin synthesis part=0 job=a\n\
        [myprover] begin synthesis part=1 job=a\n\
        [myprover] done synthesis part=0 job=a in 1.5s\n\
        [myprover] done msm part=0 job=b in 250ms\n\
        GC pause of 3ms\n\
        [myprover] done synthesis part=1 job=a in 2s\n";
    let recs = derive_with(&mut e, text);
    let s = spans(&recs);
    let synth = named(&s, "synthesis");
    assert_eq!(synth.len(), 2);
    assert!(synth.iter().all(|x| x.proof == synth[0].proof));
    assert_eq!(synth[0].grammar, "myprover-start");
    // An end with a duration and no start opens that long ago, on its own proof.
    let msm = one(&s, "msm");
    assert!(close(msm.secs(), 0.25, 1e-9));
    assert_ne!(msm.proof, synth[0].proof);
    assert_eq!(one(&s, "gc").secs(), 0.0);
}

#[test]
fn a_rule_that_does_not_compile_or_names_no_phase_says_why() {
    let e = Rule::new("bad", r"(?P<phase>\w+", Action::Start, None).unwrap_err();
    assert!(
        e.contains("does not compile") && e.contains("unclosed group"),
        "{e}"
    );
    let e = Rule::new("nophase", r"^start$", Action::Start, None).unwrap_err();
    assert!(e.contains("names no phase"), "{e}");
}

#[test]
fn two_pipelined_bellperson_proofs_are_followed_in_order() {
    let m = "bellperson::groth16::prover::native";
    let l = |ts: &str, msg: &str| format!("2026-03-01T10:00:{ts} INFO {m} > {msg}\n");
    let text = [
        l("00.000", "Bellperson 0.27.0 is being used!"),
        l("01.000", "synthesis time: 1s"),
        l("01.000", "starting proof timer"),
        l("01.500", "Bellperson 0.27.0 is being used!"),
        l("02.500", "synthesis time: 1s"),
        l("04.000", "prover time: 3s"),
        l("04.000", "starting proof timer"),
        l("06.000", "prover time: 2s"),
    ]
    .concat();
    let s = spans(&derive(text.as_bytes()));
    let syn = named(&s, "synthesis");
    let prove = named(&s, "prove");
    assert_eq!((syn.len(), prove.len()), (2, 2));
    assert_ne!(syn[0].proof, syn[1].proof);
    assert_eq!(prove[0].proof, syn[0].proof);
    assert_eq!(prove[1].proof, syn[1].proof);
    assert!(close(prove[0].secs(), 3.0, 1e-6) && close(prove[1].secs(), 2.0, 1e-6));
    // The second synthesis overlapped the first proving, as it did.
    assert!(syn[1].start < prove[0].end.unwrap());
}

#[test]
fn bad_input_is_only_text_no_phantom_phase_no_crash() {
    let mut garbage: Vec<u8> = (0..=255u8).cycle().take(64 << 10).collect();
    garbage.extend_from_slice(b"\n\x1b]0;pwned\x07\x1b[2J\x1b[31mred\n\x00\x01\xff\xfe\n");
    let ends_without_starts = "\
2026-12-01T20:53:49.224 INFO filecoin_proofs::api::seal > seal_commit_phase2:finish: SectorId(7)
2026-12-01T20:53:49.224 INFO bellperson::groth16::prover::native > prover time: 58.771336807s
2026-12-01T20:53:49.224 DEBUG bellperson::groth16::prover::native > multiexp h
2026-12-01T20:53:49.224 DEBUG bellperson::groth16::prover::native > proofs
TIMELINE,5086,GPU_END,job,worker=0,partition=0,gpu_ms=2210
TIMELINE,notanumber,SYNTH_START,job,partition=0
TIMELINE,
End:     Groth16::Prover ......................1.702s
[myprover] done synthesis
{\"level\":\"info\",\"ts\":\"2026-02-25T23:00:34.528+0100\",\"msg\":\"seal_commit_phase1:finish\"}
{\"unclosed\": \"json
2026-12-01T20:53:49.224 INFO bellperson::groth16::prover::native > synthesis time: NaNs
2026-12-01T20:53:49.224 INFO bellperson::groth16::prover::native > synthesis time: -5s
2026-12-01T20:53:49.224 INFO bellperson::groth16::prover::native > synthesis time: 99999999999s
";
    let mut text = garbage;
    text.extend_from_slice(ends_without_starts.as_bytes());
    let recs = derive(&text);
    // "seal_commit_phase1:finish" in GOLOG has no filecoin_proofs logger: not read either.
    assert!(recs.is_empty(), "{recs:#?}");
}

#[test]
fn a_clock_in_the_future_is_not_believed_the_line_counts_at_its_arrival() {
    let mut e = Engine::new(Vec::new());
    let m = "bellperson::groth16::prover::native";
    let mut out = Vec::new();
    e.line_at(
        &format!("2099-01-01T00:00:00.000 INFO {m} > Bellperson 0.27.0 is being used!"),
        ARRIVAL,
        Some(WALL),
        &mut out,
    );
    e.line_at(
        &format!("2099-01-01T00:00:01.000 INFO {m} > synthesis time: 1s"),
        ARRIVAL + 5_000,
        Some(WALL),
        &mut out,
    );
    let s = spans(&out);
    assert_eq!(s[0].start, ARRIVAL);
    assert_eq!(s[0].end, Some(ARRIVAL + 5_000));
}

/// The first and last instants of each proof's `phase`, in proof order, from events
/// stamped `t`.
fn extents<'a>(evs: impl Iterator<Item = (u64, &'a Event)>, phase: &Phase) -> Vec<(u64, u64)> {
    let mut order: Vec<u64> = Vec::new();
    let mut at: HashMap<u64, (u64, u64)> = HashMap::new();
    for (t, e) in evs {
        let (id, p) = match e {
            Event::PhaseStarted {
                proof_id, phase, ..
            }
            | Event::PhaseEnded {
                proof_id, phase, ..
            } => (*proof_id, phase),
            _ => continue,
        };
        if p != phase {
            continue;
        }
        let x = at.entry(id).or_insert_with(|| {
            order.push(id);
            (u64::MAX, 0)
        });
        match e {
            Event::PhaseStarted { .. } => x.0 = x.0.min(t),
            _ => x.1 = x.1.max(t),
        }
    }
    order.iter().map(|id| at[id]).collect()
}

/// The bundled prover's `backend` build, recorded on the lent H200 (docs/logs.md) at
/// RUST_LOG=debug under `provetop run`, its events written to a side file rather than to
/// provetop, three proofs of 4 × 2^16 constraints: the session holds what provetop read from
/// the prover's stderr, the side file what the protocol said of the same proofs. Returns the
/// session's spans.
fn logs_against_protocol_on_the_h200(backend: &str) -> Vec<Span> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/loglines/h200");
    let l = provetop_shared::session::load(&dir.join(format!("{backend}.ptop"))).unwrap();
    let derived: Vec<(u64, &Event)> = l
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Derived(d) => Some((r.t, &d.event)),
            RecordBody::Event(_) => panic!("the protocol reached provetop"),
            _ => None,
        })
        .collect();
    let events: Vec<provetop_shared::EventMsg> =
        std::fs::read_to_string(dir.join(format!("{backend}-events.ndjson")))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let proto: Vec<(u64, &Event)> = events.iter().map(|m| (m.ts, &m.event)).collect();
    for phase in [Phase::Synthesis, Phase::Prove] {
        let d = extents(derived.iter().copied(), &phase);
        let p = extents(proto.iter().copied(), &phase);
        assert_eq!(d.len(), 3, "{backend} {phase}: {d:?}");
        assert_eq!(d.len(), p.len(), "{backend} {phase}");
        for (a, b) in d.iter().zip(&p) {
            for (x, y) in [(a.0, b.0), (a.1, b.1)] {
                let ms = (x as f64 - y as f64).abs() / 1e6;
                assert!(
                    ms < 50.0,
                    "{backend} {phase}: {ms} ms apart ({a:?} vs {b:?})"
                );
            }
        }
    }
    spans(&l.records)
}

#[test]
fn on_the_h200_the_cuda_builds_logs_alone_give_synthesis_and_proving_within_50_ms_of_the_protocol()
{
    let s = logs_against_protocol_on_the_h200("cuda");
    // A GPU build: its MSMs are phases too, one after another inside the proving.
    assert_eq!(named(&s, "msm_h").len(), 3);
    assert_eq!(named(&s, "msm_b2").len(), 3);
}

#[test]
fn on_the_h200_the_supraseal_builds_logs_alone_give_synthesis_and_proving_within_50_ms_of_the_protocol(
) {
    let s = logs_against_protocol_on_the_h200("supraseal");
    assert!(named(&s, "msm_h").is_empty(), "SupraSeal logs no MSM steps");
}

#[test]
fn the_bundled_provers_gpu_stderr_on_the_h200_reads_as_its_proofs() {
    let dir = "h200/";
    let cuda = spans(&derive(&golden(&format!(
        "{dir}provetop-prover-cuda-debug.log"
    ))));
    assert_eq!(named(&cuda, "synthesis").len(), 3);
    assert_eq!(named(&cuda, "prove").len(), 3);
    for p in ["msm_h", "msm_l", "msm_a_b1", "msm_b2"] {
        assert_eq!(named(&cuda, p).len(), 3, "{p}");
    }
    let supra = spans(&derive(&golden(&format!(
        "{dir}provetop-prover-supraseal-debug.log"
    ))));
    assert_eq!(named(&supra, "synthesis").len(), 2);
    assert_eq!(named(&supra, "prove").len(), 2);
    assert!(
        named(&supra, "msm_h").is_empty(),
        "SupraSeal logs no MSM steps"
    );
}

#[test]
fn the_model_draws_derived_phases_marked_as_such_and_ignores_them_once_the_protocol_speaks() {
    use provetop::model::Model;
    use provetop_shared::classify::Thresholds;
    let recs = derive(&golden("supraseal-fil_logger-colour.log"));
    let mut m = Model::new(Thresholds::default());
    for r in &recs {
        m.apply(r);
    }
    assert!(m.has_derived() && !m.has_events());
    let prove: Vec<_> = m
        .spans
        .closed
        .iter()
        .filter(|s| s.phase == Phase::Prove)
        .collect();
    assert_eq!(prove.len(), 1);
    assert!(prove[0].derived, "marked as read from logs");
    assert!((prove[0].duration_s.unwrap() - 20.999).abs() < 1e-3);

    // A stream whose child speaks the protocol: its derived records (an old recording's, or
    // lines that came before its first event) are not applied again.
    let mut m = Model::new(Thresholds::default());
    m.apply(&Record::new(
        ARRIVAL - 1,
        RecordBody::Event(Event::State {
            state: provetop_shared::protocol::ProverState::Idle,
        }),
    ));
    for r in &recs {
        m.apply(r);
    }
    assert!(m.spans.closed.is_empty() && m.spans.open.is_empty());
    assert_eq!(m.derived_ignored, recs.len() as u64);
}

#[test]
fn a_gpu_falling_back_to_the_cpu_is_a_warning_the_model_keeps_for_the_timeline() {
    use provetop::model::Model;
    use provetop_shared::classify::Thresholds;
    let mut m = Model::new(Thresholds::default());
    for r in derive(&golden("bellperson-cuda-env_logger.log")) {
        m.apply(&r);
    }
    let w: Vec<&str> = m.log_warnings.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        w,
        ["GPU Multiexp failed! Falling back to CPU... Error: GPU is busy"]
    );
}
