//! The samples as compare reads them: per sample its time, RSS, the interval high, pinned
//! and GPU memory.

use provetop_shared::{Record, RecordBody};

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

/// A sample's reading (None for other records).
pub(super) fn reading(r: &Record) -> Option<Reading> {
    match &r.body {
        RecordBody::Sample(s) => Some(Reading {
            t: r.t,
            rss: s.rss,
            high: s.peak.unwrap_or(s.rss).max(s.rss),
            pinned: s.pinned.or(s.pinned_reported),
            gpu: s.gpu_used,
        }),
        _ => None,
    }
}
