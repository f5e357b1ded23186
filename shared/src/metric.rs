//! The one table of what provetop measures and alerts on: each metric's name (as alert rules,
//! the chart's cursor box and the metrics documentation spell it), its unit, where its value
//! comes from ([`Read`]: every [`Sample`], the latest [`Usage`] record, each GPU of either, or
//! the alert engine's own folds), what a percent of it is measured against ([`Limit`]),
//! whether the chart's series keeps it, its column in the exported CSV and its Prometheus
//! family ([`Prom`]). The series, the alert rules, the export, the metrics endpoint and the
//! legend all read this table.
//!
//! Per-GPU metrics (`gpu_util`, `gpu_mem`, `gpu_temp`) have one value per GPU; as one number
//! (a rule without `[N]`, the cursor box) they are the maximum over the GPUs. A reading the
//! record does not have is `None`, never 0.//!
//! The parts: `unit.rs` the units and how values are written and read; `table.rs` the table's
//! rows; this file the metrics, the readers, the CSV columns and the lookups over the table.

mod table;
mod unit;

use crate::record::{GpuDetail, GpuReading, Kernel, Psi, PsiResource, Sample, Usage};

pub use table::TABLE;
pub use unit::Unit;

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
    /// The limit that binds the tree, bytes (kernel record): the least room among its
    /// cgroup limits up the hierarchy and the host's MemAvailable.
    MemLimit,
    /// Memory pressure, `some` line's avg10, percent (kernel record: the tree's cgroup's where
    /// it has one, else the host's).
    PsiMemorySome,
    /// Memory pressure, `full` line's avg10, percent.
    PsiMemoryFull,
    /// CPU pressure, `some` line's avg10, percent.
    PsiCpuSome,
    /// I/O pressure, `some` line's avg10, percent.
    PsiIoSome,
    /// I/O pressure, `full` line's avg10, percent.
    PsiIoFull,
    /// Clock slowdown reasons active on a GPU (power cap, thermal, hardware; usage record; per
    /// GPU).
    GpuThrottled,
    /// Uncorrected ECC errors of a GPU since the driver loaded (usage record; per GPU).
    GpuEccUncorrected,
    /// PCIe replays of a GPU since the driver loaded (usage record; per GPU).
    GpuPcieReplays,
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
    /// The latest kernel record (a few a second).
    Kernel(fn(&Kernel) -> Option<f64>),
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

/// The pressure the tree is under: its cgroup's where the kernel keeps it per cgroup (v2),
/// else the host's.
pub fn psi_of(k: &Kernel) -> Option<&Psi> {
    k.psi_cgroup.as_ref().or(k.psi_host.as_ref())
}

/// One pressure line's avg10 of the tree's pressure: `pick` chooses the resource, `full` the
/// line.
pub fn psi_avg10(k: &Kernel, pick: fn(&Psi) -> Option<&PsiResource>, full: bool) -> Option<f64> {
    let r = pick(psi_of(k)?)?;
    let line = if full { r.full.as_ref()? } else { &r.some };
    Some(line.avg10)
}

/// What a percent threshold (`rss > 90%`) is a percent of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// What the tree's RSS can reach at each sample: its RSS plus the room before the limit
    /// that binds ([`crate::limit::reach`]).
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
    /// Its family on the metrics endpoint; None: not exported as a gauge of its own.
    pub prom: Option<Prom>,
}

/// A metric's Prometheus family: `provetop_` + its name + `_` + its unit's Prometheus name
/// ([`Unit::prometheus`]: `provetop_rss_bytes`, `provetop_gpu_utilization_ratio`). A per-GPU
/// metric's family has one series per GPU.
#[derive(Debug, Clone, Copy)]
pub struct Prom {
    /// The family's name, without the prefix and the unit.
    pub name: &'static str,
    /// Its help text where it differs from the row's (a scrape has one GPU a series and no
    /// rule syntax to explain); None: the row's.
    pub help: Option<&'static str>,
}

impl Def {
    /// A row with no help text, CSV column, legend label, percent limit or Prometheus family
    /// of its own; the builders below add them.
    pub const fn new(metric: Metric, name: &'static str, unit: Unit, read: Read) -> Def {
        Def {
            metric,
            name,
            unit,
            help: "",
            read,
            csv: None,
            legend: None,
            limit: None,
            prom: None,
        }
    }

    /// A memory row: bytes, and `N%` of the memory limit.
    pub const fn memory(metric: Metric, name: &'static str, read: Read) -> Def {
        Def::new(metric, name, Unit::Bytes, read).limit(Limit::Memory)
    }

    /// What it is, for help texts.
    pub const fn help(mut self, help: &'static str) -> Def {
        self.help = help;
        self
    }

    /// Exported as CSV column `col`, holding the row's own reading.
    pub const fn csv(self, col: &'static str) -> Def {
        let read = self.read;
        self.csv_of(col, read)
    }

    /// Exported as CSV column `col`, holding `read`.
    pub const fn csv_of(mut self, col: &'static str, read: Read) -> Def {
        self.csv = Some((col, read));
        self
    }

    /// In the chart's legend as `label`, giving way at `rank`.
    pub const fn legend(mut self, label: &'static str, rank: u8) -> Def {
        self.legend = Some((label, rank));
        self
    }

    /// `N%` in a rule is a percent of `limit`.
    pub const fn limit(mut self, limit: Limit) -> Def {
        self.limit = Some(limit);
        self
    }

    /// Its own Prometheus family, `name`, with the row's help.
    pub const fn prom(self, name: &'static str) -> Def {
        self.prom_family(name, None)
    }

    /// Its own Prometheus family, `name`, with a help of its own.
    pub const fn prom_with(self, name: &'static str, help: &'static str) -> Def {
        self.prom_family(name, Some(help))
    }

    const fn prom_family(mut self, name: &'static str, help: Option<&'static str>) -> Def {
        self.prom = Some(Prom { name, help });
        self
    }

    /// The help text of its Prometheus family (the row's unless the family has its own).
    pub fn prom_help(&self) -> &'static str {
        self.prom.and_then(|p| p.help).unwrap_or(self.help)
    }
}

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

/// The exported CSV's kernel columns, after the GPU columns, in sessions that have kernel
/// records (carried forward from the latest).
pub const KERNEL_CSV_COLUMNS: [Metric; 6] = [
    Metric::MemLimit,
    Metric::PsiMemorySome,
    Metric::PsiMemoryFull,
    Metric::PsiCpuSome,
    Metric::PsiIoSome,
    Metric::PsiIoFull,
];

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

    /// Its value in a kernel record (`None` for metrics a kernel record does not hold).
    pub fn of_kernel(self, k: &Kernel) -> Option<f64> {
        match self.def().read {
            Read::Kernel(f) => f(k).filter(|v| v.is_finite()),
            _ => None,
        }
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
            .chain(&KERNEL_CSV_COLUMNS)
            .all(|m| m.def().csv.is_some()));
        assert!(GPU_CSV_COLUMNS.iter().all(|m| m.per_gpu()));
        assert_eq!(Metric::parse("mem_avail"), None);
    }

    #[test]
    fn prometheus_families_are_unique_and_named_for_their_unit() {
        let families: Vec<&str> = TABLE
            .iter()
            .filter_map(|d| d.prom)
            .map(|p| p.name)
            .collect();
        let mut unique = families.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), families.len(), "{families:?}");
        // The exported name is the family's and its unit's; a percent is exported as a ratio.
        let util = Metric::GpuUtil.def();
        assert_eq!(util.prom.map(|p| p.name), Some("gpu_utilization"));
        assert_eq!(util.unit.prometheus(), (Some("ratio"), 100.0));
        assert_eq!(Metric::Threads.unit().prometheus().0, None);
        // Without a help of its own, the family's is the row's.
        assert_eq!(Metric::Rss.def().prom_help(), Metric::Rss.def().help);
        assert_ne!(util.prom_help(), util.help);
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
