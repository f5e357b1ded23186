//! The alert hook end to end, through the real `provetop` binary: a value that flips every
//! sample does not spawn a hook per flip (rate limit, one at a time per rule, the rest
//! counted), a child's text reaches the hook bounded and inert, hooks still running when
//! provetop exits are killed, and a hook that cannot run is refused at start.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use provetop_testkit::faults::*;
use provetop_testkit::procs::{alive, wait_until};

/// An executable `sh` script `name` in `dir` with `body`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A headless run of `sh -c CHILD` recording to DIR/s.ptop under the rule `alert`, whose
/// changes run the `sh` hook `body` with `arg`: the session's path and provetop's stderr.
fn run_with_hook(
    dir: &Path,
    body: &str,
    arg: &Path,
    alert: &str,
    child: &str,
) -> (PathBuf, String) {
    let hook = script(dir, "hook", body);
    let s = dir.join("s.ptop");
    let on_alert = format!("{} {}", hook.display(), arg.display());
    let out = headless(
        dir,
        &s,
        &[
            "--alert",
            alert,
            "--on-alert",
            &on_alert,
            "--",
            "sh",
            "-c",
            child,
        ],
    );
    (s, stderr(&out))
}

#[test]
fn a_value_flipping_every_sample_runs_the_hook_a_handful_of_times_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hook.log");
    // Each run says when it starts and ends, and takes a while.
    let hook = r#"echo "start $PROVETOP_ALERT_STATE" >> "$1"; sleep 0.5; echo end >> "$1""#;
    // A proof in flight and an event every 0.2 s: `event_age > 0.1s` fires at a sample
    // between two events and clears at the next event, 5 times a second, for 4 s.
    let child = r#"printf '{"ts":1,"type":"proof_started","proof_id":1,"mode":"single","sectors":1,"partitions":1,"constraints":1}\n' >&3
i=0; while [ $i -lt 20 ]; do printf '{"ts":2,"type":"log","level":"info","target":"t","message":"m"}\n' >&3; sleep 0.2; i=$((i+1)); done"#;
    let (s, err) = run_with_hook(dir.path(), hook, &log, "event_age > 0.1s", child);
    let l = session(&s);
    let changes = alerts(&l)
        .iter()
        .filter(|(_, a)| a.metric == "event_age")
        .count();
    assert!(
        changes >= 10,
        "the value did not flip ({changes} alert changes): {err}"
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let starts = text.lines().filter(|l| l.starts_with("start")).count();
    assert!(
        (1..=4).contains(&starts),
        "{starts} hook runs for {changes} alert changes:\n{text}"
    );
    // Never two at once: every start is followed by its end before the next start.
    let mut open = false;
    for line in text.lines() {
        if line.starts_with("start") {
            assert!(!open, "two hooks of one rule ran at once:\n{text}");
            open = true;
        } else {
            open = false;
        }
    }
    // The hook was last told the state the rule ended in.
    let last_state = alerts(&l)
        .iter()
        .rfind(|(_, a)| a.metric == "event_age")
        .map(|(_, a)| a.state)
        .unwrap();
    let told = text.lines().rfind(|l| l.starts_with("start")).unwrap();
    let want = match last_state {
        provetop_shared::AlertState::Firing => "start firing",
        provetop_shared::AlertState::Cleared => "start cleared",
    };
    assert_eq!(told, want, "{text}");
    // What was not delivered is counted, on stderr and in the session.
    let w = record_warnings(&l.records);
    assert!(
        w.iter().any(|t| t.contains("alert changes not delivered")),
        "no suppressed count in {w:?}"
    );
    assert!(err.contains("alert changes not delivered"), "{err}");
}

#[test]
fn a_huge_phase_name_with_escape_sequences_reaches_the_hook_cut_and_inert() {
    let dir = tempfile::tempdir().unwrap();
    let envfile = dir.path().join("hook.env");
    let hook = r#"env > "$1.part"; mv "$1.part" "$1.$PROVETOP_ALERT_STATE""#;
    // A 200 KiB phase name (over the kernel's 128 KiB per variable) holding a clear-screen
    // and an OSC 52 clipboard write.
    // (Made by the child itself: no command line may hold it either.)
    let child = r#"x=$(head -c 204800 /dev/zero | tr '\0' x)
printf '{"ts":1,"type":"phase_started","proof_id":1,"phase":"evil\u001b[2J\u001b]52;c;cHduZWQ=\u0007%s","partition":null}\n' "$x" >&3; sleep 2"#;
    let (_, err) = run_with_hook(dir.path(), hook, &envfile, "phase_duration > 0.3s", child);
    let envfile = dir.path().join("hook.env.firing");
    assert!(
        wait_until(Duration::from_secs(10), || envfile.exists()),
        "the hook never ran: {}",
        &err[..err.len().min(2000)]
    );
    let env = std::fs::read(&envfile).unwrap();
    assert!(!env.contains(&0x1b), "an escape reached the hook");
    let env = String::from_utf8(env).unwrap();
    let msg = env
        .lines()
        .find_map(|l| l.strip_prefix("PROVETOP_ALERT_MESSAGE="))
        .expect("no message");
    assert!(msg.len() <= 4096, "message of {} bytes", msg.len());
    assert!(
        msg.starts_with("phase_duration (evilxxx"),
        "{}",
        &msg[..100]
    );
    assert!(msg.ends_with("…[cut]"), "{}", &msg[msg.len() - 50..]);
    assert!(
        !msg.contains("52;c;"),
        "the OSC 52 write reached the hook: {}",
        &msg[..100]
    );
}

#[test]
fn a_hook_still_running_when_provetop_exits_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("hook.pid");
    // The hook leaves a grandchild of its own, which sleeps a minute.
    let hook = r#"sleep 60 & echo "$$ $!" > "$1.part"; mv "$1.part" "$1"; wait"#;
    let (s, err) = run_with_hook(dir.path(), hook, &pidfile, "rss > 0", "sleep 1.5");
    assert!(err.contains("session recorded to"), "{err}");
    let pids: Vec<u32> = std::fs::read_to_string(&pidfile)
        .unwrap_or_else(|e| panic!("the hook never ran ({e}): {err}"))
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(
        wait_until(Duration::from_secs(5), || pids.iter().all(|p| !alive(*p))),
        "hook processes {pids:?} outlived provetop"
    );
    assert!(
        record_warnings(&session(&s).records)
            .iter()
            .any(|t| t.contains("still running") && t.contains("killed")),
        "{err}"
    );
}

#[test]
fn a_hook_that_cannot_run_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.ptop");
    let plain = dir.path().join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    for (hook, says) in [
        ("no-such-hook-anywhere".to_string(), "not found on PATH"),
        ("/nonexistent/hook".to_string(), "no such file"),
        (plain.display().to_string(), "not executable"),
        (dir.path().display().to_string(), "not a file"),
    ] {
        let out = headless(dir.path(), &s, &["--on-alert", &hook, "--", "true"]);
        let err = stderr(&out);
        assert_ne!(out.status.code(), Some(0), "{hook}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{hook}: not one line: {err}");
        assert!(
            err.contains("--on-alert") && err.contains(says),
            "{hook}: {err}"
        );
        assert!(!s.exists(), "a session was recorded for a refused hook");
    }
    // The same from the config file.
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "on_alert = \"/nonexistent/hook -x\"\n").unwrap();
    let out = headless(
        dir.path(),
        &s,
        &["--config", cfg.to_str().unwrap(), "--", "true"],
    );
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("on_alert") && err.contains("no such file"),
        "{err}"
    );
    // A hook found on PATH is fine.
    let out = headless(dir.path(), &s, &["--on-alert", "true", "--", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// `--watchdog 1s` over a scripted child that says `state STATE` and then stays silent for
/// 3 s: whether the watchdog alert fired.
fn watchdog_fires_for(state: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.ptop");
    let child = format!(
        r#"printf '{{"ts":1,"type":"hello","protocol":"1.0","prover_version":"0","pid":1,"backend":"cpu","gpus":[],"config":{{"partitions":1,"constraints":1,"circuit":"c","mode":"single","threads":1}}}}\n{{"ts":2,"type":"state","state":"{state}"}}\n' >&3; sleep 3"#
    );
    let out = headless(
        dir.path(),
        &s,
        &["--watchdog", "1s", "--", "sh", "-c", &child],
    );
    let err = stderr(&out);
    assert!(err.contains("session recorded to"), "{err}");
    let l = session(&s);
    assert!(
        l.records.iter().any(|r| matches!(
            &r.body,
            provetop_shared::RecordBody::Event(provetop_shared::Event::State { .. })
        )),
        "the state event was not recorded: {err}"
    );
    alerts(&l).iter().any(|(_, a)| a.metric == "event_age")
}

#[test]
fn the_watchdog_ignores_an_idle_or_paused_prover_and_fires_for_a_silent_proving_one() {
    assert!(
        !watchdog_fires_for("idle"),
        "an idle prover was called hung"
    );
    assert!(
        !watchdog_fires_for("paused"),
        "a paused prover was called hung"
    );
    assert!(
        watchdog_fires_for("proving"),
        "a silent proving prover was not"
    );
}
