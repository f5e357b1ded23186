//! The samples as compare reads them: per sample its time, RSS, the interval high, pinned
//! and GPU memory, in record order; and the median sampling interval.

use provetop_shared::RecordBody;

use crate::store::Store;

/// A sample's readings that compare uses.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reading {
    pub(super) t: u64,
    pub(super) rss: u64,
    /// The highest of RSS and the interval peak (VmHWM between samples).
    pub(super) high: u64,
    pub(super) pinned: Option<u64>,
    pub(super) gpu: Option<u64>,
}

/// The store's samples, in record order.
pub(super) fn readings(store: &Store) -> Vec<Reading> {
    store
        .records()
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => Some(Reading {
                t: r.t,
                rss: s.rss,
                high: s.peak.unwrap_or(s.rss).max(s.rss),
                pinned: s.pinned.or(s.pinned_reported),
                gpu: s.gpu_used,
            }),
            _ => None,
        })
        .collect()
}

/// The median gap between consecutive readings, ns (None without two).
pub(super) fn median_gap(r: &[Reading]) -> Option<u64> {
    let mut gaps: Vec<u64> = r
        .windows(2)
        .map(|w| w[1].t.saturating_sub(w[0].t))
        .collect();
    if gaps.is_empty() {
        return None;
    }
    // The element a sort would put there, in linear time (a million samples).
    let mid = gaps.len() / 2;
    Some(*gaps.select_nth_unstable(mid).1)
}
