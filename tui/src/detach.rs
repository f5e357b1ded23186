//! Detaching the live screen, like `tmux detach`: the prompt comes back, the supervisor goes
//! on in the background, and `provetop attach` finds it.
//!
//! The supervised child is tied to the process that supervises it (its pipes, the
//! subreaper, the guard's pipe, the parent-death signal of the thread that forked it), so it
//! is the *supervisor* that must stay, and the process the shell waits for that must go.
//! Hence two processes from the start, split before any thread exists ([`split`]):
//!
//! * the **host**, the process the shell started, keeps nothing but a pipe and waits. Every
//!   signal sent to it is forwarded to the supervisor (so `kill`, Ctrl-C and a hangup act as
//!   on a one-process provetop), and it exits with the supervisor's status (128 + signal for
//!   a signal). When the screen detaches, the supervisor says so on the pipe: the host
//!   prints the message and exits 0.
//! * the **supervisor** (the fork) runs the screen and the session. It dies with the host
//!   (`PR_SET_PDEATHSIG`: a `kill -9` of the host takes it, and the guard then takes the
//!   child's tree, as for a one-process provetop) until it detaches ([`Host::detach`]): it
//!   clears that signal, leaves the terminal's session (`setsid`: no hangup reaches it), and
//!   points its standard streams at /dev/null.
//!
//! When the process already has threads (an embedding program), there is no split and the
//! screen cannot detach; it says so.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};

/// The supervisor's side of the split: the pipe to the host.
pub struct Host {
    pipe: std::fs::File,
    /// Detach, rather than stop, when the screen's terminal hangs up (the default;
    /// `--stop-on-hangup` clears it).
    pub on_hangup: bool,
}

/// Whether this process has exactly one thread (forking is only sound then).
fn single_threaded() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:").map(|v| v.trim() == "1"))
        })
        .unwrap_or(false)
}

/// Split into host and supervisor. Returns in the supervisor with its [`Host`]; the host
/// never returns (it exits with the supervisor's status). None, without a split, when the
/// process is not single-threaded or the fork fails.
pub fn split() -> Option<Host> {
    if !single_threaded() {
        return None;
    }
    // An inherited SIGCHLD ignored would reap the supervisor unseen, its status lost.
    {
        use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
        let dfl = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
        // SAFETY: restoring the default disposition installs no handler code.
        let _ = unsafe { sigaction(Signal::SIGCHLD, &dfl) };
    }
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
    let host = nix::unistd::getpid();
    // SAFETY: the process has a single thread (checked just above), so the child is a full
    // copy with no lock held by a vanished thread; both sides go on as ordinary programs.
    match unsafe { nix::unistd::fork() } {
        Err(_) => None,
        Ok(nix::unistd::ForkResult::Child) => {
            drop(r);
            let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
            // The host may have died between fork and prctl.
            if nix::unistd::getppid() != host {
                std::process::exit(1);
            }
            Some(Host {
                pipe: std::fs::File::from(w),
                on_hangup: false,
            })
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            drop(w);
            std::process::exit(host_main(child, r))
        }
    }
}

/// What the host does: forward signals to `child` until it exits or says it detached.
fn host_main(child: nix::unistd::Pid, pipe: OwnedFd) -> i32 {
    use nix::sys::signal::{kill, SigSet, Signal};
    use nix::sys::signalfd::{SfdFlags, SignalFd};
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    let all = SigSet::all();
    if all.thread_block().is_err() {
        return wait_plain(child);
    }
    let Ok(sfd) = SignalFd::with_flags(&all, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK) else {
        return wait_plain(child);
    };
    let mut pipe = Some(std::fs::File::from(pipe));
    let mut said = Vec::new();
    loop {
        // Reap first: a child that ended before we blocked signals sent its SIGCHLD already.
        match waitpid(child, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(_, code)) => return code,
            Ok(WaitStatus::Signaled(_, sig, _)) => return 128 + sig as i32,
            Err(_) => return 1,
            _ => {}
        }
        let mut fds = vec![nix::poll::PollFd::new(
            std::os::fd::AsFd::as_fd(&sfd),
            nix::poll::PollFlags::POLLIN,
        )];
        if let Some(p) = &pipe {
            fds.push(nix::poll::PollFd::new(
                std::os::fd::AsFd::as_fd(p),
                nix::poll::PollFlags::POLLIN,
            ));
        }
        if nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(1000u16)).is_err() {
            continue;
        }
        let pipe_ready = fds
            .get(1)
            .and_then(|f| f.revents())
            .is_some_and(|r| !r.is_empty());
        let sig_ready = fds[0].revents().is_some_and(|r| !r.is_empty());
        drop(fds);
        if pipe_ready {
            let mut buf = [0u8; 4096];
            match pipe.as_mut().map(|p| p.read(&mut buf)) {
                Some(Ok(0)) | Some(Err(_)) | None => pipe = None,
                Some(Ok(n)) => {
                    said.extend_from_slice(&buf[..n]);
                    if let Some(msg) = said.strip_suffix(b"\n") {
                        let mut e = std::io::stderr().lock();
                        let _ = e.write_all(msg);
                        let _ = e.write_all(b"\n");
                        return 0;
                    }
                }
            }
        }
        if sig_ready {
            while let Ok(Some(info)) = sfd.read_signal() {
                let Ok(sig) = Signal::try_from(info.ssi_signo as i32) else {
                    // A real-time signal: forward it by number.
                    // SAFETY: kill has no memory-safety preconditions.
                    unsafe { nix::libc::kill(child.as_raw(), info.ssi_signo as i32) };
                    continue;
                };
                match sig {
                    // Ours to handle (reaped above), or the terminal's job control and
                    // resizes, which reach the supervisor itself (same process group).
                    Signal::SIGCHLD
                    | Signal::SIGWINCH
                    | Signal::SIGTSTP
                    | Signal::SIGTTIN
                    | Signal::SIGTTOU
                    | Signal::SIGCONT
                    | Signal::SIGURG => {}
                    s => {
                        let _ = kill(child, s);
                    }
                }
            }
        }
    }
}

/// Without a signalfd: just wait.
fn wait_plain(child: nix::unistd::Pid) -> i32 {
    use nix::sys::wait::{waitpid, WaitStatus};
    loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => return code,
            Ok(WaitStatus::Signaled(_, sig, _)) => return 128 + sig as i32,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return 1,
            _ => {}
        }
    }
}

impl Host {
    /// Detach: stop dying with the host, leave the terminal's session, point standard
    /// streams at /dev/null, and let the host print `message` and exit 0. The terminal must
    /// have been restored first.
    pub fn detach(mut self, message: &str) -> anyhow::Result<()> {
        nix::sys::prctl::set_pdeathsig(None)
            .map_err(|e| anyhow::anyhow!("cannot detach: prctl: {e}"))?;
        nix::unistd::setsid().map_err(|e| anyhow::anyhow!("cannot detach: setsid: {e}"))?;
        let null = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map_err(|e| anyhow::anyhow!("cannot detach: /dev/null: {e}"))?;
        for fd in 0..=2 {
            nix::unistd::dup2(null.as_raw_fd(), fd)
                .map_err(|e| anyhow::anyhow!("cannot detach: dup2: {e}"))?;
        }
        let mut line = message.replace('\n', " ");
        line.push('\n');
        self.pipe
            .write_all(line.as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot detach: telling the host: {e}"))?;
        Ok(())
    }
}
