//! The one reducer over [`Record`]s: live mode, replay, classify and export all build their
//! state by calling [`Model::apply`] on each record in order.
//!
//! The model holds what the screen shows and what the offline tools summarise: the sample
//! series (memory-bounded, see [`crate::series`]), the prover's state from its events, the
//! phase intervals for the Gantt timeline (each with the memory seen while it was open),
//! alerts, marks, a bounded log, and the threshold-phase runs for children without events.
//! Everything grows at most to a fixed size, so a week-long live run stays small.

use std::collections::VecDeque;

use provetop_collect::alerts::Forecast;
use provetop_shared::classify::{Classifier, Run, ThresholdPhase, Thresholds};
use provetop_shared::protocol::{GpuInfo, ProverConfig, ProverState};
use provetop_shared::units::{fmt_bytes, fmt_secs};
use provetop_shared::{
    Alert, AlertLevel, AlertState, Backend, BatchMode, Control, Event, Mark, Phase, Record,
    RecordBody, Sample, SrsSource,
};

use crate::series::{Bucket, Limits, Metric, Point, Reading, Series};

/// Most phase spans kept (oldest dropped first).
pub const MAX_SPANS: usize = 50_000;
/// Most finished proofs kept.
pub const MAX_PROOFS: usize = 10_000;
/// Most threshold runs kept.
pub const MAX_RUNS: usize = 50_000;
/// Most log lines kept.
pub const MAX_LOG: usize = 2_000;
/// Most alert changes kept.
pub const MAX_ALERTS: usize = 10_000;
/// Most marks kept.
pub const MAX_MARKS: usize = 10_000;
/// Most mode changes kept.
pub const MAX_MODE_CHANGES: usize = 1_000;

/// Running min/max/mean of one quantity.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Readings.
    pub n: u64,
    /// Minimum.
    pub min: u64,
    /// Maximum.
    pub max: u64,
    /// Sum (for the mean).
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

    /// Mean, if any reading.
    pub fn mean(&self) -> Option<u64> {
        (self.n > 0).then(|| (self.sum / self.n as u128) as u64)
    }
}

/// One interval of a prover phase (from `phase_started` to `phase_ended`).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSpan {
    /// Proof id.
    pub proof_id: u64,
    /// Phase.
    pub phase: Phase,
    /// Partition, for per-partition phases.
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
}

impl PhaseSpan {
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
    /// Proof id.
    pub proof_id: u64,
    /// Mode.
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
    /// Succeeded.
    pub ok: Option<bool>,
    /// Verified.
    pub verified: Option<bool>,
    /// Peak RSS while it ran.
    pub rss: Stats,
}

/// Where the SRS (Groth16 parameters) stands.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SrsState {
    /// No SRS event seen.
    #[default]
    Unknown,
    /// Loading or generating.
    Loading {
        /// From where.
        source: SrsSource,
        /// Expected bytes.
        bytes: Option<u64>,
        /// Units done / total, from `srs_progress`.
        progress: Option<(u64, u64)>,
        /// Since, ns.
        since: u64,
    },
    /// Resident.
    Ready {
        /// Bytes resident.
        bytes: u64,
        /// Of which pinned.
        pinned_bytes: u64,
        /// From where.
        source: SrsSource,
        /// Seconds it took.
        duration_s: f64,
    },
}

impl SrsState {
    /// Short text for the header: "ready 1.2 GiB (disk, 0.4s)", "loading 40%".
    pub fn describe(&self) -> String {
        match self {
            SrsState::Unknown => "-".into(),
            SrsState::Loading {
                source, progress, ..
            } => {
                let src = source_name(*source);
                match progress {
                    Some((d, t)) if *t > 0 => format!("{src} {}%", d * 100 / t),
                    _ => format!("{src}…"),
                }
            }
            SrsState::Ready {
                bytes,
                source,
                duration_s,
                ..
            } => format!(
                "{} ({} {})",
                fmt_bytes(*bytes),
                source_name(*source),
                fmt_secs(*duration_s)
            ),
        }
    }
}

/// The timeline phase of an SRS load from `source`.
fn srs_phase(source: SrsSource) -> Phase {
    match source {
        SrsSource::Generated => Phase::SrsGenerate,
        SrsSource::Disk | SrsSource::Memory => Phase::SrsLoad,
    }
}

fn source_name(s: SrsSource) -> &'static str {
    match s {
        SrsSource::Generated => "gen",
        SrsSource::Disk => "disk",
        SrsSource::Memory => "memory",
    }
}

/// What the prover said about itself in `hello`.
#[derive(Debug, Clone, PartialEq)]
pub struct HelloInfo {
    /// Protocol version.
    pub protocol: String,
    /// Prover version.
    pub prover_version: String,
    /// Prover pid.
    pub pid: u32,
    /// Backend.
    pub backend: Backend,
    /// GPUs.
    pub gpus: Vec<GpuInfo>,
    /// Workload.
    pub config: ProverConfig,
}

/// The prover's state, from its events.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProverView {
    /// The `hello`, once seen.
    pub hello: Option<HelloInfo>,
    /// Current batch mode.
    pub mode: Option<BatchMode>,
    /// Run state from `state` events.
    pub state: Option<ProverState>,
    /// SRS.
    pub srs: SrsState,
    /// Proofs finished ok.
    pub proofs_done: u64,
    /// Sectors those proofs held (more than proofs once `batch:N` ran).
    pub sectors_done: u64,
    /// Proofs that failed.
    pub proofs_failed: u64,
    /// Queued proofs cancelled before they started (the prover stopped).
    pub proofs_cancelled: u64,
    /// Seconds per proof (per sector) of the last finished proof.
    pub last_s: Option<f64>,
    /// Sum of seconds per proof over finished proofs (for the average).
    sum_s: f64,
    /// Latest memory report: (pinned, gpu, srs) bytes.
    pub report: Option<(u64, u64, u64)>,
    /// Last refused mode change: (requested, reason).
    pub refused: Option<(BatchMode, String)>,
    /// Whether the prover said bye.
    pub bye: Option<String>,
    /// Last error the prover reported.
    pub last_error: Option<String>,
}

/// Finished proofs [`Model::throughput`] looks back over.
const THROUGHPUT_WINDOW: usize = 8;

impl ProverView {
    /// Average seconds per proof (per sector) over finished proofs.
    pub fn avg_s(&self) -> Option<f64> {
        (self.sectors_done > 0).then(|| self.sum_s / self.sectors_done as f64)
    }
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

/// What one batch mode did in a session: `classify`'s per-mode table and the `m` overlay.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeRow {
    /// The mode.
    pub mode: BatchMode,
    /// Proofs that finished ok.
    pub proofs: usize,
    /// Sectors they held.
    pub sectors: u64,
    /// Seconds at least one of them was running.
    pub busy_s: f64,
    /// Median over proofs of the highest RSS sampled while each ran.
    pub peak_median: u64,
    /// The highest of those.
    pub peak_max: u64,
}

impl ModeRow {
    /// Busy seconds per sector.
    pub fn s_per_sector(&self) -> f64 {
        self.busy_s / self.sectors.max(1) as f64
    }

    /// Sectors per busy hour.
    pub fn sectors_per_hour(&self) -> f64 {
        if self.busy_s > 0.0 {
            self.sectors as f64 * 3600.0 / self.busy_s
        } else {
            0.0
        }
    }
}

/// One finished proof for [`mode_rows`]: mode, start and end (ns), sectors, peak RSS.
pub type FinishedProof = (BatchMode, u64, u64, u32, u64);

/// Finished proofs summed per mode, in the order the modes first ran.
pub fn mode_rows(proofs: &[FinishedProof]) -> Vec<ModeRow> {
    let mut order: Vec<BatchMode> = Vec::new();
    for p in proofs {
        if !order.contains(&p.0) {
            order.push(p.0);
        }
    }
    order
        .into_iter()
        .map(|mode| {
            let these: Vec<&FinishedProof> = proofs.iter().filter(|p| p.0 == mode).collect();
            let intervals: Vec<(u64, u64)> = these.iter().map(|p| (p.1, p.2)).collect();
            let mut peaks: Vec<u64> = these.iter().map(|p| p.4).collect();
            peaks.sort_unstable();
            ModeRow {
                mode,
                proofs: these.len(),
                sectors: these.iter().map(|p| p.3 as u64).sum(),
                busy_s: busy_ns(&intervals) as f64 / 1e9,
                peak_median: peaks[peaks.len() / 2],
                peak_max: *peaks.last().expect("a mode in the list has a proof"),
            }
        })
        .collect()
}

/// The supervised (or watched) process.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ChildStatus {
    /// Nothing started yet.
    #[default]
    None,
    /// Running since `since`.
    Running {
        /// Pid.
        pid: u32,
        /// Start, ns.
        since: u64,
        /// Command line.
        command: Vec<String>,
    },
    /// Gone.
    Exited {
        /// Pid.
        pid: u32,
        /// Exit code.
        code: Option<i32>,
        /// Signal.
        signal: Option<i32>,
        /// OOM kill.
        oom_kill: bool,
        /// Text.
        reason: String,
        /// When, ns.
        at: u64,
    },
    /// Restarting after a failure.
    Restarting {
        /// Attempt.
        attempt: u32,
        /// Backoff seconds.
        backoff_s: f64,
    },
}

/// Severity of a log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Chatter.
    Debug,
    /// Normal.
    Info,
    /// Warning.
    Warn,
    /// Error / critical alert.
    Error,
}

/// One line of the event/alert log pane.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// When, ns.
    pub t: u64,
    /// Severity.
    pub level: LogLevel,
    /// Text.
    pub text: String,
}

/// An alert that is firing now.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveAlert {
    /// Since, ns.
    pub since: u64,
    /// The firing alert.
    pub alert: Alert,
}

/// The reduced state of one record stream.
#[derive(Debug, Clone)]
pub struct Model {
    thresholds: Thresholds,
    /// Samples.
    pub series: Series,
    /// Latest full sample (per-GPU readings, cgroup, mem_total…).
    pub last_sample: Option<Sample>,
    /// The same memory forecast the alert engine keeps (`predicted_free`), for the header.
    forecast: Forecast,
    /// Prover state from events.
    pub prover: ProverView,
    /// Child lifecycle.
    pub child: ChildStatus,
    /// Phase spans, ordered by end time (closed ones), oldest first.
    pub spans: VecDeque<PhaseSpan>,
    /// Phases open now, in start order.
    pub open: Vec<PhaseSpan>,
    /// The SRS load/generation in progress (a timeline phase, not one of the prover's).
    pub srs_open: Option<PhaseSpan>,
    /// Finished proofs, oldest first.
    pub proofs: VecDeque<ProofSpan>,
    /// Proofs in flight.
    pub running: Vec<ProofSpan>,
    /// Mode changes: (t, from, to).
    pub mode_changes: VecDeque<(u64, BatchMode, BatchMode)>,
    /// Alerts firing now.
    pub active_alerts: Vec<ActiveAlert>,
    /// Every alert change, oldest first.
    pub alert_history: VecDeque<(u64, Alert)>,
    /// Marks, oldest first.
    pub marks: VecDeque<(u64, Mark)>,
    /// Controls sent, oldest first (bounded like marks).
    pub controls: VecDeque<(u64, Control)>,
    /// Log pane lines, oldest first.
    pub log: VecDeque<LogLine>,
    /// Samples reported dropped.
    pub dropped_samples: u64,
    /// Events reported dropped.
    pub dropped_events: u64,
    /// Invalid protocol lines.
    pub bad_lines: u64,
    /// Threshold classification of RSS.
    classifier: Classifier,
    /// Closed threshold runs, oldest first.
    pub runs: VecDeque<Run>,
    /// Longest closed span, ns (bounds the search in [`Model::spans_at`]).
    max_span_ns: u64,
    first_t: Option<u64>,
    last_t: u64,
    records: u64,
    events: u64,
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
            last_sample: None,
            forecast: Forecast::default(),
            prover: ProverView::default(),
            child: ChildStatus::None,
            spans: VecDeque::new(),
            open: Vec::new(),
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

    /// The proofs kept (the last [`MAX_PROOFS`]) that finished ok, oldest first.
    fn finished_ok(&self) -> impl DoubleEndedIterator<Item = FinishedProof> + '_ {
        self.proofs
            .iter()
            .filter(|p| p.ok == Some(true))
            .filter_map(|p| Some((p.mode, p.start, p.end?, p.sectors, p.rss.max)))
    }

    /// The finished proofs kept summed per mode.
    pub fn mode_rows(&self) -> Vec<ModeRow> {
        mode_rows(&self.finished_ok().collect::<Vec<_>>())
    }

    /// Sectors per hour of busy time over the last proofs finished in `mode` (at least two
    /// among the last `THROUGHPUT_WINDOW`): sectors over the union of their start–end
    /// intervals. Unlike seconds per proof it counts overlapping proofs (`pipelined`) once and
    /// idle gaps not at all, so modes compare.
    pub fn throughput(&self, mode: BatchMode) -> Option<f64> {
        let recent: Vec<FinishedProof> = self.finished_ok().rev().take(THROUGHPUT_WINDOW).collect();
        mode_rows(&recent)
            .into_iter()
            .find(|r| r.mode == mode && r.proofs >= 2 && r.busy_s > 0.0)
            .map(|r| r.sectors_per_hour())
    }

    /// Memory predicted to be left when the proof now running peaks (negative: short), once
    /// a proof of its shape has finished; what the `predicted_free` alert metric reads.
    pub fn predicted_free(&self) -> Option<f64> {
        let s = self.last_sample.as_ref()?;
        self.forecast.predicted_free(s).map(|(v, _)| v)
    }

    /// Apply one record.
    pub fn apply(&mut self, rec: &Record) {
        let t = rec.t;
        self.records += 1;
        if self.first_t.is_none() {
            self.first_t = Some(t);
        }
        self.last_t = self.last_t.max(t);
        self.forecast.observe(rec);
        match &rec.body {
            RecordBody::Sample(s) => self.on_sample(t, s),
            RecordBody::Event(e) => {
                self.events += 1;
                self.on_event(t, e)
            }
            RecordBody::Alert(a) => self.on_alert(t, a),
            RecordBody::Control(c) => {
                self.push_log(t, LogLevel::Info, format!("→ {}", control_text(c)));
                push_bounded(&mut self.controls, (t, c.clone()), MAX_MARKS);
            }
            RecordBody::Mark(m) => self.on_mark(t, m),
        }
    }

    fn on_sample(&mut self, t: u64, s: &Sample) {
        let mut p = Point::from_sample(t, s);
        // The prover's own pinned report is an event; carry it into the series when the
        // sampler did not fill it, so the chart can draw it.
        if p.get(Metric::PinnedReported).is_none() {
            p.set(Metric::PinnedReported, self.prover.report.map(|r| r.0));
        }
        if p.get(Metric::Gpu).is_none() && s.gpus.is_empty() {
            // No NVML: nothing to carry.
        }
        self.series.push(p);
        let pinned = s.pinned.or(p.get(Metric::PinnedReported));
        for span in self.open.iter_mut().chain(self.srs_open.as_mut()) {
            span.rss.add(s.rss);
            if let Some(x) = pinned {
                span.pinned.add(x);
            }
            if let Some(x) = s.gpu_used {
                span.gpu.add(x);
            }
        }
        for pr in &mut self.running {
            pr.rss.add(s.peak.unwrap_or(s.rss).max(s.rss));
        }
        if let Some(run) = self.classifier.push(t, s.rss) {
            push_bounded(&mut self.runs, run, MAX_RUNS);
        }
        self.last_sample = Some(s.clone());
    }

    fn on_event(&mut self, t: u64, e: &Event) {
        match e {
            Event::Hello {
                protocol,
                prover_version,
                pid,
                backend,
                gpus,
                config,
            } => {
                self.prover.mode = Some(config.mode);
                self.prover.hello = Some(HelloInfo {
                    protocol: protocol.clone(),
                    prover_version: prover_version.clone(),
                    pid: *pid,
                    backend: *backend,
                    gpus: gpus.clone(),
                    config: config.clone(),
                });
                let gpu = if gpus.is_empty() {
                    String::new()
                } else {
                    format!(", {} GPU(s)", gpus.len())
                };
                self.push_log(
                    t,
                    LogLevel::Info,
                    format!(
                        "hello: prover {prover_version} pid {pid}, {backend}{gpu}, {} × {} constraints, {}",
                        config.partitions, config.constraints, config.mode
                    ),
                );
            }
            Event::SrsLoading { source, bytes } => {
                self.prover.srs = SrsState::Loading {
                    source: *source,
                    bytes: *bytes,
                    progress: None,
                    since: t,
                };
                let what = match source {
                    SrsSource::Generated => "generating",
                    SrsSource::Disk => "loading from disk",
                    SrsSource::Memory => "already in memory",
                };
                self.push_log(t, LogLevel::Info, format!("SRS {what}…"));
                // The SRS load is a phase of its own on the timeline (proof 0). It is kept
                // apart from `open` (the prover's own phases) so "no phase open" keeps its
                // meaning for the offline tables.
                self.close_srs_span(t, None);
                self.srs_open = Some(PhaseSpan {
                    proof_id: 0,
                    phase: srs_phase(*source),
                    partition: None,
                    start: t,
                    end: None,
                    duration_s: None,
                    rss: Stats::default(),
                    pinned: Stats::default(),
                    gpu: Stats::default(),
                });
            }
            Event::SrsProgress { done, total } => {
                if let SrsState::Loading { progress, .. } = &mut self.prover.srs {
                    *progress = Some((*done, *total));
                }
            }
            Event::SrsReady {
                bytes,
                pinned_bytes,
                source,
                duration_s,
            } => {
                self.prover.srs = SrsState::Ready {
                    bytes: *bytes,
                    pinned_bytes: *pinned_bytes,
                    source: *source,
                    duration_s: *duration_s,
                };
                self.push_log(
                    t,
                    LogLevel::Info,
                    format!("SRS ready: {}", self.prover.srs.describe()),
                );
                self.close_srs_span(t, Some(*duration_s));
            }
            Event::ProofQueued { .. } => {}
            Event::ProofStarted {
                proof_id,
                mode,
                sectors,
                partitions,
                ..
            } => {
                self.prover.mode = Some(*mode);
                self.running.retain(|p| p.proof_id != *proof_id);
                self.running.push(ProofSpan {
                    proof_id: *proof_id,
                    mode: *mode,
                    sectors: *sectors,
                    partitions: *partitions,
                    start: t,
                    end: None,
                    duration_s: None,
                    ok: None,
                    verified: None,
                    rss: Stats::default(),
                });
                self.push_log(
                    t,
                    LogLevel::Debug,
                    format!("proof {proof_id} started ({mode}, {sectors} sector(s))"),
                );
            }
            Event::PhaseStarted {
                proof_id,
                phase,
                partition,
            } => {
                // A repeated start of the same phase closes the earlier one (lost end).
                self.close_span(t, *proof_id, phase, *partition, None);
                self.open.push(PhaseSpan {
                    proof_id: *proof_id,
                    phase: phase.clone(),
                    partition: *partition,
                    start: t,
                    end: None,
                    duration_s: None,
                    rss: Stats::default(),
                    pinned: Stats::default(),
                    gpu: Stats::default(),
                });
            }
            Event::PhaseEnded {
                proof_id,
                phase,
                partition,
                duration_s,
            } => {
                if !self.close_span(t, *proof_id, phase, *partition, Some(*duration_s)) {
                    // An end without a start (e.g. recording began mid-phase): reconstruct it.
                    let start = t.saturating_sub((duration_s.max(0.0) * 1e9) as u64);
                    self.finish_span(PhaseSpan {
                        proof_id: *proof_id,
                        phase: phase.clone(),
                        partition: *partition,
                        start,
                        end: Some(t),
                        duration_s: Some(*duration_s),
                        rss: Stats::default(),
                        pinned: Stats::default(),
                        gpu: Stats::default(),
                    });
                }
            }
            Event::ProofFinished {
                proof_id,
                ok,
                verified,
                duration_s,
                mode,
                error,
                requeued_as,
                ..
            } => {
                if e.is_cancelled_proof() {
                    // It never ran: nothing to close, and not a failure to alarm anyone with.
                    self.running.retain(|p| p.proof_id != *proof_id);
                    if !requeued_as.is_empty() {
                        // Its sectors are still coming (the prover logs the requeue once).
                        return;
                    }
                    self.prover.proofs_cancelled += 1;
                    self.push_log(
                        t,
                        LogLevel::Info,
                        format!(
                            "proof {proof_id} {}",
                            error.as_deref().unwrap_or("cancelled before it started")
                        ),
                    );
                    return;
                }
                let mut span = match self.running.iter().position(|p| p.proof_id == *proof_id) {
                    Some(i) => self.running.remove(i),
                    None => ProofSpan {
                        proof_id: *proof_id,
                        mode: *mode,
                        sectors: 1,
                        partitions: 0,
                        start: t.saturating_sub((duration_s.max(0.0) * 1e9) as u64),
                        end: None,
                        duration_s: None,
                        ok: None,
                        verified: None,
                        rss: Stats::default(),
                    },
                };
                span.end = Some(t);
                span.duration_s = Some(*duration_s);
                span.ok = Some(*ok);
                span.verified = Some(*verified);
                // Close any phase of this proof left open (the prover failed mid-phase).
                let stale: Vec<(Phase, Option<u32>)> = self
                    .open
                    .iter()
                    .filter(|s| s.proof_id == *proof_id)
                    .map(|s| (s.phase.clone(), s.partition))
                    .collect();
                for (ph, part) in stale {
                    self.close_span(t, *proof_id, &ph, part, None);
                }
                let sectors = span.sectors.max(1);
                let per = duration_s / sectors as f64;
                if *ok {
                    self.prover.proofs_done += 1;
                    self.prover.sectors_done += sectors as u64;
                    self.prover.last_s = Some(per);
                    self.prover.sum_s += per * sectors as f64;
                    let v = if *verified {
                        "verified"
                    } else {
                        "NOT verified"
                    };
                    self.push_log(
                        t,
                        if *verified {
                            LogLevel::Info
                        } else {
                            LogLevel::Warn
                        },
                        format!(
                            "proof {proof_id} done in {} ({mode}), {v}, peak {}",
                            fmt_secs(*duration_s),
                            fmt_bytes(span.rss.max)
                        ),
                    );
                } else {
                    self.prover.proofs_failed += 1;
                    self.push_log(
                        t,
                        LogLevel::Error,
                        format!(
                            "proof {proof_id} FAILED after {}: {}",
                            fmt_secs(*duration_s),
                            error.as_deref().unwrap_or("no reason given")
                        ),
                    );
                }
                push_bounded(&mut self.proofs, span, MAX_PROOFS);
            }
            Event::ModeChanged { from, to } => {
                self.prover.mode = Some(*to);
                push_bounded(&mut self.mode_changes, (t, *from, *to), MAX_MODE_CHANGES);
                self.push_log(t, LogLevel::Info, format!("mode {from} → {to}"));
            }
            Event::ModeRefused { requested, reason } => {
                self.prover.refused = Some((*requested, reason.clone()));
                self.push_log(
                    t,
                    LogLevel::Warn,
                    format!("mode {requested} refused: {reason}"),
                );
            }
            Event::MemoryReport {
                pinned_bytes,
                gpu_bytes,
                srs_bytes,
            } => {
                self.prover.report = Some((*pinned_bytes, *gpu_bytes, *srs_bytes));
            }
            Event::State { state } => {
                self.prover.state = Some(*state);
                self.push_log(t, LogLevel::Debug, format!("prover {}", state_name(*state)));
            }
            Event::Log {
                level,
                target,
                message,
            } => {
                let lvl = match level.as_str() {
                    "error" => LogLevel::Error,
                    "warn" => LogLevel::Warn,
                    "info" => LogLevel::Info,
                    _ => LogLevel::Debug,
                };
                let short = target.rsplit("::").next().unwrap_or(target);
                let text = if short.is_empty() {
                    message.clone()
                } else {
                    format!("{short}: {message}")
                };
                self.push_log(t, lvl, text);
            }
            Event::Error { message, fatal } => {
                self.prover.last_error = Some(message.clone());
                let f = if *fatal { "fatal error" } else { "error" };
                self.push_log(t, LogLevel::Error, format!("prover {f}: {message}"));
            }
            Event::Bye {
                reason,
                proofs_done,
            } => {
                self.prover.bye = Some(reason.clone());
                self.prover.state = Some(ProverState::Stopping);
                self.push_log(
                    t,
                    LogLevel::Info,
                    format!("prover bye: {reason} ({proofs_done} proofs)"),
                );
            }
        }
    }

    /// Close an open SRS load/generation span.
    fn close_srs_span(&mut self, t: u64, duration_s: Option<f64>) {
        if let Some(mut span) = self.srs_open.take() {
            span.end = Some(t.max(span.start));
            span.duration_s = duration_s;
            self.finish_span(span);
        }
    }

    /// Close the open span matching the key; returns whether one was open.
    fn close_span(
        &mut self,
        t: u64,
        proof_id: u64,
        phase: &Phase,
        partition: Option<u32>,
        duration_s: Option<f64>,
    ) -> bool {
        let Some(i) = self
            .open
            .iter()
            .position(|s| s.proof_id == proof_id && &s.phase == phase && s.partition == partition)
        else {
            return false;
        };
        let mut span = self.open.remove(i);
        span.end = Some(t.max(span.start));
        span.duration_s = duration_s;
        self.finish_span(span);
        true
    }

    fn finish_span(&mut self, span: PhaseSpan) {
        let end = span.end.unwrap_or(span.start);
        self.max_span_ns = self.max_span_ns.max(end - span.start);
        // Keep `spans` sorted by end; ends arrive almost always in order.
        let at = self
            .spans
            .iter()
            .rposition(|s| s.end.unwrap_or(s.start) <= end)
            .map(|i| i + 1)
            .unwrap_or(0);
        self.spans.insert(at, span);
        if self.spans.len() > MAX_SPANS {
            self.spans.pop_front();
        }
    }

    fn on_alert(&mut self, t: u64, a: &Alert) {
        match a.state {
            AlertState::Firing => {
                self.active_alerts.retain(|x| x.alert.rule != a.rule);
                self.active_alerts.push(ActiveAlert {
                    since: t,
                    alert: a.clone(),
                });
            }
            AlertState::Cleared => self.active_alerts.retain(|x| x.alert.rule != a.rule),
        }
        push_bounded(&mut self.alert_history, (t, a.clone()), MAX_ALERTS);
        let level = match (a.state, a.level) {
            (AlertState::Cleared, _) => LogLevel::Info,
            (_, AlertLevel::Crit) => LogLevel::Error,
            (_, AlertLevel::Warn) => LogLevel::Warn,
            (_, AlertLevel::Info) => LogLevel::Info,
        };
        // The level once: "CRIT rss > 1GiB", not "CRIT crit: rss > 1GiB".
        let (rule, detail) = alert_parts(a);
        let text = match a.state {
            AlertState::Firing => format!("{} {rule}: {detail}", a.level.name().to_uppercase()),
            AlertState::Cleared => format!("cleared {rule}: {detail}"),
        };
        self.push_log(t, level, text);
    }

    fn on_mark(&mut self, t: u64, m: &Mark) {
        let line = match m {
            Mark::Note { text } => Some((LogLevel::Info, text.clone())),
            Mark::ChildStarted { pid, command } => {
                self.child = ChildStatus::Running {
                    pid: *pid,
                    since: t,
                    command: command.clone(),
                };
                Some((
                    LogLevel::Info,
                    format!("child {pid} started: {}", command.join(" ")),
                ))
            }
            Mark::ChildExited {
                pid,
                code,
                signal,
                oom_kill,
                reason,
            } => {
                self.child = ChildStatus::Exited {
                    pid: *pid,
                    code: *code,
                    signal: *signal,
                    oom_kill: *oom_kill,
                    reason: reason.clone(),
                    at: t,
                };
                let ok = *code == Some(0);
                Some((
                    if ok { LogLevel::Info } else { LogLevel::Error },
                    format!("child {pid} {reason}"),
                ))
            }
            Mark::Restart { attempt, backoff_s } => {
                self.child = ChildStatus::Restarting {
                    attempt: *attempt,
                    backoff_s: *backoff_s,
                };
                Some((
                    LogLevel::Warn,
                    format!("restarting child (attempt {attempt}, after {backoff_s:.0}s)"),
                ))
            }
            Mark::Dropped { what, count } => {
                if what == "samples" {
                    self.dropped_samples += count;
                } else {
                    self.dropped_events += count;
                }
                Some((LogLevel::Warn, format!("dropped {count} {what}")))
            }
            Mark::BadLine { error, excerpt } => {
                self.bad_lines += 1;
                // One line per bad line would flood the pane with a chatty child: log the
                // first few, then only the count (shown in the header).
                (self.bad_lines <= 5).then(|| {
                    (
                        LogLevel::Warn,
                        format!("bad event line ({error}): {}", excerpt.trim_end()),
                    )
                })
            }
            Mark::Warning { text } => Some((LogLevel::Warn, text.clone())),
        };
        if let Some((lvl, text)) = line {
            self.push_log(t, lvl, text);
        }
        push_bounded(&mut self.marks, (t, m.clone()), MAX_MARKS);
    }

    fn push_log(&mut self, t: u64, level: LogLevel, text: String) {
        push_bounded(&mut self.log, LogLine { t, level, text }, MAX_LOG);
    }

    // ---- queries -------------------------------------------------------------------------

    /// The newest sample, compactly.
    pub fn last_point(&self) -> Option<&Point> {
        self.series.last()
    }

    /// The reading at time `t` (see [`Series::at`]).
    pub fn value_at(&self, t: u64) -> Option<Reading> {
        self.series.at(t)
    }

    /// Full-resolution samples in `[t0, t1]`.
    pub fn samples_in(&self, t0: u64, t1: u64) -> impl Iterator<Item = &Point> + '_ {
        self.series.points_in(t0, t1)
    }

    /// Per-column min/max of every metric over `[t0, t1)` (see [`Series::columns`]).
    pub fn columns(&self, t0: u64, t1: u64, cols: usize) -> Vec<Bucket> {
        self.series.columns(t0, t1, cols)
    }

    /// Phase spans (closed and open) overlapping `[t0, t1]`.
    pub fn spans_in(&self, t0: u64, t1: u64) -> impl Iterator<Item = &PhaseSpan> + '_ {
        let i = self
            .spans
            .partition_point(|s| s.end.unwrap_or(s.start) < t0);
        self.spans.range(i..).filter(move |s| s.start <= t1).chain(
            self.open
                .iter()
                .chain(self.srs_open.as_ref())
                .filter(move |s| s.start <= t1),
        )
    }

    /// Phase spans covering time `t`.
    pub fn spans_at(&self, t: u64) -> Vec<&PhaseSpan> {
        let i = self.spans.partition_point(|s| s.end.unwrap_or(s.start) < t);
        let limit = t.saturating_add(self.max_span_ns);
        let mut out: Vec<&PhaseSpan> = self
            .spans
            .range(i..)
            .take_while(|s| s.end.unwrap_or(s.start) <= limit)
            .filter(|s| s.start <= t)
            .collect();
        out.extend(
            self.open
                .iter()
                .chain(self.srs_open.as_ref())
                .filter(|s| s.covers(t, self.last_t)),
        );
        out
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

    /// The run in progress.
    pub fn current_run(&self) -> Option<&Run> {
        self.classifier.current()
    }

    /// Every run so far, closing none (closed runs plus the one in progress).
    pub fn all_runs(&self) -> Vec<Run> {
        let mut v: Vec<Run> = self.runs.iter().cloned().collect();
        v.extend(self.classifier.current().cloned());
        v
    }

    /// Text for the header's "phase" field: the open phases ("synthesis ×4", "msm_h"),
    /// else the threshold phase.
    pub fn current_phase_text(&self) -> String {
        if !self.open.is_empty() {
            // Innermost (latest started) phase first, with a count of its partitions.
            let last = self.open.last().expect("non-empty");
            let same = self.open.iter().filter(|s| s.phase == last.phase).count();
            let mut text = match (same, last.partition) {
                (1, Some(p)) => format!("{} p{p}", last.phase),
                (1, None) => last.phase.to_string(),
                (n, _) => format!("{} ×{n}", last.phase),
            };
            let others = self.open.len() - same;
            if others > 0 && !(last.phase != Phase::Prove && others == 1) {
                text.push_str(&format!(" +{others}"));
            }
            return text;
        }
        if self.has_events() {
            return match self.prover.state {
                Some(s) => state_name(s).into(),
                None => "-".into(),
            };
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

    /// Every distinct `(phase, partition)` among spans overlapping `[t0, t1]`, in first-seen
    /// order (the Gantt rows).
    pub fn phase_rows(&self, t0: u64, t1: u64) -> Vec<(Phase, Option<u32>)> {
        let mut rows: Vec<(Phase, Option<u32>)> = Vec::new();
        for s in self.spans_in(t0, t1) {
            let key = (s.phase.clone(), s.partition);
            if !rows.contains(&key) {
                rows.push(key);
            }
        }
        rows
    }

    /// Alert times (firing) in the model, for `a`/`A` navigation.
    pub fn alert_times(&self) -> impl Iterator<Item = u64> + '_ {
        self.alert_history
            .iter()
            .filter(|(_, a)| a.state == AlertState::Firing)
            .map(|(t, _)| *t)
    }
}

/// An alert's rule without its level prefix ("rss > 1GiB" for "crit: rss > 1GiB") and its
/// message without the "cleared: " the engine starts a cleared one with: what the log and the
/// headless line print.
pub fn alert_parts(a: &Alert) -> (&str, &str) {
    let rule = a
        .rule
        .strip_prefix(a.level.name())
        .and_then(|r| r.strip_prefix(':'))
        .unwrap_or(&a.rule)
        .trim();
    let detail = a.message.strip_prefix("cleared: ").unwrap_or(&a.message);
    (rule, detail)
}

fn push_bounded<T>(q: &mut VecDeque<T>, x: T, max: usize) {
    q.push_back(x);
    while q.len() > max {
        q.pop_front();
    }
}

/// "pause", "prove 1", "mode batch:2", "shutdown".
pub fn control_text(c: &Control) -> String {
    match c {
        Control::Prove { count } => format!("prove {count}"),
        Control::SetMode { mode } => format!("set mode {mode}"),
        Control::Pause => "pause".into(),
        Control::Resume => "resume".into(),
        Control::Shutdown { abort } => {
            if *abort {
                "shutdown (abort)".into()
            } else {
                "shutdown".into()
            }
        }
    }
}

/// "idle", "proving", "paused", "stopping".
pub fn state_name(s: ProverState) -> &'static str {
    match s {
        ProverState::Idle => "idle",
        ProverState::Proving => "proving",
        ProverState::Paused => "paused",
        ProverState::Stopping => "stopping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use provetop_shared::units::{GIB, MIB};

    const S: u64 = 1_000_000_000;

    fn sample(t: u64, rss: u64) -> Record {
        Record::new(
            t,
            RecordBody::Sample(Sample {
                rss,
                peak: Some(rss + MIB),
                pinned: Some(10 * MIB),
                gpu_used: Some(GIB),
                ..Sample::default()
            }),
        )
    }

    fn ev(t: u64, e: Event) -> Record {
        Record::new(t, RecordBody::Event(e))
    }

    fn hello() -> Event {
        Event::Hello {
            protocol: "1.0".into(),
            prover_version: "0.1.0".into(),
            pid: 42,
            backend: Backend::Cpu,
            gpus: vec![],
            config: ProverConfig {
                partitions: 2,
                constraints: 1000,
                circuit: "c".into(),
                mode: BatchMode::Single,
                threads: None,
            },
        }
    }

    fn phase(t: u64, id: u64, ph: Phase, part: Option<u32>, start: bool) -> Record {
        ev(
            t,
            if start {
                Event::PhaseStarted {
                    proof_id: id,
                    phase: ph,
                    partition: part,
                }
            } else {
                Event::PhaseEnded {
                    proof_id: id,
                    phase: ph,
                    partition: part,
                    duration_s: 1.0,
                }
            },
        )
    }

    fn proof_run(m: &mut Model, id: u64, t0: u64) {
        m.apply(&ev(
            t0,
            Event::ProofStarted {
                proof_id: id,
                mode: BatchMode::Single,
                sectors: 1,
                partitions: 2,
                constraints: 2000,
            },
        ));
        m.apply(&phase(t0, id, Phase::Synthesis, Some(0), true));
        m.apply(&phase(t0, id, Phase::Synthesis, Some(1), true));
        m.apply(&sample(t0 + S / 2, 2 * GIB));
        m.apply(&phase(t0 + S, id, Phase::Synthesis, Some(0), false));
        m.apply(&phase(t0 + S, id, Phase::Synthesis, Some(1), false));
        m.apply(&phase(t0 + S, id, Phase::Prove, None, true));
        m.apply(&sample(t0 + 3 * S / 2, 3 * GIB));
        m.apply(&phase(t0 + 2 * S, id, Phase::Prove, None, false));
        m.apply(&ev(
            t0 + 2 * S,
            Event::ProofFinished {
                proof_id: id,
                ok: true,
                verified: true,
                duration_s: 2.0,
                mode: BatchMode::Single,
                phases: vec![],
                error: None,
                cancelled: false,
                requeued_as: vec![],
            },
        ));
    }

    /// Start and finish a proof of `sectors` sectors in `mode` (no phases).
    fn bare_proof(m: &mut Model, id: u64, mode: BatchMode, sectors: u32, from: u64, to: u64) {
        m.apply(&ev(
            from,
            Event::ProofStarted {
                proof_id: id,
                mode,
                sectors,
                partitions: 2,
                constraints: 2000,
            },
        ));
        m.apply(&ev(
            to,
            Event::ProofFinished {
                proof_id: id,
                ok: true,
                verified: true,
                duration_s: (to - from) as f64 / 1e9,
                mode,
                phases: vec![],
                error: None,
                cancelled: false,
                requeued_as: vec![],
            },
        ));
    }

    /// The rate counts overlapping (pipelined) proofs once and idle gaps not at all, per mode;
    /// seconds per proof would say 4 s/proof for both modes below.
    #[test]
    fn throughput_is_sectors_over_busy_time_per_mode() {
        let mut m = Model::new(Thresholds::default());
        m.apply(&ev(0, hello()));
        let single = BatchMode::Single;
        assert_eq!(m.throughput(single), None);
        // single: 4 s each, 10 s of idle between them: 2 sectors in 8 busy seconds.
        bare_proof(&mut m, 1, single, 1, 0, 4 * S);
        assert_eq!(m.throughput(single), None, "one proof is no rate");
        bare_proof(&mut m, 2, single, 1, 14 * S, 18 * S);
        assert!((m.throughput(single).unwrap() - 900.0).abs() < 1e-6);
        // pipelined:2: 4 s each, each starting 2 s after the one before: 3 sectors in 8 s.
        let pipelined = BatchMode::Pipelined(2);
        bare_proof(&mut m, 3, pipelined, 1, 20 * S, 24 * S);
        bare_proof(&mut m, 4, pipelined, 1, 22 * S, 26 * S);
        bare_proof(&mut m, 5, pipelined, 1, 24 * S, 28 * S);
        assert!((m.throughput(pipelined).unwrap() - 1350.0).abs() < 1e-6);
        assert!((m.throughput(single).unwrap() - 900.0).abs() < 1e-6);
        // batch:2 counts its sectors.
        let batch = BatchMode::Batch(2);
        bare_proof(&mut m, 6, batch, 2, 30 * S, 36 * S);
        bare_proof(&mut m, 7, batch, 2, 36 * S, 42 * S);
        assert!((m.throughput(batch).unwrap() - 1200.0).abs() < 1e-6);
        assert_eq!((m.prover.proofs_done, m.prover.sectors_done), (7, 9));
    }

    #[test]
    fn mode_rows_sum_per_mode_in_the_order_modes_ran() {
        let (single, pipelined) = (BatchMode::Single, BatchMode::Pipelined(2));
        let rows = mode_rows(&[
            (single, 0, 4 * S, 1, 3 * GIB),
            (pipelined, 10 * S, 14 * S, 1, 5 * GIB),
            // Overlaps the one before: the busy time counts 12–14 s once.
            (pipelined, 12 * S, 16 * S, 1, 6 * GIB),
            (pipelined, 14 * S, 18 * S, 1, 4 * GIB),
            (single, 20 * S, 24 * S, 1, 2 * GIB),
        ]);
        let modes: Vec<BatchMode> = rows.iter().map(|r| r.mode).collect();
        assert_eq!(modes, [single, pipelined]);
        let p = &rows[1];
        assert_eq!((p.proofs, p.sectors), (3, 3));
        assert_eq!(p.busy_s, 8.0);
        assert!((p.s_per_sector() - 8.0 / 3.0).abs() < 1e-9);
        assert!((p.sectors_per_hour() - 1350.0).abs() < 1e-9);
        assert_eq!((p.peak_median, p.peak_max), (5 * GIB, 6 * GIB));
        assert_eq!((rows[0].busy_s, rows[0].sectors), (8.0, 2));
    }

    #[test]
    fn cancelled_proofs_are_counted_apart_from_failures() {
        let mut m = Model::new(Thresholds::default());
        m.apply(&ev(0, hello()));
        proof_run(&mut m, 1, S);
        let end = |id, error: &str, cancelled, requeued_as: Vec<u64>| {
            ev(
                10 * S,
                Event::ProofFinished {
                    proof_id: id,
                    ok: false,
                    verified: false,
                    duration_s: 0.0,
                    mode: BatchMode::Single,
                    phases: vec![],
                    error: Some(error.into()),
                    cancelled,
                    requeued_as,
                },
            )
        };
        let stop = "cancelled before it started (signal)";
        m.apply(&end(2, stop, true, vec![]));
        m.apply(&end(3, stop, true, vec![]));
        m.apply(&end(4, "out of memory", false, vec![]));
        // A 1.0 recording: the same text without the flag.
        m.apply(&end(5, stop, false, vec![]));
        // Requeued by a mode switch: its sectors are still to come, nothing was dropped.
        m.apply(&end(6, "requeued under batch:2", true, vec![9]));
        assert_eq!(m.prover.proofs_done, 1);
        assert_eq!(m.prover.proofs_cancelled, 3);
        assert_eq!(m.prover.proofs_failed, 1);
        // A proof that never ran leaves no proof span behind; the failed one does.
        let ids: Vec<u64> = m.proofs.iter().map(|p| p.proof_id).collect();
        assert_eq!(ids, [1, 4]);
    }

    #[test]
    fn phases_proofs_and_stats() {
        let mut m = Model::new(Thresholds::default());
        m.apply(&ev(0, hello()));
        m.apply(&sample(0, GIB));
        proof_run(&mut m, 1, S);
        proof_run(&mut m, 2, 4 * S);
        assert_eq!(m.prover.proofs_done, 2);
        assert_eq!(m.prover.last_s, Some(2.0));
        assert_eq!(m.prover.avg_s(), Some(2.0));
        assert_eq!(m.spans.len(), 6);
        assert!(m.open.is_empty());
        let at = m.spans_at(S + S / 2);
        assert_eq!(at.len(), 2);
        assert!(at.iter().all(|s| s.phase == Phase::Synthesis));
        let synth = &m.spans[0];
        assert_eq!(synth.rss.max, 2 * GIB);
        assert_eq!(synth.pinned.max, 10 * MIB);
        let prove = m.spans.iter().find(|s| s.phase == Phase::Prove).unwrap();
        assert_eq!(prove.rss.mean(), Some(3 * GIB));
        assert_eq!(prove.gpu.max, GIB);
        assert_eq!(m.phase_rows(0, 10 * S).len(), 3);
        assert_eq!(m.spans_in(4 * S, 10 * S).count(), 3);
        assert_eq!(m.proofs.len(), 2);
        assert_eq!(m.proofs[0].rss.max, 3 * GIB + MIB);
        assert!(m.log.iter().any(|l| l.text.contains("proof 2 done")));
    }

    #[test]
    fn current_phase_text_and_open_spans() {
        let mut m = Model::new(Thresholds::default());
        m.apply(&ev(0, hello()));
        m.apply(&phase(S, 1, Phase::Synthesis, Some(0), true));
        m.apply(&phase(S, 1, Phase::Synthesis, Some(1), true));
        assert_eq!(m.current_phase_text(), "synthesis ×2");
        m.apply(&sample(2 * S, GIB));
        assert_eq!(m.spans_at(2 * S).len(), 2);
        m.apply(&phase(3 * S, 1, Phase::Synthesis, Some(1), false));
        assert_eq!(m.current_phase_text(), "synthesis p0");
        // An end without a start is reconstructed from its duration.
        m.apply(&phase(5 * S, 1, Phase::Verify, None, false));
        assert_eq!(m.spans.back().unwrap().start, 4 * S);
    }

    #[test]
    fn threshold_runs_without_events() {
        let mut m = Model::new(Thresholds::default());
        for (i, g) in [1u64, 1, 20, 20, 120, 190, 60, 45].iter().enumerate() {
            m.apply(&sample(i as u64 * S, g * GIB));
        }
        assert!(!m.has_events());
        assert_eq!(m.threshold_phase_at(0), Some(ThresholdPhase::IdlePre));
        assert_eq!(m.threshold_phase_at(3 * S), Some(ThresholdPhase::IdlePost));
        assert_eq!(m.threshold_phase_at(5 * S), Some(ThresholdPhase::PeakSynth));
        assert_eq!(m.threshold_phase_at(7 * S), Some(ThresholdPhase::IdlePost));
        assert_eq!(m.all_runs().len(), 6);
        assert_eq!(m.current_phase_text(), "idle_post (threshold)");
        let runs = m.runs_in(4 * S, 5 * S);
        assert!(runs.iter().any(|r| r.phase == ThresholdPhase::Synth));
    }

    #[test]
    fn alerts_marks_controls() {
        let mut m = Model::new(Thresholds::default());
        let alert = |state| Alert {
            rule: "rss > 1GiB".into(),
            level: AlertLevel::Crit,
            state,
            metric: "rss".into(),
            value: 2.0,
            threshold: 1.0,
            message: "rss 2 GiB > 1 GiB".into(),
        };
        m.apply(&Record::new(
            S,
            RecordBody::Alert(alert(AlertState::Firing)),
        ));
        assert_eq!(m.active_alerts.len(), 1);
        m.apply(&Record::new(
            2 * S,
            RecordBody::Alert(alert(AlertState::Cleared)),
        ));
        assert!(m.active_alerts.is_empty());
        assert_eq!(m.alert_times().collect::<Vec<_>>(), vec![S]);
        m.apply(&Record::new(
            3 * S,
            RecordBody::Mark(Mark::Dropped {
                what: "samples".into(),
                count: 7,
            }),
        ));
        m.apply(&Record::new(
            3 * S,
            RecordBody::Mark(Mark::ChildStarted {
                pid: 9,
                command: vec!["x".into()],
            }),
        ));
        m.apply(&Record::new(3 * S, RecordBody::Control(Control::Pause)));
        assert_eq!(m.dropped_samples, 7);
        assert!(matches!(m.child, ChildStatus::Running { pid: 9, .. }));
        assert_eq!(m.log.back().unwrap().text, "→ pause");
        for i in 0..10 {
            m.apply(&Record::new(
                4 * S + i,
                RecordBody::Mark(Mark::BadLine {
                    error: "e".into(),
                    excerpt: "x".into(),
                }),
            ));
        }
        assert_eq!(m.bad_lines, 10);
        assert_eq!(
            m.log
                .iter()
                .filter(|l| l.text.starts_with("bad event"))
                .count(),
            5
        );
    }

    #[test]
    fn bounded_over_long_run() {
        let mut m = Model::new(Thresholds::default());
        // 3 hours at 20 Hz.
        for i in 0..(3 * 3600 * 20u64) {
            m.apply(&sample(i * S / 20, GIB + (i % 100) * MIB));
        }
        assert!(m.series.recent_len() <= 80_001);
        assert!(m.series.history_len() <= 16_384);
        assert!(m.series.heap_bytes() < 24 << 20);
        assert_eq!(m.series.total(), 3 * 3600 * 20);
        // Old history is still there as min/max.
        let r = m.value_at(10 * S).unwrap();
        assert!(matches!(r, Reading::Range(_)));
        // The 1 s bucket at 10 s holds samples 200..220.
        assert_eq!(r.range(Metric::Rss).unwrap(), (GIB, GIB + 19 * MIB));
    }

    #[test]
    fn mode_and_state() {
        let mut m = Model::new(Thresholds::default());
        m.apply(&ev(0, hello()));
        assert_eq!(m.prover.mode, Some(BatchMode::Single));
        m.apply(&ev(
            S,
            Event::ModeChanged {
                from: BatchMode::Single,
                to: BatchMode::Sps,
            },
        ));
        m.apply(&ev(
            S,
            Event::State {
                state: ProverState::Paused,
            },
        ));
        assert_eq!(m.prover.mode, Some(BatchMode::Sps));
        assert_eq!(m.mode_changes.len(), 1);
        assert_eq!(m.current_phase_text(), "paused");
        m.apply(&ev(
            2 * S,
            Event::SrsReady {
                bytes: GIB,
                pinned_bytes: 0,
                source: SrsSource::Disk,
                duration_s: 0.5,
            },
        ));
        assert_eq!(m.prover.srs.describe(), "1.0 GiB (disk 500ms)");
        // SrsReady without SrsLoading: no span. With it: a span on the timeline.
        m.apply(&ev(
            3 * S,
            Event::SrsLoading {
                source: SrsSource::Generated,
                bytes: None,
            },
        ));
        assert_eq!(m.header_phase_text(), "srs_generate");
        m.apply(&ev(
            5 * S,
            Event::SrsReady {
                bytes: GIB,
                pinned_bytes: 0,
                source: SrsSource::Generated,
                duration_s: 2.0,
            },
        ));
        let srs = m.spans.back().unwrap();
        assert_eq!(
            (srs.phase.clone(), srs.start, srs.end),
            (Phase::SrsGenerate, 3 * S, Some(5 * S))
        );
    }
}
