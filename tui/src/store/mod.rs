//! A recorded file opened for replay, classify and export: every record in memory, plus an
//! index built in one pass of the [`Model`] reducer so that replay can seek quickly.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use provetop::store::Store;
//! let store = Store::open(std::path::Path::new("run.ptop"))?;
//! store.report_warnings(); // one stderr line per survived problem
//! let t = store.start() + 90_000_000_000; // 90 s in
//! let model = store.model_at(t); // state exactly as live mode had it at t
//! let next = store.next_phase_start(t); // `]`
//! # let _ = (model, next); Ok(()) }
//! ```
//!
//! # Time
//! Record times are monotonic nanoseconds (`Record::t`; for CSVs, ns since the earliest row).
//! Files keep their record order even where times go backwards (CSV rows out of order, an
//! event stamped a little before the sample received just ahead of it); seeking uses each
//! record's *reach*, the largest time up to and including it, so "the state at time t" is
//! "every record whose reach is ≤ t, applied in file order".
//!
//! # Index
//! * Snapshots of the model every K records (K grows with the file so that snapshots stay
//!   within [`SNAPSHOT_BUDGET`] bytes); [`Store::model_at`] clones the nearest snapshot at or
//!   before t and applies at most K records.
//! * Sorted times of phase starts (a prover phase starting while no span of that phase is
//!   open; without prover events, a threshold phase run starting) and of firing alerts, for
//!   `]`/`[` and `a`/`A`.
//! * Every prover phase span with the memory the reducer saw while it was open (for
//!   `classify`), and the prover's phase text at each sample (for `export`).
//!
//! All of it comes from the reducer's [`Effects`](crate::model::Effects): the store never
//! compares model states.
//!
//! # Streaming
//! [`Store::stream`] makes the same reducer pass over a session read record by record
//! ([`crate::scan`]) and keeps none of them: the spans, proofs and counters above without the
//! per-record index, for the readers that must not grow with the session (`classify`,
//! `export`, `compare`). Where log-derived records go is `place.rs`'s; the tables `classify`
//! prints are `tables.rs`'.

use std::path::{Path, PathBuf};

use provetop_shared::classify::Thresholds;
use provetop_shared::session::{self, LoadError, Loaded, SessionHeader, SourceKind, Warning};
use provetop_shared::{Record, RecordBody};

use crate::model::{Effect, Model, PhaseSpan, ProofSpan, SpanSource, Stats};

/// Most bytes the model snapshots may hold together (estimated); beyond it every other
/// snapshot is dropped and the spacing doubles.
pub const SNAPSHOT_BUDGET: usize = 256 << 20;
/// Fewest records between two snapshots.
pub const MIN_SNAPSHOT_EVERY: usize = 1024;
/// Snapshots aimed for on a large file (before the memory budget thins them).
pub const TARGET_SNAPSHOTS: usize = 128;

const NO_LABEL: u32 = u32::MAX;

pub mod cover;
pub mod digest;
pub mod modes;
mod pass;
mod place;
pub mod proofs;
mod tables;

use pass::Pass;
pub use place::{place_derived, placed_each, Late, LateFinder, NeedsPlacement, Placer};
pub use tables::{mode_table, phase_table, phase_width};

/// A loaded session file or `timestamp,rss_kb` CSV with its seek index.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    loaded: Loaded,
    thresholds: Thresholds,
    /// `reach[i]`: the largest record time among records `0..=i` (non-decreasing; empty for
    /// a streamed store).
    reach: Vec<u64>,
    start: u64,
    /// The largest record time.
    end: u64,
    /// Records read.
    n_records: usize,
    /// (records applied, model after applying them); the first is the empty model.
    snapshots: Vec<(usize, Model)>,
    every: usize,
    phase_starts: Vec<u64>,
    alerts: Vec<u64>,
    /// Every span (a store loaded whole; a streamed one keeps only the digest).
    spans: Vec<PhaseSpan>,
    /// What the tables read of the spans.
    digest: digest::SpanDigest,
    /// Proofs that finished ok, as the reducer closed them, folded per mode (every one,
    /// unlike the model's history).
    modes: modes::ModeFold,
    /// The same proofs in start order (id, sectors, RSS seen), for `compare`'s selections.
    proofs: proofs::ProofList,
    /// Lowest RSS sampled (interval peaks included) once the SRS was first ready.
    srs_floor: Option<u64>,
    /// Samples taken while no prover phase was open (after the first event).
    between: Stats,
    between_ns: u64,
    labels: Vec<String>,
    /// Per record: index into `labels` of the prover phase text after applying it
    /// (`NO_LABEL` before the first event); empty when the file has no events.
    label_of: Vec<u32>,
    has_events: bool,
    /// A streamed store: no records, no spans (their digest only).
    records_gone: bool,
    /// What the pass keeps besides the phase text (a streamed export needs only that: its
    /// memory stays flat however many proofs).
    figures: Figures,
}

/// What a streamed store keeps besides the prover's phase text at each record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figures {
    /// Nothing more (export).
    Text,
    /// The tables' figures: spans folded per phase, proofs as the mode table counts them
    /// (40 bytes each), seek times (classify).
    Tables,
    /// Those, the finished proofs in start order, and each closed span's duration and peak
    /// (compare's selections and phase figures: 44 bytes a span and a proof, in spills).
    Spans,
}

impl Store {
    /// Load `path` (session file or CSV) with the seed's thresholds and index it.
    pub fn open(path: &Path) -> Result<Store, LoadError> {
        Self::open_with(path, Thresholds::default())
    }

    /// Load `path`; `thresholds` drive the reducer's threshold phases.
    pub fn open_with(path: &Path, thresholds: Thresholds) -> Result<Store, LoadError> {
        let loaded = session::load(path)?;
        Ok(Self::from_loaded(path, loaded, thresholds))
    }

    /// Load `path` for a single pass (classify, export): everything but the model snapshots,
    /// which cost memory and time that one pass does not need. [`Store::model_at`] still
    /// works, replaying from the start.
    pub fn scan(path: &Path, thresholds: Thresholds) -> Result<Store, LoadError> {
        let loaded = session::load(path)?;
        Ok(Self::build(path, loaded, thresholds, false))
    }

    /// [`Store::scan`] of records already loaded (a log read into a session).
    pub fn scan_loaded(path: &Path, loaded: Loaded, thresholds: Thresholds) -> Store {
        Self::build(path, loaded, thresholds, false)
    }

    /// Index records already loaded (`path` names the source in messages).
    pub fn from_loaded(path: &Path, loaded: Loaded, thresholds: Thresholds) -> Store {
        Self::build(path, loaded, thresholds, true)
    }

    /// A store of `loaded` with nothing indexed yet: what both the whole-file build and a
    /// streamed pass start from.
    fn fresh(path: &Path, loaded: Loaded, thresholds: Thresholds, has_events: bool) -> Store {
        Store {
            path: path.to_path_buf(),
            start: 0,
            loaded,
            thresholds,
            reach: Vec::new(),
            end: 0,
            n_records: 0,
            snapshots: Vec::new(),
            every: usize::MAX,
            phase_starts: Vec::new(),
            alerts: Vec::new(),
            spans: Vec::new(),
            digest: digest::SpanDigest::default(),
            modes: modes::ModeFold::default(),
            proofs: proofs::ProofList::default(),
            srs_floor: None,
            between: Stats::default(),
            between_ns: 0,
            labels: Vec::new(),
            label_of: Vec::new(),
            has_events,
            records_gone: false,
            figures: Figures::Spans,
        }
    }

    fn build(path: &Path, mut loaded: Loaded, thresholds: Thresholds, snapshots: bool) -> Store {
        place_derived(&mut loaded.records);
        let n = loaded.records.len();
        let every = if snapshots {
            (n / TARGET_SNAPSHOTS).max(MIN_SNAPSHOT_EVERY)
        } else {
            usize::MAX
        };
        let has_events = loaded
            .records
            .iter()
            // Phases sent by the prover, or read from its log lines, alike.
            .any(|r| matches!(r.body, RecordBody::Event(_) | RecordBody::Derived(_)));
        let start = loaded.records.iter().map(|r| r.t).min().unwrap_or(0);
        let mut store = Store::fresh(path, loaded, thresholds, has_events);
        store.start = start;
        store.reach = Vec::with_capacity(n);
        store.n_records = n;
        store.every = every;
        store.label_of = Vec::with_capacity(if has_events { n } else { 0 });
        store.index();
        store
    }

    /// The one pass: the reducer over every record, indexing what its effects tell.
    fn index(&mut self) {
        let records = std::mem::take(&mut self.loaded.records);
        let mut pass = Pass::new(self, false);
        self.snapshots.push((0, pass.model.clone()));
        for (i, rec) in records.iter().enumerate() {
            let label = self.step(&mut pass, i, rec, records.len());
            self.reach.push(pass.hi);
            if self.has_events {
                self.label_of.push(label);
            }
        }
        self.n_records = records.len();
        self.loaded.records = records;
        self.finish(pass);
    }

    /// Apply record `i` of `total` (in placed order) to the pass; returns its label.
    fn step(&mut self, p: &mut Pass, i: usize, rec: &Record, total: usize) -> u32 {
        p.hi = p.hi.max(rec.t);
        let hi = p.hi;
        let model = &mut p.model;
        model.apply_into(rec, &mut p.fx);
        let mut relabel = false;
        let keep = self.figures != Figures::Text;
        // Replay's `]`/`[` and `a`/`A` read the phase starts and alert times: a streamed
        // store's readers do not (one each a phase a proof would pile up).
        let nav = !self.records_gone;
        for e in &p.fx {
            match e {
                Effect::SpanOpened {
                    source: SpanSource::Prover,
                    first_of_phase,
                    ..
                } => {
                    if *first_of_phase && nav {
                        self.phase_starts.push(hi);
                    }
                    relabel = true;
                }
                Effect::SpanClosed {
                    source: SpanSource::Prover,
                    span,
                } => {
                    if keep {
                        // Closed: its end is its own; compare selects it by its proof's start
                        // (running, or just finished: a proof's end closes its spans).
                        let of = |p: &&ProofSpan| p.proof_id == span.proof_id;
                        let pr = &model.proofs;
                        let proof = pr.running.iter().find(of);
                        let proof = proof.or_else(|| pr.finished.iter().rev().take(4).find(of));
                        self.digest.add(span, 0, proof.map(|p| p.start));
                        if !self.records_gone {
                            self.spans.push(span.clone());
                        }
                    }
                    relabel = true;
                }
                Effect::StateChanged(_) => relabel = true,
                // Proofs read from log lines have no batch mode to compare.
                Effect::ProofFinished(pr) if model.has_events() && keep => {
                    if let Some(f) = pr.finished_ok() {
                        self.modes.add(&f);
                        // Compare's selections read the proofs in start order; classify's
                        // tables only what `modes` folds.
                        if self.figures == Figures::Spans {
                            self.proofs.add(pr);
                        }
                    }
                }
                Effect::SrsReady { .. } => p.srs_ready = true,
                Effect::AlertFired(_) if nav => self.alerts.push(hi),
                Effect::ThresholdPhaseChanged(_) if nav && !self.has_events => {
                    self.phase_starts.push(hi)
                }
                _ => {}
            }
        }
        if self.records_gone {
            // What a streamed store's readers read of a closed span is in its digest.
            model.spans.forget_closed();
        }
        match &rec.body {
            RecordBody::Event(_) | RecordBody::Derived(_) if relabel || p.label == NO_LABEL => {
                let text = model.current_phase_text();
                p.label = match p.label_ids.get(&text) {
                    // A streamed store needs only the text now (a long session's texts, one
                    // per proof and partition, would pile up).
                    _ if self.records_gone => {
                        p.text = text;
                        0
                    }
                    Some(&id) => id,
                    None => {
                        let id = self.labels.len() as u32;
                        p.label_ids.insert(text.clone(), id);
                        self.labels.push(text);
                        id
                    }
                };
            }
            RecordBody::Sample(s) => {
                if p.srs_ready {
                    let v = s.peak.unwrap_or(s.rss).max(s.rss);
                    self.srs_floor = Some(self.srs_floor.map_or(v, |f| f.min(v)));
                }
                if self.has_events && (model.has_events() || model.has_derived()) {
                    if let Some((t0, idle)) = p.prev_sample {
                        if idle {
                            self.between_ns += hi - t0;
                        }
                    }
                    let idle = model.spans.open.is_empty();
                    if idle {
                        self.between.add(s.rss);
                    }
                    p.prev_sample = Some((hi, idle));
                }
            }
            _ => {}
        }
        if matches!(rec.body, RecordBody::Event(_) | RecordBody::Derived(_)) {
            p.saw_events = true;
        }
        self.start = self.start.min(rec.t);
        if (i + 1) % self.every == 0 && i + 1 < total {
            let size = estimate_bytes(model);
            if p.snap_bytes + size > SNAPSHOT_BUDGET && self.snapshots.len() > 1 {
                // Over budget: widen the spacing (by powers of two, so kept snapshots stay
                // on its grid) until the whole file fits at the current model size, which
                // only grows towards the model's bounds; clones that would be thrown away
                // later are then never made.
                let want = total.saturating_mul(size) / SNAPSHOT_BUDGET + 1;
                while self.every < want {
                    self.every *= 2;
                }
                let every = self.every;
                self.snapshots.retain(|(at, _)| at % every == 0);
                p.snap_bytes = self.snapshots.iter().map(|(_, m)| estimate_bytes(m)).sum();
            }
            if (i + 1) % self.every == 0 {
                p.snap_bytes += size;
                self.snapshots.push((i + 1, model.clone()));
            }
        }
        p.label
    }

    fn finish(&mut self, p: Pass) {
        if let Some((t0, true)) = p.prev_sample {
            self.between_ns += p.hi - t0;
        }
        if self.n_records == 0 {
            self.start = 0;
        }
        self.end = p.hi;
        if self.figures != Figures::Text {
            for s in p.model.spans.open.with_stats() {
                self.digest.add(&s, self.end, None);
                if !self.records_gone {
                    self.spans.push(s);
                }
            }
        }
    }

    /// One streaming pass over `src` (see [`crate::scan`]): the store of everything but the
    /// records (none are kept: [`Store::records`] is empty, [`Store::model_at`] and the
    /// per-record lookups know nothing), each record handed to `visit` in placed order with
    /// the prover's phase text after it (as [`Store::phase_at_index`] has it). `has_events`:
    /// whether the file holds prover events, when a pass before found out (the text is only
    /// given then). `late`: the records [`place_derived`] moves, when a pass before found
    /// them; without it, a record that would move makes the pass stop with
    /// `Ok(Err(NeedsPlacement))`. `figures` says what else the store keeps ([`Figures`]).
    /// A `visit` that returns false ends the pass there (the store then holds what came
    /// before).
    #[allow(clippy::too_many_arguments)]
    pub fn stream(
        path: &Path,
        src: &session::stream::Stream,
        thresholds: Thresholds,
        has_events: Option<bool>,
        late: Option<&[Late]>,
        figures: Figures,
        visit: &mut dyn FnMut(&Record, Option<&str>) -> bool,
    ) -> Result<Result<Store, NeedsPlacement>, LoadError> {
        let loaded = Loaded {
            header: src.header.clone(),
            records: Vec::new(),
            warnings: Vec::new(),
            kind: SourceKind::Session,
        };
        // Unknown events: as if it had (what differs, threshold phase starts, is kept aside).
        let mut store = Store::fresh(path, loaded, thresholds, has_events.unwrap_or(true));
        store.start = u64::MAX;
        store.records_gone = true;
        store.figures = figures;
        store.digest.skip_closed = figures != Figures::Spans;
        let mut pass = Pass::new(&store, true);
        store.snapshots.push((0, pass.model.clone()));
        let mut placer = Placer::new(late);
        let mut i = 0usize;
        let mut stopped = false;
        // The visitor wants no more (its reader went away): the pass ends there.
        let halted = std::cell::Cell::new(false);
        let mut apply = |store: &mut Store, pass: &mut Pass, rec: Record| {
            let label = store.step(pass, i, &rec, usize::MAX);
            i += 1;
            let text =
                (has_events == Some(true) && label != NO_LABEL).then_some(pass.text.as_str());
            if !visit(&rec, text) {
                halted.set(true);
            }
        };
        let warnings = src.each_while(&mut |rec| {
            if placer
                .feed(rec, &mut |r| apply(&mut store, &mut pass, r))
                .is_err()
            {
                stopped = true;
            }
            !stopped && !halted.get()
        })?;
        if stopped {
            return Ok(Err(NeedsPlacement));
        }
        placer.finish(&mut |r| apply(&mut store, &mut pass, r));
        store.n_records = i;
        store.loaded.warnings = warnings;
        if has_events.is_none() {
            store.has_events = pass.saw_events;
        }
        store.finish(pass);
        Ok(Ok(store))
    }

    /// The file this came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Header (synthesized for CSVs: wall anchor = the earliest row).
    pub fn header(&self) -> &SessionHeader {
        &self.loaded.header
    }

    /// Session file or CSV.
    pub fn kind(&self) -> SourceKind {
        self.loaded.kind
    }

    /// Thresholds the reducer runs with.
    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    /// Every record, in file order.
    pub fn records(&self) -> &[Record] {
        &self.loaded.records
    }

    /// Problems survived while loading (cut-off tail, damaged frames, rows back in time).
    pub fn warnings(&self) -> &[Warning] {
        &self.loaded.warnings
    }

    /// Whether the file holds prover events.
    pub fn has_events(&self) -> bool {
        self.has_events
    }

    /// Earliest record time, ns (0 without records).
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Latest record time, ns (0 without records).
    pub fn end(&self) -> u64 {
        self.end
    }

    /// How many records the file holds (those read, for a streamed store).
    pub fn record_count(&self) -> usize {
        self.n_records
    }

    /// Number of records in effect at time `t`: records `0..index_at(t)` have reach ≤ t.
    /// Replay applies `records()[old..index_at(t)]` to its model as its clock advances.
    pub fn index_at(&self, t: u64) -> usize {
        self.reach.partition_point(|&r| r <= t)
    }

    /// The reach (time on the seek axis) of record `i`.
    pub fn reach(&self, i: usize) -> Option<u64> {
        self.reach.get(i).copied()
    }

    /// The model after the first `n` records (clamped to the file), as live mode had it.
    pub fn model_at_index(&self, n: usize) -> Model {
        let n = n.min(self.loaded.records.len());
        let k = self.snapshots.partition_point(|(i, _)| *i <= n) - 1;
        let (from, snap) = &self.snapshots[k];
        let mut m = snap.clone();
        for rec in &self.loaded.records[*from..n] {
            m.apply(rec);
        }
        m
    }

    /// The model at time `t`: every record with reach ≤ t applied (cost: one snapshot
    /// clone plus at most [`Store::snapshot_every`] records).
    pub fn model_at(&self, t: u64) -> Model {
        self.model_at_index(self.index_at(t))
    }

    /// Records between two snapshots (the most `model_at` re-applies; `usize::MAX` for a
    /// [`Store::scan`]).
    pub fn snapshot_every(&self) -> usize {
        self.every
    }

    /// Snapshots held.
    pub fn snapshots(&self) -> usize {
        self.snapshots.len()
    }

    /// Times of phase starts, ascending (markers for a position bar).
    pub fn phase_starts(&self) -> &[u64] {
        &self.phase_starts
    }

    /// Times of firing alerts, ascending.
    pub fn alert_times(&self) -> &[u64] {
        &self.alerts
    }

    /// First phase start strictly after `t` (`]`).
    pub fn next_phase_start(&self, t: u64) -> Option<u64> {
        next_after(&self.phase_starts, t)
    }

    /// Last phase start strictly before `t` (`[`).
    pub fn prev_phase_start(&self, t: u64) -> Option<u64> {
        last_before(&self.phase_starts, t)
    }

    /// First firing alert strictly after `t` (`a`).
    pub fn next_alert(&self, t: u64) -> Option<u64> {
        next_after(&self.alerts, t)
    }

    /// Last firing alert strictly before `t` (`A`).
    pub fn prev_alert(&self, t: u64) -> Option<u64> {
        last_before(&self.alerts, t)
    }

    /// Every prover phase span (closed ones in closing order, then those still open at the
    /// end of the file), with the memory the reducer saw while each was open; none in a
    /// streamed store ([`Store::stream`]), whose tables read [`Store::span_digest`].
    pub fn spans(&self) -> &[PhaseSpan] {
        &self.spans
    }

    /// What the tables read of the spans, folded.
    pub fn span_digest(&self) -> &digest::SpanDigest {
        &self.digest
    }

    /// Proofs that finished ok, in start order, with their ids and the RSS seen while each
    /// ran (interval peaks included); none in a store streamed for [`Figures::Tables`] or
    /// [`Figures::Text`].
    pub fn finished_proofs(&self) -> &proofs::ProofList {
        &self.proofs
    }

    /// Lowest RSS sampled (interval peaks included) once the SRS was first ready: the floor
    /// between proofs that `classify`'s mode table subtracts.
    pub fn srs_floor(&self) -> Option<u64> {
        self.srs_floor
    }

    /// The prover's phase text (the live header's "phase" field) in effect at record `i`;
    /// None before the first prover event or in a file without events.
    pub fn phase_at_index(&self, i: usize) -> Option<&str> {
        match self.label_of.get(i) {
            Some(&id) if id != NO_LABEL => Some(&self.labels[id as usize]),
            _ => None,
        }
    }

    /// Print each load warning to stderr as one line naming the file and where.
    pub fn report_warnings(&self) {
        for w in self.warnings() {
            crate::say!("provetop: warning: {}: {w}", self.path.display());
        }
    }
}

/// The first of the sorted times `v` after `t` (`]`, `a`).
pub(crate) fn next_after(v: &[u64], t: u64) -> Option<u64> {
    v.get(v.partition_point(|&x| x <= t)).copied()
}

/// The last of the sorted times `v` before `t` (`[`, `A`).
pub(crate) fn last_before(v: &[u64], t: u64) -> Option<u64> {
    v.partition_point(|&x| x < t).checked_sub(1).map(|i| v[i])
}

/// Rough heap size of a model: the series dominates; bounded queues count ~256 B a entry.
pub(crate) fn estimate_bytes(m: &Model) -> usize {
    // An open span also sits in the key index and the per-phase count.
    m.series.heap_bytes()
        + m.usage.heap_bytes()
        + 512 * (m.spans.open.len() + m.proofs.running.len())
        + 256
            * (m.spans.closed.len()
                + m.proofs.finished.len()
                + m.log.len()
                + m.notes.marks.len()
                + m.alerts.history.len()
                + m.notes.controls.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_after() {
        let v = [10, 20, 20, 30];
        assert_eq!(next_after(&v, 0), Some(10));
        assert_eq!(next_after(&v, 10), Some(20));
        assert_eq!(next_after(&v, 30), None);
        assert_eq!(last_before(&v, 30), Some(20));
        assert_eq!(last_before(&v, 10), None);
        assert_eq!(last_before(&v, 11), Some(10));
    }
}
