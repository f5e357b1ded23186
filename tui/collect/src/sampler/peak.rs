//! The helper thread that resets VmHWM (`clear_refs` ← 5) after each sample whose VmHWM is
//! above its RSS (the kernel shows max(high-water mark, RSS), so where they are equal the
//! reset would set the mark to what it already reads: the sampler does not ask).
//!
//! The write takes the target's mmap lock for writing and waits, up to seconds, while the
//! target maps or frees large regions (docs/measurements.md#the-vmhwm-resets-wait). The
//! sampling thread therefore only posts "reset
//! these pids" and goes on; requests coalesce (the latest wins) while a write is stuck, and a
//! late reset only widens the next interval, so no peak is ever missed.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::procstatus::PeakResetter;

#[derive(Default)]
struct Request {
    pids: Vec<u32>,
    seq: u64,
    stop: bool,
    /// When the sample that asked was taken.
    at: Option<Instant>,
}

/// State shared between the sampler and the reset thread.
#[derive(Default)]
pub struct Shared {
    req: Mutex<Request>,
    cv: Condvar,
    /// Sequence number of the last request fully served.
    pub done_seq: AtomicU64,
    /// Longest time from a request (the sample's read) to the end of its resets, µs. A
    /// spike that starts and ends within this window after a sample is not seen by the next
    /// one: normally tens of µs, longer while the target holds its mmap lock.
    pub max_delay_us: AtomicU64,
    /// Requests served, the sum of their delays (µs), and how many took at least
    /// [`SLOW_RESET`].
    pub served: AtomicU64,
    pub delay_sum_us: AtomicU64,
    pub slow: AtomicU64,
    /// Thread id of the reset thread (0 until it runs).
    pub tid: AtomicU32,
    /// Pids whose peak cannot be reset (permission), with the reason; taken by the sampler.
    pub refused: Mutex<Vec<(u32, String)>>,
}

/// A reset that waits this long behind the target's mmap lock is counted as slow.
pub const SLOW_RESET: Duration = Duration::from_millis(10);

/// What the peak resets cost the target so far ([`SamplerHandle::reset_report`]); its
/// `Display` is the line a session records.
///
/// [`SamplerHandle::reset_report`]: super::SamplerHandle::reset_report
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResetReport {
    /// Resets made.
    pub served: u64,
    /// Their mean and longest wait, from the sample that asked to the end of the reset.
    pub mean: Duration,
    pub max: Duration,
    /// How many waited at least [`SLOW_RESET`] (behind the target's mmap lock).
    pub slow: u64,
    /// Samples taken while the previous reset still waited: their peaks span more than one
    /// interval.
    pub late: u64,
}

impl std::fmt::Display for ResetReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "VmHWM resets: {}, waiting {:.3} ms on average and {:.1} ms at most from their \
             sample; {} waited {} ms or more; {} samples taken while a reset still waited",
            self.served,
            self.mean.as_secs_f64() * 1000.0,
            self.max.as_secs_f64() * 1000.0,
            self.slow,
            SLOW_RESET.as_millis(),
            self.late
        )
    }
}

/// Handle to the reset thread.
pub struct PeakResets {
    shared: Arc<Shared>,
    seq: u64,
    thread: Option<JoinHandle<()>>,
}

impl PeakResets {
    /// Start the thread.
    pub fn spawn() -> io::Result<PeakResets> {
        let shared = Arc::new(Shared::default());
        let s2 = shared.clone();
        let thread = std::thread::Builder::new()
            .name("provetop-peak".into())
            .spawn(move || run(&s2))?;
        Ok(PeakResets {
            shared,
            seq: 0,
            thread: Some(thread),
        })
    }

    /// Ask for the peaks of `pids` to be reset now (replaces any request not yet served).
    pub fn request(&mut self, pids: &[u32]) {
        self.seq += 1;
        let mut r = self.shared.req.lock().unwrap_or_else(|e| e.into_inner());
        r.pids.clear();
        r.pids.extend_from_slice(pids);
        r.seq = self.seq;
        r.at = Some(Instant::now());
        drop(r);
        self.shared.cv.notify_one();
    }

    /// Whether every request so far has been served.
    pub fn caught_up(&self) -> bool {
        self.shared.done_seq.load(Ordering::Acquire) == self.seq
    }

    /// Shared counters.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }
}

impl Drop for PeakResets {
    fn drop(&mut self) {
        self.shared
            .req
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stop = true;
        self.shared.cv.notify_one();
        // Not joined: a write stuck behind the target's mmap lock must not hold up the
        // sampler's shutdown; the thread ends as soon as the write returns.
        drop(self.thread.take());
    }
}

fn run(s: &Shared) {
    s.tid
        .store(nix::unistd::gettid().as_raw() as u32, Ordering::Relaxed);
    let mut open: HashMap<u32, PeakResetter> = HashMap::new();
    let mut seen = 0u64;
    let mut pids = Vec::new();
    let mut asked;
    loop {
        {
            let mut r = s.req.lock().unwrap_or_else(|e| e.into_inner());
            while r.seq == seen && !r.stop {
                r = s.cv.wait(r).unwrap_or_else(|e| e.into_inner());
            }
            if r.stop {
                return;
            }
            seen = r.seq;
            asked = r.at.unwrap_or_else(Instant::now);
            pids.clear();
            pids.extend_from_slice(&r.pids);
        }
        open.retain(|pid, _| pids.contains(pid));
        for &pid in &pids {
            let res = match open.entry(pid) {
                std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().reset_peak(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    PeakResetter::open(pid).and_then(|r| v.insert(r).reset_peak())
                }
            };
            if let Err(e) = res {
                open.remove(&pid);
                if matches!(
                    e.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
                ) {
                    s.refused
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((pid, e.to_string()));
                }
                // ESRCH/ENOENT: the process is gone; the sampler notices on its own.
            }
        }
        let us = asked.elapsed().as_micros() as u64;
        s.max_delay_us.fetch_max(us, Ordering::Relaxed);
        s.served.fetch_add(1, Ordering::Relaxed);
        s.delay_sum_us.fetch_add(us, Ordering::Relaxed);
        if us >= SLOW_RESET.as_micros() as u64 {
            s.slow.fetch_add(1, Ordering::Relaxed);
        }
        s.done_seq.store(seen, Ordering::Release);
    }
}

/// A claim on sampling one process's tree, so that a second provetop on the same tree is
/// noticed (their VmHWM resets spoil each other's interval peaks). An advisory lock
/// (`flock`) on `sampling-PID-STARTTIME` in provetop's runtime directory
/// (`$XDG_RUNTIME_DIR/provetop`, else `/tmp/provetop-UID`), held while the file is open: the
/// kernel drops it when provetop ends, however it ends. The file holds the holder's pid.
pub struct SamplingClaim {
    _lock: Option<nix::fcntl::Flock<std::fs::File>>,
}

impl SamplingClaim {
    /// Claim `pid`'s tree, and look whether another provetop samples it or one of its
    /// ancestors' trees (which hold it). Returns the claim (a no-op where the runtime
    /// directory cannot be used) and, for each other sampler found, `(its pid, the pid it
    /// samples)`.
    pub fn take(pid: u32) -> (SamplingClaim, Vec<(u32, u32)>) {
        let Some(dir) = runtime_dir() else {
            return (SamplingClaim { _lock: None }, Vec::new());
        };
        let mut others = Vec::new();
        let mut lock = None;
        let me = std::process::id();
        // The target, then its ancestors (never provetop itself or init).
        let mut p = pid;
        let mut first = true;
        while p > 1 && p != me {
            let Some((ppid, start)) = ppid_start(p) else {
                break;
            };
            let path = dir.join(format!("sampling-{p}-{start}"));
            if first {
                match claim(&path) {
                    Ok(l) => lock = Some(l),
                    Err(Some(holder)) => others.push((holder, p)),
                    Err(None) => {}
                }
                first = false;
            } else if let Some(holder) = held_by(&path) {
                others.push((holder, p));
            }
            p = ppid;
        }
        (SamplingClaim { _lock: lock }, others)
    }
}

fn runtime_dir() -> Option<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { nix::libc::geteuid() };
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(d) => std::path::PathBuf::from(d).join("provetop"),
        None => std::path::PathBuf::from(format!("/tmp/provetop-{uid}")),
    };
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    // Only a real directory of ours, private: never one planted by someone else.
    let m = std::fs::symlink_metadata(&dir).ok()?;
    (m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0).then_some(dir)
}

fn open_lock(path: &std::path::Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .ok()
}

/// Take the lock at `path` and write our pid in it; `Err(Some(pid))` when another provetop
/// holds it, `Err(None)` when it cannot be used.
fn claim(path: &std::path::Path) -> Result<nix::fcntl::Flock<std::fs::File>, Option<u32>> {
    use std::io::{Seek, Write};
    let f = open_lock(path).ok_or(None)?;
    match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock) {
        Ok(mut l) => {
            let _ = l.set_len(0);
            let _ = l.rewind();
            let _ = write!(l, "{}", std::process::id());
            Ok(l)
        }
        Err((f, nix::errno::Errno::EWOULDBLOCK)) => Err(Some(holder(&f))),
        Err(_) => Err(None),
    }
}

/// The pid of the provetop holding the lock at `path`, if one does.
fn held_by(path: &std::path::Path) -> Option<u32> {
    let f = std::fs::File::open(path).ok()?;
    match nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockSharedNonblock) {
        Ok(_) => None,
        Err((f, nix::errno::Errno::EWOULDBLOCK)) => Some(holder(&f)),
        Err(_) => None,
    }
}

fn holder(f: &std::fs::File) -> u32 {
    use std::io::Read;
    let mut s = String::new();
    let _ = f.take(32).read_to_string(&mut s);
    s.trim().parse().unwrap_or(0)
}

/// Parent pid and start time of `pid`.
fn ppid_start(pid: u32) -> Option<(u32, u64)> {
    let s = crate::procfile::read_stat(pid)?;
    let f = crate::procfile::StatFields::parse(s.as_bytes())?;
    Some((f.num(4)?, f.num(22)?))
}
