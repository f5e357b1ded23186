//! `provetop-kernel`: the thread that waits on what the kernel announces, so the sampler
//! never polls for it: the kernel log (`/dev/kmsg`, readable when a record is written: OOM
//! victims), v2's `memory.events` (the kernel notifies a modification: `POLLPRI`) or v1's
//! OOM notification (an eventfd registered for `memory.oom_control`), and PSI
//! triggers (`POLLPRI` when a stall passes a threshold). It sleeps in one `poll` and hands
//! what it found to the sampler through [`WatchShared`], which the tick looks at through one
//! atomic load.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use provetop_shared::Mark;

use crate::kmsg::{Kmsg, Victim};
use crate::psi::Trigger;

/// The thread's name.
pub const THREAD_NAME: &str = "provetop-kernel";

/// Least time between two stall marks of one trigger (a sustained stall fires every window).
const STALL_GAP: Duration = Duration::from_secs(5);

/// How the kernel tells that a cgroup's event counters moved.
#[derive(Debug)]
pub enum Notify {
    /// v2: `memory.events` itself, polled for `POLLPRI` (re-armed by reading it).
    Events(File),
    /// v1: an eventfd registered with `cgroup.event_control` for `memory.oom_control`
    /// (signalled when the cgroup meets the OOM killer), and that file, kept open.
    OomEventFd {
        efd: EventFd,
        /// Held for as long as the registration.
        _oom_control: File,
    },
}

impl Notify {
    fn fd(&self) -> (std::os::fd::BorrowedFd<'_>, PollFlags) {
        match self {
            Notify::Events(f) => (f.as_fd(), PollFlags::POLLPRI),
            Notify::OomEventFd { efd, .. } => (efd.as_fd(), PollFlags::POLLIN),
        }
    }

    /// Take the notification; `false` when the source is gone (the cgroup was removed).
    fn take(&self, buf: &mut [u8]) -> bool {
        match self {
            Notify::Events(f) => f.read_at(buf, 0).is_ok(),
            Notify::OomEventFd { efd, .. } => efd.read().is_ok(),
        }
    }
}

/// Register an eventfd for a v1 cgroup's OOM notification (`cgroup.event_control`).
pub fn v1_oom_notify(dir: &std::path::Path) -> io::Result<Notify> {
    use std::os::fd::AsRawFd;
    let oom = File::open(dir.join("memory.oom_control"))?;
    let efd = EventFd::from_flags(EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)?;
    let line = format!("{} {}", efd.as_raw_fd(), oom.as_raw_fd());
    std::fs::write(dir.join("cgroup.event_control"), line)?;
    Ok(Notify::OomEventFd {
        efd,
        _oom_control: oom,
    })
}

/// What the thread found, for the sampler.
#[derive(Debug, Default)]
pub struct WatchShared {
    /// Something below waits: the tick looks only when this is set.
    pub pending: AtomicBool,
    /// `memory.events` was modified since the sampler last took this.
    pub events_moved: AtomicBool,
    pub victims: Mutex<Vec<Victim>>,
    pub stalls: Mutex<Vec<Mark>>,
}

/// The running thread; dropping it stops and joins it.
#[derive(Debug)]
pub struct KernelWatch {
    pub shared: Arc<WatchShared>,
    wake: UnixStream,
    thread: Option<thread::JoinHandle<()>>,
}

impl KernelWatch {
    /// Start waiting on `kmsg`, `events` (the cgroup's counters moved) and `triggers`.
    pub fn spawn(
        kmsg: Option<Kmsg>,
        events: Option<Notify>,
        triggers: Vec<Trigger>,
    ) -> io::Result<KernelWatch> {
        let (wake, stop) = UnixStream::pair()?;
        let shared = Arc::new(WatchShared::default());
        let s = shared.clone();
        let thread = thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || run(stop, kmsg, events, triggers, &s))?;
        Ok(KernelWatch {
            shared,
            wake,
            thread: Some(thread),
        })
    }
}

impl Drop for KernelWatch {
    fn drop(&mut self) {
        let _ = self.wake.write_all(&[1]);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(
    mut stop: UnixStream,
    mut kmsg: Option<Kmsg>,
    mut events: Option<Notify>,
    mut triggers: Vec<Trigger>,
    shared: &WatchShared,
) {
    let mut last_stall: Vec<Option<Instant>> = vec![None; triggers.len()];
    let mut buf = [0u8; 512];
    loop {
        // Order: the stop pipe, the log, the events file, then each trigger.
        let (stop_rev, kmsg_rev, events_rev, trig_revs) = {
            let mut fds = vec![PollFd::new(stop.as_fd(), PollFlags::POLLIN)];
            if let Some(k) = &kmsg {
                fds.push(PollFd::new(k.fd(), PollFlags::POLLIN));
            }
            if let Some(e) = &events {
                let (fd, flags) = e.fd();
                fds.push(PollFd::new(fd, flags));
            }
            for t in &triggers {
                fds.push(PollFd::new(t.file.as_fd(), PollFlags::POLLPRI));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return,
            }
            let rev: Vec<PollFlags> = fds
                .iter()
                .map(|f| f.revents().unwrap_or(PollFlags::empty()))
                .collect();
            let mut i = 1;
            let k = kmsg.as_ref().map(|_| {
                i += 1;
                rev[i - 1]
            });
            let e = events.as_ref().map(|_| {
                i += 1;
                rev[i - 1]
            });
            (rev[0], k, e, rev[i..].to_vec())
        };
        if !stop_rev.is_empty() {
            let _ = stop.read(&mut buf);
            return;
        }
        if kmsg_rev.is_some_and(|r| !r.is_empty()) {
            if let Some(k) = kmsg.as_mut() {
                let found = k.drain();
                if !found.is_empty() {
                    lock(&shared.victims).extend(found);
                    shared.pending.store(true, Ordering::Release);
                }
            }
        }
        if events_rev.is_some_and(|r| !r.is_empty()) {
            // Reading it is what re-arms the notification.
            let ok = events.as_ref().is_some_and(|e| e.take(&mut buf));
            if !ok {
                // Removed: the sampler says so at its next reading.
                events = None;
            }
            shared.events_moved.store(true, Ordering::Release);
            shared.pending.store(true, Ordering::Release);
        }
        let mut dead = Vec::new();
        for (i, r) in trig_revs.iter().enumerate() {
            if r.contains(PollFlags::POLLERR) || r.contains(PollFlags::POLLNVAL) {
                dead.push(i);
            } else if r.contains(PollFlags::POLLPRI) {
                if !triggers[i].confirmed() {
                    continue;
                }
                let now = Instant::now();
                if last_stall[i].is_some_and(|at| now.duration_since(at) < STALL_GAP) {
                    continue;
                }
                last_stall[i] = Some(now);
                let t = &triggers[i];
                lock(&shared.stalls).push(Mark::Stall {
                    scope: t.scope.into(),
                    resource: t.resource.into(),
                    line: t.line.into(),
                    stall_us: t.stall_us,
                    window_us: t.window_us,
                });
                shared.pending.store(true, Ordering::Release);
            }
        }
        for i in dead.into_iter().rev() {
            triggers.remove(i);
            last_stall.remove(i);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
