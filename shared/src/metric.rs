//! The one table of what provetop measures and alerts on: each metric's name (as alert rules,
//! the chart's cursor box and the metrics documentation spell it), its unit, how to read it
//! from a [`Sample`], whether the chart's series keeps it, and its column in the exported
//! CSV. The series, the alert rules, the export and the legend all read this table.

use crate::record::Sample;
use crate::units::{fmt_bytes, fmt_secs};

/// What a metric's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Seconds,
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
}

/// How many metrics the chart's series keeps (the first variants of [`Metric`]).
pub const SERIES: usize = 10;

/// How a metric is read from a sample.
pub type Reader = fn(&Sample) -> Option<u64>;

/// A metric's row in the table.
#[derive(Debug, Clone, Copy)]
pub struct Def {
    pub metric: Metric,
    /// The name rules and the cursor box use.
    pub name: &'static str,
    pub unit: Unit,
    /// What it is, for help texts.
    pub help: &'static str,
    /// Its value in a sample (None: not a sample reading, or not in this sample).
    pub read: Reader,
    /// The exported CSV column (KiB) and the reading it holds.
    pub csv: Option<(&'static str, Reader)>,
    /// The chart legend's label and its rank there (the highest rank gives way first on a
    /// narrow screen); None: not in the legend.
    pub legend: Option<(&'static str, u8)>,
}

fn none(_: &Sample) -> Option<u64> {
    None
}

/// Every metric, in [`Metric`] order.
pub const TABLE: [Def; 15] = [
    Def {
        metric: Metric::Rss,
        name: "rss",
        unit: Unit::Bytes,
        help: "resident memory of the process tree (VmRSS)",
        read: |s| Some(s.rss),
        csv: Some(("rss_kb", |s| Some(s.rss))),
        legend: Some(("rss", 0)),
    },
    Def {
        metric: Metric::Peak,
        name: "peak",
        unit: Unit::Bytes,
        help: "highest RSS since the previous sample (VmHWM, reset every sample)",
        read: |s| s.peak,
        csv: Some(("peak_kb", |s| s.peak)),
        legend: Some(("▲", 1)),
    },
    Def {
        metric: Metric::Anon,
        name: "anon",
        unit: Unit::Bytes,
        help: "anonymous resident memory (RssAnon)",
        read: |s| s.anon,
        csv: Some(("anon_kb", |s| s.anon)),
        legend: Some(("anon", 4)),
    },
    Def {
        metric: Metric::File,
        name: "file",
        unit: Unit::Bytes,
        help: "file-backed resident memory (RssFile)",
        read: |s| s.file,
        csv: Some(("file_kb", |s| s.file)),
        legend: Some(("file", 7)),
    },
    Def {
        metric: Metric::Shmem,
        name: "shmem",
        unit: Unit::Bytes,
        help: "shared resident memory (RssShmem)",
        read: |s| s.shmem,
        csv: Some(("shmem_kb", |s| s.shmem)),
        legend: Some(("shm", 6)),
    },
    Def {
        metric: Metric::Pinned,
        name: "pinned",
        unit: Unit::Bytes,
        help: "CUDA pinned host memory and mlocked memory (mapping table, smaps-checked; alerts take the larger of it and the prover's report)",
        read: |s| s.pinned,
        // The CSV's one pinned column: measured, else what the prover reported.
        csv: Some(("pinned_kb", |s| s.pinned.or(s.pinned_reported))),
        legend: Some(("pin", 3)),
    },
    Def {
        metric: Metric::PinnedReported,
        name: "pinned_reported",
        unit: Unit::Bytes,
        help: "pinned host memory the prover reports (memory_report)",
        read: |s| s.pinned_reported,
        csv: None,
        legend: Some(("pin*", 5)),
    },
    Def {
        metric: Metric::Gpu,
        name: "gpu",
        unit: Unit::Bytes,
        help: "GPU memory used by the tree (NVML)",
        read: |s| s.gpu_used,
        csv: Some(("gpu_kb", |s| s.gpu_used)),
        legend: Some(("gpu", 2)),
    },
    Def {
        metric: Metric::MemAvailable,
        name: "mem_available",
        unit: Unit::Bytes,
        help: "MemAvailable of the system",
        read: |s| s.mem_available,
        csv: Some(("mem_available_kb", |s| s.mem_available)),
        legend: None,
    },
    Def {
        metric: Metric::Swap,
        name: "swap",
        unit: Unit::Bytes,
        help: "swapped-out memory of the tree (VmSwap)",
        read: |s| s.swap,
        csv: Some(("swap_kb", |s| s.swap)),
        legend: None,
    },
    Def {
        metric: Metric::Locked,
        name: "locked",
        unit: Unit::Bytes,
        help: "mlocked memory of the tree (VmLck)",
        read: |s| s.locked,
        csv: Some(("locked_kb", |s| s.locked)),
        legend: None,
    },
    Def {
        metric: Metric::PhaseDuration,
        name: "phase_duration",
        unit: Unit::Seconds,
        help: "seconds the longest-running open phase has run",
        read: none,
        csv: None,
        legend: None,
    },
    Def {
        metric: Metric::EventAge,
        name: "event_age",
        unit: Unit::Seconds,
        help: "seconds since the prover's last event",
        read: none,
        csv: None,
        legend: None,
    },
    Def {
        metric: Metric::PredictedFree,
        name: "predicted_free",
        unit: Unit::Bytes,
        help: "memory expected to be left when the running proof peaks",
        read: none,
        csv: None,
        legend: None,
    },
    Def {
        metric: Metric::TimeToOom,
        name: "time_to_oom",
        unit: Unit::Seconds,
        help: "seconds until memory runs out at the RSS growth rate of the last seconds",
        read: none,
        csv: None,
        legend: None,
    },
];

/// The exported CSV's metric columns, in column order (the seed's two first).
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

    /// Its value in a sample.
    pub fn of(self, s: &Sample) -> Option<u64> {
        (self.def().read)(s)
    }

    /// Index into the series' value arrays (for the first [`SERIES`] metrics).
    pub fn idx(self) -> usize {
        self as usize
    }

    /// Whether values are seconds (else bytes).
    pub fn is_duration(self) -> bool {
        self.def().unit == Unit::Seconds
    }

    /// A value of this metric in words: "1.2 GiB", "-300 B" (short), "1m30s".
    pub fn fmt_value(self, v: f64) -> String {
        if self.is_duration() {
            fmt_secs(v)
        } else if v < 0.0 {
            // Only predicted_free goes below zero: short by that much.
            format!("-{}", fmt_bytes(-v as u64))
        } else {
            fmt_bytes(v as u64)
        }
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
        assert!(CSV_COLUMNS.iter().all(|m| m.def().csv.is_some()));
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
}
