//! Duration histograms: per-bucket counts over fixed [`DURATION_BUCKETS`] (and `+Inf`), a sum
//! and a count. A negative or non-finite duration is not counted.

/// Upper bounds of the duration histograms, seconds: a 10 ms phase to an hour-long proof.
pub const DURATION_BUCKETS: [f64; 16] = [
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
    3600.0,
];

/// A histogram of durations over [`DURATION_BUCKETS`] (and `+Inf`).
#[derive(Debug, Clone, Default)]
pub(super) struct Hist {
    /// Per bucket, not cumulative; the last is `+Inf`.
    counts: [u64; DURATION_BUCKETS.len() + 1],
    pub(super) sum: f64,
    pub(super) count: u64,
}

impl Hist {
    /// Count one duration, seconds.
    pub(super) fn observe(&mut self, secs: f64) {
        if !(secs.is_finite() && secs >= 0.0) {
            return;
        }
        self.counts[DURATION_BUCKETS.partition_point(|b| *b < secs)] += 1;
        self.sum += secs;
        self.count += 1;
    }

    /// (upper bound, count in that bucket alone) per bucket, `+Inf` last.
    pub(super) fn buckets(&self) -> [(f64, u64); DURATION_BUCKETS.len() + 1] {
        let mut out = [(f64::INFINITY, 0); DURATION_BUCKETS.len() + 1];
        for (i, o) in out.iter_mut().enumerate() {
            *o = (
                DURATION_BUCKETS.get(i).copied().unwrap_or(f64::INFINITY),
                self.counts[i],
            );
        }
        out
    }
}
