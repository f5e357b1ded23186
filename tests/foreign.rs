//! Provers no one here wrote, under `provetop run --headless`, read back from the session file:
//!
//! * an arkworks Groth16 prover (tests/foreign/ark, built here from the crate registry's
//!   ark-groth16 0.5) shows its phases through provetop-emit's tracing Layer, and, with its
//!   protocol off, through ark-std's print-trace lines alone;
//! * the Python and shell provers of docs/protocol.md (taken from the document itself) land
//!   their events in the session;
//! * rust-fil-proofs' filecoin-proofs 19.1.0 sealing a 2 KiB sector (tests/foreign/filecoin; too
//!   heavy to build in every test run, so its session is a committed asset that
//!   tests/foreign/filecoin/record.sh makes) shows every sealing phase and, inside C2, bellperson's
//!   synthesis and proving, from its fil_logger lines alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use provetop::model::Model;
use provetop::store::Store;
use provetop_shared::session::load;
use provetop_shared::{Event, Mark, Phase, Record, RecordBody};
use provetop_testkit::bins::{bin_dir, provetop};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `ark-prove`, built from its own workspace into `target/foreign` (its own lock and target
/// directory: arkworks never enters the product's build).
fn ark_prove() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let target = bin_dir().join("..").join("foreign");
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let st = Command::new(cargo)
                .args(["build", "-q", "--release", "--manifest-path"])
                .arg(repo().join("tests/foreign/ark/Cargo.toml"))
                .arg("--target-dir")
                .arg(&target)
                .status()
                .expect("run cargo build for tests/foreign/ark");
            assert!(st.success(), "cargo build of tests/foreign/ark failed");
            let bin = target.join("release").join("ark-prove");
            assert!(bin.is_file(), "{} missing after the build", bin.display());
            bin
        })
        .clone()
}

/// `provetop run --headless --record SESSION -- cmd…` to its end (killed and failed after
/// `limit`); the session's records, provetop's stderr, and the session replayed to its end.
fn run_headless(
    cmd: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> (Vec<Record>, String, Model) {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s.ptop");
    let err_path = dir.path().join("stderr");
    let mut c = Command::new(provetop());
    c.args(["run", "--headless", "--record"])
        .arg(&session)
        .arg("--")
        .args(cmd)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env_remove("PROVETOP_EVENTS")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("start provetop");
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("provetop run {cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert_eq!(status.code(), Some(0), "provetop run {cmd:?}: {err}");
    let store = Store::open(&session).expect("the session replays");
    let model = store.model_at(store.end());
    (
        load(&session).expect("the session reads back").records,
        err,
        model,
    )
}

/// A phase as the timeline has it: which proof, which phase, where it began and ended.
#[derive(Debug, Clone)]
struct Span {
    proof: u64,
    phase: String,
    from: u64,
    to: u64,
}

/// The closed phases among `events` (record time of the start, of the end).
fn spans(events: &[(u64, &Event)]) -> Vec<Span> {
    let mut open: Vec<(u64, String, u64)> = Vec::new();
    let mut done = Vec::new();
    for &(t, e) in events {
        match e {
            Event::PhaseStarted {
                proof_id, phase, ..
            } => open.push((*proof_id, phase.as_str().to_string(), t)),
            Event::PhaseEnded {
                proof_id,
                phase,
                duration_s,
                ..
            } => {
                let name = phase.as_str();
                let from = match open
                    .iter()
                    .rposition(|(p, n, _)| p == proof_id && n == name)
                {
                    Some(i) => open.remove(i).2,
                    // A duration-only end (a log line that carries its duration) opens its span
                    // in the past.
                    None => t.saturating_sub((duration_s * 1e9) as u64),
                };
                done.push(Span {
                    proof: *proof_id,
                    phase: name.to_string(),
                    from,
                    to: t,
                });
            }
            _ => {}
        }
    }
    done
}

fn protocol_events(recs: &[Record]) -> Vec<(u64, &Event)> {
    recs.iter()
        .filter_map(|r| match &r.body {
            RecordBody::Event(e) => Some((r.t, e)),
            _ => None,
        })
        .collect()
}

fn derived_events<'a>(recs: &'a [Record], grammar: &str) -> Vec<(u64, &'a Event)> {
    recs.iter()
        .filter_map(|r| match &r.body {
            RecordBody::Derived(d) if d.grammar == grammar => Some((r.t, &d.event)),
            _ => None,
        })
        .collect()
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.phase.as_str()).collect()
}

#[test]
fn an_arkworks_prover_shows_its_proofs_and_phases_through_the_tracing_layer() {
    let bin = ark_prove();
    let (recs, err, model) = run_headless(
        &[bin.to_str().unwrap(), "--proofs", "2", "--rounds", "2048"],
        &[],
        Duration::from_secs(300),
    );
    let events = protocol_events(&recs);
    assert!(
        matches!(events.first(), Some((_, Event::Hello { .. }))),
        "{err}"
    );
    let finished: Vec<(u64, bool)> = events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::ProofFinished {
                proof_id,
                ok: true,
                verified,
                ..
            } => Some((*proof_id, *verified)),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [(1, true), (2, true)], "{err}");
    let spans = spans(&events);
    for proof in [1, 2] {
        let of: Vec<&Span> = spans.iter().filter(|s| s.proof == proof).collect();
        let names: Vec<&str> = of.iter().map(|s| s.phase.as_str()).collect();
        // The circuit's synthesis span closes inside Groth16::prove, then verify.
        assert_eq!(names, ["synthesis", "prove", "verify"], "proof {proof}");
        let (synth, prove) = (of[0], of[1]);
        assert!(prove.from <= synth.from && synth.to <= prove.to);
        // Synthesis ends when its span is left, though arkworks keeps clones of it until the
        // proof is done: a small part of the prove call, as print-trace says too.
        assert!(
            (synth.to - synth.from) * 2 < prove.to - prove.from,
            "{synth:?} in {prove:?}"
        );
        assert!(prove.to <= of[2].from);
    }
    // The key generation outside any proof, as srs_generate.
    assert!(spans
        .iter()
        .any(|s| s.proof == 0 && s.phase == Phase::SrsGenerate.as_str() && s.to > s.from));
    // A child that speaks the protocol is not counted twice: its print-trace lines are recorded
    // as its output, and the replayed timeline holds its own phases only. (Its stdout and its
    // events pipe are read apart, so lines read before its hello is counted may still be
    // recorded as derived events; the model leaves them out.)
    assert!(!model.has_derived());
    assert!(model.spans.closed.iter().all(|s| !s.derived));
    assert_eq!(
        model
            .spans
            .closed
            .iter()
            .filter(|s| s.phase == Phase::Prove)
            .count(),
        2
    );
    assert!(recs.iter().any(|r| matches!(&r.body,
        RecordBody::Output(o) if o.text.contains("Start:") && o.text.contains("Groth16::Prover"))));
}

#[test]
fn an_arkworks_prover_with_its_protocol_off_shows_its_phases_through_print_trace_lines() {
    let bin = ark_prove();
    let (recs, err, model) = run_headless(
        &[bin.to_str().unwrap(), "--proofs", "2", "--rounds", "2048"],
        &[("PROVETOP_EVENTS", "off")],
        Duration::from_secs(300),
    );
    assert!(protocol_events(&recs).is_empty(), "{err}");
    // On the replayed timeline, marked as read from its log lines.
    assert!(model.has_derived());
    let proves: Vec<_> = model
        .spans
        .closed
        .iter()
        .filter(|s| s.phase == Phase::Prove)
        .collect();
    assert_eq!(proves.len(), 2);
    assert!(proves.iter().all(|s| s.derived));
    let spans = spans(&derived_events(&recs, "ark"));
    let count = |name: &str| spans.iter().filter(|s| s.phase == name).count();
    // Each Groth16::Prover call (two proofs) is a prove span; the generator's synthesis and each
    // prover's are synthesis spans, the witness map fft_h.
    assert_eq!(count("prove"), 2, "{:?}", names(&spans));
    assert_eq!(count("synthesis"), 3, "{:?}", names(&spans));
    assert_eq!(count("fft_h"), 2, "{:?}", names(&spans));
    assert_eq!(count("Groth16::Generator"), 1, "{:?}", names(&spans));
    for prove in spans.iter().filter(|s| s.phase == "prove") {
        assert!(
            spans
                .iter()
                .any(|s| s.phase == "fft_h" && prove.from <= s.from && s.to <= prove.to),
            "no witness map inside {prove:?}"
        );
    }
}

/// The fenced block of docs/protocol.md in `lang`.
fn protocol_doc_example(lang: &str) -> String {
    let doc = std::fs::read_to_string(repo().join("docs/protocol.md")).unwrap();
    let fence = format!("```{lang}\n");
    let start = doc
        .find(&fence)
        .expect("the example is in docs/protocol.md")
        + fence.len();
    let len = doc[start..].find("```").unwrap();
    doc[start..start + len].to_string()
}

fn assert_doc_prover_lands(recs: &[Record], err: &str, model: &Model) {
    let on_timeline: Vec<&str> = model
        .spans
        .closed
        .iter()
        .filter(|s| !s.derived)
        .map(|s| s.phase.as_str())
        .collect();
    assert_eq!(on_timeline, ["synthesis", "prove", "verify"]);
    let events = protocol_events(recs);
    assert!(
        matches!(events.first(), Some((_, Event::Hello { .. }))),
        "{err}"
    );
    let spans = spans(&events);
    assert_eq!(names(&spans), ["synthesis", "prove", "verify"], "{err}");
    assert!(spans.iter().all(|s| s.proof == 1 && s.to > s.from));
    assert!(events.iter().any(|(_, e)| matches!(
        e,
        Event::ProofFinished {
            proof_id: 1,
            ok: true,
            verified: true,
            ..
        }
    )));
    assert!(matches!(events.last(), Some((_, Event::Bye { .. }))));
}

#[test]
fn the_shell_prover_of_the_protocol_doc_lands_its_events_in_the_session_without_a_clock_warning() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("prover.sh");
    let example = protocol_doc_example("sh");
    assert!(example.contains(r#"{"ts":0,"#), "the example sends ts 0");
    std::fs::write(&script, example).unwrap();
    let (recs, err, model) = run_headless(
        &["sh", script.to_str().unwrap()],
        &[],
        Duration::from_secs(60),
    );
    assert_doc_prover_lands(&recs, &err, &model);
    // `ts` 0 asks to be stamped on arrival, as the document says: nothing to warn of.
    assert!(
        !err.contains("event times") && !err.contains("implausible"),
        "{err}"
    );
    let warnings: Vec<&str> = recs
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(Mark::Warning { text }) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn the_python_prover_of_the_protocol_doc_lands_its_events_in_the_session() {
    if !provetop_testkit::system::have("python3", "python3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("prover.py");
    std::fs::write(&script, protocol_doc_example("python")).unwrap();
    let (recs, err, model) = run_headless(
        &["python3", script.to_str().unwrap()],
        &[],
        Duration::from_secs(60),
    );
    assert_doc_prover_lands(&recs, &err, &model);
    // Its own clock stamps are kept: the synthesis took its 0.3 s on provetop's axis too.
    let events = protocol_events(&recs);
    let synth = &spans(&events)[0];
    assert!(synth.to - synth.from >= 290_000_000, "{synth:?}");
}

/// The committed recording of `tests/foreign/filecoin/record.sh`.
fn filecoin_asset() -> PathBuf {
    repo().join("assets/foreign/filecoin-seal-2kib.ptop")
}

#[test]
fn the_recorded_filecoin_seal_has_every_sealing_phase_from_its_log_lines_alone() {
    let recs = load(&filecoin_asset()).unwrap().records;
    // No provetop code in the prover: not one protocol event, every phase derived.
    assert!(protocol_events(&recs).is_empty());
    let sealing = spans(&derived_events(&recs, "fil_proofs"));
    let order: Vec<&str> = sealing
        .iter()
        .map(|s| s.phase.as_str())
        .filter(|n| n.starts_with("seal_") || *n == "verify_seal")
        .collect();
    // Spans in the order they close: C2's own verification of its proof, then C2, then ours.
    assert_eq!(
        order,
        [
            "seal_pre_commit_phase1",
            "seal_pre_commit_phase2",
            "seal_commit_phase1",
            "seal_commit_phase2_circuit_proofs",
            "verify_seal",
            "seal_commit_phase2",
            "verify_seal",
        ]
    );
    let get = |name: &str| sealing.iter().find(|s| s.phase == name).unwrap().clone();
    let (pc1, pc2, c1, c2) = (
        get("seal_pre_commit_phase1"),
        get("seal_pre_commit_phase2"),
        get("seal_commit_phase1"),
        get("seal_commit_phase2"),
    );
    assert!(pc1.to <= pc2.from && pc2.to <= c1.from && c1.to <= c2.from);
    // Inside C2: the parameters read, then bellperson's synthesis, then its proving.
    let inner = spans(&derived_events(&recs, "bellperson"));
    let synth = inner.iter().find(|s| s.phase == "synthesis").unwrap();
    let prove = inner.iter().find(|s| s.phase == "prove").unwrap();
    assert!(c2.from <= synth.from && synth.to <= prove.from && prove.to <= c2.to);
    assert!(synth.to > synth.from && prove.to - prove.from > 1_000_000_000);
    assert!(sealing
        .iter()
        .any(|s| s.phase == "params_load" && c2.from <= s.from && s.to <= synth.from));
}

#[test]
fn the_recorded_filecoin_seal_replays_with_c2s_synthesis_and_proving_inside_c2_on_the_timeline() {
    let store = provetop::store::Store::open(&filecoin_asset()).unwrap();
    let model = store.model_at(store.end());
    let spans = &model.spans.closed;
    let find = |name: &str| {
        spans
            .iter()
            .find(|s| s.phase.as_str() == name)
            .unwrap_or_else(|| panic!("no {name} on the timeline: {:?}", spans))
    };
    for name in [
        "seal_pre_commit_phase1",
        "seal_pre_commit_phase2",
        "seal_commit_phase1",
        "seal_commit_phase2",
        "verify_seal",
    ] {
        let s = find(name);
        assert!(s.derived && s.end.is_some(), "{s:?}");
    }
    let c2 = find("seal_commit_phase2");
    let (synth, prove) = (find("synthesis"), find("prove"));
    assert!(synth.derived && prove.derived);
    let end = |s: &provetop::model::PhaseSpan| s.end.unwrap();
    assert!(c2.start <= synth.start && end(synth) <= prove.start && end(prove) <= end(c2));
    // The threshold classifier's view is unchanged by the phases (the whole seal stays under
    // the first band on this small sector): classify reads the recording without a complaint.
    let out =
        provetop_testkit::bins::run_provetop(&["classify", filecoin_asset().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("samples"), "{}", out.stdout);
}

#[test]
fn the_recorded_filecoin_seal_replays_on_the_screen_with_a_timeline_row_per_sealing_phase() {
    use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};
    if !have_tmux(
        "the_recorded_filecoin_seal_replays_on_the_screen_with_a_timeline_row_per_sealing_phase",
    ) {
        return;
    }
    let cmd = format!(
        "{} replay {}; sleep 600",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&filecoin_asset().display().to_string()),
    );
    let tmux = Tmux::start("foreign-filecoin", 200, 60, &cmd);
    tmux.wait_for("the replay", Duration::from_secs(30), |s| {
        s.contains("─ phases")
    });
    tmux.keys(&["End"]);
    let screen = tmux.wait_for("the end of the replay", Duration::from_secs(30), |s| {
        s.contains("■ end")
    });
    assert!(screen.contains("phases from its log lines"), "{screen}");
    assert!(screen.contains("─ phases ─ from its log lines"), "{screen}");
    for row in [
        "PC1│",
        "PC2│",
        "C1│",
        "C2│",
        "C2 proofs│",
        "verify_seal│",
        "synth│",
        "prove│",
    ] {
        assert!(
            screen.lines().any(|l| l.trim_start().starts_with(row)),
            "no {row} row: {screen}"
        );
    }
}

#[test]
fn phases_read_from_a_childs_logs_before_its_hello_give_way_to_its_protocol() {
    use provetop_shared::classify::Thresholds;
    use provetop_shared::protocol::{Backend, BatchMode, ProverConfig};
    use provetop_shared::Derived;
    // The order a real run can give (tests above): the child wrote its hello first, but its
    // stdout was read first, so a print-trace start became a derived event before the hello.
    let derived = |t: u64, event: Event| {
        Record::new(
            t,
            RecordBody::Derived(Derived {
                grammar: "ark".into(),
                event,
                nvtx: None,
            }),
        )
    };
    let generator = Phase::Other("Groth16::Generator".into());
    let mut model = Model::new(Thresholds::default());
    model.apply(&derived(
        10,
        Event::PhaseStarted {
            proof_id: 1,
            phase: generator.clone(),
            partition: None,
        },
    ));
    assert!(model.has_derived());
    model.apply(&Record::new(
        20,
        RecordBody::Event(Event::Hello {
            protocol: "1.1".into(),
            prover_version: "0".into(),
            pid: 1,
            backend: Backend::Cpu,
            gpus: Vec::new(),
            config: ProverConfig {
                partitions: 1,
                constraints: 1,
                circuit: "c".into(),
                mode: BatchMode::Single,
                threads: None,
            },
        }),
    ));
    model.apply(&derived(
        30,
        Event::PhaseEnded {
            proof_id: 1,
            phase: generator,
            partition: None,
            duration_s: 0.02,
        },
    ));
    assert!(!model.has_derived());
    assert!(model.spans.open.is_empty(), "{:?}", model.spans.open);
    assert!(model.spans.closed.is_empty());
}

#[test]
fn an_arkworks_prover_logging_tracing_span_closes_shows_its_phases_through_the_tracing_grammar() {
    let bin = ark_prove();
    let (recs, err, model) = run_headless(
        &[
            bin.to_str().unwrap(),
            "--proofs",
            "2",
            "--rounds",
            "2048",
            "--fmt",
        ],
        &[("PROVETOP_EVENTS", "off")],
        Duration::from_secs(300),
    );
    assert!(protocol_events(&recs).is_empty(), "{err}");
    assert!(recs.iter().any(|r| matches!(&r.body,
        RecordBody::Output(o) if o.text.contains("prove: ark_prove: close time.busy="))));
    // tracing-subscriber's fmt close lines on stderr (`… close time.busy=… time.idle=…`), as
    // SP1 and Plonky3 log theirs: every span a phase, beside the print-trace ones on stdout.
    let spans = spans(&derived_events(&recs, "tracing"));
    let count = |name: &str| spans.iter().filter(|s| s.phase == name).count();
    assert_eq!(count("prove"), 2, "{:?}", names(&spans));
    assert_eq!(count("verify"), 2, "{:?}", names(&spans));
    assert_eq!(count("synthesis"), 3, "{:?}", names(&spans));
    assert_eq!(count("setup"), 1, "{:?}", names(&spans));
    assert_eq!(count("proof"), 2, "{:?}", names(&spans));
    assert!(spans.iter().all(|s| s.to > s.from));
    assert!(model.has_derived());
}
