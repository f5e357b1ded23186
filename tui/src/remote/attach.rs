//! `provetop attach HOST:SESSION`: the attached screen ([`crate::attach`]) on a session of
//! another machine. The remote bridge streams the session file; its bytes are appended to a
//! local copy (`$XDG_STATE_HOME/provetop/remote/HOST/ID.ptop`, started afresh by each attach)
//! that the screen follows as it follows a local file, and controls travel as control-socket
//! requests over the same channel (`Remote`, the screen's [`Reach`]).
//!
//! A dropped connection (the network, a killed `ssh`) ends nothing remote: the screen says the
//! prover goes on, and a thread reconnects (backing off to [`RETRY_MAX`]), asking the bridge
//! for the file from where the copy ends, so the screen resumes where it was.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use super::wire::{self, Frame};
use super::{Conn, Target};
use crate::app::{App, Screen};
use crate::attach::{Reach, Reached, Start, REPLY_TIMEOUT};
use crate::cli::AttachArgs;
use crate::event_loop::Exit;
use crate::follow::Follower;
use crate::monitor::control::{Request, Status};

/// Longest wait between two reconnection attempts.
pub const RETRY_MAX: Duration = Duration::from_secs(10);
/// How long the first bytes of the file may take after hello.
const FIRST_BYTES: Duration = Duration::from_secs(15);

/// What the pump thread tells the screen.
#[derive(Default)]
struct Shared {
    /// Footer news: (text, whether it is bad).
    news: Vec<(String, bool)>,
    /// The session ended (the bridge said so), or the bridge cannot go on (its error).
    ended: Option<String>,
    connected: bool,
    /// Bytes in the local copy.
    copied: u64,
}

/// The screen's way to a remote supervisor.
struct Remote {
    host: String,
    shared: Arc<Mutex<Shared>>,
    input: Arc<Mutex<Option<std::process::ChildStdin>>>,
    replies: mpsc::Receiver<serde_json::Value>,
    read_only: bool,
}

impl Reach for Remote {
    fn ask(&mut self, req: &Request) -> anyhow::Result<serde_json::Value> {
        if self.read_only && req.changes_something() {
            anyhow::bail!("read-only: attach with --control to send controls");
        }
        while self.replies.try_recv().is_ok() {}
        {
            let mut input = self.input.lock().unwrap_or_else(|e| e.into_inner());
            let Some(i) = input.as_mut() else {
                anyhow::bail!(
                    "not sent: the connection to {} is down (reconnecting)",
                    self.host
                );
            };
            let line = format!("{}\n", serde_json::to_string(req)?);
            if i.write_all(line.as_bytes())
                .and_then(|()| i.flush())
                .is_err()
            {
                anyhow::bail!("not sent: the connection to {} dropped", self.host);
            }
        }
        let v = self
            .replies
            .recv_timeout(REPLY_TIMEOUT + Duration::from_secs(2))
            .map_err(|_| anyhow::anyhow!("no reply from {} in time", self.host))?;
        if v.get("ok") == Some(&serde_json::Value::Bool(true)) {
            Ok(v)
        } else {
            let e = v.get("error").and_then(|e| e.as_str()).unwrap_or("error");
            anyhow::bail!("{}", crate::text::inert(e))
        }
    }

    fn check(&mut self, app: &mut App) -> Reached {
        let mut s = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        for (text, bad) in s.news.drain(..) {
            app.flash(text, bad);
        }
        match &s.ended {
            Some(_) => Reached::Gone,
            None => Reached::Live,
        }
    }

    fn read_only(&self) -> bool {
        self.read_only
    }
}

/// Where the local copy of `host`'s session `id` goes.
fn copy_path(host: &str, id: &str) -> anyhow::Result<PathBuf> {
    let base =
        provetop_collect::xdg::base_dir("XDG_STATE_HOME", ".local/state").ok_or_else(|| {
            anyhow::anyhow!(
                "neither XDG_STATE_HOME nor HOME is set: nowhere to keep the remote session's copy"
            )
        })?;
    let safe: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.@".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = base.join("provetop").join("remote").join(safe);
    std::fs::create_dir_all(&dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    Ok(dir.join(format!("{id}.ptop")))
}

fn bridge_args(t: &Target, control: bool, offset: u64) -> Vec<String> {
    let mut a = vec![
        "attach".to_string(),
        t.session.clone(),
        "--offset".into(),
        offset.to_string(),
    ];
    if control {
        a.push("--control".into());
    }
    a
}

fn open(
    t: &Target,
    rp: Option<&str>,
    control: bool,
    offset: u64,
) -> anyhow::Result<(Conn, Status)> {
    let args = bridge_args(t, control, offset);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut conn = Conn::open(&t.host, rp, &refs)?;
    match wire::read(&mut conn.out) {
        Ok(Some(Frame::Status(v))) => {
            let s: Status = serde_json::from_value(v)
                .map_err(|e| anyhow::anyhow!("{}: a bad status: {e}", t.host))?;
            Ok((conn, s))
        }
        Ok(Some(Frame::Error(e))) => {
            conn.close();
            anyhow::bail!("{}: {e}", t.host)
        }
        other => {
            let e = conn.err.lock().map(|e| super::ssh_said(&e)).ok().flatten();
            conn.close();
            anyhow::bail!(
                "{}: no status from the remote provetop ({})",
                t.host,
                e.unwrap_or_else(|| format!("{other:?}"))
            )
        }
    }
}

/// The pump: frames to the copy and the replies, reconnecting after a drop until `done`.
struct Pump {
    target: Target,
    remote_provetop: Option<String>,
    control: bool,
    copy: std::fs::File,
    shared: Arc<Mutex<Shared>>,
    input: Arc<Mutex<Option<std::process::ChildStdin>>>,
    child: Arc<Mutex<Option<std::process::Child>>>,
    replies: mpsc::Sender<serde_json::Value>,
    done: Arc<AtomicBool>,
}

impl Pump {
    fn say(&self, text: String, bad: bool) {
        self.shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .news
            .push((text, bad));
    }

    /// Read one connection's frames until it drops (false) or the session ends (true).
    fn drain(&mut self, out: &mut std::io::BufReader<std::process::ChildStdout>) -> bool {
        loop {
            match wire::read(out) {
                Ok(Some(Frame::Data(b))) => {
                    if let Err(e) = self.copy.write_all(&b) {
                        self.end(format!("writing the local copy: {e}"));
                        return true;
                    }
                    self.shared.lock().unwrap_or_else(|e| e.into_inner()).copied += b.len() as u64;
                }
                Ok(Some(Frame::Reply(v))) => {
                    let _ = self.replies.send(v);
                }
                Ok(Some(Frame::Ended(_))) => {
                    self.end("the session ended".into());
                    return true;
                }
                Ok(Some(Frame::Error(e))) => {
                    self.end(format!("{}: {e}", self.target.host));
                    return true;
                }
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return false,
            }
        }
    }

    fn end(&self, why: String) {
        self.shared.lock().unwrap_or_else(|e| e.into_inner()).ended = Some(why);
    }

    fn run(mut self, mut out: std::io::BufReader<std::process::ChildStdout>) {
        let mut wait = Duration::from_secs(1);
        loop {
            let ended = self.drain(&mut out);
            *self.input.lock().unwrap_or_else(|e| e.into_inner()) = None;
            if let Some(mut c) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = c.kill();
                let _ = c.wait();
            }
            if ended || self.done.load(Ordering::SeqCst) {
                return;
            }
            self.shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .connected = false;
            self.say(
                format!(
                    "connection to {} lost: the remote prover goes on; reconnecting…",
                    self.target.host
                ),
                true,
            );
            loop {
                let t0 = Instant::now();
                while t0.elapsed() < wait {
                    if self.done.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                let offset = self.shared.lock().unwrap_or_else(|e| e.into_inner()).copied;
                match open(
                    &self.target,
                    self.remote_provetop.as_deref(),
                    self.control,
                    offset,
                ) {
                    Ok((conn, _)) => {
                        let Conn {
                            child,
                            out: o,
                            input,
                            ..
                        } = conn;
                        *self.input.lock().unwrap_or_else(|e| e.into_inner()) = Some(input);
                        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
                        self.shared
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .connected = true;
                        self.say(
                            format!(
                                "reconnected to {}: resumed at byte {offset}",
                                self.target.host
                            ),
                            false,
                        );
                        out = o;
                        wait = Duration::from_secs(1);
                        break;
                    }
                    Err(e) => {
                        self.say(format!("reconnecting: {e:#}"), true);
                        wait = (wait * 2).min(RETRY_MAX);
                    }
                }
            }
        }
    }
}

/// `provetop attach HOST:SESSION`.
pub fn main(args: &AttachArgs, t: &Target) -> anyhow::Result<i32> {
    let rp = args.remote_provetop.clone();
    let (conn, status) = open(t, rp.as_deref(), args.control, 0)?;
    let path = copy_path(&t.host, &status.id)?;
    let copy =
        std::fs::File::create(&path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let Conn {
        child,
        mut out,
        input,
        ..
    } = conn;
    // The head of the file first: the follower opens on it.
    let t0 = Instant::now();
    let mut copy_w = copy;
    let mut copied = 0u64;
    while copied == 0 {
        match wire::read(&mut out) {
            Ok(Some(Frame::Data(b))) => {
                copy_w.write_all(&b)?;
                copied += b.len() as u64;
            }
            Ok(Some(Frame::Error(e))) => anyhow::bail!("{}: {e}", t.host),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => anyhow::bail!(
                "{}: the connection dropped before the session file came",
                t.host
            ),
        }
        if t0.elapsed() > FIRST_BYTES {
            anyhow::bail!(
                "{}: the session file did not come within {} s",
                t.host,
                FIRST_BYTES.as_secs()
            );
        }
    }
    let shared = Arc::new(Mutex::new(Shared {
        connected: true,
        copied,
        ..Shared::default()
    }));
    let input = Arc::new(Mutex::new(Some(input)));
    let child = Arc::new(Mutex::new(Some(child)));
    let done = Arc::new(AtomicBool::new(false));
    let (reply_tx, replies) = mpsc::channel();
    let pump = Pump {
        target: t.clone(),
        remote_provetop: rp,
        control: args.control,
        copy: copy_w,
        shared: Arc::clone(&shared),
        input: Arc::clone(&input),
        child: Arc::clone(&child),
        replies: reply_tx,
        done: Arc::clone(&done),
    };
    std::thread::spawn(move || pump.run(out));
    let follower = Follower::open(&path)?;
    let remote = Remote {
        host: t.host.clone(),
        shared: Arc::clone(&shared),
        input,
        replies,
        read_only: !args.control,
    };
    let name = format!("{}:{}", t.host, status.id);
    let hello = format!(
        "attached to {name} over ssh{}; d detaches",
        if args.control {
            ""
        } else {
            " (read-only: --control sends keys)"
        }
    );
    let thresholds = crate::attach::thresholds_of(args, &status);
    let start = Start {
        hello: Some(crate::text::inert(&hello).into_owned()),
        rule_lines: status.rule_lines.clone(),
        look: crate::settings::screen::load(&args.screen, None)?,
    };
    let screen = Screen::Attach {
        read_only: !args.control,
    };
    let ran = crate::attach::run(
        follower,
        Some(Box::new(remote)),
        screen,
        thresholds,
        &path,
        start,
    );
    done.store(true, Ordering::SeqCst);
    if let Some(mut c) = child.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = c.kill();
        let _ = c.wait();
    }
    let (exit, warnings, stopped) = ran?;
    let s = shared.lock().unwrap_or_else(|e| e.into_inner());
    let shown = crate::text::inert(&name).into_owned();
    let result = match (exit, stopped, &s.ended) {
        (Ok(Exit::Quit), Some(Ok(())), _) => {
            crate::say!("provetop: session {shown} stops: its prover is stopped");
            Ok(0)
        }
        (Ok(Exit::Quit), Some(Err(e)), _) => {
            Err(anyhow::anyhow!("session {shown}: stop not sent: {e}"))
        }
        (Ok(_), _, Some(why)) => {
            crate::say!("provetop: {shown}: {why}");
            Ok(0)
        }
        (Ok(e), _, None) => {
            let how = if s.connected {
                "detached from"
            } else {
                "the connection was lost to"
            };
            crate::say!(
                "provetop: {how} {shown}; the remote prover goes on (provetop attach {shown}); \
                 a copy of its session is in {}",
                path.display()
            );
            Ok(e.status())
        }
        (Err(e), _, _) => Err(e),
    };
    for w in warnings {
        crate::say!("provetop: warning: {w}");
    }
    result
}
