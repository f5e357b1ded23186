//! Phase spans: the intervals of the prover's phases (and of the SRS load) for the Gantt
//! timeline, each with the memory seen while it was open ([`Spans`]).
//!
//! Open spans are keyed by (proof, phase, partition), so opening and closing one costs
//! O(log n) however many partitions are open at once (a 10^5-partition proof must not make
//! the monitor quadratic); closed spans are kept ordered by end time, bounded.

use std::collections::{BTreeMap, HashMap};

use provetop_shared::{Event, Phase, Sample, SrsSource};

use super::archive::SpanArchive;
use super::effects::{Effect, Effects, SpanSource};
use super::span::{PhaseSpan, Stats};

/// Most closed phase spans kept (oldest dropped first).
pub const MAX_SPANS: usize = 50_000;

impl PhaseSpan {
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

/// The phase spans of a stream: closed, open, and the SRS load's.
#[derive(Debug, Clone, Default)]
pub struct Spans {
    /// Closed phase spans, ordered by end time, oldest first.
    pub closed: super::bounded::History<PhaseSpan>,
    /// The prover's phases open now.
    pub open: OpenSpans,
    /// The SRS load/generation in progress (a timeline phase, not one of the prover's).
    pub srs_open: Option<PhaseSpan>,
    /// Longest closed span, ns (bounds the search in [`Spans::at`]).
    max_span_ns: u64,
    /// Spans closed so far (in a replay's [`SpanArchive`], the next one's index).
    finished: usize,
    /// `finished` when the spans read from log lines went ([`Spans::drop_derived`]).
    dropped_at: Option<usize>,
    /// The archive's spans before this index are not in `closed` and may be wanted
    /// ([`Spans::light`], [`Spans::fill`]); 0 for a model that kept its own.
    unfilled: usize,
}

/// How much earlier than a window's start [`Spans::fill`] looks: spans close in the order
/// records are placed, which a late record may put before one that ended earlier.
const FILL_SLACK_NS: u64 = 60 * 1_000_000_000;

/// The timeline phase of an SRS load from `source`.
fn srs_phase(source: SrsSource) -> Phase {
    match source {
        SrsSource::Generated => Phase::SrsGenerate,
        SrsSource::Disk | SrsSource::Memory => Phase::SrsLoad,
    }
}

impl Spans {
    /// An event at `t`: phases open and close, the SRS load is a span, and a proof that ran
    /// closes the phases it left open. `derived`: the event was read from the child's log
    /// lines (its spans are marked so).
    pub fn apply(&mut self, t: u64, e: &Event, derived: bool, fx: &mut Effects) {
        match e {
            Event::PhaseStarted {
                proof_id,
                phase,
                partition,
            } => self.start(t, (*proof_id, phase.clone(), *partition), derived, fx),
            Event::PhaseEnded {
                proof_id,
                phase,
                partition,
                duration_s,
            } => {
                let key = (*proof_id, phase.clone(), *partition);
                self.end(t, key, *duration_s, derived, fx)
            }
            // A cancelled proof never ran: it has no phases to close.
            Event::ProofFinished { proof_id, ok, .. } if !e.is_cancelled_proof() => {
                self.close_of(t, *proof_id, !ok, fx)
            }
            Event::SrsLoading { source, .. } => self.start_srs(t, srs_phase(*source), fx),
            Event::SrsReady { duration_s, .. } => self.close_srs(t, Some(*duration_s), fx),
            _ => {}
        }
    }

    /// The child spoke the protocol after some of its log lines were read as phases (its
    /// output and its events pipe are read apart, so a line can beat its `hello`): the precise
    /// path wins, and the phases read from its logs go, open and closed, so none is left
    /// open on the timeline waiting for an end that is no longer applied.
    pub fn drop_derived(&mut self) {
        let keys: Vec<SpanKey> = self
            .open
            .iter()
            .filter(|s| s.derived)
            .map(PhaseSpan::key)
            .collect();
        for key in &keys {
            self.open.remove(key);
        }
        self.closed.retain(|s| !s.derived);
        self.dropped_at = Some(self.finished);
    }

    /// Let the closed spans go (a streamed store's pass: its readers read them from its
    /// digest as they close, and a month holds a model's bound of them, 50,000).
    pub fn forget_closed(&mut self) {
        if !self.closed.is_empty() {
            self.closed = super::bounded::History::new();
        }
    }

    /// These spans without the closed ones (a replay's light snapshot): [`Spans::fill`]
    /// takes back from the session's [`SpanArchive`] those a window shows.
    pub fn light(&self) -> Spans {
        Spans {
            closed: super::bounded::History::new(),
            unfilled: self.finished,
            ..self.clone()
        }
    }

    /// Take back from `archive` the spans [`Spans::light`] left out that a window from `t0`
    /// shows (or that end up to [`FILL_SLACK_NS`] before it), into `closed` in its order and
    /// within its bound, so the window shows what a model that kept its own would. They
    /// come without their memory stats. Cheap when there is nothing to take back; fails
    /// only where the archive's temporary file cannot be read (nothing is taken back then).
    pub fn fill(&mut self, archive: &SpanArchive, t0: u64) -> std::io::Result<()> {
        let hi = self.unfilled.min(archive.len());
        let from = t0.saturating_sub(FILL_SLACK_NS);
        let (lo, taken) = archive.back(hi, from, MAX_SPANS.saturating_sub(self.closed.len()))?;
        if lo == hi {
            return Ok(());
        }
        let dropped = self.dropped_at.unwrap_or(0);
        let mut older: Vec<(u64, usize, PhaseSpan)> = taken
            .into_iter()
            .filter(|(i, s)| !(*i < dropped && s.derived))
            .map(|(i, s)| (s.end.unwrap_or(s.start), i, s))
            .collect();
        // Ascending by end, then by closing order: where `finish` puts each.
        older.sort_unstable_by_key(|o| (o.0, o.1));
        let older = older.into_iter().map(|(_, _, s)| s).collect();
        self.closed
            .merge_older(older, MAX_SPANS, |s| s.end.unwrap_or(s.start));
        self.unfilled = if self.closed.len() >= MAX_SPANS {
            0
        } else {
            lo
        };
        Ok(())
    }

    /// `phase_started`: a repeated start of the same key closes the earlier one (its end was
    /// lost).
    fn start(&mut self, t: u64, key: SpanKey, derived: bool, fx: &mut Effects) {
        let first_of_phase = self.open.count(&key.1) == 0;
        self.close(t, &key, None, fx);
        let (proof_id, phase, partition) = key;
        let mut span = PhaseSpan::open(proof_id, phase.clone(), partition, t);
        span.derived = derived;
        self.open.insert(span);
        fx.push(Effect::SpanOpened {
            source: SpanSource::Prover,
            phase,
            first_of_phase,
        });
    }

    /// `phase_ended`: close the open span, or reconstruct one from its duration when its
    /// start was never seen (e.g. recording began mid-phase).
    fn end(&mut self, t: u64, key: SpanKey, duration_s: f64, derived: bool, fx: &mut Effects) {
        if !self.close(t, &key, Some(duration_s), fx) {
            let (proof_id, phase, partition) = key;
            let mut span = PhaseSpan::open(
                proof_id,
                phase,
                partition,
                t.saturating_sub((duration_s.max(0.0) * 1e9) as u64),
            );
            span.end = Some(t);
            span.duration_s = Some(duration_s);
            span.derived = derived;
            self.finish(SpanSource::Prover, span, fx);
        }
    }

    /// Close every phase of `proof_id` still open (the prover failed mid-phase), in start
    /// order; `failed` when the proof did.
    fn close_of(&mut self, t: u64, proof_id: u64, failed: bool, fx: &mut Effects) {
        let stale: Vec<SpanKey> = self
            .open
            .iter()
            .filter(|s| s.proof_id == proof_id)
            .map(PhaseSpan::key)
            .collect();
        for key in &stale {
            self.close_marked(t, key, None, failed, fx);
        }
    }

    /// The child exited at `t`: every phase still open (and the SRS load) ends there, failed,
    /// so none grows on the screen or names the header after the exit.
    pub fn close_all(&mut self, t: u64, fx: &mut Effects) {
        let open: Vec<SpanKey> = self.open.iter().map(PhaseSpan::key).collect();
        for key in &open {
            self.close_marked(t, key, None, true, fx);
        }
        self.close_srs(t, None, fx);
    }

    /// Close the open span matching `key`; returns whether one was open.
    fn close(&mut self, t: u64, key: &SpanKey, duration_s: Option<f64>, fx: &mut Effects) -> bool {
        self.close_marked(t, key, duration_s, false, fx)
    }

    /// [`Spans::close`], the span marked `failed`.
    fn close_marked(
        &mut self,
        t: u64,
        key: &SpanKey,
        duration_s: Option<f64>,
        failed: bool,
        fx: &mut Effects,
    ) -> bool {
        let Some(mut span) = self.open.remove(key) else {
            return false;
        };
        span.end = Some(t.max(span.start));
        span.duration_s = duration_s;
        span.failed = failed;
        self.finish(SpanSource::Prover, span, fx);
        true
    }

    /// `srs_loading`: the SRS load is a phase of its own on the timeline (proof 0), kept apart
    /// from `open` so "no phase open" keeps its meaning for the offline tables.
    fn start_srs(&mut self, t: u64, phase: Phase, fx: &mut Effects) {
        self.close_srs(t, None, fx);
        self.srs_open = Some(PhaseSpan::open(0, phase.clone(), None, t));
        fx.push(Effect::SpanOpened {
            source: SpanSource::Srs,
            phase,
            first_of_phase: true,
        });
    }

    fn close_srs(&mut self, t: u64, duration_s: Option<f64>, fx: &mut Effects) {
        if let Some(mut span) = self.srs_open.take() {
            span.end = Some(t.max(span.start));
            span.duration_s = duration_s;
            self.finish(SpanSource::Srs, span, fx);
        }
    }

    fn finish(&mut self, source: SpanSource, span: PhaseSpan, fx: &mut Effects) {
        self.finished += 1;
        let end = span.end.unwrap_or(span.start);
        self.max_span_ns = self.max_span_ns.max(end - span.start);
        fx.push(Effect::SpanClosed {
            source,
            span: span.clone(),
        });
        // Keep `closed` sorted by end; ends arrive almost always in order.
        let at = self
            .closed
            .iter()
            .rposition(|s| s.end.unwrap_or(s.start) <= end)
            .map(|i| i + 1)
            .unwrap_or(0);
        self.closed.insert(at, span);
        if self.closed.len() > MAX_SPANS {
            self.closed.pop_front();
        }
    }

    /// Every open span sees the sample.
    pub fn observe(&mut self, s: &Sample, pinned: Option<u64>) {
        self.open.observe(s, pinned);
        if let Some(span) = self.srs_open.as_mut() {
            span.observe(s, pinned);
        }
    }

    /// Phase spans (closed and open) overlapping `[t0, t1]`.
    pub fn overlapping(&self, t0: u64, t1: u64) -> impl Iterator<Item = &PhaseSpan> + '_ {
        let i = self
            .closed
            .partition_point(|s| s.end.unwrap_or(s.start) < t0);
        self.closed
            .from_index(i)
            .filter(move |s| s.start <= t1)
            .chain(
                self.open
                    .iter()
                    .chain(self.srs_open.as_ref())
                    .filter(move |s| s.start <= t1),
            )
    }

    /// Phase spans covering time `t`, open ones up to `now`.
    pub fn at(&self, t: u64, now: u64) -> Vec<&PhaseSpan> {
        let i = self
            .closed
            .partition_point(|s| s.end.unwrap_or(s.start) < t);
        let limit = t.saturating_add(self.max_span_ns);
        let mut out: Vec<&PhaseSpan> = self
            .closed
            .from_index(i)
            .take_while(|s| s.end.unwrap_or(s.start) <= limit)
            .filter(|s| s.start <= t)
            .collect();
        out.extend(
            self.open
                .iter()
                .chain(self.srs_open.as_ref())
                .filter(|s| s.covers(t, now)),
        );
        out
    }

    /// Every distinct `(phase, partition)` among spans overlapping `[t0, t1]`, in first-seen
    /// order (the Gantt rows).
    pub fn rows(&self, t0: u64, t1: u64) -> Vec<(Phase, Option<u32>)> {
        let mut seen = std::collections::HashSet::new();
        let mut rows: Vec<(Phase, Option<u32>)> = Vec::new();
        for s in self.overlapping(t0, t1) {
            let key = (s.phase.clone(), s.partition);
            if seen.insert(key.clone()) {
                rows.push(key);
            }
        }
        rows
    }

    /// The open phases for the header ("synthesis ×4", "msm_h +1"): the innermost (latest
    /// started) phase, with a count of its partitions and of the others open.
    pub fn open_phase_text(&self) -> Option<String> {
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
