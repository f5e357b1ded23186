//! The seed's threshold phases of RSS, for children without events ([`ThresholdRuns`]).

use provetop_shared::classify::{Classifier, Run, ThresholdPhase, Thresholds};

use super::bounded::History;
use super::effects::{Effect, Effects};

/// Most threshold runs kept.
pub const MAX_RUNS: usize = 50_000;

/// The threshold classification of a stream's RSS: the run in progress and the closed ones.
#[derive(Debug, Clone)]
pub struct ThresholdRuns {
    classifier: Classifier,
    /// Closed runs, oldest first.
    closed: History<Run>,
}

impl ThresholdRuns {
    /// Closed runs kept.
    pub fn kept(&self) -> usize {
        self.closed.len()
    }

    pub fn new(thresholds: Thresholds) -> Self {
        ThresholdRuns {
            classifier: Classifier::new(thresholds),
            closed: History::new(),
        }
    }

    /// The RSS of a sample at `t`.
    pub fn apply(&mut self, t: u64, rss: u64, fx: &mut Effects) {
        if let Some(run) = self.classifier.push(t, rss) {
            self.closed.push_bounded(run, MAX_RUNS);
            if let Some(cur) = self.classifier.current() {
                fx.push(Effect::ThresholdPhaseChanged(cur.phase));
            }
        }
    }

    /// The run in progress.
    pub fn current(&self) -> Option<&Run> {
        self.classifier.current()
    }

    /// The threshold phase at time `t` (from the closed runs and the one in progress).
    pub fn phase_at(&self, t: u64) -> Option<ThresholdPhase> {
        if let Some(cur) = self.classifier.current() {
            if t >= cur.start {
                return Some(cur.phase);
            }
        }
        let i = self.closed.partition_point(|r| r.end < t);
        // A run ends at its last sample; time between that and the next run's start belongs
        // to the earlier run.
        match self.closed.get(i) {
            Some(r) if r.start <= t => Some(r.phase),
            _ => i.checked_sub(1).map(|j| self.closed[j].phase),
        }
    }

    /// Runs (closed and the one in progress) overlapping `[t0, t1]`.
    pub fn overlapping(&self, t0: u64, t1: u64) -> Vec<Run> {
        let i = self
            .closed
            .partition_point(|r| r.end < t0)
            .saturating_sub(1);
        let mut out: Vec<Run> = self
            .closed
            .from_index(i)
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
