//! Sampler cost: per-sample cost of the procfs reads against a 2 GiB target, the cost of one
//! usage reading for trees of N processes and processes of T threads, and the CPU the
//! sampler's threads use at 20 Hz (usage readings at their default 2 Hz) over 10 s.
//!
//! `cargo bench -p provetop-collect --bench sampler` (prints a Markdown report).
//! `SAMPLER_BENCH_SECS` and `SAMPLER_BENCH_MIB` override the 10 s run and the 2048 MiB target,
//! `SAMPLER_BENCH_USAGE_HZ` the usage readings' rate (0: off, to see what they cost). Run by
//! `cargo test` (no `--bench` argument), it takes 1 s against a 64 MiB target, so CI builds
//! and runs it without spending its time; the numbers that count come from `cargo bench`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use provetop_collect::procfile::{clk_tck, StatFields};
use provetop_collect::procstatus::{PeakResetter, StatusReader};
use provetop_collect::sampler::usage::{TickProc, UsageReader};
use provetop_collect::sampler::{self, hoststat, read_pinned, tree, SamplerConfig};
use provetop_shared::RecordBody;
use provetop_testkit::bins::memhog;

fn env_u64(k: &str, d: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

/// (mean, p50, p99) in µs of `n` runs of `f`.
fn time(n: usize, mut f: impl FnMut()) -> (f64, f64, f64) {
    for _ in 0..n / 10 {
        f();
    }
    let mut v: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = v.iter().sum::<f64>() / n as f64;
    (mean, v[n / 2], v[n * 99 / 100])
}

/// CPU time of one of our threads: (ns from schedstat, ns from stat's utime+stime ticks).
fn thread_cpu(tid: u32) -> (u64, u64) {
    let me = std::process::id();
    let sched = std::fs::read_to_string(format!("/proc/{me}/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let stat = std::fs::read(format!("/proc/{me}/task/{tid}/stat")).unwrap_or_default();
    let ticks: u64 = StatFields::parse(&stat)
        .map(|f| f.num::<u64>(14).unwrap_or(0) + f.num::<u64>(15).unwrap_or(0))
        .unwrap_or(0);
    let ns = ticks as f64 * 1e9 / clk_tck();
    (sched, ns as u64)
}

/// A single-threaded process that only sleeps.
fn sleeper() -> std::process::Child {
    Command::new("sleep").arg("600").spawn().expect("sleep")
}

/// Mean, p50 and p99 of one usage reading (µs), for trees of 1, 4, 16 and 64 single-threaded
/// processes and for this process with 16 and 64 idle threads.
fn usage_costs() -> Vec<(String, usize, (f64, f64, f64))> {
    let mut rows = Vec::new();
    let mut host = hoststat::HostStat::open().unwrap();
    rows.push((
        "`/proc/stat` alone".to_string(),
        1,
        time(2000, || {
            host.read();
        }),
    ));
    let mut kids: Vec<std::process::Child> = Vec::new();
    for n in [1usize, 4, 16, 64] {
        while kids.len() < n {
            kids.push(sleeper());
        }
        std::thread::sleep(Duration::from_millis(100));
        let pids: Vec<u32> = kids.iter().map(|c| c.id()).collect();
        rows.push((
            format!("{n} processes, 1 thread each"),
            n,
            reading_cost(&pids),
        ));
    }
    for k in &mut kids {
        let _ = k.kill();
        let _ = k.wait();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut threads = Vec::new();
    for t in [16u32, 64] {
        while threads.len() + 1 < t as usize {
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }));
        }
        std::thread::sleep(Duration::from_millis(100));
        rows.push((
            format!("1 process of {t} threads"),
            1,
            reading_cost(&[std::process::id()]),
        ));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    rows
}

/// One usage reading of `pids` (their status read beforehand, as the tick has it).
fn reading_cost(pids: &[u32]) -> (f64, f64, f64) {
    let tick: Vec<TickProc> = pids
        .iter()
        .map(|&pid| TickProc {
            pid,
            status: provetop_collect::procstatus::read_status(pid).unwrap(),
            pinned: None,
        })
        .collect();
    let mut r = UsageReader::new();
    let mut t = 0u64;
    time(500, || {
        t += 500_000_000;
        std::hint::black_box(r.read(t, &tick, &[], Vec::new()));
    })
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let secs = env_u64("SAMPLER_BENCH_SECS", if bench { 10 } else { 1 });
    let mib = env_u64("SAMPLER_BENCH_MIB", if bench { 2048 } else { 64 });
    let mut hog = Command::new(memhog())
        .args(["--anon", &mib.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start provetop-memhog");
    let mut line = String::new();
    BufReader::new(hog.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid: u32 = line.trim().strip_prefix("ready ").unwrap().parse().unwrap();

    let mut status = StatusReader::open(pid).unwrap();
    let mut reset = PeakResetter::open(pid).unwrap();
    let rss = status.read().unwrap().rss;
    let n = 5000;
    let st = time(n, || {
        status.read().unwrap();
    });
    let st_open = time(n, || {
        provetop_collect::procstatus::read_status(pid).unwrap();
    });
    let cr = time(n, || reset.reset_peak().unwrap());
    let both = time(n, || {
        status.read().unwrap();
        reset.reset_peak().unwrap();
    });
    let mut meminfo = sampler::system::MemInfo::open().unwrap();
    let mi = time(n, || {
        meminfo.read().unwrap();
    });
    let has_children = tree::has_children_files();
    let walk = time(200, || {
        tree::descendants(pid, has_children);
    });
    let mut buf = Vec::new();
    let sm = time(10, || {
        read_pinned(pid, &mut buf).unwrap();
    });

    let usage_rows = usage_costs();

    // The real thing: the sampler thread at its default 20 Hz, drained like the app does.
    let cfg = SamplerConfig {
        usage_hz: std::env::var("SAMPLER_BENCH_USAGE_HZ")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(sampler::DEFAULT_USAGE_HZ),
        ..SamplerConfig::default()
    };
    let mut h = sampler::spawn(cfg.clone(), pid).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut recs = Vec::new();
    h.drain(&mut recs);
    recs.clear();
    let tids = h.thread_ids();
    let before: Vec<(u64, u64)> = tids.iter().map(|(_, t)| thread_cpu(*t)).collect();
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs(secs);
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
        h.drain(&mut recs);
    }
    let wall = t0.elapsed().as_secs_f64();
    let after: Vec<(u64, u64)> = tids.iter().map(|(_, t)| thread_cpu(*t)).collect();
    h.drain(&mut recs);
    let ts: Vec<u64> = recs
        .iter()
        .filter(|r| matches!(r.body, RecordBody::Sample(_)))
        .map(|r| r.t)
        .collect();
    let gaps: Vec<f64> = ts.windows(2).map(|w| (w[1] - w[0]) as f64 / 1e6).collect();
    let max_gap = gaps.iter().cloned().fold(0.0, f64::max);
    let rate = ts.len() as f64 / wall;
    let max_reset = h.max_reset_delay();
    let (usage_n, usage_mean, usage_max) = h.usage_cost();
    let late = h.late_resets();
    h.stop();
    let _ = hog.kill();
    let _ = hog.wait();

    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    println!(
        "### Sampler cost ({cores}-core machine, target RSS {:.2} GiB)\n",
        rss as f64 / (1u64 << 30) as f64
    );
    println!("Per operation, {n} runs (µs):\n");
    println!("| operation | mean | p50 | p99 |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, (m, p50, p99): (f64, f64, f64)| {
        println!("| {name} | {m:.1} | {p50:.1} | {p99:.1} |")
    };
    row("`/proc/PID/status`, kept open, re-read", st);
    row("`/proc/PID/status`, open + read + close", st_open);
    row("`clear_refs` ← 5", cr);
    row("**one sample: status + clear_refs**", both);
    row("`/proc/meminfo`, kept open, re-read", mi);
    row(
        if has_children {
            "tree walk (`task/*/children`)"
        } else {
            "tree walk (scan of /proc)"
        },
        walk,
    );
    println!(
        "\nOne usage reading (`stat`, `io`, `comm` per process kept open, `schedstat` per extra \
         thread every 2 s: one reading in four at 2 Hz, `/proc/stat`; the tick's status readings \
         reused), µs:\n"
    );
    println!("| tree | mean | p50 | p99 | per process |");
    println!("|---|---:|---:|---:|---:|");
    for (name, n, (m, p50, p99)) in &usage_rows {
        println!(
            "| {name} | {m:.1} | {p50:.1} | {p99:.1} | {:.1} |",
            m / *n as f64
        );
    }
    println!(
        "\n`/proc/PID/smaps` (pinned memory) costs {:.1} ms per pass on this target, so at a \
         {:.1} % duty it runs every {:.1} s (never more often than 1 Hz).\n",
        sm.0 / 1e3,
        cfg.smaps_duty * 100.0,
        (sm.0 / 1e6 / cfg.smaps_duty).max(1.0)
    );
    println!(
        "Sampler at {} Hz (usage readings at {} Hz) for {wall:.1} s: {} samples ({rate:.2} Hz achieved), largest gap \
         between samples {max_gap:.1} ms, longest delay from a sample to its peak reset {:.2} ms, {late} samples \
         taken while a reset was late.\n",
        cfg.hz,
        cfg.usage_hz,
        ts.len(),
        max_reset.as_secs_f64() * 1e3
    );
    println!(
        "Usage readings on the sampler thread: {usage_n}, {:.1} µs each on average, {:.1} µs \
         at most ({:.4} % of one core).\n",
        usage_mean.as_secs_f64() * 1e6,
        usage_max.as_secs_f64() * 1e6,
        usage_mean.as_secs_f64() * usage_n as f64 / wall * 100.0
    );
    println!("| thread | CPU time (schedstat) | % of one core | CPU time (stat ticks) |");
    println!("|---|---:|---:|---:|");
    let mut total = 0u64;
    let mut sampling = 0u64;
    for (i, (name, _)) in tids.iter().enumerate() {
        let d = after[i].0.saturating_sub(before[i].0);
        let dt = after[i].1.saturating_sub(before[i].1);
        total += d;
        if name == "provetop-sampler" || name == "provetop-peak" {
            sampling += d;
        }
        println!(
            "| {name} | {:.1} ms | {:.3} % | {:.0} ms |",
            d as f64 / 1e6,
            d as f64 / 1e9 / wall * 100.0,
            dt as f64 / 1e6
        );
    }
    let pct = |ns: u64| ns as f64 / 1e9 / wall * 100.0;
    println!(
        "| **all sampler threads** | {:.1} ms | **{:.3} %** | |",
        total as f64 / 1e6,
        pct(total)
    );
    println!(
        "\nSampling at 20 Hz (sampler + peak-reset threads): {:.3} % of one core, goal ≤ 1 %: {}.",
        pct(sampling),
        if pct(sampling) <= 1.0 {
            "met"
        } else {
            "NOT met"
        }
    );
    println!(
        "The smaps reader is budgeted separately by `smaps_duty` ({:.1} % of one core by \
         default) and used {:.3} % here.",
        cfg.smaps_duty * 100.0,
        pct(total - sampling)
    );
}
