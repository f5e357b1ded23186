//! Deterministic session files for the offline tests (classify, export, store) and the
//! benchmarks: the demo session, a long recording, the seed's CSV and awk script, goldens.

use std::borrow::Borrow;
use std::path::{Path, PathBuf};

use provetop_shared::protocol::{GpuInfo, PhaseTime, ProverConfig, ProverState};
use provetop_shared::record::GpuReading;
use provetop_shared::session::{SessionHeader, SessionWriter};
use provetop_shared::{
    Alert, AlertLevel, AlertState, Backend, BatchMode, Control, Event, Mark, Phase, Record,
    RecordBody, Sample, SrsSource,
};

/// 1 GiB.
pub const GIB: u64 = 1 << 30;
/// Seconds → ns on the fixture's monotonic clock (which starts at 1 s).
pub fn at(s: f64) -> u64 {
    1_000_000_000 + (s * 1e9).round() as u64
}

/// A fixed header: monotonic 1 s is 2023-11-14 22:13:20 UTC.
pub fn header() -> SessionHeader {
    SessionHeader {
        format: 1,
        provetop_version: "0.1.0".into(),
        wall_anchor: 1_700_000_000_000_000_000,
        mono_anchor: 1_000_000_000,
        host: "fixture".into(),
        command: vec!["provetop-prover".into(), "--daemon".into()],
        sample_hz: 2.0,
    }
}

fn ev(s: f64, e: Event) -> Record {
    Record::new(at(s), RecordBody::Event(e))
}

fn sample(s: f64, rss_gib: f64, pinned_gib: Option<f64>, gpu_gib: Option<f64>) -> Record {
    let g = |x: f64| (x * GIB as f64) as u64 / 4096 * 4096;
    let rss = g(rss_gib);
    Record::new(
        at(s),
        RecordBody::Sample(Sample {
            rss,
            peak: Some(rss + 64 * 4096),
            anon: Some(rss - rss / 4 / 4096 * 4096),
            file: Some(rss / 4 / 4096 * 4096),
            shmem: pinned_gib.map(g),
            swap: Some(0),
            locked: Some(0),
            vm_pin: Some(0),
            pinned: pinned_gib.map(g),
            pinned_reported: None,
            gpu_used: gpu_gib.map(g),
            gpus: gpu_gib
                .map(|x| {
                    vec![GpuReading {
                        index: 0,
                        proc_used: g(x),
                        used: g(x) + GIB,
                        total: 141 * GIB,
                        util: 90,
                    }]
                })
                .unwrap_or_default(),
            mem_available: Some(1000 * GIB - rss),
            mem_total: Some(1024 * GIB),
            cgroup_current: None,
            cgroup_max: None,
            procs: 1,
        }),
    )
}

/// Proof 1's `phase` (of `partition`) starts, or with `ended` (its duration in seconds)
/// ends.
pub fn phase_event(phase: Phase, partition: Option<u32>, ended: Option<f64>) -> Event {
    match ended {
        None => Event::PhaseStarted {
            proof_id: 1,
            phase,
            partition,
        },
        Some(duration_s) => Event::PhaseEnded {
            proof_id: 1,
            phase,
            partition,
            duration_s,
        },
    }
}

/// Proof 1's `phase` (of `partition`) starts at `s` seconds.
pub fn phase_started(s: f64, phase: Phase, partition: Option<u32>) -> Record {
    ev(s, phase_event(phase, partition, None))
}

/// Proof 1's `phase` (of `partition`) ends at `s` seconds, after `d` seconds.
pub fn phase_ended(s: f64, phase: Phase, partition: Option<u32>, d: f64) -> Record {
    ev(s, phase_event(phase, partition, Some(d)))
}

/// The `hello` of a CUDA prover (pid 4242, version 0.1.0, protocol 1.0) on one H200 with
/// `gpu_bytes` of memory, configured for a PoRep-shaped circuit in single mode.
pub fn h200_hello(gpu_bytes: u64, partitions: u32, constraints: u64, threads: u32) -> Event {
    Event::Hello {
        protocol: "1.0".into(),
        prover_version: "0.1.0".into(),
        pid: 4242,
        backend: Backend::Cuda,
        gpus: vec![GpuInfo {
            index: 0,
            name: "NVIDIA H200".into(),
            compute_capability: Some("9.0".into()),
            memory_bytes: Some(gpu_bytes),
            uuid: None,
        }],
        config: ProverConfig {
            partitions,
            constraints,
            circuit: "porep-shaped".into(),
            mode: BatchMode::Single,
            threads: Some(threads),
        },
    }
}

/// The demo's warning on rss above 180 GiB, firing or cleared at `s` with the value in GiB.
fn rss_alert(s: f64, state: AlertState, value_gib: f64, message: &str) -> Record {
    Record::new(
        at(s),
        RecordBody::Alert(Alert {
            rule: "rss > 180GiB for 0s".into(),
            level: AlertLevel::Warn,
            state,
            metric: "rss".into(),
            value: value_gib * GIB as f64,
            threshold: 180.0 * GIB as f64,
            message: message.into(),
        }),
    )
}

/// One PoRep-shaped proof at GiB scale, sampled at 2 Hz for 30 s: SRS load to a 45 GiB
/// floor, two partitions synthesized in parallel up to a 190 GiB peak, GPU proving, back to
/// idle; an alert fires and clears during the peak.
pub fn demo_records() -> Vec<Record> {
    let mut v = vec![
        Record::new(
            at(0.0),
            RecordBody::Mark(Mark::ChildStarted {
                pid: 4242,
                command: vec!["provetop-prover".into(), "--daemon".into()],
            }),
        ),
        ev(0.1, h200_hello(141 * GIB, 2, 1_000_000, 2)),
        ev(
            0.2,
            Event::SrsLoading {
                source: SrsSource::Disk,
                bytes: Some(45 * GIB),
            },
        ),
    ];
    // (time, rss GiB) of the memory wave; pinned = SRS 40 GiB once loaded; GPU while proving.
    let wave: [f64; 60] = [
        1.0, 8.0, 20.0, 35.0, 45.0, 45.2, 45.1, 45.3, 60.0, 90.0, // 0.0 .. 4.5 s
        110.0, 140.0, 170.0, 185.0, 190.5, 188.0, 176.0, 150.0, 120.0, 95.0, // 5.0 .. 9.5
        80.0, 72.0, 70.5, 66.0, 64.0, 62.0, 58.0, 52.0, 47.0, 45.5, // 10.0 .. 14.5
        45.4, 45.3, 45.2, 45.2, 45.1, 45.1, 45.0, 45.0, 45.0, 45.0, // 15.0 .. 19.5
        45.0, 45.0, 45.0, 45.0, 45.0, 45.0, 45.0, 45.0, 45.0, 45.0, // 20.0 .. 24.5
        45.0, 45.0, 45.0, 45.0, 45.0, 45.0, 45.0, 45.0, 45.0, 45.0, // 25.0 .. 29.5
    ];
    let mut events = vec![
        ev(
            2.05,
            Event::SrsReady {
                bytes: 45 * GIB,
                pinned_bytes: 40 * GIB,
                source: SrsSource::Disk,
                duration_s: 1.85,
            },
        ),
        ev(
            2.06,
            Event::MemoryReport {
                pinned_bytes: 40 * GIB,
                gpu_bytes: 0,
                srs_bytes: 45 * GIB,
                gpu_live_bytes: None,
                gpu_reserved_bytes: None,
            },
        ),
        ev(
            3.9,
            Event::State {
                state: ProverState::Proving,
            },
        ),
        ev(3.95, proof_started_of(1, BatchMode::Single, 2, 2_000_000)),
        phase_started(4.0, Phase::Synthesis, Some(0)),
        phase_started(4.01, Phase::Synthesis, Some(1)),
        rss_alert(6.7, AlertState::Firing, 185.0, "rss 185.0 GiB > 180.0 GiB"),
        rss_alert(8.1, AlertState::Cleared, 176.0, "rss 176.0 GiB ≤ 180.0 GiB"),
        phase_ended(8.9, Phase::Synthesis, Some(1), 4.89),
        phase_ended(9.2, Phase::Synthesis, Some(0), 5.2),
        phase_started(9.25, Phase::Prove, None),
        phase_started(9.3, Phase::FftH, None),
        phase_ended(10.8, Phase::FftH, None, 1.5),
        phase_started(10.85, Phase::MsmH, None),
        phase_ended(12.2, Phase::MsmH, None, 1.35),
        phase_started(12.25, Phase::MsmL, None),
        phase_ended(13.6, Phase::MsmL, None, 1.35),
        phase_ended(13.7, Phase::Prove, None, 4.45),
        ev(
            13.8,
            Event::ProofFinished {
                proof_id: 1,
                ok: true,
                verified: true,
                duration_s: 9.85,
                mode: BatchMode::Single,
                phases: vec![PhaseTime {
                    phase: Phase::Synthesis,
                    duration_s: 10.09,
                }],
                error: None,
                cancelled: false,
                requeued_as: vec![],
            },
        ),
        ev(
            13.85,
            Event::State {
                state: ProverState::Idle,
            },
        ),
        Record::new(
            at(20.0),
            RecordBody::Control(Control::SetMode {
                mode: BatchMode::Sps,
            }),
        ),
        ev(
            20.1,
            Event::ModeChanged {
                from: BatchMode::Single,
                to: BatchMode::Sps,
            },
        ),
        ev(
            29.6,
            Event::Bye {
                reason: "shutdown".into(),
                proofs_done: 1,
            },
        ),
    ];
    for (i, gb) in wave.iter().enumerate() {
        let s = i as f64 * 0.5;
        let pinned = (s >= 2.0).then_some(40.0);
        let gpu = (9.25..13.7).contains(&s).then_some(30.0);
        v.push(sample(s + 0.001, *gb, pinned, gpu));
    }
    v.append(&mut events);
    v.push(Record::new(
        at(29.9),
        RecordBody::Mark(Mark::ChildExited {
            pid: 4242,
            code: Some(0),
            signal: None,
            oom_kill: false,
            reason: "exited 0".into(),
        }),
    ));
    // File order is arrival order: by time, events and samples interleaved.
    v.sort_by_key(|r| r.t);
    v
}

/// A long live recording from `t0` (ns), endless, so `take(n)` gives `n` records: 20 Hz
/// samples with every field a Linux + NVML sampler fills (one GPU), a proof every 10 s
/// (ten partitions synthesized in parallel, then fft_h, msm_h and msm_l with a prover log
/// line each), and an alert now and then. A million records are ~13.5 hours of monitoring.
pub fn long_session(t0: u64) -> impl Iterator<Item = Record> {
    let mut proof = 0;
    (0u64..).flat_map(move |i| long_session_tick(t0, i, &mut proof))
}

/// The sample of tick `i` (50 ms each) and the records that come with it.
fn long_session_tick(t0: u64, i: u64, proof: &mut u64) -> Vec<Record> {
    let t = t0 + i * 50_000_000;
    let phase = i % 200; // 10 s cycle
    let wave = (phase as f64 / 200.0 * std::f64::consts::PI).sin();
    let rss = ((45.0 + 150.0 * wave) * GIB as f64) as u64 / 4096 * 4096;
    let mut recs = vec![Record::new(
        t,
        RecordBody::Sample(Sample {
            rss,
            peak: Some(rss + (i % 7) * 4096),
            anon: Some(rss / 4 * 3),
            file: Some(rss / 4),
            shmem: Some(40 * GIB),
            swap: Some(0),
            locked: Some(0),
            vm_pin: Some(0),
            pinned: Some(40 * GIB),
            pinned_reported: None,
            gpu_used: Some(30 * GIB),
            gpus: vec![GpuReading {
                index: 0,
                proc_used: 30 * GIB,
                used: 31 * GIB,
                total: 141 * GIB,
                util: (i % 100) as u8,
            }],
            mem_available: Some(900 * GIB - rss),
            mem_total: Some(1024 * GIB),
            cgroup_current: Some(rss + GIB),
            cgroup_max: None,
            procs: 3,
        }),
    )];
    let proof_id = *proof;
    let ev = |e: Event| Record::new(t + 1, RecordBody::Event(e));
    match phase {
        5 => {
            *proof += 1;
            recs.push(ev(Event::ProofStarted {
                proof_id: *proof,
                mode: BatchMode::Single,
                sectors: 1,
                partitions: 10,
                constraints: 1_300_000_000,
            }));
            for p in 0..10 {
                recs.push(ev(Event::PhaseStarted {
                    proof_id: *proof,
                    phase: Phase::Synthesis,
                    partition: Some(p),
                }));
            }
        }
        100..=109 => recs.push(ev(Event::PhaseEnded {
            proof_id,
            phase: Phase::Synthesis,
            partition: Some((phase - 100) as u32),
            duration_s: 4.75,
        })),
        110 | 140 | 170 => {
            let steps = [Phase::FftH, Phase::MsmH, Phase::MsmL];
            let k = (phase as usize - 110) / 30;
            if k > 0 {
                recs.push(ev(Event::PhaseEnded {
                    proof_id,
                    phase: steps[k - 1].clone(),
                    partition: None,
                    duration_s: 1.5,
                }));
            }
            recs.push(ev(Event::PhaseStarted {
                proof_id,
                phase: steps[k].clone(),
                partition: None,
            }));
            recs.push(ev(Event::Log {
                level: "debug".into(),
                target: "bellperson::groth16::prover".into(),
                message: "multiexp h".into(),
            }));
        }
        195 => {
            recs.push(ev(Event::PhaseEnded {
                proof_id,
                phase: Phase::MsmL,
                partition: None,
                duration_s: 1.25,
            }));
            recs.push(ev(Event::ProofFinished {
                proof_id,
                ok: true,
                verified: true,
                duration_s: 9.5,
                mode: BatchMode::Single,
                phases: vec![],
                error: None,
                cancelled: false,
                requeued_as: vec![],
            }));
        }
        60 if proof_id % 5 == 0 => recs.push(Record::new(
            t + 2,
            RecordBody::Alert(Alert {
                rule: "rss > 180GiB for 5s".into(),
                level: AlertLevel::Warn,
                state: AlertState::Firing,
                metric: "rss".into(),
                value: rss as f64,
                threshold: (180 * GIB) as f64,
                message: "rss above 180 GiB".into(),
            }),
        )),
        _ => {}
    }
    recs
}

/// Write records (a slice, a `Vec` or a stream) to a session file with the fixed header.
pub fn write_session<R: Borrow<Record>>(path: &Path, recs: impl IntoIterator<Item = R>) {
    let mut w = SessionWriter::create(path, &header()).expect("create session");
    for r in recs {
        w.append(r.borrow()).expect("append");
    }
    w.sync().expect("sync");
}

/// The demo session written under `dir`.
pub fn demo_session(dir: &Path) -> PathBuf {
    let p = dir.join("demo.ptop");
    write_session(&p, demo_records());
    p
}

/// The repository root (this crate is `tests/kit/` in it).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The seed's reconstructed baseline CSV shipped in assets/.
pub fn seed_csv() -> PathBuf {
    repo().join("assets/seed-baseline.csv")
}

/// A golden file's path.
pub fn golden(name: &str) -> PathBuf {
    repo().join("tests/golden").join(name)
}

/// Compare `actual` with a golden file; `UPDATE_GOLDEN=1` rewrites it instead.
pub fn check_golden(name: &str, actual: &str) {
    let p = golden(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&p, actual).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1 to create)", p.display()));
    if want != actual {
        let diff: Vec<String> = want
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(5)
            .map(|(i, (a, b))| format!("line {}:\n  want {a:?}\n  got  {b:?}", i + 1))
            .collect();
        panic!(
            "{} differs ({} vs {} lines):\n{}\n--- actual ---\n{actual}",
            p.display(),
            want.lines().count(),
            actual.lines().count(),
            diff.join("\n")
        );
    }
}

/// The seed's awk script, verbatim from the seed document.
pub const SEED_AWK: &str = r#"NR==1{next} {
  gb = $2/1048576
  if(gb < 10) phase="idle_pre"
  else if(gb > 180) phase="peak_synth"
  else if(gb > 100) phase="synth"
  else if(gb > 50) phase="gpu_or_transition"
  else phase="idle_post"
  
  if(phase != last_phase && last_phase != "") {
    printf "%s: samples=%d, min=%.1f GiB, max=%.1f GiB\n", last_phase, count, pmin, pmax
    count=0; pmin=999; pmax=0
  }
  last_phase=phase
  count++
  if(gb < pmin) pmin=gb
  if(gb > pmax) pmax=gb
} END {
  printf "%s: samples=%d, min=%.1f GiB, max=%.1f GiB\n", last_phase, count, pmin, pmax
}"#;

/// The seed's awk script run by the system's awk on a file.
pub fn seed_awk(path: &Path) -> String {
    let o = std::process::Command::new("awk")
        .args(["-F,", SEED_AWK])
        .arg(path)
        .output()
        .expect("awk must be installed (the seed script is run by it)");
    assert!(
        o.status.success(),
        "awk failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

/// A proof of one sector, 10 × 2^20, started (the forecast and alert engine tests).
pub fn proof_started(id: u64, mode: BatchMode) -> Event {
    proof_started_of(id, mode, 10, 1 << 20)
}

/// A proof of one sector, `partitions` × `constraints`, started.
pub fn proof_started_of(id: u64, mode: BatchMode, partitions: u32, constraints: u64) -> Event {
    Event::ProofStarted {
        proof_id: id,
        mode,
        sectors: 1,
        partitions,
        constraints,
    }
}

/// A single-mode proof finished after 1 s, verified when `ok`.
pub fn proof_finished(id: u64, ok: bool) -> Event {
    Event::ProofFinished {
        proof_id: id,
        ok,
        verified: ok,
        duration_s: 1.0,
        mode: BatchMode::Single,
        phases: vec![],
        error: None,
        cancelled: false,
        requeued_as: vec![],
    }
}

/// The child `pid` exited with status 0, neither signalled nor OOM-killed (the alert engine
/// and metrics tests: the usage readings go with it).
pub fn child_exited_ok(pid: u32) -> Mark {
    Mark::ChildExited {
        pid,
        code: Some(0),
        signal: None,
        oom_kill: false,
        reason: "exited 0".into(),
    }
}
