//! Sampler cost: per-sample cost of the procfs reads against a 2 GiB target, and the CPU the
//! sampler's threads use at 20 Hz over 10 s.
//!
//! `cargo bench -p provetop-collect --bench sampler` (prints a Markdown report).
//! `SAMPLER_BENCH_SECS` and `SAMPLER_BENCH_MIB` override the 10 s run and the 2048 MiB target.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use provetop_collect::procstatus::{PeakResetter, StatusReader};
use provetop_collect::sampler::{self, read_pinned, tree, SamplerConfig};
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
    let stat = std::fs::read_to_string(format!("/proc/{me}/task/{tid}/stat")).unwrap_or_default();
    let ticks: u64 = stat
        .rsplit_once(')')
        .map(|(_, r)| {
            let f: Vec<&str> = r.split_whitespace().collect();
            // After the command: state is field 3, utime 14, stime 15 (1-based overall).
            f.get(11).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
                + f.get(12).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        })
        .unwrap_or(0);
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .expect("sysconf(_SC_CLK_TCK)") as u64;
    (sched, ticks * 1_000_000_000 / hz)
}

fn main() {
    let secs = env_u64("SAMPLER_BENCH_SECS", 10);
    let mib = env_u64("SAMPLER_BENCH_MIB", 2048);
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

    // The real thing: the sampler thread at its default 20 Hz, drained like the app does.
    let cfg = SamplerConfig::default();
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
        "\n`/proc/PID/smaps` (pinned memory) costs {:.1} ms per pass on this target, so at a \
         {:.0} % duty it runs every {:.1} s (never more often than 1 Hz).\n",
        sm.0 / 1e3,
        cfg.smaps_duty * 100.0,
        (sm.0 / 1e6 / cfg.smaps_duty).max(1.0)
    );
    println!(
        "Sampler at {} Hz for {wall:.1} s: {} samples ({rate:.2} Hz achieved), largest gap \
         between samples {max_gap:.1} ms, longest delay from a sample to its peak reset {:.2} ms, {late} samples \
         taken while a reset was late.\n",
        cfg.hz,
        ts.len(),
        max_reset.as_secs_f64() * 1e3
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
