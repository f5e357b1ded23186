//! Files and security, end to end through the real binary: provetop writes only new files,
//! never through a link planted at the session, child-log or export path; its state
//! directory is private whatever the umask; an export never replaces its input; a command
//! that cannot start leaves no file behind; a session file lost while recording (deleted,
//! replaced, moved, its directory gone) is noticed, said, and nothing recorded is lost.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use provetop_shared::session::load;
use provetop_shared::Mark;
use provetop_testkit::bins::{provetop, run_provetop};
use provetop_testkit::faults::*;
use provetop_testkit::fixtures::demo_session;
use provetop_testkit::procs::{signal, wait_until};

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// A file someone else cares about: its bytes and mode, to check that they did not change.
struct Victim {
    path: std::path::PathBuf,
    bytes: Vec<u8>,
    mode: u32,
}

impl Victim {
    fn new(dir: &Path) -> Victim {
        let path = dir.join("victim");
        let bytes = b"precious: not provetop's\n".to_vec();
        std::fs::write(&path, &bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        Victim {
            path,
            bytes,
            mode: 0o644,
        }
    }

    fn assert_untouched(&self) {
        assert_eq!(
            std::fs::read(&self.path).unwrap(),
            self.bytes,
            "content changed"
        );
        assert_eq!(mode(&self.path), self.mode, "mode changed");
    }
}

fn one_line(err: &str) {
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
}

/// What a run refused before it started said: exit 1 and one line.
#[track_caller]
fn refused(o: &std::process::Output) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    one_line(&err);
    err
}

/// `provetop export SESSION --format FORMAT -o OUT`.
fn export(session: &Path, format: &str, out: &Path) -> provetop_testkit::bins::Out {
    run_provetop(&[
        "export",
        session.to_str().unwrap(),
        "--format",
        format,
        "-o",
        out.to_str().unwrap(),
    ])
}

#[test]
fn a_symlink_planted_at_the_session_path_is_refused_and_its_target_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new(dir.path());
    let s = dir.path().join("s.ptop");
    std::os::unix::fs::symlink(&victim.path, &s).unwrap();
    let o = headless(dir.path(), &s, &["--", "true"]);
    let err = refused(&o);
    assert!(
        err.contains("s.ptop") && err.contains("symbolic link"),
        "{err}"
    );
    victim.assert_untouched();
    // Nothing was started: no child log either.
    assert!(!dir.path().join("s.ptop.child.log").exists());
}

#[test]
fn the_session_writer_itself_never_follows_a_link_or_reuses_a_file() {
    // The flag check above is a courtesy; creating the file is what makes it sure (a link
    // planted between the check and the creation).
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new(dir.path());
    let link = dir.path().join("link.ptop");
    std::os::unix::fs::symlink(&victim.path, &link).unwrap();
    let header = provetop_shared::session::SessionHeader::now(vec![], 20.0);
    for p in [&link, &victim.path] {
        let e = provetop::monitor::recorder::Recorder::create(p, &header)
            .err()
            .unwrap_or_else(|| panic!("{} was written", p.display()));
        let e = format!("{e:#}");
        assert!(e.contains(&*p.to_string_lossy()), "{e}");
        one_line(&e);
    }
    victim.assert_untouched();
}

#[test]
fn an_existing_session_file_is_refused_by_name_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("old.ptop");
    std::fs::write(&s, b"yesterday's session").unwrap();
    let o = headless(dir.path(), &s, &["--", "true"]);
    let err = refused(&o);
    assert!(
        err.contains("--record") && err.contains("old.ptop") && err.contains("already exists"),
        "{err}"
    );
    assert!(err.contains("another name"), "{err}");
    assert_eq!(std::fs::read(&s).unwrap(), b"yesterday's session");
}

#[test]
fn a_symlink_planted_at_the_child_log_path_is_refused_and_its_target_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new(dir.path());
    let s = dir.path().join("s.ptop");
    std::os::unix::fs::symlink(&victim.path, dir.path().join("s.ptop.child.log")).unwrap();
    let o = headless(dir.path(), &s, &["--", "echo", "written through the link"]);
    let err = refused(&o);
    assert!(
        err.contains("child log") && err.contains("symbolic link"),
        "{err}"
    );
    victim.assert_untouched();
    assert!(
        !s.exists(),
        "a session was recorded for a child never started"
    );
}

#[test]
fn a_hard_link_at_the_child_log_path_is_not_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new(dir.path());
    let s = dir.path().join("s.ptop");
    std::fs::hard_link(&victim.path, dir.path().join("s.ptop.child.log")).unwrap();
    let o = headless(dir.path(), &s, &["--", "echo", "appended"]);
    let err = refused(&o);
    assert!(err.contains("child log"), "{err}");
    victim.assert_untouched();
}

#[test]
fn the_state_directory_is_created_0700_under_umask_000() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg("umask 000; exec \"$0\" run --headless -- true")
        .arg(provetop())
        .env("XDG_STATE_HOME", &state)
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for d in ["", "provetop", "provetop/sessions"] {
        let p = state.join(d);
        assert_eq!(mode(&p), 0o700, "{} has mode {:o}", p.display(), mode(&p));
    }
    let files: Vec<_> = std::fs::read_dir(state.join("provetop/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    // The session, its chunk index and its child log.
    assert_eq!(files.len(), 3, "{files:?}");
    for f in files {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
}

#[test]
fn an_existing_state_directory_of_ours_is_made_private() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("state/provetop/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    for d in [&sessions, &dir.path().join("state/provetop")] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let o = headless_default(dir.path(), &["--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mode(&sessions), 0o700);
    assert_eq!(mode(&dir.path().join("state/provetop")), 0o700);
}

#[test]
fn export_over_its_input_is_refused_and_the_session_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let p = demo_session(dir.path());
    let before = std::fs::read(&p).unwrap();
    let hard = dir.path().join("hard.ptop");
    std::fs::hard_link(&p, &hard).unwrap();
    let soft = dir.path().join("soft.ptop");
    std::os::unix::fs::symlink(&p, &soft).unwrap();
    let dotted = dir.path().join(".").join(p.file_name().unwrap());
    for out in [&p, &hard, &soft, &dotted] {
        for format in ["csv", "jsonl"] {
            let o = export(&p, format, out);
            assert_eq!(o.code, 1, "{}: {}", out.display(), o.stderr);
            one_line(&o.stderr);
            assert!(
                o.stderr.contains("the input") && o.stderr.contains("refusing"),
                "{}",
                o.stderr
            );
            assert_eq!(o.stdout, "");
        }
    }
    assert_eq!(std::fs::read(&p).unwrap(), before, "the session changed");
    assert!(load(&p).unwrap().warnings.is_empty());
}

#[test]
fn export_to_an_existing_file_or_a_link_is_refused_and_a_new_file_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let p = demo_session(dir.path());
    let victim = Victim::new(dir.path());
    let link = dir.path().join("link.csv");
    std::os::unix::fs::symlink(&victim.path, &link).unwrap();
    let dangling = dir.path().join("dangling.csv");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    for (out, want) in [
        (&victim.path, "already exists"),
        (&link, "symbolic link"),
        (&dangling, "symbolic link"),
    ] {
        let o = export(&p, "csv", out);
        assert_eq!(o.code, 1, "{}: {}", out.display(), o.stderr);
        one_line(&o.stderr);
        assert!(o.stderr.contains(want), "{}", o.stderr);
    }
    victim.assert_untouched();
    assert!(!dir.path().join("nowhere").exists());
    let fresh = dir.path().join("fresh.csv");
    let o = export(&p, "csv", &fresh);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(mode(&fresh), 0o600);
    assert!(std::fs::read_to_string(&fresh)
        .unwrap()
        .starts_with("timestamp,rss_kb"));
}

#[test]
fn a_command_that_cannot_start_leaves_no_child_log_and_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.ptop");
    let o = headless(dir.path(), &s, &["--", "/nonexistent/prover", "--fast"]);
    let err = stderr(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("/nonexistent/prover"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("s.ptop"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A headless `run -- sleep 60` recording to DIR/s.ptop, once a few samples are on disk.
fn recording(dir: &Path) -> (std::process::Child, std::path::PathBuf) {
    let s = dir.join("s.ptop");
    let pt = spawn_headless(dir, &s, &["--", "sleep", "60"]);
    assert!(
        wait_until(Duration::from_secs(20), || load(&s).is_ok_and(|l| samples(
            &l
        )
        .len()
            >= 5)),
        "no samples recorded"
    );
    (pt, s)
}

/// SIGTERM provetop and take what it said.
fn stop(mut pt: std::process::Child) -> (Option<i32>, String) {
    signal(pt.id(), nix::sys::signal::Signal::SIGTERM);
    let o = std::mem::replace(&mut pt, dummy())
        .wait_with_output()
        .unwrap();
    (o.status.code(), stderr(&o))
}

/// Stop provetop (as [`stop`]) and assert that it ended on the SIGTERM, said `said`, and
/// said that the session is recorded to `at`.
#[track_caller]
fn assert_stops_saying(pt: std::process::Child, said: &str, at: &Path) {
    let (code, err) = stop(pt);
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains(said), "{err}");
    assert!(
        err.contains(&format!("session recorded to {}", at.display())),
        "{err}"
    );
}

fn dummy() -> std::process::Child {
    std::process::Command::new("true").spawn().unwrap()
}

/// The records a file held before it was lost are all in `at`, with the warning and the end.
fn assert_everything_in(at: &Path, before: &provetop_shared::session::Loaded, said: &str) {
    let l = session(at);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(
        &l.records[..before.records.len()],
        &before.records[..],
        "records from before the loss are missing"
    );
    assert!(
        marks(&l)
            .iter()
            .any(|(_, m)| matches!(m, Mark::Warning { text } if text.contains(said))),
        "no warning {said:?}: {:?}",
        marks(&l)
    );
    assert!(marks(&l)
        .iter()
        .any(|(_, m)| matches!(m, Mark::ChildExited { .. })));
    assert!(samples(&l).len() > samples(before).len());
}

#[test]
fn a_session_file_deleted_while_recording_is_re_created_with_everything_and_it_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let (pt, s) = recording(dir.path());
    let before = session(&s);
    std::fs::remove_file(&s).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || s.exists()),
        "not re-created"
    );
    std::thread::sleep(Duration::from_millis(600));
    assert_stops_saying(pt, "was deleted while recording", &s);
    assert_everything_in(&s, &before, "was deleted while recording");
    assert_eq!(mode(&s), 0o600);
}

#[test]
fn a_session_file_replaced_while_recording_is_recovered_next_to_it_and_the_new_file_is_left_alone()
{
    let dir = tempfile::tempdir().unwrap();
    let (pt, s) = recording(dir.path());
    let pid = pt.id();
    let before = session(&s);
    let other = dir.path().join("other");
    std::fs::write(&other, b"someone else's file").unwrap();
    std::fs::rename(&other, &s).unwrap();
    let recovered = dir.path().join(format!("s.ptop.recovered-{pid}"));
    assert!(
        wait_until(Duration::from_secs(10), || recovered.exists()),
        "not recovered"
    );
    std::thread::sleep(Duration::from_millis(600));
    assert_stops_saying(pt, "replaced by another file", &recovered);
    assert_eq!(std::fs::read(&s).unwrap(), b"someone else's file");
    assert_everything_in(&recovered, &before, "replaced by another file");
}

#[test]
fn a_session_file_moved_while_recording_is_followed_and_it_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let (pt, s) = recording(dir.path());
    let before = session(&s);
    let moved = dir.path().join("moved.ptop");
    std::fs::rename(&s, &moved).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert_stops_saying(pt, "was moved to", &moved);
    assert!(!s.exists());
    assert_everything_in(&moved, &before, "was moved to");
}

#[test]
fn a_session_file_lost_with_its_directory_shows_rec_failing_and_is_saved_when_it_comes_back() {
    use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};
    let name = "a_session_file_lost_with_its_directory_shows_rec_failing";
    if !have_tmux(name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let s = sub.join("s.ptop");
    let cmd = format!(
        "cd {d} && exec env XDG_STATE_HOME={d}/state XDG_CONFIG_HOME={d}/config {} run --record {} -- sleep 600",
        sh_quote(&provetop().display().to_string()),
        s.display()
    );
    let tmux = Tmux::start(
        name,
        120,
        30,
        &format!("sh -c {}; echo PROVETOP-EXIT=$?; sleep 600", sh_quote(&cmd)),
    );
    tmux.wait_for("the child running", Duration::from_secs(30), |t| {
        t.contains("running pid")
    });
    assert!(wait_until(Duration::from_secs(20), || load(&s)
        .is_ok_and(|l| samples(&l).len() >= 5)));
    let before = session(&s);
    std::fs::remove_dir_all(&sub).unwrap();
    let screen = tmux.wait_for("✖ rec failing", Duration::from_secs(15), |t| {
        t.contains("✖ rec failing")
    });
    assert!(screen.contains("cannot be re-created"), "{screen}");
    // The directory comes back: the recording is saved into it, and the header says so.
    std::fs::create_dir(&sub).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || s.exists()),
        "not re-created"
    );
    tmux.wait_for("the header healthy", Duration::from_secs(10), |t| {
        !t.contains("✖ rec failing")
    });
    tmux.keys(&["q"]);
    let out = tmux.wait_for("exit", Duration::from_secs(30), |t| {
        t.contains("PROVETOP-EXIT=")
    });
    assert!(out.contains("PROVETOP-EXIT=0"), "{out}");
    assert_everything_in(&s, &before, "was deleted while recording");
}
