//! Phases read from a child's log lines, where provers no one here wrote break the easy
//! assumptions: durations reaching back before the child started, calls that fail without
//! a `:finish`, phases open when the child exits, spans known only by their end, calls that
//! name no sector, proofs counted from their boundaries, and many user rules.
//!
//! The children are `sh` scripts printing lines in the provers' own formats (fil_logger's
//! stamp, rust-fil-proofs' and bellperson's messages), through the real `provetop`.

use std::path::Path;

use provetop::model::Model;
use provetop_collect::loglines::Engine;
use provetop_shared::classify::Thresholds;
use provetop_shared::session::Loaded;
use provetop_shared::{Event, Mark, Record, RecordBody};
use provetop_testkit::bins::run_provetop;
use provetop_testkit::faults::{headless, record_warnings, session, stderr};

/// A shell function `l LEVEL TARGET MESSAGE` printing a fil_logger line (local time,
/// milliseconds) on stderr, as lotus and curio print rust-fil-proofs' and bellperson's.
const FIL_LOGGER: &str =
    r#"l() { printf '%s %s %s > %s\n' "$(date +%Y-%m-%dT%H:%M:%S.%3N)" "$1" "$2" "$3" >&2; }"#;
const API: &str = "filecoin_proofs::api::window_post";
const BP: &str = "bellperson::groth16::prover::native";

/// The session's records through the reducer, as the screen and `ls` see them.
fn model_of(l: &Loaded) -> Model {
    let mut m = Model::new(Thresholds::default());
    for r in &l.records {
        m.apply(r);
    }
    m
}

/// The time of the session's `ChildStarted` mark.
fn child_start(l: &Loaded) -> u64 {
    l.records
        .iter()
        .find_map(|r| match &r.body {
            RecordBody::Mark(Mark::ChildStarted { .. }) => Some(r.t),
            _ => None,
        })
        .expect("a ChildStarted mark")
}

fn config(dir: &Path, text: &str) -> String {
    let cfg = dir.join("config.toml");
    std::fs::write(&cfg, text).unwrap();
    cfg.display().to_string()
}

/// A rule reading `step NAME took DURATION` as the end of phase NAME.
const TOOK_RULE: &str = "[[log_rule]]\nname = \"took\"\n\
     regex = '^step (?P<phase>\\w+) took (?P<duration>\\S+)$'\naction = \"end\"\n";

#[test]
fn a_duration_reaching_before_the_child_started_starts_its_span_at_the_childs_start_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TOOK_RULE);
    let s = dir.path().join("clamp.ptop");
    // An hour by a user rule, and a tracing span that closed after 1000 s: both began long
    // before this 1-second child did.
    let script = "echo 'step witness took 3600s'; \
         echo '2026-03-14T17:52:44.123456Z  INFO prove{id=3}: my_prover: close time.busy=1000s time.idle=1s'; \
         sleep 0.5";
    let out = headless(
        dir.path(),
        &s,
        &["--config", &cfg, "--", "sh", "-c", script],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let l = session(&s);
    let start = child_start(&l);
    let derived: Vec<&Record> = l
        .records
        .iter()
        .filter(|r| matches!(r.body, RecordBody::Derived(_)))
        .collect();
    assert!(derived.len() >= 4, "{derived:#?}");
    for r in &derived {
        assert!(
            r.t >= start,
            "{} ns before the child started: {r:?}",
            start - r.t
        );
    }
    let said: Vec<&str> = record_warnings(&l.records)
        .into_iter()
        .filter(|w| w.contains("before the child started"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {said:?}");
    // The session is as long as the child ran, not an hour.
    let m = model_of(&l);
    let first = m.first_t().unwrap();
    assert!(m.now() - first < 30_000_000_000, "{}", m.now() - first);
}

#[test]
fn a_failed_fil_proofs_call_ends_at_its_error_line_its_next_start_or_the_childs_exit_failed() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("fail.ptop");
    let script = format!(
        "{FIL_LOGGER}
l INFO {API} 'generate_window_post:start'; sleep 0.3
l ERROR filcrypto::proofs::api 'generate_window_post failed: faulty sectors'; sleep 0.4
l INFO {API} 'generate_window_post:start'; sleep 0.3
l INFO {API} 'generate_window_post:start'; sleep 0.3
l INFO {API} 'generate_window_post:finish'; sleep 0.4
l INFO {API} 'generate_window_post:start'; sleep 0.3
exit 3"
    );
    let out = headless(dir.path(), &s, &["--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let m = model_of(&session(&s));
    let calls: Vec<_> = m
        .spans
        .closed
        .iter()
        .filter(|x| x.phase.as_str() == "generate_window_post")
        .collect();
    assert_eq!(calls.len(), 4, "{calls:#?}");
    assert!(m.spans.open.is_empty(), "{:?}", m.spans.open);
    let secs: Vec<f64> = calls
        .iter()
        .map(|x| (x.end.unwrap() - x.start) as f64 / 1e9)
        .collect();
    // Each call as long as it ran (0.3 s each, the shell's own time aside), never across
    // the pause after it, however it ended.
    for s in &secs {
        assert!((0.2..0.39).contains(s), "{secs:?}");
    }
    let failed: Vec<bool> = calls.iter().map(|x| x.failed).collect();
    assert_eq!(failed, [true, true, false, true], "{calls:#?}");
    // Four proofs: the one that finished, three that failed.
    assert_eq!(
        (m.prover.proofs_done, m.prover.proofs_failed),
        (1, 3),
        "{:?}",
        m.prover
    );
}

#[test]
fn phases_open_when_the_child_exits_end_there_and_the_header_names_none() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "[[log_rule]]\nname = \"begins\"\nregex = '^zkp: (?P<phase>\\w+) begins$'\naction = \"start\"\n",
    );
    let s = dir.path().join("open.ptop");
    let out = headless(
        dir.path(),
        &s,
        &[
            "--config",
            &cfg,
            "--",
            "sh",
            "-c",
            "echo 'zkp: witness begins'; sleep 0.3",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let l = session(&s);
    let exit = l
        .records
        .iter()
        .find_map(|r| match &r.body {
            RecordBody::Mark(Mark::ChildExited { .. }) => Some(r.t),
            _ => None,
        })
        .expect("exit mark");
    let m = model_of(&l);
    assert!(m.spans.open.is_empty(), "{:?}", m.spans.open);
    let w = &m.spans.closed[0];
    assert_eq!(
        (w.phase.as_str(), w.end, w.failed),
        ("witness", Some(exit), true)
    );
    assert_eq!(m.header_phase_text(), "-");
}

#[test]
fn a_phase_known_by_its_end_and_duration_holds_the_samples_of_its_time_in_classify_and_export() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), TOOK_RULE);
    let s = dir.path().join("after.ptop");
    // The whole run is one phase, said at its end (as a timing summary is).
    let out = headless(
        dir.path(),
        &s,
        &[
            "--config",
            &cfg,
            "--hz",
            "20",
            "--",
            "sh",
            "-c",
            "sleep 2; echo 'step prove took 1.9s'; sleep 0.2",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = s.display().to_string();
    let c = run_provetop(&["classify", &file]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let row = |name: &str| {
        c.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {}", c.stdout))
            .to_string()
    };
    let prove = row("prove ");
    // Its memory: the samples of its 1.9 s, not "-".
    let cells: Vec<&str> = prove.split_whitespace().collect();
    assert_ne!(cells[3], "-", "{prove}");
    // Outside every phase: the child's start before it and the end after it, well under the
    // 2.2 s the child ran.
    let idle = row("(no phase open)");
    let time = idle.split_whitespace().nth(4).unwrap();
    let secs: f64 = match time.strip_suffix("ms") {
        Some(ms) => ms.parse::<f64>().unwrap() / 1e3,
        None => time.trim_end_matches('s').parse().unwrap(),
    };
    assert!(secs < 0.9, "{idle}\n{}", c.stdout);
    // The CSV's phase column names it for the samples within it.
    let e = run_provetop(&["export", "--format", "csv", &file]);
    assert_eq!(e.code, 0, "{}", e.stderr);
    let mut lines = e.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "phase").unwrap();
    let phases: Vec<String> = lines
        .map(|l| l.split(',').nth(col).unwrap_or("").to_string())
        .collect();
    let named = phases.iter().filter(|p| p.as_str() == "prove").count();
    assert!(
        named * 10 >= phases.len() * 6,
        "{named} of {} samples in the phase: {phases:?}",
        phases.len()
    );
}

#[test]
fn fil_proofs_calls_that_name_no_sector_are_not_filed_under_the_sector_named_last() {
    let mut e = Engine::new(Vec::new());
    let mut out = Vec::new();
    let lines = [
        "2026-12-01T20:52:48.339 INFO filecoin_proofs::api::seal > seal_pre_commit_phase1:start: SectorId(7)",
        "2026-12-01T20:52:48.342 INFO filecoin_proofs::api::seal > seal_pre_commit_phase1:finish: SectorId(7)",
        "2026-12-01T20:52:48.400 INFO filecoin_proofs::api::window_post > generate_window_post:start",
        "2026-12-01T20:52:48.500 INFO filecoin_proofs::api::window_post > generate_window_post:finish",
    ];
    for (i, l) in lines.iter().enumerate() {
        e.line(l, 1_000_000_000 + i as u64, &mut out);
    }
    let ids: Vec<(String, u64)> = out
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Derived(d) => match &d.event {
                Event::PhaseStarted {
                    proof_id, phase, ..
                } => Some((phase.to_string(), *proof_id)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert_ne!(ids[0].1, ids[1].1, "{ids:?}");
}

#[test]
fn proofs_read_from_log_lines_are_counted_and_timed_and_back_to_back_ones_stay_apart() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("count.ptop");
    // Two bellperson proofs back to back, then a C2 (whose bellperson proof is its own).
    let c2 = "filecoin_proofs::api::seal";
    let script = format!(
        "{FIL_LOGGER}
for i in 1 2; do
l INFO {BP} 'Bellperson 0.27.0 is being used!'; sleep 0.2
l INFO {BP} 'synthesis time: 200ms'
l INFO {BP} 'starting proof timer'; sleep 0.2
l INFO {BP} 'prover time: 200ms'
done
l INFO {c2} 'seal_commit_phase2:start: SectorId(9)'
l INFO {BP} 'Bellperson 0.27.0 is being used!'; sleep 0.2
l INFO {BP} 'synthesis time: 200ms'
l INFO {BP} 'starting proof timer'; sleep 0.2
l INFO {BP} 'prover time: 200ms'
l INFO {c2} 'seal_commit_phase2:finish: SectorId(9)'"
    );
    let out = headless(dir.path(), &s, &["--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let m = model_of(&session(&s));
    assert_eq!(m.prover.proofs_done, 3, "{:?}", m.prover);
    assert_eq!(m.prover.proofs_failed, 0);
    let per = m.prover.last_s.expect("seconds per proof");
    assert!((0.35..1.5).contains(&per), "{per}");
    // Each proof its own synthesis and proving spans: the proofs are apart.
    let ids: std::collections::BTreeSet<u64> = m
        .spans
        .closed
        .iter()
        .filter(|x| x.phase == provetop_shared::Phase::Prove)
        .map(|x| x.proof_id)
        .collect();
    assert_eq!(ids.len(), 3, "{:#?}", m.spans.closed);
    assert_eq!(m.proofs.finished.len(), 3);
}

#[test]
fn more_log_rules_than_the_bound_are_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let n = provetop_collect::loglines::MAX_RULES + 1;
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "[[log_rule]]\nname = \"r{i}\"\nregex = '^step{i} (?P<phase>\\w+)$'\naction = \"start\"\n"
        ));
    }
    let cfg = config(dir.path(), &text);
    let s = dir.path().join("many.ptop");
    let out = headless(dir.path(), &s, &["--config", &cfg, "--", "true"]);
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("{n} [[log_rule]] tables")) && err.contains("config.toml"),
        "{err}"
    );
}

#[test]
fn the_help_of_config_names_log_rules() {
    let o = run_provetop(&["run", "--help"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("[[log_rule]]"), "{}", o.stdout);
}

#[test]
fn classifys_phase_table_keeps_its_columns_for_long_call_names() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("long.ptop");
    let seal = "filecoin_proofs::api::seal";
    let script = format!(
        "{FIL_LOGGER}
l INFO {seal} 'seal_commit_phase2:start: SectorId(9)'
l INFO {seal} 'seal_commit_phase2_circuit_proofs:start: SectorId(9)'; sleep 0.3
l INFO {seal} 'seal_commit_phase2_circuit_proofs:finish: SectorId(9)'
l INFO {seal} 'seal_commit_phase2:finish: SectorId(9)'; sleep 0.2"
    );
    let out = headless(dir.path(), &s, &["--hz", "20", "--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c = run_provetop(&["classify", &s.display().to_string()]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let table: Vec<&str> = c
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("prover phases"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(table.len(), 4, "{}", c.stdout);
    // Every column where the header has it: each row as long as the header, and the spans
    // column right-aligned under its heading.
    let at = table[0].find("spans").unwrap() + "spans".len();
    for row in &table {
        assert_eq!(
            row.chars().count(),
            table[0].chars().count(),
            "{}",
            c.stdout
        );
        let cut: String = row.chars().take(at).collect();
        assert!(
            cut.ends_with(|c: char| c.is_ascii_digit() || c == 's' || c == '-'),
            "{}",
            c.stdout
        );
    }
}

#[test]
fn ls_counts_the_proofs_a_served_childs_log_lines_announce() {
    use provetop_testkit::procs::{signal, wait_until};
    use std::process::{Command, Stdio};
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("run")).unwrap();
    let env = |c: &mut Command| {
        c.env("XDG_RUNTIME_DIR", d.join("run"))
            .env("XDG_STATE_HOME", d.join("state"))
            .env("XDG_CONFIG_HOME", d.join("config"));
    };
    let script = format!(
        "{FIL_LOGGER}
for i in 1 2; do
l INFO {BP} 'Bellperson 0.27.0 is being used!'
l INFO {BP} 'synthesis time: 10ms'
l INFO {BP} 'starting proof timer'
l INFO {BP} 'prover time: 10ms'
done
sleep 60"
    );
    let mut serve = Command::new(provetop_testkit::bins::provetop());
    serve
        .args(["serve", "--record"])
        .arg(d.join("s.ptop"))
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    env(&mut serve);
    let mut served = serve.spawn().unwrap();
    let ls = || {
        let mut c = Command::new(provetop_testkit::bins::provetop());
        c.arg("ls");
        env(&mut c);
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    };
    let mut out = String::new();
    // The row of the live session: ID PID UPTIME PROOFS …
    let counted = wait_until(Duration::from_secs(30), || {
        out = ls();
        out.lines()
            .find(|l| l.contains(" sh -c "))
            .and_then(|l| l.split_whitespace().nth(3).map(str::to_string))
            .is_some_and(|p| p == "2")
    });
    signal(served.id(), nix::sys::signal::Signal::SIGTERM);
    let _ = wait_until(Duration::from_secs(15), || {
        served.try_wait().unwrap().is_some()
    });
    let _ = served.kill();
    let _ = served.wait();
    assert!(counted, "{out}");
}

#[test]
fn ten_thousand_window_posts_in_a_row_each_end_ok_and_leave_nothing_open() {
    let mut e = Engine::new(Vec::new());
    let mut out = Vec::new();
    let api = "filecoin_proofs::api::window_post";
    for i in 0..10_000u64 {
        let t = 1_000_000_000 + i * 1_000_000;
        e.line(
            &format!("INFO {api}: generate_window_post:start"),
            t,
            &mut out,
        );
        e.line(
            &format!("INFO {api}: generate_window_post:finish"),
            t + 500_000,
            &mut out,
        );
    }
    assert_eq!(e.open_phases(), 0);
    let (mut ok, mut failed) = (0, 0);
    for r in &out {
        if let RecordBody::Derived(d) = &r.body {
            if let Event::ProofFinished { ok: o, .. } = d.event {
                if o {
                    ok += 1;
                } else {
                    failed += 1;
                }
            }
        }
    }
    assert_eq!((ok, failed), (10_000, 0));
}
