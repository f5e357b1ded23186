//! The fold behind every scrape: [`State`] takes each record the pipeline stored, with the
//! [`Effects`] the model returned for it and the model after it, and keeps what the
//! exposition shows (latest readings, counters, open spans per phase label and the time each
//! label had one open, duration histograms, alert rules).
//!
//! Contract: a reading the records have not given stays `None` (never 0); label sets stay
//! bounded (phases by [`phase_index`], at most [`MAX_RULES`] rules); the prover's words are
//! [`cut`] before they are kept.

use std::collections::HashMap;

use provetop_shared::alerts::Rule;
use provetop_shared::classify::ThresholdPhase;
use provetop_shared::protocol::ProverState;
use provetop_shared::{
    AlertLevel, BatchMode, Event, Mark, Phase, Record, RecordBody, Sample, Usage,
};

use super::hist::Hist;
use super::labels::{cut, phase_index, ProofResult, PHASES};
use super::MAX_RULES;
use crate::model::{Effect, Effects, Model, SpanSource};

/// One configured (or seen) alert rule.
#[derive(Debug, Clone)]
pub(super) struct RuleState {
    pub(super) text: String,
    pub(super) level: AlertLevel,
    pub(super) metric: String,
    pub(super) active: bool,
}

/// What the prover said in `hello`, cut for labels.
#[derive(Debug, Clone, Default)]
pub(super) struct ProverInfo {
    pub(super) version: String,
    pub(super) backend: String,
    pub(super) protocol: String,
    pub(super) circuit: String,
}

/// How long a cgroup usage reading stands in the gauge: twice the sampler's once-a-second
/// read of an unlimited cgroup.
pub(super) const CGROUP_HELD_NS: u64 = 2_000_000_000;

/// Everything a scrape shows, folded from the records.
#[derive(Debug, Default)]
pub(super) struct State {
    /// The session's id (`provetop_session_info`), where it has one.
    pub(super) session: Option<String>,
    pub(super) sample: Option<Sample>,
    /// The latest cgroup memory.current read (when, bytes): without a limit the sampler reads
    /// it once a second, not every sample, and the gauge holds it for [`CGROUP_HELD_NS`].
    pub(super) cgroup_current: Option<(u64, u64)>,
    /// The latest usage record of the current child.
    pub(super) usage: Option<Usage>,
    /// The latest kernel record (the tree's cgroup, the binding limit, pressure).
    pub(super) kernel: Option<provetop_shared::Kernel>,
    /// The pid of the last OOM kill a mark named, so the child's exit does not count it twice.
    pub(super) oom_named: Option<u32>,
    pub(super) samples: u64,
    /// Highest RSS (interval peaks included) since the previous scrape.
    pub(super) interval_peak: Option<u64>,
    pub(super) pinned_reported: Option<u64>,
    pub(super) predicted_free: Option<f64>,
    /// Seconds until memory runs out at the recent RSS growth (absent while not growing).
    pub(super) time_to_oom: Option<f64>,
    /// Prover spans open per phase, as the model counts them (only phases with some open).
    pub(super) open: HashMap<Phase, usize>,
    /// The SRS load or generation open (a span of its own in the model).
    pub(super) srs_open: Option<Phase>,
    /// Spans open per phase label (prover spans and the SRS one).
    pub(super) open_n: [usize; PHASES],
    /// When each phase label last went from none open to some open (record time, ns).
    pub(super) open_since: [Option<u64>; PHASES],
    /// Time with some span of the phase open, ns, closed stretches only.
    pub(super) busy_ns: [u64; PHASES],
    pub(super) phase_hist: [Hist; PHASES],
    pub(super) threshold_phase: Option<ThresholdPhase>,
    pub(super) prover_state: Option<ProverState>,
    pub(super) prover: Option<ProverInfo>,
    pub(super) mode: Option<BatchMode>,
    pub(super) proofs: [u64; 3],
    pub(super) proof_hist: Hist,
    pub(super) running: usize,
    pub(super) last_proof_peak: Option<u64>,
    pub(super) last_proof_seconds: Option<f64>,
    pub(super) child_running: bool,
    pub(super) child_starts: u64,
    pub(super) restarts: u64,
    pub(super) oom_kills: u64,
    pub(super) rules: Vec<RuleState>,
    pub(super) alerts_fired: [u64; 3],
    pub(super) dropped_samples: u64,
    pub(super) dropped_events: u64,
    pub(super) bad_lines: u64,
    pub(super) warnings: u64,
    pub(super) recorder_warnings: u64,
    pub(super) recording_failing: bool,
    /// Newest record time, ns.
    pub(super) now: u64,
    pub(super) scrapes: u64,
    pub(super) rejected: u64,
}

impl State {
    /// The state of a session alerting on `rules` (exported by rule, inactive at first).
    pub(super) fn new(rules: &[Rule]) -> Self {
        let mut st = State::default();
        for r in rules.iter().take(MAX_RULES) {
            if !st.rules.iter().any(|x| x.text == r.text) {
                st.rules.push(RuleState {
                    text: r.text.clone(),
                    level: r.level,
                    metric: r.metric_label(),
                    active: false,
                });
            }
        }
        st
    }

    /// Fold one record the pipeline stored, with what it changed in `model` (`fx`).
    pub(super) fn observe(&mut self, rec: &Record, fx: &Effects, model: &Model) {
        let st = self;
        st.now = st.now.max(rec.t);
        match &rec.body {
            RecordBody::Sample(s) => {
                let high = s.peak.unwrap_or(s.rss).max(s.rss);
                st.interval_peak = Some(st.interval_peak.map_or(high, |p| p.max(high)));
                st.samples += 1;
                st.pinned_reported = s.pinned_reported.or(model.prover.report.map(|r| r.pinned));
                st.predicted_free = model.predicted_free();
                st.time_to_oom = model.time_to_oom();
                if let Some(c) = s.cgroup_current {
                    st.cgroup_current = Some((rec.t, c));
                }
                match &mut st.sample {
                    // Reuse the per-GPU vector: a sample at 20 Hz allocates nothing here.
                    Some(old) => old.clone_from(s),
                    None => st.sample = Some(s.clone()),
                }
            }
            RecordBody::Event(Event::Hello {
                protocol,
                prover_version,
                backend,
                config,
                ..
            }) => {
                st.prover = Some(ProverInfo {
                    version: cut(prover_version),
                    backend: backend.to_string(),
                    protocol: cut(protocol),
                    circuit: cut(&config.circuit),
                });
            }
            RecordBody::Event(Event::MemoryReport { pinned_bytes, .. }) => {
                st.pinned_reported = Some(*pinned_bytes);
            }
            RecordBody::Usage(u) => match &mut st.usage {
                Some(old) => old.clone_from(u),
                None => st.usage = Some(u.clone()),
            },
            RecordBody::Kernel(k) => match &mut st.kernel {
                Some(old) => old.clone_from(k.as_ref()),
                None => st.kernel = Some(k.as_ref().clone()),
            },
            RecordBody::Mark(m) => match m {
                Mark::Restart { .. } => st.restarts += 1,
                // The usage readings were the old tree's.
                Mark::ChildStarted { .. } => {
                    st.usage = None;
                    st.kernel = None;
                }
                Mark::ChildExited { pid, oom_kill, .. } => {
                    // Counted already when a mark named this kill.
                    if *oom_kill && st.oom_named != Some(*pid) {
                        st.oom_kills += 1;
                    }
                    st.usage = None;
                }
                Mark::OomKill { pid, .. } => {
                    st.oom_kills += 1;
                    st.oom_named = *pid;
                }
                Mark::Dropped { what, count } => {
                    if what == "samples" {
                        st.dropped_samples += count;
                    } else {
                        st.dropped_events += count;
                    }
                }
                Mark::BadLine { .. } => st.bad_lines += 1,
                Mark::Warning { .. } => st.warnings += 1,
                _ => {}
            },
            _ => {}
        }
        for e in fx {
            st.effect(rec.t, e, model);
        }
        st.running = model.proofs.running.len();
        st.prover_state = model.prover.state;
        st.mode = model.prover.mode;
    }

    /// One effect of a record: spans, proofs, alerts and the child as the model saw them.
    fn effect(&mut self, t: u64, e: &Effect, model: &Model) {
        match e {
            Effect::SpanOpened { source, phase, .. } => self.span_changed(t, *source, phase, model),
            Effect::SpanClosed { source, span } => {
                self.span_changed(t, *source, &span.phase, model);
                let secs = span.duration_s.unwrap_or_else(|| {
                    span.end.unwrap_or(span.start).saturating_sub(span.start) as f64 / 1e9
                });
                self.phase_hist[phase_index(&span.phase)].observe(secs);
            }
            Effect::ProofFinished(p) => {
                let result = if p.ok == Some(true) {
                    ProofResult::Ok
                } else {
                    ProofResult::Failed
                };
                self.proofs[result as usize] += 1;
                let secs = p.duration_s.unwrap_or_else(|| {
                    p.end.unwrap_or(p.start).saturating_sub(p.start) as f64 / 1e9
                });
                self.proof_hist.observe(secs);
                self.last_proof_seconds = Some(secs);
                self.last_proof_peak = p.rss.max();
            }
            Effect::ProofCancelled { .. } => self.proofs[ProofResult::Cancelled as usize] += 1,
            Effect::AlertFired(a) | Effect::AlertCleared(a) => {
                let active = matches!(e, Effect::AlertFired(_));
                if active {
                    self.alerts_fired[a.level as usize] += 1;
                }
                if let Some(r) = self.rules.iter_mut().find(|r| r.text == a.rule) {
                    r.active = active;
                } else if self.rules.len() < MAX_RULES {
                    self.rules.push(RuleState {
                        text: a.rule.clone(),
                        level: a.level,
                        metric: a.metric.clone(),
                        active,
                    });
                }
            }
            Effect::ChildStarted { .. } => {
                self.child_running = true;
                self.child_starts += 1;
            }
            Effect::ChildExited { .. } => self.child_running = false,
            Effect::ThresholdPhaseChanged(p) => self.threshold_phase = Some(*p),
            Effect::ModeChanged { .. } | Effect::StateChanged(_) | Effect::SrsReady { .. } => {}
        }
    }

    /// A span of `phase` opened or closed: take the model's count of that phase's open spans,
    /// and keep the time the phase's label had some open.
    fn span_changed(&mut self, t: u64, source: SpanSource, phase: &Phase, model: &Model) {
        let i = phase_index(phase);
        let was = self.open_n[i];
        match source {
            SpanSource::Prover => {
                let now = model.spans.open.count(phase);
                let before = match self.open.get_mut(phase) {
                    Some(n) => std::mem::replace(n, now),
                    None => {
                        if now > 0 {
                            self.open.insert(phase.clone(), now);
                        }
                        0
                    }
                };
                if now == 0 {
                    self.open.remove(phase);
                }
                self.open_n[i] = self.open_n[i].saturating_sub(before) + now;
            }
            SpanSource::Srs => {
                let now = model.spans.srs_open.as_ref().map(|s| s.phase.clone());
                // The old SRS span goes, the model's comes (another phase label, maybe).
                if let Some(old) = self.srs_open.take() {
                    let j = phase_index(&old);
                    let was_j = self.open_n[j];
                    self.open_n[j] = was_j.saturating_sub(1);
                    if j != i {
                        self.transition(j, t, was_j);
                    }
                }
                if let Some(new) = now {
                    let j = phase_index(&new);
                    let was_j = self.open_n[j];
                    self.open_n[j] += 1;
                    if j != i {
                        self.transition(j, t, was_j);
                    }
                    self.srs_open = Some(new);
                }
            }
        }
        self.transition(i, t, was);
    }

    /// Phase label `i` had `was` spans open before a change at `t`: start or end its stretch.
    fn transition(&mut self, i: usize, t: u64, was: usize) {
        match (was > 0, self.open_n[i] > 0) {
            (false, true) => self.open_since[i] = Some(t),
            (true, false) => {
                if let Some(since) = self.open_since[i].take() {
                    self.busy_ns[i] += t.saturating_sub(since);
                }
            }
            _ => {}
        }
    }

    /// Seconds phase label `i` has had a span open, the open stretch up to the newest record
    /// included.
    pub(super) fn busy_secs(&self, i: usize) -> f64 {
        let open = self.open_since[i].map_or(0, |s| self.now.saturating_sub(s));
        (self.busy_ns[i] + open) as f64 / 1e9
    }
}
