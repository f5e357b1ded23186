//! `provetop compare` of two large sessions: `cargo bench -p provetop --bench compare`.
//!
//! Goal (issue 21): two 1 M-record sessions (each ~13.5 h of 20 Hz monitoring with a proof
//! every 10 s, the kit's `long_session`) compared in ≤ 2 s on the 2-core VM: both files read,
//! reduced by the store, summarized and put into the table. The second session runs on
//! another clock (it starts 10^6 s later), as a recording from another machine would.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use provetop::compare::summary::Selection;
use provetop::compare::{compare, table};
use provetop_shared::classify::Thresholds;
use provetop_shared::BatchMode;
use provetop_testkit::fixtures::{at, long_session, write_session};

const RECORDS: usize = 1_000_000;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let t0 = Instant::now();
    let paths: Vec<PathBuf> = [0.0, 1e6]
        .iter()
        .enumerate()
        .map(|(i, start)| {
            let p = dir.path().join(format!("s{i}.ptop"));
            write_session(&p, long_session(at(*start)).take(RECORDS));
            p
        })
        .collect();
    let bytes: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).expect("meta").len())
        .sum();
    eprintln!(
        "sessions: 2 × {RECORDS} records, {:.1} MiB in all, written in {:.2?}",
        bytes as f64 / (1 << 20) as f64,
        t0.elapsed()
    );
    let all = vec![Selection::default(); 2];
    let single = vec![
        Selection {
            mode: Some(BatchMode::Single),
            range: Some((2, Some(500))),
        };
        2
    ];
    // Where one file's time goes, on one thread.
    let t = Instant::now();
    let store = provetop::store::Store::scan(&paths[0], Thresholds::default()).expect("scan");
    let scanned = t.elapsed();
    let t = Instant::now();
    let sum = provetop::compare::summary::summarize_store(&store, &all[0]).expect("summary");
    let summarized = t.elapsed();
    let t = Instant::now();
    drop(store);
    eprintln!(
        "one file: Store::scan {scanned:.2?}, summary {summarized:.2?} ({} figures), drop {:.2?}",
        sum.figures.len(),
        t.elapsed()
    );
    let (t, cpu) = (Instant::now(), cpu_s());
    let cmp = compare(&paths, &all, Thresholds::default()).expect("compare");
    eprintln!(
        "one compare: {:.2?} wall, {:.2} s CPU (user + system, both threads), {} rows, {} proofs in the baseline",
        t.elapsed(),
        cpu_s() - cpu,
        cmp.rows.len(),
        cmp.row("proofs")
            .and_then(|r| r.baseline.value())
            .unwrap_or(0.0)
    );

    let mut g = c.benchmark_group("compare_2x1M");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("compare + table (whole recordings)", |b| {
        b.iter(|| {
            let c = compare(&paths, &all, Thresholds::default()).expect("compare");
            black_box(table::render_text(&c).len())
        })
    });
    g.bench_function("compare + table (--mode single --proofs 2..500)", |b| {
        b.iter(|| {
            let c = compare(&paths, &single, Thresholds::default()).expect("compare");
            black_box(table::render_text(&c).len())
        })
    });
    g.finish();
}

/// CPU seconds this process has used (user + system, every thread), from /proc/self/stat:
/// what the wall time would be on one idle core, whatever else the machine runs.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command name's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // USER_HZ: 100 on every Linux architecture provetop builds for.
    let hz = 100.0;
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) / hz
}

criterion_group!(benches, bench);
criterion_main!(benches);
