//! Server mode end to end, with the real binaries: a supervisor without a screen proves on;
//! screens attach in tmux (history, then live), send a mode switch the prover applies,
//! detach, and are hung up on; the supervisor survives all of it and stops only when asked.
//! The control socket under bad input; `replay --follow` (damage included); `ls`; attaching
//! to what is not there; the live screen's own detach.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use provetop_shared::session::load;
use provetop_shared::{Mark, RecordBody};
use provetop_testkit::bins::{prover, provetop};
use provetop_testkit::procs::{alive, signal, wait_until};
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};
use serde_json::Value;

/// The environment every provetop of a test shares: its runtime, state and config dirs.
fn env(cmd: &mut Command, dir: &Path) {
    cmd.env("XDG_RUNTIME_DIR", dir.join("run"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"));
}

/// The same as a shell prefix, for tmux.
fn env_sh(dir: &Path) -> String {
    let d = dir.display();
    format!("env XDG_RUNTIME_DIR={d}/run XDG_STATE_HOME={d}/state XDG_CONFIG_HOME={d}/config")
}

/// A served provetop that is stopped (SIGTERM, then SIGKILL) if a test ends without
/// [`finish`]ing it, so a failing test leaves no supervisor behind.
struct Served(Option<Child>);

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            signal(c.id(), nix::sys::signal::Signal::SIGTERM);
            if !wait_until(Duration::from_secs(15), || c.try_wait().unwrap().is_some()) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// `provetop serve` of the bundled prover (small proofs, one every 2 s), recording to
/// DIR/s.ptop; with its session socket, once that is there.
fn serve(dir: &Path, extra: &[&str]) -> (Served, PathBuf) {
    let served = serve_to(dir, &dir.join("s.ptop"), extra);
    (served, socket(dir))
}

/// `provetop serve` of the bundled prover in DIR's environment, recording to `record`.
fn serve_to(dir: &Path, record: &Path, extra: &[&str]) -> Served {
    prover();
    std::fs::create_dir_all(dir.join("run")).unwrap();
    let mut cmd = Command::new(provetop());
    cmd.args(["serve", "--record"])
        .arg(record)
        .args(["--partitions", "2", "--constraints", "2000"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    env(&mut cmd, dir);
    Served(Some(cmd.spawn().expect("start provetop serve")))
}

/// The socket of the one session in DIR, once it is there.
fn socket(dir: &Path) -> PathBuf {
    let sockets = dir.join("run").join("provetop");
    let mut found = None;
    assert!(
        wait_until(Duration::from_secs(30), || {
            found = std::fs::read_dir(&sockets).ok().and_then(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .find(|p| p.extension().is_some_and(|x| x == "sock"))
            });
            found.is_some()
        }),
        "no session socket in {}",
        sockets.display()
    );
    found.unwrap()
}

/// The id of the session serving `sock` (its socket is named by a hash of it).
fn id_of(sock: &Path) -> String {
    Conn::open(sock).status()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A detached supervisor (not our child), stopped if a test fails before its own stop.
struct StopOnDrop(u32);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if alive(self.0) {
            signal(self.0, nix::sys::signal::Signal::SIGTERM);
        }
    }
}

/// A connection to a session socket.
struct Conn {
    w: UnixStream,
    r: BufReader<UnixStream>,
}

impl Conn {
    fn open(sock: &Path) -> Conn {
        let w = UnixStream::connect(sock).expect("connect to the session socket");
        w.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let r = BufReader::new(w.try_clone().unwrap());
        Conn { w, r }
    }

    /// Send one line, read one reply.
    fn ask(&mut self, line: &str) -> Value {
        self.w.write_all(line.as_bytes()).unwrap();
        self.w.write_all(b"\n").unwrap();
        let mut reply = String::new();
        self.r.read_line(&mut reply).expect("a reply");
        serde_json::from_str(&reply).unwrap_or_else(|e| panic!("reply {reply:?}: {e}"))
    }

    fn status(&mut self) -> Value {
        let v = self.ask(r#"{"cmd":"status"}"#);
        assert_eq!(v["ok"], true, "{v}");
        v["status"].clone()
    }

    /// Ask the supervisor to stop; it must agree.
    #[track_caller]
    fn stop(&mut self) {
        assert_eq!(self.ask(r#"{"cmd":"stop"}"#)["ok"], true);
    }

    /// The prover's pid, once the supervisor has started it.
    fn child_pid(&mut self) -> u64 {
        assert!(wait_until(Duration::from_secs(30), || self.status()
            ["child_pid"]
            .is_u64()));
        self.status()["child_pid"].as_u64().unwrap()
    }
}

fn proofs(sock: &Path) -> u64 {
    Conn::open(sock).status()["proofs_done"].as_u64().unwrap()
}

/// The supervisor's own pid.
fn supervisor_pid(sock: &Path) -> u32 {
    Conn::open(sock).status()["pid"].as_u64().unwrap() as u32
}

/// Assert that the prover finishes another proof within 30 s (`what` says what it would
/// mean if not).
#[track_caller]
fn assert_proves_on(sock: &Path, what: &str) {
    let before = proofs(sock);
    assert!(
        wait_until(Duration::from_secs(30), || proofs(sock) > before),
        "{what}"
    );
}

/// Stop a supervisor that is not our child over its socket, and wait until it is gone.
#[track_caller]
fn stop_and_wait(sock: &Path, pid: u32) {
    Conn::open(sock).stop();
    assert!(
        wait_until(Duration::from_secs(30), || !alive(pid)),
        "the supervisor did not stop"
    );
}

/// Wait for the served provetop to end; its exit code and stderr.
fn finish(mut served: Served) -> (Option<i32>, String) {
    let mut child = served.0.take().expect("not finished yet");
    if !wait_until(Duration::from_secs(40), || {
        child.try_wait().unwrap().is_some()
    }) {
        let _ = child.kill();
        panic!("provetop serve did not end");
    }
    let code = child.wait().unwrap().code();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (code, err)
}

/// `provetop ARGS` (shell words, and what the shell runs after it) in the test's
/// environment, in a tmux of its own.
fn provetop_in_tmux(name: &str, dir: &Path, args: &str) -> Tmux {
    let cmd = format!(
        "{} {} {args}",
        env_sh(dir),
        sh_quote(&provetop().display().to_string())
    );
    Tmux::start(name, 100, 30, &cmd)
}

/// `provetop attach ARGS` in a tmux of its own, whose pane says ATTACH-EXIT=<status> at the
/// end.
fn attach(name: &str, dir: &Path, args: &str) -> Tmux {
    provetop_in_tmux(
        name,
        dir,
        &format!("attach {args}; echo ATTACH-EXIT=$?; sleep 600"),
    )
}

/// The screen once the pane says `MARK-EXIT=`, asserting that it says `MARK-EXIT=0`.
#[track_caller]
fn exited_0(t: &Tmux, mark: &str, what: &str, timeout: Duration) -> String {
    let s = t.wait_for(what, timeout, |s| s.contains(&format!("{mark}-EXIT=")));
    assert!(s.contains(&format!("{mark}-EXIT=0")), "{s}");
    s
}

/// The live screen of `provetop run ARGS` of the bundled prover (small proofs) recording to
/// DIR/s.ptop, in a tmux of its own whose shell runs `then` after it; once the prover runs.
fn live(name: &str, dir: &Path, args: &str, then: &str) -> Tmux {
    prover();
    std::fs::create_dir_all(dir.join("run")).unwrap();
    let t = provetop_in_tmux(
        name,
        dir,
        &format!(
            "run {args} --record {} --partitions 2 --constraints 2000{then}",
            sh_quote(&dir.join("s.ptop").display().to_string())
        ),
    );
    t.wait_for("the prover running", Duration::from_secs(30), |s| {
        s.contains("running pid")
    });
    t
}

fn notes(p: &Path) -> Vec<String> {
    load(p)
        .unwrap()
        .records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Mark(Mark::Note { text }) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The temporary directory of a test of the screen in tmux (`name`: its tmux name); `None`
/// where tmux is not installed, and the test is skipped.
fn screen_test(name: &str) -> Option<tempfile::TempDir> {
    have_tmux(name).then(|| tempfile::tempdir().unwrap())
}

/// [`serve`] without extra flags, once the prover has finished its first proof; with the
/// session's id.
fn serve_proved(dir: &Path) -> (Served, PathBuf, String) {
    let (served, sock) = serve(dir, &[]);
    assert!(wait_until(Duration::from_secs(30), || proofs(&sock) >= 1));
    let id = id_of(&sock);
    (served, sock, id)
}

/// The supervisor a live screen in DIR left behind: its socket and pid, and the guard
/// that stops it if the test fails first.
fn left_supervisor(dir: &Path) -> (PathBuf, u32, StopOnDrop) {
    let sock = socket(dir);
    let pid = supervisor_pid(&sock);
    (sock, pid, StopOnDrop(pid))
}

#[test]
fn a_served_prover_goes_on_through_attach_mode_switch_detach_and_hangup_and_stops_when_asked() {
    let Some(dir) = screen_test("server-e2e") else {
        return;
    };
    let d = dir.path();
    let (served, sock, id) = serve_proved(d);
    let pid = supervisor_pid(&sock);

    // A screen attaches: the history (the first proof) and then live phases.
    let a = attach("server-a", d, &id);
    a.wait_for("history", Duration::from_secs(20), |s| {
        s.contains("running pid") && s.contains("proof 1 done")
    });
    // A mode switch from the screen reaches the prover, which applies it.
    a.keys(&["2"]);
    a.wait_for("the control sent", Duration::from_secs(10), |s| {
        s.contains("sent: set mode batch:2")
    });
    assert!(
        wait_until(Duration::from_secs(30), || Conn::open(&sock).status()
            ["mode"]
            == "batch:2"),
        "the prover did not switch to batch:2"
    );
    a.wait_for("the switch on the screen", Duration::from_secs(20), |s| {
        s.contains("single → batch:2")
    });
    // Detach: the screen leaves, the supervisor stays.
    a.keys(&["d"]);
    let s = exited_0(&a, "ATTACH", "detach", Duration::from_secs(10));
    assert!(s.contains("detached from"), "{s}");
    assert!(alive(pid));

    // A second screen is hung up on (its terminal killed, as an SSH drop does), and the
    // supervisor itself gets a SIGHUP too.
    let b = attach("server-b", d, "--latest");
    b.wait_for("attached", Duration::from_secs(20), |s| {
        s.contains("running pid")
    });
    drop(b);
    signal(pid, nix::sys::signal::Signal::SIGHUP);
    let before = proofs(&sock);
    let size = std::fs::metadata(d.join("s.ptop")).unwrap().len();
    assert!(
        wait_until(Duration::from_secs(30), || proofs(&sock) >= before + 2),
        "the prover stopped proving after the hangup"
    );
    assert!(std::fs::metadata(d.join("s.ptop")).unwrap().len() > size);
    assert!(alive(pid));

    // A third screen sees everything in between, then stops the session (q asks first).
    let c = attach("server-c", d, &d.join("s.ptop").display().to_string());
    let last = format!("proof {} done", before + 2);
    c.wait_for("everything since", Duration::from_secs(20), |s| {
        s.contains(&last)
    });
    c.keys(&["q"]);
    c.wait_for("the question", Duration::from_secs(10), |s| {
        s.contains("stop the prover? y")
    });
    c.keys(&["x"]);
    c.wait_for("staying", Duration::from_secs(10), |s| {
        s.contains("staying")
    });
    assert!(alive(pid));
    c.keys(&["q"]);
    c.wait_for("the question again", Duration::from_secs(10), |s| {
        s.contains("stop the prover? y")
    });
    c.keys(&["y"]);
    exited_0(&c, "ATTACH", "the stop", Duration::from_secs(30));
    let (code, err) = finish(served);
    assert!(code.is_some(), "provetop serve was killed: {err}");
    assert!(err.contains("got SIGHUP: going on"), "{err}");
    let n = notes(&d.join("s.ptop"));
    assert!(
        n.iter()
            .any(|t| t.starts_with("provetop stopping: stop asked")),
        "{n:?}"
    );
    let l = load(&d.join("s.ptop")).unwrap();
    assert!(l
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Mark(Mark::ChildExited { .. }))));
    assert!(!sock.exists(), "the socket outlived its supervisor");
}

#[test]
fn a_read_only_attach_cannot_send_controls() {
    let name = "server-ro";
    let Some(dir) = screen_test(name) else {
        return;
    };
    let d = dir.path();
    let (served, sock, id) = serve_proved(d);
    let t = attach(name, d, &format!("--read-only {id}"));
    t.wait_for("attached", Duration::from_secs(20), |s| {
        s.contains("running pid")
    });
    // The prover keys are not there, and q leaves without asking or stopping.
    t.keys(&["2", "p", "n"]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(!t.capture().contains("sent:"));
    t.keys(&["q"]);
    exited_0(&t, "ATTACH", "quit", Duration::from_secs(10));
    // The supervisor refuses a read-only connection's controls whatever it sends.
    let mut c = Conn::open(&sock);
    assert_eq!(
        c.ask(r#"{"cmd":"hello","read_only":true}"#)["read_only"],
        true
    );
    for req in [
        r#"{"cmd":"control","control":{"type":"set_mode","mode":"batch:2"}}"#,
        r#"{"cmd":"stop"}"#,
        r#"{"cmd":"mark","text":"x"}"#,
        r#"{"cmd":"hello","read_only":false}"#,
        r#"{"cmd":"control","control":{"type":"pause"}}"#,
    ] {
        let v = c.ask(req);
        if req.contains("hello") {
            assert_eq!(v["read_only"], true, "read-only is for good: {v}");
        } else {
            assert_eq!(v["error"], "read-only connection: not sent", "{v}");
        }
    }
    assert_eq!(c.status()["mode"], "single");
    signal(supervisor_pid(&sock), nix::sys::signal::Signal::SIGTERM);
    finish(served);
    let l = load(&d.join("s.ptop")).unwrap();
    assert!(
        !l.records
            .iter()
            .any(|r| matches!(r.body, RecordBody::Control(_))),
        "a control reached the prover"
    );
}

#[test]
fn garbage_oversized_and_unknown_requests_get_error_replies_and_the_supervisor_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock) = serve(d, &[]);
    let mut c = Conn::open(&sock);
    let v = c.ask("this is not json");
    assert_eq!(v["ok"], false);
    assert!(
        v["error"].as_str().unwrap().starts_with("not a request"),
        "{v}"
    );
    let v = c.ask(&"x".repeat(200_000));
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("longer than 65536 bytes"),
        "{v}"
    );
    let v = c.ask(r#"{"cmd":"rm -rf /"}"#);
    assert_eq!(v["ok"], false, "{v}");
    let v = c.ask(r#"{"cmd":"control","control":{"type":"set_mode","mode":"batch:0"}}"#);
    assert_eq!(v["ok"], false, "{v}");
    // Binary junk with a newline in it.
    let v = c.ask("\u{0}\u{1}\u{fffd}{{{");
    assert_eq!(v["ok"], false, "{v}");
    // Still the same connection, still answering.
    assert_eq!(
        c.status()["session"],
        d.join("s.ptop").display().to_string()
    );
    let v = c.ask(r#"{"cmd":"alerts"}"#);
    assert!(v["firing"].is_array(), "{v}");
    assert_eq!(
        c.ask(r#"{"cmd":"mark","text":"from a script"}"#)["ok"],
        true
    );
    let v = c.ask(r#"{"cmd":"restart"}"#);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("--restart on-failure"),
        "{v}"
    );
    c.stop();
    let (code, err) = finish(served);
    assert!(code.is_some(), "{err}");
    assert!(notes(&d.join("s.ptop")).contains(&"mark: from a script".to_string()));
}

#[test]
fn a_client_that_stops_reading_is_dropped_with_a_note_and_does_not_stall_the_supervisor() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock) = serve(d, &[]);
    // Thousands of requests, never a reply read.
    let mut deaf = UnixStream::connect(&sock).unwrap();
    let flood = std::thread::spawn(move || {
        let line = "{\"cmd\":\"status\"}\n".repeat(1000);
        for _ in 0..50 {
            if deaf.write_all(line.as_bytes()).is_err() {
                return true;
            }
        }
        // Its connection is closed once it is dropped: a read ends.
        deaf.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut deaf, &mut sink);
        true
    });
    // Meanwhile another client is answered promptly, every time.
    let mut c = Conn::open(&sock);
    for _ in 0..20 {
        let t0 = std::time::Instant::now();
        c.status();
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "stalled: {:?}",
            t0.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(flood.join().unwrap());
    c.stop();
    finish(served);
    let n = notes(&d.join("s.ptop"));
    assert!(
        n.iter()
            .any(|t| t.contains("dropped: it stopped reading its replies")),
        "{n:?}"
    );
}

#[test]
fn replay_follow_shows_records_written_after_it_opened() {
    let name = "server-follow";
    let Some(dir) = screen_test(name) else {
        return;
    };
    let d = dir.path();
    let (served, sock) = serve(d, &[]);
    let t = provetop_in_tmux(
        name,
        d,
        &format!(
            "replay --follow {}; echo FOLLOW-EXIT=$?; sleep 600",
            sh_quote(&d.join("s.ptop").display().to_string())
        ),
    );
    t.wait_for("the file so far", Duration::from_secs(20), |s| {
        s.contains("running pid")
    });
    // Written after the replay opened the file.
    let mut c = Conn::open(&sock);
    assert_eq!(
        c.ask(r#"{"cmd":"mark","text":"written-after-open"}"#)["ok"],
        true
    );
    t.wait_for("the new record", Duration::from_secs(5), |s| {
        s.contains("mark: written-after-open")
    });
    c.stop();
    finish(served);
    // The header follows the child's end (the log's last lines are the session's closing
    // notes by then).
    t.wait_for("the stop, followed too", Duration::from_secs(10), |s| {
        s.contains("stopped: exited 0")
    });
    t.keys(&["q"]);
    exited_0(&t, "FOLLOW", "quit", Duration::from_secs(10));
}

#[test]
fn replay_follow_says_where_a_second_writer_damaged_the_file_and_shows_the_records_after() {
    use provetop_shared::session::{SessionHeader, SessionWriter};
    use provetop_shared::Record;
    let name = "server-follow-damage";
    let Some(dir) = screen_test(name) else {
        return;
    };
    let d = dir.path();
    let p = d.join("s.ptop");
    let note = |text: &str| {
        Record::new(
            provetop_shared::clock::mono_ns(),
            RecordBody::Mark(Mark::Note { text: text.into() }),
        )
    };
    let mut w = SessionWriter::create(&p, &SessionHeader::now(vec!["x".into()], 10.0)).unwrap();
    w.append(&note("before-the-garbage")).unwrap();
    w.flush().unwrap();
    let at = std::fs::metadata(&p).unwrap().len();
    let t = provetop_in_tmux(
        name,
        d,
        &format!(
            "replay --follow {}; echo FOLLOW-EXIT=$?; sleep 600",
            sh_quote(&p.display().to_string())
        ),
    );
    t.wait_for("the file so far", Duration::from_secs(20), |s| {
        s.contains("before-the-garbage")
    });
    // A second writer appends what no recorder writes: the head of a frame whose length runs
    // far past the end (it used to be waited on for ever), then text.
    let mut other = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    let mut garbage = 1_000_000u32.to_le_bytes().to_vec();
    garbage.extend_from_slice(&[0, 0, 0, 0, 5]);
    garbage.extend_from_slice(&b"a line from another writer\n".repeat(4));
    other.write_all(&garbage).unwrap();
    drop(other);
    // The recorder goes on after it (as a writer with O_APPEND would).
    let mut tail = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    let mut frames = Vec::new();
    for text in ["after-the-garbage", "and-one-more"] {
        let payload = provetop_shared::session::encode_payload(&note(text));
        frames.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        frames.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        frames.extend_from_slice(&payload);
    }
    tail.write_all(&frames).unwrap();
    drop(tail);
    t.wait_for(
        "the records after the damage",
        Duration::from_secs(10),
        |s| s.contains("and-one-more"),
    );
    t.keys(&["q"]);
    let s = exited_0(&t, "FOLLOW", "quit", Duration::from_secs(10));
    // Said once, with its offset, when the screen is gone.
    let said = format!("byte {at}: damaged record");
    assert_eq!(s.matches(&said).count(), 1, "{s}");
    drop(w);
}

#[test]
fn ls_lists_the_live_session_and_the_recent_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sessions = d.join("state/provetop/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::copy(
        provetop_testkit::fixtures::repo().join("assets/all-modes-cpu.ptop"),
        sessions.join("provetop-20260101-000000-1.ptop"),
    )
    .ok();
    std::fs::write(sessions.join("provetop-20260102-000000-2.ptop"), b"x").unwrap();
    let (served, sock, id) = serve_proved(d);
    let mut cmd = Command::new(provetop());
    cmd.arg("ls");
    env(&mut cmd, d);
    let o = cmd.output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    let pid = Conn::open(&sock).status()["pid"].to_string();
    let row = out
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.contains(&pid) && row.contains("provetop-prover"),
        "{out}"
    );
    assert!(
        out.contains("recent recordings") && out.contains("provetop-20260102-000000-2.ptop"),
        "{out}"
    );
    Conn::open(&sock).stop();
    finish(served);
}

#[test]
fn attaching_to_a_dead_missing_or_foreign_session_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock) = serve(d, &[]);
    let id = id_of(&sock);
    // A supervisor killed outright leaves its socket behind: stale, never connected to.
    let pid = supervisor_pid(&sock);
    signal(pid, nix::sys::signal::Signal::SIGKILL);
    finish(served);
    assert!(sock.exists());
    let run = |args: &[&str]| {
        let mut cmd = Command::new(provetop());
        cmd.arg("attach").args(args);
        env(&mut cmd, d);
        let o = cmd.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&[&id]);
    assert_eq!(code, Some(1));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("session {id} is not running")),
        "{err}"
    );
    assert!(!sock.exists(), "the stale socket was not removed");
    let (code, err) = run(&["nosuch"]);
    assert_eq!((code, err.lines().count()), (Some(1), 1), "{err}");
    assert!(err.contains("no live"), "{err}");
    // Another user's socket (as root, chown one to uid 4242).
    if nix::unistd::geteuid().is_root() {
        let other = d.join("run/provetop").join(format!(
            "{}.sock",
            provetop::monitor::control::key("theirs-7")
        ));
        std::fs::write(&other, b"").unwrap();
        nix::unistd::chown(&other, Some(nix::unistd::Uid::from_raw(4242)), None).unwrap();
        let (code, err) = run(&["theirs-7"]);
        assert_eq!((code, err.lines().count()), (Some(1), 1), "{err}");
        assert!(err.contains("belongs to uid 4242"), "{err}");
    }
}

#[test]
fn the_live_screen_detaches_and_its_supervisor_goes_on_after_the_terminal_is_gone() {
    let name = "server-detach";
    let Some(dir) = screen_test(name) else {
        return;
    };
    let d = dir.path();
    let t = live(name, d, "", "; echo RUN-EXIT=$?; sleep 600");
    t.keys(&["d"]);
    let s = exited_0(&t, "RUN", "the prompt back", Duration::from_secs(10));
    assert!(s.contains("provetop attach"), "{s}");
    assert_eq!(t.format("#{alternate_on}"), "0");
    // The terminal goes away.
    drop(t);
    let (sock, pid, _stop) = left_supervisor(d);
    assert_proves_on(&sock, "the detached prover stopped proving");
    stop_and_wait(&sock, pid);
    let n = notes(&d.join("s.ptop"));
    assert!(n.iter().any(|t| t.contains("the screen detached")), "{n:?}");
    assert!(
        n.iter()
            .any(|t| t.starts_with("provetop stopping: stop asked")),
        "{n:?}"
    );
}

#[test]
fn restart_on_the_socket_restarts_the_prover_under_its_restart_policy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock) = serve(d, &["--restart", "on-failure"]);
    let mut c = Conn::open(&sock);
    let first = c.child_pid();
    assert_eq!(c.ask(r#"{"cmd":"restart"}"#)["ok"], true, "restart refused");
    assert!(
        wait_until(Duration::from_secs(30), || {
            let p = c.status()["child_pid"].as_u64();
            p.is_some() && p != Some(first)
        }),
        "the prover was not started again"
    );
    assert!(!alive(first as u32));
    c.stop();
    finish(served);
    let l = load(&d.join("s.ptop")).unwrap();
    assert!(l
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Mark(Mark::Restart { .. }))));
}

#[test]
fn watch_of_a_served_prover_points_to_attach() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock) = serve(d, &[]);
    let mut c = Conn::open(&sock);
    let child = c.child_pid();
    let id = c.status()["id"].as_str().unwrap().to_string();
    let mut cmd = Command::new(provetop());
    cmd.args(["watch", "--headless", "--no-record", &child.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    env(&mut cmd, d);
    let mut w = cmd.spawn().unwrap();
    let mut first = String::new();
    BufReader::new(w.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    signal(w.id(), nix::sys::signal::Signal::SIGTERM);
    let _ = w.wait();
    assert!(
        first.contains(&format!("is supervised by provetop session {id}"))
            && first.contains(&format!("provetop attach {id}")),
        "{first}"
    );
    c.stop();
    finish(served);
}

#[test]
fn the_plain_live_screen_detaches_when_its_terminal_is_killed_and_attach_brings_it_back() {
    let name = "server-hangup";
    let Some(dir) = screen_test(name) else {
        return;
    };
    let d = dir.path();
    // The README's first command, with no flag about hangups (and without the testkit's
    // PROVETOP_STOP_ON_HANGUP).
    prover();
    std::fs::create_dir_all(d.join("run")).unwrap();
    let t = Tmux::start(
        name,
        100,
        30,
        &format!(
            "unset PROVETOP_STOP_ON_HANGUP; {} {} run --record {} --partitions 2 --constraints 2000",
            env_sh(d),
            sh_quote(&provetop().display().to_string()),
            sh_quote(&d.join("s.ptop").display().to_string())
        ),
    );
    t.wait_for("the prover running", Duration::from_secs(30), |s| {
        s.contains("running pid")
    });
    let (sock, pid, _stop) = left_supervisor(d);
    // The SSH connection drops: the terminal and everything in its session get a hangup.
    drop(t);
    assert_proves_on(&sock, "the prover stopped proving after the hangup");
    assert!(alive(pid));
    // The operator logs in again: `provetop attach` brings the screen back, history and all.
    let id = id_of(&sock);
    let a = attach("server-hangup-back", d, "");
    a.wait_for("the screen back", Duration::from_secs(20), |s| {
        s.contains(&format!("attached to {id}")) || s.contains("proof 1 done")
    });
    a.wait_for("its prover running", Duration::from_secs(20), |s| {
        s.contains("running pid")
    });
    a.keys(&["d"]);
    exited_0(&a, "ATTACH", "the prompt back", Duration::from_secs(10));
    stop_and_wait(&sock, pid);
    let n = notes(&d.join("s.ptop"));
    assert!(
        n.iter()
            .any(|t| t.starts_with("the screen's terminal hung up (detached")),
        "{n:?}"
    );
    assert!(
        n.iter().any(|t| t.starts_with("screen attached (client")),
        "{n:?}"
    );
    assert!(
        n.iter().any(|t| t.starts_with("screen detached (client")),
        "{n:?}"
    );
}

#[test]
fn with_provetop_stop_on_hangup_set_a_hangup_stops_the_plain_screen() {
    let name = "server-hangup-stop";
    let Some(dir) = screen_test(name) else {
        return;
    };
    let d = dir.path();
    // The testkit's tmux exports PROVETOP_STOP_ON_HANGUP=1 (its tests end by killing it).
    let t = live(name, d, "", "");
    let (sock, pid, _stop) = left_supervisor(d);
    drop(t);
    assert!(
        wait_until(Duration::from_secs(30), || !alive(pid)),
        "the supervisor went on after the hangup"
    );
    assert!(!sock.exists(), "its socket is left");
    let n = notes(&d.join("s.ptop"));
    assert!(
        !n.iter()
            .any(|t| t.starts_with("the screen's terminal hung up")),
        "{n:?}"
    );
    assert!(
        n.iter().any(|t| t.starts_with("provetop stopping: ")),
        "{n:?}"
    );
}

#[test]
fn detach_on_hangup_is_still_accepted_beside_stop_on_hangup() {
    let parse = |flag: &str| {
        let mut cmd = Command::new(provetop());
        cmd.args(["run", flag, "--help"]);
        cmd.output().unwrap().status.success()
    };
    assert!(parse("--detach-on-hangup"), "the old flag is refused");
    assert!(parse("--stop-on-hangup"));
}

#[test]
fn status_tells_an_attached_screen_the_supervisors_threshold_and_rule_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock) = serve(d, &["--thresholds", "1,2,3,4", "--alert", "rss > 3GiB"]);
    let mut c = Conn::open(&sock);
    let s = c.status();
    assert_eq!(
        s["thresholds_gib"],
        serde_json::json!([1.0, 2.0, 3.0, 4.0]),
        "{s}"
    );
    let lines = s["rule_lines"].as_array().unwrap();
    assert!(
        lines.iter().any(|l| l[1] == 3u64 << 30),
        "no 3 GiB rule line: {s}"
    );
    c.stop();
    finish(served);
}

// `status`, `mark`, `ls --json`: the socket from the command line (tests/server_cli.rs).
#[path = "server_cli.rs"]
mod cli;

// The socket directory and its files (security), the socket's name, `ls` and `attach FILE`.

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `provetop ARGS` in DIR's environment: exit code, stdout, stderr.
fn provetop_out(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(provetop());
    cmd.args(args).stdin(Stdio::null());
    env(&mut cmd, dir);
    let o = cmd.output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_shared_runtime_directory_keeps_its_mode_and_only_provetops_own_directory_is_made_private() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = d.join("run");
    std::fs::create_dir_all(&run).unwrap();
    chmod(&run, 0o1777);
    let (served, sock) = serve(d, &[]);
    assert_eq!(mode(&run), 0o1777, "$XDG_RUNTIME_DIR itself was changed");
    assert_eq!(mode(&run.join("provetop")), 0o700);
    assert_eq!(mode(&sock), 0o600);
    Conn::open(&sock).stop();
    finish(served);
}

#[test]
fn a_socket_directory_of_another_user_or_writable_by_others_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sockets = d.join("run/provetop");
    std::fs::create_dir_all(&sockets).unwrap();
    let mut cases = vec![(0o777, "others can write to it (mode 0777)")];
    if nix::unistd::geteuid().is_root() {
        cases.push((0o700, "it belongs to uid 65534, not to this user (uid 0)"));
    }
    for (m, why) in cases {
        chmod(&sockets, m);
        if why.contains("uid") {
            nix::unistd::chown(&sockets, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        }
        let said = format!("refusing the socket directory {}: {why}", sockets.display());
        for args in [&["ls"][..], &["attach", "s-1"][..]] {
            let (code, _, err) = provetop_out(d, args);
            assert_eq!((code, err.lines().count()), (Some(1), 1), "{args:?}: {err}");
            assert!(err.contains(&said), "{args:?}: {err}");
        }
        // A supervisor makes no socket there: it says why and goes on without one.
        let (code, _, err) = provetop_out(d, &["run", "--headless", "--no-record", "--", "true"]);
        assert_eq!(code, Some(0), "{err}");
        assert!(err.contains(&said), "{err}");
        let made = std::fs::read_dir(&sockets).unwrap().flatten().count();
        assert_eq!(made, 0, "a file was made in the refused directory");
    }
    // A link in its place, even to a private directory: whoever made the link chose where.
    std::fs::remove_dir(&sockets).unwrap();
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    chmod(&elsewhere, 0o700);
    std::os::unix::fs::symlink(&elsewhere, &sockets).unwrap();
    let (code, _, err) = provetop_out(d, &["ls"]);
    assert_eq!((code, err.lines().count()), (Some(1), 1), "{err}");
    assert!(err.contains("it is a symbolic link"), "{err}");
}

#[test]
fn a_session_with_a_long_descriptive_name_serves_its_socket_is_listed_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let name = format!(
        "{}.ptop",
        "c2-proof-of-a-32GiB-sector-on-the-h100-".repeat(5)
    );
    let served = serve_to(d, &d.join(&name), &[]);
    let sock = socket(d);
    let id = id_of(&sock);
    assert!(id.len() > 150, "{id}");
    let (code, out, err) = provetop_out(d, &["ls"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&id), "{out}");
    Conn::open(&sock).stop();
    let (code, err) = finish(served);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("no control socket"), "{err}");
    let left: Vec<_> = std::fs::read_dir(d.join("run/provetop"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sock") || n.ends_with(".lock"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn ls_never_removes_the_socket_of_a_live_supervisor_whose_lock_file_was_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock, id) = serve_proved(d);
    let lock = sock.with_extension("lock");
    std::fs::remove_file(&lock).unwrap();
    let (code, out, err) = provetop_out(d, &["ls"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        sock.exists(),
        "ls removed a live supervisor's socket: {out}"
    );
    assert!(!out.contains("stale"), "{out}");
    assert!(out.lines().any(|l| l.contains(&id)), "{out}");
    // Still reachable, and `attach` still finds it by its id.
    assert_proves_on(&sock, "the supervisor went on");
    Conn::open(&sock).stop();
    finish(served);
}

#[test]
fn attach_by_file_tells_apart_two_sessions_recording_to_the_same_name_in_two_folders() {
    let name = "server-by-path";
    let Some(dir) = screen_test(name) else {
        return;
    };
    let d = dir.path();
    for sub in ["a", "b"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    let a = serve_to(d, &d.join("a/s.ptop"), &[]);
    let b = serve_to(d, &d.join("b/s.ptop"), &[]);
    let sockets = d.join("run/provetop");
    let mut socks = Vec::new();
    assert!(wait_until(Duration::from_secs(30), || {
        socks = std::fs::read_dir(&sockets)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                    .collect()
            })
            .unwrap_or_default();
        socks.len() == 2
    }));
    let b_id = socks
        .iter()
        .map(|s| Conn::open(s).status())
        .find(|st| st["session"].as_str().unwrap().ends_with("b/s.ptop"))
        .map(|st| st["id"].as_str().unwrap().to_string())
        .unwrap();
    // A relative path through a link names the same file.
    std::os::unix::fs::symlink(d.join("b"), d.join("link")).unwrap();
    let t = provetop_in_tmux(
        name,
        d,
        &format!(
            "attach --read-only {}; echo ATTACH-EXIT=$?; sleep 600",
            sh_quote(&d.join("link/../b/s.ptop").display().to_string())
        ),
    );
    let s = t.wait_for("attached to b", Duration::from_secs(20), |s| {
        s.contains("attached to") || s.contains("ATTACH-EXIT=")
    });
    assert!(s.contains(&format!("attached to {b_id}")), "{s}");
    t.keys(&["q"]);
    exited_0(&t, "ATTACH", "quit", Duration::from_secs(10));
    for s in &socks {
        Conn::open(s).stop();
    }
    finish(a);
    finish(b);
}

#[test]
fn ls_shows_what_it_knows_of_a_session_that_does_not_answer_and_no_row_of_question_marks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (served, sock, id) = serve_proved(d);
    let pid = supervisor_pid(&sock);
    // A supervisor that cannot answer (stopped here; on its way out in the wild): its socket
    // still accepts, its status never comes.
    signal(pid, nix::sys::signal::Signal::SIGSTOP);
    struct Cont(u32);
    impl Drop for Cont {
        fn drop(&mut self) {
            signal(self.0, nix::sys::signal::Signal::SIGCONT);
        }
    }
    let cont = Cont(pid);
    let (code, out, err) = provetop_out(d, &["ls"]);
    drop(cont);
    assert_eq!(code, Some(0), "{err}");
    let row = out
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(!row.contains(" ? "), "{row}");
    assert!(row.contains(&pid.to_string()), "{row}");
    assert!(row.contains("s.ptop"), "{row}");
    assert!(row.contains("not answering"), "{row}");
    Conn::open(&sock).stop();
    finish(served);
}
