//! Server mode's costs (numbers in docs/server.md):
//!
//! 1. attach latency to the first live frame: in process, opening a session file of 1 h and
//!    of 13.5 h of history with the follower, applying it, drawing the first frame (200x60);
//!    end to end, `provetop attach` in tmux until its screen shows the session.
//! 2. follow latency: a frame appended and flushed until the follower returns it, with
//!    inotify and with the poll fallback; end to end, a mark asked of the supervisor until it
//!    is on `replay --follow`'s screen (the recorder flushes every 500 ms).
//! 3. the supervisor's CPU with 0, 1 and 4 screens attached (utime + stime of the
//!    supervisor process, sampler included, over 10 s each).
//!
//! `cargo bench -p provetop --bench attach`; parts 1b, 2b and 3 need tmux.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use provetop::app::{App, Screen};
use provetop::follow::{Follower, Item};
use provetop::theme::Theme;
use provetop_shared::session::{SessionHeader, SessionWriter};
use provetop_shared::{Mark, Record, RecordBody};
use provetop_testkit::bins::{prover, provetop};
use provetop_testkit::fixtures::long_session;
use provetop_testkit::procs::wait_until;
use provetop_testkit::tmux::{have_tmux, sh_quote, Tmux};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Part 1a: open + apply + first frame for `n` records of history.
fn history(dir: &Path, n: usize, label: &str) {
    let p = dir.join(format!("h{n}.ptop"));
    let mut w = SessionWriter::create(&p, &SessionHeader::now(vec!["bench".into()], 20.0)).unwrap();
    let t0 = provetop_shared::clock::mono_ns().saturating_sub(n as u64 * 50_000_000);
    for r in long_session(t0).take(n) {
        w.append(&r).unwrap();
    }
    w.flush().unwrap();
    let size = std::fs::metadata(&p).unwrap().len();
    let mut runs = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let mut f = Follower::open(&p).unwrap();
        let mut app = App::new(
            Screen::Attach { read_only: false },
            Default::default(),
            Theme::colored(),
            provetop_shared::clock::mono_ns(),
        );
        for i in f.read().unwrap() {
            if let Item::Record(r) = i {
                app.model.apply(&r);
            }
        }
        let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
        term.draw(|fr| {
            provetop::ui::draw(fr, &app);
        })
        .unwrap();
        runs.push(ms(t.elapsed()));
    }
    println!(
        "attach, first frame with {label} of history ({n} records, {:.1} MB): median {:.0} ms of 3",
        size as f64 / 1e6,
        median(&mut runs)
    );
}

/// Part 2a: append-to-read latency, `n` times.
fn follow_latency(dir: &Path, poll: bool) {
    let p = dir.join(format!("follow-{poll}.ptop"));
    let mut w = SessionWriter::create(&p, &SessionHeader::now(vec!["bench".into()], 20.0)).unwrap();
    w.flush().unwrap();
    if poll {
        std::env::set_var("PROVETOP_FOLLOW_POLL", "1");
    } else {
        std::env::remove_var("PROVETOP_FOLLOW_POLL");
    }
    let mut f = Follower::open(&p).unwrap();
    assert_eq!(f.watched(), !poll, "inotify unavailable?");
    let _ = f.read().unwrap();
    let mut lat = Vec::new();
    for i in 0..40u64 {
        std::thread::sleep(Duration::from_millis(37));
        let t = Instant::now();
        w.append(&Record::new(
            i,
            RecordBody::Mark(Mark::Note { text: "x".into() }),
        ))
        .unwrap();
        w.flush().unwrap();
        loop {
            if f.due()
                && f.read()
                    .unwrap()
                    .iter()
                    .any(|i| matches!(i, Item::Record(_)))
            {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        lat.push(ms(t.elapsed()));
    }
    let max = lat.iter().cloned().fold(0.0, f64::max);
    println!(
        "follow latency, {}: median {:.2} ms, max {:.1} ms (40 appends)",
        if poll {
            "poll fallback (100 ms)"
        } else {
            "inotify"
        },
        median(&mut lat),
        max
    );
    std::env::remove_var("PROVETOP_FOLLOW_POLL");
}

fn env_sh(dir: &Path) -> String {
    let d = dir.display();
    format!("env XDG_RUNTIME_DIR={d}/run XDG_STATE_HOME={d}/state XDG_CONFIG_HOME={d}/config")
}

fn serve(dir: &Path) -> (Child, PathBuf) {
    prover();
    std::fs::create_dir_all(dir.join("run")).unwrap();
    let child = Command::new(provetop())
        .args(["serve", "--record"])
        .arg(dir.join("s.ptop"))
        .args(["--partitions", "2", "--constraints", "2000"])
        .env("XDG_RUNTIME_DIR", dir.join("run"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sockets = dir.join("run/provetop");
    let mut sock = None;
    assert!(wait_until(Duration::from_secs(30), || {
        sock = std::fs::read_dir(&sockets).ok().and_then(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "sock"))
        });
        sock.is_some()
    }));
    (child, sock.unwrap())
}

fn ask(sock: &Path, line: &str) -> serde_json::Value {
    let mut s = UnixStream::connect(sock).unwrap();
    s.write_all(format!("{line}\n").as_bytes()).unwrap();
    let mut r = String::new();
    BufReader::new(s).read_line(&mut r).unwrap();
    serde_json::from_str(&r).unwrap()
}

/// utime + stime of `pid`, seconds.
fn cpu_s(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let tick = 100.0; // USER_HZ
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / tick
}

fn attach_cmd(dir: &Path, args: &str) -> String {
    format!(
        "{} {} attach {args}; sleep 600",
        env_sh(dir),
        sh_quote(&provetop().display().to_string())
    )
}

/// Parts 1b, 2b, 3 with the real binaries.
fn end_to_end(dir: &Path) {
    let (mut served, sock) = serve(dir);
    let pid = ask(&sock, r#"{"cmd":"status"}"#)["status"]["pid"]
        .as_u64()
        .unwrap() as u32;
    assert!(wait_until(Duration::from_secs(30), || {
        ask(&sock, r#"{"cmd":"status"}"#)["status"]["proofs_done"].as_u64() >= Some(1)
    }));
    // 1b: attach to the first frame that shows the session.
    let mut lat = Vec::new();
    for i in 0..5 {
        let t = Instant::now();
        let tm = Tmux::start(
            &format!("bench-attach-{i}"),
            100,
            30,
            &attach_cmd(dir, "--latest"),
        );
        while !tm.capture().contains("running pid") {
            std::thread::sleep(Duration::from_millis(5));
        }
        lat.push(ms(t.elapsed()));
    }
    println!(
        "attach end to end (tmux start, provetop attach, first frame showing the session): median {:.0} ms of 5",
        median(&mut lat)
    );
    // 2b: a record written by the supervisor until replay --follow shows it.
    let cmd = format!(
        "{} {} replay --follow {}; sleep 600",
        env_sh(dir),
        sh_quote(&provetop().display().to_string()),
        sh_quote(&dir.join("s.ptop").display().to_string())
    );
    let tm = Tmux::start("bench-follow", 100, 30, &cmd);
    assert!(wait_until(Duration::from_secs(20), || tm
        .capture()
        .contains("running pid")));
    let mut lat = Vec::new();
    for i in 0..10 {
        std::thread::sleep(Duration::from_millis(300));
        let text = format!("bench-mark-{i}");
        let t = Instant::now();
        ask(&sock, &format!(r#"{{"cmd":"mark","text":"{text}"}}"#));
        while !tm.capture().contains(&text) {
            std::thread::sleep(Duration::from_millis(5));
        }
        lat.push(ms(t.elapsed()));
    }
    let max = lat.iter().cloned().fold(0.0, f64::max);
    println!(
        "follow end to end (mark recorded, flushed at the recorder's 500 ms, on replay --follow's screen): median {:.0} ms, max {:.0} ms of 10",
        median(&mut lat),
        max
    );
    drop(tm);
    // 3: the supervisor's CPU with 0, 1, 4 screens.
    let mut screens: Vec<Tmux> = Vec::new();
    for want in [0usize, 1, 4] {
        while screens.len() < want {
            let n = screens.len();
            let tm = Tmux::start(
                &format!("bench-cpu-{n}"),
                100,
                30,
                &attach_cmd(dir, "--latest"),
            );
            assert!(wait_until(Duration::from_secs(20), || tm
                .capture()
                .contains("running pid")));
            screens.push(tm);
        }
        std::thread::sleep(Duration::from_secs(1));
        let c0 = cpu_s(pid);
        let t = Instant::now();
        std::thread::sleep(Duration::from_secs(10));
        let c1 = cpu_s(pid);
        println!(
            "supervisor CPU with {want} screen(s) attached: {:.2} % of a core (utime+stime over {:.0} s, sampler included)",
            (c1 - c0) / t.elapsed().as_secs_f64() * 100.0,
            t.elapsed().as_secs_f64()
        );
    }
    drop(screens);
    ask(&sock, r#"{"cmd":"stop"}"#);
    let _ = served.wait();
}

fn main() {
    // `cargo bench` passes --bench; `cargo test` runs benches with no such flag: do nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    history(dir.path(), 72_000, "1 h");
    history(dir.path(), 1_000_000, "13.5 h");
    follow_latency(dir.path(), false);
    follow_latency(dir.path(), true);
    if have_tmux("attach bench (end to end)") {
        end_to_end(dir.path());
    }
}
