//! Opening and seeking a large session: `cargo bench -p provetop --bench store`.
//!
//! Goals (issue 4): open a 1 M-record session in ≤ 1 s, seek in ≤ 50 ms. The file is a
//! realistic live recording: 20 Hz samples with every field a Linux + NVML sampler fills
//! (one GPU), a proof every 10 s with per-partition synthesis and GPU phases, prover log
//! lines, and an alert now and then (the kit's `long_session`) — 1 M records is ~13.5 hours
//! of monitoring.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use provetop::store::Store;
use provetop_shared::session::load;
use provetop_testkit::fixtures::{at, long_session, write_session};

const RECORDS: usize = 1_000_000;

fn bench(c: &mut Criterion) {
    // PROVETOP_BENCH_SESSION=FILE keeps the generated file (written once) for other tools.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = std::env::var_os("PROVETOP_BENCH_SESSION")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("bench.ptop"));
    let t0 = Instant::now();
    if !path.exists() {
        write_session(&path, long_session(at(0.0)).take(RECORDS));
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
