//! Memory samples: the series, the latest full sample, and the seed's threshold phases for
//! children without events.

use provetop_shared::classify::{Run, ThresholdPhase};
use provetop_shared::Sample;

use super::effects::{Effect, Effects};
use super::{push_bounded, Model};
use crate::series::{Bucket, Metric, Point, Reading};

/// Most threshold runs kept.
pub const MAX_RUNS: usize = 50_000;

impl Model {
    pub(super) fn on_sample(&mut self, t: u64, s: &Sample, fx: &mut Effects) {
        let mut p = Point::from_sample(t, s);
        // The prover's own pinned report is an event; carry it into the series when the
        // sampler did not fill it, so the chart can draw it.
        if p.get(Metric::PinnedReported).is_none() {
            p.set(Metric::PinnedReported, self.prover.report.map(|r| r.pinned));
        }
        self.series.push(p);
        let pinned = s.pinned.or(p.get(Metric::PinnedReported));
        self.spans_observe(s, pinned);
        self.proofs_observe(s.peak.unwrap_or(s.rss).max(s.rss));
        if let Some(run) = self.classifier.push(t, s.rss) {
            push_bounded(&mut self.runs, run, MAX_RUNS);
            if let Some(cur) = self.classifier.current() {
                fx.push(Effect::ThresholdPhaseChanged(cur.phase));
            }
        }
        self.last_sample = Some(s.clone());
    }

    /// The newest sample, compactly.
    pub fn last_point(&self) -> Option<&Point> {
        self.series.last()
    }

    /// The reading at time `t` (see [`crate::series::Series::at`]).
    pub fn value_at(&self, t: u64) -> Option<Reading> {
        self.series.at(t)
    }

    /// Per-column min/max of every metric over `[t0, t1)` (see
    /// [`crate::series::Series::columns`]).
    pub fn columns(&self, t0: u64, t1: u64, cols: usize) -> Vec<Bucket> {
        self.series.columns(t0, t1, cols)
    }

    /// The threshold phase at time `t` (from the closed runs and the one in progress).
    pub fn threshold_phase_at(&self, t: u64) -> Option<ThresholdPhase> {
        if let Some(cur) = self.classifier.current() {
            if t >= cur.start {
                return Some(cur.phase);
            }
        }
        let i = self.runs.partition_point(|r| r.end < t);
        // A run ends at its last sample; time between that and the next run's start belongs
        // to the earlier run.
        match self.runs.get(i) {
            Some(r) if r.start <= t => Some(r.phase),
            _ => i.checked_sub(1).map(|j| self.runs[j].phase),
        }
    }

    /// Threshold runs (closed and the one in progress) overlapping `[t0, t1]`.
    pub fn runs_in(&self, t0: u64, t1: u64) -> Vec<Run> {
        let i = self.runs.partition_point(|r| r.end < t0).saturating_sub(1);
        let mut out: Vec<Run> = self
            .runs
            .range(i..)
            .filter(|r| r.start <= t1)
            .cloned()
            .collect();
        out.extend(self.classifier.current().cloned());
        // Each run lasts until the next one starts, so the timeline has no gaps.
        for k in 0..out.len().saturating_sub(1) {
            out[k].end = out[k].end.max(out[k + 1].start);
        }
        out
    }
}
