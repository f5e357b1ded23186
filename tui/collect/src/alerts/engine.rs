//! The alert engine: a reducer over records that reports firing/cleared transitions.
//!
//! Time is the records' own `t`, so the same engine gives the same alerts live and in replay.
//! A rule with `for D` fires once its condition has held for D without a break; it clears on
//! the first record where the condition no longer holds (or its metric is no longer known).
//!
//! `event_age` (the watchdog) is known only while the prover should be working: its last
//! `state` said `proving`, or a proof it started has not finished. An idle or paused prover
//! is silent by design and never counts as hung.

use std::collections::{BTreeMap, BTreeSet};

use provetop_shared::protocol::{Event, Phase, ProverState};
use provetop_shared::{Alert, AlertState, Mark, Record, RecordBody, Sample};

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
            RecordBody::Sample(s) => self.eval(t, Some(s)),
            RecordBody::Event(e) => {
                self.last_event = Some(self.last_event.map_or(t, |l| l.max(t)));
                self.track_event(t, e);
                self.eval(t, None)
            }
            // Phases read from the child's log lines: phase rules apply to them too, unless
            // the child speaks the protocol (its own events are then its phases).
            RecordBody::Derived(d) if self.last_event.is_none() => {
                self.track_event(t, &d.event);
                self.eval(t, None)
            }
            RecordBody::Mark(Mark::ChildExited { .. } | Mark::ChildStarted { .. }) => {
                // A new or dead child has no open phases and has said nothing yet.
                self.phases.clear();
                self.last_event = None;
                self.prover_state = None;
                self.in_flight.clear();
                self.eval(t, None)
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

    fn value(&self, m: Metric, t: u64, s: Option<&Sample>) -> Option<(f64, Option<String>)> {
        if m == Metric::PhaseDuration {
            return self.phase_running(t).map(|(v, n)| (v, Some(n)));
        }
        if m == Metric::EventAge {
            // Silence is a hang only when there is work to do.
            let working =
                self.prover_state == Some(ProverState::Proving) || !self.in_flight.is_empty();
            if !working {
                return None;
            }
            return self
                .last_event
                .map(|l| (t.saturating_sub(l) as f64 / 1e9, None));
        }
        let s = s?;
        if m == Metric::PredictedFree {
            return self.forecast.predicted_free(s).map(|(v, w)| (v, Some(w)));
        }
        if m == Metric::TimeToOom {
            return self.forecast.time_to_oom(s).map(|(v, w)| (v, Some(w)));
        }
        let v = match m {
            // The larger of what smaps measured and what the prover reported.
            Metric::Pinned => match (s.pinned, s.pinned_reported.or(self.reported_pinned)) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).max(b.unwrap_or(0))),
            },
            _ => m.of(s),
        }?;
        Some((v as f64, None))
    }

    fn eval(&mut self, t: u64, s: Option<&Sample>) -> Vec<Alert> {
        let mut out = Vec::new();
        let limit = s.and_then(|s| s.cgroup_max.or(s.mem_total));
        for i in 0..self.rules.len() {
            let rule = &self.rules[i];
            // Memory metrics and the trend forecast are judged on samples only; the other
            // durations on every record.
            if s.is_none() && (!rule.metric.is_duration() || rule.metric == Metric::TimeToOom) {
                continue;
            }
            let reading = self.value(rule.metric, t, s);
            let thr = rule.threshold_for(limit);
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
        Some(w) => format!("{} ({w})", m.name()),
        None => m.name().to_string(),
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
        metric: m.name().to_string(),
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
}
