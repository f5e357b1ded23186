//! The sampler thread's schedule and its tick.
//!
//! [`Sampler::run`] ticks on absolute deadlines (tick k at start + k·period; missed ticks after
//! a stall are skipped, never burst) and wakes early for stop and `set_root`. Each tick adopts
//! a new root when asked, forwards the helpers' notes, re-walks the tree when due (at a rate
//! bounded by the walk's measured cost, and only when a pid was created on the host since
//! the last walk, a member's parent changed, or 30 s passed), reads every process's status,
//! asks for the peak resets and the table reads that reading calls for, and pushes one
//! [`Sample`] (or, once, a note that the root is gone). Over a cgroup's members the walk is
//! a read of their `cgroup.procs` at the walk cadence and a member's exit ends nothing;
//! while the cgroup does not exist (removed; a unit's is, at each restart) no sample comes
//! but one of its empty tree when it goes (and its members' OOM kills the kernel log names
//! meanwhile), and sampling resumes when it is made again (the front end says both, and decides whether
//! the removal ends the session). A full ring drops records and says how
//! many, once there is room again.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_shared::clock::mono_ns;
use provetop_shared::{Mark, Record, RecordBody, Sample};
use ringbuf::traits::{Observer, Producer};
use ringbuf::HeapProd;

use super::{
    members, park_until, peak, system, tree, usage, SamplerConfig, Shared, TREE_BACKSTOP,
    TREE_DUTY, TREE_MAX_INTERVAL, TREE_MIN_INTERVAL,
};
use crate::procstatus::{MemStatus, StatusReader};

/// One process being followed.
pub(super) struct Proc {
    status: StatusReader,
    /// First reading not taken yet: its VmHWM is a lifetime peak, not this interval's.
    fresh: bool,
    /// RssFile + RssShmem when its mapping table was last asked for (`u64::MAX`: never).
    /// CUDA pinned host memory is resident file or shmem pages, so the table needs reading
    /// only when these move: anonymous memory coming and going does not call for it.
    mapped: u64,
    /// When the oldest table read asked for and not yet answered was asked for.
    pub(super) marked: Option<Instant>,
    /// Its parent at the last reading (0: not read yet).
    ppid: u32,
}

/// One process counted in this tick, for its pinned memory.
#[derive(Debug, Clone, Copy)]
pub(super) struct Counted {
    pub pid: u32,
    /// Its VmLck.
    pub locked: u64,
}

/// The sampler thread's state between ticks.
pub(super) struct Sampler {
    pub(super) cfg: SamplerConfig,
    pub(super) shared: Arc<Shared>,
    prod: HeapProd<Record>,
    resets: peak::PeakResets,
    pub(super) procs: HashMap<u32, Proc>,
    order: Vec<u32>,
    pub(super) gen: u64,
    pub(super) root: u32,
    root_gone: bool,
    /// A cgroup's members are the tree instead of a root and its descendants (`watch
    /// --cgroup`, `--unit`): no member's exit ends the sampling; the cgroup's removal pauses it.
    pub(super) members: Option<members::CgroupMembers>,
    /// The cgroup of `members` does not exist now.
    members_absent: bool,
    /// It was found removed and no sample has said its tree is empty yet.
    emptied: bool,
    children_files: bool,
    /// Parents read once per process, for walks without `children` files.
    parents: tree::ParentCache,
    next_walk: Instant,
    /// Whether a pid was created on the host since the last walk.
    walks: tree::WalkGate,
    /// A member's parent changed since the last walk: it may have left the tree.
    reparented: bool,
    pub(super) meminfo: Option<system::MemInfo>,
    /// The kernel's view of the tree: cgroup, limits, pressure, OOM kills (`kernel.rs`).
    pub(super) kernel: super::kernel_state::KernelState,
    no_reset: Vec<u32>,
    pending_drops: u64,
    reset_pids: Vec<u32>,
    /// The processes counted in this tick.
    pub(super) counted: Vec<Counted>,
    /// Each counted process's pinned memory this tick (`None`: unknown or stale).
    pub(super) pid_pinned: Vec<(u32, Option<u64>)>,
    maps_marks: Vec<u32>,
    /// A stale or missing pinned reading was said (cleared once readings are whole again).
    pub(super) pinned_stale_said: bool,
    /// The usage reader (`None`: `usage_hz` is 0) and when its next reading is due.
    pub(super) usage: Option<usage::UsageReader>,
    pub(super) next_usage: Instant,
    pub(super) usage_period: Duration,
    /// This tick's status readings, when it takes a usage reading.
    pub(super) tick_procs: Vec<usage::TickProc>,
}

impl Sampler {
    pub(super) fn new(
        cfg: SamplerConfig,
        shared: Arc<Shared>,
        prod: HeapProd<Record>,
        resets: peak::PeakResets,
        members: Option<members::CgroupMembers>,
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
            members,
            members_absent: false,
            emptied: false,
            children_files: tree::has_children_files(),
            parents: tree::ParentCache::default(),
            next_walk: Instant::now(),
            walks: tree::WalkGate::default(),
            reparented: false,
            meminfo,
            kernel: Default::default(),
            no_reset: Vec::new(),
            pending_drops: 0,
            reset_pids: Vec::new(),
            counted: Vec::new(),
            pid_pinned: Vec::new(),
            maps_marks: Vec::new(),
            pinned_stale_said: false,
            usage,
            next_usage: Instant::now(),
            usage_period,
            tick_procs: Vec::new(),
        }
    }

    pub(super) fn run(mut self) {
        let period = Duration::from_secs_f64(1.0 / self.cfg.hz);
        let start = Instant::now();
        let mut k: u32 = 0;
        let mut woke = Instant::now();
        let mut n: u64 = 0;
        while !self.shared.stop.load(Ordering::Acquire) {
            // One tick in TICK_MEASURED has its CPU measured: the thread's clock is a system
            // call each way, two of the handful a tick makes.
            let measured = n % TICK_MEASURED == 0;
            n += 1;
            let began = if measured { thread_cpu_ns() } else { 0 };
            self.tick();
            self.wake_consumer(&mut woke);
            self.shared.ticks.fetch_add(1, Ordering::Relaxed);
            if measured {
                let work = thread_cpu_ns().saturating_sub(began);
                self.shared.measured_ticks.fetch_add(1, Ordering::Relaxed);
                self.shared.tick_ns.fetch_add(work, Ordering::Relaxed);
                self.shared.tick_max_ns.fetch_max(work, Ordering::Relaxed);
            }
            // Absolute deadlines: tick k is due at start + k·period. After a stall (the thread
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

    /// Tell the consumer that records wait, unless it was told less than `wake_every` ago
    /// and the ring is not yet half full.
    fn wake_consumer(&self, woke: &mut Instant) {
        let waiting = self.prod.occupied_len();
        if waiting == 0 {
            return;
        }
        let every = Duration::from_nanos(self.shared.wake_every_ns.load(Ordering::Relaxed));
        if woke.elapsed() >= every || waiting >= super::RING_CAPACITY / 2 {
            self.shared.wake.notify_one();
            *woke = Instant::now();
        }
    }

    pub(super) fn push(&mut self, rec: Record) {
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
        self.members_absent = false;
        if !same_root || self.kernel.root != self.root || !self.kernel.adopted {
            self.kernel_adopt(None);
        }
        self.next_walk = Instant::now();
        let first = match &self.members {
            Some(_) => Vec::new(),
            None => vec![self.root],
        };
        *self.shared.tree.lock().unwrap_or_else(|e| e.into_inner()) = (self.gen, first);
        self.pinned_stale_said = false;
        // The same root again (the front end confirming the child it started): its usage
        // readings go on; a new tree starts without rates. (The open stat files pin each
        // process's identity either way.)
        if let Some(u) = self.usage.as_mut().filter(|_| !same_root) {
            u.clear();
            self.next_usage = Instant::now();
        }
    }

    /// Walk the tree when due, unless nothing was created on the host since the last walk
    /// and no member's parent changed (then only every [`TREE_BACKSTOP`]).
    fn walk_if_due(&mut self) {
        let now = Instant::now();
        if self.members.is_some() {
            // Members move in without a pid being created: read them at the walk cadence.
            if now >= self.next_walk {
                self.walk_tree();
            }
            return;
        }
        let known = self.procs.contains_key(&self.root);
        if known && now < self.next_walk {
            return;
        }
        if !self.walks.due(TREE_BACKSTOP, !known || self.reparented) {
            self.next_walk = now + TREE_MIN_INTERVAL;
            return;
        }
        self.reparented = false;
        self.walk_tree();
    }

    fn walk_tree(&mut self) {
        let t0 = Instant::now();
        let pids = if let Some(m) = &self.members {
            match m.read() {
                Some(p) => {
                    if std::mem::take(&mut self.members_absent) {
                        // Made again: its files are new ones.
                        self.kernel_adopt(None);
                    }
                    p
                }
                // Removed: nothing to sample until it is made again.
                None => {
                    self.emptied |= !self.members_absent;
                    self.members_absent = true;
                    self.procs.clear();
                    self.order.clear();
                    *self.shared.tree.lock().unwrap_or_else(|e| e.into_inner()) =
                        (self.gen, Vec::new());
                    self.next_walk = Instant::now() + TREE_MIN_INTERVAL;
                    return;
                }
            }
        } else if self.children_files {
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
                        mapped: u64::MAX,
                        marked: None,
                        ppid: 0,
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

    /// Forget the processes of this tick that are `gone`; when the tree's root is (or no
    /// process was counted), say so, stop sampling it and return true. Over a cgroup's
    /// members a process gone ends nothing.
    fn forget_gone(&mut self, gone: &[u32], procs: u32, root_unmapped: bool) -> bool {
        if !gone.is_empty() {
            for pid in gone {
                self.procs.remove(pid);
            }
            self.order.retain(|p| !gone.contains(p));
            // A member gone: look for its successor (a restart) at once.
            if self.members.is_some() {
                self.next_walk = Instant::now();
            }
            self.kernel_left(gone);
        }
        if self.members.is_some() || (!gone.contains(&self.root) && procs > 0) {
            return false;
        }
        self.root_gone = true;
        // Whether the kernel killed it comes first (marks stamped now).
        self.kernel_root_gone();
        let root = self.root;
        self.push(Record::new(
            mono_ns(),
            RecordBody::Mark(Mark::Note {
                text: gone_note(root, root_unmapped),
            }),
        ));
        true
    }

    /// The sample's GPU readings (the NVML thread's latest, of this tree) and the host's
    /// MemTotal and MemAvailable.
    fn system_readings(&mut self, s: &mut Sample) {
        {
            let g = self.shared.gpu.lock().unwrap_or_else(|e| e.into_inner());
            if g.gen == self.gen {
                s.gpu_used = g.used;
                s.gpus = g.gpus.clone();
            }
        }
        if let Some((total, avail)) = self
            .meminfo
            .as_mut()
            .and_then(|m| m.reading(Instant::now()))
        {
            s.mem_total = Some(total);
            s.mem_available = Some(avail);
        }
    }

    fn tick(&mut self) {
        if self.shared.gen.load(Ordering::Acquire) != self.gen {
            self.adopt_root();
        }
        self.forward_notes();
        if self.root_gone {
            return;
        }
        self.walk_if_due();
        if self.members_absent {
            // The kernel log may name its last members' OOM kills only now: a cgroup emptied
            // by the killer is removed at once (a failed unit's, a test's).
            self.kernel_look();
            if std::mem::take(&mut self.emptied) {
                self.empty_sample();
            }
            return;
        }
        if self.cfg.reset_peak && !self.resets.caught_up() {
            self.shared.late_resets.fetch_add(1, Ordering::Relaxed);
        }
        let t = mono_ns();
        let mut sum = MemStatus::default();
        let mut peak = 0u64;
        let mut procs = 0u32;
        let mut gone = Vec::new();
        let mut root_unmapped = false;
        self.reset_pids.clear();
        self.counted.clear();
        self.maps_marks.clear();
        self.tick_procs.clear();
        let usage_due = self.usage.is_some() && Instant::now() >= self.next_usage;
        // Before the status reads: an OOM victim is still of the tree here.
        let kernel_due = self.kernel_look();
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
                    if p.ppid != 0 && p.ppid != m.ppid {
                        self.reparented = true;
                    }
                    p.ppid = m.ppid;
                    let mapped = m.file + m.shmem;
                    if mapped != p.mapped {
                        p.mapped = mapped;
                        p.marked.get_or_insert_with(Instant::now);
                        self.maps_marks.push(pid);
                    }
                    self.counted.push(Counted {
                        pid,
                        locked: m.locked,
                    });
                    if usage_due {
                        self.tick_procs.push(usage::TickProc {
                            pid,
                            status: m,
                            pinned: None,
                        });
                    }
                    peak += interval_peak;
                    procs += 1;
                    // VmHWM shows max(high-water mark, RSS): where they are equal, a reset
                    // would set the mark to the RSS it already is (the common case:
                    // docs/measurements.md#what-keeps-it-there), so the reset thread is not woken.
                    if m.hwm > m.rss && !self.no_reset.contains(&pid) {
                        self.reset_pids.push(pid);
                    }
                }
                // A zombie (exited, not reaped yet) holds no memory; nor does a kernel thread.
                Ok(_) => {
                    root_unmapped |= pid == self.root;
                    gone.push(pid)
                }
                Err(_) => gone.push(pid),
            }
        }
        if self.forget_gone(&gone, procs, root_unmapped) {
            return;
        }
        let mut s = self.tree_sample(&sum, peak, procs);
        s.pinned = self.pinned();
        self.shared.tree_rss.store(sum.rss, Ordering::Release);
        self.system_readings(&mut s);
        let kernel = self.kernel_sample(&mut s, kernel_due);
        self.push(Record::new(t, RecordBody::Sample(s)));
        if let Some(k) = kernel {
            self.push(k);
        }
        // The helpers are woken only now, the sample pushed: a woken helper may take this
        // core at once, and the tick's own work is done by then. The reset still follows
        // the status read by microseconds.
        if self.cfg.reset_peak && !self.reset_pids.is_empty() {
            self.resets.request(&self.reset_pids);
        }
        if !self.maps_marks.is_empty() {
            self.shared.mark_maps(&self.maps_marks);
        }
        if usage_due {
            self.usage_reading();
        }
    }
}

impl Sampler {
    /// The tree's memory as a sample: the sum of its `procs` processes' readings and their
    /// interval peaks (`peak`, given with `--reset-peak`), the system's and the kernel's
    /// readings still to add.
    fn tree_sample(&self, sum: &MemStatus, peak: u64, procs: u32) -> Sample {
        Sample {
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
        }
    }

    /// The sample of a removed cgroup, once: no process is left in it to hold memory (what
    /// an empty cgroup's samples read), so what was measured of its members (an alert on
    /// their RSS, a forecast) ends with them even when the cgroup went between two ticks.
    /// Its own files are gone: their fields are left out.
    fn empty_sample(&mut self) {
        let mut s = self.tree_sample(&MemStatus::default(), 0, 0);
        self.shared.tree_rss.store(0, Ordering::Release);
        self.system_readings(&mut s);
        self.push(Record::new(mono_ns(), RecordBody::Sample(s)));
    }
}

/// One tick in this many has its CPU measured for the [`TickReport`].
const TICK_MEASURED: u64 = 8;

/// This thread's CPU time so far, ns (0 where the clock cannot be read).
fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// What the sampler thread's ticks cost so far: the CPU of their work, from waking to
/// parking (what the thread uses beyond it is the wake-up itself), over one tick in
/// [`TICK_MEASURED`], and the usage readings inside them (wall time: a reading preempted by
/// the target counts its wait).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickReport {
    pub ticks: u64,
    pub mean: Duration,
    pub max: Duration,
    pub usage_reads: u64,
    pub usage_mean: Duration,
}

impl std::fmt::Display for TickReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sampler ticks: {}, {:.0} µs of CPU each on average and {:.1} ms at most; usage readings: {}, {:.0} µs each",
            self.ticks,
            self.mean.as_secs_f64() * 1e6,
            self.max.as_secs_f64() * 1e3,
            self.usage_reads,
            self.usage_mean.as_secs_f64() * 1e6
        )
    }
}

/// The note when sampling stops because the root holds no memory: a kernel thread (which lives
/// on without a memory map) is not said to be gone; an exiting or exited process is.
fn gone_note(root: u32, unmapped: bool) -> String {
    // PF_KTHREAD, in the flags field (the 9th) of /proc/PID/stat, after the parenthesized name.
    const PF_KTHREAD: u64 = 0x0020_0000;
    let kthread = unmapped
        && std::fs::read_to_string(format!("/proc/{root}/stat")).is_ok_and(|s| {
            s.rfind(')')
                .and_then(|i| s[i + 1..].split_whitespace().nth(6)?.parse::<u64>().ok())
                .is_some_and(|flags| flags & PF_KTHREAD != 0)
        });
    if kthread {
        format!(
            "process {root} is a kernel thread: it has no user memory to sample; sampling stopped"
        )
    } else {
        format!("process {root} is gone; sampling stopped")
    }
}
