//! The memory sampler: a dedicated OS thread that samples a process tree on a fixed schedule.
//!
//! Every tick (default 20 Hz, absolute deadlines so the rate never drifts) it re-reads the
//! open `/proc/PID/status` of every process in the tree (VmRSS, RssAnon/File/Shmem, VmSwap,
//! VmLck, VmPin, VmHWM and VmSize), sums them, adds system and cgroup memory, attaches the
//! latest pinned-memory and GPU readings, and pushes a [`Sample`] into a lock-free SPSC ring
//! that the app drains. Slow or blocking work runs on helper threads so the schedule holds:
//!
//! * `provetop-peak` resets VmHWM after each sample (`clear_refs` may block on the target's
//!   mmap lock), so each sample's `peak` is the true maximum of its interval.
//! * `provetop-maps` follows CUDA pinned host memory in the mapping table (`maps.rs`): woken
//!   when a process's VmSize moved, and once a second; its cost follows the number of
//!   mappings, not the RSS (`pinned.rs`).
//! * `provetop-smaps` cross-checks it with full smaps passes, resting after each pass so it
//!   uses at most `smaps_duty` of a core.
//! * `provetop-gpu` reads NVML at `gpu_hz` (utilisation and memory for every sample; the
//!   details and each process's GPU memory for the usage readings).
//!
//! At `usage_hz` (default 2 Hz) the tick also takes a usage reading (`usage.rs`): CPU time,
//! threads, faults, context switches and storage I/O per process of the tree, the host's
//! load and the GPU details, pushed as a [`RecordBody::Usage`] right after its sample. It
//! reuses the tick's status readings and runs on the sampler thread, inside its budget.
//!
//! A sample's `pinned` is the tree's CUDA pinned host memory plus its VmLck (less what smaps
//! found locked inside CUDA's mappings): `None` while any process's reading is unknown
//! (unreadable table, unclassified mapping, not read yet) or older than [`PINNED_STALE`].
//!
//! The tree itself is re-discovered at a rate bounded by the walk's measured cost.

mod config;
mod gpu;
pub mod hoststat;
pub mod maps;
mod peak;
mod pinned;
pub mod procstat;
pub mod system;
pub mod tree;
pub mod usage;

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use provetop_shared::clock::mono_ns;
use provetop_shared::record::{GpuDetail, GpuReading};
use provetop_shared::{Mark, Record, RecordBody, Sample};
use ringbuf::traits::{Consumer, Observer, Producer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};

use crate::cgroup::{MemCgroup, UsageReader};
use crate::procstatus::{MemStatus, StatusReader};

pub use config::{
    Bounds, SamplerConfig, DEFAULT_GPU_HZ, DEFAULT_HZ, DEFAULT_SMAPS_DUTY, DEFAULT_USAGE_HZ,
    GPU_HZ_BOUNDS, HZ_BOUNDS, SMAPS_DUTY_BOUNDS, USAGE_HZ_BOUNDS,
};
pub use peak::SamplingClaim;
pub use pinned::{cross_check, read_pinned, smaps_pinned, Check, MAPS_DUTY, MAPS_FLOOR};

/// The sampler's own thread (the front ends let its panic reach the pipeline, which stops
/// the session in order).
pub const THREAD_NAME: &str = "provetop-sampler";
/// Samples the ring holds before the sampler starts dropping (about 200 s at 20 Hz).
pub const RING_CAPACITY: usize = 4096;
/// Share of one core the process-tree walk may use.
const TREE_DUTY: f64 = 0.0005;
/// Shortest time between two tree walks: a new descendant is found within this.
const TREE_MIN_INTERVAL: Duration = Duration::from_millis(250);
/// Longest time between two tree walks whatever they cost.
const TREE_MAX_INTERVAL: Duration = Duration::from_secs(2);
/// Smaps passes never run more often than this.
const SMAPS_MIN_INTERVAL: Duration = Duration::from_secs(1);
/// A process's pinned reading older than this (its table read is stuck behind the target's
/// mmap lock) makes the sample's pinned unknown.
pub const PINNED_STALE: Duration = Duration::from_secs(3);

/// Latest GPU state, carried into every sample.
#[derive(Default, Clone)]
struct GpuState {
    gen: u64,
    gpus: Vec<GpuReading>,
    used: Option<u64>,
    /// Each device's details, for the usage readings.
    details: Vec<GpuDetail>,
    /// (pid, GPU index, bytes) of the tree's processes (known amounts only).
    procs: Vec<(u32, u32, u64)>,
}

/// State shared by the sampler's threads and the handle.
struct Shared {
    root: AtomicU32,
    /// Bumped by every `set_root`; helper readings of an older tree are discarded.
    gen: AtomicU64,
    stop: AtomicBool,
    dropped: AtomicU64,
    late_resets: AtomicU64,
    /// Usage readings taken, their summed and their largest cost (ns), for the bench.
    usage_reads: AtomicU64,
    usage_ns: AtomicU64,
    usage_max_ns: AtomicU64,
    tree: Mutex<(u64, Vec<u32>)>,
    pinned: Mutex<pinned::PinnedState>,
    learned: Mutex<pinned::LearnedState>,
    /// Processes whose address space changed since their last table read.
    maps_dirty: Mutex<Vec<u32>>,
    maps_thread: Mutex<Option<Thread>>,
    /// A mapping could not be classified from pagemap: smaps should look soon.
    smaps_urgent: AtomicBool,
    smaps_thread: Mutex<Option<Thread>>,
    gpu: Mutex<GpuState>,
    notes: Mutex<Vec<Mark>>,
    tids: Mutex<Vec<(String, u32)>>,
    helpers: Mutex<Vec<Thread>>,
}

impl Shared {
    fn new(root_pid: u32) -> Self {
        Shared {
            root: AtomicU32::new(root_pid),
            gen: AtomicU64::new(1),
            stop: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            late_resets: AtomicU64::new(0),
            usage_reads: AtomicU64::new(0),
            usage_ns: AtomicU64::new(0),
            usage_max_ns: AtomicU64::new(0),
            tree: Mutex::new((1, vec![root_pid])),
            pinned: Mutex::new(pinned::PinnedState::default()),
            learned: Mutex::new(pinned::LearnedState::default()),
            maps_dirty: Mutex::new(Vec::new()),
            maps_thread: Mutex::new(None),
            smaps_urgent: AtomicBool::new(false),
            smaps_thread: Mutex::new(None),
            gpu: Mutex::new(GpuState::default()),
            notes: Mutex::new(Vec::new()),
            tids: Mutex::new(Vec::new()),
            helpers: Mutex::new(Vec::new()),
        }
    }

    fn note(&self, text: String) {
        self.notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Mark::Note { text });
    }

    fn register_tid(&self, name: &str) {
        let tid = nix::unistd::gettid().as_raw() as u32;
        self.tids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((name.to_string(), tid));
    }

    fn tree_snapshot(&self) -> (u64, Vec<u32>) {
        self.tree.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Start a helper thread named `name` (its tid registered, [`wake_helpers`] reaching it).
    ///
    /// [`wake_helpers`]: Self::wake_helpers
    fn spawn_helper(
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

    /// Ask `provetop-maps` to read the tables of `pids` now.
    fn mark_maps(&self, pids: &[u32]) {
        self.maps_dirty
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(pids);
        if let Some(t) = &*self.maps_thread.lock().unwrap_or_else(|e| e.into_inner()) {
            t.unpark();
        }
    }

    /// Unpark every helper (to see `stop`).
    fn wake_helpers(&self) {
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

/// The app's end of a running sampler.
pub struct SamplerHandle {
    cons: HeapCons<Record>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    peak_shared: Arc<peak::Shared>,
}

/// Start sampling the tree rooted at `root_pid`.
///
/// Fails only when the configuration is out of range or a thread cannot be started; a
/// missing process is reported in the stream (a [`Mark::Note`]) and sampling resumes after
/// [`SamplerHandle::set_root`].
pub fn spawn(cfg: SamplerConfig, root_pid: u32) -> io::Result<SamplerHandle> {
    cfg.validate()?;
    let (prod, cons) = HeapRb::<Record>::new(RING_CAPACITY).split();
    let shared = Arc::new(Shared::new(root_pid));
    let resets = peak::PeakResets::spawn()?;
    let peak_shared = resets.shared().clone();

    let started = start_threads(&cfg, &shared, prod, resets);
    let thread = match started {
        Ok(t) => t,
        Err(e) => {
            // Helpers already running must not outlive a failed start.
            shared.stop.store(true, Ordering::Release);
            shared.wake_helpers();
            return Err(e);
        }
    };
    Ok(SamplerHandle {
        cons,
        shared,
        thread: Some(thread),
        peak_shared,
    })
}

fn start_threads(
    cfg: &SamplerConfig,
    shared: &Arc<Shared>,
    prod: HeapProd<Record>,
    resets: peak::PeakResets,
) -> io::Result<JoinHandle<()>> {
    let hz = cfg.hz;
    let maps = shared.spawn_helper("provetop-maps", move |s| pinned::maps_loop(s, hz))?;
    *shared.maps_thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(maps);
    if cfg.smaps_duty > 0.0 {
        let duty = cfg.smaps_duty;
        let t = shared.spawn_helper("provetop-smaps", move |s| pinned::smaps_loop(s, duty))?;
        *shared
            .smaps_thread
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(t);
    }
    if cfg.gpu_hz > 0.0 {
        let period = Duration::from_secs_f64(1.0 / cfg.gpu_hz);
        shared.spawn_helper("provetop-gpu", move |s| gpu::gpu_loop(s, period))?;
    }
    let s = shared.clone();
    let cfg = cfg.clone();
    thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            s.register_tid(THREAD_NAME);
            Sampler::new(cfg, s, prod, resets).run()
        })
}

impl SamplerHandle {
    /// Move every available record into `out` (never blocks).
    pub fn drain(&mut self, out: &mut Vec<Record>) {
        while let Some(r) = self.cons.try_pop() {
            out.push(r);
        }
    }

    /// Samples lost because the ring was full (the app did not drain in time).
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Samples taken while the previous peak reset was still stuck (the target held its mmap
    /// lock); such a sample's peak covers more than one interval.
    pub fn late_resets(&self) -> u64 {
        self.shared.late_resets.load(Ordering::Relaxed)
    }

    /// Usage readings taken so far, their mean and their largest cost on the sampler thread
    /// (from the tick's status readings to the record in the ring).
    pub fn usage_cost(&self) -> (u64, Duration, Duration) {
        let n = self.shared.usage_reads.load(Ordering::Relaxed);
        let total = self.shared.usage_ns.load(Ordering::Relaxed);
        let max = self.shared.usage_max_ns.load(Ordering::Relaxed);
        let mean = total.checked_div(n).unwrap_or(0);
        (n, Duration::from_nanos(mean), Duration::from_nanos(max))
    }

    /// Sample the tree rooted at `pid` from now on (after a restart of the child).
    pub fn set_root(&self, pid: u32) {
        self.shared.root.store(pid, Ordering::Release);
        self.shared.gen.fetch_add(1, Ordering::AcqRel);
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }

    /// The pid sampled now.
    pub fn root(&self) -> u32 {
        self.shared.root.load(Ordering::Acquire)
    }

    /// Names and kernel thread ids of the sampler's threads (sampler, peak reset, maps,
    /// smaps, GPU), for measuring the sampler's own CPU use in `/proc/self/task/TID/stat`.
    pub fn thread_ids(&self) -> Vec<(String, u32)> {
        let mut v = self
            .shared
            .tids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let p = self.peak_shared.tid.load(Ordering::Relaxed);
        if p != 0 {
            v.push(("provetop-peak".into(), p));
        }
        v
    }

    /// Longest time so far from a sample to the end of its peak reset (`clear_refs`). A
    /// spike that begins and ends inside this window right after a sample is the one thing
    /// the interval peak can miss; it grows while the target holds its mmap lock.
    pub fn max_reset_delay(&self) -> Duration {
        Duration::from_micros(self.peak_shared.max_delay_us.load(Ordering::Relaxed))
    }

    /// Whether the sampling thread is still running (false once it has ended, stopped or
    /// not).
    pub fn is_alive(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// The sampling thread ended without being stopped (it panicked): what happened, once
    /// (the thread is joined then; later calls return `None`). No more samples come: the
    /// caller must treat it as fatal.
    pub fn died(&mut self) -> Option<String> {
        if self.shared.stop.load(Ordering::Acquire)
            || !self.thread.as_ref().is_some_and(|t| t.is_finished())
        {
            return None;
        }
        let t = self.thread.take()?;
        Some(match t.join() {
            Ok(()) => "the sampler thread ended by itself".to_string(),
            Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned());
                match msg {
                    Some(m) => format!("the sampler thread panicked: {m}"),
                    None => "the sampler thread panicked".to_string(),
                }
            }
        })
    }

    /// Stop all threads; joins the sampling thread.
    pub fn stop(mut self) {
        self.signal_stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn signal_stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        self.shared.wake_helpers();
    }
}

impl Drop for SamplerHandle {
    fn drop(&mut self) {
        self.signal_stop();
    }
}

/// Sleep until `deadline` or until unparked by stop/set_root.
fn park_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now {
        thread::park_timeout(deadline - now);
    }
}

/// One process being followed.
struct Proc {
    status: StatusReader,
    /// First reading not taken yet: its VmHWM is a lifetime peak, not this interval's.
    fresh: bool,
    /// VmSize when its mapping table was last asked for (0: never).
    vm_size: u64,
}

struct Sampler {
    cfg: SamplerConfig,
    shared: Arc<Shared>,
    prod: HeapProd<Record>,
    resets: peak::PeakResets,
    procs: HashMap<u32, Proc>,
    order: Vec<u32>,
    gen: u64,
    root: u32,
    root_gone: bool,
    children_files: bool,
    /// Parents read once per process, for walks without `children` files.
    parents: tree::ParentCache,
    next_walk: Instant,
    meminfo: Option<system::MemInfo>,
    cgroup: Option<UsageReader>,
    no_reset: Vec<u32>,
    pending_drops: u64,
    reset_pids: Vec<u32>,
    /// (pid, VmLck) of the processes counted in this tick.
    locked: Vec<(u32, u64)>,
    maps_marks: Vec<u32>,
    /// A stale or missing pinned reading was said (cleared once readings are whole again).
    pinned_stale_said: bool,
    /// The usage reader (`None`: `usage_hz` is 0) and when its next reading is due.
    usage: Option<usage::UsageReader>,
    next_usage: Instant,
    usage_period: Duration,
    /// This tick's status readings, when it takes a usage reading.
    tick_procs: Vec<usage::TickProc>,
}

impl Sampler {
    fn new(
        cfg: SamplerConfig,
        shared: Arc<Shared>,
        prod: HeapProd<Record>,
        resets: peak::PeakResets,
    ) -> Self {
        let meminfo = system::MemInfo::open().ok();
        let usage = (cfg.usage_hz > 0.0).then(usage::UsageReader::new);
        let usage_period = if cfg.usage_hz > 0.0 {
            Duration::from_secs_f64(1.0 / cfg.usage_hz)
        } else {
            Duration::MAX
        };
        Sampler {
            cfg,
            shared,
            prod,
            resets,
            procs: HashMap::new(),
            order: Vec::new(),
            gen: 0,
            root: 0,
            root_gone: false,
            children_files: tree::has_children_files(),
            parents: tree::ParentCache::default(),
            next_walk: Instant::now(),
            meminfo,
            cgroup: None,
            no_reset: Vec::new(),
            pending_drops: 0,
            reset_pids: Vec::new(),
            locked: Vec::new(),
            maps_marks: Vec::new(),
            pinned_stale_said: false,
            usage,
            next_usage: Instant::now(),
            usage_period,
            tick_procs: Vec::new(),
        }
    }

    fn run(mut self) {
        let period = Duration::from_secs_f64(1.0 / self.cfg.hz);
        let start = Instant::now();
        let mut k: u32 = 0;
        while !self.shared.stop.load(Ordering::Acquire) {
            self.tick();
            // Absolute deadlines: tick k is due at start + k·period. After a stall (the VM
            // was descheduled), skip the missed ticks instead of bursting to catch up.
            let elapsed = start.elapsed();
            let next = (elapsed.as_secs_f64() / period.as_secs_f64()).floor() as u64 + 1;
            k = k.max(next.min(u32::MAX as u64) as u32);
            let deadline = start + period * k;
            loop {
                park_until(deadline);
                if Instant::now() >= deadline
                    || self.shared.stop.load(Ordering::Acquire)
                    || self.shared.gen.load(Ordering::Acquire) != self.gen
                {
                    break;
                }
            }
        }
    }

    fn push(&mut self, rec: Record) {
        if self.pending_drops > 0 && self.prod.vacant_len() >= 2 {
            let count = std::mem::take(&mut self.pending_drops);
            let _ = self.prod.try_push(Record::new(
                mono_ns(),
                RecordBody::Mark(Mark::Dropped {
                    what: "samples".into(),
                    count,
                }),
            ));
        }
        if self.prod.try_push(rec).is_err() {
            self.pending_drops += 1;
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn forward_notes(&mut self) {
        let notes =
            std::mem::take(&mut *self.shared.notes.lock().unwrap_or_else(|e| e.into_inner()));
        for m in notes {
            self.push(Record::new(mono_ns(), RecordBody::Mark(m)));
        }
        let refused = std::mem::take(
            &mut *self
                .resets
                .shared()
                .refused
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for (pid, why) in refused {
            if !self.no_reset.contains(&pid) {
                self.no_reset.push(pid);
                self.push(Record::new(
                    mono_ns(),
                    RecordBody::Mark(Mark::Note {
                        text: format!(
                            "cannot reset the peak RSS of pid {pid} ({why}): its interval peak falls back to its RSS"
                        ),
                    }),
                ));
            }
        }
    }

    /// Adopt a new root after `set_root` (or at start).
    fn adopt_root(&mut self) {
        self.gen = self.shared.gen.load(Ordering::Acquire);
        let same_root = self.shared.root.load(Ordering::Acquire) == self.root;
        self.root = self.shared.root.load(Ordering::Acquire);
        self.procs.clear();
        self.order.clear();
        self.no_reset.clear();
        self.root_gone = false;
        self.cgroup = MemCgroup::of_pid(self.root).map(|c| UsageReader::open(&c));
        self.next_walk = Instant::now();
        *self.shared.tree.lock().unwrap_or_else(|e| e.into_inner()) = (self.gen, vec![self.root]);
        self.pinned_stale_said = false;
        // The same root again (the front end confirming the child it started): its usage
        // readings go on; a new tree starts without rates. (The open stat files pin each
        // process's identity either way.)
        if let Some(u) = self.usage.as_mut().filter(|_| !same_root) {
            u.clear();
            self.next_usage = Instant::now();
        }
    }

    fn walk_tree(&mut self) {
        let t0 = Instant::now();
        let pids = if self.children_files {
            tree::descendants(self.root, true)
        } else {
            self.parents.descendants(self.root, &self.order)
        };
        self.procs.retain(|pid, _| pids.contains(pid));
        for &pid in &pids {
            if let std::collections::hash_map::Entry::Vacant(v) = self.procs.entry(pid) {
                if let Ok(status) = StatusReader::open(pid) {
                    v.insert(Proc {
                        status,
                        fresh: true,
                        vm_size: 0,
                    });
                }
            }
        }
        self.order = pids
            .into_iter()
            .filter(|p| self.procs.contains_key(p))
            .collect();
        *self.shared.tree.lock().unwrap_or_else(|e| e.into_inner()) =
            (self.gen, self.order.clone());
        let cost = t0.elapsed();
        let rest = Duration::from_secs_f64(cost.as_secs_f64() / TREE_DUTY)
            .clamp(TREE_MIN_INTERVAL, TREE_MAX_INTERVAL);
        self.next_walk = Instant::now() + rest;
    }

    fn tick(&mut self) {
        if self.shared.gen.load(Ordering::Acquire) != self.gen {
            self.adopt_root();
        }
        self.forward_notes();
        if self.root_gone {
            return;
        }
        if Instant::now() >= self.next_walk || !self.procs.contains_key(&self.root) {
            self.walk_tree();
        }
        if self.cfg.reset_peak && !self.resets.caught_up() {
            self.shared.late_resets.fetch_add(1, Ordering::Relaxed);
        }
        let t = mono_ns();
        let mut sum = MemStatus::default();
        let mut peak = 0u64;
        let mut procs = 0u32;
        let mut gone = Vec::new();
        self.reset_pids.clear();
        self.locked.clear();
        self.maps_marks.clear();
        self.tick_procs.clear();
        let usage_due = self.usage.is_some() && Instant::now() >= self.next_usage;
        for &pid in &self.order {
            let Some(p) = self.procs.get_mut(&pid) else {
                continue;
            };
            match p.status.read() {
                Ok(m) if !m.no_mm => {
                    sum.rss += m.rss;
                    sum.anon += m.anon;
                    sum.file += m.file;
                    sum.shmem += m.shmem;
                    sum.swap += m.swap;
                    sum.locked += m.locked;
                    sum.pin += m.pin;
                    let interval_peak = if p.fresh || self.no_reset.contains(&pid) {
                        m.rss
                    } else {
                        m.hwm.max(m.rss)
                    };
                    p.fresh = false;
                    if m.size != p.vm_size {
                        p.vm_size = m.size;
                        self.maps_marks.push(pid);
                    }
                    self.locked.push((pid, m.locked));
                    if usage_due {
                        self.tick_procs.push(usage::TickProc {
                            pid,
                            status: m,
                            pinned: None,
                        });
                    }
                    peak += interval_peak;
                    procs += 1;
                    if !self.no_reset.contains(&pid) {
                        self.reset_pids.push(pid);
                    }
                }
                // A zombie (exited, not reaped yet) holds no memory.
                Ok(_) => gone.push(pid),
                Err(_) => gone.push(pid),
            }
        }
        if self.cfg.reset_peak && !self.reset_pids.is_empty() {
            self.resets.request(&self.reset_pids);
        }
        if !self.maps_marks.is_empty() {
            self.shared.mark_maps(&self.maps_marks);
        }
        if !gone.is_empty() {
            for pid in &gone {
                self.procs.remove(pid);
            }
            self.order.retain(|p| !gone.contains(p));
        }
        if gone.contains(&self.root) || procs == 0 {
            self.root_gone = true;
            let root = self.root;
            self.push(Record::new(
                t,
                RecordBody::Mark(Mark::Note {
                    text: format!("process {root} is gone; sampling stopped"),
                }),
            ));
            return;
        }
        let mut s = Sample {
            rss: sum.rss,
            peak: self.cfg.reset_peak.then_some(peak.max(sum.rss)),
            anon: Some(sum.anon),
            file: Some(sum.file),
            shmem: Some(sum.shmem),
            swap: Some(sum.swap),
            locked: Some(sum.locked),
            vm_pin: Some(sum.pin),
            procs,
            ..Sample::default()
        };
        s.pinned = self.pinned();
        {
            let g = self.shared.gpu.lock().unwrap_or_else(|e| e.into_inner());
            if g.gen == self.gen {
                s.gpu_used = g.used;
                s.gpus = g.gpus.clone();
            }
        }
        if let Some(mi) = &mut self.meminfo {
            if let Ok((total, avail)) = mi.read() {
                s.mem_total = Some(total);
                s.mem_available = Some(avail);
            }
        }
        if let Some(cg) = &mut self.cgroup {
            (s.cgroup_current, s.cgroup_max) = cg.read();
        }
        self.push(Record::new(t, RecordBody::Sample(s)));
        if usage_due {
            self.usage_reading();
        }
    }

    /// Take a usage reading of this tick's processes and push it; schedule the next.
    fn usage_reading(&mut self) {
        let now = Instant::now();
        self.usage_reading_at(now);
        let cost = now.elapsed().as_nanos() as u64;
        self.shared.usage_reads.fetch_add(1, Ordering::Relaxed);
        self.shared.usage_ns.fetch_add(cost, Ordering::Relaxed);
        self.shared.usage_max_ns.fetch_max(cost, Ordering::Relaxed);
    }

    fn usage_reading_at(&mut self, now: Instant) {
        self.next_usage += self.usage_period;
        if self.next_usage <= now {
            // Behind (a stall, or usage_hz above hz): the next one period from now.
            self.next_usage = now + self.usage_period;
        }
        {
            let st = self.shared.pinned.lock().unwrap_or_else(|e| e.into_inner());
            for p in &mut self.tick_procs {
                let r = (st.gen == self.gen).then(|| st.pids.get(&p.pid)).flatten();
                p.pinned = r
                    .filter(|r| r.at.elapsed() <= PINNED_STALE)
                    .and_then(|r| r.reading)
                    .map(|r| r.pinned + p.status.locked.saturating_sub(r.locked_overlap));
            }
        }
        let (details, gpu_mem) = {
            let g = self.shared.gpu.lock().unwrap_or_else(|e| e.into_inner());
            if g.gen == self.gen {
                (g.details.clone(), g.procs.clone())
            } else {
                (Vec::new(), Vec::new())
            }
        };
        let Some(reader) = &mut self.usage else {
            return;
        };
        let t = mono_ns();
        let u = reader.read(t, &self.tick_procs, &gpu_mem, details);
        self.push(Record::new(t, RecordBody::Usage(u)));
    }

    /// The tree's pinned memory from the latest table readings plus VmLck: `None` (and a note,
    /// once) while a process's reading is unknown, missing or stale.
    fn pinned(&mut self) -> Option<u64> {
        let mut sum = 0u64;
        let mut why: Option<String> = None;
        {
            let st = self.shared.pinned.lock().unwrap_or_else(|e| e.into_inner());
            for &(pid, locked) in &self.locked {
                let r = (st.gen == self.gen).then(|| st.pids.get(&pid)).flatten();
                match r {
                    Some(p) if p.at.elapsed() > PINNED_STALE => {
                        why.get_or_insert_with(|| {
                            format!(
                                "pinned memory unknown: the mapping table of pid {pid} was last read {:.1} s ago (its mmap lock is held?)",
                                p.at.elapsed().as_secs_f64()
                            )
                        });
                    }
                    Some(p) => match p.reading {
                        Some(r) => sum += r.pinned + locked.saturating_sub(r.locked_overlap),
                        // Said by the maps thread.
                        None => why = why.or(Some(String::new())),
                    },
                    // Not read yet (a new process): known within one tick.
                    None => why = why.or(Some(String::new())),
                }
            }
        }
        match why {
            None => {
                self.pinned_stale_said = false;
                Some(sum)
            }
            Some(text) => {
                if !text.is_empty() && !self.pinned_stale_said {
                    self.pinned_stale_said = true;
                    self.push(Record::new(
                        mono_ns(),
                        RecordBody::Mark(Mark::Note { text }),
                    ));
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handle over `thread`, as `spawn` builds it.
    fn handle_over(thread: JoinHandle<()>) -> SamplerHandle {
        let (_prod, cons) = HeapRb::<Record>::new(4).split();
        SamplerHandle {
            cons,
            shared: Arc::new(Shared::new(std::process::id())),
            thread: Some(thread),
            peak_shared: Arc::new(peak::Shared::default()),
        }
    }

    fn ended(t: &JoinHandle<()>) {
        let end = Instant::now() + Duration::from_secs(30);
        while !t.is_finished() && Instant::now() < end {
            thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_sampler_thread_that_panicked_is_reported_dead_once_with_its_message() {
        let t = thread::spawn(|| panic!("boom at 1e-300 Hz"));
        ended(&t);
        let mut h = handle_over(t);
        assert!(!h.is_alive());
        let d = h.died().expect("a panicked thread is dead");
        assert!(
            d.contains("panicked") && d.contains("boom at 1e-300 Hz"),
            "{d}"
        );
        assert_eq!(h.died(), None, "said once");
    }

    #[test]
    fn a_sampler_thread_that_was_stopped_or_still_runs_is_not_dead() {
        let t = thread::spawn(|| {});
        ended(&t);
        let mut stopped = handle_over(t);
        stopped.signal_stop();
        assert_eq!(stopped.died(), None);
        let mut live = spawn(SamplerConfig::default(), std::process::id()).unwrap();
        assert!(live.is_alive());
        assert_eq!(live.died(), None);
        live.stop();
    }
}
