//! Faults on provetop's side, end to end through the real binary: signals (SIGINT, SIGHUP,
//! a real hangup of the terminal, SIGTERM headless with a stubborn child), tiny terminal
//! sizes, the disk filling up while recording, a dead stderr, `watch --pid` on another user's
//! process, and no shell anywhere between alert values, hook and child.
//!
//! SIGTERM on the screen and a panic inside the UI are covered in live_tui.rs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use provetop_shared::{Mark, RecordBody};
use provetop_testkit::bins::provetop;
use provetop_testkit::faults::*;
use provetop_testkit::procs::*;
use provetop_testkit::tmux::{have_tmux, header_pid, sh_quote, Tmux};

/// A tmux screen whose shell outlives a hangup; dropping it ends the shell's process group
/// (the shell and its trailing `sleep`), then the tmux server.
struct Screen {
    tmux: Option<Tmux>,
    shell: u32,
}

impl Screen {
    /// Close the terminal under provetop (what a dropped SSH connection does).
    fn hang_up(&mut self) {
        self.tmux.take();
    }
}

impl std::ops::Deref for Screen {
    type Target = Tmux;
    fn deref(&self) -> &Tmux {
        self.tmux.as_ref().expect("the screen was hung up")
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(-(self.shell as i32)),
            Signal::SIGKILL,
        );
    }
}

/// `provetop run --record DIR/s.ptop [EXTRA] -- CHILD...` on the screen of a private tmux,
/// started by a shell that writes provetop's exit status to DIR/rc (and keeps a handler for
/// SIGHUP, so it survives a hangup to write it). Returns (screen, provetop pid, child pid).
fn start_screen(
    name: &str,
    dir: &Path,
    size: (u16, u16),
    prefix: &str,
    extra: &str,
    child: &str,
) -> (Screen, u32, u32) {
    let d = dir.display().to_string();
    let run = format!(
        "{prefix} exec env XDG_STATE_HOME={d}/state XDG_CONFIG_HOME={d}/config {} run --record {d}/s.ptop {extra} -- {child}",
        sh_quote(&provetop().display().to_string()),
    );
    let inner = format!("echo $$ > {d}/pid; {run}");
    let cmd = format!(
        "echo $$ > {d}/shell; cd {d} && trap 'true' HUP; sh -c {}; echo $? > {d}/rc; echo PROVETOP-EXIT=$(cat {d}/rc); sleep 600",
        sh_quote(&inner)
    );
    let tmux = Tmux::start(name, size.0, size.1, &cmd);
    let read_pid = |f: &str| -> Option<u32> {
        std::fs::read_to_string(dir.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    assert!(
        wait_until(Duration::from_secs(10), || read_pid("shell").is_some()),
        "the screen's shell never started"
    );
    let scr = Screen {
        tmux: Some(tmux),
        shell: read_pid("shell").unwrap(),
    };
    let text = scr.wait_for("the child running", Duration::from_secs(30), |s| {
        s.contains("running pid")
    });
    let child = header_pid(&text).expect("child pid in the header");
    let me = read_pid("pid").expect("provetop's pid");
    (scr, me, child)
}

fn exit_code_file(dir: &Path, timeout: Duration) -> i32 {
    let p = dir.join("rc");
    assert!(
        wait_until(timeout, || std::fs::read_to_string(&p)
            .is_ok_and(|s| s.ends_with('\n'))),
        "provetop did not exit"
    );
    std::fs::read_to_string(&p).unwrap().trim().parse().unwrap()
}

/// The recording is finalized: it loads without damage, replays through classify, ends with
/// provetop's note of why it stopped and the child's exit as stopped by the given signal.
fn assert_finalized(session_path: &Path, why: &str, child_signal: i32) {
    let l = session(session_path);
    assert!(l.warnings.is_empty(), "damaged recording: {:?}", l.warnings);
    assert_classifies(session_path);
    let m = marks(&l);
    let note = m
        .iter()
        .position(|(_, m)| matches!(m, Mark::Note { text } if text == &format!("provetop stopping: {why}")))
        .unwrap_or_else(|| panic!("no 'provetop stopping: {why}' note: {m:?}"));
    let exited = m
        .iter()
        .position(|(_, m)| matches!(m, Mark::ChildExited { .. }))
        .expect("the child's exit is not recorded");
    assert!(note < exited);
    let (code, sig, _, reason) = exit_mark(&l);
    assert_eq!((code, sig), (None, Some(child_signal)), "{reason}");
    assert!(reason.starts_with("stopped: "), "{reason}");
    assert!(!samples(&l).is_empty());
}

fn signal_on_screen(name: &str, sig: Signal, status: i32) {
    if !have_tmux(name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A hangup detaches by default; these tests are of stopping.
    let (tmux, me, child) = start_screen(
        name,
        dir.path(),
        (80, 24),
        "",
        "--stop-on-hangup",
        "sleep 600",
    );
    assert_eq!(tmux.format("#{alternate_on}"), "1");
    std::thread::sleep(Duration::from_millis(1200));
    signal(me, sig);
    let s = tmux.wait_for("exit", Duration::from_secs(30), |s| {
        s.contains("PROVETOP-EXIT=")
    });
    assert!(s.contains(&format!("PROVETOP-EXIT={status}")), "{s}");
    assert!(s.contains("session recorded to"), "{s}");
    assert_eq!(tmux.format("#{alternate_on}"), "0", "terminal not restored");
    // The cursor is back and the shell prints normally (no raw mode: lines start at column 0).
    assert_eq!(tmux.format("#{cursor_flag}"), "1", "cursor still hidden");
    assert!(
        s.lines().any(|l| l.starts_with("PROVETOP-EXIT=")),
        "raw mode left on: {s}"
    );
    assert!(!alive(child), "child {child} outlived provetop");
    assert_finalized(
        &dir.path().join("s.ptop"),
        &format!("got {}", sig.as_str()),
        15,
    );
}

#[test]
fn sigint_restores_terminal_stops_child_and_finalizes_recording() {
    signal_on_screen(
        "sigint_restores_terminal_stops_child_and_finalizes_recording",
        Signal::SIGINT,
        130,
    );
}

#[test]
fn sighup_restores_terminal_stops_child_and_finalizes_recording() {
    signal_on_screen(
        "sighup_restores_terminal_stops_child_and_finalizes_recording",
        Signal::SIGHUP,
        129,
    );
}

#[test]
fn with_stop_on_hangup_a_terminal_hangup_stops_child_and_finalizes_recording() {
    // The terminal itself goes away (the SSH connection drops): tmux closes the pty.
    // Before: ratatui's Drop reported the hidden cursor with eprintln! on the dead terminal,
    // which panicked, then panicked again in the panic hook: abort (134), child killed
    // without its grace period, the end of the recording lost.
    if !have_tmux("with_stop_on_hangup_a_terminal_hangup_stops_child_and_finalizes_recording") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // `--stop-on-hangup`: the old behaviour (the default detaches: tests/server.rs).
    let (mut screen, _me, child) = start_screen(
        "hangup",
        dir.path(),
        (80, 24),
        "",
        "--stop-on-hangup",
        "sleep 600",
    );
    std::thread::sleep(Duration::from_millis(1200));
    screen.hang_up(); // kill-server: the pty is closed under provetop
    let code = exit_code_file(dir.path(), Duration::from_secs(30));
    // Whichever comes first, SIGHUP (129) or the terminal's EIO (1): a clean exit either way.
    assert!(code == 129 || code == 1, "provetop exited {code}");
    assert!(
        wait_until(Duration::from_secs(5), || !alive(child)),
        "child {child} outlived provetop"
    );
    let l = session(&dir.path().join("s.ptop"));
    let why = marks(&l)
        .into_iter()
        .find_map(|(_, m)| match m {
            Mark::Note { text } if text.starts_with("provetop stopping: ") => Some(text.clone()),
            _ => None,
        })
        .expect("no stop note");
    let why = why.trim_start_matches("provetop stopping: ").to_string();
    assert!(
        why == "got SIGHUP" || why.starts_with("terminal lost"),
        "{why}"
    );
    assert_finalized(&dir.path().join("s.ptop"), &why, 15);
}

#[test]
fn headless_sigterm_stops_a_stubborn_child_after_the_grace_period() {
    // The child ignores SIGTERM: policy is SIGTERM, then SIGKILL after --grace.
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.ptop");
    let mut pt = spawn_headless(
        dir.path(),
        &s,
        &[
            "--grace",
            "1",
            "--",
            "sh",
            "-c",
            "trap '' TERM; while :; do sleep 0.1; done",
        ],
    );
    let child = child_pid_from(&s, Duration::from_secs(10)).expect("child started");
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    signal(pt.id(), Signal::SIGTERM);
    let st = pt.wait().unwrap();
    let took = t0.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut pt.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(st.code(), Some(128 + 9), "{err}");
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_secs(8),
        "stopped in {took:?} with a 1 s grace"
    );
    assert!(err.contains("got SIGTERM: stopping the child"), "{err}");
    assert!(err.contains("child stopped: killed by SIGKILL"), "{err}");
    assert!(!alive(child));
    assert_finalized(&s, "got SIGTERM", 9);
}

#[test]
fn tiny_terminal_sizes_do_not_panic_and_the_screen_redraws() {
    if !have_tmux("tiny_terminal_sizes_do_not_panic_and_the_screen_redraws") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (tmux, me, child) = start_screen("tiny", dir.path(), (80, 24), "", "", "sleep 600");
    let sizes: &[(u16, u16)] = &[
        (10, 3),
        (1, 1),
        (3, 1),
        (1, 5),
        (2, 2),
        (40, 11),
        (250, 70),
        (10, 3),
    ];
    let resize = |w: u16, h: u16| tmux.resize(w, h);
    for pass in 0..2 {
        if pass == 1 {
            // The help overlay at the same sizes.
            resize(80, 24);
            tmux.wait_for("back to 80×24", Duration::from_secs(10), |s| {
                s.contains("running pid")
            });
            tmux.keys(&["?"]);
            tmux.wait_for("help", Duration::from_secs(10), |s| {
                s.contains("keys (? or Esc")
            });
        }
        for &(w, h) in sizes {
            resize(w, h);
            std::thread::sleep(Duration::from_millis(400));
            assert!(alive(me), "provetop died at {w}×{h}");
            let s = tmux.capture();
            assert!(
                !s.contains("PROVETOP-EXIT") && !s.contains("panicked"),
                "{w}×{h}: {s}"
            );
        }
    }
    resize(80, 24);
    tmux.keys(&["Escape"]);
    let s = tmux.wait_for("a full redraw at 80×24", Duration::from_secs(10), |s| {
        s.contains("running pid") && s.contains("rss") && !s.contains("keys (? or Esc")
    });
    assert_eq!(s.lines().count(), 24, "{s}");
    assert!(alive(child));
    tmux.keys(&["q"]);
    assert_eq!(exit_code_file(dir.path(), Duration::from_secs(30)), 0);
}

/// A tmpfs of `size` mounted on `dir`, unmounted on drop; None where mounting is not allowed.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).ok()?;
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn disk_full_while_recording_warns_monitoring_goes_on_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&dir.path().join("small"), "512k") else {
        eprintln!(
            "SKIPPED the full-disk (ENOSPC) part: cannot mount a tmpfs here; the file-size-limit test covers write errors on the screen"
        );
        return;
    };
    // Leave 8 KiB: 100 samples a second fill it within the first second.
    let filler = fs.0.join("filler");
    let free = |p: &Path| {
        let st = nix::sys::statvfs::statvfs(p).unwrap();
        st.blocks_available() as u64 * st.fragment_size() as u64
    };
    let avail = free(&fs.0);
    std::fs::write(&filler, vec![0u8; (avail - (8 << 10)) as usize]).unwrap();
    let s = fs.0.join("s.ptop");
    let mut pt = spawn_headless(
        dir.path(),
        &s,
        &[
            "--hz",
            "100",
            "--alert",
            "rss > 1KiB for 3s",
            "--",
            "sleep",
            "7",
        ],
    );
    let err = BufReader::new(pt.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in err.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let wait_line = |what: &str, timeout: Duration, lines: &mut Vec<String>| {
        let end = Instant::now() + timeout;
        loop {
            if let Some(i) = lines.iter().position(|l: &String| l.contains(what)) {
                return i;
            }
            let left = end.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) => lines.push(l),
                Err(_) => panic!("no {what:?} on stderr: {lines:#?}"),
            }
        }
    };
    let failed = wait_line(
        "No space left on device",
        Duration::from_secs(10),
        &mut lines,
    );
    // Monitoring goes on: the alert that needs 3 s of samples fires after the disk filled.
    let alert = wait_line(
        "ALERT warn: rss > 1KiB",
        Duration::from_secs(10),
        &mut lines,
    );
    assert!(alert > failed, "{lines:#?}");
    // Space comes back: recording resumes and nothing was lost.
    std::fs::remove_file(&filler).unwrap();
    wait_line(
        "works again; nothing was lost",
        Duration::from_secs(5),
        &mut lines,
    );
    let st = pt.wait().unwrap();
    reader.join().unwrap();
    lines.extend(rx.try_iter());
    assert_eq!(st.code(), Some(0), "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.contains("session recorded to")),
        "{lines:#?}"
    );
    let l = session(&s);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_classifies(&s);
    // Every sample is there: no gap in the 100 Hz series while the disk was full.
    let t: Vec<u64> = samples(&l).iter().map(|(t, _)| *t).collect();
    let gap = t.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(t.len() > 500, "{} samples in 7 s at 100 Hz", t.len());
    assert!(gap < 200_000_000, "a {gap} ns hole in the samples");
    let warnings = marks(&l)
        .into_iter()
        .filter(|(_, m)| matches!(m, Mark::Warning { .. }))
        .count();
    assert_eq!(
        warnings, 2,
        "one warning when it failed, one when it recovered"
    );
    drop(fs);
}

#[test]
fn file_size_limit_while_recording_is_shown_and_survived() {
    // `ulimit -f`: writes past the limit fail with EFBIG after SIGXFSZ, whose default action
    // killed provetop (with a core dump) before it handled the signal.
    if !have_tmux("file_size_limit_while_recording_is_shown_and_survived") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // 40 blocks of 512 bytes: the header and a few seconds of samples.
    let (tmux, me, child) = start_screen(
        "fsize",
        dir.path(),
        (100, 30),
        "ulimit -f 40;",
        "--hz 50",
        "sleep 600",
    );
    let s = tmux.wait_for("the recording failing", Duration::from_secs(30), |s| {
        s.contains("rec failing")
    });
    assert!(s.contains("recording to"), "no warning in the log: {s}");
    // Monitoring goes on: the uptime keeps counting, provetop and its child live.
    std::thread::sleep(Duration::from_secs(1));
    assert!(alive(me) && alive(child));
    tmux.wait_for("still updating", Duration::from_secs(5), |s| {
        s.contains("rec failing") && s.contains("running pid")
    });
    tmux.keys(&["q"]);
    let code = exit_code_file(dir.path(), Duration::from_secs(30));
    let after = tmux.capture();
    assert_eq!(code, 0, "{after}");
    assert!(after.contains("is incomplete"), "{after}");
    assert!(!alive(child));
    let l = session(&dir.path().join("s.ptop"));
    assert!(!samples(&l).is_empty());
    assert_classifies(&dir.path().join("s.ptop"));
}

#[test]
fn headless_with_a_dead_stderr_keeps_monitoring() {
    // stderr is a pipe whose reader is gone (EPIPE on every write). Before: the first alert
    // line panicked (eprintln!), the child was killed, exit 101.
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.ptop");
    let mut pt = headless_cmd(
        dir.path(),
        &s,
        &[
            "--alert",
            "rss > 1KiB",
            "--",
            "sh",
            "-c",
            "sleep 1.5; exit 3",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    drop(pt.stderr.take());
    let st = pt.wait().unwrap();
    assert_eq!(st.code(), Some(3));
    let l = session(&s);
    assert_eq!(exit_mark(&l).0, Some(3));
    assert!(l
        .records
        .iter()
        .any(|r| matches!(r.body, RecordBody::Alert(_))));
}

#[test]
fn watch_of_another_users_process_is_a_one_line_error() {
    // As root provetop may watch anyone; the permission path is tested by running provetop
    // itself as `nobody` against a process of root's.
    let target = std::process::id();
    let euid = nix::unistd::geteuid().as_raw();
    let out = if euid == 0 {
        let Some(setpriv) = provetop_testkit::system::need("setpriv", "util-linux") else {
            return;
        };
        let Ok(o) = Command::new(setpriv)
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                "--",
            ])
            .arg(provetop())
            .args([
                "watch",
                "--pid",
                &target.to_string(),
                "--headless",
                "--no-record",
            ])
            .env("HOME", "/nonexistent")
            .output()
        else {
            panic!("setpriv did not run");
        };
        o
    } else {
        // Not root: pid 1 belongs to someone else.
        Command::new(provetop())
            .args(["watch", "--pid", "1", "--headless", "--no-record"])
            .output()
            .unwrap()
    };
    let err = stderr(&out);
    if err.contains("Permission denied") && err.contains("setpriv") {
        eprintln!(
            "SKIPPED: nobody cannot execute {}: {err}",
            provetop().display()
        );
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let pid = if euid == 0 { target } else { 1 };
    assert_eq!(
        err.trim(),
        format!("provetop: pid {pid} belongs to another user (uid 0); provetop can only watch your own processes (run it as that user or as root)")
    );
}

#[test]
fn watch_of_a_missing_pid_is_a_one_line_error_even_with_a_screen() {
    // (headless.rs checks pid 0 and a pid above pid_max; this is a pid that just ended.)
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    let out = Command::new(provetop())
        .args(["watch", "--pid", &pid.to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim(),
        format!("provetop: no process with pid {pid}")
    );
}

/// Writes its arguments and environment to files next to itself (appending, one block per
/// run), so the test sees exactly what the hook received.
fn write_hook(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let hook = dir.join("hook.sh");
    let d = dir.display();
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nenv >> '{d}/hook.env'\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '{d}/hook.args'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    hook
}

#[test]
fn no_shell_between_values_and_the_hook_or_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let victim = dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let pwned = |n: u32| dir.path().join(format!("pwned{n}"));
    let hook = write_hook(dir.path());

    // The child's arguments reach it verbatim.
    let args = [
        format!("$(touch {d}/pwned1)"),
        format!("`touch {d}/pwned2`"),
        format!("; touch {d}/pwned3"),
        format!("| touch {d}/pwned4 && rm -rf {d}/victim"),
    ];
    // A phase name chosen by the child lands in the alert message and the hook's environment.
    let phase = format!("$(touch {d}/pwned5); rm -rf {d}/victim; `touch {d}/pwned6`");
    // Stamped 1 s ahead on the shared monotonic clock: after the child has started.
    let ts = provetop_shared::clock::mono_ns() + 1_000_000_000;
    let event = serde_json::json!({
        "ts": ts, "type": "phase_started", "proof_id": 1, "phase": phase, "partition": null
    })
    .to_string();
    let script = format!(
        "printf '%s\\n' \"$@\"; sleep 0.3; printf '%s\\n' {} >&3; sleep 3",
        sh_quote(&event)
    );
    let on_alert = format!("{} $(touch${{IFS}}{d}/pwned7) ;touch", hook.display());
    let s = dir.path().join("s.ptop");
    let mut argv: Vec<&str> = vec![
        "--alert",
        "phase_duration > 1s",
        "--on-alert",
        &on_alert,
        "--",
        "sh",
        "-c",
        &script,
        "sh",
    ];
    argv.extend(args.iter().map(String::as_str));
    let out = headless(dir.path(), &s, &argv);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("ALERT warn: phase_duration > 1s"), "{err}");
    // The alert cleared when the child exited (its value then unknown): that record replays.
    let l = session(&s);
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    assert_eq!(alerts(&l).len(), 2, "{:?}", alerts(&l));
    // The hook ran (asynchronously: give it a moment) and got the values as data.
    let env_file = dir.path().join("hook.env");
    assert!(
        wait_until(Duration::from_secs(10), || std::fs::read_to_string(
            &env_file
        )
        .is_ok_and(|e| e.contains("PROVETOP_ALERT_STATE=firing"))),
        "the hook never ran"
    );
    std::thread::sleep(Duration::from_millis(300));
    let env = std::fs::read_to_string(&env_file).unwrap();
    assert!(
        env.contains(&format!("PROVETOP_ALERT_MESSAGE=phase_duration ({phase})")),
        "{env}"
    );
    assert!(
        env.contains("PROVETOP_ALERT_RULE=phase_duration > 1s"),
        "{env}"
    );
    let hook_args = std::fs::read_to_string(dir.path().join("hook.args")).unwrap();
    assert_eq!(
        hook_args.lines().take(2).collect::<Vec<_>>(),
        vec![format!("$(touch${{IFS}}{d}/pwned7)"), ";touch".to_string()]
    );
    // The child printed its arguments (to the child log) exactly as given.
    let log = std::fs::read_to_string(dir.path().join("s.ptop.child.log")).unwrap();
    assert_eq!(log.lines().collect::<Vec<_>>(), args.to_vec());
    // Nothing was executed.
    for n in 1..=7 {
        assert!(!pwned(n).exists(), "{} exists", pwned(n).display());
    }
    assert!(victim.is_dir(), "victim removed");
    // A rule text with a command in it is refused before anything runs.
    let out = headless(
        dir.path(),
        &dir.path().join("r.ptop"),
        &[
            "--alert",
            &format!("rss > $(touch {d}/pwned8)"),
            "--",
            "true",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("provetop: --alert"), "{err}");
    assert!(!pwned(8).exists());
}
