//! Utilisation: where the cores and the GPUs went, on the memory chart's time axis.
//!
//! Two records feed it. [`Usage`] readings (the usage cadence, ~2 Hz) give the tree's cores
//! busy, its threads, the host's cores busy and online, and the per-process rows; every
//! [`Sample`]'s [`GpuReading`]s (the memory cadence) give each GPU's utilisation and memory.
//! They fold into [`Series`] with the memory series' [`Limits`], so a week-long run stays
//! small and a zoomed-out panel still shows every peak:
//!
//! * one CPU series: lanes [`CPU_TREE`] (the tree's cores busy, in thousandths of a core),
//!   [`CPU_HOST`] (the host's, same unit), [`CPU_NCPU`] (cores online), [`CPU_THREADS`],
//!   [`CPU_INTERVAL`] (the time before the reading its rates cover);
//! * one series per GPU index seen (at most [`MAX_GPUS`]): a lane per metric of
//!   [`GPU_METRICS`] as the metric table reads it ([`gpu_lane`]: utilisation, percent; device
//!   memory used, bytes), then [`GPU_TOTAL`] and [`GPU_PROC`] (bytes; the last is the tree's
//!   own).
//!
//! * one pressure series ([`PSI_METRICS`], from kernel records: the tree's cgroup's PSI avg10
//!   where it has one, else the host's; hundredths of a percent).
//!
//! The newest reading is kept for the header and the process table, and readings at up to
//! [`MAX_READINGS`] times for a cursor ([`UsageState::reading_at`]): beyond that the older
//! half is thinned to every other reading, so old history grows sparser, never unbounded.
//! Readings are shared (`Arc`), so the store's model snapshots do not copy them.
//!
//! **Overlap**: the share of busy time during which the CPU and a GPU were both busy, the
//! figure that tells `pipelined` from `single`. Over each usage interval:
//!
//! * the CPU is busy when the tree kept at least [`CPU_BUSY_CORES`] cores busy (1.5: a GPU
//!   phase's host thread spins about one core, synthesis keeps several busy);
//! * a GPU is busy when its utilisation is at least [`GPU_BUSY_UTIL`] % (kernels ran for at
//!   least that share of NVML's period); only the GPUs holding the tree's memory count, or
//!   every GPU while none reports the tree's memory. The share of the interval's samples with
//!   a busy GPU is the GPU's busy share of the interval, and only the part of the interval
//!   that samples with GPU readings cover counts.
//!
//! Busy time is the time either was busy, so overlap = both ÷ either. Intervals where either
//! side is unknown (no rate yet, NVML absent or failing, no sample with GPU readings) count
//! neither way: a session without GPU readings or without usage readings has no overlap
//! (`None`), never 0 %, and so has one without busy time. Overlap is kept for the whole
//! session and per batch mode: an interval counts for the mode of the proof in flight at
//! its end (or of the proof that finished within it); intervals with no proof count only for
//! the session.

use provetop_shared::metric::{Metric, Read};
use provetop_shared::record::GpuReading;
use provetop_shared::{BatchMode, Kernel, Sample, Usage};

use super::bounded::Thinned;
use crate::series::{Bucket, Limits, Point, Reading, Series};

/// CPU lane: the tree's cores busy, thousandths of a core.
pub const CPU_TREE: usize = 0;
/// CPU lane: the host's cores busy, thousandths of a core.
pub const CPU_HOST: usize = 1;
/// CPU lane: cores online on the host.
pub const CPU_NCPU: usize = 2;
/// CPU lane: threads in the tree.
pub const CPU_THREADS: usize = 3;
/// CPU lane: the interval the reading's rates cover, ns (a reading speaks for the time
/// before it).
pub const CPU_INTERVAL: usize = 4;
/// Lanes of the CPU series.
pub const CPU_LANES: usize = 5;
/// The per-GPU metrics of the table a GPU's series keeps from every sample, in lane order:
/// utilisation (percent) and device memory used by every process (bytes).
pub const GPU_METRICS: [Metric; 2] = [Metric::GpuUtil, Metric::GpuMem];
/// GPU lane: device memory total, bytes.
pub const GPU_TOTAL: usize = GPU_METRICS.len();
/// GPU lane: device memory used by the tree, bytes.
pub const GPU_PROC: usize = GPU_METRICS.len() + 1;
/// Lanes of a GPU's series.
pub const GPU_LANES: usize = GPU_METRICS.len() + 2;

/// The lane of a GPU's series that keeps `m` (`None` unless `m` is one of [`GPU_METRICS`]).
pub fn gpu_lane(m: Metric) -> Option<usize> {
    GPU_METRICS.iter().position(|g| *g == m)
}

/// The pressure metrics of the table the pressure series keeps, in lane order (avg10,
/// hundredths of a percent).
pub const PSI_METRICS: [Metric; 5] = [
    Metric::PsiMemorySome,
    Metric::PsiMemoryFull,
    Metric::PsiCpuSome,
    Metric::PsiIoSome,
    Metric::PsiIoFull,
];
/// Lanes of the pressure series.
pub const PSI_LANES: usize = PSI_METRICS.len();

/// The lane of the pressure series that keeps `m`.
pub fn psi_lane(m: Metric) -> Option<usize> {
    PSI_METRICS.iter().position(|p| *p == m)
}

/// Most GPUs followed (indexes beyond the first this many seen are counted, not drawn).
pub const MAX_GPUS: usize = 64;
/// Most usage readings kept for the cursor and the process table.
pub const MAX_READINGS: usize = 4096;
/// The CPU is busy at this many cores of the tree or more.
pub const CPU_BUSY_CORES: f64 = 1.5;
/// A GPU is busy at this utilisation (percent) or more.
pub const GPU_BUSY_UTIL: u8 = 30;
/// A gap between samples longer than this counts only this long for the GPU's busy share
/// (a stopped sampler says nothing of the time it was stopped).
const MAX_SAMPLE_GAP_NS: u64 = 2_000_000_000;

/// Time both the CPU and a GPU were busy, and time either was.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overlap {
    /// Nanoseconds (fractional: a GPU's busy share of an interval) both were busy.
    pub both_ns: f64,
    /// Nanoseconds either was busy.
    pub busy_ns: f64,
    /// Nanoseconds where both sides were known.
    pub known_ns: f64,
}

impl Overlap {
    /// Both ÷ either, in 0..=1; `None` without busy time (unknown, or nothing ran).
    pub fn share(&self) -> Option<f64> {
        (self.busy_ns > 0.0).then(|| (self.both_ns / self.busy_ns).clamp(0.0, 1.0))
    }

    fn add(&mut self, interval: f64, cpu_busy: bool, gpu_share: f64) {
        self.known_ns += interval;
        if cpu_busy {
            self.both_ns += interval * gpu_share;
            self.busy_ns += interval;
        } else {
            self.busy_ns += interval * gpu_share;
        }
    }
}

/// One GPU's series.
#[derive(Debug, Clone)]
pub struct GpuSeries {
    /// Device index.
    pub index: u32,
    pub series: Series<GPU_LANES>,
}

/// The utilisation state of a stream (see the module docs).
#[derive(Debug, Clone)]
pub struct UsageState {
    limits: Limits,
    /// The CPU series (lanes `CPU_*`).
    pub cpu: Series<CPU_LANES>,
    /// Per-GPU series, by index.
    pub gpus: Vec<GpuSeries>,
    /// The pressure series (lanes of [`PSI_METRICS`]).
    pub psi: Series<PSI_LANES>,
    /// GPU indexes seen beyond [`MAX_GPUS`].
    pub gpus_left_out: u64,
    /// The most device memory any GPU was seen using (bytes; 0: none yet): the per-GPU
    /// memory rows' scale when drawn against the most seen.
    pub gpu_mem_seen: u64,
    /// Usage readings, oldest first (thinned, see the module docs).
    readings: Thinned<Usage>,
    /// Overlap over the whole session.
    pub overlap: Overlap,
    /// Overlap per batch mode, in the order the modes first counted.
    pub overlap_modes: Vec<(BatchMode, Overlap)>,
    /// GPU busy and known time since the last usage reading, ns.
    gpu_busy_ns: u64,
    gpu_known_ns: u64,
    last_sample_t: Option<u64>,
    /// The GPUs were busy at the last sample (`None`: unknown), applied to the time until the
    /// next one.
    gpu_busy_now: Option<bool>,
}

impl UsageState {
    /// The same state with every series empty, series made from now on bounded by
    /// `limits`, and only the newest `readings` readings (a replay's light snapshot: its
    /// series are drawn again on a seek, and snapshots far apart would each pin readings of
    /// their own).
    pub fn without_series(&self, limits: Limits, readings: usize) -> UsageState {
        UsageState {
            limits,
            readings: self.readings.newest(readings),
            cpu: Series::new(limits),
            psi: Series::new(limits),
            gpus: self
                .gpus
                .iter()
                .map(|g| GpuSeries {
                    index: g.index,
                    series: Series::new(limits),
                })
                .collect(),
            ..self.clone()
        }
    }

    /// Empty, bounded like the memory series.
    pub fn new(limits: Limits) -> Self {
        UsageState {
            limits,
            cpu: Series::new(limits),
            gpus: Vec::new(),
            psi: Series::new(limits),
            gpus_left_out: 0,
            gpu_mem_seen: 0,
            readings: Thinned::new(MAX_READINGS),
            overlap: Overlap::default(),
            overlap_modes: Vec::new(),
            gpu_busy_ns: 0,
            gpu_known_ns: 0,
            last_sample_t: None,
            gpu_busy_now: None,
        }
    }

    /// Whether any utilisation was seen (a usage reading or a GPU reading): the panel takes
    /// no room without.
    pub fn any(&self) -> bool {
        !self.readings.is_empty() || !self.gpus.is_empty() || self.has_psi()
    }

    /// Whether pressure readings were seen.
    pub fn has_psi(&self) -> bool {
        self.psi.last().is_some()
    }

    /// A kernel record's pressure (nothing when it has none).
    pub fn apply_kernel(&mut self, t: u64, k: &Kernel) {
        let mut p = Point::empty(t);
        let mut any = false;
        for (lane, m) in PSI_METRICS.iter().enumerate() {
            let v = m.of_kernel(k).map(|v| (v.max(0.0) * 100.0).round() as u64);
            any |= v.is_some();
            p.set_lane(lane, v);
        }
        if any {
            self.psi.push(p);
        }
    }

    /// Whether usage readings were seen (the CPU side).
    pub fn has_readings(&self) -> bool {
        !self.readings.is_empty()
    }

    /// The newest usage reading and its time.
    pub fn latest(&self) -> Option<(u64, &Usage)> {
        self.readings.latest()
    }

    /// The kept reading nearest `t` (the newer on a tie) and its time.
    pub fn reading_at(&self, t: u64) -> Option<(u64, &Usage)> {
        self.readings.nearest(t)
    }

    /// Readings kept.
    pub fn readings_len(&self) -> usize {
        self.readings.len()
    }

    /// Bytes the kept readings hold, nearly (their processes, commands and GPU details).
    pub fn readings_bytes(&self) -> usize {
        use std::mem::size_of;
        self.readings.readings_bytes(|u| {
            u.procs
                .iter()
                .map(|p| {
                    size_of::<provetop_shared::record::ProcUsage>()
                        + p.command.len()
                        + p.gpu_mem.len() * 16
                })
                .sum::<usize>()
                + u.gpus.len() * size_of::<provetop_shared::record::GpuDetail>()
                + u.nvml_calls.len() * 64
        })
    }

    /// The series of GPU `index`.
    pub fn gpu(&self, index: u32) -> Option<&Series<GPU_LANES>> {
        self.gpus
            .iter()
            .find(|g| g.index == index)
            .map(|g| &g.series)
    }

    /// The CPU reading at `t` (see [`Series::at`]).
    pub fn cpu_at(&self, t: u64) -> Option<Reading<CPU_LANES>> {
        self.cpu.at(t)
    }

    /// Per-column min/max of the CPU lanes over `[t0, t1)`.
    pub fn cpu_columns(&self, t0: u64, t1: u64, cols: usize) -> Vec<Bucket<CPU_LANES>> {
        self.cpu.columns(t0, t1, cols)
    }

    /// Overlap of `mode` (see the module docs).
    pub fn overlap_of(&self, mode: BatchMode) -> Option<f64> {
        self.overlap_modes
            .iter()
            .find(|(m, _)| *m == mode)
            .and_then(|(_, o)| o.share())
    }

    /// Bytes held (capacities), for a memory estimate.
    pub fn heap_bytes(&self) -> usize {
        self.cpu.heap_bytes()
            + self.psi.heap_bytes()
            + self
                .gpus
                .iter()
                .map(|g| g.series.heap_bytes())
                .sum::<usize>()
            + self.readings.heap_bytes()
    }

    /// A sample's GPU readings.
    pub fn apply_sample(&mut self, t: u64, s: &Sample) {
        // The GPU state of the sample before covers the time up to this one.
        if let Some(prev) = self.last_sample_t {
            let dt = t.saturating_sub(prev).min(MAX_SAMPLE_GAP_NS);
            if let Some(busy) = self.gpu_busy_now {
                self.gpu_known_ns += dt;
                if busy {
                    self.gpu_busy_ns += dt;
                }
            }
        }
        self.last_sample_t = Some(t);
        self.gpu_busy_now = gpus_busy(&s.gpus);
        for g in &s.gpus {
            let at = match self.gpus.binary_search_by_key(&g.index, |s| s.index) {
                Ok(i) => i,
                Err(i) if self.gpus.len() < MAX_GPUS => {
                    self.gpus.insert(
                        i,
                        GpuSeries {
                            index: g.index,
                            series: Series::new(self.limits),
                        },
                    );
                    i
                }
                Err(_) => {
                    self.gpus_left_out += 1;
                    continue;
                }
            };
            let mut p = Point::empty(t);
            for (lane, m) in GPU_METRICS.iter().enumerate() {
                if let Read::GpuSample(read) = m.def().read {
                    p.set_lane(lane, read(g).map(|v| v as u64));
                }
            }
            p.set_lane(GPU_TOTAL, (g.total > 0).then_some(g.total));
            p.set_lane(GPU_PROC, Some(g.proc_used));
            if let Some(used) = gpu_lane(Metric::GpuMem).and_then(|l| p.lane(l)) {
                self.gpu_mem_seen = self.gpu_mem_seen.max(used);
            }
            self.gpus[at].series.push(p);
        }
    }

    /// A usage reading: its series, and its interval's overlap for the session and for
    /// `mode`, the mode of the proof in flight (or just finished) if any.
    pub fn apply_usage(&mut self, t: u64, u: &Usage, mode: Option<BatchMode>) {
        let Some((interval, cpu_busy, share)) = self.on_usage(t, u) else {
            return;
        };
        let Some(mode) = mode else {
            return;
        };
        let modes = &mut self.overlap_modes;
        let i = match modes.iter().position(|(m, _)| *m == mode) {
            Some(i) => i,
            None => {
                modes.push((mode, Overlap::default()));
                modes.len() - 1
            }
        };
        modes[i].1.add(interval, cpu_busy, share);
    }

    /// Fold a usage reading; returns the interval's (cpu busy, GPU busy share) when both
    /// were known.
    fn on_usage(&mut self, t: u64, u: &Usage) -> Option<(f64, bool, f64)> {
        let mut p = Point::empty(t);
        p.set_lane(CPU_TREE, u.cores.filter(|c| c.is_finite()).map(milli));
        p.set_lane(CPU_HOST, u.host_cores.filter(|c| c.is_finite()).map(milli));
        p.set_lane(CPU_NCPU, (u.host_ncpu > 0).then_some(u.host_ncpu as u64));
        p.set_lane(CPU_THREADS, Some(u.threads as u64));
        p.set_lane(CPU_INTERVAL, (u.interval_ns > 0).then_some(u.interval_ns));
        self.cpu.push(p);
        self.readings.push(t, u.clone());
        let (gb, gk) = (
            std::mem::take(&mut self.gpu_busy_ns),
            std::mem::take(&mut self.gpu_known_ns),
        );
        let cores = u.cores.filter(|c| c.is_finite())?;
        if u.interval_ns == 0 || gk == 0 {
            return None;
        }
        let share = gb as f64 / gk as f64;
        // Only the part of the interval the GPU readings cover counts.
        let interval = u.interval_ns.min(gk) as f64;
        let cpu_busy = cores >= CPU_BUSY_CORES;
        self.overlap.add(interval, cpu_busy, share);
        Some((interval, cpu_busy, share))
    }
}

/// Whether the GPUs of a sample are busy (see the module docs); `None` without readings.
fn gpus_busy(gpus: &[GpuReading]) -> Option<bool> {
    if gpus.is_empty() {
        return None;
    }
    let ours = gpus.iter().any(|g| g.proc_used > 0);
    Some(
        gpus.iter()
            .filter(|g| !ours || g.proc_used > 0)
            .any(|g| g.utilization().is_some_and(|u| u >= GPU_BUSY_UTIL)),
    )
}

fn milli(c: f64) -> u64 {
    (c.max(0.0) * 1000.0).round() as u64
}

#[cfg(test)]
mod tests {
    use provetop_shared::record::{GpuReading, ProcUsage};
    use provetop_shared::{BatchMode, Event, Record, RecordBody, Sample, Usage};

    use super::*;
    use crate::model::Model;

    const S: u64 = 1_000_000_000;
    const GIB: u64 = 1 << 30;

    fn sample(util: Option<u8>) -> RecordBody {
        RecordBody::Sample(Sample {
            rss: GIB,
            gpus: util
                .map(|u| {
                    vec![GpuReading {
                        index: 0,
                        proc_used: 2 * GIB,
                        used: 3 * GIB,
                        total: 80 * GIB,
                        util: u,
                    }]
                })
                .unwrap_or_default(),
            ..Sample::default()
        })
    }

    fn usage(cores: Option<f64>, interval_ns: u64, procs: Vec<ProcUsage>) -> RecordBody {
        RecordBody::Usage(Usage {
            interval_ns,
            cores,
            threads: 9,
            host_cores: Some(6.5),
            host_ncpu: 16,
            procs,
            ..Usage::default()
        })
    }

    fn proc_row(pid: u32, command: &str) -> ProcUsage {
        ProcUsage {
            pid,
            ppid: 1,
            command: command.into(),
            rss: GIB,
            cores: Some(1.0),
            threads: 3,
            ..ProcUsage::default()
        }
    }

    /// Feeds `secs` seconds from `t`: samples at 20 Hz with GPU utilisation `util`, a usage
    /// reading every half second with `cores`. Returns the time after.
    fn run(m: &mut Model, t: u64, secs: u64, cores: Option<f64>, util: Option<u8>) -> u64 {
        let mut t = t;
        for i in 1..=secs * 20 {
            t += S / 20;
            m.apply(&Record::new(t, sample(util)));
            if i % 10 == 0 {
                m.apply(&Record::new(t, usage(cores, S / 2, vec![])));
            }
        }
        t
    }

    fn proof(m: &mut Model, t: u64, id: u64, mode: BatchMode, start: bool) {
        let e = if start {
            Event::ProofStarted {
                proof_id: id,
                mode,
                sectors: 1,
                partitions: 1,
                constraints: 10,
            }
        } else {
            Event::ProofFinished {
                proof_id: id,
                ok: true,
                verified: true,
                duration_s: 1.0,
                mode,
                phases: vec![],
                error: None,
                cancelled: false,
                requeued_as: vec![],
            }
        };
        m.apply(&Record::new(t, RecordBody::Event(e)));
    }

    #[test]
    fn usage_and_gpu_readings_fold_into_series_on_the_memory_time_axis() {
        let mut m = Model::new(Default::default());
        assert!(!m.usage.any());
        let end = run(&mut m, 10 * S, 4, Some(11.25), Some(86));
        let cpu = m.usage.cpu_at(end).expect("a CPU reading");
        assert_eq!(cpu.lane_range(CPU_TREE), Some((11_250, 11_250)));
        assert_eq!(cpu.lane_range(CPU_HOST), Some((6_500, 6_500)));
        assert_eq!(cpu.lane_range(CPU_NCPU), Some((16, 16)));
        let g = m.usage.gpu(0).expect("GPU 0's series");
        assert_eq!(g.total(), m.series.total(), "one GPU point per sample");
        assert_eq!(g.last_t(), m.series.last_t());
        let col = &g.columns(10 * S, end + 1, 1)[0];
        let util = gpu_lane(Metric::GpuUtil).expect("a lane");
        assert_eq!(col.lane_range(util), Some((86, 86)));
        assert_eq!(col.lane_range(GPU_TOTAL), Some((80 * GIB, 80 * GIB)));
        assert_eq!(
            m.usage.latest().map(|(t, u)| (t, u.threads)),
            Some((end, 9))
        );
        assert_eq!(m.usage.cpu.total(), 8);
    }

    #[test]
    fn overlap_per_mode_tells_pipelined_from_single() {
        let mut m = Model::new(Default::default());
        let mut t = S;
        // single: synthesis on the CPU, then proving on the GPU, one after the other.
        proof(&mut m, t, 1, BatchMode::Single, true);
        t = run(&mut m, t, 4, Some(8.0), Some(0));
        t = run(&mut m, t, 4, Some(1.0), Some(90));
        proof(&mut m, t, 1, BatchMode::Single, false);
        // Idle between proofs: counts for neither mode.
        t = run(&mut m, t, 4, Some(0.1), Some(0));
        // pipelined: the next synthesis runs beside the GPU's proving.
        proof(&mut m, t, 2, BatchMode::Pipelined(2), true);
        t = run(&mut m, t, 4, Some(8.0), Some(90));
        t = run(&mut m, t, 1, Some(1.0), Some(90));
        proof(&mut m, t, 2, BatchMode::Pipelined(2), false);
        let single = m.usage.overlap_of(BatchMode::Single).unwrap();
        let piped = m.usage.overlap_of(BatchMode::Pipelined(2)).unwrap();
        // The first interval after the switch carries one sample of the other state.
        assert!(single < 0.05, "single {single}");
        assert!((piped - 0.8).abs() < 0.05, "pipelined {piped}");
        assert_eq!(m.usage.overlap_of(BatchMode::Sps), None);
        let all = m.usage.overlap.share().unwrap();
        assert!(all > single && all < piped, "session {all}");
    }

    #[test]
    fn unknown_usage_stays_unknown_never_zero() {
        // No GPU readings at all (NVML absent): the CPU is known, the overlap is not.
        let mut m = Model::new(Default::default());
        proof(&mut m, S, 1, BatchMode::Single, true);
        let t = run(&mut m, S, 3, Some(4.0), None);
        assert_eq!(m.usage.overlap.share(), None);
        assert_eq!(m.usage.overlap_of(BatchMode::Single), None);
        assert!(m.usage.gpus.is_empty());
        // A reading without rates (the first after a start): cores unknown, not 0.
        m.apply(&Record::new(t + S, usage(None, 0, vec![])));
        let r = m.usage.cpu_at(t + S).unwrap();
        assert_eq!(r.lane_range(CPU_TREE), None);
        assert_eq!(r.lane_range(CPU_THREADS), Some((9, 9)));
        assert_eq!(m.usage_at(None).unwrap().1.cores, None);
        // NVML failing mid-run: GPU readings stop; the GPU's series has nothing after.
        let mut m = Model::new(Default::default());
        let t = run(&mut m, S, 2, Some(4.0), Some(50));
        let t2 = run(&mut m, t, 2, Some(4.0), None);
        let g = m.usage.gpu(0).unwrap();
        assert!(g.columns(t + 1, t2 + 1, 1)[0].is_empty());
        // Only the time with GPU readings counted: all of it overlapped.
        let o = m.usage.overlap;
        assert!(o.known_ns < 2.1e9, "{o:?}");
        assert_eq!(o.share(), Some(1.0));
    }

    #[test]
    fn a_process_that_vanished_leaves_the_newest_reading_but_not_the_older() {
        let mut m = Model::new(Default::default());
        let both = vec![proc_row(10, "prover"), proc_row(11, "helper")];
        m.apply(&Record::new(S, usage(Some(2.0), S / 2, both)));
        m.apply(&Record::new(
            2 * S,
            usage(Some(1.0), S / 2, vec![proc_row(10, "prover")]),
        ));
        let pids = |u: &Usage| u.procs.iter().map(|p| p.pid).collect::<Vec<_>>();
        assert_eq!(pids(m.usage_at(None).unwrap().1), [10]);
        assert_eq!(pids(m.usage_at(Some(S)).unwrap().1), [10, 11]);
        // The nearest reading to a time between them.
        assert_eq!(m.usage_at(Some(S + S / 3)).unwrap().0, S);
        assert_eq!(m.usage_at(Some(S + 2 * S / 3)).unwrap().0, 2 * S);
        assert_eq!(m.usage_at(Some(0)).unwrap().0, S);
    }

    #[test]
    fn readings_kept_for_the_cursor_are_bounded_and_recent_ones_exact() {
        let mut m = Model::new(Default::default());
        let n = 3 * MAX_READINGS as u64;
        for i in 0..n {
            m.apply(&Record::new(i * S / 2, usage(Some(1.0), S / 2, vec![])));
        }
        assert!(m.usage.readings_len() <= MAX_READINGS);
        let last = (n - 1) * S / 2;
        assert_eq!(m.usage_at(Some(last - S / 2)).unwrap().0, last - S / 2);
        // The oldest still has a reading near it.
        assert!(m.usage_at(Some(0)).unwrap().0 < 60 * S);
        assert_eq!(m.usage.cpu.total(), n);
    }
}
