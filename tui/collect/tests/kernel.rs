//! The kernel's view against real memory cgroups (v1 here and in CI, v2 where the host has
//! it): accounting, limits and the one that binds, event counters, OOM kills named from the
//! kernel log (under the sampler and under `run`'s supervisor), reclaim pressure, a cgroup
//! removed while watched, and v2's per-file interval peak.
//!
//! Each test makes its own cgroup under this process's memory cgroup (unique name, removed by
//! a guard even when the test fails) and skips with a printed reason where it cannot.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use provetop_collect::cgroup::{MemCgroup, Version};
use provetop_collect::sampler::{self, SamplerConfig, SamplerHandle};
use provetop_collect::supervisor::{self, ChildSpec};
use provetop_shared::record::Kernel;
use provetop_shared::{Mark, Record, RecordBody};
use provetop_testkit::bins::memhog;
use provetop_testkit::tmux::sh_quote;

const MIB: u64 = 1 << 20;

/// A memory cgroup made for one test: its processes killed and the directory removed when
/// dropped.
struct TestCgroup {
    dir: PathBuf,
    version: Version,
}

impl TestCgroup {
    /// A cgroup named `provetop-kernel-NAME-PID` under our own, with `limit` bytes and no
    /// swap; `None` (said) where none can be made.
    fn new(name: &str, limit: u64) -> Option<TestCgroup> {
        let Some(own) = MemCgroup::of_pid(std::process::id()) else {
            eprintln!("SKIPPED: no memory cgroup controller readable here");
            return None;
        };
        // v2: a cgroup with processes cannot give its children the memory controller (no
        // internal processes), so where ours did not, the test's cgroup is our sibling.
        let parent = match own.version {
            Version::V2
                if !std::fs::read_to_string(own.dir.join("cgroup.subtree_control"))
                    .unwrap_or_default()
                    .split_whitespace()
                    .any(|c| c == "memory") =>
            {
                own.dir.parent().unwrap_or(&own.dir).to_path_buf()
            }
            _ => own.dir.clone(),
        };
        let dir = parent.join(format!("provetop-kernel-{name}-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir(&dir) {
            eprintln!("SKIPPED: cannot make {} ({e}): needs root", dir.display());
            return None;
        }
        let cg = TestCgroup {
            dir,
            version: own.version,
        };
        let (max, swap) = match cg.version {
            Version::V1 => ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
            Version::V2 => ("memory.max", "memory.swap.max"),
        };
        if let Err(e) = std::fs::write(cg.dir.join(max), limit.to_string()) {
            eprintln!("SKIPPED: cannot set {max} ({e})");
            return None;
        }
        let swap_limit = if cg.version == Version::V1 {
            limit.to_string()
        } else {
            "0".into()
        };
        let _ = std::fs::write(cg.dir.join(swap), swap_limit);
        Some(cg)
    }

    fn name(&self) -> String {
        self.dir.file_name().unwrap().to_string_lossy().into_owned()
    }

    fn max_file(&self) -> &'static str {
        match self.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        }
    }

    /// A `sh -c` script that joins this cgroup, then runs `then`.
    fn join_then(&self, then: &str) -> String {
        format!(
            "echo $$ > {}/cgroup.procs && {then}",
            sh_quote(&self.dir.display().to_string())
        )
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let end = Instant::now() + Duration::from_secs(5);
        while self.dir.exists() && Instant::now() < end {
            if let Ok(procs) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
                for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A child killed and reaped when dropped.
struct Proc(Child);

impl Proc {
    fn sh(script: &str) -> Proc {
        Proc(
            Command::new("sh")
                .args(["-c", script])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                // In the test's own process group: a supervisor test running beside it
                // takes a child of another group for an orphan of its tree and kills it.
                .spawn()
                .expect("start sh"),
        )
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn watch_cfg() -> SamplerConfig {
    SamplerConfig {
        reset_peak: false,
        gpu_hz: 0.0,
        smaps_duty: 0.0,
        ..SamplerConfig::default()
    }
}

/// Drain `h` into `all` until `done` holds of what was drained, or `within` passes.
fn until(
    h: &mut SamplerHandle,
    all: &mut Vec<Record>,
    within: Duration,
    done: impl Fn(&[Record]) -> bool,
) -> bool {
    let end = Instant::now() + within;
    loop {
        h.drain(all);
        if done(all) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kernels(all: &[Record]) -> impl Iterator<Item = &Kernel> {
    all.iter().filter_map(|r| match &r.body {
        RecordBody::Kernel(k) => Some(&**k),
        _ => None,
    })
}

fn marks(all: &[Record]) -> impl Iterator<Item = &Mark> {
    all.iter().filter_map(|r| match &r.body {
        RecordBody::Mark(m) => Some(m),
        _ => None,
    })
}

fn notes(all: &[Record]) -> Vec<&str> {
    marks(all)
        .filter_map(|m| match m {
            Mark::Note { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn wait_in_cgroup(cg: &TestCgroup, pid: u32) {
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        let procs = std::fs::read_to_string(cg.dir.join("cgroup.procs")).unwrap_or_default();
        if procs.lines().any(|l| l.trim() == pid.to_string()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("pid {pid} never joined {}", cg.dir.display());
}

#[test]
fn kernel_records_carry_the_cgroups_usage_limit_breakdown_and_counters_and_the_binding_limit_names_it(
) {
    let Some(cg) = TestCgroup::new("acct", 256 * MIB) else {
        return;
    };
    let hog = Proc::sh(&cg.join_then(&format!(
        "exec {} --anon 64",
        sh_quote(&memhog().display().to_string())
    )));
    wait_in_cgroup(&cg, hog.pid());
    let mut h = sampler::spawn(watch_cfg(), hog.pid()).unwrap();
    let mut all = Vec::new();
    let ok = until(&mut h, &mut all, Duration::from_secs(10), |all| {
        kernels(all).any(|k| {
            k.cgroup
                .as_ref()
                .is_some_and(|c| c.stat.anon.is_some_and(|a| a >= 60 * MIB))
        })
    });
    h.stop();
    assert!(ok, "no kernel reading with the hog's 64 MiB: {all:#?}");
    let k = kernels(&all).last().unwrap();
    let c = k.cgroup.as_ref().unwrap();
    let name = cg.name();
    assert!(c.path.ends_with(&format!("/{name}")), "{c:?}");
    assert_eq!(c.max, Some(256 * MIB));
    assert!(c.current.is_some_and(|u| u >= 64 * MIB), "{c:?}");
    assert!(c.stat.file.is_some(), "{c:?}");
    assert_eq!(c.events.oom_kill, Some(0));
    if cg.version == Version::V1 {
        assert!(
            c.events.failcnt.is_some() && c.events.under_oom == Some(false),
            "{c:?}"
        );
        assert_eq!(c.swap, Some(0), "memsw − usage with no swap");
    }
    let b = k.binding.as_ref().unwrap();
    assert_eq!(b.name, format!("{name} {}", cg.max_file()));
    assert_eq!(b.limit, 256 * MIB);
    assert!(
        k.psi_host.as_ref().is_some_and(|p| p.memory.is_some()),
        "{k:?}"
    );
    // The samples carry the binding cgroup's usage and limit.
    let s = all
        .iter()
        .rev()
        .find_map(|r| match &r.body {
            RecordBody::Sample(s) => Some(s),
            _ => None,
        })
        .unwrap();
    assert_eq!(s.cgroup_max, Some(256 * MIB));
    assert!(s.cgroup_current.is_some_and(|u| u >= 64 * MIB));
    // Said at start: the cgroup and its limit, and what binds.
    let intro = notes(&all)
        .into_iter()
        .find(|n| n.starts_with(&format!("pid {} in ", hog.pid())))
        .unwrap_or_else(|| panic!("no intro note: {:#?}", notes(&all)));
    assert!(
        intro.contains(&format!("{} 256.0 MiB", cg.max_file()))
            && intro.contains(&format!("binding: {name} {}", cg.max_file())),
        "{intro}"
    );
}

#[test]
fn an_oom_kill_in_the_watched_cgroup_is_marked_with_the_victims_pid_and_command() {
    let Some(cg) = TestCgroup::new("oom", 48 * MIB) else {
        return;
    };
    // The watched shell joins, lets the sampler see it there, then becomes the hog that
    // outgrows the limit.
    let sh = Proc::sh(&cg.join_then(&format!(
        "sleep 0.6 && exec {} --anon 256",
        sh_quote(&memhog().display().to_string())
    )));
    wait_in_cgroup(&cg, sh.pid());
    let mut h = sampler::spawn(watch_cfg(), sh.pid()).unwrap();
    let mut all = Vec::new();
    let pid = sh.pid();
    let ok = until(&mut h, &mut all, Duration::from_secs(15), |all| {
        marks(all).any(|m| matches!(m, Mark::OomKill { pid: Some(p), .. } if *p == pid))
    });
    // The counter's move is marked too (the reading after the kill).
    until(&mut h, &mut all, Duration::from_secs(2), |all| {
        marks(all).any(|m| matches!(m, Mark::MemoryEvent { counter, .. } if counter == "oom_kill"))
    });
    h.stop();
    assert!(
        ok,
        "no OOM-kill mark: {:#?}",
        marks(&all).collect::<Vec<_>>()
    );
    let kills: Vec<&Mark> = marks(&all)
        .filter(|m| matches!(m, Mark::OomKill { .. }))
        .collect();
    assert_eq!(kills.len(), 1, "one kill, one mark: {kills:#?}");
    // Dying, it left its cgroup: no move for that.
    assert!(
        !notes(&all).iter().any(|n| n.contains("moved from")),
        "{:#?}",
        notes(&all)
    );
    let Mark::OomKill {
        command,
        cgroup,
        watched,
        text,
        ..
    } = kills[0]
    else {
        unreachable!()
    };
    assert_eq!(command.as_deref(), Some("provetop-memhog"));
    assert!(*watched);
    assert!(
        cgroup.as_deref().is_some_and(|c| c.ends_with(&cg.name())),
        "{cgroup:?}"
    );
    assert!(
        text.starts_with(&format!("OOM kill of pid {pid} (provetop-memhog)")),
        "{text}"
    );
    assert!(
        marks(&all).any(
            |m| matches!(m, Mark::MemoryEvent { counter, delta: 1, .. } if counter == "oom_kill")
        ),
        "{:#?}",
        marks(&all).collect::<Vec<_>>()
    );
}

#[test]
fn an_oom_kill_of_another_process_in_the_watched_cgroup_is_marked_as_not_of_the_tree() {
    let Some(cg) = TestCgroup::new("other", 48 * MIB) else {
        return;
    };
    let sleeper = Proc::sh(&cg.join_then("exec sleep 60"));
    wait_in_cgroup(&cg, sleeper.pid());
    let mut h = sampler::spawn(watch_cfg(), sleeper.pid()).unwrap();
    let mut all = Vec::new();
    assert!(until(&mut h, &mut all, Duration::from_secs(10), |all| {
        kernels(all).any(|k| k.cgroup.is_some())
    }));
    let hog = Proc::sh(&cg.join_then(&format!(
        "exec {} --anon 256",
        sh_quote(&memhog().display().to_string())
    )));
    let killed = Instant::now();
    let pid = hog.pid();
    let ok = until(&mut h, &mut all, Duration::from_secs(10), |all| {
        marks(all).any(|m| matches!(m, Mark::OomKill { pid: Some(p), .. } if *p == pid))
            && marks(all)
                .any(|m| matches!(m, Mark::MemoryEvent { counter, .. } if counter == "oom_kill"))
    });
    eprintln!("marked within {:?} of the hog's start", killed.elapsed());
    h.stop();
    assert!(ok, "{:#?}", marks(&all).collect::<Vec<_>>());
    let kills: Vec<&Mark> = marks(&all)
        .filter(|m| matches!(m, Mark::OomKill { .. }))
        .collect();
    assert_eq!(kills.len(), 1, "{kills:#?}");
    assert!(
        matches!(kills[0], Mark::OomKill { watched: false, command: Some(c), .. } if c == "provetop-memhog")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_oom_killed_right_after_joining_a_memory_cgroup_is_reported_as_an_oom_kill_naming_it(
) {
    let Some(cg) = TestCgroup::new("run", 48 * MIB) else {
        return;
    };
    // Joined and killed within tens of ms: long before the supervisor's cgroup poll.
    let script = cg.join_then(&format!(
        "exec {} --anon 256",
        sh_quote(&memhog().display().to_string())
    ));
    let (tx, mut rx) = tokio::sync::mpsc::channel(4096);
    let spec = ChildSpec {
        argv: vec!["sh".into(), "-c".into(), script],
        grace: Duration::from_secs(2),
        ..ChildSpec::default()
    };
    let mut h = supervisor::spawn(spec, tx).await.expect("spawn");
    let pid = h.pid().unwrap();
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let info = tokio::time::timeout(Duration::from_secs(60), h.wait())
        .await
        .expect("child never ended");
    assert_eq!(info.signal, Some(9), "{info:?}");
    assert!(info.oom_kill, "{info:?}");
    assert_eq!(
        info.reason,
        format!("killed by SIGKILL (OOM kill of pid {pid} (provetop-memhog))")
    );
}

#[test]
fn a_cgroup_squeezed_into_reclaim_moves_its_counters_or_its_memory_pressure() {
    let Some(cg) = TestCgroup::new("squeeze", 24 * MIB) else {
        return;
    };
    // Page cache written inside a small limit: reclaimed (and written back) all along. (A
    // v1 memory+swap limit would take the failed charges, and recent kernels count no
    // failcnt for it: unlimited here, as there is no swap to escape to anyway.)
    if cg.version == Version::V1 {
        let _ = std::fs::write(cg.dir.join("memory.memsw.limit_in_bytes"), "-1");
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("squeeze");
    let w = Proc::sh(&cg.join_then(&format!(
        "sleep 0.5; for i in 1 2 3 4 5 6; do dd if=/dev/zero of={} bs=1M count=192 conv=fsync status=none; done; sleep 30",
        sh_quote(&file.display().to_string())
    )));
    wait_in_cgroup(&cg, w.pid());
    let mut h = sampler::spawn(watch_cfg(), w.pid()).unwrap();
    let mut all = Vec::new();
    // The host's pressure moves with whatever else runs here: the cgroup's own counters
    // (and on v2 its own pressure) are the evidence.
    let moved = |all: &[Record]| {
        marks(all).any(|m| {
            matches!(m, Mark::MemoryEvent { counter, .. } if counter == "failcnt" || counter == "max")
        }) || kernels(all).any(|k| {
            k.psi_cgroup
                .as_ref()
                .and_then(|p| p.memory.as_ref())
                .is_some_and(|m| m.some.rate.is_some_and(|r| r > 0.0))
        })
    };
    let ok = until(&mut h, &mut all, Duration::from_secs(30), moved);
    h.stop();
    for m in marks(&all).filter(|m| matches!(m, Mark::MemoryEvent { .. } | Mark::Stall { .. })) {
        eprintln!("{m:?}");
    }
    if let Some(k) = kernels(&all).last() {
        eprintln!(
            "host memory pressure: {:?}",
            k.psi_host.as_ref().and_then(|p| p.memory.clone())
        );
    }
    assert!(
        ok,
        "neither counters nor pressure moved: {:#?}",
        kernels(&all).last()
    );
}

#[test]
fn a_cgroup_removed_while_watched_is_said_once_and_its_readings_become_unavailable() {
    let Some(cg) = TestCgroup::new("removed", 256 * MIB) else {
        return;
    };
    let own = MemCgroup::of_pid(std::process::id()).unwrap();
    let sleeper = Proc::sh(&cg.join_then("exec sleep 60"));
    wait_in_cgroup(&cg, sleeper.pid());
    let mut h = sampler::spawn(watch_cfg(), sleeper.pid()).unwrap();
    let mut all = Vec::new();
    assert!(until(&mut h, &mut all, Duration::from_secs(10), |all| {
        kernels(all).any(|k| k.cgroup.is_some())
    }));
    // Moved out, then its cgroup removed.
    std::fs::write(own.dir.join("cgroup.procs"), sleeper.pid().to_string()).unwrap();
    std::fs::remove_dir(&cg.dir).unwrap();
    let path = |all: &[Record]| {
        notes(all)
            .into_iter()
            .filter(|n| n.contains(&cg.name()) && n.contains("was removed while watched"))
            .count()
    };
    // Which the sampler sees first, the removal or the move, is a race (the move is looked
    // for every other reading): each is said, and said once.
    let moved_said = |all: &[Record]| notes(all).iter().any(|n| n.contains("moved from"));
    assert!(until(&mut h, &mut all, Duration::from_secs(5), |all| path(
        all
    )
        >= 1
        || moved_said(all)));
    std::thread::sleep(Duration::from_millis(1500));
    h.drain(&mut all);
    h.stop();
    assert!(path(&all) <= 1, "{:#?}", notes(&all));
    let moved: Vec<&str> = notes(&all)
        .into_iter()
        .filter(|n| n.contains("moved from"))
        .collect();
    assert_eq!(moved.len(), 1, "{moved:#?}");
    assert!(moved[0].contains(&own.path()), "{moved:?}");
    // Its readings are now the new cgroup's.
    let last = kernels(&all).last().unwrap();
    assert_eq!(
        last.cgroup.as_ref().map(|c| c.path.clone()),
        Some(own.path())
    );
}

/// cgroup v2 with Linux 6.12's per-file `memory.peak` reset (the lent GPU machines):
/// `watch`'s interval peak catches a 256 MiB spike held 20 ms, every time, without touching
/// the process's VmHWM. Elsewhere it says why it cannot run.
///
/// `cargo test -p provetop-collect --test collect kernel::v2_ -- --nocapture`
#[test]
fn v2_memory_peak_is_the_interval_peak_and_leaves_vmhwm_alone() {
    let Some(cg) = TestCgroup::new("peak", 2048 * MIB) else {
        return;
    };
    if cg.version != Version::V2 {
        eprintln!("SKIPPED: memory.peak needs cgroup v2 (this host's memory controller is v1)");
        return;
    }
    if let Err(why) = provetop_collect::cgroup::peak::PeakReset::open(&cg.dir) {
        eprintln!("SKIPPED: {why}");
        return;
    }
    use std::io::{BufRead, BufReader, Write};
    let mut hog = Command::new("sh")
        .args([
            "-c",
            &cg.join_then(&format!(
                "exec {} --stdin",
                sh_quote(&memhog().display().to_string())
            )),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = hog.stdin.take().unwrap();
    let mut out = BufReader::new(hog.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let pid = hog.id();
    let mut h = sampler::spawn(watch_cfg(), pid).unwrap();
    let mut all = Vec::new();
    std::thread::sleep(Duration::from_millis(500));
    let mut caught = 0;
    for _ in 0..5 {
        h.drain(&mut all);
        let before = all.len();
        writeln!(stdin, "spike 256 20").unwrap();
        stdin.flush().unwrap();
        line.clear();
        out.read_line(&mut line).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        h.drain(&mut all);
        let rss_before = all[..before]
            .iter()
            .rev()
            .find_map(|r| match &r.body {
                RecordBody::Sample(s) => Some(s.rss),
                _ => None,
            })
            .unwrap_or(0);
        let top = all[before..]
            .iter()
            .filter_map(|r| match &r.body {
                RecordBody::Sample(s) => s.peak,
                _ => None,
            })
            .max()
            .unwrap_or(0);
        eprintln!(
            "spike: peak {} MiB above the RSS before",
            top.saturating_sub(rss_before) / MIB
        );
        if top >= rss_before + 240 * MIB {
            caught += 1;
        }
        std::thread::sleep(Duration::from_millis(2700));
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hwm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let _ = hog.kill();
    let _ = hog.wait();
    h.stop();
    assert_eq!(caught, 5, "every 20 ms spike caught");
    assert!(
        hwm_kb * 1024 >= 256 * MIB,
        "VmHWM {hwm_kb} kB: provetop reset it"
    );
}
