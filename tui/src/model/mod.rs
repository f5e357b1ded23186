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
//! Each domain owns its state and applies the records that concern it; [`Model::apply`]
//! dispatches every record to them, in an order that keeps the effects in the order the
//! changes happen. One file per domain: [`prover`] ([`ProverView`]: hello, SRS, state, proof
//! counts), [`spans`] ([`Spans`]), [`proofs`] ([`Proofs`], and modes), [`child`]
//! ([`ChildStatus`], and the monitor's [`Notes`]), [`alerts`] ([`Alerts`]), [`log`]
//! ([`Log`], which the others write to), [`runs`] ([`ThresholdRuns`]), [`usage`]
//! ([`UsageState`]: cores and GPUs busy, overlap per mode); the sample series is
//! [`crate::series`]. Beside them: [`span`] (the span types, a leaf every domain may import),
//! [`effects`], `bounded.rs` and [`archive`] (closed spans, compact, for a replay).

pub mod alerts;
pub mod archive;
mod bounded;
pub mod child;
pub mod effects;
pub mod log;
pub mod proofs;
pub mod prover;
pub mod runs;
pub mod span;
pub mod spans;
#[cfg(test)]
mod tests;
pub mod usage;

use provetop_shared::classify::{Run, ThresholdPhase, Thresholds};
use provetop_shared::forecast::Forecast;
use provetop_shared::{BatchMode, Mark, Record, RecordBody, Sample, Usage};

pub use alerts::{ActiveAlert, Alerts};
pub use archive::SpanArchive;
pub use bounded::History;
pub use child::{abrupt_after, ChildStatus, Notes};
pub use effects::{Effect, Effects, SpanSource};
pub use log::{Log, LogEntry, LogLevel, Logged};
pub use proofs::{mode_rows, FinishedProof, ModeRow, ProofEnd, Proofs};
pub use prover::{HelloInfo, MemoryReport, ProverView, SrsState};
pub use runs::ThresholdRuns;
pub use span::{busy_ns, PhaseSpan, ProofSpan, Stats};
pub use spans::{OpenSpans, Spans};
pub use usage::{Overlap, UsageState};

use crate::series::{Bucket, Limits, Metric, Point, Reading, Series};

/// How the note provetop records when it stops a session begins ("provetop stopping: got
/// SIGTERM"): what replay and the model recognise the stop by.
pub const STOPPING_NOTE: &str = "provetop stopping";

/// The reduced state of one record stream.
#[derive(Debug, Clone)]
pub struct Model {
    thresholds: Thresholds,
    pub series: Series,
    /// Cores and GPUs busy, on the same time axis ([`usage`]).
    pub usage: UsageState,
    /// Latest full sample (per-GPU readings, cgroup, mem_total…).
    pub last_sample: Option<Sample>,
    /// Kernel readings (the tree's cgroup, the limit that binds, pressure), thinned like the
    /// usage readings, for the header (the newest) and the cursor.
    kernels: bounded::Thinned<provetop_shared::Kernel>,
    /// The same memory forecast the alert engine keeps (`predicted_free`), for the header.
    forecast: Forecast,
    /// Prover state from events.
    pub prover: ProverView,
    pub child: ChildStatus,
    /// The monitor's marks and controls, and the losses they count.
    pub notes: Notes,
    /// Phase spans, closed and open.
    pub spans: Spans,
    /// Proofs in flight and finished, and mode changes.
    pub proofs: Proofs,
    pub alerts: Alerts,
    pub log: Log,
    /// Threshold classification of RSS.
    runs: ThresholdRuns,
    first_t: Option<u64>,
    last_t: u64,
    records: u64,
    events: u64,
    /// Events derived from log lines that were applied.
    derived: u64,
    /// Derived events left out because the child speaks the protocol (counted once).
    pub derived_ignored: u64,
    /// NVTX range events applied (through provetop's injection library).
    nvtx: u64,
    /// A process of the tree was OOM-killed since the last sample: the last sample's trend
    /// no longer counts down to anything.
    killed_since_sample: bool,
    /// Warnings read from the child's log lines (a GPU falling back to the CPU), oldest
    /// first, bounded like marks: the timeline marks them.
    pub log_warnings: bounded::History<(u64, String)>,
    /// Applying a derived event now: the spans it opens or closes are marked as from logs.
    deriving: bool,
    /// provetop is stopping the session (its stop note was seen): a proof that fails now
    /// was stopped, not failed by itself.
    stopping: bool,
}

impl Model {
    /// Empty model with the default memory limits (live use).
    pub fn new(thresholds: Thresholds) -> Self {
        Self::with_limits(thresholds, Limits::default())
    }

    /// This model without its series (memory and utilisation), which are most of its size,
    /// and with only the newest `readings` usage and kernel readings and the newest `log`
    /// log entries (those of snapshots far apart are not shared), and without its closed
    /// phase spans (a replay keeps them once, in a [`SpanArchive`], and takes back those a
    /// window shows: [`Spans::fill`]); series made from now on are bounded by `limits`.
    /// What a replay of a long session keeps at each snapshot, drawing the series again on
    /// a seek ([`crate::timeline`]).
    pub fn light(&self, limits: Limits, readings: usize, log: usize) -> Model {
        Model {
            series: Series::new(limits),
            usage: self.usage.without_series(limits, readings),
            kernels: self.kernels.newest(readings),
            log: self.log.newest(log),
            spans: self.spans.light(),
            ..self.clone()
        }
    }

    /// Empty model with explicit series limits ([`Limits::unbounded`] for offline tools).
    pub fn with_limits(thresholds: Thresholds, limits: Limits) -> Self {
        Model {
            thresholds,
            series: Series::new(limits),
            usage: UsageState::new(limits),
            last_sample: None,
            kernels: bounded::Thinned::new(usage::MAX_READINGS),
            forecast: Forecast::default(),
            prover: ProverView::default(),
            child: ChildStatus::None,
            notes: Notes::default(),
            spans: Spans::default(),
            proofs: Proofs::default(),
            alerts: Alerts::default(),
            log: Log::default(),
            runs: ThresholdRuns::new(thresholds),
            first_t: None,
            last_t: 0,
            records: 0,
            events: 0,
            derived: 0,
            derived_ignored: 0,
            nvtx: 0,
            killed_since_sample: false,
            log_warnings: bounded::History::new(),
            deriving: false,
            stopping: false,
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
            RecordBody::Sample(s) => self.on_sample(t, s, fx),
            RecordBody::Event(e) => {
                if self.events == 0 && self.derived > 0 {
                    // The protocol wins over what was read from its log lines before it.
                    self.spans.drop_derived();
                    self.derived_ignored += std::mem::take(&mut self.derived);
                }
                self.events += 1;
                self.on_event(t, e, fx)
            }
            RecordBody::Alert(a) => self.alerts.apply(t, a, &mut self.log, fx),
            RecordBody::Control(c) => self.notes.control(t, c, &mut self.log),
            RecordBody::Mark(m) => {
                if matches!(m, Mark::Note { text } if text.starts_with(STOPPING_NOTE)) {
                    self.stopping = true;
                }
                if matches!(m, Mark::OomKill { watched: true, .. }) {
                    self.killed_since_sample = true;
                }
                if matches!(m, Mark::ChildExited { .. }) {
                    // Phases the child left open end with it.
                    self.spans.close_all(t, fx);
                }
                self.child.apply(t, m, fx);
                self.notes.apply(t, m, &mut self.log);
            }
            RecordBody::Output(o) => self.log.push(t, Logged::Output(o.clone())),
            RecordBody::Derived(d) => self.on_derived(t, d, fx),
            RecordBody::Usage(u) => self.on_usage(t, u),
            RecordBody::Kernel(k) => {
                self.usage.apply_kernel(t, k);
                self.kernels.push(t, k.as_ref().clone());
            }
        }
    }

    /// A memory sample: the series, every span and proof open, the threshold runs, the GPUs.
    fn on_sample(&mut self, t: u64, s: &Sample, fx: &mut Effects) {
        let mut p = Point::from_sample(t, s);
        // The prover's own pinned report is an event; carry it into the series when the
        // sampler did not fill it, so the chart can draw it.
        if p.get(Metric::PinnedReported).is_none() {
            p.set(Metric::PinnedReported, self.prover.report.map(|r| r.pinned));
        }
        self.series.push(p);
        let pinned = s.pinned.or(p.get(Metric::PinnedReported));
        self.spans.observe(s, pinned);
        self.proofs.observe(s.peak.unwrap_or(s.rss).max(s.rss));
        self.runs.apply(t, s.rss, fx);
        self.last_sample = Some(s.clone());
        self.killed_since_sample = false;
        self.usage.apply_sample(t, s);
    }

    /// A usage reading; its interval counts for the mode of the proof in flight (or just
    /// finished).
    fn on_usage(&mut self, t: u64, u: &Usage) {
        let mode = self.proofs.mode_since(t.saturating_sub(u.interval_ns));
        self.usage.apply_usage(t, u, mode);
    }

    /// An event read from the child's log lines: applied like the prover's own, its spans
    /// marked as from logs, unless the child speaks the protocol (the precise path wins and
    /// nothing is counted twice). An NVTX range is applied as the prover's own.
    fn on_derived(&mut self, t: u64, d: &provetop_shared::Derived, fx: &mut Effects) {
        if d.nvtx.is_some() {
            // NVTX ranges are the program's own account of its phases, through provetop's
            // injection library, not read from its log lines: kept beside the protocol's.
            self.nvtx += 1;
            self.on_event(t, &d.event, fx);
            return;
        }
        if self.events > 0 {
            self.derived_ignored += 1;
            return;
        }
        self.derived += 1;
        if let provetop_shared::Event::Log { level, message, .. } = &d.event {
            if level == "warn" || level == "error" {
                self.log_warnings
                    .push_bounded((t, message.clone()), child::MAX_MARKS);
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

    /// Whether the program marked phases with NVTX ranges.
    pub fn has_nvtx(&self) -> bool {
        self.nvtx > 0
    }

    /// Whether the phases are the program's own (its events, its log lines or its NVTX
    /// ranges) rather than cut by RSS thresholds.
    pub fn has_phases(&self) -> bool {
        self.has_events() || self.has_derived() || self.has_nvtx()
    }

    /// An event: each domain takes what concerns it. Spans go first, so the phases a proof
    /// or the SRS load leaves open close before the effect that ends it.
    fn on_event(&mut self, t: u64, e: &provetop_shared::Event, fx: &mut Effects) {
        self.spans.apply(t, e, self.deriving, fx);
        if let Some(mut end) = self.proofs.apply(t, e, self.deriving, &mut self.log, fx) {
            // A proof that fails while provetop (or whoever asked the prover to stop) is
            // stopping the session was cut short by the stop: counted apart from failures.
            let stopping = self.stopping
                || self.prover.state == Some(provetop_shared::protocol::ProverState::Stopping);
            if end == ProofEnd::Failed && stopping {
                end = ProofEnd::Stopped;
            }
            self.prover.count(end);
        }
        // A proof read from log lines says nothing of its batch mode.
        if !(self.deriving && matches!(e, provetop_shared::Event::ProofStarted { .. })) {
            self.prover.apply(t, e, &mut self.log, fx);
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

    /// The newest kernel reading.
    pub fn kernel(&self) -> Option<&provetop_shared::Kernel> {
        self.kernels.latest().map(|(_, k)| k)
    }

    /// The newest kernel reading at or before `t` (what the kernel said at a cursor).
    pub fn kernel_at(&self, t: u64) -> Option<(u64, &provetop_shared::Kernel)> {
        self.kernels.at_or_before(t)
    }

    /// The limit that binds the tree now: (room left, the limit, its name), from the latest
    /// sample (read at every sample: a growing MemTotal is followed) and the latest kernel
    /// record's name for it.
    pub fn binding(&self) -> Option<(u64, Option<u64>, String)> {
        use provetop_shared::limit::{self, Bound};
        let s = self.last_sample.as_ref()?;
        let room = limit::room(s)?;
        let of = match room.bound {
            Bound::Cgroup => s.cgroup_max,
            Bound::Host => s.mem_total,
        };
        let named = self.kernel().and_then(|k| k.binding.as_ref());
        Some((room.bytes, of, limit::name(room.bound, named)))
    }

    /// Seconds until memory runs out at the tree's recent RSS growth; `None` while it is not
    /// growing, and once a process of the tree was OOM-killed after the last sample. What the
    /// `time_to_oom` alert metric reads.
    pub fn time_to_oom(&self) -> Option<f64> {
        if self.killed_since_sample {
            return None;
        }
        let s = self.last_sample.as_ref()?;
        self.forecast.time_to_oom(s).map(|(v, _)| v)
    }

    /// Text for the header's "phase" field and the export's phase column: the open phases
    /// ("synthesis ×4", "msm_h"), else the prover's state, else the threshold phase.
    pub fn current_phase_text(&self) -> String {
        if let Some(text) = self.spans.open_phase_text() {
            return text;
        }
        if self.has_events() {
            return match self.prover.state {
                Some(s) => prover::state_name(s).into(),
                None => "-".into(),
            };
        }
        // Phases read from its log lines or NVTX ranges: between them nothing is open (no
        // threshold guess).
        if self.has_derived() || self.has_nvtx() {
            return "-".into();
        }
        match self.runs.current() {
            Some(r) => format!("{} (threshold)", r.phase),
            None => "-".into(),
        }
    }

    /// [`Model::current_phase_text`], or the SRS load while one runs and no prover phase is
    /// open (the header's "phase" field).
    pub fn header_phase_text(&self) -> String {
        match &self.spans.srs_open {
            Some(s) if self.spans.open.is_empty() => s.phase.to_string(),
            _ => self.current_phase_text(),
        }
    }

    /// Phase spans (closed and open) overlapping `[t0, t1]`.
    pub fn spans_in(&self, t0: u64, t1: u64) -> impl Iterator<Item = &PhaseSpan> + '_ {
        self.spans.overlapping(t0, t1)
    }

    /// Phase spans covering time `t`.
    pub fn spans_at(&self, t: u64) -> Vec<&PhaseSpan> {
        self.spans.at(t, self.last_t)
    }

    /// Every distinct `(phase, partition)` among spans overlapping `[t0, t1]`, in first-seen
    /// order (the Gantt rows).
    pub fn phase_rows(&self, t0: u64, t1: u64) -> Vec<(provetop_shared::Phase, Option<u32>)> {
        self.spans.rows(t0, t1)
    }

    /// The finished proofs kept summed per mode.
    pub fn mode_rows(&self) -> Vec<ModeRow> {
        self.proofs.mode_rows()
    }

    /// Sectors per hour of busy time over the last proofs finished in `mode` (see
    /// [`Proofs::throughput`]).
    pub fn throughput(&self, mode: BatchMode) -> Option<f64> {
        self.proofs.throughput(mode)
    }

    /// Alert times (firing) in the model, for `a`/`A` navigation.
    pub fn alert_times(&self) -> impl Iterator<Item = u64> + '_ {
        self.alerts.times()
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
        self.runs.phase_at(t)
    }

    /// Threshold runs (closed and the one in progress) overlapping `[t0, t1]`.
    pub fn runs_in(&self, t0: u64, t1: u64) -> Vec<Run> {
        self.runs.overlapping(t0, t1)
    }

    /// Bytes the kept kernel readings hold, nearly.
    pub fn kernel_readings_bytes(&self) -> usize {
        // A reading's cgroup path, memory.stat breakdown and limit names: a few hundred bytes.
        self.kernels.readings_bytes(|_| 512)
    }

    /// Closed threshold runs kept.
    pub fn runs_kept(&self) -> usize {
        self.runs.kept()
    }

    /// The usage reading for the screen at `t` (`None`: the newest).
    pub fn usage_at(&self, t: Option<u64>) -> Option<(u64, &provetop_shared::Usage)> {
        match t {
            Some(t) => self.usage.reading_at(t),
            None => self.usage.latest(),
        }
    }
}
