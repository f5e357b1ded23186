//! `provetop status`, `provetop mark` and `provetop ls --json`: a served session's control
//! socket from the command line, checked against the socket's own answers, the session file
//! and the attached screen's header. A module of tests/server.rs (its helpers).

use super::*;

/// `provetop ARGS` in DIR's environment; stdout, asserting success.
#[track_caller]
fn ok_out(dir: &Path, args: &[&str]) -> String {
    let (code, out, err) = provetop_out(dir, args);
    assert_eq!(code, Some(0), "provetop {args:?}: {err}");
    out
}

#[test]
fn status_json_parses_and_its_numbers_are_the_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock, id) = serve_proved(d);
    let mut c = Conn::open(&sock);
    let before = c.status();
    let s: Value =
        serde_json::from_str(&ok_out(d, &["status", "--json"])).expect("one JSON object");
    let after = c.status();
    for key in [
        "id",
        "pid",
        "child_pid",
        "command",
        "prover",
        "started_unix_s",
        "session",
    ] {
        assert_eq!(s[key], before[key], "{key}: {s}");
    }
    assert_eq!(s["id"], id.as_str());
    let done = s["proofs_done"].as_u64().unwrap();
    assert!(
        (before["proofs_done"].as_u64().unwrap()..=after["proofs_done"].as_u64().unwrap())
            .contains(&done),
        "{s}"
    );
    let up = s["uptime_s"].as_f64().unwrap();
    assert!(
        up >= before["uptime_s"].as_f64().unwrap() && up <= after["uptime_s"].as_f64().unwrap(),
        "{s}"
    );
    // By id, by a part of it, by the session file: the same session; the text form says it.
    for by in [
        id.as_str(),
        &id[..id.len() - 1],
        &d.join("s.ptop").display().to_string(),
    ] {
        let t = ok_out(d, &["status", by]);
        assert!(t.contains(&format!("id:         {id}")), "{by}: {t}");
        assert!(
            t.contains(&format!("child pid:  {}", before["child_pid"])),
            "{by}: {t}"
        );
    }
    let (code, _, err) = provetop_out(d, &["status", "no-such-session"]);
    assert_eq!((code, err.lines().count()), (Some(1), 1), "{err}");
    c.stop();
    finish(served);
    // What was proved is in the file the session records.
    let recorded = load(&d.join("s.ptop")).unwrap().records;
    let finished = recorded
        .iter()
        .filter(|r| {
            matches!(
                &r.body,
                RecordBody::Event(provetop_shared::Event::ProofFinished { ok: true, .. })
            )
        })
        .count() as u64;
    assert!(
        finished >= done,
        "{finished} proofs in the file, status said {done}"
    );
}

#[test]
fn status_matches_the_attached_screens_header() {
    let Some(dir) = screen_test("server-status-screen") else {
        return;
    };
    let d = dir.path();
    let (served, sock, id) = serve_proved(d);
    let a = attach("server-status-screen", d, &id);
    let screen = a.wait_for("the header", Duration::from_secs(20), |s| {
        s.contains("running pid")
    });
    let s: Value = serde_json::from_str(&ok_out(d, &["status", "--json"])).unwrap();
    assert_eq!(
        provetop_testkit::tmux::header_pid(&screen).map(u64::from),
        s["child_pid"].as_u64(),
        "{screen}\n{s}"
    );
    // The screen is one of the clients the status counts.
    assert!(s["clients"].as_u64().unwrap() >= 2, "{s}");
    a.keys(&["d"]);
    exited_0(&a, "ATTACH", "the prompt back", Duration::from_secs(10));
    Conn::open(&sock).stop();
    finish(served);
}

#[test]
fn a_mark_from_the_command_line_is_in_the_session_its_export_and_its_replay() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock, id) = serve_proved(d);
    let (code, _, err) = provetop_out(d, &["mark", "before the switch to sps"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(&format!("marked session {id}")), "{err}");
    let (code, _, err) = provetop_out(d, &["mark", &id, "second, by id"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = provetop_out(d, &["mark", "   "]);
    assert_eq!((code, err.lines().count()), (Some(1), 1), "{err}");
    Conn::open(&sock).stop();
    finish(served);
    let file = d.join("s.ptop");
    let n = notes(&file);
    let i = n.iter().position(|t| t == "mark: before the switch to sps");
    let j = n.iter().position(|t| t == "mark: second, by id");
    assert!(matches!((i, j), (Some(i), Some(j)) if i < j), "{n:?}");
    // The export carries it at its time.
    let out = ok_out(d, &["export", "--format", "jsonl", file.to_str().unwrap()]);
    assert!(out.contains("mark: before the switch to sps"), "{out}");
    // Replay: the log the replay screen draws, as its store rebuilds it at the file's end.
    let store = provetop::store::Store::open(&file).unwrap();
    let model = store.model_at(store.end());
    let logged = model.log.iter().any(|e| {
        matches!(&e.what, provetop::model::log::Logged::Mark(provetop_shared::Mark::Note { text })
            if text == "mark: before the switch to sps")
    });
    assert!(logged, "the replay's log has no mark");
}

#[test]
fn ls_json_lists_the_live_session_and_its_record_path_wherever_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let record = elsewhere.join("night.ptop");
    let served = serve_to(d, &record, &[]);
    let sock = socket(d);
    assert!(wait_until(Duration::from_secs(30), || proofs(&sock) >= 1));
    let v: Value = serde_json::from_str(&ok_out(d, &["ls", "--json"])).expect("one JSON document");
    let live = v["live"].as_array().unwrap();
    assert_eq!(live.len(), 1, "{v}");
    assert_eq!(live[0]["answered"], true);
    assert_eq!(live[0]["session"], record.display().to_string());
    assert_eq!(live[0]["socket"], sock.display().to_string());
    let listed = |v: &Value| {
        v["recordings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["path"] == record.display().to_string())
    };
    assert!(listed(&v), "{v}");
    Conn::open(&sock).stop();
    finish(served);
    // Ended, its recording is still found (registered when it started), and the table says
    // its whole path.
    let v: Value = serde_json::from_str(&ok_out(d, &["ls", "--json"])).unwrap();
    assert!(v["live"].as_array().unwrap().is_empty(), "{v}");
    assert!(listed(&v), "{v}");
    let t = ok_out(d, &["ls"]);
    assert!(t.contains(&record.display().to_string()), "{t}");
}

#[test]
fn a_screens_hello_and_its_going_are_noted_in_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock, _) = serve_proved(d);
    {
        let mut c = Conn::open(&sock);
        assert_eq!(
            c.ask(r#"{"cmd":"hello","read_only":true,"screen":true}"#)["ok"],
            true
        );
        c.status();
    }
    // A script's connection is no screen: nothing noted.
    Conn::open(&sock).status();
    assert!(wait_until(Duration::from_secs(10), || {
        let mut c = Conn::open(&sock);
        c.status()["clients"] == 1
    }));
    // Notes are recorded on the session's next tick.
    std::thread::sleep(Duration::from_millis(500));
    Conn::open(&sock).stop();
    finish(served);
    let n = notes(&d.join("s.ptop"));
    let screens: Vec<&String> = n.iter().filter(|t| t.starts_with("screen ")).collect();
    assert_eq!(screens.len(), 2, "{n:?}");
    assert!(
        screens[0].starts_with("screen attached (client ") && screens[0].ends_with(", read-only)")
    );
    assert!(screens[1].starts_with("screen detached (client "));
}
