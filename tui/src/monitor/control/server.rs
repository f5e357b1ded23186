//! The supervisor's side of the socket: [`ControlServer`] takes the session's lock, listens
//! on its 0600 socket, and keeps the one bounded inbox the session drains
//! ([`ControlServer::request`] to wake at once, [`ControlServer::take`] each tick). Dropping
//! it removes the socket and the lock.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use tokio::net::UnixListener;
use tokio::sync::mpsc;

use super::connection::{accept_loop, Incoming};
use super::locate::{
    check_length, lock_path, make_dir, open_private, session_id, socket_dir, socket_path, Described,
};
use super::INBOX;

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
    /// What is supervised, for [`Status`](super::Status).
    pub command: Vec<String>,
    /// The session file, for [`Status`](super::Status).
    pub session: Option<PathBuf>,
    /// Whether `restart` may stop the child for its restart policy to start it again
    /// (`--restart on-failure`); without one the session would end instead.
    pub restartable: bool,
    /// The session's threshold lines and alert-rule lines, for [`Status`](super::Status).
    pub thresholds: Option<provetop_shared::classify::Thresholds>,
    pub rule_lines: Vec<(String, u64)>,
}

impl ControlServer {
    /// Take session `id`'s socket in [`socket_dir`] and listen on it (on the current tokio
    /// runtime); `session` is the file it records to, written in its lock for `ls` and
    /// `attach`. Fails when another supervisor holds it.
    pub fn bind(id: &str, session: Option<&Path>) -> anyhow::Result<ControlServer> {
        Self::bind_in(&socket_dir()?, id, session)
    }

    /// [`Self::bind`] in `dir`.
    pub fn bind_in(dir: &Path, id: &str, session: Option<&Path>) -> anyhow::Result<ControlServer> {
        make_dir(dir)?;
        let path = socket_path(dir, id);
        check_length(&path)?;
        let lock_path = lock_path(dir, id);
        // Never through a link planted at the lock's name: its target would be truncated or
        // have its mode changed.
        let f = open_private(&lock_path, true)
            .with_context(|| format!("cannot open {}", lock_path.display()))?;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot make {} private", lock_path.display()))?;
        let mut lock = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| match e {
                nix::errno::Errno::EWOULDBLOCK => anyhow::anyhow!(
                    "{}: another supervisor already serves session {id}",
                    path.display()
                ),
                e => anyhow::anyhow!("{}: cannot lock: {e}", lock_path.display()),
            })?;
        let listener = match describe_and_listen(&mut lock, &path, id, session) {
            Ok(l) => l,
            Err(e) => {
                // Leave nothing behind for `ls` to trip on: the session has no socket.
                let _ = std::fs::remove_file(&path);
                let _ = std::fs::remove_file(&lock_path);
                return Err(e.context(format!("session {id}")));
            }
        };
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

    /// Uptime and wall-clock start, for [`Status`](super::Status).
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
    let session = record.map(|r| std::path::absolute(r).unwrap_or_else(|_| r.to_path_buf()));
    let mut server = ControlServer::bind(&id, session.as_deref())?;
    server.command = command;
    server.session = session;
    server.restartable = restartable;
    Ok(server)
}

/// With the lock held: write the session's id and file in it, then bind its socket 0600.
fn describe_and_listen(
    lock: &mut std::fs::File,
    path: &Path,
    id: &str,
    session: Option<&Path>,
) -> anyhow::Result<UnixListener> {
    use std::io::Write;
    let mut described = Described {
        id: id.to_string(),
        session: session.map(Path::to_path_buf),
    };
    // A file name that is not UTF-8 cannot be written in JSON: the id alone still names it.
    let text = serde_json::to_string(&described).or_else(|_| {
        described.session = None;
        serde_json::to_string(&described)
    })?;
    lock.set_len(0)?;
    lock.write_all(text.as_bytes())?;
    // We hold the lock: whatever socket is there is a dead supervisor's (removing a link
    // removes the link, not its target).
    let _ = std::fs::remove_file(path);
    let std_listener = std::os::unix::net::UnixListener::bind(path)
        .with_context(|| format!("cannot listen on {}", path.display()))?;
    // The directory is this user's alone (checked): nobody can have put a link here since
    // the bind.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private", path.display()))?;
    std_listener.set_nonblocking(true)?;
    Ok(UnixListener::from_std(std_listener)?)
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.accept.abort();
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}
