//! GPU readings through NVML (`libnvidia-ml.so.1`, loaded at run time).
//!
//! NVML reports host pids. A prover's CUDA context may live in any process of the tree, so the
//! per-process memory is summed over the tree's pids; entries with pid 0 or `u32::MAX` (no
//! pid visible, e.g. from inside a container) are never attributed to the tree.
//!
//! Utilisation is NVML's share of its last sample period in which a kernel ran: read once per
//! round, it is one period in several, and a prover whose GPU work comes in a rhythm is
//! caught or missed by the reader's phase for a whole window. So the utilisation is read
//! twice per NVML sample period (learned from the device's sample buffer at the start,
//! [`sample_period`]), evenly within each round ([`reads_per_round`]), and a round's `util`
//! is the mean of its reads: every period counts, and counts as much as the next. A read
//! costs microseconds of CPU; the sample buffer costs a thousand times more, so it is read
//! once, to learn the period, never at the rounds' rate (docs/usage.md#on-the-h200).
//!
//! Cost: each device's handle is got once and kept (again only after the device stopped
//! answering), and a round reads what every sample carries (memory, the tree's processes);
//! the details (temperature, power, SM clock, throttle reasons), which change slowly and are
//! shown only with the usage readings, are read every [`DETAIL_PERIOD`] and carried until the
//! next.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, Sampling, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::{Device, Nvml};
use provetop_shared::record::{GpuDetail, GpuReading};

use super::gpu_health::{self, HealthMarks};
use super::nvml_cost::{Backoff, CallClock};
use super::{park_until, GpuState, Shared};

/// How often the devices' details are read (a round between carries the last ones).
pub const DETAIL_PERIOD: Duration = Duration::from_secs(2);
/// NVML's utilisation sample period where the sample buffer does not tell (the period
/// measured: docs/usage.md#why-utilisation-is-read-twice-per-nvml-period).
pub const UTIL_PERIOD_DEFAULT: Duration = Duration::from_millis(200);
/// A learned sample period is held within these (a buffer with a gap in it must not make the
/// reads slow, nor a burst of samples make them busy).
pub const UTIL_PERIOD_BOUNDS: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(1));

/// The devices of an initialized NVML, their handles kept between rounds.
pub struct Gpus<'n> {
    nvml: &'n Nvml,
    count: u32,
    /// Each device's handle, got once (`None`: not got yet, or dropped when it failed).
    handles: Vec<Option<Device<'n>>>,
    /// (UUID, name) per index, read once while the device answers.
    names: Vec<Option<(String, String)>>,
    /// Utilisation reads since the last round, per index.
    util: Vec<UtilMean>,
    health: Health,
    /// Every NVML call's time.
    pub clock: CallClock,
    /// Per index: the enforced power limit and the slowdown temperature, read once.
    limits: Vec<Option<(Option<f64>, Option<u32>)>>,
    marks: HealthMarks,
    /// NVML's XID and ECC events (`None`: none taken here); tried once every device's
    /// handle was got.
    events: Option<nvml_wrapper::EventSet<'n>>,
    events_tried: bool,
}

/// Utilisation reads of one device, summed until a round takes their mean.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UtilMean {
    sum: u32,
    n: u32,
}

impl UtilMean {
    pub fn add(&mut self, pct: u32) {
        self.sum += pct.min(100);
        self.n += 1;
    }

    /// The mean of the reads since the last take, rounded; `None` without any.
    pub fn take(&mut self) -> Option<u8> {
        let m = std::mem::take(self);
        (m.n > 0).then(|| ((m.sum + m.n / 2) / m.n) as u8)
    }
}

/// The sample period of a device's buffer: the median spacing of its samples' timestamps
/// (µs), held within [`UTIL_PERIOD_BOUNDS`]; `None` with fewer than three samples.
pub fn sample_period(stamps_us: &mut [u64]) -> Option<Duration> {
    stamps_us.sort_unstable();
    let mut gaps: Vec<u64> = stamps_us
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&g| g > 0)
        .collect();
    if gaps.len() < 2 {
        return None;
    }
    gaps.sort_unstable();
    let median = Duration::from_micros(gaps[gaps.len() / 2]);
    Some(median.clamp(UTIL_PERIOD_BOUNDS.0, UTIL_PERIOD_BOUNDS.1))
}

/// One round of NVML readings.
#[derive(Debug, Default)]
pub struct Round {
    /// Per GPU (those that answered), for every sample.
    pub readings: Vec<GpuReading>,
    /// The tree's GPU memory summed over devices.
    pub used: u64,
    /// Per GPU (those that answered), for the usage readings; empty in a round that did
    /// not read them.
    pub details: Vec<GpuDetail>,
    /// (pid, GPU index, bytes) of the tree's processes whose amount NVML knows.
    pub procs: Vec<(u32, u32, u64)>,
    /// What changed in the devices' answers, each said once (notes).
    pub notes: Vec<String>,
}

/// Load NVML. The error text says why there is no GPU reading.
pub fn init() -> Result<Nvml, String> {
    Nvml::init().map_err(|e| e.to_string())
}

impl<'n> Gpus<'n> {
    /// The devices of `nvml`. The error text says why there is no GPU reading.
    pub fn open(nvml: &'n Nvml) -> Result<Gpus<'n>, String> {
        let count = nvml.device_count().map_err(|e| e.to_string())?;
        if count == 0 {
            return Err("NVML found no devices".into());
        }
        Ok(Gpus {
            nvml,
            count,
            handles: (0..count).map(|_| None).collect(),
            names: vec![None; count as usize],
            util: vec![UtilMean::default(); count as usize],
            health: Health::default(),
            clock: CallClock::default(),
            limits: vec![None; count as usize],
            marks: HealthMarks::default(),
            events: None,
            events_tried: false,
        })
    }

    /// NVML's utilisation sample period: the shortest over the devices whose handle is got
    /// (a round got them), from one read of each sample buffer; [`UTIL_PERIOD_DEFAULT`] where
    /// no buffer tells.
    pub fn util_period(&mut self) -> Duration {
        let clock = &mut self.clock;
        self.handles
            .iter()
            .flatten()
            .filter_map(|d| {
                let mut stamps: Vec<u64> = clock
                    .time("GetSamples", || d.samples(Sampling::GpuUtilization, None))
                    .ok()?
                    .iter()
                    .map(|s| s.timestamp)
                    .collect();
                sample_period(&mut stamps)
            })
            .min()
            .unwrap_or(UTIL_PERIOD_DEFAULT)
    }

    /// Read each device's utilisation (NVML's last sample period) into its round's mean. A
    /// device that does not answer adds nothing: its round finds it out.
    pub fn read_util(&mut self) {
        let clock = &mut self.clock;
        for (dev, acc) in self.handles.iter().zip(&mut self.util) {
            let read = dev
                .as_ref()
                .map(|d| clock.time("GetUtilizationRates", || d.utilization_rates()));
            if let Some(Ok(u)) = read {
                acc.add(u.gpu);
            }
        }
    }

    /// Read every device, and its details when `details`. `tree` holds the pids of the
    /// watched tree. A device that fails to answer is absent from this round (and said once);
    /// a detail a device does not give is `None` (and said once when it answered before).
    pub fn read(&mut self, tree: &[u32], details: bool) -> Round {
        let mut r = Round {
            readings: Vec::with_capacity(self.count as usize),
            ..Round::default()
        };
        self.take_events(&mut r.notes);
        for index in 0..self.count {
            let handle = &mut self.handles[index as usize];
            if handle.is_none() {
                let nvml = self.nvml;
                match self
                    .clock
                    .time("GetHandleByIndex", || nvml.device_by_index(index))
                {
                    Ok(d) => *handle = Some(d),
                    Err(e) => {
                        self.names[index as usize] = None;
                        r.notes
                            .extend(self.health.device(index, Some(&e.to_string())));
                        continue;
                    }
                }
            }
            let dev = handle.as_ref().expect("got above");
            let clock = &mut self.clock;
            let mem = match clock.time("GetMemoryInfo", || dev.memory_info()) {
                Ok(m) => m,
                Err(e) => {
                    // A device that fell off the bus may come back with a new handle.
                    *handle = None;
                    self.names[index as usize] = None;
                    self.util[index as usize] = UtilMean::default();
                    r.notes
                        .extend(self.health.device(index, Some(&e.to_string())));
                    continue;
                }
            };
            r.notes.extend(self.health.device(index, None));
            // The mean of the reads since the last round; a device with none (its handle got
            // in this round: the first, or after it stopped answering) reads its last period.
            let util = self.util[index as usize].take().unwrap_or_else(|| {
                clock
                    .time("GetUtilizationRates", || dev.utilization_rates())
                    .map(|u| u.gpu.min(100) as u8)
                    .unwrap_or(GpuReading::UTIL_UNKNOWN)
            });
            // Compute processes only: a prover's CUDA context is one, and each process query
            // is one of NVML's slowest calls (graphics contexts are not provers').
            let procs = clock
                .time("GetComputeRunningProcesses", || {
                    dev.running_compute_processes()
                })
                .unwrap_or_default();
            let known = |m: &UsedGpuMemory| match m {
                UsedGpuMemory::Used(b) => Some(*b),
                UsedGpuMemory::Unavailable => None,
            };
            let proc_used = tree_usage(
                procs
                    .iter()
                    .map(|p| (p.pid, known(&p.used_gpu_memory).unwrap_or(0))),
                tree,
            );
            for p in &procs {
                if let Some(b) = known(&p.used_gpu_memory) {
                    if tree.contains(&p.pid)
                        && !r.procs.iter().any(|&(q, i, _)| q == p.pid && i == index)
                    {
                        r.procs.push((p.pid, index, b));
                    }
                }
            }
            r.used += proc_used;
            r.readings.push(GpuReading {
                index,
                proc_used,
                used: mem.used,
                total: mem.total,
                util,
            });
            let names = &mut self.names[index as usize];
            if names.is_none() {
                let u = clock.time("GetUUID", || dev.uuid());
                let n = clock.time("GetName", || dev.name());
                if let (Ok(u), Ok(n)) = (u, n) {
                    *names = Some((u, n));
                }
            }
            if !details {
                continue;
            }
            let (uuid, name) = names.clone().unwrap_or_default();
            let h = &mut self.health;
            let temp_c = h.field(
                index,
                "temperature",
                clock.time("GetTemperature", || dev.temperature(TemperatureSensor::Gpu)),
                &mut r.notes,
            );
            let power_w = h
                .field(
                    index,
                    "power",
                    clock.time("GetPowerUsage", || dev.power_usage()),
                    &mut r.notes,
                )
                .map(|mw| f64::from(mw) / 1000.0);
            let sm = clock.time("GetClockInfo", || dev.clock_info(Clock::SM));
            let sm_clock_mhz = h.field(index, "SM clock", sm, &mut r.notes);
            let throttle = h
                .field(
                    index,
                    "throttle reasons",
                    clock.time("GetCurrentClocksThrottleReasons", || {
                        dev.current_throttle_reasons()
                    }),
                    &mut r.notes,
                )
                .map(throttle_names)
                .unwrap_or_default();
            let mut detail = GpuDetail {
                index,
                uuid,
                name,
                temp_c,
                power_w,
                sm_clock_mhz,
                throttle,
                // nvmlDeviceGetPcieThroughput samples each direction over 20 ms inside the
                // call: 40 ms a device a round, too slow for this thread's schedule.
                pcie_rx_bps: None,
                pcie_tx_bps: None,
                ..GpuDetail::default()
            };
            let limits = &mut self.limits[index as usize];
            gpu_health::read_fields(dev, clock, limits, &mut detail);
            r.notes.extend(self.marks.observe(&mut detail));
            r.details.push(detail);
        }
        r
    }
}

impl Gpus<'_> {
    /// NVML's XID and ECC events since the last round, as marks; the event set is made once
    /// every device's handle was got.
    fn take_events(&mut self, notes: &mut Vec<String>) {
        if !self.events_tried && self.handles.iter().all(Option::is_some) {
            self.events_tried = true;
            self.events = gpu_health::event_set(self.nvml, self.handles.iter().flatten());
        }
        if let Some(set) = &self.events {
            for (index, xid, what) in gpu_health::take_events(set, &mut self.clock) {
                notes.push(self.marks.event(index, xid, &what));
            }
        }
    }
}

/// The active throttle reasons by NVML's names, snake case.
pub fn throttle_names(t: ThrottleReasons) -> Vec<String> {
    const NAMES: [(ThrottleReasons, &str); 9] = [
        (ThrottleReasons::GPU_IDLE, "gpu_idle"),
        (
            ThrottleReasons::APPLICATIONS_CLOCKS_SETTING,
            "applications_clocks_setting",
        ),
        (ThrottleReasons::SW_POWER_CAP, "sw_power_cap"),
        (ThrottleReasons::HW_SLOWDOWN, "hw_slowdown"),
        (ThrottleReasons::SYNC_BOOST, "sync_boost"),
        (ThrottleReasons::SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"),
        (ThrottleReasons::HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"),
        (
            ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN,
            "hw_power_brake_slowdown",
        ),
        (
            ThrottleReasons::DISPLAY_CLOCK_SETTING,
            "display_clock_setting",
        ),
    ];
    NAMES
        .iter()
        .filter(|(bit, _)| t.contains(*bit))
        .map(|(_, n)| (*n).to_string())
        .collect()
}

/// What the devices answered before, so a change is said once.
#[derive(Debug, Default)]
pub struct Health {
    /// Devices that stopped answering.
    lost: HashSet<u32>,
    /// (device, detail) pairs that answered at least once…
    answered: HashSet<(u32, &'static str)>,
    /// …and those of them whose failure was said.
    failing: HashSet<(u32, &'static str)>,
}

impl Health {
    /// A device answered (`err` None) or not: the note to give, when this changes it.
    pub fn device(&mut self, index: u32, err: Option<&str>) -> Option<String> {
        match err {
            Some(e) => self.lost.insert(index).then(|| {
                format!("GPU {index} does not answer NVML ({e}): absent from the GPU readings")
            }),
            None => self
                .lost
                .remove(&index)
                .then(|| format!("GPU {index} answers NVML again")),
        }
    }

    /// One detail's answer: its value, or `None` (with a note, once, when it answered before:
    /// a detail the device never gives, e.g. power on some boards, is simply unknown).
    pub fn field<T, E: std::fmt::Display>(
        &mut self,
        index: u32,
        what: &'static str,
        v: Result<T, E>,
        notes: &mut Vec<String>,
    ) -> Option<T> {
        let key = (index, what);
        match v {
            Ok(v) => {
                self.answered.insert(key);
                self.failing.remove(&key);
                Some(v)
            }
            Err(e) => {
                if self.answered.contains(&key) && self.failing.insert(key) {
                    notes.push(format!(
                        "GPU {index}: NVML stopped giving its {what} ({e}): unknown"
                    ));
                }
                None
            }
        }
    }
}

/// Sum the memory of `(pid, bytes)` entries whose pid is in `tree`. A process listed twice on
/// one device is counted once.
pub fn tree_usage(procs: impl Iterator<Item = (u32, u64)>, tree: &[u32]) -> u64 {
    let mut seen: Vec<u32> = Vec::new();
    let mut sum = 0;
    for (pid, used) in procs {
        if pid == 0 || pid == u32::MAX || !tree.contains(&pid) || seen.contains(&pid) {
            continue;
        }
        seen.push(pid);
        sum += used;
    }
    sum
}

/// Utilisation reads per round: at least two per NVML sample period, evenly spaced so that
/// a round of `round` holds the same number of reads every time. Reads uniform in time sample
/// NVML's step of values evenly, so their mean over a round is the round's; two per period
/// keep every period read as often as the next whatever the two clocks' phase (read once per
/// period, a round holds a varying count of reads and some periods weigh more than others:
/// docs/usage.md#why-utilisation-is-read-twice-per-nvml-period).
///
/// At most [`MAX_READS_PER_ROUND`]: a user who slows the rounds (`gpu_hz`) to save CPU gets
/// fewer wake-ups too, at the price of some periods unread.
pub fn reads_per_round(round: Duration, nvml_period: Duration) -> u32 {
    let n = (2.0 * round.as_secs_f64() / nvml_period.as_secs_f64()).ceil();
    n.clamp(1.0, f64::from(MAX_READS_PER_ROUND)) as u32
}

/// Most utilisation reads in one round (at the default 2 Hz rounds: 5).
pub const MAX_READS_PER_ROUND: u32 = 20;

/// The `provetop-gpu` thread: a round every `period` (absolute deadlines), the details every
/// [`DETAIL_PERIOD`] and at once for a new tree; the utilisation [`reads_per_round`] times a
/// round on the same grid (the NVML period learned after the first round), the last of them
/// by the round itself.
pub(super) fn gpu_loop(s: &Shared, period: Duration) {
    let unavailable = |e: String| s.note(format!("no GPU (NVML unavailable: {e})"));
    let nvml = match init() {
        Ok(n) => n,
        Err(e) => return unavailable(e),
    };
    let mut gpus = match Gpus::open(&nvml) {
        Ok(g) => g,
        Err(e) => return unavailable(e),
    };
    let mut start = Instant::now();
    let mut details_due = start;
    let mut last_gen = None;
    let mut n = 1u32;
    let mut j = 0u64;
    let mut backoff = Backoff::default();
    let mut nvml_period = None;
    while !s.stop.load(Ordering::Acquire) {
        gpus.read_util();
        if j % u64::from(n) == 0 {
            round(
                s,
                &mut gpus,
                &mut details_due,
                &mut last_gen,
                backoff.factor(),
            );
            let learned = *nvml_period.get_or_insert_with(|| gpus.util_period());
            let (spent, slowest) = gpus.clock.take_round();
            let before = backoff.factor();
            if let Some(note) = backoff.after_round(period, spent, slowest) {
                s.note(note);
            }
            if j == 0 || backoff.factor() != before {
                // A new interval: a new grid from now.
                n = reads_per_round(period * backoff.factor(), learned);
                start = Instant::now();
                j = 0;
            }
        }
        // The next read on the grid after now: one missed (a slow round) is skipped, not
        // made up in a burst.
        let step = period * backoff.factor() / n;
        let passed = (Instant::now() - start).as_nanos() / step.as_nanos().max(1);
        j = (j + 1).max(u64::try_from(passed).unwrap_or(u64::MAX - 1) + 1);
        let deadline = start + step * u32::try_from(j).unwrap_or(u32::MAX);
        while Instant::now() < deadline && !s.stop.load(Ordering::Acquire) {
            park_until(deadline);
        }
    }
}

/// One round: read every device and publish it for the sampler's ticks.
fn round(
    s: &Shared,
    gpus: &mut Gpus<'_>,
    details_due: &mut Instant,
    last_gen: &mut Option<u64>,
    backoff: u32,
) {
    let (gen, pids) = s.tree_snapshot();
    let now = Instant::now();
    // A new tree (a new root) drops the last one's details: read them for it at once,
    // not up to a period later.
    let details = now >= *details_due || *last_gen != Some(gen);
    *last_gen = Some(gen);
    if details {
        *details_due = now + DETAIL_PERIOD;
    }
    let r = gpus.read(&pids, details);
    for n in r.notes {
        s.note(n);
    }
    let mut g = s.gpu.lock().unwrap_or_else(|e| e.into_inner());
    let kept = if details || g.gen != gen {
        r.details
    } else {
        // The last details of the devices that answered this round.
        let mut d = std::mem::take(&mut g.details);
        d.retain(|d| r.readings.iter().any(|x| x.index == d.index));
        d
    };
    *g = GpuState {
        gen,
        gpus: r.readings,
        used: Some(r.used),
        details: kept,
        procs: r.procs,
        calls: gpus.clock.snapshot(),
        backoff: (backoff > 1).then_some(backoff),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_that_stops_answering_is_said_once_and_its_return_once() {
        let mut h = Health::default();
        assert_eq!(
            h.device(0, None),
            None,
            "answering from the start: nothing to say"
        );
        let lost = h.device(0, Some("GPU is lost")).unwrap();
        assert!(
            lost.contains("GPU 0") && lost.contains("GPU is lost"),
            "{lost}"
        );
        assert_eq!(h.device(0, Some("GPU is lost")), None, "said once");
        assert_eq!(h.device(1, None), None, "another GPU is its own");
        assert_eq!(
            h.device(0, None).as_deref(),
            Some("GPU 0 answers NVML again")
        );
        assert_eq!(h.device(0, None), None);
    }

    #[test]
    fn a_detail_that_fails_mid_run_is_unknown_and_said_once_and_one_never_given_is_silent() {
        let mut h = Health::default();
        let mut notes = Vec::new();
        let never: Result<u32, &str> = Err("Not Supported");
        assert_eq!(h.field(0, "power", never, &mut notes), None);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            h.field(0, "temperature", Ok::<u32, &str>(61), &mut notes),
            Some(61)
        );
        for _ in 0..3 {
            let v = h.field(0, "temperature", Err::<u32, _>("Unknown Error"), &mut notes);
            assert_eq!(v, None, "unknown, never 0");
        }
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("temperature") && notes[0].contains("Unknown Error"));
        assert_eq!(
            h.field(0, "temperature", Ok::<u32, &str>(62), &mut notes),
            Some(62)
        );
        h.field(0, "temperature", Err::<u32, _>("again"), &mut notes);
        assert_eq!(
            notes.len(),
            2,
            "a new failure after a recovery is said again"
        );
    }

    #[test]
    fn a_rounds_utilisation_is_the_rounded_mean_of_its_reads_and_unknown_without_any() {
        let mut m = UtilMean::default();
        assert_eq!(m.take(), None, "no read: unknown, never 0");
        for pct in [100, 0, 0, 100, 0] {
            m.add(pct);
        }
        assert_eq!(m.take(), Some(40));
        assert_eq!(m.take(), None, "a take starts the next round empty");
        m.add(33);
        m.add(34);
        assert_eq!(m.take(), Some(34), "33.5 rounds up");
        m.add(250);
        assert_eq!(m.take(), Some(100), "NVML's odd answers are held to 100");
    }

    #[test]
    fn a_round_holds_two_reads_per_nvml_period_evenly() {
        let ms = Duration::from_millis;
        assert_eq!(reads_per_round(ms(500), ms(200)), 5, "100 ms apart");
        assert_eq!(
            reads_per_round(ms(500), Duration::from_micros(166_667)),
            6,
            "NVML at 6 Hz: 83 ms apart"
        );
        assert_eq!(
            reads_per_round(ms(500), ms(1000)),
            1,
            "the round's own read"
        );
        assert_eq!(reads_per_round(ms(100), ms(200)), 1);
        assert_eq!(
            reads_per_round(Duration::from_secs(100), ms(200)),
            MAX_READS_PER_ROUND,
            "gpu_hz 0.01: a read every 5 s, not 10 a second"
        );
    }

    #[test]
    fn the_sample_period_is_the_median_spacing_of_the_buffer_held_within_bounds() {
        // The H200's buffer: a sample every 200 ms, out of order, one missing.
        let mut stamps: Vec<u64> = vec![1_000_000, 1_200_000, 1_600_000, 1_400_000, 2_000_000];
        assert_eq!(sample_period(&mut stamps), Some(Duration::from_millis(200)));
        let mut fast: Vec<u64> = (0..10).map(|i| i * 1_000).collect();
        assert_eq!(sample_period(&mut fast), Some(UTIL_PERIOD_BOUNDS.0));
        let mut slow: Vec<u64> = (0..10).map(|i| i * 5_000_000).collect();
        assert_eq!(sample_period(&mut slow), Some(UTIL_PERIOD_BOUNDS.1));
        assert_eq!(sample_period(&mut [5, 5, 7]), None, "one gap tells nothing");
        assert_eq!(sample_period(&mut []), None);
    }

    #[test]
    fn throttle_reasons_are_named_as_nvml_names_them() {
        let t = ThrottleReasons::SW_POWER_CAP | ThrottleReasons::HW_THERMAL_SLOWDOWN;
        assert_eq!(throttle_names(t), ["sw_power_cap", "hw_thermal_slowdown"]);
        assert!(throttle_names(ThrottleReasons::NONE).is_empty());
    }

    #[test]
    fn sums_tree_rejects_bogus_pids() {
        let tree = [10, 11, 12];
        let procs = vec![
            (10, 100),
            (0, 1000),
            (u32::MAX, 1000),
            (99, 5),
            (12, 7),
            (10, 100),
        ];
        assert_eq!(tree_usage(procs.into_iter(), &tree), 107);
    }
}
