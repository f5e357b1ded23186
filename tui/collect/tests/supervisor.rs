//! The supervisor against real children: exits, signals, stops, restarts, bad and flooding
//! event streams.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use provetop_collect::supervisor::{self, ChildSpec, ExitInfo, Restart, SupervisorHandle};
use provetop_shared::protocol::{parse_control, Control, Event, ProverState};
use provetop_shared::{Mark, Record, RecordBody};
use provetop_testkit::bins::oom_script;
use provetop_testkit::faults::record_marks as marks;
use provetop_testkit::procs::{alive, limited_cgroup};
use tokio::sync::mpsc;

fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

fn spec(argv: Vec<String>) -> ChildSpec {
    ChildSpec {
        argv,
        grace: Duration::from_secs(2),
        ..ChildSpec::default()
    }
}

/// Run to the end, collecting every record.
async fn run(spec: ChildSpec) -> (ExitInfo, Vec<Record>) {
    let (tx, mut rx) = mpsc::channel(4096);
    let mut h = supervisor::spawn(spec, tx).await.expect("spawn");
    let collector = tokio::spawn(async move {
        let mut v = Vec::new();
        while let Some(r) = rx.recv().await {
            v.push(r);
        }
        v
    });
    let info = tokio::time::timeout(Duration::from_secs(60), h.wait())
        .await
        .expect("child never ended");
    drop(h);
    let recs = collector.await.unwrap();
    (info, recs)
}

/// Whether a process is gone (or a zombie nobody has reaped yet) within `within`.
async fn wait_dead(pid: u32, within: Duration) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

async fn read_pid_file(p: &Path) -> u32 {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(p) {
            if let Ok(pid) = s.trim().parse() {
                return pid;
            }
        }
        assert!(Instant::now() < end, "{} never written", p.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_zero() {
    let (info, recs) = run(spec(sh("exit 0"))).await;
    assert_eq!((info.code, info.signal), (Some(0), None));
    assert_eq!(info.reason, "exited 0");
    let m = marks(&recs);
    assert!(matches!(m[0], Mark::ChildStarted { command, .. } if command[0] == "sh"));
    assert!(matches!(
        m.last().unwrap(),
        Mark::ChildExited { code: Some(0), .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_one() {
    let (info, _) = run(spec(sh("exit 1"))).await;
    assert_eq!((info.code, info.signal), (Some(1), None));
    assert_eq!(info.reason, "exited with code 1");
    assert!(!info.oom_kill);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_by_sigkill() {
    let (info, recs) = run(spec(sh("kill -KILL $$"))).await;
    assert_eq!((info.code, info.signal), (None, Some(9)));
    assert_eq!(info.reason, "killed by SIGKILL");
    assert!(!info.oom_kill);
    assert!(marks(&recs).iter().any(|m| matches!(
        m,
        Mark::ChildExited { signal: Some(9), reason, .. } if reason == "killed by SIGKILL"
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_by_sigsegv() {
    let (info, _) = run(spec(sh("kill -SEGV $$"))).await;
    assert_eq!(info.signal, Some(11));
    assert!(
        info.reason.starts_with("killed by SIGSEGV"),
        "{}",
        info.reason
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_program_is_a_clear_error() {
    let (tx, _rx) = mpsc::channel(8);
    let e = supervisor::spawn(spec(vec!["/nonexistent/prover".into()]), tx.clone())
        .await
        .err()
        .unwrap();
    let msg = format!("{e:#}");
    assert!(msg.contains("/nonexistent/prover"), "{msg}");
    let e = supervisor::spawn(spec(vec![]), tx).await.err().unwrap();
    assert!(e.to_string().contains("empty command"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_terms_then_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidf = dir.path().join("grandchild");
    // The shell and its background child both ignore SIGTERM (SIG_IGN survives exec).
    let script = format!(
        "trap '' TERM; sleep 1000 & echo $! > {}; wait",
        pidf.display()
    );
    let (tx, mut rx) = mpsc::channel(1024);
    let mut s = spec(sh(&script));
    s.grace = Duration::from_millis(600);
    let mut h = supervisor::spawn(s, tx).await.unwrap();
    let leader = h.pid().unwrap();
    let grandchild = read_pid_file(&pidf).await;
    assert!(alive(grandchild));
    let t0 = Instant::now();
    h.stop().await;
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(600),
        "SIGKILL came before the grace: {took:?}"
    );
    assert!(took < Duration::from_secs(5), "stop took {took:?}");
    let info = h.wait().await;
    assert_eq!(info.signal, Some(9), "{info:?}");
    assert!(info.reason.starts_with("stopped:"), "{}", info.reason);
    assert!(wait_dead(leader, Duration::from_secs(2)).await);
    assert!(
        wait_dead(grandchild, Duration::from_secs(2)).await,
        "grandchild survived"
    );
    assert_eq!(h.pid(), None);
    rx.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_of_a_polite_child_is_quick() {
    let (tx, _rx) = mpsc::channel(1024);
    let mut s = spec(vec!["sleep".into(), "1000".into()]);
    s.grace = Duration::from_secs(10);
    let mut h = supervisor::spawn(s, tx).await.unwrap();
    let t0 = Instant::now();
    h.stop().await;
    assert!(t0.elapsed() < Duration::from_secs(2));
    let info = h.wait().await;
    assert_eq!(info.signal, Some(15));
    assert_eq!(info.reason, "stopped: killed by SIGTERM");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_child_remains_after_drop() {
    let dir = tempfile::tempdir().unwrap();
    let pidf = dir.path().join("grandchild");
    let script = format!("sleep 1000 & echo $! > {}; wait", pidf.display());
    let (tx, _rx) = mpsc::channel(1024);
    let h = supervisor::spawn(spec(sh(&script)), tx).await.unwrap();
    let leader = h.pid().unwrap();
    let grandchild = read_pid_file(&pidf).await;
    drop(h);
    assert!(
        wait_dead(leader, Duration::from_secs(3)).await,
        "leader survived the drop"
    );
    assert!(
        wait_dead(grandchild, Duration::from_secs(3)).await,
        "grandchild survived the drop"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_on_failure_backs_off_and_gives_up() {
    let mut s = spec(sh("exit 3"));
    s.restart = Restart::OnFailure { max: 2 };
    let t0 = Instant::now();
    let (info, recs) = run(s).await;
    let took = t0.elapsed();
    assert_eq!(info.code, Some(3));
    let m = marks(&recs);
    let starts = m
        .iter()
        .filter(|m| matches!(m, Mark::ChildStarted { .. }))
        .count();
    let restarts: Vec<(u32, f64)> = m
        .iter()
        .filter_map(|m| match m {
            Mark::Restart { attempt, backoff_s } => Some((*attempt, *backoff_s)),
            _ => None,
        })
        .collect();
    assert_eq!(starts, 3);
    assert_eq!(restarts, vec![(1, 1.0), (2, 2.0)]);
    assert!(
        took >= Duration::from_secs(3),
        "backoff not respected: {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_stops_once_the_child_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("ran-once");
    let script = format!(
        "if [ -e {f} ]; then exit 0; else touch {f}; exit 7; fi",
        f = flag.display()
    );
    let mut s = spec(sh(&script));
    s.restart = Restart::OnFailure { max: 5 };
    let (info, recs) = run(s).await;
    assert_eq!(info.code, Some(0));
    let exits: Vec<Option<i32>> = marks(&recs)
        .iter()
        .filter_map(|m| match m {
            Mark::ChildExited { code, .. } => Some(*code),
            _ => None,
        })
        .collect();
    assert_eq!(exits, vec![Some(7), Some(0)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_restart_after_a_stop() {
    let (tx, _rx) = mpsc::channel(1024);
    let mut s = spec(vec!["sleep".into(), "1000".into()]);
    s.restart = Restart::OnFailure { max: 5 };
    let mut h = supervisor::spawn(s, tx).await.unwrap();
    h.stop().await;
    let info = tokio::time::timeout(Duration::from_secs(5), h.wait())
        .await
        .unwrap();
    assert_eq!(info.signal, Some(15));
    assert_eq!(h.stats().starts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lines_are_counted_and_later_events_still_parse() {
    let script = r#"
printf 'not json at all\n' >&3
head -c 1100000 /dev/zero | tr '\0' x >&3; printf '\n' >&3
printf '\377\376{}\n' >&3
printf '{"ts":5,"type":"state","state":"idle"}\n' >&3
printf '{"ts":6,"type":"no_such_event"}\n' >&3
printf '\n' >&3
printf '{"ts":7,"type":"state","state":"paused"}\n' >&3
printf '{"ts":8,"type":"sta' >&3
"#;
    let (tx, mut rx) = mpsc::channel(4096);
    let mut h = supervisor::spawn(spec(sh(script)), tx).await.unwrap();
    let collector = tokio::spawn(async move {
        let mut v = Vec::new();
        while let Some(r) = rx.recv().await {
            v.push(r);
        }
        v
    });
    let info = h.wait().await;
    assert_eq!(info.code, Some(0));
    let stats = h.stats();
    drop(h);
    let recs = collector.await.unwrap();
    // (ts 5 and 7 are not on this clock: the events are stamped when they arrived.)
    let events: Vec<&Event> = recs
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(
        events,
        vec![
            &Event::State {
                state: ProverState::Idle
            },
            &Event::State {
                state: ProverState::Paused
            }
        ]
    );
    let bad: Vec<(&String, &String)> = recs
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(Mark::BadLine { error, excerpt }) => Some((error, excerpt)),
            _ => None,
        })
        .collect();
    assert_eq!(bad.len(), 5, "{bad:#?}");
    assert!(bad[0].0.contains("not a JSON object") && bad[0].1 == "not json at all");
    assert!(bad[1].0.contains("exceeds the 1 MiB limit"), "{}", bad[1].0);
    assert_eq!(bad[1].1.len(), 200, "excerpt is capped");
    assert!(bad[2].0.contains("invalid UTF-8"), "{}", bad[2].0);
    assert!(bad[3].0.contains("no_such_event"), "{}", bad[3].0);
    assert!(bad[4].0.contains("partial line"), "{}", bad[4].0);
    assert_eq!(stats.events, 2);
    assert_eq!(stats.bad_lines, 5);
    assert_eq!(stats.dropped, 0);
}

fn own_rss() -> u64 {
    provetop_collect::procstatus::read_status(std::process::id())
        .unwrap()
        .rss
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_child_keeps_memory_bounded_and_drops_are_counted() {
    let line = r#"{"ts":1,"type":"state","state":"idle"}"#;
    let script = format!("yes '{line}' >&3");
    // A small channel nobody drains for a while: everything beyond it must be dropped, not
    // buffered.
    let (tx, mut rx) = mpsc::channel(256);
    let h = supervisor::spawn(spec(sh(&script)), tx).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss0 = own_rss();
    // Until well past a hundred thousand drops (a loaded machine, with the other tests of
    // this file running beside it, may take a while to get there).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while h.stats().dropped <= 200_000 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rss1 = own_rss();
    let mid = h.stats();
    assert!(mid.dropped > 100_000, "only {} dropped", mid.dropped);
    assert!(
        rss1 < rss0 + (16 << 20),
        "memory grew from {rss0} to {rss1} during the flood"
    );
    // Now drain: the drop count shows up as marks, and reading goes on. Generous deadline:
    // the loop ends as soon as both are seen; a loaded CI machine may take a while.
    let mut reported = 0;
    let mut events = 0;
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        while let Ok(r) = rx.try_recv() {
            match r.body {
                RecordBody::Mark(Mark::Dropped { what, count }) => {
                    assert_eq!(what, "events");
                    reported += count;
                }
                RecordBody::Event(_) => events += 1,
                _ => {}
            }
        }
        if reported > 0 && events > 1000 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    h.stop().await;
    assert!(reported > 0, "no Dropped mark");
    assert!(
        events > 1000,
        "reading stopped after the flood ({events} events)"
    );
    eprintln!(
        "flood: {} events forwarded, {} dropped, RSS {:.1} → {:.1} MiB",
        h.stats().events,
        h.stats().dropped,
        rss0 as f64 / 1048576.0,
        rss1 as f64 / 1048576.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_controls_and_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("child.log");
    let got = dir.path().join("stdin-line");
    let script = format!(
        r#"printf '{{"ts":1,"type":"log","level":"info","message":"fd=%s"}}\n' "$PROVETOP_EVENTS_FD" >&3
echo to-stdout; echo to-stderr >&2
head -n 1 > {}"#,
        got.display()
    );
    let (tx, mut rx) = mpsc::channel(1024);
    let mut s = spec(sh(&script));
    s.log_path = Some(log.clone());
    s.env = vec![("PROVETOP_TEST_VAR".into(), "x".into())];
    let mut h = supervisor::spawn(s, tx).await.unwrap();
    // Wait for the event so the child is surely reading stdin.
    let first = loop {
        let r = rx.recv().await.unwrap();
        if let RecordBody::Event(e) = r.body {
            break e;
        }
    };
    assert!(
        matches!(&first, Event::Log { message, .. } if message == "fd=3"),
        "{first:?}"
    );
    assert!(h.send(Control::Pause));
    let info = tokio::time::timeout(Duration::from_secs(10), h.wait())
        .await
        .unwrap();
    assert_eq!(info.code, Some(0));
    let line = std::fs::read_to_string(&got).unwrap();
    assert_eq!(parse_control(&line).unwrap().control, Control::Pause);
    // The control itself is in the record stream.
    let mut saw_control = false;
    while let Ok(r) = rx.try_recv() {
        saw_control |= matches!(r.body, RecordBody::Control(Control::Pause));
    }
    assert!(saw_control);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("to-stdout") && text.contains("to-stderr"),
        "{text}"
    );
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // The child is gone: controls are refused.
    assert!(!h.send(Control::Resume));
}

/// A test cgroup with a memory limit under our own (v1 or v2).
fn make_limited_cgroup(limit: u64) -> Option<std::path::PathBuf> {
    use provetop_collect::cgroup::{MemCgroup, Version};
    let own = MemCgroup::of_pid(std::process::id())?;
    limited_cgroup(&own.dir, own.version == Version::V1, limit)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oom_kill_is_reported_as_such() {
    let Some(cg) = make_limited_cgroup(64 << 20) else {
        eprintln!(
            "SKIPPED: cannot create a memory cgroup here (needs root and a memory controller)"
        );
        return;
    };
    // The child joins the limited cgroup, stays long enough for the supervisor to see it
    // there, then allocates past the limit.
    let script = oom_script(&cg, 256);
    let (info, recs) = run(spec(sh(&script))).await;
    let _ = std::fs::remove_dir(&cg);
    assert_eq!(info.signal, Some(9), "{info:?}");
    assert!(info.oom_kill, "{info:?}");
    assert!(
        info.reason.starts_with("killed by SIGKILL (OOM kill"),
        "{}",
        info.reason
    );
    assert!(marks(&recs)
        .iter()
        .any(|m| matches!(m, Mark::ChildExited { oom_kill: true, .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pid_watch_follows_restarts() {
    let mut s = spec(sh("sleep 0.2; exit 1"));
    s.restart = Restart::OnFailure { max: 1 };
    let (tx, mut rx) = mpsc::channel(1024);
    let mut h: SupervisorHandle = supervisor::spawn(s, tx).await.unwrap();
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let mut w = h.pid_watch();
    let first = h.pid().unwrap();
    let mut seen = vec![Some(first)];
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if tokio::time::timeout(Duration::from_millis(200), w.changed())
            .await
            .is_ok()
        {
            let v = *w.borrow_and_update();
            if seen.last() != Some(&v) {
                seen.push(v);
            }
            if seen.len() >= 4 {
                break;
            }
        }
    }
    let info = h.wait().await;
    assert_eq!(info.code, Some(1));
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[1], None);
    assert!(seen[2].is_some() && seen[2] != Some(first));
    assert_eq!(seen[3], None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_events_pipe_is_noted_and_monitoring_goes_on() {
    let script =
        r#"printf '{"ts":1,"type":"state","state":"idle"}\n' >&3; exec 3>&-; sleep 2; exit 4"#;
    let (info, recs) = run(spec(sh(script))).await;
    assert_eq!(info.code, Some(4));
    let m = marks(&recs);
    let note = m
        .iter()
        .position(|m| matches!(m, Mark::Note { text } if text.contains("closed its events pipe")))
        .expect("no note about the closed pipe");
    let exited = m
        .iter()
        .position(|m| matches!(m, Mark::ChildExited { .. }))
        .unwrap();
    assert!(note < exited);
    assert_eq!(
        recs.iter()
            .filter(|r| matches!(r.body, RecordBody::Event(_)))
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_exit_is_not_mistaken_for_a_closed_pipe() {
    let (_, recs) = run(spec(sh("exit 0"))).await;
    assert!(!marks(&recs)
        .iter()
        .any(|m| matches!(m, Mark::Note { text } if text.contains("closed its events pipe"))));
}
