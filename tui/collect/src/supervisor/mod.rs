//! The supervisor: runs the prover (or any command) and reports everything it does.
//!
//! The child runs without a shell, in its own process group, with `PR_SET_PDEATHSIG=SIGKILL`,
//! its protocol events on a dedicated pipe (fd 3, `PROVETOP_EVENTS_FD=3`), controls on its
//! stdin, and every line of its stdout and stderr recorded (bounded: `output.rs`), read by
//! the line grammars ([`crate::loglines`]) into derived phases, and copied into a side log
//! file when recording, up to [`LOG_CAP`]. Its
//! events become [`RecordBody::Event`] records, stamped on the monitor's clock; lines that
//! are not protocol messages become [`Mark::BadLine`]s. Events are recorded at a bounded rate
//! ([`EVENT_RATE`], bursts of [`EVENT_BURST`]); what is over it is counted and reported as
//! [`Mark::Dropped`], so a flooding child can neither wedge the monitor nor fill the disk.
//!
//! Stop is SIGTERM to the group, SIGKILL after the grace period. The group is also killed
//! when the handle is dropped, and [`kill_all_children`] kills every supervised group from a
//! panic hook.
//!
//! A descendant can leave the group (`setsid`, `setpgid`). Provetop is a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`), so an orphaned descendant is reparented to it rather than to
//! init, and the supervisor remembers every process it has seen in the child's tree (walked
//! at most once a second when a process was created on the host, at least every 10 s, and
//! before each stop): stop signals that whole tree with the group, and
//! when the child ends, what is left of its tree is killed and reaped with it. Not covered:
//! a SIGKILL of provetop itself. The child gets SIGKILL then (`PR_SET_PDEATHSIG`), but its
//! descendants do not; only a cgroup per child would take them along, and none is made
//! (this needs a writable cgroup v2 subtree, which provetop does not assume).

mod events;
mod exit;
mod guard;
mod launch;
mod nvtx_pipe;
mod output;
mod registry;
mod spec;
mod tree;

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use provetop_shared::clock::mono_ns;
use provetop_shared::protocol::{Control, ControlMsg};
use provetop_shared::{Mark, Record, RecordBody};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{watch, Notify};

use crate::channel::RecordTx;

use crate::cgroup::MemCgroup;
use events::read_events;
pub use events::RECORD_CHANNEL;
pub use events::{BYTE_BURST, BYTE_RATE, EVENT_BURST, EVENT_RATE};
pub use exit::ExitInfo;
pub use guard::{enable as enable_guard, guard_main, GUARD_ARG};
pub use launch::EVENTS_FD;
pub use output::{
    LineSink, LOG_CAP, MAX_OUTPUT_LINE, OUTPUT_BURST, OUTPUT_BYTE_BURST, OUTPUT_BYTE_RATE,
    OUTPUT_RATE,
};
pub use registry::{helper_ended, kill_all_children, spawn_helper};
pub use spec::{ChildSpec, Restart, BACKOFF_MAX, BACKOFF_START, HEALTHY_RUN};

/// Counters of the event stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SupervisorStats {
    /// Valid events forwarded.
    pub events: u64,
    /// Lines that were not valid protocol messages (including over-long and partial ones).
    pub bad_lines: u64,
    /// Event lines dropped: over the recorded rate ([`EVENT_RATE`]), or with no room left
    /// while the app was behind; and records the app had no room for.
    pub dropped: u64,
    /// Children started (1 + restarts).
    pub starts: u64,
}

#[derive(Default)]
struct Counters {
    events: AtomicU64,
    bad_lines: AtomicU64,
    dropped: AtomicU64,
    starts: AtomicU64,
}

struct Inner {
    /// Process group of the running child, 0 when none.
    pgid: AtomicI32,
    /// A stop was asked for: no more restarts.
    stopping: AtomicBool,
    stop_notify: Notify,
    /// Fires whenever the running child is reaped.
    reaped: Notify,
    /// The running child's stdin, written without waiting (a control line is far shorter
    /// than a pipe's atomic write size).
    stdin: Mutex<Option<tokio::process::ChildStdin>>,
    counters: Counters,
    tx: RecordTx,
    grace: Duration,
    /// Every process seen in the running child's tree.
    tree: Mutex<tree::Tree>,
}

impl Inner {
    fn tree(&self) -> std::sync::MutexGuard<'_, tree::Tree> {
        self.tree.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Signal the group and every process remembered in the child's tree.
    fn kill_tree(&self, sig: Signal) -> bool {
        let pgid = self.pgid.load(Ordering::Acquire);
        let group = self.kill_group(sig);
        if pgid > 0 {
            self.tree().signal(pgid as u32, sig);
        }
        group
    }

    fn kill_group(&self, sig: Signal) -> bool {
        let pgid = self.pgid.load(Ordering::Acquire);
        pgid > 0 && killpg(Pid::from_raw(pgid), sig).is_ok()
    }

    /// Forward a record without waiting; count it when the app is behind.
    fn forward(&self, rec: Record) -> bool {
        match self.tx.try_send(rec) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                false
            }
            Err(TrySendError::Closed(_)) => false,
        }
    }

    /// Hand a record on if there is room, else give it back (the caller may retry).
    fn try_forward(&self, rec: Record) -> Offered {
        match self.tx.try_send(rec) {
            Ok(()) => Offered::Sent,
            Err(TrySendError::Full(r)) => Offered::Full(Box::new(r)),
            Err(TrySendError::Closed(_)) => Offered::Gone,
        }
    }

    /// Lifecycle marks are rare and must not be lost: wait for room (bounded, so a stalled
    /// app cannot hold the supervisor forever).
    async fn forward_wait(&self, rec: Record) {
        if tokio::time::timeout(Duration::from_secs(5), self.tx.send(rec))
            .await
            .is_err()
        {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Announce a started run: a [`Mark::ChildStarted`] stamped `t` (taken before the start,
    /// so the child's first events, on its own clock, sort after it).
    async fn announce_start(&self, t: u64, pid: u32, argv: &[String]) {
        self.forward_wait(Record::new(
            t,
            RecordBody::Mark(Mark::ChildStarted {
                pid,
                command: argv.to_vec(),
            }),
        ))
        .await;
    }
}

/// What became of a record offered to the app's channel.
enum Offered {
    Sent,
    /// No room now: the record back (boxed: the other outcomes carry nothing).
    Full(Box<Record>),
    /// The app is gone.
    Gone,
}

/// Why a control did not reach the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("the prover is not running")]
    NotRunning,
    #[error("the child closed its stdin: controls go nowhere")]
    Closed,
    #[error("the child is not reading its controls (its stdin is full)")]
    Full,
}

/// The app's handle on a supervised child.
pub struct SupervisorHandle {
    inner: Arc<Inner>,
    pid_rx: watch::Receiver<Option<u32>>,
    exit_rx: watch::Receiver<Option<ExitInfo>>,
}

/// Start supervising `spec`. Fails when the first start fails (command not found, …).
/// Records go to `tx`: Mark::ChildStarted, events, bad lines, drops, Mark::ChildExited,
/// Mark::Restart.
pub async fn spawn(spec: ChildSpec, tx: impl Into<RecordTx>) -> anyhow::Result<SupervisorHandle> {
    let tx = tx.into();
    if spec.argv.is_empty() {
        anyhow::bail!("empty command: nothing to run");
    }
    registry::become_subreaper();
    let t_start = mono_ns();
    let first = launch::launch(&spec).await?;
    let inner = Arc::new(Inner {
        pgid: AtomicI32::new(0),
        stopping: AtomicBool::new(false),
        stop_notify: Notify::new(),
        reaped: Notify::new(),
        stdin: Mutex::new(None),
        counters: Counters::default(),
        tx,
        grace: spec.grace,
        tree: Mutex::new(tree::Tree::default()),
    });
    let (pid_tx, pid_rx) = watch::channel(None);
    let (exit_tx, exit_rx) = watch::channel(None);
    // Register and publish before returning so pid() is valid at once.
    let started = start_run(&inner, first, &pid_tx, t_start, &spec.log_rules, &spec.nvtx);
    inner.announce_start(t_start, started.pid, &spec.argv).await;
    tokio::spawn(supervise(inner.clone(), spec, started, pid_tx, exit_tx));
    Ok(SupervisorHandle {
        inner,
        pid_rx,
        exit_rx,
    })
}

impl SupervisorHandle {
    /// Pid of the running child (changes on restart; `None` between runs and at the end).
    pub fn pid(&self) -> Option<u32> {
        *self.pid_rx.borrow()
    }

    /// Watch the child's pid (to re-point the sampler after a restart).
    pub fn pid_watch(&self) -> watch::Receiver<Option<u32>> {
        self.pid_rx.clone()
    }

    /// Send a control to the child's stdin (one ControlMsg line) and emit it as a
    /// [`RecordBody::Control`]. False when it was not written: see [`Self::try_send`].
    pub fn send(&self, c: Control) -> bool {
        self.try_send(c).is_ok()
    }

    /// Send a control to the child's stdin (one ControlMsg line, written at once, never
    /// waiting) and emit it as a [`RecordBody::Control`]; or why it was not written: no
    /// child is running, the child closed its stdin, or it is not reading it (the pipe is
    /// full).
    pub fn try_send(&self, c: Control) -> Result<(), SendError> {
        let msg = ControlMsg::now(c);
        let mut line = msg.to_line();
        line.push('\n');
        let mut stdin = self.inner.stdin.lock().unwrap_or_else(|e| e.into_inner());
        let Some(w) = stdin.as_ref() else {
            return Err(SendError::NotRunning);
        };
        match nix::unistd::write(w, line.as_bytes()) {
            Ok(n) if n == line.len() => {}
            // A pipe writes a line this short whole or not at all; a part is still a fault.
            Ok(_) => return Err(SendError::Full),
            Err(nix::errno::Errno::EAGAIN) => return Err(SendError::Full),
            Err(_) => {
                // EPIPE: nobody reads it any more; it stays closed for this run.
                *stdin = None;
                return Err(SendError::Closed);
            }
        }
        drop(stdin);
        self.inner
            .forward(Record::new(msg.ts, RecordBody::Control(msg.control)));
        Ok(())
    }

    /// Stop for good: SIGTERM to the process group, SIGKILL after the grace period. Returns
    /// once the child has been reaped (or at once if none is running).
    pub async fn stop(&self) {
        self.inner.stopping.store(true, Ordering::Release);
        self.inner.stop_notify.notify_waiters();
        if self.inner.pgid.load(Ordering::Acquire) == 0 {
            return;
        }
        let reaped = self.inner.reaped.notified();
        tokio::pin!(reaped);
        reaped.as_mut().enable();
        // The tree as it is now, before anything in it dies and leaves orphans behind.
        let pgid = self.inner.pgid.load(Ordering::Acquire);
        if pgid > 0 {
            self.inner.tree().note(pgid as u32);
        }
        if !self.inner.kill_tree(Signal::SIGTERM) {
            return;
        }
        if tokio::time::timeout(self.inner.grace, reaped.as_mut())
            .await
            .is_ok()
        {
            return;
        }
        self.inner.kill_tree(Signal::SIGKILL);
        // SIGKILL cannot be ignored; only a task stuck in the kernel (D state) delays it.
        let _ = tokio::time::timeout(Duration::from_secs(10), reaped).await;
    }

    /// Wait until the child is gone for good (after any restarts); how it last ended.
    pub async fn wait(&mut self) -> ExitInfo {
        loop {
            if let Some(e) = self.exit_rx.borrow_and_update().clone() {
                return e;
            }
            if self.exit_rx.changed().await.is_err() {
                return self
                    .exit_rx
                    .borrow()
                    .clone()
                    .unwrap_or_else(|| ExitInfo::unknown("supervisor ended".into()));
            }
        }
    }

    /// Event-stream counters.
    pub fn stats(&self) -> SupervisorStats {
        let c = &self.inner.counters;
        SupervisorStats {
            events: c.events.load(Ordering::Relaxed),
            bad_lines: c.bad_lines.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            starts: c.starts.load(Ordering::Relaxed),
        }
    }
}

impl Drop for SupervisorHandle {
    fn drop(&mut self) {
        self.inner.stopping.store(true, Ordering::Release);
        self.inner.stop_notify.notify_waiters();
        self.inner.kill_tree(Signal::SIGKILL);
    }
}

/// One run of the child.
struct Running {
    pid: u32,
    child: tokio::process::Child,
    reader: tokio::task::JoinHandle<()>,
    /// The reading of its output into the session (and the side log).
    output: Option<output::Copier>,
    /// The reading of its NVTX pipe: says when it is done.
    nvtx: Option<tokio::sync::oneshot::Receiver<()>>,
    started: Instant,
    /// When it was started, on the records' clock (the kernel log is searched from then).
    started_ns: u64,
    cgroups: Vec<(MemCgroup, Option<u64>)>,
    /// Its `/proc/PID/cgroup` when the cgroups were last looked at.
    cgroup_text: Option<String>,
}

fn start_run(
    inner: &Arc<Inner>,
    l: launch::Launched,
    pid_tx: &watch::Sender<Option<u32>>,
    t_start: u64,
    log_rules: &[crate::loglines::Rule],
    injection: &crate::nvtx::Injection,
) -> Running {
    let launch::Launched {
        mut child,
        events,
        stdout,
        stderr,
        log,
        registered,
        nvtx,
        nvtx_off,
    } = l;
    let pid = child.id().unwrap_or(0);
    inner.pgid.store(pid as i32, Ordering::Release);
    // Unregistered once the child is reaped (`unregister` below).
    registered.keep();
    inner.counters.starts.fetch_add(1, Ordering::Relaxed);
    *inner.stdin.lock().unwrap_or_else(|e| e.into_inner()) = child.stdin.take();
    let reader = tokio::spawn(read_events(inner.clone(), events, pid as i32, t_start));
    let output = match output::spawn(
        inner.clone(),
        stdout,
        stderr,
        log,
        pid,
        LOG_CAP,
        output::LineSink::for_run(log_rules.to_vec(), t_start),
    ) {
        Ok(c) => Some(c),
        Err(e) => {
            inner.forward(Record::new(
                mono_ns(),
                RecordBody::Mark(Mark::Warning {
                    text: format!("cannot read child {pid}'s output: {e}"),
                }),
            ));
            None
        }
    };
    let nvtx = nvtx_pipe::start(inner, pid, nvtx, nvtx_off, injection, t_start);
    let cgroups = MemCgroup::of_pid(pid)
        .map(|c| {
            let n = c.oom_kills();
            vec![(c, n)]
        })
        .unwrap_or_default();
    let _ = pid_tx.send(Some(pid));
    Running {
        pid,
        child,
        reader,
        output,
        nvtx,
        started: Instant::now(),
        started_ns: t_start,
        cgroups,
        cgroup_text: None,
    }
}

async fn supervise(
    inner: Arc<Inner>,
    spec: ChildSpec,
    mut run: Running,
    pid_tx: watch::Sender<Option<u32>>,
    exit_tx: watch::Sender<Option<ExitInfo>>,
) {
    let mut failures: u32 = 0;
    loop {
        let info = wait_run(&inner, &mut run).await;
        let _ = pid_tx.send(None);
        inner
            .forward_wait(Record::new(
                mono_ns(),
                RecordBody::Mark(Mark::ChildExited {
                    pid: run.pid,
                    code: info.code,
                    signal: info.signal,
                    oom_kill: info.oom_kill,
                    reason: info.reason.clone(),
                }),
            ))
            .await;
        if run.started.elapsed() >= HEALTHY_RUN {
            failures = 0;
        }
        let again = match spec.restart {
            Restart::Never => false,
            Restart::OnFailure { max } => {
                info.failed() && failures < max && !inner.stopping.load(Ordering::Acquire)
            }
        };
        if !again {
            let _ = exit_tx.send(Some(info));
            return;
        }
        let backoff = BACKOFF_START
            .saturating_mul(1u32 << failures.min(16))
            .min(BACKOFF_MAX);
        failures += 1;
        inner
            .forward_wait(Record::new(
                mono_ns(),
                RecordBody::Mark(Mark::Restart {
                    attempt: failures,
                    backoff_s: backoff.as_secs_f64(),
                }),
            ))
            .await;
        let stop = inner.stop_notify.notified();
        tokio::pin!(stop);
        stop.as_mut().enable();
        if inner.stopping.load(Ordering::Acquire) {
            let _ = exit_tx.send(Some(info));
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop => {
                let _ = exit_tx.send(Some(info));
                return;
            }
        }
        let t_start = mono_ns();
        match launch::launch(&spec).await {
            Ok(l) => {
                run = start_run(&inner, l, &pid_tx, t_start, &spec.log_rules, &spec.nvtx);
                inner.announce_start(t_start, run.pid, &spec.argv).await;
            }
            Err(e) => {
                let info = ExitInfo::unknown(format!("restart failed: {e:#}"));
                inner
                    .forward_wait(Record::new(
                        mono_ns(),
                        RecordBody::Mark(Mark::Warning {
                            text: info.reason.clone(),
                        }),
                    ))
                    .await;
                let _ = exit_tx.send(Some(info));
                return;
            }
        }
    }
}

/// Wait for the run to end; reap it, kill what is left of its group, finish its reader.
async fn wait_run(inner: &Arc<Inner>, run: &mut Running) -> ExitInfo {
    let mut poll = tokio::time::interval(Duration::from_secs(1));
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A child that stops or continues sends SIGCHLD: looked at then, not polled. Where the
    // signal cannot be had, it is polled.
    let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()).ok();
    let mut stops = tokio::time::interval(STOP_POLL);
    stops.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let status = loop {
        let stop_seen = async {
            match sigchld.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => {
                    stops.tick().await;
                }
            }
        };
        tokio::select! {
            st = run.child.wait() => break st,
            _ = stop_seen => {
                if let Some(m) = stop_change(run.pid) {
                    inner.forward_wait(Record::new(mono_ns(), RecordBody::Mark(m))).await;
                }
            }
            _ = poll.tick() => {
                track_cgroup(run);
                let mut tree = inner.tree();
                tree.note_if_new(run.pid);
                tree.reap();
            }
        }
    };
    let stopped = inner.stopping.load(Ordering::Acquire);
    // Leftovers of the group and of the tree (daemonized helpers, a shell's children, what
    // left the group) go with the leader; those reparented to provetop are reaped.
    inner.kill_group(Signal::SIGKILL);
    let tree_inner = inner.clone();
    let root = run.pid;
    let _ = tokio::task::spawn_blocking(move || {
        let mut tree = tree_inner.tree();
        tree.kill(root, Duration::from_secs(2));
        *tree = tree::Tree::default();
    })
    .await;
    let pgid = inner.pgid.swap(0, Ordering::AcqRel);
    registry::unregister(pgid);
    *inner.stdin.lock().unwrap_or_else(|e| e.into_inner()) = None;
    inner.reaped.notify_waiters();
    // Let the reader forward what the child wrote before it died (it sees EOF now that the
    // whole group is gone).
    let _ = tokio::time::timeout(Duration::from_secs(2), &mut run.reader).await;
    run.reader.abort();
    if let Some(o) = run.output.take() {
        o.finish(Duration::from_secs(2)).await;
    }
    if let Some(done) = run.nvtx.take() {
        let _ = tokio::time::timeout(Duration::from_secs(2), done).await;
    }
    let oom = run
        .cgroups
        .iter()
        .any(|(c, before)| matches!((before, c.oom_kills()), (Some(b), Some(a)) if a > *b));
    // Killed by SIGKILL, not by provetop: the kernel log says whether the OOM killer did it
    // and names the cgroup (a child that moved into a memory cgroup and was killed before the
    // cgroup poll saw it is known this way).
    let sigkill = matches!(&status, Ok(st) if std::os::unix::process::ExitStatusExt::signal(st) == Some(Signal::SIGKILL as i32));
    let victim = if sigkill && !stopped {
        let (pid, since) = (run.pid, run.started_ns);
        tokio::task::spawn_blocking(move || {
            crate::kmsg::oom_kill_of(pid, since, exit::OOM_NAME_WAIT)
        })
        .await
        .ok()
        .flatten()
    } else {
        None
    };
    match status {
        Ok(st) => ExitInfo::from_status(st, oom, stopped, victim.as_ref()),
        Err(e) => ExitInfo::unknown(format!("lost track of the child: {e}")),
    }
}

/// How often the child is checked for being stopped (SIGSTOP, SIGTSTP, …) or continued
/// when SIGCHLD cannot be listened to.
const STOP_POLL: Duration = Duration::from_millis(500);

/// Whether the child `pid` was stopped or continued since the last look: waitid with
/// WSTOPPED | WCONTINUED only (never WEXITED: the exit stays for the child's own waiter).
fn stop_change(pid: u32) -> Option<Mark> {
    use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
    let flags = WaitPidFlag::WSTOPPED | WaitPidFlag::WCONTINUED | WaitPidFlag::WNOHANG;
    match waitid(Id::Pid(Pid::from_raw(pid as i32)), flags) {
        Ok(WaitStatus::Stopped(_, sig)) => Some(Mark::ChildStopped {
            pid,
            signal: sig as i32,
            reason: format!("stopped ({})", sig.as_str()),
        }),
        Ok(WaitStatus::Continued(_)) => Some(Mark::ChildContinued { pid }),
        _ => None,
    }
}

/// A child may move itself into another cgroup (e.g. a job's memory cgroup); remember every
/// one it was seen in, with its oom_kill counter at that time.
fn track_cgroup(run: &mut Running) {
    // Resolving a cgroup reads the mount table: only when the child's cgroup file changed.
    let Ok(text) = std::fs::read_to_string(format!("/proc/{}/cgroup", run.pid)) else {
        return;
    };
    if run.cgroup_text.as_deref() == Some(text.as_str()) {
        return;
    }
    run.cgroup_text = Some(text);
    if let Some(c) = MemCgroup::of_pid(run.pid) {
        if !run.cgroups.iter().any(|(k, _)| *k == c) {
            let n = c.oom_kills();
            run.cgroups.push((c, n));
        }
    }
}
