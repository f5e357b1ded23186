//! The state the sampler's threads share with each other and with the handle.
//!
//! One [`Shared`] per running sampler, behind an `Arc`: the root and its generation (bumped by
//! every `set_root`, so a helper's reading of an older tree is discarded), the stop flag, the
//! counters the handle reports, the latest tree, pinned and GPU readings the tick attaches to
//! its sample, and the notes helpers leave for the sampler thread to put in the stream. Each
//! lock is poison-tolerant: a helper that panicked never stops the others.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, Thread};
use std::time::Instant;

use provetop_shared::record::{GpuDetail, GpuReading};
use provetop_shared::Mark;

use super::maps::{Learned, Reading};

/// Latest GPU state, carried into every sample.
#[derive(Default, Clone)]
pub(super) struct GpuState {
    pub(super) gen: u64,
    pub(super) gpus: Vec<GpuReading>,
    pub(super) used: Option<u64>,
    /// Each device's details, for the usage readings.
    pub(super) details: Vec<GpuDetail>,
    /// (pid, GPU index, bytes) of the tree's processes (known amounts only).
    pub(super) procs: Vec<(u32, u32, u64)>,
    /// What provetop's NVML calls cost so far, per kind.
    pub(super) calls: Vec<provetop_shared::NvmlCalls>,
    /// The GPU thread's interval is this many times the asked one (calls slowed).
    pub(super) backoff: Option<u32>,
}

/// The latest mapping-table reading of one process.
#[derive(Debug, Clone, Copy)]
pub(super) struct PidPinned {
    /// None: unknown (unreadable, or a mapping not classified yet).
    pub reading: Option<Reading>,
    pub at: Instant,
}

/// The readings of the tree (`gen`: the tree they belong to).
#[derive(Debug, Default)]
pub(super) struct PinnedState {
    pub gen: u64,
    pub pids: HashMap<u32, PidPinned>,
}

/// What the smaps passes measured, per process, for the table's estimates.
#[derive(Debug, Default)]
pub(super) struct LearnedState {
    pub gen: u64,
    pub pids: HashMap<u32, Arc<Learned>>,
}

/// Whether the tree's processes have mappings the pinned-memory readers measure (CUDA's),
/// as the latest mapping-table reads tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Candidates {
    /// Not every process's table has been read (or one could not be).
    Unknown = 0,
    /// Every process's table was read and none has one.
    None = 1,
    /// At least one process has one.
    Some = 2,
}

/// State shared by the sampler's threads and the handle.
pub(super) struct Shared {
    pub(super) root: AtomicU32,
    /// Bumped by every `set_root`; helper readings of an older tree are discarded.
    pub(super) gen: AtomicU64,
    pub(super) stop: AtomicBool,
    pub(super) dropped: AtomicU64,
    pub(super) late_resets: AtomicU64,
    /// Usage readings taken, their summed and their largest cost (ns), for the bench.
    pub(super) usage_reads: AtomicU64,
    pub(super) usage_ns: AtomicU64,
    pub(super) usage_max_ns: AtomicU64,
    /// Ticks taken; those measured, and their summed and largest CPU time (ns, from waking
    /// to parking).
    pub(super) ticks: AtomicU64,
    pub(super) measured_ticks: AtomicU64,
    pub(super) tick_ns: AtomicU64,
    pub(super) tick_max_ns: AtomicU64,
    pub(super) tree: Mutex<(u64, Vec<u32>)>,
    pub(super) pinned: Mutex<PinnedState>,
    pub(super) learned: Mutex<LearnedState>,
    /// Processes whose address space changed since their last table read.
    pub(super) maps_dirty: Mutex<Vec<u32>>,
    pub(super) maps_thread: Mutex<Option<Thread>>,
    /// A mapping could not be classified from pagemap: smaps should look soon.
    pub(super) smaps_urgent: AtomicBool,
    pub(super) smaps_thread: Mutex<Option<Thread>>,
    /// The tree's RSS at the latest sample (`u64::MAX` before the first): what the next
    /// smaps pass will walk.
    pub(super) tree_rss: AtomicU64,
    /// What the mapping tables last said of CUDA mappings in the tree ([`Candidates`], as
    /// `u8`): an smaps pass over a tree without one would measure nothing.
    pub(super) candidates: AtomicU8,
    /// smaps passes made (for tests).
    pub(super) smaps_passes: AtomicU64,
    pub(super) gpu: Mutex<GpuState>,
    pub(super) notes: Mutex<Vec<Mark>>,
    pub(super) tids: Mutex<Vec<(String, u32)>>,
    pub(super) helpers: Mutex<Vec<Thread>>,
    /// Told when records wait in the ring (at most every `wake_every_ns`), and when the
    /// sampler thread ends: a consumer can sleep until then instead of polling the ring.
    pub(super) wake: tokio::sync::Notify,
    pub(super) wake_every_ns: AtomicU64,
}

impl Shared {
    pub(super) fn new(root_pid: u32) -> Self {
        Shared {
            root: AtomicU32::new(root_pid),
            gen: AtomicU64::new(1),
            stop: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            late_resets: AtomicU64::new(0),
            usage_reads: AtomicU64::new(0),
            usage_ns: AtomicU64::new(0),
            usage_max_ns: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            measured_ticks: AtomicU64::new(0),
            tick_ns: AtomicU64::new(0),
            tick_max_ns: AtomicU64::new(0),
            tree: Mutex::new((1, vec![root_pid])),
            pinned: Mutex::new(PinnedState::default()),
            learned: Mutex::new(LearnedState::default()),
            maps_dirty: Mutex::new(Vec::new()),
            maps_thread: Mutex::new(None),
            smaps_urgent: AtomicBool::new(false),
            smaps_thread: Mutex::new(None),
            tree_rss: AtomicU64::new(u64::MAX),
            candidates: AtomicU8::new(Candidates::Unknown as u8),
            smaps_passes: AtomicU64::new(0),
            gpu: Mutex::new(GpuState::default()),
            notes: Mutex::new(Vec::new()),
            tids: Mutex::new(Vec::new()),
            helpers: Mutex::new(Vec::new()),
            wake: tokio::sync::Notify::new(),
            wake_every_ns: AtomicU64::new(0),
        }
    }

    pub(super) fn note(&self, text: String) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Mark::Note { text });
    }

    pub(super) fn register_tid(&self, name: &str) {
        let tid = nix::unistd::gettid().as_raw() as u32;
        self.tids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((name.to_string(), tid));
    }

    pub(super) fn tree_snapshot(&self) -> (u64, Vec<u32>) {
        self.tree.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Start a helper thread named `name` (its tid registered, [`wake_helpers`] reaching it).
    ///
    /// [`wake_helpers`]: Self::wake_helpers
    pub(super) fn spawn_helper(
        self: &Arc<Self>,
        name: &'static str,
        run: impl FnOnce(&Shared) + Send + 'static,
    ) -> io::Result<Thread> {
        let s = self.clone();
        let t = thread::Builder::new().name(name.into()).spawn(move || {
            s.register_tid(name);
            run(&s)
        })?;
        self.helpers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(t.thread().clone());
        Ok(t.thread().clone())
    }

    /// Publish what the mapping tables say of CUDA mappings in the tree; the smaps thread is
    /// woken when some appear.
    pub(super) fn set_candidates(&self, c: Candidates) {
        let was = self.candidates.swap(c as u8, Ordering::AcqRel);
        if c == Candidates::Some && was != c as u8 {
            if let Some(t) = &*self.smaps_thread.lock().unwrap_or_else(|e| e.into_inner()) {
                t.unpark();
            }
        }
    }

    /// Whether the mapping tables have shown that no process of the tree has a CUDA mapping.
    pub(super) fn no_candidates(&self) -> bool {
        self.candidates.load(Ordering::Acquire) == Candidates::None as u8
    }

    /// Ask `provetop-maps` to read the tables of `pids` now.
    pub(super) fn mark_maps(&self, pids: &[u32]) {
        self.maps_dirty
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(pids);
        if let Some(t) = &*self.maps_thread.lock().unwrap_or_else(|e| e.into_inner()) {
            t.unpark();
        }
    }

    /// Unpark every helper (to see `stop`).
    pub(super) fn wake_helpers(&self) {
        for h in self
            .helpers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            h.unpark();
        }
    }
}
