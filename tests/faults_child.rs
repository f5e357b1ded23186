//! Faults on the child's side, end to end through the real `provetop` binary: how a child
//! ends (exit 0, exit 1, SIGKILL, OOM kill, SIGSEGV), a child that hangs (watchdog alert), one
//! that closes its events pipe, one that writes garbage or floods, one that leaks memory.
//! provetop must report each, keep monitoring, and never crash.

use std::io::Read;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use provetop_shared::clock::mono_ns;
use provetop_shared::{AlertState, Event, Mark, RecordBody};
use provetop_testkit::bins::{memhog, oom_script, prover, provetop};
use provetop_testkit::faults::*;
use provetop_testkit::procs::*;
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};

/// The two flood tests each keep both cores of a CI machine busy: one at a time, so each
/// measures provetop, not the other flood.
static FLOOD: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Run `sh -c SCRIPT` headless; returns (exit status, stderr, session).
fn run_sh(script: &str, extra: &[&str]) -> (Option<i32>, String, provetop_shared::session::Loaded) {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.ptop");
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["--", "sh", "-c", script]);
    let out = headless(dir.path(), &s, &args);
    let err = stderr(&out);
    assert!(err.contains("session recorded to"), "{err}");
    assert_classifies(&s);
    (out.status.code(), err, session(&s))
}

#[test]
fn child_exit_0_is_reported_and_passed_through() {
    let (code, err, l) = run_sh("sleep 0.3; exit 0", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("provetop: child exited 0"), "{err}");
    assert_eq!(exit_mark(&l), (Some(0), None, false, "exited 0".into()));
    assert!(!samples(&l).is_empty(), "no samples of a 0.3 s child");
}

#[test]
fn child_exit_1_is_reported_and_passed_through() {
    let (code, err, l) = run_sh("sleep 0.3; exit 1", &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("provetop: child exited with code 1"), "{err}");
    assert_eq!(
        exit_mark(&l),
        (Some(1), None, false, "exited with code 1".into())
    );
}

#[test]
fn child_killed_by_sigkill_is_shown_as_a_kill() {
    let (code, err, l) = run_sh("sleep 0.3; kill -KILL $$", &[]);
    assert_eq!(code, Some(128 + 9), "{err}");
    assert!(err.contains("provetop: child killed by SIGKILL"), "{err}");
    assert!(
        !err.contains("OOM"),
        "a plain kill is not an OOM kill: {err}"
    );
    assert_eq!(
        exit_mark(&l),
        (None, Some(9), false, "killed by SIGKILL".into())
    );
}

#[test]
fn child_killed_by_sigsegv_is_shown() {
    let (code, err, l) = run_sh("sleep 0.3; kill -SEGV $$", &[]);
    assert_eq!(code, Some(128 + 11), "{err}");
    assert!(err.contains("provetop: child killed by SIGSEGV"), "{err}");
    let (c, sig, oom, reason) = exit_mark(&l);
    assert_eq!((c, sig, oom), (None, Some(11), false));
    assert!(reason.starts_with("killed by SIGSEGV"), "{reason}");
}

/// A memory cgroup with a limit under our own (v1 or v2), or None where we may not make one.
fn own_limited_cgroup(limit: u64) -> Option<std::path::PathBuf> {
    use provetop_collect::cgroup::{MemCgroup, Version};
    let own = MemCgroup::of_pid(std::process::id())?;
    limited_cgroup(&own.dir, own.version == Version::V1, limit)
}

#[test]
fn child_oom_killed_by_its_cgroup_is_shown_as_an_oom_kill() {
    // The counter the classification rests on, read from a fake cgroup directory: this part
    // runs everywhere, also where no cgroup can be made.
    use provetop_collect::cgroup::{MemCgroup, Version};
    let fake = tempfile::tempdir().unwrap();
    std::fs::write(
        fake.path().join("memory.events"),
        "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n",
    )
    .unwrap();
    let cg = MemCgroup {
        dir: fake.path().to_path_buf(),
        mount: fake.path().to_path_buf(),
        version: Version::V2,
    };
    assert_eq!(cg.oom_kills(), Some(2));
    std::fs::write(
        fake.path().join("memory.oom_control"),
        "oom_kill_disable 0\nunder_oom 0\noom_kill 7\n",
    )
    .unwrap();
    let v1 = MemCgroup {
        dir: fake.path().to_path_buf(),
        mount: fake.path().to_path_buf(),
        version: Version::V1,
    };
    assert_eq!(v1.oom_kills(), Some(7));

    let Some(cg) = own_limited_cgroup(64 << 20) else {
        eprintln!(
            "SKIPPED the real OOM kill: cannot create a memory cgroup with a limit here (needs root and a writable memory controller)"
        );
        return;
    };
    // 256 MiB against a 64 MiB limit.
    let script = oom_script(&cg, 256);
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("oom.ptop");
    let out = headless(dir.path(), &s, &["--", "sh", "-c", &script]);
    let _ = std::fs::remove_dir(&cg);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(128 + 9), "{err}");
    // The kernel log names the victim where it is readable (root): "(OOM kill of pid N
    // (provetop-memhog))"; else "(OOM kill)".
    assert!(
        err.contains("provetop: child killed by SIGKILL (OOM kill"),
        "{err}"
    );
    let l = session(&s);
    let (code, signal, oom, reason) = exit_mark(&l);
    assert_eq!((code, signal, oom), (None, Some(9), true), "{reason}");
    assert!(
        reason == "killed by SIGKILL (OOM kill)"
            || (reason.starts_with("killed by SIGKILL (OOM kill of pid ")
                && reason.ends_with(" (provetop-memhog))")),
        "{reason}"
    );
    assert_classifies(&s);
}

#[test]
fn child_that_hangs_fires_the_watchdog_alert_and_it_clears_when_events_resume() {
    // The real prover, proving tiny sectors back to back (events every few ms), is frozen
    // with SIGSTOP: alive, silent. That is a hang as the operator sees it.
    let p = prover().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("hang.ptop");
    let mut pt = spawn_headless(
        dir.path(),
        &s,
        &[
            "--watchdog",
            "1500ms",
            "--",
            &p,
            "--proofs",
            "100000",
            "--partitions",
            "1",
            "--constraints",
            "1000",
            "--threads",
            "1",
            "--on-sigterm",
            "abort",
        ],
    );
    let child = child_pid_from(&s, Duration::from_secs(20)).expect("child started");
    // Wait until it proves (its first proof_finished is on disk) before freezing it.
    assert!(
        wait_until(Duration::from_secs(60), || {
            load_events(&s)
                .iter()
                .any(|e| matches!(e, Event::ProofFinished { .. }))
        }),
        "the prover never finished a proof"
    );
    let frozen_at = mono_ns();
    signal(child, Signal::SIGSTOP);
    std::thread::sleep(Duration::from_secs(3));
    let thawed_at = mono_ns();
    signal(child, Signal::SIGCONT);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(alive(child), "the prover died");
    signal(pt.id(), Signal::SIGTERM);
    let st = pt.wait().unwrap();
    let mut err = String::new();
    pt.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    // Headless passes the child's status through: the prover aborts its proof and exits 0.
    assert_eq!(st.code(), Some(0), "{err}");
    assert!(err.contains("got SIGTERM: stopping the child"), "{err}");
    assert!(
        err.contains("ALERT warn: event_age > 1.5s"),
        "no watchdog alert on stderr: {err}"
    );
    assert!(err.contains("alert cleared: event_age > 1.5s"), "{err}");

    let l = session(&s);
    let fired = alert_at(&l, "event_age", AlertState::Firing).expect("watchdog never fired");
    let cleared = alert_at(&l, "event_age", AlertState::Cleared).expect("watchdog never cleared");
    let last_event = l
        .records
        .iter()
        .filter(|r| matches!(r.body, RecordBody::Event(_)) && r.t <= frozen_at)
        .map(|r| r.t)
        .max()
        .unwrap();
    let silent = (fired - last_event) as f64 / 1e9;
    // Fires at the first sample (20 Hz) after 1.5 s of silence, during the hang.
    assert!(
        (1.5..1.5 + 0.25).contains(&silent) && fired < thawed_at,
        "fired after {silent:.2} s of silence, {:.2} s after the freeze (thawed after {:.2} s)",
        (fired as f64 - frozen_at as f64) / 1e9,
        (thawed_at - frozen_at) as f64 / 1e9
    );
    assert!(
        cleared >= thawed_at,
        "cleared before the prover spoke again"
    );
    // Not a freeze of provetop: samples kept coming all through the hang.
    let during = samples(&l)
        .iter()
        .filter(|(t, _)| *t > frozen_at && *t < thawed_at)
        .count();
    assert!(
        during >= 40,
        "only {during} samples in the 3 s hang (20 Hz)"
    );
    assert_classifies(&s);
}

fn load_events(p: &std::path::Path) -> Vec<Event> {
    provetop_shared::session::load(p)
        .map(|l| {
            l.records
                .into_iter()
                .filter_map(|r| match r.body {
                    RecordBody::Event(e) => Some(e),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn child_that_closes_its_events_pipe_keeps_being_monitored() {
    let (code, err, l) = run_sh(
        r#"printf '{"ts":1,"type":"state","state":"idle"}\n' >&3; exec 3>&-; sleep 2.5; exit 0"#,
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    let m = marks(&l);
    let note = m
        .iter()
        .find_map(|(t, m)| match m {
            Mark::Note { text } if text.contains("closed its events pipe") => Some(*t),
            _ => None,
        })
        .expect("no note that the child closed its events pipe");
    let after = samples(&l).iter().filter(|(t, _)| *t > note).count();
    assert!(
        after >= 15,
        "monitoring stopped with the pipe: {after} samples after"
    );
    assert_eq!(
        l.records
            .iter()
            .filter(|r| matches!(r.body, RecordBody::Event(_)))
            .count(),
        1
    );
}

#[test]
fn child_writing_garbage_is_counted_and_later_events_still_parse() {
    // Garbage, a line split over two writes (valid once joined), a 1 MiB+ line, invalid
    // UTF-8, an unknown event type, then valid events, then a partial line at exit.
    let script = r#"
printf 'garbage \001\002 not json\n' >&3
printf '{"ts":2,"type":"st' >&3; sleep 0.2; printf 'ate","state":"idle"}\n' >&3
head -c 1100000 /dev/zero | tr '\0' x >&3; printf '\n' >&3
printf '\377\376\375{}\n' >&3
printf '{"ts":3,"type":"no_such_event"}\n' >&3
printf '{"ts":4,"type":"state","state":"paused"}\n' >&3
printf '{"ts":5,"type":"log","level":"info","message":"still parsed"}\n' >&3
sleep 0.3
printf '{"ts":6,"type":"state","sta' >&3
"#;
    let (code, err, l) = run_sh(script, &[]);
    assert_eq!(code, Some(0), "{err}");
    let bad: Vec<&str> = marks(&l)
        .into_iter()
        .filter_map(|(_, m)| match m {
            Mark::BadLine { error, .. } => Some(error.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(bad.len(), 5, "{bad:#?}");
    assert!(bad[1].contains("exceeds the 1 MiB limit"), "{}", bad[1]);
    assert!(bad[2].contains("invalid UTF-8"), "{}", bad[2]);
    assert!(bad[4].contains("partial line"), "{}", bad[4]);
    // Counted and shown: the headless summary is what the screen's header shows.
    assert!(err.contains("provetop: 5 bad event lines"), "{err}");
    let events: Vec<u64> = l
        .records
        .iter()
        .filter(|r| matches!(r.body, RecordBody::Event(_)))
        .map(|r| r.t)
        .collect();
    // (ts 2, 4, 5 are not on this clock: the events are stamped when they arrived.)
    assert_eq!(events.len(), 3, "valid events lost around the garbage");
    assert!(events.is_sorted(), "{events:?}");
}

#[test]
fn child_flooding_a_million_events_per_second_is_survived() {
    // `yes` writes a valid event line as fast as the pipe takes it (tens of millions of lines
    // a second unmonitored). provetop must keep its memory bounded, keep sampling, and count
    // what it dropped.
    let _one = FLOOD.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("flood.ptop");
    let line = r#"{"ts":1,"type":"state","state":"idle"}"#;
    let script = format!("yes '{line}' >&3");
    let mut pt = spawn_headless(dir.path(), &s, &["--", "sh", "-c", &script]);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(4));
    let hwm = status_kb(pt.id(), "VmHWM").expect("provetop's VmHWM");
    signal(pt.id(), Signal::SIGTERM);
    let st = pt.wait().unwrap();
    let ran = started.elapsed().as_secs_f64();
    let mut err = String::new();
    pt.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(st.code(), Some(128 + 15), "{err}");
    let l = session(&s);
    let events = l
        .records
        .iter()
        .filter(|r| matches!(r.body, RecordBody::Event(_)))
        .count() as u64;
    let dropped: u64 = marks(&l)
        .into_iter()
        .filter_map(|(_, m)| match m {
            Mark::Dropped { what, count } if what == "events" => Some(*count),
            _ => None,
        })
        .sum();
    let rate = (events + dropped) as f64 / ran;
    eprintln!(
        "flood: {events} events recorded, {dropped} dropped in {ran:.1} s ({:.2} M lines/s read), provetop VmHWM {:.1} MiB",
        rate / 1e6,
        hwm as f64 / 1024.0
    );
    assert!(
        hwm < 64 * 1024,
        "provetop's VmHWM {hwm} kB during the flood"
    );
    // Reading a line and dropping it costs far less than parsing and recording it, so a
    // reader that drops keeps up with the child and drops most lines; one that throttled the
    // child would drop none. (A bound in lines per second would depend on the machine's speed
    // and load; the share dropped does not.)
    assert!(
        dropped > events,
        "provetop recorded {events} and dropped only {dropped} at {rate:.0} lines/s: it \
         throttles the child instead of dropping"
    );
    assert!(
        err.contains(&format!("{dropped} events dropped")),
        "the number dropped is not shown: {err}"
    );
    // Sampling went on through the flood (20 Hz for ~4 s).
    let n = samples(&l).len();
    assert!(n >= 50, "only {n} samples during the flood");
    assert_classifies(&s);
}

#[test]
fn child_leaking_memory_slowly_is_visible_and_alerts() {
    // 4 MiB more every 100 ms, to 120 MiB, held by provetop-memhog.
    let script = format!(
        "i=0; while [ $i -lt 30 ]; do echo 'anon 4'; sleep 0.1; i=$((i+1)); done | {}  --stdin",
        sh_quote(&memhog().display().to_string())
    );
    let (code, err, l) = run_sh(&script, &["--alert", "rss > 64MiB"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("ALERT warn: rss > 64MiB"), "{err}");
    let s = samples(&l);
    let rss: Vec<u64> = s.iter().map(|(_, s)| s.rss).collect();
    let first = rss[..3].iter().copied().max().unwrap();
    let peak = *rss.iter().max().unwrap();
    assert!(
        peak > first + (100 << 20),
        "the leak is not visible: {first} → {peak}"
    );
    // Growth is steady: the RSS rises across each half second.
    let halves: Vec<u64> = s
        .chunks(10)
        .map(|c| c.iter().map(|(_, s)| s.rss).max().unwrap())
        .collect();
    let rising = halves.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(rising >= 4, "no steady growth: {halves:?}");
    let fired = alert_at(&l, "rss", AlertState::Firing).expect("no rss alert recorded");
    let crossed = s
        .iter()
        .find(|(_, s)| s.rss > 64 << 20)
        .map(|(t, _)| *t)
        .unwrap();
    assert_eq!(fired, crossed, "the alert fired at another sample");
}

/// The screen: bad lines are counted in the header, escape sequences from the child do not
/// reach the terminal, a flood is survived with the UI answering keys and drops shown.
#[test]
fn bad_lines_and_a_flood_on_screen() {
    if !have_tmux("bad_lines_and_a_flood_on_screen") {
        return;
    }
    let _one = FLOOD.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let go = dir.path().join("go");
    // Four bad lines, two carrying terminal escapes (set title, clear screen, bell); then
    // the flood starts when the test creates `go`.
    let child = format!(
        r#"printf 'junk 1\n' >&3; printf '\033]2;PWNED\007\033[2J\033[31mred\n' >&3; printf '\377\n' >&3; printf '{{"ts":1,"type":"log","level":"info","message":"\u001b]2;PWNED2\u0007 escaped"}}\n' >&3; printf 'junk 4\n' >&3; while [ ! -e {go} ]; do sleep 0.1; done; exec yes '{{"ts":1,"type":"state","state":"idle"}}' >&3"#,
        go = sh_quote(&go.display().to_string())
    );
    let cmd = format!(
        "cd {d} && echo $$ > {d}/pid && exec env XDG_STATE_HOME={d}/state XDG_CONFIG_HOME={d}/config {} run --record {d}/s.ptop -- sh -c {}",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&child)
    );
    let tmux = Tmux::start(
        "flood",
        100,
        30,
        &format!("sh -c {}; echo PROVETOP-EXIT=$?; sleep 600", sh_quote(&cmd)),
    );
    let screen = tmux.wait_for("the bad lines counted", Duration::from_secs(30), |s| {
        s.contains("bad 4")
    });
    assert!(screen.contains("running pid"), "{screen}");
    assert!(!tmux.format("#{pane_title}").contains("PWNED"));
    assert!(screen.contains("bad event line"), "{screen}");
    let me: u32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();

    std::fs::write(&go, "").unwrap();
    tmux.wait_for("events dropped", Duration::from_secs(30), |s| {
        s.contains("events dropped")
    });
    // Keys are answered during the flood.
    let t0 = Instant::now();
    tmux.keys(&["?"]);
    tmux.wait_for("help during the flood", Duration::from_secs(5), |s| {
        s.contains("keys (? or Esc")
    });
    let answer = t0.elapsed();
    tmux.keys(&["Escape"]);
    std::thread::sleep(Duration::from_secs(2));
    let hwm = status_kb(me, "VmHWM").unwrap();
    eprintln!(
        "flood on screen: help shown {answer:?} after the key, provetop VmHWM {:.1} MiB",
        hwm as f64 / 1024.0
    );
    assert!(hwm < 64 * 1024, "VmHWM {hwm} kB");
    assert!(!tmux.format("#{pane_title}").contains("PWNED"));
    tmux.keys(&["q"]);
    let after = tmux.wait_for("exit", Duration::from_secs(30), |s| {
        s.contains("PROVETOP-EXIT=")
    });
    assert!(after.contains("PROVETOP-EXIT=0"), "{after}");
    assert_eq!(tmux.format("#{alternate_on}"), "0");
    let l = session(&dir.path().join("s.ptop"));
    assert!(marks(&l)
        .iter()
        .any(|(_, m)| matches!(m, Mark::Dropped { what, .. } if what == "events")));
}
