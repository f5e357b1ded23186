//! The line grammars' throughput: lines a second through `loglines::Engine::line` (escape
//! stripping, envelope, every grammar, the tracker), on
//!
//! * `plain`: lines no grammar reads (`seq`-like output, the bulk of a flood);
//! * `fil_logger`: the real rust-fil-proofs 2 KiB seal capture (fil_logger, local time),
//!   its 126 lines over and over, a sealing's phases and bellperson's among them;
//! * `env_logger_ansi`: bellperson's lines of a GPU build in env_logger's colours;
//! * `golog_json`: GOLOG JSON lines (each one parsed as JSON).
//!
//! And the whole output path: a real child writing 10^6 lines as fast as a pipe takes
//! them, through the real supervisor (pipes, line splitting, grammars, the rate limit, the
//! channel) until its end is seen: lines a second that provetop keeps up with.
//!
//! `cargo bench -p provetop-collect --bench loglines`; numbers in docs/logs.md.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use provetop_collect::loglines::Engine;
use provetop_collect::supervisor::{self, ChildSpec};
use tokio::sync::mpsc;

fn golden(name: &str) -> Vec<String> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/golden/loglines")
        .join(name);
    String::from_utf8_lossy(&std::fs::read(&p).expect("golden file"))
        .lines()
        .map(str::to_string)
        .collect()
}

fn lines(c: &mut Criterion) {
    let sets: Vec<(&str, Vec<String>)> = vec![
        (
            "plain",
            (0..1000)
                .map(|i| format!("{i} lines of nothing in particular"))
                .collect(),
        ),
        ("fil_logger", golden("fil-seal-2kib-19.1.0-debug.log")),
        ("env_logger_ansi", golden("bellperson-cuda-env_logger.log")),
        ("golog_json", golden("golog-json.log")),
    ];
    let mut g = c.benchmark_group("loglines");
    for (name, set) in &sets {
        g.throughput(Throughput::Elements(set.len() as u64));
        g.bench_function(*name, |b| {
            let mut e = Engine::new(Vec::new());
            let mut out = Vec::new();
            let mut t = 1u64 << 40;
            b.iter(|| {
                for l in set {
                    t += 1_000;
                    e.line(l, t, &mut out);
                }
                out.clear();
            })
        });
    }
    g.finish();
}

/// A real child's 10^6 lines through the supervisor; returns the seconds until its output
/// was read to the end (its exit seen).
fn flood(n: u64) -> f64 {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, mut rx) = mpsc::channel(supervisor::RECORD_CHANNEL);
        let t0 = Instant::now();
        let spec = ChildSpec {
            argv: vec!["seq".into(), "1".into(), n.to_string()],
            ..ChildSpec::default()
        };
        let mut sup = supervisor::spawn(spec, tx).await.unwrap();
        let drain = tokio::spawn(async move {
            let mut got = 0u64;
            while let Some(_r) = rx.recv().await {
                got += 1;
            }
            got
        });
        let _ = sup.wait().await;
        let secs = t0.elapsed().as_secs_f64();
        drop(sup);
        let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
        secs
    })
}

fn output_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("output_path");
    g.sample_size(10);
    const N: u64 = 1_000_000;
    g.throughput(Throughput::Elements(N));
    g.bench_function("seq_1e6_lines", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| Duration::from_secs_f64(flood(N))).sum())
    });
    g.finish();
}

criterion_group!(benches, lines, output_path);
criterion_main!(benches);
