//! Usage readings against ground truth, end to end: `provetop run --headless --hz 20` over
//! `provetop-burn` (a helper that spins known threads and writes and reads known bytes), then
//! the session file read back. The helper reports its own CPU clock every 10 ms, so each
//! reading's cores are checked against what the helper really got, whatever else competes for
//! the 2 cores; where the host had a core to spare, against the nominal K as well.

use std::path::Path;

use provetop_shared::record::Usage;
use provetop_shared::RecordBody;
use provetop_testkit::bins::burn;
use provetop_testkit::faults::{headless, session, stderr};

/// The CPU tests run one at a time: two burners on the 2-core machine would leave neither a
/// core to spare, and the nominal check would see no reading.
static CORES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A headless run over `provetop-burn ARGS`: its usage readings (t, reading) and its stdout.
struct Run {
    usages: Vec<(u64, Usage)>,
    lines: Vec<String>,
}

fn run(dir: &Path, flags: &[&str], args: &[&str]) -> Run {
    let helper = burn();
    let mut cmd = vec![helper.to_str().unwrap(), "--report-ms", "10"];
    cmd.extend(args);
    run_command(dir, flags, &cmd)
}

/// A headless run over `command`.
fn run_command(dir: &Path, flags: &[&str], command: &[&str]) -> Run {
    let s = dir.join("usage.ptop");
    let mut argv: Vec<&str> = flags.to_vec();
    argv.push("--");
    argv.extend(command);
    let out = headless(dir, &s, &argv);
    assert!(out.status.success(), "{}", stderr(&out));
    let l = session(&s);
    let mut r = Run {
        usages: Vec::new(),
        lines: Vec::new(),
    };
    for rec in l.records {
        match rec.body {
            RecordBody::Usage(u) => r.usages.push((rec.t, u)),
            RecordBody::Output(o) => r.lines.push(o.text),
            _ => {}
        }
    }
    r
}

impl Run {
    /// The bounds a step printed (`burn`, `write`, `read`).
    fn step(&self, name: &str) -> (u64, u64) {
        let l = self
            .lines
            .iter()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {name} line in {:?}", self.lines));
        let (a, b) = l.split_once(' ').unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    }

    /// The helper's own CPU time at `t` (ns), between its two nearest reports.
    fn cpu_at(&self, t: u64) -> f64 {
        let pts: Vec<(u64, u64)> = self
            .lines
            .iter()
            .filter_map(|l| {
                let (a, b) = l.strip_prefix("cpu ")?.split_once(' ')?;
                Some((a.parse().ok()?, b.parse().ok()?))
            })
            .collect();
        let i = pts.partition_point(|p| p.0 <= t);
        assert!(i > 0 && i < pts.len(), "{t} outside the reports");
        let ((t0, c0), (t1, c1)) = (pts[i - 1], pts[i]);
        c0 as f64 + (c1 - c0) as f64 * (t - t0) as f64 / (t1 - t0) as f64
    }

    /// The readings whose whole interval lies inside `[start, end]`.
    fn inside(&self, (start, end): (u64, u64)) -> Vec<&(u64, Usage)> {
        self.usages
            .iter()
            .filter(|(t, u)| u.interval_ns > 0 && t - u.interval_ns >= start && *t <= end)
            .collect()
    }
}

/// Each reading inside the burn shows the cores the helper really used (its CPU clock) within
/// 0.1, and `nominal` within 0.1 where the host had a core to spare.
fn check_cores(r: &Run, nominal: f64) {
    let burn = r.step("burn");
    let inside = r.inside(burn);
    assert!(inside.len() >= 4, "{} readings in the burn", inside.len());
    let mut spare = 0;
    for (t, u) in inside {
        let truth = (r.cpu_at(*t) - r.cpu_at(t - u.interval_ns)) / u.interval_ns as f64;
        let cores = u.cores.expect("cores known inside the burn");
        assert!(
            (cores - truth).abs() <= 0.1,
            "at {t}: {cores:.3} cores read, the helper used {truth:.3}"
        );
        let root = &u.procs[0];
        assert_eq!(root.command, "provetop-burn");
        assert_eq!(root.cores, Some(cores), "one process: the tree is the root");
        let host = u.host_cores.expect("host cores known");
        assert!(host >= cores - 0.1, "host {host:.3} < tree {cores:.3}");
        if host <= f64::from(u.host_ncpu) - 0.15 {
            spare += 1;
            assert!(
                (cores - nominal).abs() <= 0.1,
                "at {t}: {cores:.3} cores read with a core to spare, want {nominal} ± 0.1"
            );
        }
    }
    eprintln!("{spare} readings had a core to spare");
}

#[test]
fn one_spinning_thread_reads_as_one_core_busy() {
    let _one = CORES.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        dir.path(),
        &["--hz", "20", "--usage-hz", "4"],
        &["--cores", "1", "--secs", "3"],
    );
    check_cores(&r, 1.0);
    // Main, the reporter and the spinner.
    let burn = r.step("burn");
    assert!(r.inside(burn).iter().all(|(_, u)| u.threads == 3));
    let first = &r.usages[0].1;
    assert_eq!(first.interval_ns, 0);
    assert_eq!(
        first.cores, None,
        "the first reading has no interval: unknown"
    );
}

#[test]
fn a_thread_busy_half_of_every_10_ms_reads_as_half_a_core() {
    let _one = CORES.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        dir.path(),
        &["--hz", "20", "--usage-hz", "4"],
        &["--cores", "1", "--secs", "3", "--duty", "0.5"],
    );
    // Sleeps overshoot by a little: the nominal share is a little under half.
    check_cores(&r, 0.47);
}

#[test]
fn bytes_written_and_read_back_from_disk_read_within_two_percent() {
    // Storage bytes: tmpfs counts none, so the file goes under target/ (a real disk here).
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let fs = nix::sys::statfs::statfs(base).unwrap();
    assert_ne!(
        fs.filesystem_type(),
        nix::sys::statfs::TMPFS_MAGIC,
        "{} is tmpfs: no storage bytes to count",
        base.display()
    );
    let data = tempfile::tempdir_in(base).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mib = 32u64;
    let r = run(
        dir.path(),
        &["--hz", "20"],
        &[
            "--io-mib",
            &mib.to_string(),
            "--dir",
            data.path().to_str().unwrap(),
        ],
    );
    // Every reading's rate times its interval adds up to the counters' change over the run.
    let total = |f: fn(&Usage) -> Option<f64>| -> f64 {
        r.usages
            .iter()
            .filter(|(_, u)| u.interval_ns > 0)
            .map(|(_, u)| f(u).expect("our own io file is readable") * u.interval_ns as f64 / 1e9)
            .sum()
    };
    let want = (mib << 20) as f64;
    let written = total(|u| u.write_bps);
    let read = total(|u| u.read_bps);
    assert!(
        (written - want).abs() <= want * 0.02,
        "{written} bytes written, want {want}"
    );
    assert!(
        (read - want).abs() <= want * 0.02,
        "{read} bytes read, want {want}"
    );
    // The write shows in the readings that cover it, as the root's own. The bytes count when
    // they are written, and the step ends after the fsync that follows, which may outlast a
    // reading's interval on a busy machine: the readings from the step's start to the first
    // after its end.
    let (start, end) = r.step("write");
    let last = r
        .usages
        .iter()
        .position(|(t, _)| *t >= end)
        .expect("a reading after the write");
    let covering: Vec<f64> = r.usages[..=last]
        .iter()
        .filter(|(t, _)| *t >= start)
        .map(|(_, u)| u.procs[0].write_bps.unwrap_or(0.0))
        .collect();
    assert!(covering.iter().any(|&w| w > 0.0), "{covering:?}");
}

#[test]
fn usage_hz_zero_records_no_usage_readings() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        dir.path(),
        &["--usage-hz", "0"],
        &["--before-ms", "0", "--after-ms", "700"],
    );
    assert!(r.usages.is_empty(), "{} readings", r.usages.len());
    assert!(!r.lines.is_empty(), "the helper ran");
}

#[test]
fn a_tree_lists_root_first_with_parents_and_its_cores_are_the_sum_of_its_processes() {
    let _one = CORES.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let helper = burn();
    let r = run_command(
        dir.path(),
        &["--hz", "20", "--usage-hz", "4"],
        &[
            "sh",
            "-c",
            "\"$0\" --report-ms 10 --cores 1 --secs 2.5 & wait",
            helper.to_str().unwrap(),
        ],
    );
    let inside = r.inside(r.step("burn"));
    assert!(inside.len() >= 3, "{} readings in the burn", inside.len());
    for (t, u) in inside {
        let [sh, kid] = &u.procs[..] else {
            panic!("at {t}: {:?}", u.procs);
        };
        assert_eq!(
            (sh.command.as_str(), kid.command.as_str()),
            ("sh", "provetop-burn")
        );
        assert_eq!(kid.ppid, sh.pid);
        assert_eq!(u.threads, sh.threads + kid.threads);
        let sum = sh.cores.unwrap() + kid.cores.unwrap();
        assert!((u.cores.unwrap() - sum).abs() < 1e-9, "{u:?}");
        let truth = (r.cpu_at(*t) - r.cpu_at(t - u.interval_ns)) / u.interval_ns as f64;
        assert!(
            (kid.cores.unwrap() - truth).abs() <= 0.1,
            "at {t}: {:?} cores read, the helper used {truth:.3}",
            kid.cores
        );
        assert!(
            sh.cores.unwrap() < 0.05,
            "the shell only waits: {:?}",
            sh.cores
        );
    }
}
