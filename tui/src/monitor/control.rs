//! The control socket of a running session: how `provetop attach`, `provetop ls` and scripts
//! reach a supervisor that has no screen.
//!
//! Contract:
//! * One Unix socket per session, `<dir>/<id>.sock`, where `<dir>` is
//!   `$XDG_RUNTIME_DIR/provetop`, else `$XDG_STATE_HOME/provetop/sockets` (made 0700), and
//!   `<id>` is the session file's stem. The socket is 0600, and every connection's peer uid
//!   (`SO_PEERCRED`) must be the supervisor's own: anyone else gets one error line and is
//!   closed ([`peer_allowed`]).
//! * Beside it, `<id>.lock`, flocked for the supervisor's life. A socket whose lock nobody
//!   holds is stale (its supervisor died): [`probe`] says so and removes it, and is never
//!   connected to; a supervisor that cannot take the lock refuses to start its socket, so
//!   two never share one.
//! * Newline-delimited JSON: one request per line (`{"cmd":"status"}`, see [`Request`]),
//!   one reply per request, in order: `{"ok":true,...}` or `{"ok":false,"error":"..."}`.
//!   A line that is not JSON, not a known request, or longer than [`MAX_REQUEST`] bytes gets
//!   an error reply and the connection goes on.
//! * Nothing a client does stalls the supervisor: requests wait in one bounded inbox that the
//!   session drains every tick ([`ControlServer::take`]), at most [`CLIENT_IN_FLIGHT`] of
//!   each client at once (so one client cannot crowd out the others); each client's replies
//!   go through
//!   its own queue of [`CLIENT_QUEUE`] lines, written by its own task. A client whose queue
//!   is full (it stopped reading) is dropped, and the session records a note saying so; a
//!   screen that was dropped reconnects, and its data never came from here anyway (it reads
//!   the session file).
//! * `{"cmd":"hello","read_only":true}` makes a connection read-only: controls, stop,
//!   restart and marks are refused on it from then on.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use provetop_shared::Control;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, Notify};

/// Longest request line accepted, bytes (the newline not counted).
pub const MAX_REQUEST: usize = 64 * 1024;
/// Replies waiting to be written to one client; past that the client is dropped.
pub const CLIENT_QUEUE: usize = 64;
/// Requests of all clients waiting for the session's next tick.
pub const INBOX: usize = 256;
/// Requests of one client waiting at once; its next waits for one to be answered (so a
/// flooding client cannot fill the inbox for the others).
pub const CLIENT_IN_FLIGHT: usize = 8;

/// What a client may ask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Say who is connecting; `read_only` makes this connection unable to change anything.
    Hello {
        #[serde(default)]
        read_only: bool,
    },
    /// The session's [`Status`].
    Status,
    /// Send a control to the prover (what the live screen's keys send).
    Control { control: Control },
    /// Stop the session: the prover is stopped, the recording finished.
    Stop,
    /// Restart the prover (with `--restart on-failure`: its process group is killed and its
    /// restart policy starts it again).
    Restart,
    /// Add a note to the session.
    Mark { text: String },
    /// The alerts firing now and the latest changes.
    Alerts,
}

impl Request {
    /// Whether a read-only connection is refused this request.
    pub fn changes_something(&self) -> bool {
        matches!(
            self,
            Request::Control { .. } | Request::Stop | Request::Restart | Request::Mark { .. }
        )
    }
}

/// A running session, as `status` tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The session's id (its file's stem).
    pub id: String,
    /// The supervisor's pid.
    pub pid: u32,
    /// The supervised child's pid, while one runs.
    pub child_pid: Option<u32>,
    /// What is supervised.
    pub command: Vec<String>,
    /// The prover's name and version from its hello, when it spoke the protocol.
    pub prover: Option<String>,
    /// Wall-clock start, unix seconds.
    pub started_unix_s: u64,
    /// Seconds since the start.
    pub uptime_s: f64,
    /// Proofs finished (ok), failed.
    pub proofs_done: u64,
    pub proofs_failed: u64,
    /// Batch mode and state, as the prover last said.
    pub mode: Option<String>,
    pub state: Option<String>,
    /// Alerts firing now.
    pub alerts: usize,
    /// The session file being recorded.
    pub session: Option<PathBuf>,
    /// Connected clients.
    pub clients: usize,
    /// The phase threshold lines, GiB: idle, gpu, synth, peak (an attached screen draws them).
    #[serde(default)]
    pub thresholds_gib: Option<[f64; 4]>,
    /// The alert rules' lines on the chart: label, bytes.
    #[serde(default)]
    pub rule_lines: Vec<(String, u64)>,
}

/// Where session sockets live: `$XDG_RUNTIME_DIR/provetop`, else the state directory's
/// `provetop/sockets`.
pub fn socket_dir() -> anyhow::Result<PathBuf> {
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("provetop"));
    }
    let base =
        provetop_collect::xdg::base_dir("XDG_STATE_HOME", ".local/state").ok_or_else(|| {
            anyhow::anyhow!("neither XDG_RUNTIME_DIR, XDG_STATE_HOME nor HOME is set")
        })?;
    Ok(base.join("provetop").join("sockets"))
}

/// The socket of session `id` in `dir`.
pub fn socket_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.sock"))
}

fn lock_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.lock"))
}

/// The id of the session this process records to `record`: the file's stem and the
/// supervisor's pid (`s-4242`), so that two sessions recording to `s.ptop` in two
/// directories differ. A default file name (`provetop-DATE-TIME-PID`, unique already) is
/// kept as it is.
pub fn session_id(record: &Path) -> String {
    let pid = std::process::id();
    let stem = record
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "provetop".into());
    // Only characters that need no quoting in a shell or a file name.
    let stem: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.ends_with(&format!("-{pid}")) || is_default_name(&stem) {
        stem
    } else {
        format!("{stem}-{pid}")
    }
}

/// `provetop-20261202-013000-4242`: what [`crate::settings::default_session_path`] names.
fn is_default_name(stem: &str) -> bool {
    let Some(rest) = stem.strip_prefix("provetop-") else {
        return false;
    };
    let parts: Vec<&str> = rest.split('-').collect();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    matches!(parts.as_slice(), [d, t, p] if d.len() == 8 && t.len() == 6 && digits(d) && digits(t) && digits(p))
}

/// The `SO_PEERCRED` check: only the session's owner may connect.
pub fn peer_allowed(peer_uid: u32, own_uid: u32) -> Result<(), String> {
    if peer_uid == own_uid {
        Ok(())
    } else {
        Err(format!(
            "refused: this session belongs to uid {own_uid}, the connection is from uid {peer_uid}"
        ))
    }
}

/// What [`probe`] found at a session's socket.
#[derive(Debug)]
pub enum Probe {
    /// A live supervisor holds it.
    Live(PathBuf),
    /// Its supervisor is gone: the socket and lock were removed.
    Stale,
    /// No such session.
    Missing,
    /// It belongs to another user.
    Foreign { uid: u32 },
}

/// Whether session `id` in `dir` has a live supervisor. A stale socket is removed here and
/// never connected to.
pub fn probe(dir: &Path, id: &str) -> Probe {
    use std::os::unix::fs::MetadataExt;
    let sock = socket_path(dir, id);
    let lock = lock_path(dir, id);
    let Ok(meta) = std::fs::symlink_metadata(&sock) else {
        return Probe::Missing;
    };
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Probe::Foreign { uid: meta.uid() };
    }
    let held = match std::fs::File::open(&lock) {
        Ok(f) => match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockSharedNonblock) {
            Ok(_unlocked_on_drop) => false,
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => true,
            Err(_) => false,
        },
        Err(_) => false,
    };
    if held {
        Probe::Live(sock)
    } else {
        let _ = std::fs::remove_file(&sock);
        let _ = std::fs::remove_file(&lock);
        Probe::Stale
    }
}

/// A request from a client, waiting for the session to answer it.
pub struct Incoming {
    pub request: Request,
    /// Which connection (for notes).
    pub client: u64,
    to: ClientTx,
    /// One of the client's [`CLIENT_IN_FLIGHT`], given back when this is answered.
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Incoming {
    /// Answer with `{"ok":true, ...fields}`.
    pub fn ok(&self, fields: Value) {
        let mut v = json!({"ok": true});
        if let (Some(o), Value::Object(f)) = (v.as_object_mut(), fields) {
            o.extend(f);
        }
        self.to.send(&v);
    }

    /// Answer with `{"ok":false,"error":...}`.
    pub fn err(&self, error: impl std::fmt::Display) {
        self.to
            .send(&json!({"ok": false, "error": error.to_string()}));
    }
}

/// One client's reply queue, and what ends the client.
#[derive(Clone)]
struct ClientTx {
    id: u64,
    queue: mpsc::Sender<String>,
    kill: Arc<Notify>,
    notes: Arc<Mutex<Vec<String>>>,
}

impl ClientTx {
    fn send(&self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        match self.queue.try_send(line) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                // It stopped reading: drop it rather than wait for it or buffer without end.
                self.kill.notify_one();
                let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
                notes.push(format!(
                    "control client {} dropped: it stopped reading its replies ({CLIENT_QUEUE} waiting)",
                    self.id
                ));
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// The listening side, owned by the session.
pub struct ControlServer {
    id: String,
    path: PathBuf,
    lock_path: PathBuf,
    _lock: nix::fcntl::Flock<std::fs::File>,
    inbox: mpsc::Receiver<Incoming>,
    /// Requests taken off the inbox by [`Self::request`], not yet answered.
    waiting: Vec<Incoming>,
    notes: Arc<Mutex<Vec<String>>>,
    clients: Arc<AtomicUsize>,
    accept: tokio::task::JoinHandle<()>,
    started: Instant,
    started_unix_s: u64,
    /// What is supervised, for [`Status`].
    pub command: Vec<String>,
    /// The session file, for [`Status`].
    pub session: Option<PathBuf>,
    /// Whether `restart` may stop the child for its restart policy to start it again
    /// (`--restart on-failure`); without one the session would end instead.
    pub restartable: bool,
    /// The session's threshold lines and alert-rule lines, for [`Status`].
    pub thresholds: Option<provetop_shared::classify::Thresholds>,
    pub rule_lines: Vec<(String, u64)>,
}

impl ControlServer {
    /// Take session `id`'s socket in [`socket_dir`] and listen on it (on the current tokio
    /// runtime). Fails when another supervisor holds it.
    pub fn bind(id: &str) -> anyhow::Result<ControlServer> {
        Self::bind_in(&socket_dir()?, id)
    }

    /// [`Self::bind`] in `dir`.
    pub fn bind_in(dir: &Path, id: &str) -> anyhow::Result<ControlServer> {
        crate::settings::private_dir(dir)
            .with_context(|| format!("cannot create the socket directory {}", dir.display()))?;
        let path = socket_path(dir, id);
        let lock_path = lock_path(dir, id);
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("cannot open {}", lock_path.display()))?;
        let _ = std::fs::set_permissions(&lock_path, std::fs::Permissions::from_mode(0o600));
        let lock = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| match e {
                nix::errno::Errno::EWOULDBLOCK => anyhow::anyhow!(
                    "{}: another supervisor already serves session {id}",
                    path.display()
                ),
                e => anyhow::anyhow!("{}: cannot lock: {e}", lock_path.display()),
            })?;
        // We hold the lock: whatever socket is there is a dead supervisor's.
        let _ = std::fs::remove_file(&path);
        let std_listener = std::os::unix::net::UnixListener::bind(&path)
            .with_context(|| format!("cannot listen on {}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot make {} private", path.display()))?;
        std_listener.set_nonblocking(true)?;
        let listener = UnixListener::from_std(std_listener)?;
        let (tx, inbox) = mpsc::channel(INBOX);
        let notes = Arc::new(Mutex::new(Vec::new()));
        let clients = Arc::new(AtomicUsize::new(0));
        let accept = tokio::spawn(accept_loop(listener, tx, notes.clone(), clients.clone()));
        Ok(ControlServer {
            id: id.to_string(),
            path,
            lock_path,
            _lock: lock,
            inbox,
            waiting: Vec::new(),
            notes,
            clients,
            accept,
            started: Instant::now(),
            started_unix_s: provetop_shared::clock::wall_ns() / 1_000_000_000,
            command: Vec::new(),
            session: None,
            restartable: false,
            thresholds: None,
            rule_lines: Vec::new(),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Clients connected now.
    pub fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// Resolves when a request has arrived (it waits in [`Self::take`]), so a front end can
    /// answer it at once instead of at its next tick; pending forever once the accept loop
    /// is gone.
    pub async fn request(&mut self) {
        match self.inbox.recv().await {
            Some(i) => self.waiting.push(i),
            None => std::future::pending().await,
        }
    }

    /// Requests waiting to be answered, and notes to record (dropped clients).
    pub fn take(&mut self) -> (Vec<Incoming>, Vec<String>) {
        let mut v = std::mem::take(&mut self.waiting);
        while let Ok(i) = self.inbox.try_recv() {
            v.push(i);
        }
        let notes = std::mem::take(&mut *self.notes.lock().unwrap_or_else(|e| e.into_inner()));
        (v, notes)
    }

    /// Uptime and wall-clock start, for [`Status`].
    pub fn started(&self) -> (f64, u64) {
        (self.started.elapsed().as_secs_f64(), self.started_unix_s)
    }
}

/// The control socket of a session about to start: named after its recording (else after
/// this process), knowing what it supervises and whether `restart` can work.
pub fn for_session(
    record: Option<&Path>,
    command: Vec<String>,
    restartable: bool,
) -> anyhow::Result<ControlServer> {
    let id = session_id(record.unwrap_or(Path::new("provetop")));
    let mut server = ControlServer::bind(&id)?;
    server.command = command;
    server.session = record.map(|r| std::path::absolute(r).unwrap_or_else(|_| r.to_path_buf()));
    server.restartable = restartable;
    Ok(server)
}

/// Answer what the clients asked, on the session's behalf: status and alerts from the model,
/// controls forwarded to the prover through the supervisor, marks recorded. Returns why to
/// stop when a client asked for it.
pub fn answer(
    server: &mut ControlServer,
    mon: &mut super::Monitor,
    model: &mut crate::model::Model,
) -> Option<String> {
    let (incoming, notes) = server.take();
    for n in notes {
        mon.pipeline.note(model, n);
    }
    let mut stop = None;
    for i in incoming {
        match &i.request {
            Request::Status => {
                let s = status(server, mon, model);
                i.ok(json!({ "status": s }));
            }
            Request::Alerts => {
                let firing: Vec<_> = model.active_alerts.iter().map(|a| &a.alert).collect();
                let recent: Vec<_> = model.alert_history.iter().rev().take(20).collect();
                i.ok(json!({ "firing": firing, "recent": recent }));
            }
            Request::Control { control } => match &mon.supervisor {
                None => i.err("no supervised prover: controls go nowhere"),
                Some(_) if !model.has_events() => {
                    i.err("the child does not speak the provetop protocol")
                }
                Some(sup) => match sup.try_send(control.clone()) {
                    Ok(()) => i.ok(json!({ "sent": crate::text::control_text(control) })),
                    Err(e) => i.err(format!("not sent: {e}")),
                },
            },
            Request::Mark { text } => {
                let text = crate::text::inert(text).into_owned();
                mon.pipeline.note(model, format!("mark: {text}"));
                i.ok(json!({}));
            }
            Request::Restart => match mon.supervisor.as_ref().and_then(|s| s.pid()) {
                None => i.err("no prover is running"),
                Some(_) if !server.restartable => {
                    i.err("restart needs --restart on-failure (without it the session would end)")
                }
                Some(pid) => {
                    mon.pipeline
                        .note(model, format!("restart asked (client {})", i.client));
                    // The child leads its own process group; its restart policy starts it
                    // again once it has ended. SIGKILL, not SIGTERM: a prover that exits 0
                    // on SIGTERM (the bundled one does) would count as done, not failed,
                    // and the session would end instead.
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(-(pid as i32)),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                    i.ok(json!({}));
                }
            },
            Request::Stop => {
                stop = Some(format!("stop asked (control client {})", i.client));
                i.ok(json!({}));
            }
            // Answered by the connection itself.
            Request::Hello { .. } => i.ok(json!({})),
        }
    }
    stop
}

fn status(server: &ControlServer, mon: &super::Monitor, model: &crate::model::Model) -> Status {
    let (uptime_s, started_unix_s) = server.started();
    let p = &model.prover;
    Status {
        id: server.id.clone(),
        pid: std::process::id(),
        child_pid: mon.supervisor.as_ref().and_then(|s| s.pid()),
        command: server.command.clone(),
        prover: p
            .hello
            .as_ref()
            .map(|h| format!("provetop-prover {}", h.prover_version)),
        started_unix_s,
        uptime_s,
        proofs_done: p.proofs_done,
        proofs_failed: p.proofs_failed,
        mode: p.mode.map(|m| m.to_string()),
        state: p
            .state
            .map(|s| crate::model::prover::state_name(s).to_string()),
        alerts: model.active_alerts.len(),
        session: server.session.clone(),
        clients: server.clients(),
        thresholds_gib: server.thresholds.map(|t| [t.idle, t.gpu, t.synth, t.peak]),
        rule_lines: server.rule_lines.clone(),
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.accept.abort();
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

async fn accept_loop(
    listener: UnixListener,
    inbox: mpsc::Sender<Incoming>,
    notes: Arc<Mutex<Vec<String>>>,
    clients: Arc<AtomicUsize>,
) {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let own = nix::unistd::geteuid().as_raw();
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            // EMFILE and the like: do not spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let allowed = match stream.peer_cred() {
            Ok(c) => peer_allowed(c.uid(), own),
            Err(e) => Err(format!("refused: cannot read the peer's credentials: {e}")),
        };
        if let Err(e) = allowed {
            tokio::spawn(async move {
                let line = format!("{}\n", json!({"ok": false, "error": e}));
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), stream.write_all(line.as_bytes()))
                        .await;
            });
            continue;
        }
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let (inbox, notes, clients) = (inbox.clone(), notes.clone(), clients.clone());
        tokio::spawn(async move {
            clients.fetch_add(1, Ordering::Relaxed);
            serve_client(stream, id, inbox, notes).await;
            clients.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// One connection: read request lines, hand them to the session, write the replies from the
/// client's queue in a task of its own.
async fn serve_client(
    stream: UnixStream,
    id: u64,
    inbox: mpsc::Sender<Incoming>,
    notes: Arc<Mutex<Vec<String>>>,
) {
    let (mut rd, mut wr) = stream.into_split();
    let (queue, mut replies) = mpsc::channel::<String>(CLIENT_QUEUE);
    let kill = Arc::new(Notify::new());
    let to = ClientTx {
        id,
        queue,
        kill: kill.clone(),
        notes,
    };
    let writer = tokio::spawn(async move {
        while let Some(line) = replies.recv().await {
            if wr.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let slots = Arc::new(tokio::sync::Semaphore::new(CLIENT_IN_FLIGHT));
    let reader = async {
        let mut read_only = false;
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = vec![0u8; 8192];
        // Bytes of an over-long line being skipped up to its newline.
        let mut skipping = false;
        loop {
            let n = match rd.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut rest = &chunk[..n];
            while !rest.is_empty() {
                let nl = rest.iter().position(|&b| b == b'\n');
                let (part, more) = match nl {
                    Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                    None => (rest, None),
                };
                if !skipping {
                    buf.extend_from_slice(part);
                    if buf.len() > MAX_REQUEST {
                        to.send(&json!({"ok": false, "error": format!(
                            "request longer than {MAX_REQUEST} bytes: ignored up to its end of line")}));
                        buf.clear();
                        skipping = true;
                    }
                }
                match more {
                    Some(m) => {
                        if !skipping {
                            let line = std::mem::take(&mut buf);
                            if let Some(request) = parse_line(&line, &mut read_only, &to) {
                                let Ok(slot) = slots.clone().acquire_owned().await else {
                                    return;
                                };
                                let incoming = Incoming {
                                    request,
                                    client: id,
                                    to: to.clone(),
                                    _slot: slot,
                                };
                                // Waits only this client's reader, never the session.
                                if inbox.send(incoming).await.is_err() {
                                    return;
                                }
                            }
                        }
                        skipping = false;
                        rest = m;
                    }
                    None => rest = &[],
                }
            }
        }
    };
    tokio::select! {
        _ = reader => {}
        _ = kill.notified() => {}
    }
    // Dropped (it stopped reading) or gone: its pending replies go with it.
    writer.abort();
}

/// A request line for the session, or None when the connection answered it itself (bad
/// input, hello, a read-only refusal).
fn parse_line(line: &[u8], read_only: &mut bool, to: &ClientTx) -> Option<Request> {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let request: Request = match serde_json::from_str(text) {
        Ok(r) => r,
        Err(e) => {
            to.send(&json!({"ok": false, "error": format!("not a request: {e}")}));
            return None;
        }
    };
    if let Request::Hello { read_only: ro } = request {
        // Read-only is one way: a connection cannot make itself writable again.
        *read_only |= ro;
        to.send(&json!({"ok": true, "read_only": *read_only, "pid": std::process::id()}));
        return None;
    }
    if *read_only && request.changes_something() {
        to.send(&json!({"ok": false, "error": "read-only connection: not sent"}));
        return None;
    }
    Some(request)
}

/// A blocking client of a session socket (attach, ls, tests): one request, one reply.
pub struct Client {
    stream: std::os::unix::net::UnixStream,
    reader: std::io::BufReader<std::os::unix::net::UnixStream>,
}

impl Client {
    /// Connect to `sock`, with replies awaited at most `timeout`.
    pub fn connect(sock: &Path, timeout: Duration) -> std::io::Result<Client> {
        let stream = std::os::unix::net::UnixStream::connect(sock)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let reader = std::io::BufReader::new(stream.try_clone()?);
        Ok(Client { stream, reader })
    }

    /// Send one request, read its reply; an `ok:false` reply is an error with its text.
    pub fn ask(&mut self, req: &Request) -> anyhow::Result<Value> {
        use std::io::{BufRead, Write};
        let mut line = serde_json::to_string(req)?;
        line.push('\n');
        self.stream.write_all(line.as_bytes())?;
        let mut reply = String::new();
        if self.reader.read_line(&mut reply)? == 0 {
            anyhow::bail!("the supervisor closed the connection");
        }
        let v: Value = serde_json::from_str(reply.trim())
            .map_err(|e| anyhow::anyhow!("bad reply from the supervisor: {e}"))?;
        if v.get("ok") == Some(&Value::Bool(true)) {
            Ok(v)
        } else {
            let e = v.get("error").and_then(Value::as_str).unwrap_or("error");
            anyhow::bail!("{e}")
        }
    }

    /// The session's status.
    pub fn status(&mut self) -> anyhow::Result<Status> {
        let v = self.ask(&Request::Status)?;
        let s = v
            .get("status")
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("bad reply from the supervisor: no status"))?;
        Ok(serde_json::from_value(s)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_is_the_stem_and_pid_and_a_default_name_as_it_is() {
        let pid = std::process::id();
        assert_eq!(session_id(Path::new("/d/s.ptop")), format!("s-{pid}"));
        assert_eq!(
            session_id(Path::new("/d/a b;c.ptop")),
            format!("a_b_c-{pid}")
        );
        assert_eq!(
            session_id(Path::new("/d/provetop-20261202-013000-17.ptop")),
            "provetop-20261202-013000-17"
        );
    }

    #[test]
    fn only_the_owner_uid_may_connect() {
        assert!(peer_allowed(1000, 1000).is_ok());
        let e = peer_allowed(1001, 1000).unwrap_err();
        assert_eq!(
            e,
            "refused: this session belongs to uid 1000, the connection is from uid 1001"
        );
    }

    #[test]
    fn requests_are_tagged_json_and_unknown_fields_are_refused() {
        let r: Request = serde_json::from_str(
            r#"{"cmd":"control","control":{"type":"set_mode","mode":"batch:2"}}"#,
        )
        .unwrap();
        assert!(r.changes_something());
        let r: Request = serde_json::from_str(r#"{"cmd":"status"}"#).unwrap();
        assert_eq!(r, Request::Status);
        assert!(!r.changes_something());
        assert!(serde_json::from_str::<Request>(r#"{"cmd":"mark","text":"x","y":1}"#).is_err());
        assert!(serde_json::from_str::<Request>(r#"{"cmd":"format_disk"}"#).is_err());
    }

    #[test]
    fn a_socket_whose_lock_nobody_holds_is_stale_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(matches!(probe(d, "s"), Probe::Missing));
        std::fs::write(socket_path(d, "s"), b"").unwrap();
        std::fs::write(lock_path(d, "s"), b"").unwrap();
        assert!(matches!(probe(d, "s"), Probe::Stale));
        assert!(!socket_path(d, "s").exists());
    }

    #[test]
    fn a_second_supervisor_cannot_take_a_live_sessions_socket() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let a = ControlServer::bind_in(dir.path(), "s").unwrap();
            let e = ControlServer::bind_in(dir.path(), "s").err().unwrap();
            assert!(e
                .to_string()
                .contains("another supervisor already serves session s"));
            assert!(matches!(probe(dir.path(), "s"), Probe::Live(_)));
            let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            drop(a);
            assert!(matches!(probe(dir.path(), "s"), Probe::Missing));
        });
    }
}
