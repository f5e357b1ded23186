//! The one table of what provetop measures and alerts on: each metric's name (as alert rules,
//! the chart's cursor box and the metrics documentation spell it), its unit, where its value
//! comes from ([`Read`]: every [`Sample`], the latest [`Usage`] record, each GPU of either, or
//! the alert engine's own folds), what a percent of it is measured against ([`Limit`]),
//! whether the chart's series keeps it, and its column in the exported CSV. The series, the
//! alert rules, the export and the legend all read this table.
//!
//! Per-GPU metrics (`gpu_util`, `gpu_mem`, `gpu_temp`) have one value per GPU; as one number
//! (a rule without `[N]`, the cursor box) they are the maximum over the GPUs. A reading the
//! record does not have is `None`, never 0.

use crate::record::{GpuDetail, GpuReading, Sample, Usage};
use crate::units::{
    fmt_bytes, fmt_bytes_rate, fmt_celsius, fmt_cores, fmt_percent, fmt_rate, fmt_secs,
};

/// What a metric's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Seconds,
    /// Cores busy (CPU seconds per second).
    Cores,
    /// Percent, 0 to 100.
    Percent,
    /// Degrees Celsius.
    Celsius,
    /// Events per second.
    PerSecond,
    /// Bytes per second.
    BytesPerSecond,
    /// A plain count.
    Count,
}

impl Unit {
    /// A value in words: "1.2 GiB", "-300 B" (short), "1m30s", "11.3 cores", "86%".
    pub fn fmt(self, v: f64) -> String {
        match self {
            Unit::Seconds => fmt_secs(v),
            // Only predicted_free goes below zero: short by that much.
            Unit::Bytes if v < 0.0 => format!("-{}", fmt_bytes(-v as u64)),
            Unit::Bytes => fmt_bytes(v as u64),
            Unit::Cores => fmt_cores(v),
            Unit::Percent => fmt_percent(v),
            Unit::Celsius => fmt_celsius(v),
            Unit::PerSecond => fmt_rate(v),
            Unit::BytesPerSecond => fmt_bytes_rate(v),
            Unit::Count => format!("{v:.0}"),
        }
    }

    /// A rule's value in this unit ("180GiB", "30s", "12", "12 cores", "85C", "100/s").
    pub fn parse(self, s: &str) -> Result<f64, String> {
        use crate::units::*;
        match self {
            Unit::Bytes => parse_bytes(s).map(|b| b as f64),
            Unit::Seconds => parse_duration_s(s),
            Unit::Cores => parse_cores(s),
            Unit::Percent => parse_percent(s),
            Unit::Celsius => parse_celsius(s),
            Unit::PerSecond => parse_rate(s),
            Unit::BytesPerSecond => parse_bytes_rate(s),
            Unit::Count => parse_count(s),
        }
    }

    /// An example value, for errors.
    pub fn example(self) -> &'static str {
        match self {
            Unit::Bytes => "a size such as 10GiB",
            Unit::Seconds => "a duration such as 30s",
            Unit::Cores => "a number of cores such as 12",
            Unit::Percent => "a percent such as 10",
            Unit::Celsius => "degrees Celsius such as 85",
            Unit::PerSecond => "a rate such as 100/s",
            Unit::BytesPerSecond => "a rate such as 100MiB/s",
            Unit::Count => "a whole number such as 1000",
        }
    }
}

/// One measured quantity. The first [`SERIES`] variants are the chart's series, in storage
/// order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// VmRSS of the tree.
    Rss,
    /// Interval peak RSS (VmHWM, reset every sample).
    Peak,
    /// RssAnon.
    Anon,
    /// RssFile.
    File,
    /// RssShmem.
    Shmem,
    /// Pinned host memory from smaps (`/dev/nvidia*` and the CUDA `/dev/zero` mappings).
    Pinned,
    /// Pinned host memory the prover reports.
    PinnedReported,
    /// GPU memory used by the tree.
    Gpu,
    /// MemAvailable of the system.
    MemAvailable,
    /// VmSwap.
    Swap,
    /// VmLck (mlocked).
    Locked,
    /// Seconds the longest-running open phase has been running.
    PhaseDuration,
    /// Seconds since the child's last protocol event (a watchdog for a hung prover); known
    /// only once the current child has sent an event.
    EventAge,
    /// Memory predicted to be left when the proof now running peaks (negative: short by
    /// that much); known once a proof of the same shape has finished.
    PredictedFree,
    /// Seconds until memory runs out at the tree's current RSS growth rate (the trend
    /// forecast); known while the RSS grows.
    TimeToOom,
    /// Cores busy in the tree (usage record).
    Cpu,
    /// Cores busy on the whole host (usage record).
    HostCpu,
    /// Threads in the tree (usage record).
    Threads,
    /// Storage bytes read per second by the tree (usage record).
    ReadBps,
    /// Storage bytes written per second by the tree (usage record).
    WriteBps,
    /// Major page faults per second in the tree (usage record).
    MajorFaults,
    /// Utilisation of a GPU, percent (every sample; per GPU).
    GpuUtil,
    /// Memory used on a GPU by every process, bytes (every sample; per GPU).
    GpuMem,
    /// Temperature of a GPU, °C (usage record; per GPU).
    GpuTemp,
}

/// How many metrics the chart's series keeps (the first variants of [`Metric`]).
pub const SERIES: usize = 10;

/// How a metric is read from a sample.
pub type Reader = fn(&Sample) -> Option<u64>;

/// Where a metric's value comes from.
#[derive(Debug, Clone, Copy)]
pub enum Read {
    /// Every memory sample (20 Hz).
    Sample(Reader),
    /// The latest usage record (about 2 Hz).
    Usage(fn(&Usage) -> Option<f64>),
    /// Each GPU's reading in every sample.
    GpuSample(fn(&GpuReading) -> Option<f64>),
    /// Each GPU's details in the latest usage record.
    GpuUsage(fn(&GpuDetail) -> Option<f64>),
    /// Worked out by the alert engine from events, time and the forecast.
    Engine,
}

impl Read {
    /// Whether the value is one per GPU.
    pub fn per_gpu(self) -> bool {
        matches!(self, Read::GpuSample(_) | Read::GpuUsage(_))
    }

    /// The value per GPU, by device index, from a sample or a usage record (whichever this
    /// reads); empty when neither is given or it is not per GPU. A GPU without the reading is
    /// left out.
    pub fn per_gpu_values(self, s: Option<&Sample>, u: Option<&Usage>) -> Vec<(u32, f64)> {
        match (self, s, u) {
            (Read::GpuSample(f), Some(s), _) => s
                .gpus
                .iter()
                .filter_map(|g| Some((g.index, f(g)?)))
                .collect(),
            (Read::GpuUsage(f), _, Some(u)) => u
                .gpus
                .iter()
                .filter_map(|g| Some((g.index, f(g)?)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The one value: the sample's or the usage record's reading; per GPU, the highest over
    /// the GPUs. `None` when unknown (and always for [`Read::Engine`]).
    pub fn value(self, s: Option<&Sample>, u: Option<&Usage>) -> Option<f64> {
        match (self, s, u) {
            (Read::Sample(f), Some(s), _) => f(s).map(|v| v as f64),
            (Read::Usage(f), _, Some(u)) => f(u).filter(|v| v.is_finite()),
            (Read::GpuSample(_) | Read::GpuUsage(_), _, _) => self
                .per_gpu_values(s, u)
                .into_iter()
                .map(|(_, v)| v)
                .filter(|v| v.is_finite())
                .reduce(f64::max),
            _ => None,
        }
    }
}

/// What a percent threshold (`rss > 90%`) is a percent of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The memory limit of each sample: the cgroup's memory.max, else MemTotal.
    Memory,
    /// The host's cores online (of the usage record).
    HostCores,
    /// Each GPU's memory total (per GPU).
    GpuTotal,
}

/// A metric's row in the table.
#[derive(Debug, Clone, Copy)]
pub struct Def {
    pub metric: Metric,
    /// The name rules and the cursor box use.
    pub name: &'static str,
    pub unit: Unit,
    /// What it is, for help texts.
    pub help: &'static str,
    /// Where its value comes from.
    pub read: Read,
    /// The exported CSV column and the reading it holds (bytes columns in KiB). A per-GPU
    /// metric's name is the column's tail: `util` is `gpu0_util`, `gpu1_util`, ….
    pub csv: Option<(&'static str, Read)>,
    /// The chart legend's label and its rank there (the highest rank gives way first on a
    /// narrow screen); None: not in the legend.
    pub legend: Option<(&'static str, u8)>,
    /// What `N%` in a rule is a percent of; None: a percent makes no sense (a `Percent`
    /// metric takes `10%` as its own unit).
    pub limit: Option<Limit>,
}

const MEM: Option<Limit> = Some(Limit::Memory);

/// Every metric, in [`Metric`] order.
pub const TABLE: [Def; 24] = [
    Def {
        metric: Metric::Rss,
        name: "rss",
        unit: Unit::Bytes,
        help: "resident memory of the process tree (VmRSS)",
        read: Read::Sample(|s| Some(s.rss)),
        csv: Some(("rss_kb", Read::Sample(|s| Some(s.rss)))),
        legend: Some(("rss", 0)),
        limit: MEM,
    },
    Def {
        metric: Metric::Peak,
        name: "peak",
        unit: Unit::Bytes,
        help: "highest RSS since the previous sample (VmHWM, reset every sample)",
        read: Read::Sample(|s| s.peak),
        csv: Some(("peak_kb", Read::Sample(|s| s.peak))),
        legend: Some(("▲", 1)),
        limit: MEM,
    },
    Def {
        metric: Metric::Anon,
        name: "anon",
        unit: Unit::Bytes,
        help: "anonymous resident memory (RssAnon)",
        read: Read::Sample(|s| s.anon),
        csv: Some(("anon_kb", Read::Sample(|s| s.anon))),
        legend: Some(("anon", 4)),
        limit: MEM,
    },
    Def {
        metric: Metric::File,
        name: "file",
        unit: Unit::Bytes,
        help: "file-backed resident memory (RssFile)",
        read: Read::Sample(|s| s.file),
        csv: Some(("file_kb", Read::Sample(|s| s.file))),
        legend: Some(("file", 7)),
        limit: MEM,
    },
    Def {
        metric: Metric::Shmem,
        name: "shmem",
        unit: Unit::Bytes,
        help: "shared resident memory (RssShmem)",
        read: Read::Sample(|s| s.shmem),
        csv: Some(("shmem_kb", Read::Sample(|s| s.shmem))),
        legend: Some(("shm", 6)),
        limit: MEM,
    },
    Def {
        metric: Metric::Pinned,
        name: "pinned",
        unit: Unit::Bytes,
        help: "CUDA pinned host memory and mlocked memory (mapping table, smaps-checked; alerts take the larger of it and the prover's report)",
        read: Read::Sample(|s| s.pinned),
        // The CSV's one pinned column: measured, else what the prover reported.
        csv: Some(("pinned_kb", Read::Sample(|s| s.pinned.or(s.pinned_reported)))),
        legend: Some(("pin", 3)),
        limit: MEM,
    },
    Def {
        metric: Metric::PinnedReported,
        name: "pinned_reported",
        unit: Unit::Bytes,
        help: "pinned host memory the prover reports (memory_report)",
        read: Read::Sample(|s| s.pinned_reported),
        csv: None,
        legend: Some(("pin*", 5)),
        limit: MEM,
    },
    Def {
        metric: Metric::Gpu,
        name: "gpu",
        unit: Unit::Bytes,
        help: "GPU memory used by the tree (NVML)",
        read: Read::Sample(|s| s.gpu_used),
        csv: Some(("gpu_kb", Read::Sample(|s| s.gpu_used))),
        legend: Some(("gpu", 2)),
        limit: MEM,
    },
    Def {
        metric: Metric::MemAvailable,
        name: "mem_available",
        unit: Unit::Bytes,
        help: "MemAvailable of the system",
        read: Read::Sample(|s| s.mem_available),
        csv: Some(("mem_available_kb", Read::Sample(|s| s.mem_available))),
        legend: None,
        limit: MEM,
    },
    Def {
        metric: Metric::Swap,
        name: "swap",
        unit: Unit::Bytes,
        help: "swapped-out memory of the tree (VmSwap)",
        read: Read::Sample(|s| s.swap),
        csv: Some(("swap_kb", Read::Sample(|s| s.swap))),
        legend: None,
        limit: MEM,
    },
    Def {
        metric: Metric::Locked,
        name: "locked",
        unit: Unit::Bytes,
        help: "mlocked memory of the tree (VmLck)",
        read: Read::Sample(|s| s.locked),
        csv: Some(("locked_kb", Read::Sample(|s| s.locked))),
        legend: None,
        limit: MEM,
    },
    Def {
        metric: Metric::PhaseDuration,
        name: "phase_duration",
        unit: Unit::Seconds,
        help: "seconds the longest-running open phase has run",
        read: Read::Engine,
        csv: None,
        legend: None,
        limit: None,
    },
    Def {
        metric: Metric::EventAge,
        name: "event_age",
        unit: Unit::Seconds,
        help: "seconds since the prover's last event",
        read: Read::Engine,
        csv: None,
        legend: None,
        limit: None,
    },
    Def {
        metric: Metric::PredictedFree,
        name: "predicted_free",
        unit: Unit::Bytes,
        help: "memory expected to be left when the running proof peaks",
        read: Read::Engine,
        csv: None,
        legend: None,
        limit: MEM,
    },
    Def {
        metric: Metric::TimeToOom,
        name: "time_to_oom",
        unit: Unit::Seconds,
        help: "seconds until memory runs out at the RSS growth rate of the last seconds",
        read: Read::Engine,
        csv: None,
        legend: None,
        limit: None,
    },
    Def {
        metric: Metric::Cpu,
        name: "cpu",
        unit: Unit::Cores,
        help: "cores busy in the process tree (user + system CPU time per second; percent: of the host's cores online)",
        read: Read::Usage(|u| u.cores),
        csv: Some(("cores", Read::Usage(|u| u.cores))),
        legend: None,
        limit: Some(Limit::HostCores),
    },
    Def {
        metric: Metric::HostCpu,
        name: "host_cpu",
        unit: Unit::Cores,
        help: "cores busy on the whole host (/proc/stat; percent: of its cores online)",
        read: Read::Usage(|u| u.host_cores),
        csv: Some(("host_cores", Read::Usage(|u| u.host_cores))),
        legend: None,
        limit: Some(Limit::HostCores),
    },
    Def {
        metric: Metric::Threads,
        name: "threads",
        unit: Unit::Count,
        help: "threads in the process tree",
        // A usage record always counts the threads; its first reading too.
        read: Read::Usage(|u| Some(f64::from(u.threads))),
        csv: Some(("threads", Read::Usage(|u| Some(f64::from(u.threads))))),
        legend: None,
        limit: None,
    },
    Def {
        metric: Metric::ReadBps,
        name: "read_bps",
        unit: Unit::BytesPerSecond,
        help: "bytes read from storage per second by the tree (/proc/PID/io read_bytes)",
        read: Read::Usage(|u| u.read_bps),
        csv: Some(("read_bps", Read::Usage(|u| u.read_bps))),
        legend: None,
        limit: None,
    },
    Def {
        metric: Metric::WriteBps,
        name: "write_bps",
        unit: Unit::BytesPerSecond,
        help: "bytes written to storage per second by the tree (/proc/PID/io write_bytes)",
        read: Read::Usage(|u| u.write_bps),
        csv: Some(("write_bps", Read::Usage(|u| u.write_bps))),
        legend: None,
        limit: None,
    },
    Def {
        metric: Metric::MajorFaults,
        name: "major_faults",
        unit: Unit::PerSecond,
        help: "major page faults per second in the tree (the first sign of swapping)",
        read: Read::Usage(|u| u.major_faults),
        csv: Some(("major_faults", Read::Usage(|u| u.major_faults))),
        legend: None,
        limit: None,
    },
    Def {
        metric: Metric::GpuUtil,
        name: "gpu_util",
        unit: Unit::Percent,
        help: "utilisation of a GPU, percent (NVML; the highest over the GPUs, or gpu_util[N] for GPU N)",
        read: Read::GpuSample(|g| g.utilization().map(f64::from)),
        csv: Some(("util", Read::GpuSample(|g| g.utilization().map(f64::from)))),
        legend: None,
        limit: None,
    },
    Def {
        metric: Metric::GpuMem,
        name: "gpu_mem",
        unit: Unit::Bytes,
        help: "memory used on a GPU by every process, as nvidia-smi shows it (the highest over the GPUs, or gpu_mem[N]; percent: of that GPU's memory)",
        read: Read::GpuSample(|g| Some(g.used as f64)),
        csv: Some(("mem_kb", Read::GpuSample(|g| Some(g.used as f64)))),
        legend: None,
        limit: Some(Limit::GpuTotal),
    },
    Def {
        metric: Metric::GpuTemp,
        name: "gpu_temp",
        unit: Unit::Celsius,
        help: "temperature of a GPU, °C (the highest over the GPUs, or gpu_temp[N])",
        read: Read::GpuUsage(|g| g.temp_c.map(f64::from)),
        csv: Some(("temp_c", Read::GpuUsage(|g| g.temp_c.map(f64::from)))),
        legend: None,
        limit: None,
    },
];

/// The exported CSV's memory columns, in column order (the seed's two first); the phase
/// column follows them.
pub const CSV_COLUMNS: [Metric; 10] = [
    Metric::Rss,
    Metric::Peak,
    Metric::Anon,
    Metric::File,
    Metric::Shmem,
    Metric::Swap,
    Metric::Locked,
    Metric::Pinned,
    Metric::Gpu,
    Metric::MemAvailable,
];

/// The exported CSV's usage columns, after the phase column (carried forward from the latest
/// usage record).
pub const USAGE_CSV_COLUMNS: [Metric; 6] = [
    Metric::Cpu,
    Metric::HostCpu,
    Metric::Threads,
    Metric::ReadBps,
    Metric::WriteBps,
    Metric::MajorFaults,
];

/// The exported CSV's per-GPU columns, for each GPU after the usage columns: `gpu0_util,
/// gpu0_mem_kb,gpu0_temp_c,gpu1_util,…`.
pub const GPU_CSV_COLUMNS: [Metric; 3] = [Metric::GpuUtil, Metric::GpuMem, Metric::GpuTemp];

impl Metric {
    /// The chart's series, in storage order.
    pub const SERIES: [Metric; SERIES] = [
        Metric::Rss,
        Metric::Peak,
        Metric::Anon,
        Metric::File,
        Metric::Shmem,
        Metric::Pinned,
        Metric::PinnedReported,
        Metric::Gpu,
        Metric::MemAvailable,
        Metric::Swap,
    ];

    /// This metric's row.
    pub fn def(self) -> &'static Def {
        &TABLE[self as usize]
    }

    /// The chart's legend entries (metric, label, rank), in legend order.
    pub fn legend() -> impl Iterator<Item = (Metric, &'static str, u8)> {
        TABLE
            .iter()
            .filter_map(|d| d.legend.map(|(l, r)| (d.metric, l, r)))
    }

    /// The name rules use.
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// The metric a rule names.
    pub fn parse(name: &str) -> Option<Metric> {
        TABLE.iter().find(|d| d.name == name).map(|d| d.metric)
    }

    /// Its value in a sample (`None` for metrics a sample does not hold whole: usage,
    /// per-GPU and the engine's).
    pub fn of(self, s: &Sample) -> Option<u64> {
        match self.def().read {
            Read::Sample(f) => f(s),
            _ => None,
        }
    }

    /// Its one value in a sample and the latest usage record (per GPU: the highest).
    pub fn value(self, s: Option<&Sample>, u: Option<&Usage>) -> Option<f64> {
        self.def().read.value(s, u)
    }

    /// Whether it has one value per GPU (a rule may name one: `gpu_mem[1]`).
    pub fn per_gpu(self) -> bool {
        self.def().read.per_gpu()
    }

    /// Its unit.
    pub fn unit(self) -> Unit {
        self.def().unit
    }

    /// Index into the series' value arrays (for the first [`SERIES`] metrics).
    pub fn idx(self) -> usize {
        self as usize
    }

    /// Whether values are seconds.
    pub fn is_duration(self) -> bool {
        self.def().unit == Unit::Seconds
    }

    /// A value of this metric in words: "1.2 GiB", "-300 B" (short), "1m30s", "11.3 cores".
    pub fn fmt_value(self, v: f64) -> String {
        self.def().unit.fmt(v)
    }
}

/// The CSV header's metric part: `rss_kb,peak_kb,…`.
pub fn csv_columns() -> impl Iterator<Item = &'static str> {
    CSV_COLUMNS
        .iter()
        .filter_map(|m| m.def().csv.map(|(name, _)| name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_enum_order_and_names_are_unique() {
        for (i, d) in TABLE.iter().enumerate() {
            assert_eq!(d.metric as usize, i, "{}", d.name);
            assert_eq!(Metric::parse(d.name), Some(d.metric));
        }
        for (i, m) in Metric::SERIES.iter().enumerate() {
            assert_eq!(m.idx(), i);
        }
        assert!(CSV_COLUMNS
            .iter()
            .chain(&USAGE_CSV_COLUMNS)
            .chain(&GPU_CSV_COLUMNS)
            .all(|m| m.def().csv.is_some()));
        assert!(GPU_CSV_COLUMNS.iter().all(|m| m.per_gpu()));
        assert_eq!(Metric::parse("mem_avail"), None);
    }

    #[test]
    fn the_csv_columns_keep_the_seed_columns_first() {
        let cols: Vec<&str> = csv_columns().collect();
        assert_eq!(
            cols.join(","),
            "rss_kb,peak_kb,anon_kb,file_kb,shmem_kb,swap_kb,locked_kb,pinned_kb,gpu_kb,mem_available_kb"
        );
    }

    #[test]
    fn usage_and_per_gpu_metrics_read_the_latest_usage_and_the_highest_gpu() {
        let s = Sample {
            gpus: vec![
                GpuReading {
                    index: 0,
                    used: 10,
                    total: 100,
                    util: 30,
                    ..GpuReading::default()
                },
                GpuReading {
                    index: 1,
                    used: 70,
                    total: 80,
                    util: 90,
                    ..GpuReading::default()
                },
            ],
            ..Sample::default()
        };
        assert_eq!(Metric::GpuUtil.value(Some(&s), None), Some(90.0));
        assert_eq!(Metric::GpuMem.value(Some(&s), None), Some(70.0));
        assert_eq!(
            Metric::GpuUtil.def().read.per_gpu_values(Some(&s), None),
            [(0, 30.0), (1, 90.0)]
        );
        // No GPU, no usage record: unknown, not zero.
        assert_eq!(Metric::GpuUtil.value(Some(&Sample::default()), None), None);
        assert_eq!(Metric::Cpu.value(Some(&s), None), None);
        assert_eq!(Metric::GpuTemp.value(Some(&s), None), None);
        let u = Usage {
            cores: Some(11.3),
            threads: 40,
            major_faults: None,
            gpus: vec![
                GpuDetail {
                    index: 0,
                    temp_c: Some(71),
                    ..GpuDetail::default()
                },
                GpuDetail {
                    index: 1,
                    temp_c: None,
                    ..GpuDetail::default()
                },
            ],
            ..Usage::default()
        };
        assert_eq!(Metric::Cpu.value(None, Some(&u)), Some(11.3));
        assert_eq!(Metric::Threads.value(None, Some(&u)), Some(40.0));
        assert_eq!(Metric::MajorFaults.value(None, Some(&u)), None);
        // A GPU whose temperature is unknown is left out, not read as 0 °C.
        assert_eq!(Metric::GpuTemp.value(None, Some(&u)), Some(71.0));
        assert_eq!(Metric::Cpu.of(&s), None, "not a sample reading");
        assert_eq!(Metric::Cpu.fmt_value(11.34), "11.3 cores");
        assert_eq!(Metric::GpuTemp.fmt_value(85.0), "85 °C");
        assert!(Metric::GpuMem.per_gpu() && !Metric::Cpu.per_gpu());
    }
}
