//! The sampler against ground truth: `provetop-memhog` holds known amounts of memory.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use provetop_collect::sampler::{self, SamplerConfig, SamplerHandle};
use provetop_shared::clock::mono_ns;
use provetop_shared::{Mark, Record, RecordBody, Sample};
use provetop_testkit::bins::memhog;

const MIB: u64 = 1 << 20;

struct Hog {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    /// Pid of the process that holds the memory (bottom of a --depth chain).
    leaf: u32,
}

impl Hog {
    fn start(args: &[&str]) -> Hog {
        // Started as a helper of this process: in its own process group, a supervisor test
        // running beside it would otherwise take it for an orphan of its tree and kill it.
        let mut child = provetop_collect::supervisor::spawn_helper(|| {
            Command::new(memhog())
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .process_group(0)
                .spawn()
        })
        .expect("start memhog");
        let stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let leaf = line
            .strip_prefix("ready ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("memhog said {line:?}"));
        Hog {
            child,
            stdin,
            out,
            leaf,
        }
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        line.trim().to_string()
    }

    fn cmd(&mut self, c: &str) -> String {
        writeln!(self.stdin, "{c}").unwrap();
        self.stdin.flush().unwrap();
        self.line()
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        // The whole --depth chain is in the group.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
        provetop_collect::supervisor::helper_ended(self.child.id());
    }
}

/// Drain until a sample stamped after `after` arrives (and return it).
fn sample_after(h: &mut SamplerHandle, after: u64, all: &mut Vec<Record>) -> Sample {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let start = all.len();
        h.drain(all);
        for r in &all[start..] {
            if let RecordBody::Sample(s) = &r.body {
                if r.t > after {
                    return s.clone();
                }
            }
        }
        assert!(Instant::now() < deadline, "no sample after {after}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn within(what: &str, got: u64, want: u64, tol: f64) {
    let err = (got as f64 - want as f64).abs() / want as f64;
    eprintln!(
        "{what}: measured {:.2} MiB, allocated {:.2} MiB, error {:.3} %",
        got as f64 / MIB as f64,
        want as f64 / MIB as f64,
        err * 100.0
    );
    assert!(
        err <= tol,
        "{what}: {got} vs {want} (error {:.2} %)",
        err * 100.0
    );
}

#[test]
fn fidelity_anon_shmem_locked_within_2_percent() {
    let mut hog = Hog::start(&["--stdin"]);
    let mut h = sampler::spawn(SamplerConfig::default(), hog.leaf).unwrap();
    let mut all = Vec::new();
    let base = sample_after(&mut h, mono_ns(), &mut all);

    assert_eq!(hog.cmd("anon 256"), "ok");
    let s1 = sample_after(&mut h, mono_ns(), &mut all);
    within(
        "RssAnon",
        s1.anon.unwrap() - base.anon.unwrap(),
        256 * MIB,
        0.02,
    );

    assert_eq!(hog.cmd("shm 192"), "ok");
    let s2 = sample_after(&mut h, mono_ns(), &mut all);
    within(
        "RssShmem",
        s2.shmem.unwrap() - base.shmem.unwrap(),
        192 * MIB,
        0.02,
    );

    assert_eq!(hog.cmd("lock 64"), "ok");
    let s3 = sample_after(&mut h, mono_ns(), &mut all);
    within(
        "VmLck",
        s3.locked.unwrap() - base.locked.unwrap(),
        64 * MIB,
        0.02,
    );
    within("VmRSS", s3.rss - base.rss, (256 + 192 + 64) * MIB, 0.02);

    // Everything else a sample carries is there too.
    assert_eq!(s3.procs, 1);
    assert!(s3.mem_total.unwrap() > 0 && s3.mem_available.unwrap() > 0);
    assert!(s3.peak.unwrap() >= s3.rss);
    assert_eq!(hog.cmd("free"), "ok");
    let s4 = sample_after(&mut h, mono_ns(), &mut all);
    assert!(s4.rss < base.rss + 8 * MIB, "free did not show: {}", s4.rss);
    h.stop();
}

#[test]
fn spikes_between_samples_are_caught_by_the_interval_peak() {
    const SPIKES: usize = 10;
    const SIZE: u64 = 512 * MIB;
    // 330 ms apart: the spikes land at every phase of the 50 ms sampling period.
    let mut hog = Hog::start(&["--stdin"]);
    let mut h = sampler::spawn(SamplerConfig::default(), hog.leaf).unwrap();
    let mut all = Vec::new();
    let base = sample_after(&mut h, mono_ns(), &mut all);
    let mut spikes = Vec::new();
    let t0 = Instant::now();
    for k in 0..SPIKES {
        let due = t0 + Duration::from_millis(330 * k as u64);
        if let Some(d) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
        let r = hog.cmd("spike 512 20");
        let mut w = r
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse::<u64>().unwrap());
        spikes.push((w.next().unwrap(), w.next().unwrap()));
        h.drain(&mut all);
    }
    sample_after(&mut h, mono_ns() + 100_000_000, &mut all);
    let samples: Vec<(u64, Sample)> = all
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => Some((r.t, s.clone())),
            _ => None,
        })
        .collect();
    let level = base.rss + SIZE * 97 / 100;
    let mut by_peak = 0;
    let mut by_rss = 0;
    let mut between = 0;
    for &(full, release) in &spikes {
        // The first sample at or after the moment the spike was complete covers it.
        let (_, first) = samples
            .iter()
            .find(|(t, _)| *t >= full)
            .expect("a sample after the spike");
        let caught = first.peak.unwrap() >= level;
        let inside: Vec<&Sample> = samples
            .iter()
            .filter(|(t, _)| *t >= full && *t <= release)
            .map(|(_, s)| s)
            .collect();
        let seen_by_rss = inside.iter().any(|s| s.rss >= level);
        if inside.is_empty() {
            between += 1;
        }
        by_peak += caught as usize;
        by_rss += seen_by_rss as usize;
        assert!(
            caught,
            "spike at {full}..{release} missed: peak {} < {level}",
            first.peak.unwrap()
        );
    }
    eprintln!(
        "spikes of 512 MiB held 20 ms at 20 Hz: {by_peak}/{SPIKES} caught by the interval peak, \
         {by_rss}/{SPIKES} by VmRSS alone ({between} fell entirely between two samples); \
         longest sample-to-reset delay {:?}",
        h.max_reset_delay()
    );
    assert_eq!(by_peak, SPIKES);
    h.stop();
}

#[test]
fn grandchild_memory_is_summed() {
    let hog = Hog::start(&["--depth", "2", "--anon", "200"]);
    let top = hog.child.id();
    let mut h = sampler::spawn(SamplerConfig::default(), top).unwrap();
    let mut all = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let s = loop {
        let s = sample_after(&mut h, mono_ns(), &mut all);
        if s.procs == 3 {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "tree never reached 3 processes: {s:?}"
        );
    };
    let leaf = provetop_collect::procstatus::read_status(hog.leaf).unwrap();
    let top_only = provetop_collect::procstatus::read_status(top).unwrap();
    assert!(leaf.anon >= 200 * MIB);
    assert!(s.anon.unwrap() >= leaf.anon, "{s:?}");
    // The sum is the leaf plus the two (small) processes above it.
    assert!(s.rss >= leaf.rss + top_only.rss);
    assert!(s.rss < leaf.rss + 64 * MIB);
    h.stop();
}

#[test]
fn a_member_reparented_out_of_the_tree_leaves_it_within_a_walk() {
    // sh (root) -> sh (middle, exits when told) -> sleep: once the middle is gone, the
    // sleep's parent is a reaper outside the tree, and the root becomes `sleep` by exec (no
    // new pid that would make a walk due anyway: the sleep's new parent has to).
    let mut root = Command::new("sh")
        .args([
            "-c",
            // fd 3: a background job's stdin is /dev/null.
            "exec 3<&0; sh -c 'sleep 30 & echo $!; read x <&3' & wait; exec sleep 30",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut out = BufReader::new(root.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let grandchild: u32 = line.trim().parse().unwrap();
    let mut h = sampler::spawn(SamplerConfig::default(), root.id()).unwrap();
    let mut all = Vec::new();
    let count = |h: &mut SamplerHandle, all: &mut Vec<Record>, want: u32| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let s = sample_after(h, mono_ns(), all);
            if s.procs == want {
                return Instant::now();
            }
            assert!(Instant::now() < deadline, "never {want} processes: {s:?}");
        }
    };
    count(&mut h, &mut all, 3);
    // The middle's `read` ends: it exits and the sleep is reparented.
    drop(root.stdin.take());
    let t0 = Instant::now();
    let left = count(&mut h, &mut all, 1);
    assert!(
        left - t0 < Duration::from_secs(3),
        "the reparented sleep stayed in the tree for {:?}",
        left - t0
    );
    h.stop();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(grandchild as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(root.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = root.wait();
}

#[test]
fn missing_process_and_set_root() {
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let mut h = sampler::spawn(SamplerConfig::default(), dead).unwrap();
    let mut all = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !all.iter().any(|r: &Record| {
        matches!(&r.body, RecordBody::Mark(Mark::Note { text }) if text.contains("is gone"))
    }) {
        assert!(Instant::now() < deadline, "no 'gone' mark: {all:?}");
        std::thread::sleep(Duration::from_millis(20));
        h.drain(&mut all);
    }
    assert!(!all.iter().any(|r| matches!(r.body, RecordBody::Sample(_))));

    let hog = Hog::start(&["--anon", "64"]);
    h.set_root(hog.leaf);
    let s = sample_after(&mut h, mono_ns(), &mut all);
    assert!(s.anon.unwrap() >= 64 * MIB);
    assert_eq!(h.root(), hog.leaf);
    drop(hog);
    // Killed: sampling stops with a mark, no panic.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut more = Vec::new();
    while !more.iter().any(|r: &Record| {
        matches!(&r.body, RecordBody::Mark(Mark::Note { text }) if text.contains("is gone"))
    }) {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
        h.drain(&mut more);
    }
    h.stop();
}

#[test]
fn full_ring_counts_drops_and_says_so() {
    let hog = Hog::start(&[]);
    let cfg = SamplerConfig {
        hz: 1000.0,
        gpu_hz: 0.0,
        smaps_duty: 0.0,
        ..SamplerConfig::default()
    };
    let mut h = sampler::spawn(cfg, hog.leaf).unwrap();
    // 4096 slots at 1 kHz: full after ~4 s; wait for drops without draining.
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.dropped() == 0 {
        assert!(Instant::now() < deadline, "ring never filled");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut all = Vec::new();
    h.drain(&mut all);
    assert!(all.len() >= sampler::RING_CAPACITY);
    std::thread::sleep(Duration::from_millis(50));
    h.drain(&mut all);
    let reported: u64 = all
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(Mark::Dropped { what, count }) if what == "samples" => Some(*count),
            _ => None,
        })
        .sum();
    assert!(reported > 0, "no Dropped mark");
    assert!(reported <= h.dropped());
    h.stop();
}

#[test]
fn no_gpu_is_one_note_and_nothing_breaks() {
    let hog = Hog::start(&[]);
    let mut h = sampler::spawn(SamplerConfig::default(), hog.leaf).unwrap();
    let mut all = Vec::new();
    sample_after(&mut h, mono_ns() + 600_000_000, &mut all);
    let notes: Vec<&String> = all
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(Mark::Note { text }) if text.starts_with("no GPU") => Some(text),
            _ => None,
        })
        .collect();
    let gpu_seen = all
        .iter()
        .any(|r| matches!(&r.body, RecordBody::Sample(s) if s.gpu_used.is_some()));
    // Exactly one of the two: a GPU reading, or a single "no GPU" note.
    assert!(
        gpu_seen ^ (notes.len() == 1),
        "gpu={gpu_seen} notes={notes:?}"
    );
    h.stop();
}

#[test]
fn bad_config_is_refused() {
    let e = sampler::spawn(
        SamplerConfig {
            hz: 0.0,
            ..SamplerConfig::default()
        },
        std::process::id(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("sample rate"), "{e}");
}

#[test]
fn a_target_whose_high_water_mark_is_its_rss_is_not_reset() {
    // Flat after its start: VmHWM shows max(mark, RSS), so a reset would change nothing.
    let hog = Hog::start(&["--depth", "0", "--anon", "16"]);
    let cfg = SamplerConfig {
        hz: 50.0,
        ..SamplerConfig::default()
    };
    let mut h = sampler::spawn(cfg, hog.child.id()).unwrap();
    let mut all = Vec::new();
    let mut last = Sample::default();
    for _ in 0..10 {
        last = sample_after(&mut h, mono_ns(), &mut all);
    }
    let served = h.reset_report().map_or(0, |r| r.served);
    assert!(
        served <= 1,
        "{served} resets of a flat target in 10 samples"
    );
    // The interval peak is still there, and it is the RSS.
    assert_eq!(last.peak, Some(last.rss));
    h.stop();
}

#[test]
fn the_reset_report_counts_the_resets_made_and_is_absent_when_none_are() {
    // A spike every 30 ms: after each, the high-water mark is above the RSS until reset.
    let hog = Hog::start(&[
        "--depth",
        "0",
        "--anon",
        "16",
        "--spike",
        "8",
        "--hold-ms",
        "5",
        "--every-ms",
        "30",
    ]);
    let pid = hog.child.id();
    let cfg = SamplerConfig {
        hz: 50.0,
        ..SamplerConfig::default()
    };
    let mut h = sampler::spawn(cfg.clone(), pid).unwrap();
    let mut all = Vec::new();
    // A loaded machine may schedule the hog's spikes late: sample until five resets were
    // made, within a bound far above the ~10 samples an idle machine needs.
    for _ in 0..250 {
        sample_after(&mut h, mono_ns(), &mut all);
        if h.reset_report().is_some_and(|r| r.served >= 5) {
            break;
        }
    }
    let report = h.reset_report().expect("resets were made");
    assert!(report.served >= 5, "{report}");
    assert!(report.mean <= report.max, "{report:?}");
    let line = report.to_string();
    assert!(
        line.starts_with(&format!("VmHWM resets: {}, ", report.served)),
        "{line}"
    );
    assert!(line.contains("ms at most from their sample"), "{line}");
    h.stop();
    let quiet = SamplerConfig {
        reset_peak: false,
        ..cfg
    };
    let mut h = sampler::spawn(quiet, pid).unwrap();
    for _ in 0..5 {
        sample_after(&mut h, mono_ns(), &mut all);
    }
    assert_eq!(h.reset_report(), None);
    h.stop();
}

#[test]
fn a_kernel_thread_root_is_said_to_have_no_memory_not_to_be_gone() {
    // kthreadd where pid 2 is it (a kernel thread: no VmRSS line, alive all along).
    let is_kthread = std::fs::read_to_string("/proc/2/stat").is_ok_and(|s| {
        let rest = &s[s.rfind(')').unwrap() + 1..];
        let flags: u64 = rest.split_whitespace().nth(6).unwrap().parse().unwrap();
        flags & 0x0020_0000 != 0
    });
    if !is_kthread {
        eprintln!("skipped: pid 2 is not a kernel thread here");
        return;
    }
    let mut h = sampler::spawn(SamplerConfig::default(), 2).unwrap();
    let mut all = Vec::new();
    let note = |all: &[Record]| {
        all.iter().find_map(|r| match &r.body {
            RecordBody::Mark(Mark::Note { text }) if text.starts_with("process 2 ") => {
                Some(text.clone())
            }
            _ => None,
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while note(&all).is_none() {
        assert!(Instant::now() < deadline, "no note: {all:?}");
        std::thread::sleep(Duration::from_millis(20));
        h.drain(&mut all);
    }
    let text = note(&all).unwrap();
    assert!(text.contains("is a kernel thread"), "{text}");
    assert!(!text.contains("gone"), "{text}");
    h.stop();
}
