//! A session with 10^5 partitions open at once (export once grew faster than linearly with
//! them: docs/measurements.md#history): `cargo bench -p provetop --bench
//! partitions`. Goal: linear, each of replay-open (`Store::open`), `export` and `classify`
//! ≤ 2 s on the 2-core VM.
//!
//! The session: one proof whose synthesis opens 10^5 partitions one after another, 1,000
//! samples at 20 Hz while they are all open, then every partition ends and the proof finishes.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use provetop::store::Store;
use provetop_shared::classify::Thresholds;
use provetop_shared::{BatchMode, Event, Phase, Record, RecordBody, Sample};
use provetop_testkit::fixtures::{
    at, h200_hello, phase_ended, phase_started, proof_started_of, write_session,
};

const PARTITIONS: u32 = 100_000;
const SAMPLES: u32 = 1_000;

fn records() -> Vec<Record> {
    let ev = |s: f64, e: Event| Record::new(at(s), RecordBody::Event(e));
    let mut v = vec![
        ev(0.0, h200_hello(0, PARTITIONS, 1024, 16)),
        ev(
            0.0,
            proof_started_of(1, BatchMode::Single, PARTITIONS, 1024),
        ),
    ];
    for p in 0..PARTITIONS {
        v.push(phase_started(
            0.001 + p as f64 * 1e-5,
            Phase::Synthesis,
            Some(p),
        ));
    }
    for i in 0..SAMPLES {
        let rss = (1u64 << 30) + i as u64 * (1 << 20);
        v.push(Record::new(
            at(2.0 + i as f64 * 0.05),
            RecordBody::Sample(Sample {
                rss,
                peak: Some(rss),
                mem_available: Some(100 << 30),
                ..Sample::default()
            }),
        ));
    }
    for p in 0..PARTITIONS {
        v.push(phase_ended(
            60.0 + p as f64 * 1e-5,
            Phase::Synthesis,
            Some(p),
            60.0,
        ));
    }
    v.push(ev(
        62.0,
        Event::ProofFinished {
            proof_id: 1,
            ok: true,
            verified: true,
            duration_s: 62.0,
            mode: BatchMode::Single,
            phases: vec![],
            error: None,
            cancelled: false,
            requeued_as: vec![],
        },
    ));
    v
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("partitions.ptop");
    write_session(&path, records());
    let mut g = c.benchmark_group("open_partitions_1e5");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("replay open (Store::open)", |b| {
        b.iter(|| black_box(Store::open(&path).expect("open").spans().len()))
    });
    g.bench_function("export --format csv", |b| {
        b.iter(|| {
            let store = Store::scan(&path, Thresholds::default()).expect("scan");
            let mut out = Vec::with_capacity(1 << 20);
            provetop::export::write_csv(&store, &mut out).expect("csv");
            black_box(out.len())
        })
    });
    g.bench_function("classify", |b| {
        b.iter(|| {
            let store = Store::scan(&path, Thresholds::default()).expect("scan");
            black_box(provetop::classify::render(&store, Thresholds::default()).expect("render"))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
