//! Alert rules, the engine over a record stream, the config file and the hook.

use std::time::{Duration, Instant};

use provetop::settings::file::{load_config, parse_config};
use provetop_collect::hook::spawn_hook;
use provetop_shared::alerts::{default_rules, AlertEngine, Rule};
use provetop_shared::protocol::{Event, Phase};
use provetop_shared::units::GIB;
use provetop_shared::{Alert, AlertLevel, AlertState, Mark, Record, RecordBody, Sample};

const S: u64 = 1_000_000_000;

fn sample(t: u64, s: Sample) -> Record {
    Record::new(t, RecordBody::Sample(s))
}

fn rss(t: u64, rss: u64) -> Record {
    sample(
        t,
        Sample {
            rss,
            mem_total: Some(64 * GIB),
            ..Sample::default()
        },
    )
}

fn rules(r: &[&str]) -> Vec<Rule> {
    r.iter().map(|s| s.parse().unwrap()).collect()
}

/// Feed records sampled every 100 ms from `from` to `to` (seconds) with a constant RSS.
fn feed(e: &mut AlertEngine, from: f64, to: f64, value: u64) -> Vec<(f64, Alert)> {
    let mut out = Vec::new();
    let mut t = from;
    while t <= to + 1e-9 {
        for a in e.observe(&rss((t * 1e9) as u64, value)) {
            out.push((t, a));
        }
        t += 0.1;
    }
    out
}

#[test]
fn fires_only_after_the_duration_then_clears() {
    let mut e = AlertEngine::new(rules(&["rss > 10GiB for 5s"]));
    assert!(feed(&mut e, 0.0, 10.0, 5 * GIB).is_empty());
    // Above from t=10: fires at t=15, not before.
    let a = feed(&mut e, 10.0, 20.0, 12 * GIB);
    assert_eq!(a.len(), 1, "{a:?}");
    assert!((a[0].0 - 15.0).abs() < 0.05, "fired at {}", a[0].0);
    assert_eq!(a[0].1.state, AlertState::Firing);
    assert_eq!(a[0].1.metric, "rss");
    assert_eq!(a[0].1.rule, "rss > 10GiB for 5s");
    assert_eq!(a[0].1.value, (12 * GIB) as f64);
    assert_eq!(a[0].1.threshold, (10 * GIB) as f64);
    assert_eq!(a[0].1.message, "rss 12.0 GiB > 10.0 GiB for 5.0s");
    let c = feed(&mut e, 20.1, 21.0, 3 * GIB);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].1.state, AlertState::Cleared);
    assert!((c[0].0 - 20.1).abs() < 0.05);
}

#[test]
fn a_dip_restarts_the_hold() {
    let mut e = AlertEngine::new(rules(&["rss > 10GiB for 5s"]));
    assert!(feed(&mut e, 0.0, 4.0, 12 * GIB).is_empty());
    assert!(feed(&mut e, 4.1, 4.1, GIB).is_empty());
    assert!(feed(&mut e, 4.2, 9.0, 12 * GIB).is_empty());
    assert_eq!(feed(&mut e, 9.1, 9.3, 12 * GIB).len(), 1);
}

#[test]
fn levels_and_each_memory_metric() {
    let mut e = AlertEngine::new(rules(&[
        "info: anon > 1GiB",
        "warn: shmem > 1GiB",
        "crit: peak > 1GiB",
        "file > 1GiB",
        "gpu >= 1GiB",
        "pinned > 1GiB",
        "crit: mem_available < 1GiB",
    ]));
    let s = Sample {
        rss: 0,
        anon: Some(2 * GIB),
        shmem: Some(2 * GIB),
        peak: Some(2 * GIB),
        file: Some(2 * GIB),
        gpu_used: Some(GIB),
        pinned: Some(2 * GIB),
        mem_available: Some(GIB / 2),
        ..Sample::default()
    };
    let a = e.observe(&sample(S, s));
    let got: Vec<(&str, AlertLevel)> = a.iter().map(|a| (a.metric.as_str(), a.level)).collect();
    assert_eq!(
        got,
        vec![
            ("anon", AlertLevel::Info),
            ("shmem", AlertLevel::Warn),
            ("peak", AlertLevel::Crit),
            ("file", AlertLevel::Warn),
            ("gpu", AlertLevel::Warn),
            ("pinned", AlertLevel::Warn),
            ("mem_available", AlertLevel::Crit),
        ]
    );
    // A metric that is not measured (no GPU, no smaps yet) never fires, and clears.
    let a = e.observe(&sample(2 * S, Sample::default()));
    assert_eq!(a.len(), 7);
    assert!(a.iter().all(|a| a.state == AlertState::Cleared));
}

#[test]
fn pinned_counts_what_the_prover_reports() {
    let mut e = AlertEngine::new(rules(&["pinned > 1GiB"]));
    let report = Record::new(
        S,
        RecordBody::Event(Event::MemoryReport {
            pinned_bytes: 3 * GIB,
            gpu_bytes: 0,
            srs_bytes: 0,
            gpu_live_bytes: None,
            gpu_reserved_bytes: None,
        }),
    );
    assert!(e.observe(&report).is_empty());
    let a = e.observe(&sample(2 * S, Sample::default()));
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].value, (3 * GIB) as f64);
}

fn phase(t: u64, started: bool, ph: Phase, partition: Option<u32>) -> Record {
    let ev = if started {
        Event::PhaseStarted {
            proof_id: 1,
            phase: ph,
            partition,
        }
    } else {
        Event::PhaseEnded {
            proof_id: 1,
            phase: ph,
            partition,
            duration_s: 0.0,
        }
    };
    Record::new(t, RecordBody::Event(ev))
}

#[test]
fn phase_duration_measures_the_running_phase() {
    let mut e = AlertEngine::new(rules(&["warn: phase_duration > 30s"]));
    assert!(e
        .observe(&phase(10 * S, true, Phase::Synthesis, Some(3)))
        .is_empty());
    // Samples are the clock.
    assert!(feed(&mut e, 11.0, 40.0, GIB).is_empty());
    let a = feed(&mut e, 40.1, 41.0, GIB);
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0].1.metric, "phase_duration");
    assert!(
        a[0].1.message.contains("synthesis (partition 3)"),
        "{}",
        a[0].1.message
    );
    assert!(a[0].1.value > 30.0 && a[0].1.value < 30.2);
    let c = e.observe(&phase(42 * S, false, Phase::Synthesis, Some(3)));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].state, AlertState::Cleared);
    // A new phase starts from zero.
    assert!(e
        .observe(&phase(43 * S, true, Phase::MsmH, None))
        .is_empty());
    assert!(feed(&mut e, 44.0, 60.0, GIB).is_empty());
    // The child died mid-phase: nothing is running any more.
    let a = feed(&mut e, 60.1, 80.0, GIB);
    assert_eq!(a.len(), 1);
    let exit = Record::new(
        81 * S,
        RecordBody::Mark(Mark::ChildExited {
            pid: 1,
            code: None,
            signal: Some(9),
            oom_kill: false,
            reason: "killed by SIGKILL".into(),
        }),
    );
    let c = e.observe(&exit);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].state, AlertState::Cleared);
}

fn in_cgroup(t: u64, rss: u64, max: u64, avail: u64) -> Record {
    sample(
        t,
        Sample {
            rss,
            mem_total: Some(64 * GIB),
            mem_available: Some(avail),
            cgroup_current: Some(rss),
            cgroup_max: Some(max),
            ..Sample::default()
        },
    )
}

#[test]
fn the_default_rule_is_90_percent_of_what_the_tree_can_reach_before_the_binding_limit() {
    let mut e = AlertEngine::new(default_rules());
    // A 20 GiB cgroup on a host with 50 GiB available: the cgroup binds.
    assert!(e
        .observe(&in_cgroup(S, 18 * GIB, 20 * GIB, 50 * GIB))
        .is_empty());
    let a = e.observe(&in_cgroup(2 * S, 18 * GIB + 1, 20 * GIB, 50 * GIB));
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0].threshold, (18 * GIB) as f64);
    assert!(
        a[0].message.contains("the cgroup's limit"),
        "{}",
        a[0].message
    );
    // The host runs short: MemAvailable binds, read sample by sample.
    let mut e = AlertEngine::new(default_rules());
    let a = e.observe(&in_cgroup(S, 10 * GIB, 100 * GIB, GIB));
    assert_eq!(a.len(), 1, "{a:?}");
    assert!(
        a[0].message.contains("host MemAvailable"),
        "{}",
        a[0].message
    );
    // The host balloons (MemTotal and MemAvailable grow): the same RSS is well inside.
    let c = e.observe(&in_cgroup(2 * S, 10 * GIB, 100 * GIB, 200 * GIB));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].state, AlertState::Cleared);
}

#[test]
fn a_watched_process_that_ends_clears_its_memory_alerts() {
    let mut e = AlertEngine::new(default_rules());
    let a = e.observe(&in_cgroup(S, 19 * GIB, 20 * GIB, 50 * GIB));
    assert_eq!(a.len(), 1);
    let gone = Record::new(
        2 * S,
        RecordBody::Mark(Mark::ChildExited {
            pid: 42,
            code: None,
            signal: Some(9),
            oom_kill: true,
            reason: "OOM-killed".into(),
        }),
    );
    let c = e.observe(&gone);
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].state, AlertState::Cleared);
    assert!(
        c[0].message.contains("no longer measured"),
        "{}",
        c[0].message
    );
}

#[test]
fn a_pressure_rule_fires_on_kernel_records() {
    use provetop_shared::{Kernel, Psi, PsiLine, PsiResource};
    let mut e = AlertEngine::new(rules(&["psi_memory_full > 10%"]));
    let k = |t: u64, full: f64| {
        Record::new(
            t,
            RecordBody::Kernel(Box::new(Kernel {
                psi_host: Some(Psi {
                    memory: Some(PsiResource {
                        some: PsiLine {
                            avg10: full * 2.0,
                            rate: None,
                        },
                        full: Some(PsiLine {
                            avg10: full,
                            rate: None,
                        }),
                    }),
                    ..Psi::default()
                }),
                ..Kernel::default()
            })),
        )
    };
    assert!(e.observe(&k(S, 5.0)).is_empty());
    let a = e.observe(&k(2 * S, 12.5));
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].value, 12.5);
    assert_eq!(a[0].state, AlertState::Firing);
}

#[test]
fn config_file_parses_every_key() {
    let cfg = parse_config(
        r#"
hz = 10
gpu_hz = 1
smaps_duty = 0.005
rules = ["rss > 180GiB for 5s", "crit: shmem > 40GiB"]
thresholds = ["1GiB", "10GiB", "50GiB", 193273528320]
on_alert = ["/usr/bin/logger", "-t", "provetop"]
default_rule = false
"#,
    )
    .unwrap();
    assert_eq!(cfg.hz, Some(10.0));
    assert_eq!(cfg.gpu_hz, Some(1.0));
    assert_eq!(cfg.smaps_duty, Some(0.005));
    assert_eq!(cfg.rules.len(), 2);
    assert_eq!(cfg.rules[1].level, AlertLevel::Crit);
    assert_eq!(cfg.thresholds, vec![GIB, 10 * GIB, 50 * GIB, 180 * GIB]);
    assert_eq!(
        cfg.on_alert.as_deref().unwrap(),
        ["/usr/bin/logger", "-t", "provetop"]
    );
    assert_eq!(cfg.default_rule, Some(false));
    // A single string is split on whitespace, never handed to a shell.
    let cfg = parse_config("on_alert = \"notify --urgent\"").unwrap();
    assert_eq!(cfg.on_alert.unwrap(), ["notify", "--urgent"]);
    assert_eq!(parse_config("").unwrap().rules.len(), 0);
}

#[test]
fn config_errors_are_one_line_and_name_the_culprit() {
    let e = parse_config("rules = [\"rss > 1GiB\", \"rss >> 2GiB\"]").unwrap_err();
    assert!(e.contains("rules[1]") && e.contains("\">>\""), "{e}");
    let e = parse_config("hz = 20\nrulez = []\n").unwrap_err();
    assert!(e.contains("line 2") && e.contains("rulez"), "{e}");
    let e = parse_config("hz = -3").unwrap_err();
    assert!(e.contains("hz = -3"), "{e}");
    let e = parse_config("thresholds = [\"10 GiBs\"]").unwrap_err();
    assert!(e.contains("thresholds[0]") && e.contains("GiBs"), "{e}");
    let e = parse_config("on_alert = []").unwrap_err();
    assert!(e.contains("on_alert"), "{e}");
    let e = parse_config("hz = ").unwrap_err();
    assert!(e.starts_with("line 1"), "{e}");
    for e in [
        parse_config("rules = [\"rss > 1GiB\", \"rss >> 2GiB\"]").unwrap_err(),
        parse_config("hz = 20\nrulez = []\n").unwrap_err(),
    ] {
        assert!(!e.contains('\n'), "multi-line error: {e}");
    }
}

#[test]
fn config_file_locations() {
    let dir = tempfile::tempdir().unwrap();
    // --config must exist.
    let missing = dir.path().join("nope.toml");
    let e = load_config(Some(&missing)).unwrap_err().to_string();
    assert!(e.contains("nope.toml"), "{e}");
    // The XDG default is optional…
    std::env::set_var("XDG_CONFIG_HOME", dir.path());
    assert_eq!(load_config(None).unwrap().source, None);
    // …and read when present; errors carry the path.
    std::fs::create_dir(dir.path().join("provetop")).unwrap();
    let p = dir.path().join("provetop/config.toml");
    std::fs::write(&p, "rules = [\"warn: phase_duration > 30m\"]\n").unwrap();
    let c = load_config(None).unwrap();
    assert_eq!(c.source.as_deref(), Some(p.as_path()));
    assert_eq!(c.rules[0].hold_s, 0.0);
    std::fs::write(&p, "rules = [\"bogus > 1\"]\n").unwrap();
    let e = load_config(None).unwrap_err().to_string();
    assert!(e.contains("config.toml") && e.contains("\"bogus\""), "{e}");
}

fn wait_for_file(p: &std::path::Path) -> String {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(p) {
            if s.ends_with("END\n") {
                return s;
            }
        }
        assert!(Instant::now() < end, "hook never wrote {}", p.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hook_gets_the_details_in_env_vars_without_a_shell_interpolating_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hook.env");
    let pwned = dir.path().join("pwned");
    // The hook program is `env`'s output redirected by a fixed script; the alert's text only
    // ever travels in the environment, so the `$(…)` below must stay text.
    let argv: Vec<String> = vec![
        "sh".into(),
        "-c".into(),
        "env | grep '^PROVETOP_ALERT_' | sort > \"$0\"; echo END >> \"$0\"".into(),
        out.display().to_string(),
    ];
    let evil = format!("$(touch {})", pwned.display());
    let alert = Alert {
        rule: "crit: rss > 1GiB for 5s".into(),
        level: AlertLevel::Crit,
        state: AlertState::Firing,
        metric: "rss".into(),
        value: 2.0 * GIB as f64,
        threshold: GIB as f64,
        message: format!("phase {evil} is slow; rss `id` 2.0 GiB"),
    };
    let t0 = Instant::now();
    spawn_hook(&argv, &alert, provetop_shared::clock::mono_ns()).unwrap();
    assert!(
        t0.elapsed() < Duration::from_millis(500),
        "spawn_hook blocked"
    );
    let env = wait_for_file(&out);
    let get = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("{k} missing in {env}"))
            .to_string()
    };
    assert_eq!(get("PROVETOP_ALERT_RULE"), "crit: rss > 1GiB for 5s");
    assert_eq!(get("PROVETOP_ALERT_LEVEL"), "crit");
    assert_eq!(get("PROVETOP_ALERT_STATE"), "firing");
    assert_eq!(get("PROVETOP_ALERT_METRIC"), "rss");
    assert_eq!(get("PROVETOP_ALERT_VALUE"), "2147483648");
    assert_eq!(get("PROVETOP_ALERT_THRESHOLD"), "1073741824");
    assert_eq!(get("PROVETOP_ALERT_MESSAGE"), alert.message);
    let time: f64 = get("PROVETOP_ALERT_TIME").parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((now - time).abs() < 30.0, "time {time} vs now {now}");
    assert!(!pwned.exists(), "the message was interpolated by a shell");
}

#[test]
fn hook_start_failures_are_reported_and_slow_hooks_do_not_block() {
    let alert = Alert {
        rule: "rss > 1".into(),
        level: AlertLevel::Warn,
        state: AlertState::Cleared,
        metric: "rss".into(),
        value: 0.0,
        threshold: 1.0,
        message: "cleared".into(),
    };
    let e = spawn_hook(&["/nonexistent/hook".into()], &alert, 0).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert!(spawn_hook(&[], &alert, 0).is_err());
    let t0 = Instant::now();
    spawn_hook(&["sleep".into(), "5".into()], &alert, 0).unwrap();
    assert!(t0.elapsed() < Duration::from_millis(500));
}

#[test]
fn event_age_is_a_watchdog_for_a_silent_prover() {
    let mut e = AlertEngine::new(rules(&["crit: event_age > 60s"]));
    // Nothing heard yet: a child that never speaks the protocol is not "hung".
    assert!(feed(&mut e, 0.0, 100.0, GIB).is_empty());
    let ev = |t: u64| {
        Record::new(
            t,
            RecordBody::Event(Event::State {
                state: provetop_shared::protocol::ProverState::Proving,
            }),
        )
    };
    assert!(e.observe(&ev(100 * S)).is_empty());
    assert!(feed(&mut e, 100.1, 160.0, GIB).is_empty());
    let a = feed(&mut e, 160.1, 161.0, GIB);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].1.metric, "event_age");
    assert_eq!(a[0].1.level, AlertLevel::Crit);
    // It speaks again: cleared.
    let c = e.observe(&ev(170 * S));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].state, AlertState::Cleared);
}
