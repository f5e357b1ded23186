//! The alert engine: a reducer over records that reports firing/cleared transitions.
//!
//! Time is the records' own `t`, so the same engine gives the same alerts live and in replay.
//! A rule with `for D` fires once its condition has held for D without a break; it clears on
//! the first record where the condition no longer holds (or its metric is no longer known).
//!
//! `event_age` (the watchdog) is known only while the prover should be working: its last
//! `state` said `proving`, or a proof it started has not finished. An idle or paused prover
//! is silent by design and never counts as hung.
//!
//! Each rule is judged on the records its metric is read from ([`Read`]): memory and per-GPU
//! sample readings on samples, the usage metrics (`cpu`, `major_faults`, `gpu_temp`, …) on
//! usage records, phase and event durations on every record. A reading a record does not
//! have (the first usage reading has no rates, NVML is absent, a GPU index that is not
//! there) is unknown: it never fires a rule, and a firing rule clears "no longer measured",
//! never as if the value were 0. A child that exits or starts takes the usage readings with
//! it: usage rules clear then.

use std::collections::{BTreeMap, BTreeSet};

use provetop_shared::metric::{Limit, Read};
use provetop_shared::protocol::{Event, Phase, ProverState};
use provetop_shared::{Alert, AlertState, Mark, Record, RecordBody, Sample, Usage};

use super::rule::{Metric, Rule};
use provetop_shared::forecast::Forecast;

#[derive(Debug, Clone, Default)]
struct RuleState {
    /// Record time at which the condition started to hold.
    since: Option<u64>,
    firing: bool,
}

/// Key of an open phase.
type PhaseKey = (u64, Phase, Option<u32>);

/// Evaluates rules over a record stream.
#[derive(Debug, Clone)]
pub struct AlertEngine {
    rules: Vec<Rule>,
    state: Vec<RuleState>,
    /// Open phases with their start time.
    phases: BTreeMap<PhaseKey, u64>,
    /// Pinned bytes the prover last reported.
    reported_pinned: Option<u64>,
    /// Time of the current child's last event.
    last_event: Option<u64>,
    /// The prover's last `state`.
    prover_state: Option<ProverState>,
    /// Proofs started and not finished.
    in_flight: BTreeSet<u64>,
    /// Peaks of finished proofs, for `predicted_free`.
    forecast: Forecast,
}

impl AlertEngine {
    /// An engine for `rules`.
    pub fn new(rules: Vec<Rule>) -> Self {
        let state = vec![RuleState::default(); rules.len()];
        AlertEngine {
            rules,
            state,
            phases: BTreeMap::new(),
            reported_pinned: None,
            last_event: None,
            prover_state: None,
            in_flight: BTreeSet::new(),
            forecast: Forecast::default(),
        }
    }

    /// Feed one record; returns the alerts that changed state because of it.
    pub fn observe(&mut self, rec: &Record) -> Vec<Alert> {
        let t = rec.t;
        self.forecast.observe(rec);
        match &rec.body {
            RecordBody::Sample(s) => self.eval(t, Input::Sample(s)),
            RecordBody::Usage(u) => self.eval(t, Input::Usage(u)),
            RecordBody::Event(e) => {
                self.last_event = Some(self.last_event.map_or(t, |l| l.max(t)));
                self.track_event(t, e);
                self.eval(t, Input::Other)
            }
            // Phases read from the child's log lines: phase rules apply to them too, unless
            // the child speaks the protocol (its own events are then its phases).
            RecordBody::Derived(d) if self.last_event.is_none() => {
                self.track_event(t, &d.event);
                self.eval(t, Input::Other)
            }
            RecordBody::Mark(Mark::ChildExited { .. } | Mark::ChildStarted { .. }) => {
                // A new or dead child has no open phases and has said nothing yet.
                self.phases.clear();
                self.last_event = None;
                self.prover_state = None;
                self.in_flight.clear();
                self.eval(t, Input::Lifecycle)
            }
            _ => Vec::new(),
        }
    }

    fn track_event(&mut self, t: u64, e: &Event) {
        match e {
            Event::PhaseStarted {
                proof_id,
                phase,
                partition,
            } => {
                self.phases
                    .insert((*proof_id, phase.clone(), *partition), t);
            }
            Event::PhaseEnded {
                proof_id,
                phase,
                partition,
                ..
            } => {
                self.phases.remove(&(*proof_id, phase.clone(), *partition));
            }
            Event::ProofStarted { proof_id, .. } => {
                self.in_flight.insert(*proof_id);
            }
            Event::ProofFinished { proof_id, .. } => {
                self.phases.retain(|k, _| k.0 != *proof_id);
                self.in_flight.remove(proof_id);
            }
            Event::State { state } => self.prover_state = Some(*state),
            Event::Bye { .. } => {
                self.phases.clear();
                self.in_flight.clear();
                self.prover_state = None;
            }
            Event::MemoryReport { pinned_bytes, .. } => self.reported_pinned = Some(*pinned_bytes),
            _ => {}
        }
    }

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
    fn judge(
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
        let def = m.def();
        if def.read.per_gpu() {
            return self.judge_gpus(rule, def.read, s, u);
        }
        let limit = match def.limit {
            Some(Limit::Memory) => s.and_then(|s| s.cgroup_max.or(s.mem_total)),
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

    fn eval(&mut self, t: u64, input: Input) -> Vec<Alert> {
        let mut out = Vec::new();
        for i in 0..self.rules.len() {
            let rule = &self.rules[i];
            if !input.judges(rule.metric) {
                continue;
            }
            let (reading, thr) = self.judge(rule, t, &input);
            let holds = match (&reading, thr) {
                (Some((v, _)), Some(th)) => rule.op.holds(*v, th),
                _ => false,
            };
            let st = &mut self.state[i];
            if holds {
                let since = *st.since.get_or_insert(t);
                let held = t.saturating_sub(since) as f64 / 1e9;
                if !st.firing && held + 1e-9 >= rule.hold_s {
                    st.firing = true;
                    let (v, what) = reading.clone().expect("holds implies a value");
                    out.push(alert(rule, AlertState::Firing, v, thr.unwrap_or(0.0), what));
                }
            } else {
                st.since = None;
                if st.firing {
                    st.firing = false;
                    let (v, what) = reading.clone().unwrap_or((f64::NAN, None));
                    out.push(alert(
                        rule,
                        AlertState::Cleared,
                        v,
                        thr.unwrap_or(f64::NAN),
                        what,
                    ));
                }
            }
        }
        out
    }
}

/// The record a rule is judged on.
enum Input<'a> {
    Sample(&'a Sample),
    Usage(&'a Usage),
    /// A child started or exited: what was measured of the old tree is gone.
    Lifecycle,
    /// An event (the prover's or one derived from its log lines).
    Other,
}

impl Input<'_> {
    /// Whether a rule on `m` is judged on this record.
    fn judges(&self, m: Metric) -> bool {
        match (m.def().read, self) {
            // The forecasts need a sample; the other durations count on every record.
            (Read::Engine, Input::Sample(_)) => true,
            (Read::Engine, _) => !matches!(m, Metric::PredictedFree | Metric::TimeToOom),
            (Read::Sample(_) | Read::GpuSample(_), Input::Sample(_)) => true,
            (Read::Usage(_) | Read::GpuUsage(_), Input::Usage(_) | Input::Lifecycle) => true,
            _ => false,
        }
    }
}

fn alert(
    rule: &Rule,
    state: AlertState,
    value: f64,
    threshold: f64,
    what: Option<String>,
) -> Alert {
    let m = rule.metric;
    let fmt = |v: f64| {
        if v.is_finite() {
            m.fmt_value(v)
        } else {
            "unknown".to_string()
        }
    };
    let subject = match &what {
        Some(w) => format!("{} ({w})", rule.metric_label()),
        None => rule.metric_label(),
    };
    let message = match state {
        AlertState::Firing => {
            let mut s = format!(
                "{subject} {} {} {}",
                fmt(value),
                rule.op.as_str(),
                fmt(threshold)
            );
            if rule.hold_s > 0.0 {
                s.push_str(&format!(
                    " for {}",
                    provetop_shared::units::fmt_secs(rule.hold_s)
                ));
            }
            s
        }
        // Unknown when what it measured is gone: the child exited, or no proof with a
        // forecast is running any more.
        AlertState::Cleared if !value.is_finite() => {
            format!("cleared: {subject}: no longer measured")
        }
        AlertState::Cleared => format!("cleared: {subject} {}", fmt(value)),
    };
    Alert {
        rule: rule.text.clone(),
        level: rule.level,
        state,
        metric: rule.metric_label(),
        value,
        threshold,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use provetop_shared::AlertLevel;

    const S: u64 = 1_000_000_000;

    fn sample(t: u64, rss: u64) -> Record {
        Record::new(
            t,
            RecordBody::Sample(Sample {
                rss,
                mem_total: Some(1000),
                ..Sample::default()
            }),
        )
    }

    #[test]
    fn fires_after_duration_and_clears() {
        let mut e = AlertEngine::new(vec!["rss > 100 for 2s".parse().unwrap()]);
        assert!(e.observe(&sample(0, 50)).is_empty());
        assert!(e.observe(&sample(S, 150)).is_empty());
        assert!(e.observe(&sample(2 * S, 150)).is_empty());
        // A dip resets the hold.
        assert!(e.observe(&sample(2 * S + 1, 90)).is_empty());
        assert!(e.observe(&sample(3 * S, 150)).is_empty());
        assert!(e.observe(&sample(4 * S + S / 2, 150)).is_empty());
        let a = e.observe(&sample(5 * S, 160));
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].state, AlertState::Firing);
        assert_eq!(a[0].value, 160.0);
        assert_eq!(a[0].threshold, 100.0);
        assert_eq!(a[0].level, AlertLevel::Warn);
        // Stays firing without repeating.
        assert!(e.observe(&sample(6 * S, 170)).is_empty());
        assert!(e.state[0].firing);
        let a = e.observe(&sample(7 * S, 10));
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].state, AlertState::Cleared);
        assert!(!e.state[0].firing);
    }

    /// The default forecast rule over a proof that would not fit: it fires while the second
    /// proof of the shape runs with too little free, and clears, "no longer measured", when
    /// that proof ends.
    #[test]
    fn predicted_free_fires_for_a_proof_that_will_not_fit() {
        use provetop_shared::protocol::BatchMode;
        use provetop_testkit::fixtures::{proof_finished as finished, proof_started as started};
        let mut e = AlertEngine::new(vec!["predicted_free < 0".parse().unwrap()]);
        let ev = |t, e: Event| Record::new(t, RecordBody::Event(e));
        let mem = |t, rss, avail| {
            Record::new(
                t,
                RecordBody::Sample(Sample {
                    rss,
                    mem_available: Some(avail),
                    ..Sample::default()
                }),
            )
        };
        // Proof 1 peaks at 900 with plenty free: no forecast yet, nothing fires.
        e.observe(&ev(0, started(1, BatchMode::Single)));
        assert!(e.observe(&mem(S, 900, 1000)).is_empty());
        e.observe(&ev(2 * S, finished(1, true)));
        // Proof 2 starts at 100 with 500 free: it needs 800 more, 300 short.
        e.observe(&ev(3 * S, started(2, BatchMode::Single)));
        let a = e.observe(&mem(4 * S, 100, 500));
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].state, AlertState::Firing);
        assert_eq!(a[0].value, -300.0);
        assert!(
            a[0].message.contains("proof 2 predicted to peak at 900 B"),
            "{}",
            a[0].message
        );
        assert!(a[0].message.contains("-300 B < 0 B"), "{}", a[0].message);
        e.observe(&ev(5 * S, finished(2, true)));
        let a = e.observe(&mem(6 * S, 100, 500));
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].state, AlertState::Cleared);
        assert_eq!(a[0].message, "cleared: predicted_free: no longer measured");
    }

    #[test]
    fn an_idle_or_paused_prover_is_not_hung_a_silent_working_one_is() {
        let ev = |t, e: Event| Record::new(t, RecordBody::Event(e));
        let state = |s| Event::State { state: s };
        let mut e = AlertEngine::new(vec!["event_age > 5s".parse().unwrap()]);
        // Idle, then silent for a minute: nothing.
        e.observe(&ev(0, state(ProverState::Idle)));
        assert!((1..60).all(|i| e.observe(&sample(i * S, 1)).is_empty()));
        // Paused: nothing either.
        e.observe(&ev(60 * S, state(ProverState::Paused)));
        assert!((61..120).all(|i| e.observe(&sample(i * S, 1)).is_empty()));
        // Paused with a proof still in flight: that proof should progress.
        e.observe(&ev(
            120 * S,
            Event::ProofStarted {
                proof_id: 7,
                mode: provetop_shared::protocol::BatchMode::Single,
                sectors: 1,
                partitions: 1,
                constraints: 1,
            },
        ));
        let fired: Vec<Alert> = (121..130)
            .flat_map(|i| e.observe(&sample(i * S, 1)))
            .collect();
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert_eq!(fired[0].state, AlertState::Firing);
        // It finishes and the prover goes idle: cleared, and silence is fine again.
        let c = e.observe(&ev(
            130 * S,
            Event::ProofFinished {
                proof_id: 7,
                ok: true,
                verified: true,
                duration_s: 1.0,
                mode: provetop_shared::protocol::BatchMode::Single,
                phases: vec![],
                error: None,
                cancelled: false,
                requeued_as: vec![],
            },
        ));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].state, AlertState::Cleared);
        assert!((131..200).all(|i| e.observe(&sample(i * S, 1)).is_empty()));
        // Proving and silent: hung.
        e.observe(&ev(200 * S, state(ProverState::Proving)));
        let fired: Vec<Alert> = (201..210)
            .flat_map(|i| e.observe(&sample(i * S, 1)))
            .collect();
        assert_eq!(fired.len(), 1, "{fired:?}");
    }

    #[test]
    fn percent_rules_use_the_sample_limit() {
        let mut e = AlertEngine::new(vec!["crit: rss > 90%".parse().unwrap()]);
        assert!(e.observe(&sample(0, 899)).is_empty());
        let a = e.observe(&sample(1, 901));
        assert_eq!(a[0].level, AlertLevel::Crit);
        assert_eq!(a[0].threshold, 900.0);
    }

    fn usage(t: u64, u: Usage) -> Record {
        Record::new(t, RecordBody::Usage(u))
    }

    fn cores(t: u64, c: Option<f64>) -> Record {
        usage(
            t,
            Usage {
                interval_ns: S / 2,
                cores: c,
                threads: 8,
                host_ncpu: 16,
                ..Usage::default()
            },
        )
    }

    fn gpus(t: u64, g: &[(u32, u8, u64, u64)]) -> Record {
        Record::new(
            t,
            RecordBody::Sample(Sample {
                rss: 1,
                gpus: g
                    .iter()
                    .map(
                        |&(index, util, used, total)| provetop_shared::record::GpuReading {
                            index,
                            util,
                            used,
                            total,
                            proc_used: used,
                        },
                    )
                    .collect(),
                ..Sample::default()
            }),
        )
    }

    #[test]
    fn a_cpu_rule_fires_after_its_hold_on_usage_records_and_clears_when_the_load_drops() {
        let mut e = AlertEngine::new(vec!["cpu > 12 for 10s".parse().unwrap()]);
        // Samples carry no core count: they neither start nor break the hold.
        let mut fired = Vec::new();
        for i in 0..=24u64 {
            fired.extend(e.observe(&cores(i * S / 2, Some(13.5))));
            fired.extend(e.observe(&sample(i * S / 2 + 1, 50)));
        }
        assert_eq!(fired.len(), 1, "{fired:?}");
        assert_eq!(fired[0].state, AlertState::Firing);
        assert_eq!(fired[0].metric, "cpu");
        assert_eq!(fired[0].message, "cpu 13.5 cores > 12.0 cores for 10.0s");
        let c = e.observe(&cores(13 * S, Some(2.0)));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].state, AlertState::Cleared);
        assert_eq!(c[0].message, "cleared: cpu 2.0 cores");
    }

    #[test]
    fn an_unknown_reading_never_fires_a_rule_and_clears_one_as_unknown_not_as_zero() {
        // "Below 1 core" would hold for a zero: an unknown reading must not look like one.
        let mut e = AlertEngine::new(vec![
            "cpu < 1".parse().unwrap(),
            "gpu_util < 10".parse().unwrap(),
            "major_faults < 5".parse().unwrap(),
            "gpu_temp < 30".parse().unwrap(),
        ]);
        for i in 0..100 {
            assert!(e.observe(&cores(i * S, None)).is_empty());
            // No GPU in the sample (no NVML): unknown utilisation.
            assert!(e.observe(&sample(i * S + 1, 5)).is_empty());
        }
        // Known and low: fires; then unknown again: cleared, "no longer measured".
        let a = e.observe(&cores(100 * S, Some(0.2)));
        assert_eq!(a.len(), 1);
        let c = e.observe(&cores(101 * S, None));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].state, AlertState::Cleared);
        assert!(c[0].value.is_nan());
        assert_eq!(c[0].message, "cleared: cpu: no longer measured");
    }

    #[test]
    fn gpu_rules_take_the_busiest_gpu_or_the_one_they_name() {
        let g = provetop_shared::units::GIB;
        let mut e = AlertEngine::new(vec![
            "gpu_util < 10 for 1s".parse().unwrap(),
            "gpu_mem > 75GiB".parse().unwrap(),
            "gpu_mem[0] > 90%".parse().unwrap(),
            "gpu_util[1] > 50".parse().unwrap(),
        ]);
        // GPU 0 idle, GPU 1 busy: "below 10 %" is false while any GPU works.
        let a = e.observe(&gpus(
            0,
            &[(0, 0, 80 * g, 141 * g), (1, 86, 10 * g, 80 * g)],
        ));
        let names: Vec<&str> = a.iter().map(|a| a.rule.as_str()).collect();
        assert_eq!(names, ["gpu_mem > 75GiB", "gpu_util[1] > 50"], "{a:?}");
        assert_eq!(a[0].message, "gpu_mem (GPU 0) 80.0 GiB > 75.0 GiB");
        assert_eq!(a[1].metric, "gpu_util[1]");
        assert_eq!(a[1].message, "gpu_util[1] 86% > 50%");
        assert!(e
            .observe(&gpus(
                S,
                &[(0, 0, 80 * g, 141 * g), (1, 86, 10 * g, 80 * g)]
            ))
            .is_empty());
        // Both idle for a second: the idle rule fires; GPU 1 busy no more clears its rule.
        e.observe(&gpus(
            2 * S,
            &[(0, 3, 80 * g, 141 * g), (1, 5, 10 * g, 80 * g)],
        ));
        let a = e.observe(&gpus(
            3 * S,
            &[(0, 3, 130 * g, 141 * g), (1, 5, 10 * g, 80 * g)],
        ));
        let got: Vec<(&str, AlertState)> = a.iter().map(|a| (a.rule.as_str(), a.state)).collect();
        assert_eq!(
            got,
            [
                ("gpu_util < 10 for 1s", AlertState::Firing),
                ("gpu_mem[0] > 90%", AlertState::Firing),
            ]
        );
        assert_eq!(a[0].value, 5.0, "the busiest GPU's utilisation");
        assert_eq!(
            a[1].threshold,
            141.0 * g as f64 * 0.9,
            "of GPU 0's own total"
        );
        // The GPUs go away (NVML failing): every GPU rule clears, unknown.
        let c = e.observe(&gpus(4 * S, &[]));
        assert_eq!(c.len(), 3, "{c:?}");
        assert!(c
            .iter()
            .all(|a| a.state == AlertState::Cleared && a.value.is_nan()));
    }

    #[test]
    fn gpu_temperature_and_major_fault_rules_read_the_usage_records() {
        use provetop_shared::record::GpuDetail;
        let mut e = AlertEngine::new(vec![
            "crit: gpu_temp > 85".parse().unwrap(),
            "major_faults > 100/s for 1s".parse().unwrap(),
            "cpu > 50%".parse().unwrap(),
        ]);
        let u = |t, temp: Option<u32>, faults: Option<f64>, cores: f64| {
            usage(
                t,
                Usage {
                    interval_ns: S / 2,
                    cores: Some(cores),
                    major_faults: faults,
                    host_ncpu: 16,
                    gpus: vec![
                        GpuDetail {
                            index: 0,
                            temp_c: Some(60),
                            ..GpuDetail::default()
                        },
                        GpuDetail {
                            index: 1,
                            temp_c: temp,
                            ..GpuDetail::default()
                        },
                    ],
                    ..Usage::default()
                },
            )
        };
        let a = e.observe(&u(0, Some(88), Some(500.0), 7.9));
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(a[0].message, "gpu_temp (GPU 1) 88 °C > 85 °C");
        assert_eq!(a[0].level, provetop_shared::AlertLevel::Crit);
        let a = e.observe(&u(S, Some(86), Some(300.0), 8.1));
        let names: Vec<&str> = a.iter().map(|a| a.metric.as_str()).collect();
        assert_eq!(names, ["major_faults", "cpu"], "{a:?}");
        assert_eq!(a[0].message, "major_faults 300/s > 100/s for 1.0s");
        assert_eq!(a[1].threshold, 8.0, "50 % of 16 cores");
        // GPU 1's temperature unknown: GPU 0's 60 °C is the hottest known; cleared.
        let c = e.observe(&u(2 * S, None, Some(300.0), 8.1));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].message, "cleared: gpu_temp (GPU 0) 60 °C");
        // The child exits: the usage readings go with it.
        let c = e.observe(&Record::new(
            3 * S,
            RecordBody::Mark(Mark::ChildExited {
                pid: 1,
                code: Some(0),
                signal: None,
                oom_kill: false,
                reason: "exited 0".into(),
            }),
        ));
        assert_eq!(c.len(), 2, "{c:?}");
        assert!(c.iter().all(|a| a.message.ends_with("no longer measured")));
    }
}
