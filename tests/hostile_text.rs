//! Child text that holds escape sequences (clear-screen, an OSC 52 clipboard write, a bare
//! carriage return) never reaches a terminal raw: not through headless stderr, `classify`'s
//! tables or `export --format csv`.

use std::path::Path;
use std::process::{Command, Output};

use provetop_testkit::bins::provetop;

/// A protocol child (python3, events on fd 3) whose phase name, log target and message and
/// error message carry the escapes, and whose phase stays open long enough for samples and a
/// `phase_duration` alert.
const CHILD: &str = r#"
import json, os, time
f = os.fdopen(3, "w")
evil = "\x1b[2J\x1b]52;c;aGVsbG8=\x07\rX"
def ev(d):
    d["ts"] = time.monotonic_ns()
    f.write(json.dumps(d) + "\n")
    f.flush()
ev({"type": "hello", "protocol": "1.0", "prover_version": "0.1.0" + evil, "pid": os.getpid(),
    "backend": "cpu" + evil, "gpus": [],
    "config": {"partitions": 1, "constraints": 1, "circuit": "c" + evil, "mode": "single", "threads": 1}})
ev({"type": "proof_started", "proof_id": 1, "mode": "single", "sectors": 1, "partitions": 1, "constraints": 1})
ev({"type": "phase_started", "proof_id": 1, "phase": "=evil" + evil, "partition": None})
ev({"type": "log", "level": "warn", "target": "t" + evil, "message": "m" + evil})
ev({"type": "error", "message": "e" + evil, "fatal": False})
time.sleep(1.5)
ev({"type": "phase_ended", "proof_id": 1, "phase": "=evil" + evil, "partition": None, "duration_s": 1.5})
ev({"type": "proof_finished", "proof_id": 1, "ok": True, "verified": True, "duration_s": 1.5,
    "mode": "single", "phases": [], "error": None})
"#;

fn provetop_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(provetop())
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .expect("run provetop")
}

fn assert_inert(what: &str, bytes: &[u8]) {
    for (name, b) in [("ESC", 0x1b), ("BEL", 0x07), ("CR", b'\r')] {
        assert!(
            !bytes.contains(&b),
            "{what} holds a raw {name}:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn escape_sequences_from_the_child_reach_no_terminal_raw() {
    if !provetop_testkit::system::have("python3", "python3") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("evil.ptop");
    let s = session.to_str().unwrap();
    let run = provetop_in(
        dir.path(),
        &[
            "run",
            "--headless",
            "--record",
            s,
            "--alert",
            "warn: phase_duration > 0.3s",
            "--",
            "python3",
            "-c",
            CHILD,
        ],
    );
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    // The alert names the phase: shown, with its escapes visible.
    assert!(
        err.contains("=evil\\x1b[2J\\x1b]52;c;aGVsbG8=\\x07\\rX"),
        "{err}"
    );
    assert_inert("headless stderr", &run.stderr);
    assert_inert("headless stdout", &run.stdout);

    let classify = provetop_in(dir.path(), &["classify", s]);
    let out = String::from_utf8_lossy(&classify.stdout);
    assert_eq!(classify.status.code(), Some(0), "{out}");
    assert!(out.contains("prover phases"), "{out}");
    assert!(out.contains("=evil\\x1b[2J"), "{out}");
    assert_inert("classify stdout", &classify.stdout);
    assert_inert("classify stderr", &classify.stderr);

    let export = provetop_in(dir.path(), &["export", "--format", "csv", s]);
    let csv = String::from_utf8_lossy(&export.stdout);
    assert_eq!(export.status.code(), Some(0), "{csv}");
    // The phase column: inert, and not a formula for a spreadsheet.
    assert!(csv.contains(",'=evil\\x1b[2J"), "{csv}");
    assert_inert("export csv", &export.stdout);
    assert_inert("export stderr", &export.stderr);
}

#[test]
fn the_screen_shows_the_childs_escape_sequences_as_visible_text() {
    use provetop::app::{App, Screen};
    use provetop::theme::Theme;
    use provetop_shared::{Event, Phase, Record, RecordBody};
    let evil = "\x1b[2J\x1b]52;c;aGVsbG8=\x07\rX";
    let mut app = App::new(
        Screen::Run,
        Default::default(),
        Theme::mono(),
        1_000_000_000,
    );
    let events = [
        Event::PhaseStarted {
            proof_id: 1,
            phase: Phase::Other(format!("p{evil}")),
            partition: None,
        },
        Event::Log {
            level: "warn".into(),
            target: "t".into(),
            message: format!("m{evil}"),
        },
    ];
    for (i, e) in events.into_iter().enumerate() {
        app.clock += 100_000_000;
        app.model
            .apply(&Record::new(app.clock + i as u64, RecordBody::Event(e)));
    }
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 30)).unwrap();
    term.draw(|f| {
        provetop::ui::draw(f, &app);
    })
    .unwrap();
    let buf = term.backend().buffer();
    let text: String = (0..30)
        .map(|y| (0..120).map(|x| buf[(x, y)].symbol()).collect::<String>() + "\n")
        .collect();
    assert_inert("the screen", text.as_bytes());
    assert!(
        text.contains("t: m\\x1b[2J\\x1b]52;c;aGVsbG8=\\x07\\rX"),
        "{text}"
    );
    assert!(
        text.contains("p\\x1b[2J"),
        "the phase, in the timeline: {text}"
    );
}
