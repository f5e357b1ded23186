//! The one reducer over [`Record`]s: live mode, replay, classify and export all build their
//! state by calling [`Model::apply`] on each record in order, and [`Model::apply`] tells
//! what each record changed ([`Effects`]), so whatever indexes a stream listens instead of
//! comparing states.
//!
//! The model holds what the screen shows and what the offline tools summarise: the sample
//! series (memory-bounded, see [`crate::series`]), the prover's state from its events, the
//! phase intervals for the Gantt timeline (each with the memory seen while it was open),
//! proofs and modes, alerts, marks, a bounded log of what happened (as data: the words are
//! made where it is shown), and the threshold-phase runs for children without events.
//! Everything grows at most to a fixed size, so a week-long live run stays small.
//!
//! One file per domain: [`prover`] (hello, SRS, state), [`spans`], [`proofs`] (and modes),
//! [`child`] (and the monitor's marks), [`alerts`], [`samples`] (series and threshold runs),
//! [`log`], [`stats`], [`effects`], [`usage`] (cores and GPUs busy, overlap per mode).

pub mod alerts;
pub mod child;
pub mod effects;
pub mod log;
pub mod proofs;
pub mod prover;
pub mod samples;
pub mod spans;
pub mod stats;
#[cfg(test)]
mod tests;
pub mod usage;

use std::collections::VecDeque;

use provetop_shared::classify::{Classifier, Run, Thresholds};
use provetop_shared::forecast::Forecast;
use provetop_shared::{Control, Mark, Record, RecordBody, Sample};

pub use alerts::ActiveAlert;
pub use child::ChildStatus;
pub use effects::{Effect, Effects, SpanSource};
pub use log::{LogEntry, LogLevel, Logged};
pub use proofs::{mode_rows, FinishedProof, ModeRow, ProofSpan};
pub use prover::{HelloInfo, MemoryReport, ProverView, SrsState};
pub use spans::{OpenSpans, PhaseSpan};
pub use stats::{busy_ns, Stats};
pub use usage::{Overlap, UsageState};

use crate::series::{Limits, Series};

/// The reduced state of one record stream.
#[derive(Debug, Clone)]
pub struct Model {
    thresholds: Thresholds,
    pub series: Series,
    /// Cores and GPUs busy, on the same time axis ([`usage`]).
    pub usage: UsageState,
    /// Latest full sample (per-GPU readings, cgroup, mem_total…).
    pub last_sample: Option<Sample>,
    /// The same memory forecast the alert engine keeps (`predicted_free`), for the header.
    forecast: Forecast,
    /// Prover state from events.
    pub prover: ProverView,
    pub child: ChildStatus,
    /// Closed phase spans, ordered by end time, oldest first.
    pub spans: VecDeque<PhaseSpan>,
    /// The prover's phases open now.
    pub open: OpenSpans,
    /// The SRS load/generation in progress (a timeline phase, not one of the prover's).
    pub srs_open: Option<PhaseSpan>,
    /// Finished proofs, oldest first.
    pub proofs: VecDeque<ProofSpan>,
    /// Proofs in flight.
    pub running: Vec<ProofSpan>,
    /// Mode changes: (t, from, to).
    pub mode_changes: VecDeque<(u64, provetop_shared::BatchMode, provetop_shared::BatchMode)>,
    /// Alerts firing now.
    pub active_alerts: Vec<ActiveAlert>,
    /// Every alert change, oldest first.
    pub alert_history: VecDeque<(u64, provetop_shared::Alert)>,
    /// Marks, oldest first.
    pub marks: VecDeque<(u64, Mark)>,
    /// Controls sent, oldest first (bounded like marks).
    pub controls: VecDeque<(u64, Control)>,
    /// Log entries, oldest first.
    pub log: VecDeque<LogEntry>,
    /// Samples reported dropped.
    pub dropped_samples: u64,
    /// Events reported dropped.
    pub dropped_events: u64,
    /// Invalid protocol lines.
    pub bad_lines: u64,
    /// Threshold classification of RSS.
    classifier: Classifier,
    /// Closed threshold runs, oldest first.
    runs: VecDeque<Run>,
    /// Longest closed span, ns (bounds the search in [`Model::spans_at`]).
    max_span_ns: u64,
    first_t: Option<u64>,
    last_t: u64,
    records: u64,
    events: u64,
    /// Events derived from log lines that were applied.
    derived: u64,
    /// Derived events left out because the child speaks the protocol (counted once).
    pub derived_ignored: u64,
    /// Warnings read from the child's log lines (a GPU falling back to the CPU), oldest
    /// first, bounded like marks: the timeline marks them.
    pub log_warnings: VecDeque<(u64, String)>,
    /// Applying a derived event now: the spans it opens or closes are marked as from logs.
    deriving: bool,
}

impl Model {
    /// Empty model with the default memory limits (live use).
    pub fn new(thresholds: Thresholds) -> Self {
        Self::with_limits(thresholds, Limits::default())
    }

    /// Empty model with explicit series limits ([`Limits::unbounded`] for offline tools).
    pub fn with_limits(thresholds: Thresholds, limits: Limits) -> Self {
        Model {
            thresholds,
            series: Series::new(limits),
            usage: UsageState::new(limits),
            last_sample: None,
            forecast: Forecast::default(),
            prover: ProverView::default(),
            child: ChildStatus::None,
            spans: VecDeque::new(),
            open: OpenSpans::default(),
            srs_open: None,
            proofs: VecDeque::new(),
            running: Vec::new(),
            mode_changes: VecDeque::new(),
            active_alerts: Vec::new(),
            alert_history: VecDeque::new(),
            marks: VecDeque::new(),
            controls: VecDeque::new(),
            log: VecDeque::new(),
            dropped_samples: 0,
            dropped_events: 0,
            bad_lines: 0,
            classifier: Classifier::new(thresholds),
            runs: VecDeque::new(),
            max_span_ns: 0,
            first_t: None,
            last_t: 0,
            records: 0,
            events: 0,
            derived: 0,
            derived_ignored: 0,
            log_warnings: VecDeque::new(),
            deriving: false,
        }
    }

    /// Apply one record; returns what it changed.
    pub fn apply(&mut self, rec: &Record) -> Effects {
        let mut fx = Effects::new();
        self.apply_into(rec, &mut fx);
        fx
    }

    /// [`Model::apply`] into a caller's buffer (cleared first), for loops over many records.
    pub fn apply_into(&mut self, rec: &Record, fx: &mut Effects) {
        fx.clear();
        let t = rec.t;
        self.records += 1;
        if self.first_t.is_none() {
            self.first_t = Some(t);
        }
        self.last_t = self.last_t.max(t);
        self.forecast.observe(rec);
        match &rec.body {
            RecordBody::Sample(s) => {
                self.on_sample(t, s, fx);
                self.usage_sample(t, s);
            }
            RecordBody::Event(e) => {
                if self.events == 0 && self.derived > 0 {
                    // The protocol wins over what was read from its log lines before it.
                    self.drop_derived_spans();
                    self.derived_ignored += std::mem::take(&mut self.derived);
                }
                self.events += 1;
                self.on_event(t, e, fx)
            }
            RecordBody::Alert(a) => self.on_alert(t, a, fx),
            RecordBody::Control(c) => {
                self.push_log(t, Logged::Control(c.clone()));
                push_bounded(&mut self.controls, (t, c.clone()), child::MAX_MARKS);
            }
            RecordBody::Mark(m) => self.on_mark(t, m, fx),
            RecordBody::Output(o) => self.push_log(t, Logged::Output(o.clone())),
            RecordBody::Derived(d) => self.on_derived(t, d, fx),
            RecordBody::Usage(u) => self.on_usage(t, u),
        }
    }

    /// An event read from the child's log lines: applied like the prover's own, its spans
    /// marked as from logs, unless the child speaks the protocol (the precise path wins and
    /// nothing is counted twice).
    fn on_derived(&mut self, t: u64, d: &provetop_shared::Derived, fx: &mut Effects) {
        if self.events > 0 {
            self.derived_ignored += 1;
            return;
        }
        self.derived += 1;
        if let provetop_shared::Event::Log { level, message, .. } = &d.event {
            if level == "warn" || level == "error" {
                push_bounded(
                    &mut self.log_warnings,
                    (t, message.clone()),
                    child::MAX_MARKS,
                );
            }
        }
        self.deriving = true;
        self.on_event(t, &d.event, fx);
        self.deriving = false;
    }

    /// Whether phases were read from the child's log lines (it does not speak the protocol).
    pub fn has_derived(&self) -> bool {
        self.derived > 0
    }

    fn on_event(&mut self, t: u64, e: &provetop_shared::Event, fx: &mut Effects) {
        use provetop_shared::Event;
        match e {
            Event::ProofStarted { .. } => self.proof_started(t, e),
            Event::ProofFinished { .. } => self.proof_finished(t, e, fx),
            Event::PhaseStarted {
                proof_id,
                phase,
                partition,
            } => self.start_span(t, *proof_id, phase, *partition, fx),
            Event::PhaseEnded {
                proof_id,
                phase,
                partition,
                duration_s,
            } => self.end_span(t, *proof_id, phase, *partition, *duration_s, fx),
            Event::ModeChanged { .. } => self.mode_changed(t, e, fx),
            _ => self.prover_event(t, e, fx),
        }
    }

    /// Thresholds in use.
    pub fn thresholds(&self) -> &Thresholds {
        &self.thresholds
    }

    /// Time of the first record applied.
    pub fn first_t(&self) -> Option<u64> {
        self.first_t
    }

    /// Time of the newest record applied ("now" of this stream).
    pub fn now(&self) -> u64 {
        self.last_t
    }

    /// Records applied.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Events applied.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Whether the child speaks the protocol (any event seen).
    pub fn has_events(&self) -> bool {
        self.events > 0
    }

    /// Memory predicted to be left when the proof now running peaks (negative: short), once
    /// a proof of its shape has finished; what the `predicted_free` alert metric reads.
    pub fn predicted_free(&self) -> Option<f64> {
        let s = self.last_sample.as_ref()?;
        self.forecast.predicted_free(s).map(|(v, _)| v)
    }

    /// Seconds until memory runs out at the tree's recent RSS growth; `None` while it is not
    /// growing. What the `time_to_oom` alert metric reads.
    pub fn time_to_oom(&self) -> Option<f64> {
        let s = self.last_sample.as_ref()?;
        self.forecast.time_to_oom(s).map(|(v, _)| v)
    }

    /// Text for the header's "phase" field and the export's phase column: the open phases
    /// ("synthesis ×4", "msm_h"), else the prover's state, else the threshold phase.
    pub fn current_phase_text(&self) -> String {
        if let Some(text) = self.open_phase_text() {
            return text;
        }
        if self.has_events() {
            return match self.prover.state {
                Some(s) => prover::state_name(s).into(),
                None => "-".into(),
            };
        }
        // Phases read from its log lines: between them nothing is open (no threshold guess).
        if self.has_derived() {
            return "-".into();
        }
        match self.classifier.current() {
            Some(r) => format!("{} (threshold)", r.phase),
            None => "-".into(),
        }
    }

    /// [`Model::current_phase_text`], or the SRS load while one runs and no prover phase is
    /// open (the header's "phase" field).
    pub fn header_phase_text(&self) -> String {
        match &self.srs_open {
            Some(s) if self.open.is_empty() => s.phase.to_string(),
            _ => self.current_phase_text(),
        }
    }
}

fn push_bounded<T>(q: &mut VecDeque<T>, x: T, max: usize) {
    q.push_back(x);
    while q.len() > max {
        q.pop_front();
    }
}
