//! The flight recorder's compact sessions: `cargo bench -p provetop --bench flight`.
//!
//! Goals (issue 33): ≤ 16 bytes a 20 Hz sample on disk; open to the first chunk in ≤ 1 s
//! with ≤ 200 MiB, seek in ≤ 50 ms, flat in the session's length; zoomed-out envelopes from
//! the chunk summaries equal to the true extremes. Sessions of 1 hour and 1 day are written
//! by the testkit's `flight` generator (proofs, phases, alerts, output lines, usage at 2 Hz);
//! `PROVETOP_BENCH_30D=1` adds 30 days (about 0.6 GB of disk while it runs, removed after).
//! Under `cargo test` (no `--bench`) it runs once on a minute-long session.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use provetop_shared::session::compact::index::Index;
use provetop_shared::session::{load, SessionHeader, SessionWriter};
use provetop_shared::RecordBody;
use provetop_testkit::flight::{Flight, FlightConfig};

fn cpu() -> Duration {
    use nix::time::{clock_gettime, ClockId};
    let t = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).expect("process CPU clock");
    Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32)
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

struct Written {
    samples: u64,
    bytes: u64,
    rss_max: u64,
    peak_max: u64,
}

/// Write a flight of `seconds` as the recorder does (a flush every second of records).
fn write(path: &std::path::Path, seconds: u64, compact: bool) -> Written {
    let h = SessionHeader::now(vec!["bench".into()], 20.0);
    let mut w = if compact {
        SessionWriter::create_compact(path, &h)
    } else {
        SessionWriter::create(path, &h)
    }
    .expect("create");
    let (mut samples, mut rss_max, mut peak_max) = (0, 0, 0);
    let cfg = FlightConfig {
        seconds,
        ..FlightConfig::default()
    };
    for (i, r) in Flight::new(cfg).enumerate() {
        if let RecordBody::Sample(s) = &r.body {
            samples += 1;
            rss_max = rss_max.max(s.rss);
            peak_max = peak_max.max(s.peak.unwrap_or(0).max(s.rss));
        }
        w.append(&r).expect("append");
        if i % 24 == 23 {
            w.flush().expect("flush");
        }
    }
    w.sync().expect("sync");
    Written {
        samples,
        bytes: std::fs::metadata(path).expect("meta").len(),
        rss_max,
        peak_max,
    }
}

fn bench(c: &mut Criterion) {
    let full = std::env::args().any(|a| a == "--bench");
    let mut lengths: Vec<(&str, u64)> = if full {
        vec![("1h", 3600), ("1d", 86_400)]
    } else {
        vec![("1min", 60)]
    };
    if full && std::env::var_os("PROVETOP_BENCH_30D").is_some() {
        lengths.push(("30d", 30 * 86_400));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // Format 1 for comparison, on the shortest length.
    let (name, secs) = lengths[0];
    let old = dir.path().join("old.ptop");
    let c0 = cpu();
    let w1 = write(&old, secs, false);
    eprintln!(
        "{name} format 1: {} samples, {:.1} bytes a sample, written in {:.2?} CPU",
        w1.samples,
        w1.bytes as f64 / w1.samples as f64,
        cpu() - c0
    );
    let t = Instant::now();
    let n = load(&old).expect("load").records.len();
    eprintln!("{name} format 1: load of {n} records {:.2?}", t.elapsed());
    std::fs::remove_file(&old).expect("remove");

    for (name, secs) in lengths {
        let p = dir.path().join(format!("{name}.ptop"));
        let c0 = cpu();
        let w = write(&p, secs, true);
        eprintln!(
            "{name} compact: {} samples, {:.1} MiB, {:.2} bytes a sample, written in {:.2?} CPU",
            w.samples,
            w.bytes as f64 / (1 << 20) as f64,
            w.bytes as f64 / w.samples as f64,
            cpu() - c0
        );
        // Open: header, chunk heads, the first chunk.
        let before = rss_kib();
        let (c0, t0) = (cpu(), Instant::now());
        let ix = Index::open(&p).expect("open");
        let first = ix.chunk(0).expect("first chunk").0;
        eprintln!(
            "{name} compact: open to the first chunk ({} records of {} chunks) {:.2?} wall, {:.2?} CPU, RSS +{} KiB",
            first.len(),
            ix.chunks.len(),
            t0.elapsed(),
            cpu() - c0,
            rss_kib().saturating_sub(before)
        );
        assert!(ix.warnings.is_empty(), "{:?}", ix.warnings);
        // The whole session's envelope from the summaries is the true one.
        let (s, e) = (
            ix.chunks.first().expect("a chunk").1.t_min,
            ix.chunks.last().expect("a chunk").1.t_max,
        );
        let env = ix.envelope(s, e);
        assert_eq!((env.rss_max, env.peak_max), (w.rss_max, w.peak_max));
        assert_eq!(u64::from(env.samples), w.samples);

        let mut g = c.benchmark_group(format!("flight_{name}"));
        g.sample_size(10);
        g.bench_function("open to the first chunk", |b| {
            b.iter(|| {
                let ix = Index::open(&p).expect("open");
                black_box(ix.chunk(0).expect("chunk").0.len())
            })
        });
        let mut k = 0u64;
        let mut worst = Duration::ZERO;
        g.bench_function("seek (decode the chunk at a time)", |b| {
            b.iter(|| {
                k = (k + 7919) % 1000;
                let t = Instant::now();
                let i = ix.seek(s + (e - s) / 1000 * k);
                let n = ix.chunk(i).expect("chunk").0.len();
                worst = worst.max(t.elapsed());
                black_box(n)
            })
        });
        g.bench_function("envelope of the whole session", |b| {
            b.iter(|| black_box(ix.envelope(s, e).rss_max))
        });
        g.finish();
        eprintln!("{name} compact: worst seek {worst:.2?}");
        drop(ix);
        std::fs::remove_file(&p).expect("remove");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
