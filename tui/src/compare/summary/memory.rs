//! The memory section: peak RSS and interval peak over the selection, the session's floor
//! (the SRS resident between proofs, else the threshold classifier's idle floor), the peak
//! above it, the time spent near the peak ([`OOM_SHARE`]), and pinned and GPU memory where
//! the sampler measured them.

use provetop_shared::metric::Metric;

use super::figure::{Figures, Section, Unit};
use super::readings::Reading;
use super::Selection;

/// Share of the peak above which a session is "exposed to OOM" (`oom_window`).
pub const OOM_SHARE: f64 = 0.9;

/// What the memory rows read from the samples: maxima over the selected ones, the session's
/// floor, and the time near the peak ([`OomWindow`]).
#[derive(Debug, Clone, Default)]
pub(super) struct MemoryInput {
    /// The session has no sample at all.
    pub(super) no_samples: bool,
    pub(super) rss: Option<u64>,
    pub(super) high: Option<u64>,
    pub(super) pinned: Option<u64>,
    pub(super) gpu: Option<u64>,
    pub(super) floor: Option<u64>,
    /// Seconds at or above [`OOM_SHARE`] of the peak (None without a selected sample).
    pub(super) window_s: Option<f64>,
}

impl MemoryInput {
    /// The next selected sample, for the maxima.
    pub(super) fn feed(&mut self, r: &Reading) {
        let max = |m: &mut Option<u64>, v: Option<u64>| {
            if let Some(v) = v {
                *m = Some(m.map_or(v, |m| m.max(v)));
            }
        };
        max(&mut self.rss, Some(r.rss));
        max(&mut self.high, Some(r.high));
        max(&mut self.pinned, r.pinned);
        max(&mut self.gpu, r.gpu);
    }
}

/// Seconds at or above [`OOM_SHARE`] of the peak, one selected sample at a time: each sample
/// lasts until the next one (at most ten sampling intervals, so a gap in the recording does
/// not count), the last one interval.
pub(super) struct OomWindow {
    limit: f64,
    cap: u64,
    interval: u64,
    prev: Option<(u64, bool)>,
    ns: u64,
}

impl OomWindow {
    /// Near `high` (the selection's highest reading); `interval_ns` the sampling interval.
    pub(super) fn new(high: u64, interval_ns: Option<u64>) -> Self {
        OomWindow {
            limit: high as f64 * OOM_SHARE,
            cap: interval_ns.unwrap_or(0).saturating_mul(10),
            interval: interval_ns.unwrap_or(0),
            prev: None,
            ns: 0,
        }
    }

    /// The next selected sample: its time and its highest reading.
    pub(super) fn feed(&mut self, t: u64, high: u64) {
        if let Some((t0, true)) = self.prev {
            self.ns += t.saturating_sub(t0).min(self.cap);
        }
        self.prev = Some((t, (high as f64) >= self.limit));
    }

    /// The seconds.
    pub(super) fn seconds(&self) -> f64 {
        let last = if matches!(self.prev, Some((_, true))) {
            self.interval
        } else {
            0
        };
        (self.ns + last) as f64 / 1e9
    }
}

/// The memory rows of the selected samples (`m`) and proofs (`chosen` of them, their
/// peaks' median `median_peak`).
pub(super) fn memory(
    f: &mut Figures,
    m: &MemoryInput,
    chosen: usize,
    median_peak: Option<u64>,
    selection: &Selection,
) {
    // Why a row has no value: no samples at all, else `why`.
    let lacking = |why: &str| -> String {
        if m.no_samples {
            "no samples".to_string()
        } else {
            why.to_string()
        }
    };
    let none = |what: &str| lacking(&format!("no samples {what}"));
    let during = if selection.is_all() {
        String::new()
    } else {
        "while the selected proofs ran".to_string()
    };
    let (rss, high) = (m.rss, m.high);
    let value = |v: Option<u64>, what: &str| v.map(|b| b as f64).ok_or_else(|| none(what));
    f.push(
        Metric::Rss.name(),
        "peak RSS",
        Section::Memory,
        Unit::Bytes,
        value(rss, &during),
        "no samples",
        false,
    );
    f.push(
        Metric::Peak.name(),
        "interval peak (VmHWM between samples)",
        Section::Memory,
        Unit::Bytes,
        value(high, &during),
        "no samples",
        false,
    );
    let floor = m.floor;
    f.push(
        "floor",
        "floor between proofs (SRS resident)",
        Section::Memory,
        Unit::Bytes,
        floor
            .map(|b| b as f64)
            .ok_or_else(|| lacking("no floor (no SRS ready, no idle_post samples)")),
        "no floor",
        false,
    );
    // Above the floor: the median proof's peak (classify's mode table), else the peak.
    let above = match (floor, median_peak) {
        (None, _) => Err("no floor".to_string()),
        (Some(fl), Some(peak)) => Ok(peak.saturating_sub(fl) as f64),
        (Some(fl), None) => high
            .map(|h| h.saturating_sub(fl) as f64)
            .ok_or_else(|| none(&during)),
    };
    f.push(
        "above_floor",
        if median_peak.is_none() {
            "peak above the floor"
        } else {
            "median proof's peak above the floor"
        },
        Section::Memory,
        Unit::Bytes,
        above,
        "no floor",
        false,
    );
    let window = high.and(m.window_s);
    f.push(
        "oom_window",
        "time above 90 % of the peak",
        Section::Memory,
        Unit::Seconds,
        window.ok_or_else(|| none(&during)),
        "no samples",
        false,
    );
    if chosen > 0 {
        f.push(
            "oom_window_per_proof",
            "time above 90 % of the peak, per proof",
            Section::Memory,
            Unit::Seconds,
            window
                .map(|w| w / chosen as f64)
                .ok_or_else(|| none(&during)),
            "no proofs",
            false,
        );
    }
    // Readings a sampler may not take: without them the row is "not measured".
    let measured = [
        (Metric::Pinned, "pinned host memory, peak", m.pinned),
        (Metric::Gpu, "GPU memory, peak", m.gpu),
    ];
    for (metric, label, peak) in measured {
        f.push(
            metric.name(),
            label,
            Section::Memory,
            Unit::Bytes,
            peak.map(|b| b as f64)
                .ok_or_else(|| lacking("not measured")),
            "not measured",
            false,
        );
    }
}
