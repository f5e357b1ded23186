//! The app's end of a running sampler: starting it, draining its ring, and stopping it.
//!
//! [`spawn`] validates the configuration and starts the helper threads and the sampler thread;
//! a failed start stops the helpers already running. [`SamplerHandle`] drains the records
//! (never blocking), reports the sampler's counters and thread ids, moves it to a new root, and
//! tells a sampler thread that ended by itself (a panic: fatal to the caller, said once) from
//! one that was stopped. Dropping the handle stops every thread.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use provetop_shared::Record;
use ringbuf::traits::{Consumer, Split};
use ringbuf::{HeapCons, HeapProd, HeapRb};

use super::members::CgroupMembers;
use super::peak::ResetReport;
use super::tick::{Sampler, TickReport};
use super::{gpu, peak, pinned, SamplerConfig, Shared, RING_CAPACITY, THREAD_NAME};

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
/// missing process is reported in the stream (a
/// [`Mark::Note`](provetop_shared::Mark::Note)) and sampling resumes after
/// [`SamplerHandle::set_root`].
pub fn spawn(cfg: SamplerConfig, root_pid: u32) -> io::Result<SamplerHandle> {
    spawn_over(cfg, root_pid, None)
}

/// Start sampling every process of the cgroup at `dir` and of the cgroups below it, as they
/// come and go (`watch --cgroup`, `--unit`). A member's exit ends nothing, nor does an empty
/// cgroup (its samples count no process); while the cgroup is removed no samples come, and
/// they resume if it is made again (a unit's restart). The caller, which sees the directory
/// gone, says so and decides whether that ends the session.
pub fn spawn_cgroup(cfg: SamplerConfig, dir: std::path::PathBuf) -> io::Result<SamplerHandle> {
    spawn_over(cfg, 0, Some(CgroupMembers::new(dir)))
}

fn spawn_over(
    cfg: SamplerConfig,
    root_pid: u32,
    members: Option<CgroupMembers>,
) -> io::Result<SamplerHandle> {
    cfg.validate()?;
    let (prod, cons) = HeapRb::<Record>::new(RING_CAPACITY).split();
    let shared = Arc::new(Shared::new(root_pid));
    let resets = peak::PeakResets::spawn()?;
    let peak_shared = resets.shared().clone();

    let started = start_threads(&cfg, &shared, prod, resets, members);
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
    members: Option<CgroupMembers>,
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
            // Whichever way the thread ends (a panic too), a consumer asleep in `woken`
            // wakes to find out.
            struct WakeOnEnd(Arc<Shared>);
            impl Drop for WakeOnEnd {
                fn drop(&mut self) {
                    self.0.wake.notify_one();
                }
            }
            let _end = WakeOnEnd(s.clone());
            Sampler::new(cfg, s, prod, resets, members).run()
        })
}

impl SamplerHandle {
    /// Move every available record into `out` (never blocks).
    pub fn drain(&mut self, out: &mut Vec<Record>) {
        while let Some(r) = self.cons.try_pop() {
            out.push(r);
        }
    }

    /// Resolves when records wait in the ring, or the sampler thread has ended: once per
    /// [`wake_every`](Self::wake_every) at most, however many samples were taken meanwhile.
    /// A wake-up that came while nobody waited is kept for the next call.
    pub async fn woken(&self) {
        self.shared.wake.notified().await
    }

    /// Let [`woken`](Self::woken) resolve at most once per `every` (0, the default: after
    /// every sample). The ring holds [`RING_CAPACITY`] records, so a wake-up also comes
    /// whenever it is half full.
    pub fn wake_every(&self, every: Duration) {
        let ns = every.as_nanos().min(u64::MAX as u128) as u64;
        self.shared.wake_every_ns.store(ns, Ordering::Relaxed);
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

    /// smaps passes the cross-check has made so far (none while the tree has no CUDA
    /// mapping to measure).
    pub fn smaps_passes(&self) -> u64 {
        self.shared.smaps_passes.load(Ordering::Relaxed)
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

    /// What the peak resets cost the target so far (None when no reset was made:
    /// `--reset-peak` off, or nothing sampled).
    pub fn reset_report(&self) -> Option<ResetReport> {
        let p = &self.peak_shared;
        let served = p.served.load(Ordering::Relaxed);
        if served == 0 {
            return None;
        }
        Some(ResetReport {
            served,
            mean: Duration::from_nanos(p.delay_sum_us.load(Ordering::Relaxed) * 1000 / served),
            max: self.max_reset_delay(),
            slow: p.slow.load(Ordering::Relaxed),
            late: self.late_resets(),
        })
    }

    /// What the sampler's ticks cost so far (None before the first).
    pub fn tick_report(&self) -> Option<TickReport> {
        let sh = &self.shared;
        let ticks = sh.ticks.load(Ordering::Relaxed);
        if ticks == 0 {
            return None;
        }
        let measured = sh.measured_ticks.load(Ordering::Relaxed).max(1);
        let (usage_reads, usage_mean, _) = self.usage_cost();
        Some(TickReport {
            ticks,
            mean: Duration::from_nanos(sh.tick_ns.load(Ordering::Relaxed) / measured),
            max: Duration::from_nanos(sh.tick_max_ns.load(Ordering::Relaxed)),
            usage_reads,
            usage_mean,
        })
    }

    /// What provetop's NVML calls cost so far, one line (None without NVML): per call kind,
    /// how many, the mean and the longest, and whether the reads are backed off now.
    pub fn nvml_report(&self) -> Option<String> {
        let g = self.shared.gpu.lock().unwrap_or_else(|e| e.into_inner());
        super::nvml_cost::report(&g.calls, g.backoff)
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

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
