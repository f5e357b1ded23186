//! `provetop watch --cgroup` and `--unit` on real cgroups (the v1 memory controller this VM
//! and CI mount, or v2), with real `provetop-memhog` members coming and going; a unit's
//! journal written by a real `systemd-journald` (in a journal namespace of its own, where
//! the binary exists) and read by the real `journalctl`; and a watched process OOM-killed
//! in its memory cgroup. Each cgroup is made under a unique name and removed by a guard.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use provetop_collect::cgroup::{MemCgroup, Version};
use provetop_shared::session::load;
use provetop_shared::{Mark, RecordBody};
use provetop_testkit::bins::{memhog, provetop};
use provetop_testkit::faults::{marks, samples, session};
use provetop_testkit::procs::{limited_cgroup, signal, wait_until};

const MIB: u64 = 1 << 20;

/// Cgroup directories made by a test, removed (deepest first, members killed) on drop.
struct Cgroups(Vec<PathBuf>);

impl Cgroups {
    /// Make `dir` (and missing parents, each removed again at the end).
    fn make(&mut self, dir: &Path) -> bool {
        let mut missing = Vec::new();
        let mut d = dir.to_path_buf();
        while !d.exists() {
            missing.push(d.clone());
            if !d.pop() {
                break;
            }
        }
        for m in missing.into_iter().rev() {
            if std::fs::create_dir(&m).is_err() {
                return false;
            }
            self.0.push(m);
        }
        true
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        for d in self.0.iter().rev() {
            if let Ok(s) = std::fs::read_to_string(d.join("cgroup.procs")) {
                for pid in s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                    let _ =
                        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
            // A killed member leaves its cgroup once reaped: try for a while.
            wait_until(Duration::from_secs(5), || {
                std::fs::remove_dir(d).is_ok() || !d.exists()
            });
        }
    }
}

/// Our own memory cgroup, where a test may make cgroups; `None` (the test says SKIPPED)
/// where there is none or it cannot be written.
fn own_memory_cgroup() -> Option<MemCgroup> {
    let own = MemCgroup::of_pid(std::process::id())?;
    let probe = own
        .dir
        .join(format!("provetop-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).ok()?;
    let _ = std::fs::remove_dir(&probe);
    Some(own)
}

/// A memory cgroup limited to `limit` bytes (no swap), under a parent of this test's own
/// (`limited_cgroup`'s name is per process, and other tests of this binary make one beside it
/// at the same time), with the guard that removes both; `None` (SKIPPED said) where one may
/// not be made.
fn limited(tag: &str, limit: u64) -> Option<(Cgroups, PathBuf, Version)> {
    let Some(own) = own_memory_cgroup() else {
        eprintln!("SKIPPED: no writable memory cgroup here (needs root)");
        return None;
    };
    let mut guard = Cgroups(Vec::new());
    let parent = own
        .dir
        .join(format!("provetop-test-{tag}-{}", std::process::id()));
    assert!(guard.make(&parent));
    let Some(cg) = limited_cgroup(&parent, own.version == Version::V1, limit) else {
        eprintln!("SKIPPED: cannot limit a memory cgroup here");
        return None;
    };
    guard.0.push(cg.clone());
    Some((guard, cg, own.version))
}

/// A `provetop-memhog --anon MIB` that moved itself into every cgroup of `cgs` first; its pid
/// once it holds the memory.
fn member(cgs: &[&Path], anon_mib: u64) -> (Child, u32) {
    let joins: String = cgs
        .iter()
        .map(|c| format!("echo $$ > '{}/cgroup.procs' && ", c.display()))
        .collect();
    let script = format!("{joins}exec '{}' --anon {anon_mib}", memhog().display());
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid = line
        .trim()
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("memhog said {line:?}"))
        .parse()
        .unwrap();
    (child, pid)
}

/// A `provetop watch` that a failing test does not leave behind: killed on drop unless
/// [`finished`] waited for it.
struct Watcher(Option<Child>);

impl Watcher {
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, |c| c.id())
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `provetop watch ARGS --headless --record SESSION` with private directories.
fn watch(dir: &Path, session: &Path, args: &[&str], env: &[(&str, &str)]) -> Watcher {
    let child = Command::new(provetop())
        .arg("watch")
        .args(args)
        .args(["--headless", "--record"])
        .arg(session)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_RUNTIME_DIR", dir)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Watcher(Some(child))
}

/// Wait (up to 30 s) until the latest sample of `session` satisfies `pred`.
fn wait_for_sample(session: &Path, what: &str, pred: impl Fn(u32, u64) -> bool) {
    let mut last = None;
    let ok = wait_until(Duration::from_secs(30), || {
        let Ok(l) = load(session) else { return false };
        last = samples(&l).last().map(|(_, s)| (s.procs, s.rss));
        last.is_some_and(|(p, r)| pred(p, r))
    });
    assert!(ok, "{what}: the last sample was (procs, rss) = {last:?}");
}

fn finished(mut p: Watcher) -> Output {
    let out = p.0.take().expect("running").wait_with_output().unwrap();
    assert!(out.status.code().is_some(), "provetop was killed: {out:?}");
    out
}

#[test]
fn watch_cgroup_sums_its_members_as_they_come_and_go_and_says_once_when_it_is_removed() {
    let Some(own) = own_memory_cgroup() else {
        eprintln!("SKIPPED: no writable memory cgroup here (needs root)");
        return;
    };
    let dir = own
        .dir
        .join(format!("provetop-test-members-{}", std::process::id()));
    let mut guard = Cgroups(Vec::new());
    assert!(guard.make(&dir));
    let (mut a, _) = member(&[&dir], 64);
    let (mut b, _) = member(&[&dir], 32);
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("cg.ptop");
    let p = watch(tmp.path(), &s, &["--cgroup", dir.to_str().unwrap()], &[]);
    // Each memhog holds its MiB and a few of its own (binary, stack, libc).
    wait_for_sample(&s, "both members", |procs, rss| {
        procs == 2 && (96 * MIB..140 * MIB).contains(&rss)
    });
    // One exits: the session goes on with the other.
    a.kill().unwrap();
    a.wait().unwrap();
    wait_for_sample(&s, "one member left", |procs, rss| {
        procs == 1 && (32 * MIB..56 * MIB).contains(&rss)
    });
    // A new one joins: counted with the first.
    let (mut c, _) = member(&[&dir], 16);
    wait_for_sample(&s, "a member joined", |procs, rss| {
        procs == 2 && (48 * MIB..90 * MIB).contains(&rss)
    });
    for m in [&mut b, &mut c] {
        m.kill().unwrap();
        m.wait().unwrap();
    }
    // An empty cgroup is still watched; its removal ends the session.
    assert!(wait_until(Duration::from_secs(5), || std::fs::remove_dir(
        &dir
    )
    .is_ok()));
    let out = finished(p);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let name = format!("/{}", dir.strip_prefix(own_root(&own)).unwrap().display());
    let said = format!("cgroup {name} was removed");
    assert_eq!(err.matches(&said).count(), 1, "{err}");
    let l = session(&s);
    assert_eq!(l.header.command, ["watch", "--cgroup", name.as_str()]);
    let notes = marks(&l)
        .into_iter()
        .filter(|(_, m)| matches!(m, Mark::Note { text } if text.contains(&said)))
        .count();
    assert_eq!(notes, 1, "the removal is noted once");
    assert!(
        !marks(&l)
            .iter()
            .any(|(_, m)| matches!(m, Mark::ChildExited { .. })),
        "a member's exit is not the session's end"
    );
}

/// The mount point of the hierarchy `cg` is in (the directory `/proc/self/cgroup`'s paths
/// start from).
fn own_root(cg: &MemCgroup) -> PathBuf {
    let rel = std::fs::read_to_string("/proc/self/cgroup")
        .unwrap()
        .lines()
        .find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
            let mine = match cg.version {
                Version::V1 => ctrls.split(',').any(|c| c == "memory"),
                Version::V2 => ctrls.is_empty(),
            };
            mine.then(|| path.trim_start_matches('/').to_string())
        })
        .unwrap();
    let mut root = cg.dir.clone();
    for _ in Path::new(&rel).components() {
        root.pop();
    }
    root
}

#[test]
fn bad_cgroups_and_units_are_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--cgroup", tmp.path().to_str().unwrap()],
            "not a cgroup directory",
        ),
        (&["--cgroup", "/provetop-no-such.slice/x"], "no such cgroup"),
        (
            &["--unit", "provetop-no-such-unit"],
            "provetop-no-such-unit.service",
        ),
    ];
    for (args, says) in cases {
        let out = Command::new(provetop())
            .arg("watch")
            .args(args)
            .args(["--headless", "--no-record"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A journald of our own, in a journal namespace: `systemd-journald NS`, its files removed
/// at the end.
struct Journald {
    child: Child,
    ns: String,
}

impl Journald {
    fn start(ns: &str) -> Option<Journald> {
        let bin = [
            "/lib/systemd/systemd-journald",
            "/usr/lib/systemd/systemd-journald",
        ]
        .into_iter()
        .find(|b| Path::new(b).is_file());
        // Debian's systemd package has it; without it the test goes on without a journal.
        let bin = match bin {
            Some(b) => b,
            None => {
                provetop_testkit::system::need("systemd-journald", "systemd")?;
                return None;
            }
        };
        let child = Command::new(bin)
            .arg(ns)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let j = Journald {
            child,
            ns: ns.to_string(),
        };
        wait_until(Duration::from_secs(10), || j.dev_log().exists()).then_some(j)
    }

    /// Its syslog socket (`logger -u` writes there).
    fn dev_log(&self) -> PathBuf {
        PathBuf::from(format!("/run/systemd/journal.{}/dev-log", self.ns))
    }
}

impl Drop for Journald {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(format!("/run/systemd/journal.{}", self.ns));
        if let Ok(id) = std::fs::read_to_string("/etc/machine-id") {
            let _ = std::fs::remove_dir_all(format!("/var/log/journal/{}.{}", id.trim(), self.ns));
            let _ = std::fs::remove_dir_all(format!("/run/log/journal/{}.{}", id.trim(), self.ns));
        }
    }
}

#[test]
fn watch_unit_resolves_a_cgroup_of_that_name_follows_its_journal_and_outlives_a_restart() {
    if Path::new("/run/systemd/system").is_dir() {
        eprintln!("SKIPPED: systemd runs here; the test makes units' cgroups by hand");
        return;
    }
    let Some(own) = own_memory_cgroup() else {
        eprintln!("SKIPPED: no writable memory cgroup here (needs root)");
        return;
    };
    let root = own_root(&own);
    let name = format!("provetop-test-{}", std::process::id());
    let unit = format!("{name}.service");
    let mut guard = Cgroups(Vec::new());
    let mem = root.join("system.slice").join(&unit);
    assert!(guard.make(&mem));
    // journald names a sender's unit from its cgroup in systemd's hierarchies.
    let mut cgs = vec![mem.clone()];
    for h in ["/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"] {
        let d = Path::new(h).join("system.slice").join(&unit);
        if Path::new(h).join("cgroup.procs").is_file() && guard.make(&d) {
            cgs.push(d);
        }
    }
    let cg_refs: Vec<&Path> = cgs.iter().map(|p| p.as_path()).collect();
    let (mut hog, _) = member(&cg_refs, 24);
    if !Path::new("/run/systemd/journal/socket").exists() {
        // No journald of the default namespace: the unit is watched without a log, said.
        let tmp = tempfile::tempdir().unwrap();
        let p = watch(
            tmp.path(),
            &tmp.path().join("s.ptop"),
            &["--unit", &name],
            &[],
        );
        std::thread::sleep(Duration::from_millis(1500));
        signal(p.id(), Signal::SIGTERM);
        let out = finished(p);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(
            err.contains(&format!(
                "warning: journald is not running here: the journal of {unit} is not followed"
            )),
            "{err}"
        );
    }
    let journald = Journald::start(&name);
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("unit.ptop");
    let env: Vec<(&str, &str)> = match &journald {
        Some(_) => vec![("PROVETOP_JOURNAL_NAMESPACE", name.as_str())],
        None => Vec::new(),
    };
    // The short name: `.service` is added.
    let p = watch(tmp.path(), &s, &["--unit", &name], &env);
    wait_for_sample(&s, "the unit's member", |procs, rss| {
        procs >= 1 && rss >= 24 * MIB
    });
    let l = session(&s);
    assert_eq!(l.header.command, ["watch", "--unit", unit.as_str()]);
    match &journald {
        None => {
            eprintln!("SKIPPED the journal: no systemd-journald binary here");
            let said = marks(&l).into_iter().any(|(_, m)| {
                matches!(m, Mark::Warning { text } if text.contains("journald is not running"))
            });
            assert!(said, "the missing journal is said");
        }
        Some(j) => {
            // A line of the unit's (logged from inside its cgroup) and one of another.
            let joins: String = cgs
                .iter()
                .map(|c| format!("echo $$ > '{}/cgroup.procs' && ", c.display()))
                .collect();
            let log = |text: &str, inside: bool| {
                let script = format!(
                    "{}logger -u '{}' '{text}'",
                    if inside { joins.as_str() } else { "" },
                    j.dev_log().display()
                );
                let st = Command::new("sh").args(["-c", &script]).status().unwrap();
                assert!(st.success(), "{script}");
            };
            let lines = |l: &provetop_shared::session::Loaded| -> Vec<String> {
                l.records
                    .iter()
                    .filter_map(|r| match &r.body {
                        RecordBody::Output(o) => Some(o.text.clone()),
                        _ => None,
                    })
                    .collect()
            };
            // journalctl starts following a moment after provetop: log until a line shows.
            let seen = wait_until(Duration::from_secs(30), || {
                log("a line of another process", false);
                log("the unit says: proving sector 7", true);
                std::thread::sleep(Duration::from_millis(300));
                load(&s)
                    .map(|l| lines(&l).iter().any(|t| t.contains("proving sector 7")))
                    .unwrap_or(false)
            });
            assert!(seen, "the unit's journal line never reached the session");
            let l = session(&s);
            let got = lines(&l);
            assert!(
                got.iter().all(|t| t == "the unit says: proving sector 7"),
                "only the unit's lines, whole: {got:?}"
            );
        }
    }
    // A restart, as systemd makes one: the unit's cgroup removed, then made again with a new
    // process in it. The session goes on, and says both.
    hog.kill().unwrap();
    hog.wait().unwrap();
    for c in &cgs {
        assert!(wait_until(Duration::from_secs(5), || std::fs::remove_dir(
            c
        )
        .is_ok()));
    }
    let noted = |what: &str| {
        load(&s).is_ok_and(|l| {
            marks(&l).into_iter().any(|(_, m)| {
                matches!(m, Mark::Note { text } if text.contains(what) && text.contains(&unit))
            })
        })
    };
    assert!(
        wait_until(Duration::from_secs(10), || noted("was removed")),
        "the removal is said: {:?}",
        load(&s).map(|l| format!("{:?}", marks(&l)))
    );
    std::thread::sleep(Duration::from_millis(500));
    for c in &cgs {
        std::fs::create_dir(c).unwrap();
    }
    let (mut again, _) = member(&cg_refs, 40);
    wait_for_sample(&s, "the restarted unit's member", |procs, rss| {
        procs >= 1 && rss >= 40 * MIB
    });
    assert!(noted("is back"), "the return is said");
    again.kill().unwrap();
    again.wait().unwrap();
    signal(p.id(), Signal::SIGTERM);
    let out = finished(p);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[test]
fn a_watched_process_oom_killed_in_its_memory_cgroup_reads_oom_killed() {
    let Some((_guard, cg, _)) = limited("watch-oom", 64 * MIB) else {
        return;
    };
    let script = format!(
        "echo $$ > '{}/cgroup.procs' && exec '{}' --stdin",
        cg.display(),
        memhog().display()
    );
    let mut hog = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(hog.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let pid: u32 = line.trim().strip_prefix("ready ").unwrap().parse().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("oom.ptop");
    let p = watch(tmp.path(), &s, &[&pid.to_string()], &[]);
    wait_for_sample(&s, "the process", |procs, _| procs == 1);
    // 256 MiB against a 64 MiB limit with no swap: the kernel kills it.
    use std::io::Write;
    writeln!(hog.stdin.as_mut().unwrap(), "anon 256").unwrap();
    let st = hog.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&st),
        Some(9),
        "{st:?}"
    );
    let out = finished(p);
    let err = String::from_utf8_lossy(&out.stderr);
    let named = format!("OOM kill of pid {pid} (provetop-memhog)");
    assert!(
        err.contains(&format!("pid {pid} OOM-killed (")) && err.contains(&named),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(128 + 9), "{err}");
    let l = session(&s);
    let exit = marks(&l)
        .into_iter()
        .find_map(|(_, m)| match m {
            Mark::ChildExited {
                oom_kill, reason, ..
            } => Some((*oom_kill, reason.clone())),
            _ => None,
        })
        .expect("the exit is recorded");
    assert!(
        exit.0 && exit.1.starts_with("OOM-killed (") && exit.1.contains(&named),
        "{exit:?}"
    );
}

#[test]
fn watch_cgroup_reads_that_cgroups_limit_alerts_against_it_and_names_an_oom_kill_inside_it() {
    let Some((_guard, cg, version)) = limited("watch-limit", 256 * MIB) else {
        return;
    };
    let v1 = version == Version::V1;
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("limit.ptop");
    // Watched while empty: the member comes after the session started.
    let p = watch(tmp.path(), &s, &["--cgroup", cg.to_str().unwrap()], &[]);
    assert!(wait_until(Duration::from_secs(10), || load(&s)
        .is_ok_and(|l| !samples(&l).is_empty())));
    // It grows 16 MiB every 50 ms until its cgroup's limit (no swap) kills it.
    let script = format!(
        "echo $$ > '{}/cgroup.procs' && while :; do echo anon 16; sleep 0.05; done | exec '{}' --stdin",
        cg.display(),
        memhog().display()
    );
    let mut hog = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let _ = hog.wait();
    // Emptied, the cgroup is removed: the session ends.
    assert!(wait_until(Duration::from_secs(10), || std::fs::remove_dir(
        &cg
    )
    .is_ok()));
    let out = finished(p);
    let err = String::from_utf8_lossy(&out.stderr);
    let name = cg.file_name().unwrap().to_string_lossy().to_string();
    let file = if v1 {
        "memory.limit_in_bytes"
    } else {
        "memory.max"
    };
    let limit = format!("{name} {file}");
    assert!(
        err.lines()
            .any(|l| l.contains("ALERT") && l.contains("rss > 90%") && l.contains(&limit)),
        "the default rule fired against the watched cgroup's limit: {err}"
    );
    assert!(
        err.contains("OOM kill of pid ") && err.contains("(provetop-memhog)"),
        "{err}"
    );
    assert!(err.contains("alert cleared: rss > 90%"), "{err}");
    let l = session(&s);
    let cgroups: Vec<_> = l
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Kernel(k) => Some(k.cgroup.as_ref().map(|c| c.path.clone())),
            _ => None,
        })
        .collect();
    assert!(
        !cgroups.is_empty()
            && cgroups
                .iter()
                .any(|c| c.as_deref().is_some_and(|p| p.ends_with(&name))),
        "the kernel readings are of the watched cgroup: {:?}",
        &cgroups[..cgroups.len().min(3)]
    );
    let intro = marks(&l).into_iter().any(|(_, m)| {
        matches!(m, Mark::Note { text } if text.starts_with("watched cgroup /") && text.contains(&limit))
    });
    assert!(intro, "the intro names the watched cgroup and its limit");
}
