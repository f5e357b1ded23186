//! Starting a child: no shell, own process group, parent-death signal, events pipe on fd 3.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that forked the child ends, not the process.
//! Tokio's blocking-pool threads come and go, so every child is forked from one dedicated
//! thread that lives as long as the process: the signal then means exactly "provetop died".

use std::fs::OpenOptions;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::process::Stdio;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use anyhow::Context;
use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use tokio::process::{Child, Command};

use super::ChildSpec;

/// The fd number the child finds its events pipe on.
pub const EVENTS_FD: i32 = 3;

/// A started child with the read end of its events pipe.
pub struct Launched {
    /// The child (stdin, stdout and stderr piped).
    pub child: Child,
    /// Read end of the events pipe.
    pub events: OwnedFd,
    /// Read end of the child's stdout pipe.
    pub stdout: OwnedFd,
    /// Read end of the child's stderr pipe.
    pub stderr: OwnedFd,
    /// The side log the output is also copied into (with a cap: `output.rs`), if any.
    pub log: Option<std::fs::File>,
    /// The child's process group, registered from the moment it started.
    pub registered: super::registry::Registered,
    /// Read end of the NVTX pipe, when the injection library was handed to the child.
    pub nvtx: Option<OwnedFd>,
    /// Why the child has no NVTX injection, to be said in the session (`None`: it has one,
    /// or it was not asked for), and whether it is a warning (a library that cannot load, a
    /// pipe that failed) rather than a note (none installed, another tool's injection).
    pub nvtx_off: Option<(bool, String)>,
}

/// The NVTX pipe (read end, write end placed at fd 10 or above, so that putting the events
/// pipe at fd 3 cannot clobber it) and the child's variables, or why there is none.
type NvtxPipe = (OwnedFd, OwnedFd, Vec<(String, String)>);

fn nvtx_pipe(spec: &ChildSpec) -> Result<Option<NvtxPipe>, (bool, String)> {
    use crate::nvtx::{library_problem, Injection, FD, FD_VAR, INJECTION_VAR};
    let path = match &spec.nvtx {
        Injection::Off { why: None } => return Ok(None),
        Injection::Off { why: Some(w) } => return Err((false, w.clone())),
        Injection::Library { path, .. } => path,
    };
    let own = spec
        .env
        .iter()
        .find(|(k, _)| k == INJECTION_VAR)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var(INJECTION_VAR).ok());
    if let Some(v) = own {
        return Err((
            false,
            format!("{INJECTION_VAR} is already set ({v}): provetop leaves it to that tool"),
        ));
    }
    if let Some(why) = library_problem(path) {
        return Err((true, why));
    }
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|e| (true, format!("cannot create the NVTX pipe: {e}")))?;
    let high = fcntl(w.as_raw_fd(), FcntlArg::F_DUPFD_CLOEXEC(10))
        .map_err(|e| (true, format!("cannot place the NVTX pipe: {e}")))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
    let high = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(high) };
    drop(w);
    let env = vec![
        (INJECTION_VAR.to_string(), path.display().to_string()),
        (FD_VAR.to_string(), FD.to_string()),
    ];
    Ok(Some((r, high, env)))
}

type Job = Box<dyn FnOnce() + Send>;

fn spawner() -> &'static Mutex<mpsc::Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("provetop-spawner".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .expect("cannot start the child-spawning thread");
        Mutex::new(tx)
    })
}

/// Start `spec`'s command on the long-lived spawner thread.
pub async fn launch(spec: &ChildSpec) -> anyhow::Result<Launched> {
    let spec = spec.clone();
    let handle = tokio::runtime::Handle::current();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _guard = handle.enter();
        let _ = tx.send(launch_here(&spec));
    });
    spawner()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(job)
        .map_err(|_| anyhow::anyhow!("the child-spawning thread is gone"))?;
    rx.await
        .map_err(|_| anyhow::anyhow!("the child-spawning thread dropped the request"))?
}

/// The child log: created new (0600, never through a symbolic link), or, for a restarted
/// child, the existing one appended to if it is a plain file of ours with no other name (a
/// planted link, or a hard link to someone else's file, is refused). Whether it was created.
fn open_log(p: &std::path::Path) -> std::io::Result<(std::fs::File, bool)> {
    use std::os::unix::fs::MetadataExt;
    match provetop_shared::session::create_private(p) {
        Ok(f) => return Ok((f, true)),
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        Err(_) => {}
    }
    let f = OpenOptions::new()
        .append(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(p)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ELOOP) => {
                std::io::Error::other("is a symbolic link (provetop does not write through links)")
            }
            _ => e,
        })?;
    let m = f.metadata()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { nix::libc::geteuid() };
    if !m.is_file() || m.uid() != me || m.nlink() != 1 {
        return Err(std::io::Error::other(
            "exists and is not a plain file of yours with one name: refusing to append to it (remove it, or record elsewhere)",
        ));
    }
    if m.mode() & 0o077 != 0 {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok((f, false))
}

fn launch_here(spec: &ChildSpec) -> anyhow::Result<Launched> {
    let program = spec.argv.first().context("empty command: nothing to run")?;
    let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .context("cannot create the events pipe")?;
    let (created_log, log) = match &spec.log_path {
        Some(p) => {
            let (f, created) =
                open_log(p).with_context(|| format!("cannot open child log {}", p.display()))?;
            (created.then_some(p), Some(f))
        }
        None => (None, None),
    };
    // A pipe per output, so each line's source is known (`output.rs` reads both).
    let (out_r, out_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .context("cannot create the output pipe")?;
    let (err_r, err_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .context("cannot create the output pipe")?;
    let (out, err) = (Stdio::from(out_w), Stdio::from(err_w));
    let (nvtx, nvtx_off) = match nvtx_pipe(spec) {
        Ok(p) => (p, None),
        Err(why) => (None, Some(why)),
    };
    let nvtx_w = nvtx.as_ref().map(|(_, w, _)| w.as_raw_fd());
    let mut cmd = Command::new(program);
    cmd.args(&spec.argv[1..])
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env("PROVETOP_EVENTS_FD", EVENTS_FD.to_string())
        .envs(
            nvtx.iter()
                .flat_map(|(_, _, env)| env.iter().map(|(k, v)| (k, v))),
        )
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .kill_on_drop(true);
    let parent = nix::unistd::getpid();
    let wfd = write_end.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (prctl, getppid, dup2, fcntl, write-free); it allocates
    // nothing and touches no locks.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
            // The parent may have died between fork and prctl: then nobody would kill us.
            if nix::unistd::getppid() != parent {
                return Err(std::io::Error::other("parent exited during start"));
            }
            if wfd == EVENTS_FD {
                // Already in place: just let it survive exec.
                fcntl(wfd, FcntlArg::F_SETFD(FdFlag::empty()))?;
            } else {
                // dup2 clears close-on-exec on the new descriptor.
                nix::unistd::dup2(wfd, EVENTS_FD)?;
            }
            // At fd 10 or above: the dup2 to fd 3 above cannot have replaced it.
            if let Some(n) = nvtx_w {
                nix::unistd::dup2(n, crate::nvtx::FD)?;
            }
            Ok(())
        });
    }
    let (child, registered) = match super::registry::spawn_child(|| cmd.spawn(), Child::id) {
        Ok(c) => c,
        Err(e) => {
            // A command that cannot start leaves no empty log behind.
            if let Some(p) = created_log {
                let _ = std::fs::remove_file(p);
            }
            return Err(e).with_context(|| format!("cannot start {program:?}"));
        }
    };
    // The guard kills this tree if provetop dies without stopping it (`guard.rs`).
    if let Some(pid) = child.id() {
        if let Some(start) = super::registry::start_of(pid) {
            super::guard::remember(pid, start);
        }
    }
    // Our copy of the write end must go, or the reader never sees end-of-file.
    drop(write_end);
    let nvtx = nvtx.map(|(r, w, _)| {
        drop(w);
        r
    });
    // (The output pipe's write ends go with `cmd`.)
    drop(cmd);
    Ok(Launched {
        child,
        events: read_end,
        stdout: out_r,
        stderr: err_r,
        log,
        registered,
        nvtx,
        nvtx_off,
    })
}
