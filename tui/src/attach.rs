//! `provetop attach [SESSION|--latest]`: the live screen on a supervisor that runs without
//! one, and `provetop replay --follow FILE`: the same screen on a file still being written.
//!
//! The session file is the source of truth: the screen loads it from the start and then
//! follows its new complete frames ([`crate::follow`]), so it shows everything from the
//! session's start, and a screen that falls behind or loses its socket loses nothing. The
//! control socket ([`crate::monitor::control`]) only carries what the keys ask: the prover's
//! controls (forwarded by the supervisor to its control pipe) and `stop`.
//!
//! Keys are the live screen's, plus `d` (detach: the prover goes on); `q` asks before it
//! stops the prover. A hangup of the attached terminal ends only the screen. `--read-only`
//! screens declare themselves read-only to the supervisor, which refuses their controls.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use provetop_shared::classify::Thresholds;
use provetop_shared::clock::mono_ns;

use crate::app::{Action, App, Screen};
use crate::event_loop::{self, Driver, Exit};
use crate::follow::{Follower, Item};
use crate::monitor::control::{self, Client, Probe, Request};

pub use crate::cli::AttachArgs;
use crate::sessions::{live_sessions, Found};

/// How long a reply from the supervisor is waited for.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(3);
/// How often an attached screen checks that its supervisor still runs.
const LIVENESS_EVERY: Duration = Duration::from_secs(1);

/// The socket of the session `args` names, or a one-line error saying why there is none.
pub fn resolve(
    dir: &Path,
    session: Option<&str>,
    latest: bool,
) -> anyhow::Result<(String, PathBuf)> {
    let Some(asked) = session else {
        let (live, _) = live_sessions(dir);
        return match (live.len(), latest) {
            (0, _) => anyhow::bail!(
                "no live provetop session on this machine (in {})",
                dir.display()
            ),
            (_, true) | (1, _) => {
                let l = live.last().expect("one at least");
                Ok((l.id.clone(), l.socket.clone()))
            }
            (n, false) => anyhow::bail!(
                "{n} live sessions: name one (provetop ls lists them) or use --latest"
            ),
        };
    };
    let p = Path::new(asked);
    if asked.ends_with(".sock") {
        return by_socket(dir, p);
    }
    if asked.ends_with(".ptop") || asked.contains('/') {
        return by_file(dir, p);
    }
    let id = asked.to_string();
    match control::probe(dir, &id) {
        Probe::Live(sock) => return Ok((id, sock)),
        Probe::Stale => anyhow::bail!(
            "session {id} is not running: its supervisor is gone (its stale socket was removed); \
             provetop replay shows its recording"
        ),
        Probe::Foreign { uid } => {
            anyhow::bail!("session {id} belongs to uid {uid}: only its owner can attach")
        }
        Probe::Missing => {}
    }
    // Otherwise a unique part of a live id.
    let (live, stale) = live_sessions(dir);
    let hits: Vec<&Found> = live.iter().filter(|l| l.id.contains(&id)).collect();
    match hits.as_slice() {
        [one] => Ok((one.id.clone(), one.socket.clone())),
        [] => match stale.iter().find(|s| s.id.contains(&id)) {
            Some(dead) => not_running(dead),
            None => anyhow::bail!("no live session {id} (provetop ls lists them)"),
        },
        many => anyhow::bail!(
            "{id:?} names {} live sessions: {}",
            many.len(),
            many.iter()
                .map(|l| l.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn not_running<T>(dead: &Found) -> anyhow::Result<T> {
    anyhow::bail!(
        "session {} is not running: its supervisor is gone (its stale socket was removed); \
         provetop replay shows its recording",
        dead.id
    )
}

/// The session whose socket is `sock` (a path in `dir`).
fn by_socket(dir: &Path, sock: &Path) -> anyhow::Result<(String, PathBuf)> {
    let key = sock
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match control::probe_key(dir, &key) {
        Probe::Live(sock) => {
            let id = control::described(dir, &key).map_or(key, |d| d.id);
            Ok((id, sock))
        }
        Probe::Stale => anyhow::bail!(
            "{}: its supervisor is gone (its stale socket was removed)",
            sock.display()
        ),
        Probe::Foreign { uid } => {
            anyhow::bail!(
                "{} belongs to uid {uid}: only its owner can attach",
                sock.display()
            )
        }
        Probe::Missing => anyhow::bail!("no live session at {}", dir.join(sock).display()),
    }
}

/// The session that records to `file`: the same file, compared by canonical path (two
/// sessions recording to `s.ptop` in two folders differ).
fn by_file(dir: &Path, file: &Path) -> anyhow::Result<(String, PathBuf)> {
    let canonical = |p: &Path| {
        std::fs::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    let asked = canonical(file);
    let same = |f: &Found| f.session.as_deref().is_some_and(|s| canonical(s) == asked);
    let (live, stale) = live_sessions(dir);
    if let Some(one) = live.iter().find(|l| same(l)) {
        return Ok((one.id.clone(), one.socket.clone()));
    }
    match stale.iter().find(|s| same(s)) {
        Some(dead) => not_running(dead),
        None => anyhow::bail!(
            "no live session records to {} (provetop ls lists them)",
            asked.display()
        ),
    }
}

/// Feeds a screen from a followed file, and (attached) sends its keys' controls.
pub struct FollowDriver {
    follower: Follower,
    /// The way to the supervisor (None: `replay --follow`).
    link: Option<Box<dyn Reach>>,
    /// The supervisor is gone.
    gone: bool,
    warnings: Vec<String>,
    /// Newest record time applied.
    last_t: u64,
    ended_told: bool,
    /// What became of the `stop` a confirmed quit sent.
    stopped: Option<Result<(), String>>,
}

/// How an attached screen reaches its supervisor: its control socket on this machine
/// (the session's `Link`), or a bridge over SSH to another ([`crate::remote`]).
pub trait Reach {
    /// Send one request; its reply (an `ok:false` reply is an error with its text).
    fn ask(&mut self, req: &Request) -> anyhow::Result<serde_json::Value>;
    /// Looked at every tick: whether the supervisor is gone for good; news of the way to it
    /// (a dropped connection, a reconnection) goes to the footer.
    fn check(&mut self, app: &mut App) -> Reached;
    /// The screen cannot send controls.
    fn read_only(&self) -> bool;
}

/// What [`Reach::check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reached {
    /// The supervisor runs (or may: a dropped connection is being remade).
    Live,
    /// The supervisor is gone: the session ended.
    Gone,
}

/// The attached session's socket.
struct Link {
    id: String,
    socket: PathBuf,
    client: Option<Client>,
    read_only: bool,
    checked: Instant,
    /// The supervisor is gone.
    gone: bool,
}

impl Reach for Link {
    /// Ask, reconnecting once if the connection was lost (a dropped client comes back).
    fn ask(&mut self, req: &Request) -> anyhow::Result<serde_json::Value> {
        if let Some(c) = self.client.as_mut() {
            match c.ask(req) {
                Ok(v) => return Ok(v),
                Err(e) if e.downcast_ref::<std::io::Error>().is_none() => return Err(e),
                Err(_) => self.client = None,
            }
        }
        let mut c = connect(&self.socket, self.read_only)?;
        let v = c.ask(req);
        self.client = Some(c);
        v
    }

    fn check(&mut self, _app: &mut App) -> Reached {
        if !self.gone && self.checked.elapsed() >= LIVENESS_EVERY {
            self.checked = Instant::now();
            if let Some(dir) = self.socket.parent() {
                if !matches!(control::probe(dir, &self.id), Probe::Live(_)) {
                    self.gone = true;
                    self.client = None;
                }
            }
        }
        if self.gone {
            Reached::Gone
        } else {
            Reached::Live
        }
    }

    fn read_only(&self) -> bool {
        self.read_only
    }
}

fn connect(socket: &Path, read_only: bool) -> anyhow::Result<Client> {
    let mut c = Client::connect(socket, REPLY_TIMEOUT)
        .map_err(|e| anyhow::anyhow!("{}: cannot connect: {e}", socket.display()))?;
    // A screen: the session notes its attaching and detaching.
    c.ask(&Request::Hello {
        read_only,
        screen: true,
    })?;
    Ok(c)
}

/// Reading a long file's history takes this long between two frames.
const CATCH_UP: Duration = Duration::from_millis(40);

impl FollowDriver {
    /// Read what the file holds now into `app` (its first batch: the rest as the screen
    /// runs); the app's clock origin is the first record.
    fn load(&mut self, app: &mut App) {
        let first = self.poll_file(app);
        if first {
            app.origin = app.model.first_t().unwrap_or(app.origin);
        }
    }

    /// Apply what was appended; whether anything was.
    fn poll_file(&mut self, app: &mut App) -> bool {
        match self.follower.read() {
            Ok(items) => {
                let any = !items.is_empty();
                for i in items {
                    match i {
                        Item::Record(r) => {
                            self.last_t = self.last_t.max(r.t);
                            app.model.apply(&r);
                        }
                        Item::Warning(w) => {
                            let text = format!("{}: {w}", self.follower.path().display());
                            app.flash(format!("warning: {text}"), true);
                            self.warnings.push(text);
                        }
                    }
                }
                any
            }
            Err(e) => {
                app.flash(
                    format!("reading {}: {e}", self.follower.path().display()),
                    true,
                );
                false
            }
        }
    }

    /// "Now": the monotonic clock while the file is being written on this machine, else the
    /// newest record (a file from another boot or machine stops where it ends).
    fn clock(&self) -> u64 {
        let now = mono_ns();
        let recent = self.last_t <= now.saturating_add(1_000_000_000)
            && now - self.last_t.min(now) < 600 * 1_000_000_000;
        if recent || self.last_t == 0 {
            now
        } else {
            self.last_t
        }
    }
}

impl Driver for FollowDriver {
    fn poll(&mut self, app: &mut App) -> bool {
        let mut changed = false;
        if self.follower.behind() {
            // Catching up with a long file: batches for a frame's time, then a frame.
            let t0 = Instant::now();
            while self.follower.behind() && t0.elapsed() < CATCH_UP {
                changed |= self.poll_file(app);
            }
            if self.follower.behind() {
                app.flash(
                    format!("catching up: {}% of the file read", self.follower.percent()),
                    false,
                );
            } else {
                app.flash("caught up: following the file", false);
            }
        } else if self.follower.due() {
            changed |= self.poll_file(app);
        }
        app.clock = self.clock();
        if let Some(link) = self.link.as_mut() {
            if !self.gone && link.check(app) == Reached::Gone {
                self.gone = true;
            }
            if self.gone && !self.ended_told {
                self.ended_told = true;
                // Its last records (the stop, the child's exit) may still be unread.
                self.poll_file(app);
                app.flash("the session ended (its supervisor is gone); q quits", true);
                app.ask_quit = false;
                changed = true;
            }
        }
        changed
    }

    fn act(&mut self, app: &mut App, a: Action) {
        if a == Action::MarkDone {
            return self.mark(app);
        }
        let Some(link) = self.link.as_mut() else {
            return;
        };
        if a == Action::Detach {
            app.detach = true;
            return;
        }
        let Some(control) = app.control_for(a) else {
            return;
        };
        let text = crate::text::control_text(&control);
        if self.gone {
            return app.flash(format!("{text}: not sent: the session ended"), true);
        }
        match link.ask(&Request::Control { control }) {
            Ok(_) => app.flash(format!("sent: {text}"), false),
            Err(e) => app.flash(format!("{text}: {e:#}"), true),
        }
    }

    fn farewell(&mut self, app: &mut App, exit: Exit) -> bool {
        let Some(link) = self.link.as_mut() else {
            return false;
        };
        if exit != Exit::Quit || self.gone || link.read_only() {
            return false;
        }
        let asked = link.ask(&Request::Stop).map(|_| ());
        match &asked {
            Ok(()) => app.flash("stopping the prover…", false),
            Err(e) => app.flash(format!("stop: {e:#}"), true),
        }
        self.stopped = Some(asked.map_err(|e| format!("{e:#}")));
        true
    }
}

impl FollowDriver {
    /// The mark typed: into the session through its socket (attached; the supervisor notes
    /// it now, as `provetop mark` does), else (a followed file: nothing to write to) into
    /// this screen's view at the mark's time.
    fn mark(&mut self, app: &mut App) {
        let Some((at, text)) = app.view.mark_done.take() else {
            return;
        };
        let gone = self.gone;
        match self.link.as_mut() {
            Some(link) if !gone => {
                let text = crate::ui::mark_text(app, at, &text);
                match link.ask(&Request::Mark { text: text.clone() }) {
                    Ok(_) => app.flash(format!("marked: {text}"), false),
                    Err(e) => app.flash(format!("mark not added: {e:#}"), true),
                }
            }
            Some(_) => app.flash("mark not added: the session ended", true),
            None => {
                let note = crate::text::mark_note(&text);
                app.model.apply(&provetop_shared::Record::new(
                    at,
                    provetop_shared::RecordBody::Mark(provetop_shared::Mark::Note { text: note }),
                ));
                app.flash(
                    format!("marked on this screen: {text} (the file is not written)"),
                    false,
                );
            }
        }
    }
}

/// `provetop attach`.
pub fn main(args: &AttachArgs) -> anyhow::Result<i32> {
    let dir = control::socket_dir()?;
    let (id, socket) = resolve(&dir, args.session.as_deref(), args.latest)?;
    let mut client = connect(&socket, args.read_only)?;
    let status = client.status()?;
    let Some(file) = status.session.clone() else {
        anyhow::bail!("session {id} does not record (--no-record): there is no file to attach to");
    };
    let follower = Follower::open(&file)?;
    let link = Link {
        id: id.clone(),
        socket,
        client: Some(client),
        read_only: args.read_only,
        checked: Instant::now(),
        gone: false,
    };
    let screen = Screen::Attach {
        read_only: args.read_only,
    };
    let hello = format!(
        "attached to {id}{}; d detaches",
        if args.read_only { " (read-only)" } else { "" }
    );
    // The supervisor's lines unless asked otherwise: the screen shows its session as its
    // own screen would.
    let thresholds = thresholds_of(args, &status);
    let start = Start {
        hello: Some(hello),
        rule_lines: status.rule_lines.clone(),
        look: crate::settings::screen::load(&args.screen, None)?,
    };
    let (exit, warnings, stopped) = run(
        follower,
        Some(Box::new(link)),
        screen,
        thresholds,
        &file,
        start,
    )?;
    let result = match (exit, stopped) {
        (Ok(Exit::Detach), _) => {
            crate::say!("provetop: detached from {id}; the prover goes on (provetop attach {id})");
            Ok(0)
        }
        (Ok(Exit::Quit), Some(Ok(()))) => {
            crate::say!(
                "provetop: session {id} stops: its prover is stopped, its recording finished"
            );
            Ok(0)
        }
        (Ok(Exit::Quit), Some(Err(e))) => Err(anyhow::anyhow!("session {id}: stop not sent: {e}")),
        (Ok(e), _) => Ok(e.status()),
        (Err(e), _) => Err(e),
    };
    for w in warnings {
        crate::say!("provetop: warning: {w}");
    }
    result
}

/// The screen's threshold lines: the flag's, else the supervisor's, else the defaults.
pub fn thresholds_of(args: &AttachArgs, status: &control::Status) -> Thresholds {
    args.thresholds
        .or(status
            .thresholds_gib
            .map(|[idle, gpu, synth, peak]| Thresholds {
                idle,
                gpu,
                synth,
                peak,
            }))
        .unwrap_or_default()
}

/// `provetop replay --follow FILE`.
pub fn follow_main(
    file: &Path,
    thresholds: Thresholds,
    look: crate::settings::screen::Look,
) -> anyhow::Result<i32> {
    let follower = Follower::open(file)?;
    let start = Start {
        hello: None,
        rule_lines: Vec::new(),
        look,
    };
    let (exit, warnings, _) = run(follower, None, Screen::Follow, thresholds, file, start)?;
    for w in warnings {
        crate::say!("provetop: warning: {w}");
    }
    exit.map(|e| e.status())
}

/// What the screen starts with besides the file: a footer greeting, the alert rules' lines.
pub struct Start {
    pub hello: Option<String>,
    pub rule_lines: Vec<(String, u64)>,
    /// The screen's palette and mouse.
    pub look: crate::settings::screen::Look,
}

/// How the screen ended, the warnings to print, and the fate of a `stop` it sent.
pub type Ran = (
    anyhow::Result<Exit>,
    Vec<String>,
    Option<Result<(), String>>,
);

/// The attached (or following) screen on `follower`'s file until it ends.
pub fn run(
    follower: Follower,
    link: Option<Box<dyn Reach>>,
    screen: Screen,
    thresholds: Thresholds,
    file: &Path,
    start: Start,
) -> anyhow::Result<Ran> {
    let mut driver = FollowDriver {
        follower,
        link,
        gone: false,
        warnings: Vec::new(),
        last_t: 0,
        ended_told: false,
        stopped: None,
    };
    let mut app = App::new(screen, thresholds, start.look.theme, mono_ns());
    app.mouse = start.look.mouse;
    app.recording = Some(file.display().to_string());
    if let Some(h) = start.hello {
        app.flash(h, false);
    }
    app.rule_lines = start.rule_lines;
    // A warning found while loading takes the footer over the greeting.
    driver.load(&mut app);
    app.clock = driver.clock();
    crate::terminal::install_panic_hook(|| {});
    let rt = crate::monitor::runtime()?;
    let exit = rt.block_on(async {
        let stop = crate::monitor::signals::stop_signal();
        event_loop::run_on_terminal(&mut app, &mut driver, stop, false).await
    });
    crate::terminal::restore();
    Ok((exit, driver.warnings, driver.stopped))
}
