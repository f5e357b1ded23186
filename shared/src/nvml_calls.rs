//! What provetop's own NVML calls cost, per call kind: the usage records carry it
//! ([`crate::Usage::nvml_calls`]), `/metrics` exports it as a histogram, the closing note sums it.

use serde::{Deserialize, Serialize};

/// Upper bounds of the NVML call-time histograms, seconds (10 µs to half a second; `+Inf`
/// after).
pub const NVML_CALL_BUCKETS: [f64; 12] = [
    1e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 1e-1, 0.5,
];

/// One kind of NVML call provetop makes, timed: how many, how long in all, the longest, and
/// a histogram over [`NVML_CALL_BUCKETS`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NvmlCalls {
    /// The call, by NVML's name less its `nvmlDevice` prefix (`GetMemoryInfo`, …).
    pub call: String,
    pub count: u64,
    /// Nanoseconds in all.
    pub sum_ns: u64,
    /// The longest, nanoseconds.
    pub max_ns: u64,
    /// Calls per bucket of [`NVML_CALL_BUCKETS`], not cumulative, `+Inf` last.
    pub buckets: Vec<u64>,
}

impl NvmlCalls {
    /// An empty record of `call`.
    pub fn new(call: &str) -> NvmlCalls {
        NvmlCalls {
            call: call.to_string(),
            buckets: vec![0; NVML_CALL_BUCKETS.len() + 1],
            ..NvmlCalls::default()
        }
    }

    /// Count one call that took `ns`.
    pub fn observe(&mut self, ns: u64) {
        let secs = ns as f64 / 1e9;
        let i = NVML_CALL_BUCKETS.partition_point(|b| *b < secs);
        if self.buckets.len() != NVML_CALL_BUCKETS.len() + 1 {
            self.buckets = vec![0; NVML_CALL_BUCKETS.len() + 1];
        }
        self.buckets[i] += 1;
        self.count += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// The mean, nanoseconds (`None` before any call).
    pub fn mean_ns(&self) -> Option<u64> {
        (self.count > 0).then(|| self.sum_ns / self.count)
    }
}
