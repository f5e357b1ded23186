//! The child's output through the real `provetop`: every line part of the session (with its
//! source), phases derived from the lines, bounded against hostile output, the last lines
//! said when the child fails, `watch --log -`, and the user's rules from the config file.
//!
//! The children are `sh` scripts printing the lines of the provers' own formats (the golden
//! tests in `loglines.rs` check the grammars on real captures).

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use provetop_shared::session::Loaded;
use provetop_shared::{Event, Mark, OutputSource, Phase, Record, RecordBody};
use provetop_testkit::bins::provetop;
use provetop_testkit::faults::{headless, phase_spans, session, stderr};
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};

const BP: &str = "bellperson::groth16::prover::native";

/// A script that proves once in bellperson's words, on stderr, with a time stamp in
/// fil_logger's format (local time, milliseconds) as lotus and curio print it.
fn bellperson_script(extra: &str) -> String {
    format!(
        r#"l() {{ printf '%s INFO {BP} > %s\n' "$(date +%Y-%m-%dT%H:%M:%S.%3N)" "$1" >&2; }}
l 'Bellperson 0.27.0 is being used!'
sleep 0.4
l 'synthesis time: 400ms'
l 'starting proof timer'
sleep 0.3
l 'prover time: 300ms'
{extra}"#
    )
}

fn outputs(recs: &[Record]) -> Vec<(OutputSource, String, Option<u64>)> {
    recs.iter()
        .filter_map(|r| match &r.body {
            RecordBody::Output(o) => Some((o.source, o.text.clone(), o.cut)),
            _ => None,
        })
        .collect()
}

/// (phase, start t, end t) of the derived spans that ended, in start order; an end without
/// its start fails the test (a phantom).
fn derived_spans(recs: &[Record]) -> Vec<(Phase, u64, u64)> {
    let mut out: Vec<(Phase, u64, u64)> = phase_spans(recs)
        .into_iter()
        .filter_map(|s| Some((s.phase, s.start, s.end?)))
        .collect();
    out.sort_by(|a, b| (a.1, a.0.as_str()).cmp(&(b.1, b.0.as_str())));
    out
}

fn secs(s: &(Phase, u64, u64)) -> f64 {
    (s.2 - s.1) as f64 / 1e9
}

/// The output lines the session counts as dropped (not recorded).
fn dropped_lines(l: &Loaded) -> u64 {
    l.records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(Mark::Dropped { what, count }) if what == "output lines" => {
                Some(*count)
            }
            _ => None,
        })
        .sum()
}

/// `provetop watch --headless --log LOG --record SESSION PID` with a private config and
/// state; the caller sets its standard streams.
fn watch_log(dir: &Path, log: &Path, session: &Path, pid: u32) -> Command {
    let mut c = Command::new(provetop());
    c.args(["watch", "--headless", "--log"])
        .arg(log)
        .arg("--record")
        .arg(session)
        .arg(pid.to_string())
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"));
    c
}

/// End the watched `sleeper`, assert that the watch `w` then ends with 0, and load the
/// session it recorded.
#[track_caller]
fn end_watch(mut sleeper: Child, w: Child, session_path: &Path) -> Loaded {
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let out = w.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    session(session_path)
}

#[test]
fn a_command_that_logs_like_bellperson_gets_its_phases_recorded_with_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("bp.ptop");
    let script = bellperson_script("echo done on stdout");
    let out = headless(dir.path(), &s, &["--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let l = session(&s);
    let spans = derived_spans(&l.records);
    let names: Vec<&str> = spans.iter().map(|x| x.0.as_str()).collect();
    // No debug lines: no FFT phase is made up.
    assert_eq!(names, ["synthesis", "prove"], "{spans:?}");
    // Synthesis from the version line to "synthesis time" (0.4 s of sleep and a date), the
    // proving 0.3 s: within the stamps' millisecond and the shell's own time.
    assert!((0.35..0.8).contains(&secs(&spans[0])), "{spans:?}");
    assert!((0.25..0.7).contains(&secs(&spans[1])), "{spans:?}");
    // Every line, each from its own stream (two pipes: which of the last stderr line and the
    // stdout line is recorded first is up to the readers, so only each stream's order holds).
    let outs = outputs(&l.records);
    assert_eq!(outs.len(), 5, "{outs:?}");
    let (err, out): (Vec<_>, Vec<_>) = outs.iter().partition(|o| o.0 == OutputSource::Stderr);
    assert_eq!(err.len(), 4, "{outs:?}");
    assert!(
        err[0].1.ends_with("Bellperson 0.27.0 is being used!"),
        "{err:?}"
    );
    assert!(err[3].1.ends_with("prover time: 300ms"), "{err:?}");
    assert_eq!(
        out,
        [&(OutputSource::Stdout, "done on stdout".into(), None)],
        "{outs:?}"
    );
    // The derived records say which grammar read them.
    assert!(l
        .records
        .iter()
        .any(|r| matches!(&r.body, RecordBody::Derived(d) if d.grammar == "bellperson")));
}

#[test]
fn a_child_that_speaks_the_protocol_gets_no_phases_from_its_logs() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("proto.ptop");
    let hello = provetop_shared::EventMsg {
        ts: 1,
        event: Event::State {
            state: provetop_shared::protocol::ProverState::Idle,
        },
    }
    .to_line();
    std::fs::write(dir.path().join("hello.ndjson"), format!("{hello}\n")).unwrap();
    let script = format!(
        "cat {} >&3; sleep 0.3\n{}",
        sh_quote(&dir.path().join("hello.ndjson").display().to_string()),
        bellperson_script("")
    );
    let out = headless(dir.path(), &s, &["--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let l = session(&s);
    assert!(l
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Event(_))));
    assert!(
        !l.records
            .iter()
            .any(|r| matches!(r.body, RecordBody::Derived(_))),
        "counted twice"
    );
    // Its lines are still part of the session.
    assert_eq!(outputs(&l.records).len(), 4);
}

#[test]
fn lines_split_across_reads_crlf_and_invalid_utf8_are_recorded_whole_and_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("split.ptop");
    let script = r"printf 'INFO bellperson: Bellperson 0.27.0 is bei'; sleep 0.3; printf 'ng used!\r\n'
printf 'half '; sleep 0.2; printf 'a line\n'
printf 'bad \377\376 bytes\r\n'
printf 'no newline at the end'";
    let out = headless(dir.path(), &s, &["--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let l = session(&s);
    let texts: Vec<String> = outputs(&l.records).into_iter().map(|o| o.1).collect();
    assert_eq!(
        texts,
        [
            "INFO bellperson: Bellperson 0.27.0 is being used!",
            "half a line",
            "bad \u{fffd}\u{fffd} bytes",
            "no newline at the end"
        ]
    );
    // The line split over two writes was read as one: a synthesis opened.
    assert!(l.records.iter().any(|r| matches!(&r.body,
        RecordBody::Derived(d) if matches!(&d.event, Event::PhaseStarted { phase: Phase::Synthesis, .. }))));
}

#[test]
fn a_10_mb_line_keeps_its_head_and_its_length_and_the_next_line_is_whole() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("long.ptop");
    let script = "head -c 10000000 /dev/zero | tr '\\0' x; echo; echo after";
    let out = headless(dir.path(), &s, &["--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let l = session(&s);
    let outs = outputs(&l.records);
    assert_eq!(
        outs.len(),
        2,
        "{:?}",
        outs.iter().map(|o| (o.1.len(), o.2)).collect::<Vec<_>>()
    );
    assert_eq!(outs[0].2, Some(10_000_000));
    assert_eq!(
        outs[0].1.len(),
        provetop_collect::supervisor::MAX_OUTPUT_LINE
    );
    assert!(outs[0].1.bytes().all(|b| b == b'x'));
    assert_eq!(outs[1], (OutputSource::Stdout, "after".into(), None));
}

#[test]
fn a_flood_of_lines_loses_no_phase_invents_none_and_counts_what_it_does_not_record() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("flood.ptop");
    // 300,000 lines as fast as `seq` writes them (far over 100,000 a second) between the
    // proof's lines, a decoy end without a start inside the flood.
    let script = bellperson_script(
        "seq 1 150000\necho 'INFO bellperson: prover time: 1s'\nseq 150001 300000\necho 'INFO bellperson: Bellperson 0.27.0 is being used!' >&2\necho 'INFO bellperson: synthesis time: 5ms' >&2",
    );
    let out = headless(dir.path(), &s, &["--", "sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let l = session(&s);
    let recorded = outputs(&l.records).len() as u64;
    let dropped = dropped_lines(&l);
    assert!(dropped > 0, "a flood is rate-limited");
    assert_eq!(
        recorded + dropped,
        300_000 + 7,
        "every line recorded or counted"
    );
    let names: Vec<String> = derived_spans(&l.records)
        .iter()
        .map(|x| x.0.to_string())
        .collect();
    assert_eq!(names, ["synthesis", "prove", "synthesis"]);
}

#[test]
fn binary_garbage_and_escape_sequences_are_recorded_as_text_and_said_inert_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("garbage.ptop");
    let script = "head -c 200000 /dev/urandom; sleep 0.5; printf '\\n\\033]0;pwned\\007\\033[2J\\033[31mred\\n' >&2; \
        printf 'thread '\\''main'\\'' panicked at src/main.rs:3:5:\\nthe circuit is unsatisfied\\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\\n' >&2; exit 101";
    let out = headless(dir.path(), &s, &["--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(101));
    let err = stderr(&out);
    assert!(
        !err.contains('\x1b'),
        "escape sequences reached the terminal: {err:?}"
    );
    // The multi-line panic, every line of it, with its source.
    assert!(err.contains("the child's last output:"), "{err}");
    assert!(
        err.contains("err thread 'main' panicked at src/main.rs:3:5:"),
        "{err}"
    );
    assert!(err.contains("err the circuit is unsatisfied"), "{err}");
    assert!(err.contains("\\x1b]0;pwned"), "shown inert: {err}");
    let l = session(&s);
    assert!(!l
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Derived(_))));
    assert!(outputs(&l.records).len() > 3);
}

#[test]
fn without_a_recording_the_last_lines_of_a_failed_child_are_still_said() {
    let out = Command::new(provetop())
        .args(["run", "--headless", "--no-record", "--", "sh", "-c"])
        .arg("echo 'Error: parameters not found in /var/tmp/filecoin-proof-parameters' >&2; exit 3")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("err Error: parameters not found in /var/tmp/filecoin-proof-parameters"),
        "{err}"
    );
}

#[test]
fn watch_with_log_from_standard_input_reads_its_phases() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("watch.ptop");
    let sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let mut w = watch_log(dir.path(), Path::new("-"), &s, sleeper.id())
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = w.stdin.take().unwrap();
        // journald's short format around fil_logger's, stamped 100 s to 79 s ago (local
        // time, as both write it).
        // One reference instant for every stamp: `date` formats each one, however long each
        // call takes on a loaded machine.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let at = |ago: f64, fmt: &str| {
            let out = Command::new("date")
                .env("LC_ALL", "C")
                .arg("-d")
                .arg(format!("@{:.3}", now - ago))
                .arg(format!("+{fmt}"))
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        let line = |ago: f64, msg: &str| {
            format!(
                "{} node1 curio[4242]: {} INFO bellperson::groth16::prover::supraseal > {msg}\n",
                at(ago, "%b %e %H:%M:%S"),
                at(ago, "%Y-%m-%dT%H:%M:%S.%3N"),
            )
        };
        let lines = [
            line(100.0, "Bellperson 0.27.0 with SupraSeal is being used!"),
            line(20.556, "synthesis time: 79.44350428s"),
            line(20.556, "starting proof timer"),
            line(0.5, "prover time: 20.05s"),
        ]
        .concat();
        stdin.write_all(lines.as_bytes()).unwrap();
    }
    std::thread::sleep(Duration::from_millis(800));
    let l = end_watch(sleeper, w, &s);
    let spans = derived_spans(&l.records);
    let syn = spans
        .iter()
        .find(|x| x.0 == Phase::Synthesis)
        .expect("synthesis");
    let prove = spans.iter().find(|x| x.0 == Phase::Prove).expect("prove");
    // Lines older than their arrival: placed by their own (local) time stamps, in the past.
    assert!((secs(syn) - 79.444).abs() < 0.03, "{spans:?}");
    assert!((secs(prove) - 20.056).abs() < 0.03, "{spans:?}");
    let outs = outputs(&l.records);
    assert_eq!(outs.len(), 4);
    assert!(outs.iter().all(|o| o.0 == OutputSource::Stdin));
}

#[test]
fn a_log_rule_that_does_not_compile_is_an_error_naming_the_file_and_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "hz = 10\n\n[[log_rule]]\nname = \"mine\"\nregex = '(?P<phase>\\w+'\naction = \"start\"\n",
    )
    .unwrap();
    let out = Command::new(provetop())
        .args(["run", "--headless", "--no-record", "--config"])
        .arg(&cfg)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.contains(&cfg.display().to_string())
            && first.contains("line ")
            && first.contains("log_rule \"mine\"")
            && first.contains("does not compile"),
        "{err}"
    );
}

#[test]
fn a_log_rule_in_the_config_gives_phases_for_a_prover_without_a_grammar() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        "[[log_rule]]\nname = \"zkp-start\"\nregex = '^zkp: (?P<phase>\\w+) begins$'\naction = \"start\"\n\n\
         [[log_rule]]\nname = \"zkp-end\"\nregex = '^zkp: (?P<phase>\\w+) ends$'\naction = \"end\"\n",
    )
    .unwrap();
    let s = dir.path().join("rule.ptop");
    let cfg_arg = cfg.display().to_string();
    let out = headless(
        dir.path(),
        &s,
        &[
            "--config",
            &cfg_arg,
            "--",
            "sh",
            "-c",
            "echo 'zkp: witness begins'; sleep 0.2; echo 'zkp: witness ends'",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let spans = derived_spans(&session(&s).records);
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0].0.as_str(), "witness");
    assert!(secs(&spans[0]) >= 0.15);
}

#[test]
fn the_screen_shows_phases_from_log_lines_on_the_timeline_and_the_lines_in_the_log() {
    if !have_tmux("the_screen_shows_phases_from_log_lines_on_the_timeline_and_the_lines_in_the_log")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let script = dir.path().join("bp.sh");
    std::fs::write(&script, bellperson_script("sleep 600")).unwrap();
    let cmd = format!(
        "cd {d} && env XDG_STATE_HOME={d}/state XDG_CONFIG_HOME={d}/config {} run --no-record -- sh {}; sleep 600",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&script.display().to_string()),
    );
    let tmux = Tmux::start("loglines", 100, 30, &cmd);
    let screen = tmux.wait_for("phases from logs", Duration::from_secs(30), |s| {
        let rows = |p: &str| {
            s.lines().any(|l| {
                l.split_once('│')
                    .is_some_and(|(label, bars)| label.contains(p) && !bars.trim().is_empty())
            })
        };
        rows("synth") && rows("prove") && s.contains("err 20")
    });
    assert!(
        screen.contains("INFO bellperson"),
        "the lines in the log pane: {screen}"
    );
    tmux.keys(&["q"]);
}

#[test]
fn watch_with_log_file_follows_it_as_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("follow.ptop");
    let log = dir.path().join("prover.log");
    let line = |msg: &str| {
        let out = Command::new("date")
            .arg("+%Y-%m-%dT%H:%M:%S.%3N")
            .output()
            .unwrap();
        let ts = String::from_utf8(out.stdout).unwrap();
        format!("{} INFO {BP} > {msg}\n", ts.trim())
    };
    std::fs::write(&log, line("Bellperson 0.27.0 is being used!")).unwrap();
    let sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let w = watch_log(dir.path(), &log, &s, sleeper.id())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // Appended while provetop follows the file.
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all(line("synthesis time: 700ms").as_bytes())
        .unwrap();
    f.write_all(line("starting proof timer").as_bytes())
        .unwrap();
    drop(f);
    std::thread::sleep(Duration::from_millis(700));
    let l = end_watch(sleeper, w, &s);
    let outs = outputs(&l.records);
    assert_eq!(outs.len(), 3, "{outs:?}");
    assert!(outs.iter().all(|o| o.0 == OutputSource::File));
    let spans = derived_spans(&l.records);
    let syn = spans
        .iter()
        .find(|x| x.0 == Phase::Synthesis)
        .expect("synthesis");
    assert!((0.6..1.5).contains(&secs(syn)), "{spans:?}");
}

#[test]
fn watch_with_a_log_that_is_not_a_file_says_so() {
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let out = Command::new(provetop())
        .args([
            "watch",
            "--headless",
            "--no-record",
            "--log",
            "/nonexistent/prover.log",
        ])
        .arg(sleeper.id().to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--log /nonexistent/prover.log") && err.contains("No such file"),
        "{err}"
    );
}

#[test]
fn a_phase_rule_fires_on_a_phase_read_from_log_lines() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("alert.ptop");
    let script = bellperson_script("");
    let out = headless(
        dir.path(),
        &s,
        &[
            "--alert",
            "warn: phase_duration > 200ms",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let fired = session(&s).records.iter().any(|r| {
        matches!(&r.body, RecordBody::Alert(a)
            if a.metric == "phase_duration" && a.state == provetop_shared::AlertState::Firing)
    });
    assert!(fired, "{}", stderr(&out));
}

#[test]
fn classify_and_export_read_a_session_whose_phases_came_from_log_lines() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("offline.ptop");
    let out = headless(dir.path(), &s, &["--", "sh", "-c", &bellperson_script("")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let file = s.display().to_string();
    let c = provetop_testkit::bins::run_provetop(&["classify", &file]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    // Memory by the prover's phases: the rows of the phases read from its lines.
    assert!(
        c.stdout.contains("prover phases (from its log lines):"),
        "{}",
        c.stdout
    );
    let table: Vec<&str> = c
        .stdout
        .lines()
        .skip_while(|l| !l.contains("synthesis"))
        .collect();
    assert!(
        table.iter().any(|l| l.trim_start().starts_with("prove")),
        "{}",
        c.stdout
    );
    let e = provetop_testkit::bins::run_provetop(&["export", "--format", "jsonl", &file]);
    assert_eq!(e.code, 0, "{}", e.stderr);
    assert!(e.stdout.contains(r#""record":"derived""#));
    assert!(e.stdout.contains(r#""record":"output""#));
}

#[test]
fn the_screen_of_watch_with_log_from_standard_input_takes_its_keys_from_the_terminal() {
    if !have_tmux(
        "the_screen_of_watch_with_log_from_standard_input_takes_its_keys_from_the_terminal",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let feed = dir.path().join("feed.sh");
    // fil_logger's lines on the feed's stdout, as `journalctl -fu curio` would pass them.
    std::fs::write(&feed, bellperson_script("sleep 60").replace(" >&2;", ";")).unwrap();
    let cmd = format!(
        "cd {d} && sh {} | env XDG_STATE_HOME={d}/state XDG_CONFIG_HOME={d}/config {} watch --no-record --log - {}; sleep 600",
        sh_quote(&feed.display().to_string()),
        sh_quote(&provetop().display().to_string()),
        sleeper.id(),
    );
    let tmux = Tmux::start("loglines-stdin", 100, 30, &cmd);
    tmux.wait_for("phases from standard input", Duration::from_secs(30), |s| {
        s.lines().any(|l| {
            l.split_once('│')
                .is_some_and(|(label, bars)| label.contains("prove") && !bars.trim().is_empty())
        }) && s.contains(" in 20")
    });
    // A key reaches the screen although standard input is the log.
    tmux.keys(&["?"]);
    tmux.wait_for("the help", Duration::from_secs(10), |s| {
        s.contains("search the log")
    });
    tmux.keys(&["Escape", "q"]);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

#[test]
fn a_flood_of_long_lines_is_bounded_by_bytes_too_and_every_line_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("wide.ptop");
    // 3,000 lines of 20,000 bytes: 60 MB, each line cut to its 16 KiB head (48 MB as records
    // if only lines were counted).
    let script = "yes \"$(head -c 20000 /dev/zero | tr '\\0' y)\" | head -n 3000";
    let t0 = std::time::Instant::now();
    let out = headless(dir.path(), &s, &["--", "sh", "-c", script]);
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let l = session(&s);
    let outs = outputs(&l.records);
    let bytes: usize = outs.iter().map(|o| o.1.len()).sum();
    let dropped = dropped_lines(&l);
    assert_eq!(outs.len() as u64 + dropped, 3000);
    let bound = provetop_collect::supervisor::OUTPUT_BYTE_BURST
        + provetop_collect::supervisor::OUTPUT_BYTE_RATE * secs;
    assert!(
        (bytes as f64) <= bound,
        "{bytes} bytes recorded in {secs:.1} s (bound {bound})"
    );
    assert!(outs.iter().all(|o| o.2 == Some(20_000)));
}
