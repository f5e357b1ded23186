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
//! And the user's rules (`rules`): lines a second through 0, 100 and [`MAX_RULES`] rules
//! that match none of them (each line's envelope read, then the rules), tried through their
//! `RegexSet` (as the engine does: `set_N`) and, for comparison, one rule after another (as
//! it did before: `each_N`); and the time to compile that many rules and their set (a
//! session's start).
//!
//! `cargo bench -p provetop-collect --bench loglines`; numbers in docs/logs.md.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use provetop_collect::loglines::{envelope, Action, Engine, Rule, Rules, MAX_RULES};
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

/// `n` rules of a prover's own (`myprover-stepN <phase> begins`), none of which the
/// benchmark's lines match.
fn user_rules(n: usize) -> Vec<Rule> {
    (0..n)
        .map(|i| {
            let re = format!(r"^myprover-step{i} (?P<phase>\w+) begins( in (?P<duration>\S+))?$");
            Rule::new(&format!("r{i}"), &re, Action::Start, None).expect("a rule")
        })
        .collect()
}

fn rules(c: &mut Criterion) {
    let set = golden("fil-seal-2kib-19.1.0-debug.log");
    let mut g = c.benchmark_group("rules");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(set.len() as u64));
    for n in [0, 100, MAX_RULES] {
        let rs = user_rules(n);
        g.bench_function(format!("set_{n}"), |b| {
            let mut rules = Rules::new(rs.clone());
            let mut hits = Vec::new();
            b.iter(|| {
                for l in &set {
                    let env = envelope::read(l);
                    rules.read(&env, l, &mut hits);
                    hits.clear();
                }
            })
        });
        // Each rule in turn against each line (the matching before the set).
        g.bench_function(format!("each_{n}"), |b| {
            let mut hits = Vec::new();
            b.iter(|| {
                for l in &set {
                    let env = envelope::read(l);
                    for r in &rs {
                        if r.read(&env, l, &mut hits) {
                            break;
                        }
                    }
                    hits.clear();
                }
            })
        });
    }
    g.throughput(Throughput::Elements(MAX_RULES as u64));
    g.bench_function(format!("compile_{MAX_RULES}"), |b| {
        b.iter(|| Rules::new(user_rules(MAX_RULES)))
    });
    g.finish();
}

criterion_group!(benches, lines, output_path, rules);
criterion_main!(benches);
