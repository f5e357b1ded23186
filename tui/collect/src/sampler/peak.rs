//! The helper thread that resets VmHWM (`clear_refs` ← 5) after each sample.
//!
//! The write takes the target's mmap lock for writing and was seen to wait 1.8 s while the
//! target mapped or freed large regions. The sampling thread therefore only posts "reset
//! these pids" and goes on; requests coalesce (the latest wins) while a write is stuck, and a
//! late reset only widens the next interval, so no peak is ever missed.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

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
    /// Thread id of the reset thread (0 until it runs).
    pub tid: AtomicU32,
    /// Pids whose peak cannot be reset (permission), with the reason; taken by the sampler.
    pub refused: Mutex<Vec<(u32, String)>>,
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
        s.done_seq.store(seen, Ordering::Release);
    }
}
