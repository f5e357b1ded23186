//! A rule's reading and its threshold on one record.
//!
//! [`Input`] says which records a rule is judged on: memory and per-GPU sample readings on
//! samples, the usage metrics on usage records (and on a child's start or exit, which takes
//! them away), the durations on every record, the forecasts on samples only. The reading is
//! the metric's value from the record, or the engine's own: the longest-running open phase,
//! the time since the last event while the prover should be working, the memory forecast,
//! and the larger of measured and reported pinned memory. A per-GPU rule reads the GPU it
//! names or the one nearest its threshold. Anything the record does not have is `None`,
//! never 0.

use crate::limit;
use crate::metric::{Limit, Read};
use crate::protocol::ProverState;
use crate::{Kernel, Sample, Usage};

use super::super::rule::{Metric, Rule};
use super::AlertEngine;

impl AlertEngine {
    /// The longest-running open phase at `t`: (seconds, phase name).
    fn phase_running(&self, t: u64) -> Option<(f64, String)> {
        self.phases
            .iter()
            .min_by_key(|(_, &start)| start)
            .map(|((_, phase, part), &start)| {
                let name = match part {
                    Some(p) => format!("{phase} (partition {p})"),
                    None => phase.to_string(),
                };
                (t.saturating_sub(start) as f64 / 1e9, name)
            })
    }

    /// The rule's reading at `t` and its threshold: (value, what it is of), threshold. Either
    /// is `None` when unknown.
    pub(super) fn judge(
        &self,
        rule: &Rule,
        t: u64,
        input: &Input,
    ) -> (Option<(f64, Option<String>)>, Option<f64>) {
        let m = rule.metric;
        let (s, u) = match input {
            Input::Sample(s) => (Some(*s), None),
            Input::Usage(u) => (None, Some(*u)),
            _ => (None, None),
        };
        if let Read::Kernel(_) = m.def().read {
            let k = match input {
                Input::Kernel(k) => Some(*k),
                _ => None,
            };
            let reading = k.and_then(|k| m.of_kernel(k)).map(|v| (v, None));
            let limit = match m.def().limit {
                Some(Limit::Memory) => s.and_then(limit::reach),
                _ => None,
            };
            return (reading, rule.threshold_for(limit));
        }
        let def = m.def();
        if def.read.per_gpu() {
            return self.judge_gpus(rule, def.read, s, u);
        }
        let limit = match def.limit {
            Some(Limit::Memory) => s.and_then(limit::reach),
            // No core online is no reading of them.
            Some(Limit::HostCores) => u.map(|u| u64::from(u.host_ncpu)).filter(|n| *n > 0),
            Some(Limit::GpuTotal) | None => None,
        };
        let thr = rule.threshold_for(limit);
        let reading = match m {
            Metric::PhaseDuration => self.phase_running(t).map(|(v, n)| (v, Some(n))),
            Metric::EventAge => {
                // Silence is a hang only when there is work to do.
                let working =
                    self.prover_state == Some(ProverState::Proving) || !self.in_flight.is_empty();
                working
                    .then_some(self.last_event)
                    .flatten()
                    .map(|l| (t.saturating_sub(l) as f64 / 1e9, None))
            }
            Metric::PredictedFree => {
                s.and_then(|s| self.forecast.predicted_free(s).map(|(v, w)| (v, Some(w))))
            }
            Metric::TimeToOom => {
                s.and_then(|s| self.forecast.time_to_oom(s).map(|(v, w)| (v, Some(w))))
            }
            // The larger of what smaps measured and what the prover reported.
            Metric::Pinned => {
                s.and_then(
                    |s| match (s.pinned, s.pinned_reported.or(self.reported_pinned)) {
                        (None, None) => None,
                        (a, b) => Some((a.unwrap_or(0).max(b.unwrap_or(0)) as f64, None)),
                    },
                )
            }
            // A percent of what the tree can reach names the limit that binds.
            _ if rule.is_relative() && def.limit == Some(Limit::Memory) => {
                let named = s
                    .and_then(limit::room)
                    .map(|r| limit::name(r.bound, self.forecast.binding()));
                m.value(s, u).map(|v| (v, named))
            }
            _ => m.value(s, u).map(|v| (v, None)),
        };
        (reading, thr)
    }

    /// A per-GPU metric: the named GPU's reading, or the highest over the GPUs (for a percent
    /// of each GPU's memory, the GPU fullest for its size), said which GPU it was.
    fn judge_gpus(
        &self,
        rule: &Rule,
        read: Read,
        s: Option<&Sample>,
        u: Option<&Usage>,
    ) -> (Option<(f64, Option<String>)>, Option<f64>) {
        let per_limit = rule.limit() == Some(Limit::GpuTotal);
        // (index, value, threshold) per GPU; a GPU without a known total has no percent.
        let mut gpus: Vec<(u32, f64, Option<f64>)> = read
            .per_gpu_values(s, u)
            .into_iter()
            .filter(|(i, v)| v.is_finite() && rule.gpu.is_none_or(|g| g == *i))
            .map(|(i, v)| {
                let total = per_limit
                    .then(|| s?.gpus.iter().find(|g| g.index == i).map(|g| g.total))
                    .flatten()
                    .filter(|t| *t > 0);
                (i, v, rule.threshold_for(total))
            })
            .collect();
        // The value that decides: the largest share of its threshold when thresholds differ
        // per GPU, else the largest value.
        let key = |g: &(u32, f64, Option<f64>)| match (per_limit, g.2) {
            (true, Some(th)) if th > 0.0 => g.1 / th,
            (true, _) => f64::NEG_INFINITY,
            (false, _) => g.1,
        };
        gpus.sort_by(|a, b| key(a).total_cmp(&key(b)));
        let Some(&(i, v, th)) = gpus.last() else {
            return (None, rule.threshold_for(None));
        };
        // Which GPU, where the record has several (known or not).
        let n = match read {
            Read::GpuSample(_) => s.map_or(0, |s| s.gpus.len()),
            _ => u.map_or(0, |u| u.gpus.len()),
        };
        let what = (rule.gpu.is_none() && n > 1).then(|| format!("GPU {i}"));
        (Some((v, what)), th)
    }
}

/// The record a rule is judged on.
pub(super) enum Input<'a> {
    Sample(&'a Sample),
    Usage(&'a Usage),
    Kernel(&'a Kernel),
    /// A child started or exited (or the watched process ended): what was measured of the
    /// old tree is gone.
    Lifecycle,
    /// An event (the prover's or one derived from its log lines).
    Other,
}

impl Input<'_> {
    /// Whether a rule on `m` is judged on this record.
    pub(super) fn judges(&self, m: Metric) -> bool {
        match (m.def().read, self) {
            // Every reading of the old tree is gone: each rule clears, none fires.
            (_, Input::Lifecycle) => true,
            // The forecasts need a sample; the other durations count on every record.
            (Read::Engine, Input::Sample(_)) => true,
            (Read::Engine, _) => !matches!(m, Metric::PredictedFree | Metric::TimeToOom),
            (Read::Sample(_) | Read::GpuSample(_), Input::Sample(_)) => true,
            (Read::Usage(_) | Read::GpuUsage(_), Input::Usage(_)) => true,
            (Read::Kernel(_), Input::Kernel(_)) => true,
            _ => false,
        }
    }
}
