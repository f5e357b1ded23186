//! The memory section: peak RSS and interval peak over the selection, the session's floor
//! (the SRS resident between proofs, else the threshold classifier's idle floor), the peak
//! above it, the time spent near the peak ([`OOM_SHARE`]), and pinned and GPU memory where
//! the sampler measured them.

use provetop_shared::classify::summarize;
use provetop_shared::metric::Metric;

use super::figure::{Figures, Section, Unit};
use super::readings::Reading;
use super::Selection;
use crate::model::ProofSpan;
use crate::store::Store;

/// Share of the peak above which a session is "exposed to OOM" (`oom_window`).
pub const OOM_SHARE: f64 = 0.9;

/// The memory rows of `sel` (the selected samples) and `chosen` (the selected proofs).
pub(super) fn memory(
    f: &mut Figures,
    store: &Store,
    series: &[(u64, u64)],
    sel: &[Reading],
    chosen: &[&ProofSpan],
    interval_ns: Option<u64>,
    selection: &Selection,
) {
    // Why a row has no value: no samples at all, else `why`.
    let lacking = |why: &str| -> String {
        if series.is_empty() {
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
    let max_of =
        |get: fn(&Reading) -> Option<u64>| -> Option<u64> { sel.iter().filter_map(get).max() };
    let rss = max_of(|r| Some(r.rss));
    let high = max_of(|r| Some(r.high));
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
    // The floor belongs to the session, not to a selection: the SRS resident between proofs
    // (as classify's mode table has it), else the seed's idle floor by thresholds.
    let floor = store
        .srs_floor()
        .or_else(|| summarize(store.thresholds(), series).and_then(|s| s.idle_floor));
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
    let above = match floor {
        None => Err("no floor".to_string()),
        Some(fl) if !chosen.is_empty() => {
            let mut peaks: Vec<u64> = chosen.iter().map(|p| p.rss.max).collect();
            peaks.sort_unstable();
            Ok(peaks[peaks.len() / 2].saturating_sub(fl) as f64)
        }
        Some(fl) => high
            .map(|h| h.saturating_sub(fl) as f64)
            .ok_or_else(|| none(&during)),
    };
    f.push(
        "above_floor",
        if chosen.is_empty() {
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
    // Seconds at or above 90 % of the peak: each sample lasts until the next one (at most
    // ten sampling intervals, so a gap in the recording does not count), the last one interval.
    let window = high.map(|h| {
        let limit = h as f64 * OOM_SHARE;
        let cap = interval_ns.unwrap_or(0).saturating_mul(10);
        let mut ns = 0u64;
        for (i, r) in sel.iter().enumerate() {
            if (r.high as f64) < limit {
                continue;
            }
            let dt = match sel.get(i + 1) {
                Some(n) => n.t.saturating_sub(r.t).min(cap),
                None => interval_ns.unwrap_or(0),
            };
            ns += dt;
        }
        ns as f64 / 1e9
    });
    f.push(
        "oom_window",
        "time above 90 % of the peak",
        Section::Memory,
        Unit::Seconds,
        window.ok_or_else(|| none(&during)),
        "no samples",
        false,
    );
    if !chosen.is_empty() {
        f.push(
            "oom_window_per_proof",
            "time above 90 % of the peak, per proof",
            Section::Memory,
            Unit::Seconds,
            window
                .map(|w| w / chosen.len() as f64)
                .ok_or_else(|| none(&during)),
            "no proofs",
            false,
        );
    }
    // Readings a sampler may not take: without them the row is "not measured".
    let measured = [
        (
            Metric::Pinned,
            "pinned host memory, peak",
            max_of(|r| r.pinned),
        ),
        (Metric::Gpu, "GPU memory, peak", max_of(|r| r.gpu)),
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
