//! What a recording is worth after the worst: `kill -9` of provetop at random moments. Every
//! file must load, classify, and miss at most the last second of records; session files are
//! private (0600) however they come to exist.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use provetop_shared::clock::mono_ns;
use provetop_shared::session::load;
use provetop_shared::{Mark, RecordBody};
use provetop_testkit::faults::*;
use provetop_testkit::procs::*;

/// xorshift64*: random delays without a dependency; the seed is printed for a rerun.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The outcome of one kill.
struct Try {
    delay_ms: u64,
    /// kill time minus the newest record on disk (or the session start when none), seconds.
    lost_s: f64,
    records: usize,
    samples: usize,
}

/// Start a recording, SIGKILL provetop after `delay_ms`, check what is left.
fn one_try(dir: &Path, n: usize, delay_ms: u64) -> Option<Try> {
    let s = dir.join(format!("k{n}.ptop"));
    let mut pt = headless_cmd(dir, &s, &["--", "sleep", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(delay_ms));
    let killed_at = mono_ns();
    signal(pt.id(), Signal::SIGKILL);
    pt.wait().unwrap();
    if !s.exists() {
        // Killed before it created the file (it starts the child first).
        assert!(
            delay_ms < 1000,
            "no session file {delay_ms} ms after the start"
        );
        return None;
    }
    let mode = std::fs::metadata(&s).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{} has mode {mode:o}", s.display());
    let l = load(&s).unwrap_or_else(|e| panic!("try {n} ({delay_ms} ms): {e}"));
    assert!(
        l.warnings.is_empty(),
        "try {n} ({delay_ms} ms): {:?}",
        l.warnings
    );
    // The newest record on disk; a file holding only its header lost everything since the
    // session started.
    let newest = l
        .records
        .iter()
        .map(|r| r.t)
        .max()
        .unwrap_or(l.header.mono_anchor);
    let lost_s = killed_at.saturating_sub(newest) as f64 / 1e9;
    let samples = samples(&l).len();
    if samples > 0 {
        assert_classifies(&s);
    }
    // The child does not outlive provetop (parent-death signal).
    if let Some(child) = marks(&l).into_iter().find_map(|(_, m)| match m {
        Mark::ChildStarted { pid, .. } => Some(*pid),
        _ => None,
    }) {
        assert!(
            wait_until(Duration::from_secs(5), || !alive(child)),
            "child {child} outlived a kill -9 of provetop"
        );
    }
    let _ = std::fs::remove_file(&s);
    let _ = std::fs::remove_file(dir.join(format!("k{n}.ptop.child.log")));
    Some(Try {
        delay_ms,
        lost_s,
        records: l.records.len(),
        samples,
    })
}

#[test]
fn kill_9_at_random_moments_loses_at_most_the_last_second() {
    const TRIES: usize = 50;
    const WORKERS: usize = 5;
    let seed = std::env::var("PROVETOP_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| mono_ns() | 1);
    eprintln!("kill -9 loop: seed {seed} (PROVETOP_KILL_SEED to rerun)");
    let mut rng = Rng(seed);
    let delays: Vec<u64> = (0..TRIES).map(|_| 50 + rng.next() % 1451).collect();
    let dir = tempfile::tempdir().unwrap();
    let results: Vec<Option<Try>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|w| {
                let delays = &delays;
                let dir = dir.path();
                sc.spawn(move || {
                    (w..TRIES)
                        .step_by(WORKERS)
                        .map(|n| one_try(dir, n, delays[n]))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let done: Vec<&Try> = results.iter().flatten().collect();
    let worst = done
        .iter()
        .max_by(|a, b| a.lost_s.total_cmp(&b.lost_s))
        .unwrap();
    let with_samples = done.iter().filter(|t| t.samples > 0).count();
    eprintln!(
        "kill -9 loop: {TRIES} kills, {} files ({with_samples} with samples, {} header only), \
         most records {}, worst loss {:.3} s (killed after {} ms)",
        done.len(),
        done.iter().filter(|t| t.records == 0).count(),
        done.iter().map(|t| t.records).max().unwrap(),
        worst.lost_s,
        worst.delay_ms
    );
    assert!(done.len() >= TRIES * 3 / 4, "too few files to judge");
    assert!(with_samples >= TRIES / 4, "too few files with samples");
    for t in &done {
        assert!(
            t.lost_s <= 1.0,
            "killed after {} ms: the newest record on disk is {:.3} s old",
            t.delay_ms,
            t.lost_s
        );
    }
}

#[test]
fn session_files_and_child_logs_are_created_0600() {
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // A fresh file (the umask alone would give 0644).
    let fresh = dir.path().join("fresh.ptop");
    let o = headless(dir.path(), &fresh, &["--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mode(&fresh), 0o600);
    assert_eq!(mode(&dir.path().join("fresh.ptop.child.log")), 0o600);
    // A child log of ours that already existed, world-readable (its session was removed):
    // appended to, it becomes private. An existing session file is refused (tests/files.rs).
    let old = dir.path().join("old.ptop");
    let old_log = dir.path().join("old.ptop.child.log");
    std::fs::write(&old_log, b"previous contents").unwrap();
    std::fs::set_permissions(&old_log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = headless(dir.path(), &old, &["--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mode(&old), 0o600);
    assert_eq!(mode(&old_log), 0o600, "an appended child log kept 0644");
    assert!(std::fs::read(&old_log)
        .unwrap()
        .starts_with(b"previous contents"));
    assert!(load(&old).is_ok());
    // The default location.
    let o = headless_default(dir.path(), &["--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sessions = dir.path().join("state/provetop/sessions");
    let files: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 3, "{files:?}"); // the session, its chunk index and its child log
    for f in files {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
    assert!(load(
        &sessions.join(
            std::fs::read_dir(&sessions)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .find(|n| n.to_string_lossy().ends_with(".ptop"))
                .unwrap()
        )
    )
    .unwrap()
    .records
    .iter()
    .any(|r| matches!(r.body, RecordBody::Mark(Mark::ChildExited { .. }))));
}
