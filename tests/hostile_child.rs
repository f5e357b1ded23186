//! A hostile child, end to end: `provetop run --headless --record` of children that lie about
//! time, speak a protocol from the future, send impossible durations, flood their events pipe
//! or their output. The session stays true to the monitor's clock, bounded, and says what it
//! refused or dropped.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

use provetop::store::Store;
use provetop_shared::session::load;
use provetop_shared::{Event, Mark, Record, RecordBody};
use provetop_testkit::bins::provetop;
use provetop_testkit::faults::{record_marks as marks, record_warnings};

fn headless(dir: &Path, session: &Path, script: &str) -> Output {
    Command::new(provetop())
        .args(["run", "--headless", "--record"])
        .arg(session)
        .args(["--", "sh", "-c", script])
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .expect("run provetop")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `sh -c SCRIPT` run headless to its end in a directory of its own, recording to
/// `name`.ptop, asserting that provetop exits 0: its stderr and the session's records.
fn run_ok(name: &str, script: &str) -> (String, Vec<Record>) {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join(format!("{name}.ptop"));
    let out = headless(dir.path(), &s, script);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    (stderr(&out), load(&s).unwrap().records)
}

fn events(recs: &[Record]) -> Vec<(u64, &Event)> {
    recs.iter()
        .filter_map(|r| match &r.body {
            RecordBody::Event(e) => Some((r.t, e)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_child_claiming_ts_zero_and_the_last_u64_is_recorded_on_the_monitors_clock() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("ts.ptop");
    let script = r#"
printf '{"ts":0,"type":"state","state":"idle"}\n' >&3
sleep 0.3
printf '{"ts":18446744073709551615,"type":"state","state":"paused"}\n' >&3
printf '{"ts":18446744073709551615,"type":"state","state":"idle"}\n' >&3
sleep 0.3
"#;
    let begun = Instant::now();
    let out = headless(dir.path(), &s, script);
    let wall = begun.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = load(&s).unwrap().records;
    let first = recs.iter().map(|r| r.t).min().unwrap();
    let last = recs.iter().map(|r| r.t).max().unwrap();
    assert!(
        last - first <= wall.as_nanos() as u64,
        "records span {} ns, the run took {wall:?}",
        last - first
    );
    let started = recs
        .iter()
        .find(|r| matches!(r.body, RecordBody::Mark(Mark::ChildStarted { .. })))
        .unwrap()
        .t;
    let ev = events(&recs);
    assert_eq!(ev.len(), 3, "{ev:?}");
    for (t, _) in &ev {
        assert!(
            *t >= started && *t <= last,
            "event at {t}, child started at {started}"
        );
    }
    // `ts` 0 means "stamp on arrival" and is not warned of; the far-future stamps are said
    // once at the first refusal, and once more with the count.
    let warnings = record_warnings(&recs);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("ts 18446744073709551615 is in the future"),
        "{}",
        warnings[0]
    );
    assert!(warnings[1].contains("2 events"), "{}", warnings[1]);
    assert!(!warnings.iter().any(|w| w.contains("ts 0")), "{warnings:?}");

    // classify puts the peak within the session's second or so.
    let c = Command::new(provetop())
        .arg("classify")
        .arg(&s)
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", stderr(&c));
    let text = String::from_utf8_lossy(&c.stdout);
    let line = text.lines().find(|l| l.starts_with("peak:")).expect(&text);
    let at: f64 = line
        .split(" at ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect(line);
    assert!(at <= wall.as_secs_f64(), "{line} (the run took {wall:?})");

    // Replay opens it and reaches its end.
    let store = Store::open(&s).unwrap();
    assert!(store.end() - store.start() <= wall.as_nanos() as u64);
    let _ = store.model_at(store.end());
}

#[test]
fn a_hello_of_a_newer_major_version_is_refused_and_what_follows_is_not_read_as_events() {
    let script = r#"
printf '{"ts":1,"type":"hello","protocol":"2.0","prover_version":"9","pid":1,"backend":"cpu","config":{"partitions":1,"constraints":1,"circuit":"x","mode":"single","threads":1}}\n' >&3
printf '{"ts":2,"type":"state","state":"idle"}\n' >&3
printf '{"ts":3,"type":"bye","reason":"done","proofs_done":7}\n' >&3
sleep 0.3
"#;
    let (err, recs) = run_ok("v2", script);
    assert!(
        err.contains("speaks protocol 2.0, this build speaks 1.1"),
        "{err}"
    );
    assert!(events(&recs).is_empty(), "{:?}", events(&recs));
    let m = marks(&recs);
    assert!(
        m.iter().any(|m| matches!(m, Mark::BadLine { error, .. }
            if error.contains("2.0") && error.contains("1.1"))),
        "{m:?}"
    );
    assert!(
        m.iter().any(|m| matches!(m, Mark::Warning { text }
            if text.contains("2 lines after its protocol 2.0 hello"))),
        "{m:?}"
    );
}

#[test]
fn negative_durations_are_bad_lines_naming_the_field_and_zero_is_a_duration() {
    let script = r#"
printf '{"ts":1,"type":"phase_ended","proof_id":1,"phase":"prove","duration_s":-5}\n' >&3
printf '{"ts":1,"type":"srs_ready","bytes":1,"pinned_bytes":0,"source":"disk","duration_s":-0.1}\n' >&3
printf '{"ts":1,"type":"proof_finished","proof_id":1,"ok":true,"verified":true,"duration_s":1,"mode":"single","phases":[{"phase":"prove","duration_s":-2}]}\n' >&3
printf '{"ts":1,"type":"phase_ended","proof_id":1,"phase":"prove","duration_s":0}\n' >&3
sleep 0.3
"#;
    let (_, recs) = run_ok("dur", script);
    let bad: Vec<&String> = marks(&recs)
        .into_iter()
        .filter_map(|m| match m {
            Mark::BadLine { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(bad.len(), 3, "{bad:?}");
    assert!(bad[0].contains("phase_ended") && bad[0].contains("duration_s is -5"));
    assert!(bad[1].contains("srs_ready") && bad[1].contains("duration_s is -0.1"));
    assert!(bad[2].contains("phases[0].duration_s is -2"), "{}", bad[2]);
    let ev = events(&recs);
    assert!(
        matches!(ev.as_slice(), [(_, Event::PhaseEnded { duration_s, .. })] if *duration_s == 0.0),
        "{ev:?}"
    );
}

fn dropped_events(recs: &[Record]) -> u64 {
    marks(recs)
        .into_iter()
        .filter_map(|m| match m {
            Mark::Dropped { what, count } if what == "events" => Some(*count),
            _ => None,
        })
        .sum()
}

#[test]
fn an_event_flood_is_recorded_at_a_bounded_rate_and_what_was_dropped_is_said() {
    use provetop_collect::supervisor::{EVENT_BURST, EVENT_RATE};
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("flood.ptop");
    const LINES: u64 = 20_000_000;
    let script =
        format!(r#"yes '{{"ts":1,"type":"state","state":"idle"}}' | head -n {LINES} >&3; exit 0"#);
    let begun = Instant::now();
    let out = headless(dir.path(), &s, &script);
    let wall = begun.elapsed().as_secs_f64();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = load(&s).unwrap().records;
    let n = events(&recs).len() as u64;
    let bound = EVENT_BURST + (EVENT_RATE as f64 * wall) as u64;
    assert!(
        n <= bound,
        "{n} events recorded in {wall:.1} s (bound {bound})"
    );
    // Every line is accounted for: recorded, or counted as dropped in the session.
    let dropped = dropped_events(&recs);
    assert!(
        n + dropped >= LINES && n + dropped <= LINES + 16,
        "{n} recorded + {dropped} dropped of {LINES}"
    );
    assert!(stderr(&out).contains("events dropped"), "{}", stderr(&out));
    let size = std::fs::metadata(&s).unwrap().len();
    assert!(size < 64 << 20, "session of {size} bytes");
    eprintln!("flood: {n} events recorded, {dropped} dropped, session {size} bytes, {wall:.1} s");
}

#[test]
fn a_burst_of_ten_to_the_five_partitions_is_read_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("burst.ptop");
    let events_file = dir.path().join("burst.ndjson");
    let mut text = String::new();
    text.push_str(r#"{"ts":1,"type":"proof_started","proof_id":1,"mode":"single","sectors":1,"partitions":100000,"constraints":100000}"#);
    text.push('\n');
    for p in 0..100_000 {
        text.push_str(&format!(
            r#"{{"ts":1,"type":"phase_started","proof_id":1,"phase":"synthesis","partition":{p}}}"#
        ));
        text.push('\n');
        text.push_str(&format!(
            r#"{{"ts":1,"type":"phase_ended","proof_id":1,"phase":"synthesis","partition":{p},"duration_s":0.001}}"#
        ));
        text.push('\n');
    }
    std::fs::write(&events_file, text).unwrap();
    let script = format!("cat '{}' >&3; sleep 0.2", events_file.display());
    let out = headless(dir.path(), &s, &script);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = load(&s).unwrap().records;
    assert_eq!(dropped_events(&recs), 0, "{}", stderr(&out));
    assert!(!marks(&recs)
        .iter()
        .any(|m| matches!(m, Mark::Dropped { .. })));
    let ev = events(&recs);
    assert_eq!(ev.len(), 200_001);
    let ended = ev
        .iter()
        .filter(|(_, e)| matches!(e, Event::PhaseEnded { .. }))
        .count();
    assert_eq!(ended, 100_000);
}

#[test]
fn a_child_writing_200_mb_to_stdout_gets_a_log_of_at_most_the_cap_and_the_drop_is_said() {
    use provetop_collect::supervisor::LOG_CAP;
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("chatty.ptop");
    const BYTES: u64 = 200_000_000;
    // Half on stdout, half on stderr: both go through the one capped log.
    let script = format!(
        "head -c {} /dev/zero | tr '\\0' o; head -c {} /dev/zero | tr '\\0' e >&2; echo finished >&3",
        BYTES / 2,
        BYTES / 2
    );
    let out = headless(dir.path(), &s, &script);
    // The child is never blocked for good on its output: it finishes, with its own status.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = dir.path().join("chatty.ptop.child.log");
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(
        size > LOG_CAP && size <= LOG_CAP + 200,
        "log of {size} bytes (cap {LOG_CAP})"
    );
    let text = std::fs::read(&log).unwrap();
    let tail = String::from_utf8_lossy(&text[LOG_CAP as usize..]);
    assert!(tail.contains("reached its cap of 64 MiB"), "{tail}");
    let recs = load(&s).unwrap().records;
    let warnings = record_warnings(&recs);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("reached the 64 MiB cap")),
        "{warnings:?}"
    );
    let said = format!("{} bytes of its output were not logged", BYTES - LOG_CAP);
    assert!(warnings.iter().any(|w| w.contains(&said)), "{warnings:?}");
    // The bad line "finished" shows the events pipe still worked alongside.
    assert!(marks(&recs)
        .iter()
        .any(|m| matches!(m, Mark::BadLine { excerpt, .. } if excerpt == "finished")));
}
