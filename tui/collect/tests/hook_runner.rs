//! The alert hook runner's limits with a real hook script: per rule one run at a time and
//! one start per interval (the rest coalesced and counted), and a bound on hooks running at
//! once over all rules.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use provetop_collect::hook::{HookLimits, HookRunner};
use provetop_shared::{Alert, AlertLevel, AlertState};

fn alert(rule: &str, state: AlertState) -> Alert {
    Alert {
        rule: rule.into(),
        level: AlertLevel::Warn,
        state,
        metric: "rss".into(),
        value: 1.0,
        threshold: 0.0,
        message: "m".into(),
    }
}

/// A hook that logs "start RULE" and "end RULE" around a `secs` sleep.
fn hook(dir: &std::path::Path, secs: &str) -> (Vec<String>, std::path::PathBuf) {
    let log = dir.join("log");
    let p = dir.join("hook");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\necho \"start $PROVETOP_ALERT_RULE\" >> \"$1\"\nsleep {secs}\necho \"end $PROVETOP_ALERT_RULE\" >> \"$1\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    (
        vec![p.display().to_string(), log.display().to_string()],
        log,
    )
}

/// Most hooks running at once, from the log.
fn most_at_once(log: &str) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for l in log.lines() {
        if l.starts_with("start") {
            now += 1;
            most = most.max(now);
        } else {
            now = now.saturating_sub(1);
        }
    }
    most
}

#[test]
fn a_rule_flipping_every_sample_runs_its_hook_a_handful_of_times_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (argv, log) = hook(dir.path(), "0.3");
    let r = HookRunner::new(
        argv,
        HookLimits {
            min_interval: Duration::from_millis(700),
            max_running: 4,
            timeout: Duration::from_secs(60),
        },
    );
    // 20 Hz for 3 s: 60 changes.
    for i in 0..60 {
        let state = if i % 2 == 0 {
            AlertState::Firing
        } else {
            AlertState::Cleared
        };
        r.deliver(&alert("rss > 1", state), 0);
        assert!(r.running() <= 1, "two hooks of one rule at once");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(r.shutdown(Duration::from_secs(10)), 0);
    let text = std::fs::read_to_string(&log).unwrap();
    let runs = text.lines().filter(|l| l.starts_with("start")).count();
    assert!((2..=7).contains(&runs), "{runs} runs:\n{text}");
    assert_eq!(most_at_once(&text), 1, "{text}");
    assert_eq!(r.take_suppressed() as usize, 60 - runs);
}

#[test]
fn at_most_max_running_hooks_run_at_once_over_all_rules() {
    let dir = tempfile::tempdir().unwrap();
    let (argv, log) = hook(dir.path(), "0.4");
    let r = HookRunner::new(
        argv,
        HookLimits {
            min_interval: Duration::from_secs(5),
            max_running: 2,
            timeout: Duration::from_secs(60),
        },
    );
    for i in 0..8 {
        r.deliver(&alert(&format!("rss > {i}"), AlertState::Firing), 0);
        assert!(r.running() <= 2);
    }
    assert_eq!(r.shutdown(Duration::from_secs(20)), 0);
    let text = std::fs::read_to_string(&log).unwrap();
    // Every rule's change was delivered, two at a time.
    assert_eq!(
        text.lines().filter(|l| l.starts_with("start")).count(),
        8,
        "{text}"
    );
    assert_eq!(most_at_once(&text), 2, "{text}");
    assert_eq!(r.take_suppressed(), 0);
}

#[test]
fn a_hook_running_past_shutdown_is_killed_with_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let p = dir.path().join("hook");
    std::fs::write(&p, "#!/bin/sh\nsleep 60 &\necho \"$$ $!\" > \"$1\"\nwait\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = HookRunner::new(
        vec![p.display().to_string(), pids.display().to_string()],
        HookLimits::default(),
    );
    r.deliver(&alert("rss > 1", AlertState::Firing), 0);
    assert!(provetop_testkit::procs::wait_until(
        Duration::from_secs(10),
        || { std::fs::read_to_string(&pids).is_ok_and(|s| s.split_whitespace().count() == 2) }
    ));
    assert_eq!(r.shutdown(Duration::from_millis(300)), 1);
    let pids: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(
        provetop_testkit::procs::wait_until(Duration::from_secs(5), || pids
            .iter()
            .all(|p| !provetop_testkit::procs::alive(*p))),
        "{pids:?} outlived the shutdown"
    );
}
