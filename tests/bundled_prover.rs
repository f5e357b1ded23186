//! `provetop run` with the bundled prover: `--proofs N` proves N and ends; the prover's own
//! errors (a bad flag) are shown, not hidden behind provetop's exit — headless, and after
//! the screen closes.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use provetop_shared::session::load;
use provetop_shared::{Event, Mark, RecordBody};
use provetop_testkit::bins::{prover, provetop};
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};

/// Run provetop to its end, or kill it after `limit` (then fail).
fn run_bounded(dir: &std::path::Path, args: &[&str], limit: Duration) -> (i32, String) {
    let mut child = Command::new(provetop())
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start provetop");
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return (st.code().unwrap_or(-1), err);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("provetop {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `provetop run --headless --record DIR/NAME FLAGS` of the bundled prover, within `limit`:
/// the session's path, the exit code and stderr.
fn run_recorded(
    dir: &std::path::Path,
    name: &str,
    flags: &[&str],
    limit: Duration,
) -> (std::path::PathBuf, i32, String) {
    prover();
    let s = dir.join(name);
    let args = [
        &["run", "--headless", "--record", s.to_str().unwrap()],
        flags,
    ]
    .concat();
    let (code, err) = run_bounded(dir, &args, limit);
    (s, code, err)
}

#[test]
fn run_with_proofs_n_proves_n_and_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (s, code, err) = run_recorded(
        dir.path(),
        "n.ptop",
        &["--proofs", "2", "--partitions", "1", "--constraints", "500"],
        Duration::from_secs(300),
    );
    assert_eq!(code, 0, "{err}");
    let recs = load(&s).unwrap().records;
    let finished = recs
        .iter()
        .filter(|r| {
            matches!(
                &r.body,
                RecordBody::Event(Event::ProofFinished { ok: true, .. })
            )
        })
        .count();
    assert_eq!(finished, 2, "{err}");
    assert!(recs.iter().any(|r| matches!(
        r.body,
        RecordBody::Mark(Mark::ChildExited { code: Some(0), .. })
    )));
}

#[test]
fn the_bundled_provers_own_error_is_shown_headless() {
    let dir = tempfile::tempdir().unwrap();
    let (_, code, err) = run_recorded(
        dir.path(),
        "bad.ptop",
        &["--partitions", "0"],
        Duration::from_secs(60),
    );
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("the child's last output"), "{err}");
    // clap's words, from the prover's stderr.
    assert!(err.contains("'0'") && err.contains("--partitions"), "{err}");
}

#[test]
fn gpus_reaches_the_bundled_prover_which_names_what_is_wrong_with_it() {
    prover();
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--headless",
        "--no-record",
        "--proofs",
        "1",
        "--gpus",
    ];
    let (code, err) = run_bounded(
        dir.path(),
        &[&args[..], &["0,0"]].concat(),
        Duration::from_secs(60),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--gpus") && err.contains("GPU 0 is named twice"),
        "{err}"
    );
    // With a command of one's own, the bundled prover's flags belong after `--`.
    let (code, err) = run_bounded(
        dir.path(),
        &[
            "run",
            "--headless",
            "--no-record",
            "--gpus",
            "0",
            "--",
            "true",
        ],
        Duration::from_secs(60),
    );
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("--gpus configure the bundled prover"), "{err}");
}

#[test]
fn the_bundled_provers_own_error_is_shown_after_the_screen_closes() {
    if !have_tmux("the_bundled_provers_own_error_is_shown_after_the_screen_closes") {
        return;
    }
    prover();
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("bad.ptop");
    let cmd = format!(
        "XDG_CONFIG_HOME={cfg} XDG_CACHE_HOME={cfg} {} run --record {} --partitions 0; echo PROVETOP-EXIT=$?; sleep 600",
        sh_quote(&provetop().display().to_string()),
        sh_quote(&s.display().to_string()),
        cfg = sh_quote(&dir.path().display().to_string()),
    );
    let tmux = Tmux::start("prover-error", 100, 30, &cmd);
    let t = Duration::from_secs(30);
    tmux.wait_for("the child's exit on screen", t, |s| s.contains("q quits"));
    tmux.keys(&["q"]);
    let s = tmux.wait_for("provetop's exit", t, |s| s.contains("PROVETOP-EXIT="));
    assert!(s.contains("the child's last output"), "{s}");
    assert!(s.contains("--partitions"), "{s}");
}
