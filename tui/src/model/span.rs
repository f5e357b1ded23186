//! The spans a record stream is cut into: a prover phase's ([`PhaseSpan`]) and a proof job's
//! ([`ProofSpan`]), with the memory each saw while open ([`Stats`]), and the union length of
//! such intervals ([`busy_ns`]).
//!
//! A leaf: the domains that keep spans ([`super::spans`], [`super::proofs`]) and the effects
//! that report them ([`super::effects`]) import these types, and this module imports none of
//! theirs.

use provetop_shared::{BatchMode, Phase};

/// Running min/max/mean of one quantity.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Readings.
    pub n: u64,
    pub min: u64,
    pub max: u64,
    /// Sum, for the mean.
    pub sum: u128,
}

impl Stats {
    /// Add a reading.
    pub fn add(&mut self, x: u64) {
        if self.n == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.n += 1;
        self.sum += x as u128;
    }

    /// Fold another set of readings in.
    pub fn merge(&mut self, s: &Stats) {
        if s.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *s;
            return;
        }
        self.min = self.min.min(s.min);
        self.max = self.max.max(s.max);
        self.n += s.n;
        self.sum += s.sum;
    }

    /// Mean, if any reading.
    pub fn mean(&self) -> Option<u64> {
        (self.n > 0).then(|| (self.sum / self.n as u128) as u64)
    }

    /// Minimum, if any reading.
    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }

    /// Maximum, if any reading.
    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }
}

/// One interval of a prover phase (from `phase_started` to `phase_ended`).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSpan {
    pub proof_id: u64,
    pub phase: Phase,
    /// For per-partition phases.
    pub partition: Option<u32>,
    /// Start, ns.
    pub start: u64,
    /// End, ns (None while open).
    pub end: Option<u64>,
    /// Seconds the prover measured (from `phase_ended`).
    pub duration_s: Option<f64>,
    /// RSS seen while open.
    pub rss: Stats,
    /// Pinned host memory seen while open (smaps reading, else the prover's report).
    pub pinned: Stats,
    /// GPU memory used while open.
    pub gpu: Stats,
    /// Read from the child's log lines, not sent by it (`Derived` records).
    pub derived: bool,
    /// It never ended by itself: its proof failed, or the child exited, with it open.
    pub failed: bool,
}

impl PhaseSpan {
    /// A span opening at `start`.
    pub fn open(proof_id: u64, phase: Phase, partition: Option<u32>, start: u64) -> Self {
        PhaseSpan {
            proof_id,
            phase,
            partition,
            start,
            end: None,
            duration_s: None,
            rss: Stats::default(),
            pinned: Stats::default(),
            gpu: Stats::default(),
            derived: false,
            failed: false,
        }
    }

    /// End, or `now` while open.
    pub fn end_or(&self, now: u64) -> u64 {
        self.end.unwrap_or(now).max(self.start)
    }

    /// Whether the span covers time `t` (open spans cover up to `now`).
    pub fn covers(&self, t: u64, now: u64) -> bool {
        self.start <= t && t <= self.end_or(now)
    }

    /// "synthesis p3" / "msm_h".
    pub fn label(&self) -> String {
        match self.partition {
            Some(p) => format!("{} p{p}", self.phase),
            None => self.phase.to_string(),
        }
    }
}

/// One proof job, from `proof_started` to `proof_finished`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProofSpan {
    pub proof_id: u64,
    pub mode: BatchMode,
    /// Sectors in the job.
    pub sectors: u32,
    /// Partitions per sector.
    pub partitions: u32,
    /// Start, ns.
    pub start: u64,
    /// End, ns (None while running).
    pub end: Option<u64>,
    /// Seconds the prover measured.
    pub duration_s: Option<f64>,
    pub ok: Option<bool>,
    pub verified: Option<bool>,
    /// RSS while it ran (interval peaks included).
    pub rss: Stats,
}

/// Total length of the union of `[a, b]` intervals: overlapping ones count once.
pub fn busy_ns(intervals: &[(u64, u64)]) -> u64 {
    let mut v = intervals.to_vec();
    v.sort_unstable();
    let (mut busy, mut reach) = (0u64, 0u64);
    for (a, b) in v {
        let from = a.max(reach);
        if b > from {
            busy += b - from;
        }
        reach = reach.max(b);
    }
    busy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_intervals_count_once() {
        assert_eq!(busy_ns(&[]), 0);
        assert_eq!(busy_ns(&[(0, 10), (5, 15), (20, 25)]), 20);
        assert_eq!(busy_ns(&[(20, 25), (0, 10), (2, 3)]), 15);
    }

    #[test]
    fn merged_stats_are_the_stats_of_all_readings() {
        let (mut a, mut b, mut all) = (Stats::default(), Stats::default(), Stats::default());
        for x in [5, 1, 9] {
            a.add(x);
            all.add(x);
        }
        for x in [12, 0] {
            b.add(x);
            all.add(x);
        }
        a.merge(&b);
        assert_eq!(a, all);
        a.merge(&Stats::default());
        assert_eq!(a, all);
        assert_eq!(Stats::default().max(), None);
    }
}
