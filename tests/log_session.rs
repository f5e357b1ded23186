//! `classify --log`, `replay --log` and `compare --logs`: a session built from a log file
//! alone, on the log's own timestamps. The durations `classify --log` gives are checked
//! against what the prover's own lines say: bellperson's `synthesis time:` and `prover
//! time:`, and each rust-fil-proofs call's `:start`/`:finish` stamps, within 1 ms, on the
//! project's own rust-fil-proofs capture and on the kit's field log where it is present.

use std::path::{Path, PathBuf};
use std::process::Command;

use provetop_testkit::bins::provetop;
use provetop_testkit::fixtures::repo;

fn golden(name: &str) -> PathBuf {
    repo().join("tests/golden/loglines").join(name)
}

/// `provetop ARGS` with `TZ=UTC` (the logs' zone-less stamps then read as written) and a
/// config folder of `config`'s; stdout, asserting success.
#[track_caller]
fn run(args: &[&str], config: Option<&Path>) -> String {
    let mut cmd = Command::new(provetop());
    cmd.args(args).env("TZ", "UTC");
    if let Some(c) = config {
        cmd.env("XDG_CONFIG_HOME", c);
    } else {
        cmd.env("XDG_CONFIG_HOME", "/nonexistent");
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "provetop {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// A row of `classify --log`'s span table.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    phase: String,
    partition: Option<u32>,
    /// `YYYY-MM-DD HH:MM:SS.mmm`.
    start: String,
    secs: Option<f64>,
}

fn rows(report: &str) -> Vec<Row> {
    report
        .lines()
        .skip_while(|l| !l.starts_with("phase spans"))
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Row {
                phase: f[1].to_string(),
                partition: f[2].parse().ok(),
                start: format!("{} {}", f[3], f[4]),
                secs: f[5].parse().ok(),
            }
        })
        .collect()
}

/// Seconds of a Rust `Duration`'s Debug text (`1.607111608s`, `791.5ms`, `12µs`).
fn debug_secs(s: &str) -> f64 {
    for (unit, scale) in [("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9), ("s", 1.0)] {
        if let Some(n) = s.strip_suffix(unit) {
            return n.parse::<f64>().unwrap() * scale;
        }
    }
    panic!("not a duration: {s}")
}

/// Milliseconds of a fil_logger stamp `2026-12-01T20:52:48.339` within its day.
fn stamp_ms(line: &str) -> i64 {
    let t = &line[11..23];
    let h: i64 = t[0..2].parse().unwrap();
    let m: i64 = t[3..5].parse().unwrap();
    let s: i64 = t[6..8].parse().unwrap();
    let ms: i64 = t[9..12].parse().unwrap();
    ((h * 60 + m) * 60 + s) * 1000 + ms
}

/// What the prover's own lines say: (phase, start stamp as the table writes it, seconds),
/// for every rust-fil-proofs call (its `:start` and `:finish` lines, matched by name in
/// order) and bellperson's synthesis and proving (the durations they print).
fn told(log: &str) -> Vec<(String, Option<String>, f64)> {
    let mut out = Vec::new();
    let mut open: Vec<(String, String, i64)> = Vec::new();
    for line in log.lines() {
        let Some((_, msg)) = line.split_once(" > ") else {
            continue;
        };
        let call = |suffix: &str| {
            let name = msg.split(':').next()?;
            msg.strip_prefix(name)?
                .starts_with(suffix)
                .then(|| name.to_string())
        };
        if let Some(name) = call(":start") {
            let start = line[..23].replace('T', " ");
            open.push((name, start, stamp_ms(line)));
        } else if let Some(name) = call(":finish") {
            let i = open.iter().rposition(|o| o.0 == name).expect("a start");
            let (name, start, ms) = open.remove(i);
            out.push((name, Some(start), (stamp_ms(line) - ms) as f64 / 1e3));
        } else if let Some(d) = msg.strip_prefix("synthesis time: ") {
            out.push(("synthesis".into(), None, debug_secs(d.trim())));
        } else if let Some(d) = msg.strip_prefix("prover time: ") {
            out.push(("prove".into(), None, debug_secs(d.trim())));
        }
    }
    out
}

/// `classify --log` of `log` gives every duration its lines tell, within 1 ms.
fn assert_durations_are_the_provers_own(log: &Path) {
    let report = run(&["classify", "--log", log.to_str().unwrap()], None);
    let got = rows(&report);
    let text = std::fs::read_to_string(log).unwrap();
    let want = told(&text);
    assert!(want.len() >= 8, "{want:?}");
    for (phase, start, secs) in &want {
        let hit = got.iter().find(|r| {
            &r.phase == phase
                && start.as_ref().is_none_or(|s| &r.start == s)
                && r.secs.is_some_and(|g| (g - secs).abs() <= 0.001)
        });
        assert!(
            hit.is_some(),
            "{}: no {phase} of {secs} s (started {start:?}) within 1 ms:\n{report}",
            log.display()
        );
    }
    // Synthesis and proving of the C2 lie within seal_commit_phase2.
    let c2 = got
        .iter()
        .find(|r| r.phase == "seal_commit_phase2")
        .unwrap();
    let prove = got.iter().find(|r| r.phase == "prove").unwrap();
    assert!(prove.start >= c2.start && prove.secs < c2.secs, "{report}");
}

#[test]
fn classify_log_gives_the_durations_the_provers_own_lines_tell_within_a_millisecond() {
    assert_durations_are_the_provers_own(&golden("fil-seal-2kib-19.1.0-debug.log"));
}

#[test]
fn classify_log_on_the_kits_field_log_gives_the_provers_own_durations() {
    let field = repo().join("../shared/field-logs/rust-fil-proofs-19.1.0-seal-2kib-cpu.log");
    if !field.is_file() {
        provetop_testkit::system::say_skipped(&format!(
            "classify_log_on_the_kits_field_log: the kit's field log is not here ({}); the \
             project's own capture of the same sealing is checked by the test beside this one",
            field.display()
        ));
        return;
    }
    assert_durations_are_the_provers_own(&field);
}

#[test]
fn every_stamped_grammar_gives_phases_on_its_own_timestamps() {
    for (file, phases) in [
        (
            "bellperson-cuda-env_logger.log",
            &["synthesis", "prove", "msm_h"][..],
        ),
        (
            "cuzk-timeline.log",
            &["synthesis", "gpu_queue", "prove", "cuzk_ntt_h"],
        ),
        ("golog-json.log", &["synthesis", "prove"]),
        ("journald-curio.log", &["synthesis", "prove"]),
        (
            "supraseal-fil_logger-colour.log",
            &["seal_commit_phase2", "synthesis", "prove"],
        ),
        ("tracing-close.log", &["prove", "msm_h"]),
    ] {
        let report = run(&["classify", "--log", golden(file).to_str().unwrap()], None);
        let got = rows(&report);
        for p in phases {
            assert!(
                got.iter().any(|r| r.phase == *p),
                "{file}: no {p}:\n{report}"
            );
        }
        assert!(report.contains("no memory readings"), "{report}");
    }
    // GOLOG JSON carries its zone; journald's `short` its lack of a year: both said.
    let golog = run(
        &[
            "classify",
            "--log",
            golden("golog-json.log").to_str().unwrap(),
        ],
        None,
    );
    assert!(golog.contains("2026-02-25 22:00:34.528"), "{golog}");
    let journald = run(
        &[
            "classify",
            "--log",
            golden("journald-curio.log").to_str().unwrap(),
        ],
        None,
    );
    assert!(
        journald.contains("carry no year (journald short): read as this year"),
        "{journald}"
    );
}

#[test]
fn zone_less_stamps_are_read_as_local_time_and_said_so() {
    let log = golden("supraseal-fil_logger-colour.log");
    let mut cmd = Command::new(provetop());
    cmd.args(["classify", "--log", log.to_str().unwrap()])
        .env("TZ", "CET-1")
        .env("XDG_CONFIG_HOME", "/nonexistent");
    let out = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    assert!(
        out.contains("read as local time of this machine (TZ=CET-1)"),
        "{out}"
    );
    // 23:00:34.527 in UTC+1 is 22:00:34.527 UTC.
    let first = rows(&out).into_iter().next().unwrap();
    assert_eq!(first.start, "2026-02-25 22:00:34.527", "{out}");
}

#[test]
fn the_users_log_rules_read_a_log_file_and_a_log_without_stamps_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("provetop")).unwrap();
    std::fs::write(
        d.join("provetop/config.toml"),
        r#"
[[log_rule]]
name = "zkp-start"
regex = '^zkp: (?P<phase>\w+) begins$'
action = "start"

[[log_rule]]
name = "zkp-end"
regex = '^zkp: (?P<phase>\w+) ends$'
action = "end"
"#,
    )
    .unwrap();
    let log = d.join("zkp.log");
    std::fs::write(
        &log,
        "[2026-03-14T09:00:00.250Z INFO  zkp] zkp: witness begins\n\
         a line of its own without a stamp\n\
         [2026-03-14T09:00:03.750Z INFO  zkp] zkp: witness ends\n\
         [2026-03-14T09:00:03.800Z INFO  zkp] zkp: commit begins\n\
         [2026-03-14T09:00:04.050Z INFO  zkp] zkp: commit ends\n",
    )
    .unwrap();
    let report = run(&["classify", "--log", log.to_str().unwrap()], Some(d));
    let got = rows(&report);
    let secs = |p: &str| got.iter().find(|r| r.phase == p).and_then(|r| r.secs);
    assert_eq!(secs("witness"), Some(3.5), "{report}");
    assert_eq!(secs("commit"), Some(0.25), "{report}");
    // The same with --config naming the file.
    let named = run(
        &[
            "classify",
            "--log",
            log.to_str().unwrap(),
            "--config",
            d.join("provetop/config.toml").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(rows(&named), got);
    // No stamp anywhere: durations would be made up; one line says so.
    let bare = d.join("bare.log");
    std::fs::write(&bare, "synthesis time: 2s\nprover time: 3s\n").unwrap();
    let o = Command::new(provetop())
        .args(["classify", "--log", bare.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        (o.status.code(), err.lines().count()),
        (Some(1), 1),
        "{err}"
    );
    assert!(err.contains("no line carries a timestamp"), "{err}");
}

#[test]
fn compare_accepts_a_log_beside_a_session_and_replay_log_opens_it() {
    let log = golden("fil-seal-2kib-19.1.0-debug.log");
    let other = golden("supraseal-fil_logger-colour.log");
    let out = run(
        &[
            "compare",
            "--logs",
            "--format",
            "json",
            log.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("compare's JSON");
    assert!(v.is_object(), "{out}");
    assert!(out.contains("synthesis") || out.contains("prove"), "{out}");
    // Without --logs a log is what it was: not a session.
    let o = Command::new(provetop())
        .args(["compare", log.to_str().unwrap(), other.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    // replay --log builds the same session for the screen: its bad-argument paths are checked
    // here (the screen itself is the replay screen's, tested in tests/replay_tui.rs).
    let o = Command::new(provetop())
        .args(["replay", "--log", "/nonexistent.log"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        (o.status.code(), err.lines().count()),
        (Some(1), 1),
        "{err}"
    );
    assert!(err.contains("/nonexistent.log"), "{err}");
}

#[test]
fn replay_log_shows_the_logs_phases_and_lines_on_the_screen() {
    use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};
    if !have_tmux("replay_log_shows_the_logs_phases_and_lines_on_the_screen") {
        return;
    }
    let log = golden("fil-seal-2kib-19.1.0-debug.log");
    let t = Tmux::start(
        "replay-log",
        100,
        30,
        &format!(
            "env TZ=UTC XDG_CONFIG_HOME=/nonexistent {} replay --log {} --speed 64; sleep 600",
            sh_quote(&provetop().display().to_string()),
            sh_quote(&log.display().to_string())
        ),
    );
    // At 64× the 83 s of the log play in under 2 s: its end shows every phase row.
    let s = t.wait_for("the log's end", std::time::Duration::from_secs(20), |s| {
        s.contains("end") && s.contains("synth") && s.contains("prove")
    });
    assert!(s.contains("proofs 1"), "{s}");
    assert!(s.contains("file"), "the log's lines in the log pane: {s}");
    t.keys(&["q"]);
}
