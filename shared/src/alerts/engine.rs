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
//! Each rule is judged on the records its metric is read from ([`Read`](crate::metric::Read)): memory and per-GPU
//! sample readings on samples, the usage metrics (`cpu`, `major_faults`, `gpu_temp`, …) on
//! usage records, phase and event durations on every record. A reading a record does not
//! have (the first usage reading has no rates, NVML is absent, a GPU index that is not
//! there) is unknown: it never fires a rule, and a firing rule clears "no longer measured",
//! never as if the value were 0. A child that exits or starts (a watched process that ends)
//! takes every reading of its tree with it: every firing rule clears then.
//!
//! The parts: this file holds the engine's state, the record dispatch and the holds (when a
//! rule fires and when it clears); `judge.rs` a rule's reading and threshold on one record;
//! `message.rs` the alert a transition makes.

mod judge;
mod message;

use std::collections::{BTreeMap, BTreeSet};

use crate::forecast::Forecast;
use crate::protocol::{Event, Phase, ProverState};
use crate::{Alert, AlertState, Mark, Record, RecordBody};

use super::rule::Rule;
use judge::Input;
use message::alert;

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

    /// Whether the `i`th rule (in the order given to [`AlertEngine::new`]) is firing now.
    pub fn is_firing(&self, i: usize) -> bool {
        self.state.get(i).is_some_and(|s| s.firing)
    }

    /// Feed one record; returns the alerts that changed state because of it.
    pub fn observe(&mut self, rec: &Record) -> Vec<Alert> {
        let t = rec.t;
        self.forecast.observe(rec);
        match &rec.body {
            RecordBody::Sample(s) => self.eval(t, Input::Sample(s)),
            RecordBody::Usage(u) => self.eval(t, Input::Usage(u)),
            RecordBody::Kernel(k) => self.eval(t, Input::Kernel(k)),
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
