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
//! All of it comes from the reducer's [`Effects`]: the store never compares model states.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use provetop_shared::classify::Thresholds;
use provetop_shared::session::{self, LoadError, Loaded, SessionHeader, SourceKind, Warning};
use provetop_shared::units::{fmt_bytes, fmt_secs};
use provetop_shared::{Phase, Record, RecordBody};

use crate::model::{
    busy_ns, mode_rows, Effect, Effects, FinishedProof, Model, PhaseSpan, ProofSpan, SpanSource,
    Stats,
};

/// Most bytes the model snapshots may hold together (estimated); beyond it every other
/// snapshot is dropped and the spacing doubles.
pub const SNAPSHOT_BUDGET: usize = 256 << 20;
/// Fewest records between two snapshots.
pub const MIN_SNAPSHOT_EVERY: usize = 1024;
/// Snapshots aimed for on a large file (before the memory budget thins them).
pub const TARGET_SNAPSHOTS: usize = 128;

const NO_LABEL: u32 = u32::MAX;

/// A loaded session file or `timestamp,rss_kb` CSV with its seek index.
#[derive(Debug, Clone)]
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
    spans: Vec<PhaseSpan>,
    /// Proofs that finished ok, as the reducer closed them (unbounded, unlike the model's).
    finished: Vec<FinishedProof>,
    /// The same proofs whole (id, sectors, RSS seen), for `compare`'s selections.
    finished_spans: Vec<ProofSpan>,
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
        let mut store = Store {
            path: path.to_path_buf(),
            start: loaded.records.iter().map(|r| r.t).min().unwrap_or(0),
            loaded,
            thresholds,
            reach: Vec::with_capacity(n),
            end: 0,
            n_records: n,
            snapshots: Vec::new(),
            every,
            phase_starts: Vec::new(),
            alerts: Vec::new(),
            spans: Vec::new(),
            finished: Vec::new(),
            finished_spans: Vec::new(),
            srs_floor: None,
            between: Stats::default(),
            between_ns: 0,
            labels: Vec::new(),
            label_of: Vec::with_capacity(if has_events { n } else { 0 }),
            has_events,
        };
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
        for e in &p.fx {
            match e {
                Effect::SpanOpened {
                    source: SpanSource::Prover,
                    first_of_phase,
                    ..
                } => {
                    if *first_of_phase {
                        self.phase_starts.push(hi);
                    }
                    relabel = true;
                }
                Effect::SpanClosed {
                    source: SpanSource::Prover,
                    span,
                } => {
                    self.spans.push(span.clone());
                    relabel = true;
                }
                Effect::StateChanged(_) => relabel = true,
                // Proofs read from log lines have no batch mode to compare.
                Effect::ProofFinished(pr) if model.has_events() => {
                    if let Some(f) = pr.finished_ok() {
                        self.finished.push(f);
                        self.finished_spans.push(pr.clone());
                    }
                }
                Effect::SrsReady { .. } => p.srs_ready = true,
                Effect::AlertFired(_) => self.alerts.push(hi),
                Effect::ThresholdPhaseChanged(_) if !self.has_events => self.phase_starts.push(hi),
                Effect::ThresholdPhaseChanged(_) => p.threshold_starts.push(hi),
                _ => {}
            }
        }
        match &rec.body {
            RecordBody::Event(_) | RecordBody::Derived(_) if relabel || p.label == NO_LABEL => {
                let text = model.current_phase_text();
                p.label = match p.label_ids.get(&text) {
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
        self.spans.extend(p.model.spans.open.with_stats());
    }

    /// One streaming pass over `src` (see [`crate::scan`]): the store of everything but the
    /// records (none are kept: [`Store::records`] is empty, [`Store::model_at`] and the
    /// per-record lookups know nothing), each record handed to `visit` in placed order with
    /// the prover's phase text after it (as [`Store::phase_at_index`] has it). `has_events`:
    /// whether the file holds prover events, when a pass before found out (the text is only
    /// given then). `late`: the records [`place_derived`] moves, when a pass before found
    /// them; without it, a record that would move makes the pass stop with
    /// `Ok(Err(NeedsPlacement))`.
    pub fn stream(
        path: &Path,
        src: &session::stream::Stream,
        thresholds: Thresholds,
        has_events: Option<bool>,
        late: Option<&[Late]>,
        visit: &mut dyn FnMut(&Record, Option<&str>),
    ) -> Result<Result<Store, NeedsPlacement>, LoadError> {
        let mut store = Store {
            path: path.to_path_buf(),
            start: u64::MAX,
            loaded: Loaded {
                header: src.header.clone(),
                records: Vec::new(),
                warnings: Vec::new(),
                kind: SourceKind::Session,
            },
            thresholds,
            reach: Vec::new(),
            end: 0,
            n_records: 0,
            snapshots: Vec::new(),
            every: usize::MAX,
            phase_starts: Vec::new(),
            alerts: Vec::new(),
            spans: Vec::new(),
            finished: Vec::new(),
            finished_spans: Vec::new(),
            srs_floor: None,
            between: Stats::default(),
            between_ns: 0,
            labels: Vec::new(),
            label_of: Vec::new(),
            // Unknown: as if it had (what differs, threshold phase starts, is kept aside).
            has_events: has_events.unwrap_or(true),
        };
        let mut pass = Pass::new(&store, true);
        store.snapshots.push((0, pass.model.clone()));
        let mut placer = Placer::new(late);
        let mut i = 0usize;
        let mut stopped = false;
        let mut apply = |store: &mut Store, pass: &mut Pass, rec: Record| {
            let label = store.step(pass, i, &rec, usize::MAX);
            i += 1;
            let text = (has_events == Some(true) && label != NO_LABEL)
                .then(|| store.labels[label as usize].as_str());
            visit(&rec, text);
        };
        let warnings = src.each(&mut |rec| {
            if stopped {
                return;
            }
            if placer
                .feed(rec, &mut |r| apply(&mut store, &mut pass, r))
                .is_err()
            {
                stopped = true;
            }
        })?;
        if stopped {
            return Ok(Err(NeedsPlacement));
        }
        placer.finish(&mut |r| apply(&mut store, &mut pass, r));
        store.n_records = i;
        store.loaded.warnings = warnings;
        if has_events.is_none() {
            store.has_events = pass.saw_events;
            if !pass.saw_events {
                store.phase_starts = std::mem::take(&mut pass.threshold_starts);
            }
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
    /// end of the file), with the memory the reducer saw while each was open.
    pub fn spans(&self) -> &[PhaseSpan] {
        &self.spans
    }

    /// Proofs that finished ok, in the order they finished, with their ids and the RSS seen
    /// while each ran (interval peaks included).
    pub fn finished_proofs(&self) -> &[ProofSpan] {
        &self.finished_spans
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

/// The running state of the reducer pass.
struct Pass {
    model: Model,
    fx: Effects,
    label_ids: HashMap<String, u32>,
    label: u32,
    /// The reach so far.
    hi: u64,
    /// (reach, no phase open) at the previous sample.
    prev_sample: Option<(u64, bool)>,
    srs_ready: bool,
    snap_bytes: usize,
    /// Threshold phase starts, kept aside while whether the file has events is unknown.
    threshold_starts: Vec<u64>,
    saw_events: bool,
}

impl Pass {
    /// A pass from the start (`streamed`: for [`Store::stream`]).
    fn new(store: &Store, streamed: bool) -> Pass {
        // A streamed store keeps no model to show (no snapshots): its charts' series need
        // only what the reducer reads of them, not an hour of points.
        let model = if streamed {
            Model::with_limits(store.thresholds, crate::series::Limits::streaming())
        } else {
            Model::new(store.thresholds)
        };
        Pass {
            model,
            fx: Effects::new(),
            label_ids: HashMap::new(),
            label: NO_LABEL,
            hi: 0,
            prev_sample: None,
            srs_ready: false,
            snap_bytes: 0,
            threshold_starts: Vec::new(),
            saw_events: false,
        }
    }
}

fn next_after(v: &[u64], t: u64) -> Option<u64> {
    v.get(v.partition_point(|&x| x <= t)).copied()
}

fn last_before(v: &[u64], t: u64) -> Option<u64> {
    v.partition_point(|&x| x < t).checked_sub(1).map(|i| v[i])
}

/// Rough heap size of a model: the series dominates; bounded queues count ~256 B a entry.
fn estimate_bytes(m: &Model) -> usize {
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

/// One row of the prover-phase table.
#[derive(Debug, Clone, Default)]
struct PhaseRow {
    spans: u64,
    /// Intervals, for the union (wall time the phase was open).
    intervals: Vec<(u64, u64)>,
    rss: Stats,
    pinned: Stats,
    gpu: Stats,
}

/// Move each derived record that lies before records recorded ahead of it back to its time.
/// A phase known by its end and duration (`synthesis time: 79.4s`, a tracing close) starts
/// in the past: its start is recorded with the line, after the samples of its time, which
/// the reducer would otherwise count outside every phase. Nothing else moves, and records
/// keep their order among equal times.
pub fn place_derived(records: &mut Vec<Record>) {
    let mut reach = 0u64;
    let mut late = false;
    let keys: Vec<u64> = records
        .iter()
        .map(|r| {
            let (key, moves) = place_key(&mut reach, r);
            late |= moves;
            key
        })
        .collect();
    if !late {
        return;
    }
    let mut keyed: Vec<(u64, Record)> = keys.into_iter().zip(records.drain(..)).collect();
    keyed.sort_by_key(|(k, _)| *k);
    records.extend(keyed.into_iter().map(|(_, r)| r));
}

/// A record that [`place_derived`] moves back: its sort key (the time it moves to), its
/// index in the file, and itself.
pub type Late = (u64, usize, Record);

/// A streaming pass met a record that moves back, and was given no [`Late`] list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedsPlacement;

/// The key [`place_derived`] sorts a record by, given the reach before it (which it
/// updates), and whether the record moves back.
fn place_key(reach: &mut u64, r: &Record) -> (u64, bool) {
    let before = *reach;
    *reach = (*reach).max(r.t);
    match r.body {
        RecordBody::Derived(_) if r.t < before => (r.t, true),
        RecordBody::Derived(_) => (before, false),
        _ => (*reach, false),
    }
}

/// Collects, record by record in file order, the records [`place_derived`] moves back,
/// sorted as it places them.
#[derive(Debug, Default)]
pub struct LateFinder {
    reach: u64,
    i: usize,
    late: Vec<Late>,
}

impl LateFinder {
    /// The next record.
    pub fn feed(&mut self, r: &Record) {
        let (key, late) = place_key(&mut self.reach, r);
        if late {
            self.late.push((key, self.i, r.clone()));
        }
        self.i += 1;
    }

    /// The late records, in the order they are placed.
    pub fn finish(mut self) -> Vec<Late> {
        self.late.sort_by_key(|l| (l.0, l.1));
        self.late
    }
}

/// [`place_derived`] record by record: records in file order in, in placed order out. The
/// keys of records that stay are non-decreasing, so a late record goes out just before the
/// first that stays whose key is greater than its own.
struct Placer<'a> {
    late: Option<&'a [Late]>,
    next: usize,
    reach: u64,
}

impl<'a> Placer<'a> {
    fn new(late: Option<&'a [Late]>) -> Self {
        Placer {
            late,
            next: 0,
            reach: 0,
        }
    }

    /// The next record of the file; `Err` when it moves back and no late list was given.
    fn feed(&mut self, r: Record, out: &mut dyn FnMut(Record)) -> Result<(), NeedsPlacement> {
        let (key, late) = place_key(&mut self.reach, &r);
        let Some(list) = self.late else {
            if late {
                return Err(NeedsPlacement);
            }
            out(r);
            return Ok(());
        };
        if late {
            return Ok(()); // given from the list, in its place
        }
        while let Some(l) = list.get(self.next).filter(|l| l.0 < key) {
            out(l.2.clone());
            self.next += 1;
        }
        out(r);
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn FnMut(Record)) {
        for l in self.late.unwrap_or(&[]).get(self.next..).unwrap_or(&[]) {
            out(l.2.clone());
        }
    }
}

/// Every record of `src` in placed order (see [`place_derived`]), `late` being what a pass
/// before found ([`LateFinder`]); returns the warnings.
pub fn placed_each(
    src: &session::stream::Stream,
    late: &[Late],
    f: &mut dyn FnMut(Record),
) -> Result<Vec<Warning>, LoadError> {
    let mut placer = Placer::new(Some(late));
    let warnings = src.each(&mut |r| {
        // With the list, every record that moves is placed: feed never fails.
        let _ = placer.feed(r, f);
    })?;
    placer.finish(f);
    Ok(warnings)
}

/// Memory by the prover's actual phases, from the reducer's phase spans: per phase, how many
/// spans, the wall time it was open (overlapping partitions counted once), RSS min/max/mean,
/// and the largest pinned and GPU readings. None for a file without prover events.
pub fn phase_table(store: &Store) -> Option<String> {
    if !store.has_events() {
        return None;
    }
    let end = store.end();
    // Rows in the order the phases first started.
    let mut order: Vec<(u64, Phase)> = Vec::new();
    let mut rows: HashMap<Phase, PhaseRow> = HashMap::new();
    for s in store.spans() {
        let row = rows.entry(s.phase.clone()).or_insert_with(|| {
            order.push((s.start, s.phase.clone()));
            PhaseRow::default()
        });
        if let Some(o) = order.iter_mut().find(|o| o.1 == s.phase) {
            o.0 = o.0.min(s.start);
        }
        row.spans += 1;
        row.intervals.push((s.start, s.end_or(end)));
        row.rss.merge(&s.rss);
        row.pinned.merge(&s.pinned);
        row.gpu.merge(&s.gpu);
    }
    let mut out = String::new();
    // Every span read from the child's log lines (it never spoke the protocol): said so.
    let whence = if !store.spans().is_empty() && store.spans().iter().all(|s| s.derived) {
        "from its log lines"
    } else {
        "from events"
    };
    let _ = writeln!(out, "prover phases ({whence}):");
    // The name column as wide as its longest name (a rust-fil-proofs call's can be 30).
    let w = phase_width(store);
    let _ = writeln!(
        out,
        "  {:<w$} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11}",
        "phase", "spans", "time", "rss min", "rss max", "rss mean", "pinned max", "gpu max"
    );
    let b = |st: &Stats, f: fn(&Stats) -> Option<u64>| f(st).map(fmt_bytes).unwrap_or("-".into());
    order.sort();
    for (_, phase) in &order {
        let row = &rows[phase];
        let _ = writeln!(
            out,
            "  {:<w$} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11}",
            crate::text::inert(phase.as_str()),
            row.spans,
            fmt_secs(busy_ns(&row.intervals) as f64 / 1e9),
            b(&row.rss, Stats::min),
            b(&row.rss, Stats::max),
            b(&row.rss, Stats::mean),
            b(&row.pinned, Stats::max),
            b(&row.gpu, Stats::max),
        );
    }
    if store.between.n > 0 {
        let s = &store.between;
        let _ = writeln!(
            out,
            "  {:<w$} {:>6} {:>9} {:>11} {:>11} {:>11} {:>11} {:>11}",
            "(no phase open)",
            "-",
            fmt_secs(store.between_ns as f64 / 1e9),
            b(s, Stats::min),
            b(s, Stats::max),
            b(s, Stats::mean),
            "-",
            "-",
        );
    }
    Some(out)
}

/// The width of [`phase_table`]'s name column: its longest phase name (as shown), at least
/// 18.
pub fn phase_width(store: &Store) -> usize {
    store
        .spans()
        .iter()
        .map(|s| crate::text::inert(s.phase.as_str()).chars().count())
        .max()
        .unwrap_or(0)
        .max(18)
}

/// `batch modes (from events)`: per mode, in the order the modes first ran, the proofs that
/// finished ok, their sectors, the busy time (overlapping proofs count once), seconds per
/// sector and sectors per hour over it, and the peak RSS per proof (median and highest; above
/// the SRS floor: the lowest RSS sampled once the SRS was ready). The comparison an engineer
/// makes after switching modes in one session. `None` without a finished proof.
pub fn mode_table(store: &Store) -> Option<String> {
    if store.finished.is_empty() {
        return None;
    }
    let floor = store.srs_floor;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "batch modes (from events){}:",
        floor.map_or(String::new(), |f| format!(", SRS floor {}", fmt_bytes(f)))
    );
    let _ = writeln!(
        out,
        "  {:<14} {:>6} {:>7} {:>9} {:>9} {:>9} {:>11} {:>11} {:>11}",
        "mode",
        "proofs",
        "sectors",
        "busy",
        "s/sector",
        "sectors/h",
        "peak median",
        "peak max",
        "above floor"
    );
    for row in mode_rows(&store.finished) {
        let _ = writeln!(
            out,
            "  {:<14} {:>6} {:>7} {:>9} {:>9.2} {:>9.0} {:>11} {:>11} {:>11}",
            row.mode.to_string(),
            row.proofs,
            row.sectors,
            fmt_secs(row.busy_s),
            row.s_per_sector(),
            row.sectors_per_hour(),
            fmt_bytes(row.peak_median),
            fmt_bytes(row.peak_max),
            floor.map_or("-".into(), |f| fmt_bytes(row.peak_median.saturating_sub(f))),
        );
    }
    Some(out)
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
