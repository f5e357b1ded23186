//! The spine: one stream of timestamped records.
//!
//! Live mode produces records (sampler thread, supervisor task, alert engine, key presses),
//! the recorder appends them to the session file, and the app state is a reducer over them.
//! Replay, classify and export read the same records back from a file.

use serde::{Deserialize, Serialize};

pub use crate::nvml_calls::{NvmlCalls, NVML_CALL_BUCKETS};
pub use crate::nvtx_origin::NvtxOrigin;
use crate::protocol::{Control, Event};

/// One timestamped fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Monotonic nanoseconds ([`crate::clock::mono_ns`]); for imported CSVs, nanoseconds
    /// since the first row.
    pub t: u64,
    /// What happened.
    #[serde(flatten)]
    pub body: RecordBody,
}

/// What a record holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", content = "data", rename_all = "snake_case")]
pub enum RecordBody {
    /// A memory sample of the watched process tree.
    Sample(Sample),
    /// An event from the prover.
    Event(Event),
    /// An alert rule fired or cleared.
    Alert(Alert),
    /// A control message sent to the prover.
    Control(Control),
    /// Something the monitor itself noted (child lifecycle, drops, notes).
    Mark(Mark),
    /// A line the child wrote on its stdout or stderr (or of a log file `watch` follows).
    Output(OutputLine),
    /// A prover event provetop derived from the child's log lines, not one the child sent:
    /// the protocol's own events stay the precise path, and a child that speaks the
    /// protocol gets none of these.
    Derived(Derived),
    /// Where the cores, the disks and the GPUs went over the last interval: CPU time, I/O,
    /// faults of the tree and of each of its processes, the host's load, each GPU's details.
    Usage(Usage),
    /// What the kernel enforces and reports: the tree's memory cgroup (accounting, limits,
    /// event counters), the limit that binds, and pressure (PSI), host-wide and the cgroup's.
    /// Boxed: it is several times a sample's size, and every record (the sampler's ring
    /// holds thousands) is as large as the largest kind.
    Kernel(Box<Kernel>),
}

/// Where a line of output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputSource {
    /// The supervised child's standard output.
    Stdout,
    /// The supervised child's standard error.
    Stderr,
    /// A log file (`watch PID --log FILE`).
    File,
    /// provetop's standard input (`watch PID --log -`).
    Stdin,
}

impl OutputSource {
    /// The short marker the log pane and headless mode show ("out", "err", "file", "in").
    pub fn marker(self) -> &'static str {
        match self {
            OutputSource::Stdout => "out",
            OutputSource::Stderr => "err",
            OutputSource::File => "file",
            OutputSource::Stdin => "in",
        }
    }
}

/// One line of output, as text (invalid UTF-8 replaced; never interpreted: it is made inert
/// where it is shown).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputLine {
    /// Which stream.
    pub source: OutputSource,
    /// The line without its line ending (`\n` or `\r\n`); its head only when it was cut.
    pub text: String,
    /// The line's whole length in bytes when it was longer than provetop keeps (`text` is
    /// its head).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<u64>,
}

/// An event derived from log lines, and the grammar that read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// The line grammar ("bellperson", "fil_proofs", "cuzk", "tracing", "ark", or a user
    /// rule's name).
    pub grammar: String,
    /// The event, as if the prover had sent it.
    pub event: Event,
    /// Where an NVTX range or marker came from (grammar `nvtx`, read through provetop's
    /// injection library, not from log lines). Absent in older sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvtx: Option<NvtxOrigin>,
}

/// Memory of the watched process tree at one instant. Bytes throughout.
///
/// Only `rss` is always present (an imported `timestamp,rss_kb` CSV has nothing else).
/// Serialized with a fixed layout in session files: never add `skip_serializing_if` here.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// VmRSS summed over the process tree.
    pub rss: u64,
    /// Peak RSS since the previous sample (VmHWM, reset every sample), summed over the tree.
    pub peak: Option<u64>,
    /// RssAnon.
    pub anon: Option<u64>,
    /// RssFile.
    pub file: Option<u64>,
    /// RssShmem (CUDA pinned host memory shows up here).
    pub shmem: Option<u64>,
    /// VmSwap.
    pub swap: Option<u64>,
    /// VmLck (mlocked).
    pub locked: Option<u64>,
    /// VmPin.
    pub vm_pin: Option<u64>,
    /// Pinned memory of the tree: CUDA pinned host memory (the `/dev/nvidia*` mappings that
    /// hold host memory and, in a CUDA process, shared `/dev/zero` mappings, from the mapping
    /// table, cross-checked with smaps) plus VmLck, nothing counted twice. `None` while a
    /// process's reading is unknown or stale (older readings: smaps Rss alone, at a low rate).
    pub pinned: Option<u64>,
    /// Pinned bytes the prover itself reports (memory_report event; latest).
    pub pinned_reported: Option<u64>,
    /// GPU memory used by the process tree, summed over GPUs (NVML).
    pub gpu_used: Option<u64>,
    /// Per-GPU device readings.
    pub gpus: Vec<GpuReading>,
    /// MemAvailable of the system: read every sample while an eighth of memory or less is
    /// available, else the latest reading (at most 200 ms old).
    pub mem_available: Option<u64>,
    /// MemTotal of the system.
    pub mem_total: Option<u64>,
    /// Usage of the cgroup whose limit binds (`cgroup_max`): memory.current (v1
    /// usage_in_bytes) every sample while a cgroup limit applies; without one, the tree's own
    /// cgroup's at each kernel reading (twice a second, with the limits' re-read) and `None`
    /// in between. (Sessions of older builds: once a second.)
    pub cgroup_current: Option<u64>,
    /// The cgroup limit that binds: of `memory.max` and `memory.high` (v1 `limit_in_bytes`)
    /// of the tree's cgroup and of each of its ancestors, the one with the least room left.
    /// `None` when no cgroup limits the tree. (Sessions of older builds: the tree's own
    /// cgroup's `memory.max`.) Which cgroup and file it is, is named in the [`Kernel`]
    /// records.
    pub cgroup_max: Option<u64>,
    /// Processes in the tree.
    pub procs: u32,
}

/// One GPU's state at a sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuReading {
    /// Device index.
    pub index: u32,
    /// Memory used by the watched tree on this device.
    pub proc_used: u64,
    /// Device memory used (all processes).
    pub used: u64,
    /// Device memory total.
    pub total: u64,
    /// Utilisation percent: the share of time a kernel ran, the mean of NVML's sample
    /// periods read since the reading before (sessions of older builds: NVML's last period
    /// alone, docs/usage.md#history); [`GpuReading::UTIL_UNKNOWN`] when NVML gave none (the
    /// layout is fixed in session files, so unknown is this value, never 0: read it with
    /// [`GpuReading::utilization`]).
    pub util: u8,
}

impl GpuReading {
    /// `util` when NVML did not report utilisation.
    pub const UTIL_UNKNOWN: u8 = u8::MAX;

    /// Utilisation percent, `None` when unknown.
    pub fn utilization(&self) -> Option<u8> {
        (self.util <= 100).then_some(self.util)
    }
}

/// A usage reading, taken at the usage cadence (`usage_hz`, lower than the memory samples').
/// Rates cover `interval_ns`, the time since the reading before; the first reading after a
/// start (or a new tree) has no rates. `None` is unknown, never zero: a process whose
/// `/proc/PID/io` is unreadable (another user's), NVML absent or failing, a process that
/// exited between two reads.
///
/// JSON in session files (kind 8, added within format version 1: older files have none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// The interval the rates cover, ns (0 on the first reading).
    pub interval_ns: u64,
    /// Cores busy in the tree (user + system CPU time over the interval), e.g. 11.3.
    pub cores: Option<f64>,
    /// Threads in the tree.
    pub threads: u32,
    /// Context switches per second in the tree (voluntary and not).
    pub ctx_switches: Option<f64>,
    /// Major page faults per second in the tree (the first sign of swapping).
    pub major_faults: Option<f64>,
    /// Bytes read from storage per second by the tree (`/proc/PID/io` read_bytes); `None`
    /// when any process's file is unreadable.
    pub read_bps: Option<f64>,
    /// Bytes written to storage per second by the tree (write_bytes).
    pub write_bps: Option<f64>,
    /// Cores busy on the whole host (`/proc/stat`), so competition shows.
    pub host_cores: Option<f64>,
    /// Cores online on the host.
    pub host_ncpu: u32,
    /// The tree's processes, root first.
    #[serde(default)]
    pub procs: Vec<ProcUsage>,
    /// Each GPU's details (NVML), by index.
    #[serde(default)]
    pub gpus: Vec<GpuDetail>,
    /// What provetop's own NVML calls cost so far, per call kind (cumulative over the
    /// session). Empty without NVML, and in sessions of older builds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvml_calls: Vec<NvmlCalls>,
    /// How many times slower than asked provetop reads NVML now, because its calls slowed
    /// (the driver's lock contended); `None`: at the asked rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml_backoff: Option<u32>,
}

/// One process of the tree in a [`Usage`] reading.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcUsage {
    pub pid: u32,
    /// Parent pid.
    pub ppid: u32,
    /// The command name (`/proc/PID/comm`, as text; shown inert).
    pub command: String,
    /// Memory, bytes (VmRSS and its parts).
    pub rss: u64,
    pub anon: u64,
    pub file: u64,
    pub shmem: u64,
    /// Pinned host memory of this process (`None`: unknown or stale).
    pub pinned: Option<u64>,
    /// Cores busy in this process over the interval.
    pub cores: Option<f64>,
    pub threads: u32,
    /// Major page faults per second.
    pub major_faults: Option<f64>,
    /// Storage bytes per second (`None`: `/proc/PID/io` unreadable).
    pub read_bps: Option<f64>,
    pub write_bps: Option<f64>,
    /// GPU memory this process holds, per GPU index (NVML), bytes.
    #[serde(default)]
    pub gpu_mem: Vec<(u32, u64)>,
}

/// One GPU's details in a [`Usage`] reading; utilisation and memory themselves are in every
/// [`Sample`]'s [`GpuReading`]s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuDetail {
    pub index: u32,
    /// NVML's UUID ("GPU-…"), the name that survives a renumbering.
    pub uuid: String,
    /// Product name.
    pub name: String,
    /// Degrees Celsius.
    pub temp_c: Option<u32>,
    /// Watts drawn.
    pub power_w: Option<f64>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// Active clock throttle reasons, as NVML names them ("sw_power_cap", "hw_slowdown", …);
    /// empty when none.
    #[serde(default)]
    pub throttle: Vec<String>,
    /// PCIe throughput, bytes per second, host to device and back.
    pub pcie_rx_bps: Option<f64>,
    pub pcie_tx_bps: Option<f64>,
    /// ECC errors since the driver loaded (volatile counters), corrected and not; `None`:
    /// ECC off, or not given. Absent in sessions of older builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_corrected: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_uncorrected: Option<u64>,
    /// PCIe replays since the driver loaded (link errors the link retried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_replays: Option<u64>,
    /// The last XID error NVML reported for this GPU during the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xid: Option<u64>,
    /// The power limit the driver enforces, watts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// The temperature at which the GPU slows itself down, °C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp_slowdown_c: Option<u32>,
}

/// What the kernel enforces and reports about the watched tree's memory, at the kernel
/// cadence (a few a second; at once when an event counter moves). `None` is unavailable
/// (no such file on this kernel or hierarchy, unreadable, no cgroup), never zero.
///
/// JSON in session files (kind 9, added within format version 1: older files have none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// The memory cgroup of the tree's root.
    #[serde(default)]
    pub cgroup: Option<CgroupReading>,
    /// The limit that binds the tree: the least room among the cgroup limits up the
    /// hierarchy and the host's MemAvailable.
    #[serde(default)]
    pub binding: Option<Binding>,
    /// Host-wide pressure (`/proc/pressure/*`).
    #[serde(default)]
    pub psi_host: Option<Psi>,
    /// The tree's cgroup's pressure (v2 `memory.pressure`, `cpu.pressure`, `io.pressure`).
    #[serde(default)]
    pub psi_cgroup: Option<Psi>,
}

/// One memory cgroup's accounting, limits and event counters. Bytes throughout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupReading {
    /// Its path in its hierarchy, e.g. `/system.slice/curio.service`.
    pub path: String,
    /// 1 (legacy memory controller) or 2 (unified hierarchy).
    pub version: u8,
    /// memory.current (v1 memory.usage_in_bytes).
    pub current: Option<u64>,
    /// The highest usage since the reading before: v2 `memory.peak` reset through provetop's
    /// own open file (Linux 6.12 and later; nobody else's reading is disturbed); `None`
    /// where the kernel has no such reset.
    pub peak: Option<u64>,
    /// memory.max (v1 memory.limit_in_bytes); `None` when unlimited.
    pub max: Option<u64>,
    /// memory.high (v2); `None` when unlimited.
    pub high: Option<u64>,
    /// memory.low (v2); `None` when 0.
    pub low: Option<u64>,
    /// memory.min (v2); `None` when 0.
    pub min: Option<u64>,
    /// v1 memory.soft_limit_in_bytes; `None` when unlimited.
    pub soft: Option<u64>,
    /// Swap used: v2 memory.swap.current; v1 memsw.usage_in_bytes − usage_in_bytes.
    pub swap: Option<u64>,
    /// Swap limit: v2 memory.swap.max; v1 memsw.limit_in_bytes − limit_in_bytes.
    pub swap_max: Option<u64>,
    /// memory.stat's breakdown.
    #[serde(default)]
    pub stat: MemStat,
    /// memory.events' counters (v1: memory.oom_control and memory.failcnt).
    #[serde(default)]
    pub events: MemEvents,
}

/// memory.stat's breakdown, bytes (v1 names mapped: `rss` → anon, `cache` → file,
/// `mapped_file` → file_mapped, `dirty` → file_dirty, `writeback` → file_writeback,
/// `rss_huge` → anon_thp; `kernel` is v1 memory.kmem.usage_in_bytes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemStat {
    pub anon: Option<u64>,
    pub file: Option<u64>,
    pub shmem: Option<u64>,
    pub kernel: Option<u64>,
    pub kernel_stack: Option<u64>,
    pub pagetables: Option<u64>,
    pub sock: Option<u64>,
    pub slab: Option<u64>,
    pub file_mapped: Option<u64>,
    pub file_dirty: Option<u64>,
    pub file_writeback: Option<u64>,
    pub anon_thp: Option<u64>,
    pub unevictable: Option<u64>,
}

/// A memory cgroup's event counters, cumulative since the cgroup was made (v2
/// `memory.events`, hierarchical; v1 `memory.oom_control` and `memory.failcnt`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemEvents {
    /// Reclaimed below memory.low.
    pub low: Option<u64>,
    /// Throttled over memory.high.
    pub high: Option<u64>,
    /// Usage reached memory.max.
    pub max: Option<u64>,
    /// The OOM killer was invoked.
    pub oom: Option<u64>,
    /// Processes the OOM killer killed.
    pub oom_kill: Option<u64>,
    /// Whole-group OOM kills (memory.oom.group).
    pub oom_group_kill: Option<u64>,
    /// v1: times usage hit the limit.
    pub failcnt: Option<u64>,
    /// v1: whether the cgroup is under OOM now.
    pub under_oom: Option<bool>,
}

/// The limit with the least room left for the tree, named as an operator would name it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Binding {
    /// "curio.service memory.max", "system.slice memory.high", "host MemAvailable".
    pub name: String,
    /// The limit, bytes (for the host: MemTotal read now).
    pub limit: u64,
    /// Usage counted against it (for the host: MemTotal − MemAvailable).
    pub used: u64,
}

impl Binding {
    /// Bytes left before the limit.
    pub fn room(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

/// Pressure stall information for memory, CPU and I/O; a resource is `None` where its file
/// is missing or unreadable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Psi {
    pub memory: Option<PsiResource>,
    pub cpu: Option<PsiResource>,
    pub io: Option<PsiResource>,
}

/// One resource's pressure: `some` (at least one task stalled) and `full` (all non-idle tasks
/// stalled; none for host-wide CPU on older kernels).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiResource {
    pub some: PsiLine,
    pub full: Option<PsiLine>,
}

/// One line of a pressure file, percent of wall time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiLine {
    /// The kernel's 10-second average.
    pub avg10: f64,
    /// The share of the interval since the reading before spent stalled (from `total`'s
    /// change); `None` on the first reading.
    pub rate: Option<f64>,
}

/// Severity of an alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertLevel {
    /// Informational.
    Info,
    /// Warning.
    Warn,
    /// Critical.
    Crit,
}

impl AlertLevel {
    /// The level as rules and files write it: "info", "warn", "crit".
    pub fn name(self) -> &'static str {
        match self {
            AlertLevel::Info => "info",
            AlertLevel::Warn => "warn",
            AlertLevel::Crit => "crit",
        }
    }
}

/// Whether an alert started or ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertState {
    /// The condition has held for the rule's duration.
    Firing,
    /// The condition no longer holds.
    Cleared,
}

/// An alert rule changed state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// The rule as written, e.g. `rss > 180GiB for 5s`.
    pub rule: String,
    pub level: AlertLevel,
    /// Firing or cleared.
    pub state: AlertState,
    /// Metric name.
    pub metric: String,
    /// Value that triggered the change (NaN when unknown, e.g. a phase alert cleared because
    /// the child exited).
    #[serde(deserialize_with = "f64_or_nan")]
    pub value: f64,
    /// Threshold of the rule (NaN when unknown).
    #[serde(deserialize_with = "f64_or_nan")]
    pub threshold: f64,
    /// Human text.
    pub message: String,
}

/// JSON has no NaN: serde_json writes a non-finite f64 as `null`. Read `null` back as NaN,
/// or the whole record (a cleared alert) would be refused as damage on replay.
fn f64_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Something the monitor noted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mark {
    /// A free-form note (operator or monitor).
    Note { text: String },
    /// The supervised child started.
    ChildStarted {
        /// Its pid.
        pid: u32,
        /// Its command line.
        command: Vec<String>,
    },
    /// The supervised child ended.
    ChildExited {
        /// Its pid.
        pid: u32,
        /// Exit code when it exited.
        code: Option<i32>,
        /// Signal number when it was killed.
        signal: Option<i32>,
        /// Whether the cgroup's oom_kill counter moved.
        oom_kill: bool,
        /// Human text: "exited 0", "killed by SIGKILL (OOM kill)", …
        reason: String,
    },
    /// The supervised child was stopped by a signal (SIGSTOP, SIGTSTP, …): alive, not
    /// running.
    ChildStopped {
        /// Its pid.
        pid: u32,
        /// The signal that stopped it.
        signal: i32,
        /// Human text: "stopped (SIGSTOP)".
        reason: String,
    },
    /// The stopped child was continued (SIGCONT).
    ChildContinued {
        /// Its pid.
        pid: u32,
    },
    /// The child is being restarted.
    Restart {
        /// Attempt number (1-based).
        attempt: u32,
        /// Backoff before this start, seconds.
        backoff_s: f64,
    },
    /// Samples or events were dropped (ring buffer full, flood).
    Dropped {
        /// What was dropped ("samples", "events").
        what: String,
        /// How many since the last such mark.
        count: u64,
    },
    /// A line from the child that was not a valid protocol message.
    BadLine {
        /// Why it was refused.
        error: String,
        /// The first bytes of it (lossy UTF-8).
        excerpt: String,
    },
    /// A non-fatal problem of the monitor itself (disk full while recording, …).
    Warning { text: String },
    /// The kernel's OOM killer killed a process: one of the watched tree, or another in the
    /// tree's cgroup (seen by the cgroup's `oom_kill` counter and named from the kernel log
    /// where it is readable).
    OomKill {
        /// The victim's pid, when the kernel log named it.
        #[serde(default)]
        pid: Option<u32>,
        /// The victim's command, as the kernel log gives it (shown inert).
        #[serde(default)]
        command: Option<String>,
        /// The cgroup that ran out of memory (its path), when known.
        #[serde(default)]
        cgroup: Option<String>,
        /// Whether the victim was a process of the watched tree.
        watched: bool,
        /// Human text: "OOM kill of pid 4242 (python3) in /provetop-test memory.max".
        text: String,
    },
    /// A memory cgroup's event counter moved (memory.events `high`, `max`, `oom`,
    /// `oom_kill`, `oom_group_kill`; v1 `failcnt`).
    MemoryEvent {
        /// The cgroup's path.
        cgroup: String,
        /// The counter's name as its file writes it.
        counter: String,
        /// By how much it moved since the reading before.
        delta: u64,
        /// Its value now.
        total: u64,
    },
    /// A pressure trigger fired: tasks stalled on a resource past a threshold within a
    /// window, between samples.
    Stall {
        /// "host" or "cgroup".
        scope: String,
        /// "memory", "cpu" or "io".
        resource: String,
        /// "some" or "full".
        line: String,
        /// The trigger's threshold and window, µs.
        stall_us: u64,
        window_us: u64,
    },
}

impl Record {
    /// Build a record.
    pub fn new(t: u64, body: RecordBody) -> Self {
        Record { t, body }
    }

    /// Short name of the record kind.
    pub fn kind(&self) -> &'static str {
        match self.body {
            RecordBody::Sample(_) => "sample",
            RecordBody::Event(_) => "event",
            RecordBody::Alert(_) => "alert",
            RecordBody::Control(_) => "control",
            RecordBody::Mark(_) => "mark",
            RecordBody::Output(_) => "output",
            RecordBody::Derived(_) => "derived",
            RecordBody::Usage(_) => "usage",
            RecordBody::Kernel(_) => "kernel",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_reading_without_utilisation_reads_unknown_not_zero() {
        let mut g = GpuReading {
            util: 37,
            ..GpuReading::default()
        };
        assert_eq!(g.utilization(), Some(37));
        g.util = GpuReading::UTIL_UNKNOWN;
        assert_eq!(g.utilization(), None);
        g.util = 0;
        assert_eq!(g.utilization(), Some(0));
    }

    #[test]
    fn output_lines_and_derived_events_survive_a_session_file() {
        let recs = [
            Record::new(
                5,
                RecordBody::Output(OutputLine {
                    source: OutputSource::Stderr,
                    text: "INFO bellperson: starting proof timer".into(),
                    cut: None,
                }),
            ),
            Record::new(
                6,
                RecordBody::Output(OutputLine {
                    source: OutputSource::Stdout,
                    text: "x".repeat(10),
                    cut: Some(10_000_000),
                }),
            ),
            Record::new(
                7,
                RecordBody::Derived(Derived {
                    grammar: "bellperson".into(),
                    event: Event::PhaseStarted {
                        proof_id: 1,
                        phase: crate::protocol::Phase::Prove,
                        partition: None,
                    },
                    nvtx: None,
                }),
            ),
            Record::new(
                8,
                RecordBody::Derived(Derived {
                    grammar: "nvtx".into(),
                    event: Event::PhaseEnded {
                        proof_id: 1 << 40,
                        phase: crate::protocol::Phase::Other("witgen".into()),
                        partition: None,
                        duration_s: 0.5,
                    },
                    nvtx: Some(NvtxOrigin {
                        name: "witgen".into(),
                        pid: 42,
                        thread: 43,
                        thread_name: Some("main".into()),
                        domain: Some("risc0".into()),
                        category: None,
                        depth: Some(2),
                    }),
                }),
            ),
        ];
        for rec in recs {
            let back = crate::session::decode_payload(&crate::session::encode_payload(&rec))
                .expect("decodes");
            assert_eq!(back, rec);
        }
    }

    #[test]
    fn an_alert_with_an_unknown_value_survives_a_session_file() {
        let a = Alert {
            rule: "phase_duration > 1s".into(),
            level: AlertLevel::Warn,
            state: AlertState::Cleared,
            metric: "phase_duration".into(),
            value: f64::NAN,
            threshold: 1.0,
            message: "cleared: phase_duration unknown".into(),
        };
        let rec = Record::new(7, RecordBody::Alert(a));
        let back = crate::session::decode_payload(&crate::session::encode_payload(&rec))
            .expect("a cleared alert decodes");
        let RecordBody::Alert(b) = back.body else {
            panic!("{back:?}")
        };
        assert!(b.value.is_nan());
        assert_eq!(b.threshold, 1.0);
        assert_eq!(b.state, AlertState::Cleared);
    }
}
