//! The flight recorder's compact sessions: `cargo bench -p provetop --bench flight`.
//!
//! Goals (issue 33): ≤ 16 bytes a 20 Hz sample on disk; open to the first chunk in ≤ 1 s
//! with ≤ 200 MiB, seek in ≤ 50 ms, flat in the session's length; zoomed-out envelopes from
//! the chunk summaries equal to the true extremes. Sessions of 1 hour and 1 day are written
//! by the testkit's `flight` generator (proofs, phases, alerts, output lines, usage at 2 Hz);
//! `PROVETOP_BENCH_30D=1` adds 30 days (about 0.6 GB of disk while it runs, removed after).
//! Under `cargo test` (no `--bench`) it runs once on a minute-long session.
//!
//! Each length also runs the streaming readers (`classify`, `export`, `compare` with an hour
//! beside it), the release binary to its end, and reports each one's own peak RSS and CPU
//! time (goal: ≤ 64 MiB whatever the length); and `classify --table-only` runs beside the
//! seed's awk on the same seed-style CSV of a million rows (goal: no more CPU than awk).
//!
//! And `replay` of each length as its driver reads it (chunk by chunk): open to the first
//! frame, the background pass, peak RSS, seeks. `PROVETOP_BENCH_ONLY=replay` runs that
//! alone; `PROVETOP_BENCH_REPLAY=FILE` replays a session kept before
//! (`PROVETOP_BENCH_KEEP=DIR`) instead of writing one.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use provetop_shared::session::compact::index::Index;
use provetop_shared::session::{load, SessionHeader, SessionWriter};
use provetop_shared::RecordBody;
use provetop_testkit::flight::{Flight, FlightConfig};
use provetop_testkit::procs::cost_of;

/// The system allocator, counting the bytes live (what the heap holds, apart from what the
/// allocator keeps of freed memory).
struct Counting;

static LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator with the caller's arguments; the counter
// only adds and subtracts the sizes it was given.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller's layout, as GlobalAlloc requires.
        unsafe { std::alloc::System.alloc(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        LIVE.fetch_sub(l.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `p` came from `alloc` with `l`.
        unsafe { std::alloc::System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Heap bytes live, MiB.
fn live_mib() -> f64 {
    LIVE.load(std::sync::atomic::Ordering::Relaxed) as f64 / (1 << 20) as f64
}

fn cpu() -> Duration {
    use nix::time::{clock_gettime, ClockId};
    let t = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).expect("process CPU clock");
    Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32)
}

/// This thread's CPU time (a seek's own work, apart from waiting for the disk or a core).
fn thread_cpu() -> Duration {
    use nix::time::{clock_gettime, ClockId};
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
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

/// The streaming readers on a session: each one's own peak RSS and CPU time (the release
/// binary, run to its end), against the 64 MiB bound; `other` is compare's second file.
fn readers(name: &str, path: &Path, other: &Path) {
    let p = path.to_str().expect("utf-8");
    let o = other.to_str().expect("utf-8");
    for args in [
        vec!["classify", p],
        vec!["classify", "--table-only", p],
        vec!["export", "--format", "csv", p],
        vec!["export", "--format", "jsonl", p],
        vec!["compare", p, o],
    ] {
        let null = std::fs::File::create("/dev/null").expect("/dev/null");
        let c = cost_of(&provetop_testkit::bins::provetop(), &args, null);
        assert_eq!(c.code, Some(0), "provetop {args:?}");
        eprintln!(
            "{name} readers: provetop {}: peak RSS {:.1} MiB, {:.2} s CPU",
            args[..args.len() - 1].join(" ").replace(p, "A"),
            c.peak_kib as f64 / 1024.0,
            c.cpu_s
        );
        assert!(c.peak_kib < 64 << 10, "over 64 MiB");
    }
}

/// Peak RSS since the last [`reset_peak`], KiB.
fn peak_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Start measuring the peak RSS again from the current RSS.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// `provetop replay` of a compact session, as its driver does it: open to the first frame
/// drawn, the background pass to its end (its wall and CPU time), the peak RSS over both
/// (goal: ≤ 1 s, ≤ 200 MiB, flat in the length), then seeks all over the session (goal:
/// ≤ 50 ms), each redrawing its series from the chunks' summaries.
fn replay_path(name: &str, p: &Path) {
    use provetop::event_loop::Driver as _;
    let draw = |app: &mut provetop::app::App| {
        let mut term =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 48)).expect("term");
        term.draw(|f| {
            provetop::ui::draw(f, app);
        })
        .expect("draw");
    };
    reset_peak();
    let base = rss_kib();
    let live0 = live_mib();
    let (c0, t0) = (cpu(), Instant::now());
    let tl = provetop::timeline::Timeline::open(p, Default::default()).expect("open");
    let mut d = provetop::replay::ReplayDriver::chunked(tl);
    let mut app = d.app(1.0, provetop::theme::Theme::mono());
    d.poll(&mut app);
    draw(&mut app);
    let first = t0.elapsed();
    let first_cpu = cpu() - c0;
    let first_kib = rss_kib().saturating_sub(base);
    let tl = d.timeline().expect("chunked");
    while tl.indexed().late.is_none() {
        std::thread::sleep(Duration::from_millis(2));
    }
    // Playing waits for the first stage (the records that placing moves back).
    let plays = t0.elapsed();
    tl.wait_indexed();
    let (indexing, indexing_cpu) = (t0.elapsed(), cpu() - c0);
    let indexed_kib = rss_kib().saturating_sub(base);
    let live = live_mib() - live0;
    let (snaps, every, records, snap_mib) = {
        let ix = tl.indexed();
        let mib = ix.snap_bytes as f64 / (1 << 20) as f64;
        (ix.snaps.len(), ix.every, ix.records, mib)
    };
    let parts = tl.parts().len();
    let n = 20u64;
    let (mean, worst, worst_cpu, frame) = seeks(&mut d, &mut app, n, &draw);
    // The widest window: the phase spans of a day taken back at each seek.
    app.view.zoom = provetop::app::View::zoom_for(f64::MAX);
    let (day_mean, day_worst, _, _) = seeks(&mut d, &mut app, n / 2, &draw);
    eprintln!(
        "{name} replay: first frame {first:.2?} wall ({first_cpu:.2?} CPU), RSS +{:.1} MiB then; plays from {plays:.2?}; indexing {records} records in {parts} chunks {indexing:.2?} wall, {indexing_cpu:.2?} CPU; peak RSS +{:.1} MiB over the {:.1} MiB before, +{:.1} MiB once indexed (heap +{live:.1} MiB live; {snaps} light snapshots, one every {every} chunks, {snap_mib:.1} MiB estimated); seek and draw {mean:.2?} mean, {worst:.2?} worst wall ({worst_cpu:.2?} own CPU at most), longest frame meanwhile {frame:.2?}; at the widest window {day_mean:.2?} mean, {day_worst:.2?} worst",
        first_kib as f64 / 1024.0,
        peak_kib().saturating_sub(base) as f64 / 1024.0,
        base as f64 / 1024.0,
        indexed_kib as f64 / 1024.0,
    );
    assert!(first < Duration::from_secs(1), "first frame over 1 s");
}

/// `n` seeks spread over the session, each drawn (a long one goes on a few chunks a frame):
/// mean and worst wall time, the worst own CPU, and the longest frame meanwhile (how long
/// the screen does not answer).
fn seeks(
    d: &mut provetop::replay::ReplayDriver,
    app: &mut provetop::app::App,
    n: u64,
    draw: &dyn Fn(&mut provetop::app::App),
) -> (Duration, Duration, Duration, Duration) {
    use provetop::event_loop::Driver as _;
    let (s, e) = (d.start(), d.end());
    let (mut sum, mut worst, mut worst_cpu, mut frame) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    let mut k = 0u64;
    for _ in 0..n {
        k = (k + 7919) % 1000;
        let (t, c) = (Instant::now(), thread_cpu());
        d.seek(app, s + (e - s) / 1000 * k);
        draw(app);
        frame = frame.max(t.elapsed());
        while d.seeking().is_some() {
            let f = Instant::now();
            d.poll(app);
            draw(app);
            frame = frame.max(f.elapsed());
        }
        let (w, cp) = (t.elapsed(), thread_cpu() - c);
        sum += w;
        worst = worst.max(w);
        worst_cpu = worst_cpu.max(cp);
    }
    (sum / n.max(1) as u32, worst, worst_cpu, frame)
}

/// `classify --table-only` against the seed's awk script on the same seed-style CSV of
/// `rows` one-second rows (a walk through every threshold phase), side by side.
fn seed_csv_against_awk(dir: &Path, rows: u64) {
    use std::io::Write as _;
    let csv = dir.join("seed-style.csv");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&csv).expect("csv"));
    writeln!(w, "timestamp,rss_kb").expect("write");
    let (mut x, mut kb) = (0x2545_f491_4f6c_dd1du64, 8u64 << 20);
    for i in 0..rows {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // A proof's climb and fall over ~10 minutes, with noise of a few hundred MiB.
        let target = [8u64, 30, 75, 140, 190, 120, 60, 20][(i / 75 % 8) as usize] << 20;
        kb = (kb * 7 + target) / 8 + x % (256 << 10);
        writeln!(w, "{},{kb}", 1_700_000_000 + i).expect("write");
    }
    w.flush().expect("flush");
    drop(w);
    let out = dir.join("awk.out");
    let awk = cost_of(
        Path::new("/usr/bin/awk"),
        &[
            "-F,",
            provetop_testkit::fixtures::SEED_AWK,
            csv.to_str().expect("utf-8"),
        ],
        std::fs::File::create(&out).expect("out"),
    );
    let theirs = std::fs::read_to_string(&out).expect("awk output");
    let ours_out = dir.join("provetop.out");
    let ours = cost_of(
        &provetop_testkit::bins::provetop(),
        &["classify", "--table-only", csv.to_str().expect("utf-8")],
        std::fs::File::create(&ours_out).expect("out"),
    );
    let mine = std::fs::read_to_string(&ours_out).expect("provetop output");
    // The same table but for the first run's minimum (the seed's started at 0).
    assert_eq!(
        mine.lines().skip(1).collect::<Vec<_>>(),
        theirs.lines().skip(1).collect::<Vec<_>>()
    );
    eprintln!(
        "seed-style CSV of {rows} rows, {} table lines: awk {:.3} s CPU, {:.1} MiB; provetop classify --table-only {:.3} s CPU, {:.1} MiB; ratio {:.2}",
        mine.lines().count(),
        awk.cpu_s,
        awk.peak_kib as f64 / 1024.0,
        ours.cpu_s,
        ours.peak_kib as f64 / 1024.0,
        ours.cpu_s / awk.cpu_s.max(1e-3)
    );
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
    if let Some(p) = std::env::var_os("PROVETOP_BENCH_REPLAY").filter(|_| full) {
        let p = std::path::PathBuf::from(p);
        let name = p.file_stem().map_or("kept".into(), |s| s.to_string_lossy());
        replay_path(&name, &p);
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // `PROVETOP_BENCH_ONLY=replay`: the replay path alone (writing and replaying each length).
    let only_replay = std::env::var("PROVETOP_BENCH_ONLY").as_deref() == Ok("replay");
    if only_replay {
        // `PROVETOP_BENCH_KEEP=DIR`: the sessions are written there and kept (to replay with
        // the binary, whose own RSS is then the process's alone).
        let keep = std::env::var_os("PROVETOP_BENCH_KEEP").map(std::path::PathBuf::from);
        for (name, secs) in lengths {
            let p = keep
                .as_deref()
                .unwrap_or(dir.path())
                .join(format!("{name}.ptop"));
            let w = write(&p, secs, true);
            eprintln!("{name} compact: {} samples", w.samples);
            replay_path(name, &p);
            if keep.is_none() {
                std::fs::remove_file(&p).expect("remove");
            }
        }
        return;
    }
    seed_csv_against_awk(dir.path(), if full { 1_000_000 } else { 10_000 });
    // compare's second file in the readers' runs: an hour, compact.
    let hour = dir.path().join("hour.ptop");
    write(&hour, 3600.min(lengths[0].1), true);
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
            ix.chunks.get(0).expect("a chunk").1.t_min,
            ix.chunks.last().expect("read").expect("a chunk").1.t_max,
        );
        let env = ix.envelope(s, e).expect("envelope");
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
        let (mut worst, mut worst_cpu, mut biggest) = (Duration::ZERO, Duration::ZERO, 0);
        g.bench_function("seek (decode the chunk at a time)", |b| {
            b.iter(|| {
                k = (k + 7919) % 1000;
                let (t, c) = (Instant::now(), thread_cpu());
                let i = ix.seek(s + (e - s) / 1000 * k).expect("seek");
                let n = ix.chunk(i).expect("chunk").0.len();
                worst = worst.max(t.elapsed());
                worst_cpu = worst_cpu.max(thread_cpu() - c);
                biggest = biggest.max(n);
                black_box(n)
            })
        });
        g.bench_function("envelope of the whole session", |b| {
            b.iter(|| black_box(ix.envelope(s, e).expect("envelope").rss_max))
        });
        g.finish();
        eprintln!(
            "{name} compact: worst seek {worst:.2?} wall, {worst_cpu:.2?} CPU (largest chunk {biggest} records)"
        );
        replay_path(name, &p);
        readers(name, &p, &hour);
        drop(ix);
        std::fs::remove_file(&p).expect("remove");
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
