//! Phase spans: the intervals of the prover's phases (and of the SRS load) for the Gantt
//! timeline, each with the memory seen while it was open.
//!
//! Open spans are keyed by (proof, phase, partition), so opening and closing one costs
//! O(log n) however many partitions are open at once (a 10^5-partition proof must not make
//! the monitor quadratic); closed spans are kept ordered by end time, bounded.

use std::collections::{BTreeMap, HashMap};

use provetop_shared::{Phase, Sample};

use super::effects::{Effect, Effects, SpanSource};
use super::stats::Stats;
use super::Model;

/// Most closed phase spans kept (oldest dropped first).
pub const MAX_SPANS: usize = 50_000;

/// One interval of a prover phase (from `phase_started` to `phase_ended`).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSpan {
    pub proof_id: u64,
    pub phase: Phase,
    /// For per-partition phases.
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
    /// Read from the child's log lines, not sent by it (`Derived` records).
    pub derived: bool,
}

impl PhaseSpan {
    /// A span opening at `start`.
    pub fn open(proof_id: u64, phase: Phase, partition: Option<u32>, start: u64) -> Self {
        PhaseSpan {
            proof_id,
            phase,
            partition,
            start,
            end: None,
            duration_s: None,
            rss: Stats::default(),
            pinned: Stats::default(),
            gpu: Stats::default(),
            derived: false,
        }
    }

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

    fn key(&self) -> SpanKey {
        (self.proof_id, self.phase.clone(), self.partition)
    }

    fn observe(&mut self, s: &Sample, pinned: Option<u64>) {
        self.rss.add(s.rss);
        if let Some(x) = pinned {
            self.pinned.add(x);
        }
        if let Some(x) = s.gpu_used {
            self.gpu.add(x);
        }
    }
}

type SpanKey = (u64, Phase, Option<u32>);

/// The memory seen by every span that opened between the same two samples: they have seen
/// the same samples ever since, so they share one set of stats while open.
#[derive(Debug, Clone, Default)]
struct Group {
    members: usize,
    rss: Stats,
    pinned: Stats,
    gpu: Stats,
}

impl Group {
    fn fill(&self, span: &mut PhaseSpan) {
        span.rss = self.rss;
        span.pinned = self.pinned;
        span.gpu = self.gpu;
    }
}

/// The prover's phases open now, in start order. A sample costs one update per group of
/// spans opened between the same two samples, not one per span: 10^5 partitions opened in one
/// burst are one group.
#[derive(Clone, Default)]
pub struct OpenSpans {
    /// By opening order: the group (samples seen when it opened) and the span, whose stats
    /// are its group's, filled in when it closes (or by [`OpenSpans::with_stats`]).
    by_seq: BTreeMap<u64, (u64, PhaseSpan)>,
    seq_of: HashMap<SpanKey, u64>,
    per_phase: HashMap<Phase, usize>,
    groups: BTreeMap<u64, Group>,
    samples: u64,
    next: u64,
}

/// The spans in start order with their stats: the index maps are derived (and a hash map's
/// order differs between two maps of the same spans).
impl std::fmt::Debug for OpenSpans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.with_stats()).finish()
    }
}

impl OpenSpans {
    /// Spans open, in start order (their memory stats are not filled in: see
    /// [`OpenSpans::with_stats`]).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &PhaseSpan> + '_ {
        self.by_seq.values().map(|(_, s)| s)
    }

    /// Spans open, in start order, with the memory seen so far.
    pub fn with_stats(&self) -> impl Iterator<Item = PhaseSpan> + '_ {
        self.by_seq.values().map(|(g, s)| {
            let mut s = s.clone();
            if let Some(g) = self.groups.get(g) {
                g.fill(&mut s);
            }
            s
        })
    }

    pub fn len(&self) -> usize {
        self.by_seq.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_seq.is_empty()
    }

    /// The latest started.
    pub fn last(&self) -> Option<&PhaseSpan> {
        self.iter().next_back()
    }

    /// How many spans of `phase` are open.
    pub fn count(&self, phase: &Phase) -> usize {
        self.per_phase.get(phase).copied().unwrap_or(0)
    }

    fn insert(&mut self, span: PhaseSpan) {
        *self.per_phase.entry(span.phase.clone()).or_default() += 1;
        self.seq_of.insert(span.key(), self.next);
        self.groups.entry(self.samples).or_default().members += 1;
        self.by_seq.insert(self.next, (self.samples, span));
        self.next += 1;
    }

    fn remove(&mut self, key: &SpanKey) -> Option<PhaseSpan> {
        let seq = self.seq_of.remove(key)?;
        let (g, mut span) = self.by_seq.remove(&seq)?;
        if let Some(group) = self.groups.get_mut(&g) {
            group.fill(&mut span);
            group.members -= 1;
            if group.members == 0 {
                self.groups.remove(&g);
            }
        }
        if let Some(n) = self.per_phase.get_mut(&span.phase) {
            *n -= 1;
            if *n == 0 {
                self.per_phase.remove(&span.phase);
            }
        }
        Some(span)
    }

    /// Every open span sees the sample (through its group).
    fn observe(&mut self, s: &Sample, pinned: Option<u64>) {
        for g in self.groups.values_mut() {
            g.rss.add(s.rss);
            if let Some(x) = pinned {
                g.pinned.add(x);
            }
            if let Some(x) = s.gpu_used {
                g.gpu.add(x);
            }
        }
        self.samples += 1;
    }
}

impl Model {
    /// The child spoke the protocol after some of its log lines were read as phases (its
    /// output and its events pipe are read apart, so a line can beat its `hello`): the precise
    /// path wins, and the phases read from its logs go, open and closed, so none is left
    /// open on the timeline waiting for an end that is no longer applied.
    pub(super) fn drop_derived_spans(&mut self) {
        let keys: Vec<SpanKey> = self
            .open
            .iter()
            .filter(|s| s.derived)
            .map(PhaseSpan::key)
            .collect();
        for key in &keys {
            self.open.remove(key);
        }
        self.spans.retain(|s| !s.derived);
    }

    /// `phase_started`: a repeated start of the same key closes the earlier one (its end was
    /// lost).
    pub(super) fn start_span(
        &mut self,
        t: u64,
        proof_id: u64,
        phase: &Phase,
        partition: Option<u32>,
        fx: &mut Effects,
    ) {
        let first_of_phase = self.open.count(phase) == 0;
        self.close_span(t, proof_id, phase, partition, None, fx);
        let mut span = PhaseSpan::open(proof_id, phase.clone(), partition, t);
        span.derived = self.deriving;
        self.open.insert(span);
        fx.push(Effect::SpanOpened {
            source: SpanSource::Prover,
            phase: phase.clone(),
            first_of_phase,
        });
    }

    /// `phase_ended`: close the open span, or reconstruct one from its duration when its
    /// start was never seen (e.g. recording began mid-phase).
    pub(super) fn end_span(
        &mut self,
        t: u64,
        proof_id: u64,
        phase: &Phase,
        partition: Option<u32>,
        duration_s: f64,
        fx: &mut Effects,
    ) {
        if !self.close_span(t, proof_id, phase, partition, Some(duration_s), fx) {
            let mut span = PhaseSpan::open(
                proof_id,
                phase.clone(),
                partition,
                t.saturating_sub((duration_s.max(0.0) * 1e9) as u64),
            );
            span.end = Some(t);
            span.duration_s = Some(duration_s);
            span.derived = self.deriving;
            self.finish_span(SpanSource::Prover, span, fx);
        }
    }

    /// Close every phase of `proof_id` still open (the prover failed mid-phase), in start
    /// order.
    pub(super) fn close_spans_of(&mut self, t: u64, proof_id: u64, fx: &mut Effects) {
        let stale: Vec<SpanKey> = self
            .open
            .iter()
            .filter(|s| s.proof_id == proof_id)
            .map(PhaseSpan::key)
            .collect();
        for (id, ph, part) in stale {
            self.close_span(t, id, &ph, part, None, fx);
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
        fx: &mut Effects,
    ) -> bool {
        let Some(mut span) = self.open.remove(&(proof_id, phase.clone(), partition)) else {
            return false;
        };
        span.end = Some(t.max(span.start));
        span.duration_s = duration_s;
        self.finish_span(SpanSource::Prover, span, fx);
        true
    }

    /// `srs_loading`: the SRS load is a phase of its own on the timeline (proof 0), kept apart
    /// from `open` so "no phase open" keeps its meaning for the offline tables.
    pub(super) fn start_srs_span(&mut self, t: u64, phase: Phase, fx: &mut Effects) {
        self.close_srs_span(t, None, fx);
        self.srs_open = Some(PhaseSpan::open(0, phase.clone(), None, t));
        fx.push(Effect::SpanOpened {
            source: SpanSource::Srs,
            phase,
            first_of_phase: true,
        });
    }

    pub(super) fn close_srs_span(&mut self, t: u64, duration_s: Option<f64>, fx: &mut Effects) {
        if let Some(mut span) = self.srs_open.take() {
            span.end = Some(t.max(span.start));
            span.duration_s = duration_s;
            self.finish_span(SpanSource::Srs, span, fx);
        }
    }

    fn finish_span(&mut self, source: SpanSource, span: PhaseSpan, fx: &mut Effects) {
        let end = span.end.unwrap_or(span.start);
        self.max_span_ns = self.max_span_ns.max(end - span.start);
        fx.push(Effect::SpanClosed {
            source,
            span: span.clone(),
        });
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

    /// Every open span sees the sample.
    pub(super) fn spans_observe(&mut self, s: &Sample, pinned: Option<u64>) {
        self.open.observe(s, pinned);
        if let Some(span) = self.srs_open.as_mut() {
            span.observe(s, pinned);
        }
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

    /// Every distinct `(phase, partition)` among spans overlapping `[t0, t1]`, in first-seen
    /// order (the Gantt rows).
    pub fn phase_rows(&self, t0: u64, t1: u64) -> Vec<(Phase, Option<u32>)> {
        let mut seen = std::collections::HashSet::new();
        let mut rows: Vec<(Phase, Option<u32>)> = Vec::new();
        for s in self.spans_in(t0, t1) {
            let key = (s.phase.clone(), s.partition);
            if seen.insert(key.clone()) {
                rows.push(key);
            }
        }
        rows
    }

    /// The open phases for the header ("synthesis ×4", "msm_h +1"): the innermost (latest
    /// started) phase, with a count of its partitions and of the others open.
    pub(super) fn open_phase_text(&self) -> Option<String> {
        let last = self.open.last()?;
        let same = self.open.count(&last.phase);
        let mut text = match (same, last.partition) {
            (1, Some(p)) => format!("{} p{p}", last.phase),
            (1, None) => last.phase.to_string(),
            (n, _) => format!("{} ×{n}", last.phase),
        };
        let others = self.open.len() - same;
        if others > 0 && !(last.phase != Phase::Prove && others == 1) {
            text.push_str(&format!(" +{others}"));
        }
        Some(text)
    }
}
