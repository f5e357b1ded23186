//! Opening and seeking a large session: `cargo bench -p provetop --bench store`.
//!
//! Goals (issue 4): open a 1 M-record session in ≤ 1 s, seek in ≤ 50 ms. The file is a
//! realistic live recording: 20 Hz samples with every field a Linux + NVML sampler fills
//! (one GPU), a proof every 10 s with per-partition synthesis and GPU phases, prover log
//! lines, and an alert now and then — 1 M records is ~13.5 hours of monitoring.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use provetop::store::Store;
use provetop_shared::record::GpuReading;
use provetop_shared::session::{load, SessionHeader, SessionWriter};
use provetop_shared::{
    Alert, AlertLevel, AlertState, BatchMode, Event, Phase, Record, RecordBody, Sample,
};

const GIB: u64 = 1 << 30;
const RECORDS: usize = 1_000_000;

fn write_session(path: &Path, n: usize) {
    let header = SessionHeader {
        format: 1,
        provetop_version: "bench".into(),
        wall_anchor: 1_700_000_000_000_000_000,
        mono_anchor: 0,
        host: "bench".into(),
        command: vec!["provetop-prover".into()],
        sample_hz: 20.0,
    };
    let mut w = SessionWriter::create(path, &header).expect("create");
    let mut written = 0;
    let mut i: u64 = 0;
    let mut proof = 0;
    while written < n {
        let t = i * 50_000_000;
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
        let ev = |e: Event| Record::new(t + 1, RecordBody::Event(e));
        match phase {
            5 => {
                proof += 1;
                recs.push(ev(Event::ProofStarted {
                    proof_id: proof,
                    mode: BatchMode::Single,
                    sectors: 1,
                    partitions: 10,
                    constraints: 1_300_000_000,
                }));
                for p in 0..10 {
                    recs.push(ev(Event::PhaseStarted {
                        proof_id: proof,
                        phase: Phase::Synthesis,
                        partition: Some(p),
                    }));
                }
            }
            100..=109 => recs.push(ev(Event::PhaseEnded {
                proof_id: proof,
                phase: Phase::Synthesis,
                partition: Some((phase - 100) as u32),
                duration_s: 4.75,
            })),
            110 | 140 | 170 => {
                let ph =
                    [Phase::FftH, Phase::MsmH, Phase::MsmL][(phase as usize - 110) / 30].clone();
                if phase > 110 {
                    let prev = [Phase::FftH, Phase::MsmH][(phase as usize - 140) / 30].clone();
                    recs.push(ev(Event::PhaseEnded {
                        proof_id: proof,
                        phase: prev,
                        partition: None,
                        duration_s: 1.5,
                    }));
                }
                recs.push(ev(Event::PhaseStarted {
                    proof_id: proof,
                    phase: ph,
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
                    proof_id: proof,
                    phase: Phase::MsmL,
                    partition: None,
                    duration_s: 1.25,
                }));
                recs.push(ev(Event::ProofFinished {
                    proof_id: proof,
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
            60 if proof % 5 == 0 => recs.push(Record::new(
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
        for r in recs {
            if written < n {
                w.append(&r).expect("append");
                written += 1;
            }
        }
        i += 1;
    }
    w.sync().expect("sync");
}

fn bench(c: &mut Criterion) {
    // PROVETOP_BENCH_SESSION=FILE keeps the generated file (written once) for other tools.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = std::env::var_os("PROVETOP_BENCH_SESSION")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("bench.ptop"));
    let t0 = Instant::now();
    if !path.exists() {
        write_session(&path, RECORDS);
    }
    let bytes = std::fs::metadata(&path).expect("meta").len();
    eprintln!(
        "session: {RECORDS} records, {:.1} MiB, written in {:.2?}",
        bytes as f64 / (1 << 20) as f64,
        t0.elapsed()
    );

    let mut g = c.benchmark_group("session_1M");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("load (read + decode)", |b| {
        b.iter(|| black_box(load(&path).expect("load").records.len()))
    });
    g.bench_function("Store::open (load + index)", |b| {
        b.iter(|| black_box(Store::open(&path).expect("open").records().len()))
    });
    g.finish();

    let store = Store::open(&path).expect("open");
    eprintln!(
        "index: {} snapshots, one every {} records",
        store.snapshots(),
        store.snapshot_every()
    );
    let (s, e) = (store.start(), store.end());
    // Worst case: one record short of a snapshot, so the most records are re-applied.
    let worst = store.reach(store.snapshot_every() * 3 - 2).expect("reach");
    assert_eq!(store.index_at(worst), store.snapshot_every() * 3 - 1);
    let mut g = c.benchmark_group("seek_1M");
    g.sample_size(30);
    g.bench_function("model_at (worst: just before a snapshot)", |b| {
        b.iter(|| black_box(store.model_at(black_box(worst)).records()))
    });
    let mut k = 0u64;
    g.bench_function("model_at (spread over the file)", |b| {
        b.iter(|| {
            k = (k + 7919) % 1000;
            black_box(store.model_at(s + (e - s) / 1000 * k).records())
        })
    });
    g.bench_function("next_phase_start + next_alert", |b| {
        b.iter(|| {
            k = (k + 7919) % 1000;
            let t = s + (e - s) / 1000 * k;
            black_box((store.next_phase_start(t), store.next_alert(t)))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
