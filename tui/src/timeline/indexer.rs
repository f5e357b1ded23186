//! The background pass of a [`super::Timeline`]: first the records that placing moves back
//! (reading only the kind column of chunks without derived records), then the reducer over
//! every record in placed order, publishing as it goes what replay's keys and seeks need.
//!
//! Contract: what [`Indexed`] holds is true of the session up to [`Indexed::hi`] (the reach
//! of the records reduced); nothing is published ahead of the pass, and a snapshot's spans
//! are in the archive ([`Indexed::spans`]) when it is. Memory: the light snapshots within
//! [`super::LIGHT_BUDGET`], a few bytes a phase start and alert, about 40 a closed phase
//! span, the pass's own model with streaming series.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use provetop_shared::classify::Thresholds;
use provetop_shared::spill::Spill;
use provetop_shared::{Record, RecordBody};

use super::marks::Marks;
use super::{shown_limits, Dropper, LateList, Source, LIGHT_BUDGET, LIGHT_LOG, LIGHT_READINGS};
use crate::model::{Effect, Effects, Model, PhaseSpan, SpanArchive, SpanSource};
use crate::store::{LateFinder, Placer};

/// Kind bytes of prover events and log-derived events in a chunk's kind column (the frame
/// kinds of format 1).
const EVENT_KIND: u8 = 2;
const DERIVED_KIND: u8 = 7;

/// A light snapshot: the model (series left out) before part `part`.
#[derive(Debug, Clone)]
pub struct Snap {
    /// The first part not applied.
    pub part: usize,
    /// The placer's state there.
    pub placer: (usize, u64),
    /// The reach of the records applied.
    pub hi: u64,
    /// The model.
    pub model: Arc<Model>,
}

/// What the background pass has found so far.
#[derive(Debug, Default)]
pub struct Indexed {
    /// The records placing moves back, once the first stage is over.
    pub late: Option<LateList>,
    /// Whether the session holds prover events (known with `late`).
    pub has_events: bool,
    /// Parts the first stage has read.
    pub scanned: usize,
    /// Parts the reducer has gone over.
    pub reduced: usize,
    /// Parts in all.
    pub total: usize,
    /// The reach of the records reduced.
    pub hi: u64,
    /// Light snapshots, ascending; the first is the empty model.
    pub snaps: Vec<Snap>,
    /// Parts between two snapshots.
    pub every: usize,
    /// Phase starts, ascending (as the store's): thousands a day, so in a spill.
    pub phase_starts: Spill<u64>,
    /// Firing alerts, ascending (`a`/`A`): in a spill, as the phase starts.
    pub alerts: Spill<u64>,
    /// The same, thinned for the position bar.
    pub alert_marks: Marks,
    /// The recording ends without provetop's stop ([`crate::replay::ends_abruptly`]).
    pub abrupt: bool,
    /// The pass is over.
    pub done: bool,
    /// Damaged chunks, one line each.
    pub warnings: Vec<String>,
    /// Records reduced.
    pub records: u64,
    /// Every phase span closed, compact: the snapshots leave them out.
    pub spans: SpanArchive,
    /// Bytes the snapshots hold together ([`light_bytes`]).
    pub snap_bytes: usize,
}

impl Indexed {
    /// How far the pass has got, in per cent (the first stage counts a fifth).
    pub fn percent(&self) -> u32 {
        if self.done || self.total == 0 {
            return 100;
        }
        let done = self.scanned as f64 / 5.0 + self.reduced as f64 * 0.8;
        ((done / self.total as f64) * 100.0).min(99.0) as u32
    }

    /// The phase start (`phase`) or alert after `t` (`next`: `]`, `a`) or before it (`[`,
    /// `A`).
    pub fn jump(&self, phase: bool, next: bool, t: u64) -> std::io::Result<Option<u64>> {
        let v = if phase {
            &self.phase_starts
        } else {
            &self.alerts
        };
        if next {
            v.next_after(t)
        } else {
            v.last_before(t)
        }
    }

    fn snapshot(&mut self, s: Snap) {
        let size = light_bytes(&s.model);
        if self.snap_bytes + size > LIGHT_BUDGET && self.snaps.len() > 1 {
            // Over budget: widen the spacing (by powers of two, so kept snapshots stay on its
            // grid) and keep every other one.
            self.every *= 2;
            let every = self.every;
            self.snaps.retain(|x| x.part % every == 0);
            self.snap_bytes = self.snaps.iter().map(|x| light_bytes(&x.model)).sum();
        }
        if s.part % self.every == 0 {
            self.snap_bytes += size;
            self.snaps.push(s);
        }
    }
}

/// Bytes a light snapshot holds beyond what it shares, nearly. Its bounded histories are
/// persistent vectors of shared elements ([`History`](crate::model::History)): what the
/// snapshot pins alone is the end buffers of each (pointers, copied when the pass next
/// pushes or drops), while each element, however many snapshots hold it, is allocated once
/// (the pass's own model held it too). Its open spans and running proofs, its own newest
/// usage and kernel readings and log entries (shared with the pass until it drops them:
/// counted here) and what the model keeps whatever its history are its own.
pub fn light_bytes(m: &Model) -> usize {
    use crate::model::PhaseSpan;
    use std::mem::size_of;
    /// The histories a model keeps, four end buffers of 64 pointers each.
    const HISTORIES: usize = 9;
    const BUFFERS: usize = HISTORIES * 4 * 64 * size_of::<usize>();
    size_of::<Model>()
        + (m.spans.open.len() + m.proofs.running.len()) * size_of::<PhaseSpan>()
        + BUFFERS
        + m.usage.readings_bytes()
        + m.kernel_readings_bytes()
        + m.log.bytes()
        // The rest (the forecast's trend, the prover's view, open proofs' tables): a few KiB.
        + (8 << 10)
}

/// Start the pass on a thread of its own; it stops early when `stop` is set.
pub fn start(
    src: Arc<Source>,
    th: Thresholds,
    shared: Arc<Mutex<Indexed>>,
    stop: Arc<AtomicBool>,
    dropper: Dropper,
) {
    let mine = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("replay-index".into())
        .spawn(move || run(&src, th, &mine, &stop, &dropper));
    if let Err(e) = spawned {
        // Without the thread nothing gets indexed: say so rather than wait forever.
        let mut ix = lock(&shared);
        ix.warnings.push(format!("cannot start indexing: {e}"));
        ix.done = true;
    }
}

fn lock(m: &Mutex<Indexed>) -> std::sync::MutexGuard<'_, Indexed> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn run(
    src: &Arc<Source>,
    th: Thresholds,
    shared: &Mutex<Indexed>,
    stop: &AtomicBool,
    dropper: &Dropper,
) {
    let n = src.parts.len();
    {
        let mut ix = lock(shared);
        ix.total = n;
        ix.every = 1;
    }
    let Some((late, has_events)) = find_late(src, shared, stop) else {
        return;
    };
    let late = Arc::new(late);
    {
        let mut ix = lock(shared);
        ix.late = Some(late.clone());
        ix.has_events = has_events;
        ix.scanned = n;
    }
    reduce(src, th, &late, has_events, shared, stop, dropper);
}

/// The first stage: the late records and whether there are prover events.
fn find_late(
    src: &Source,
    shared: &Mutex<Indexed>,
    stop: &AtomicBool,
) -> Option<(Vec<super::Late>, bool)> {
    let mut finder = LateFinder::default();
    let mut has_events = false;
    for (i, p) in src.parts.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let p = match p {
            Ok(p) => p,
            Err(e) => {
                lock(shared).warnings.push(format!("the part list: {e}"));
                continue;
            }
        };
        let kinds = src.kinds(i);
        if let Some(k) = &kinds {
            has_events |= k.contains(&EVENT_KIND) || k.contains(&DERIVED_KIND);
        }
        match kinds {
            Some(k) if !k.contains(&DERIVED_KIND) => finder.skip(k.len(), p.t_max),
            // A tail, a chunk with derived records, or one whose kinds cannot be read: its
            // records (none for a damaged chunk, as the reducer will find).
            _ => {
                for r in src.records(i).map(|r| r.to_vec()).unwrap_or_default() {
                    has_events |= matches!(r.body, RecordBody::Event(_) | RecordBody::Derived(_));
                    finder.feed(&r);
                }
            }
        }
        if i % 16 == 15 {
            lock(shared).scanned = i + 1;
        }
    }
    Some((finder.finish(), has_events))
}

/// What the reducer's pass carries from record to record.
struct Pass {
    model: Model,
    fx: Effects,
    hi: u64,
    has_events: bool,
    phase_starts: Vec<u64>,
    alerts: Vec<u64>,
    abrupt: bool,
    records: u64,
    /// Spans closed since the last publish.
    closed: Vec<PhaseSpan>,
}

impl Pass {
    fn step(&mut self, r: &Record) {
        self.hi = self.hi.max(r.t);
        self.records += 1;
        self.model.apply_into(r, &mut self.fx);
        for e in &self.fx {
            match e {
                Effect::SpanOpened {
                    source: SpanSource::Prover,
                    first_of_phase: true,
                    ..
                } => self.phase_starts.push(self.hi),
                Effect::AlertFired(_) => self.alerts.push(self.hi),
                Effect::ThresholdPhaseChanged(_) if !self.has_events => {
                    self.phase_starts.push(self.hi)
                }
                Effect::SpanClosed { span, .. } => self.closed.push(span.clone()),
                _ => {}
            }
        }
        if let RecordBody::Mark(m) = &r.body {
            if let Some(a) = crate::model::abrupt_after(m) {
                self.abrupt = a;
            }
        }
    }

    /// Hand what was found since the last call to `ix`.
    fn publish(&mut self, ix: &mut Indexed) {
        self.phase_starts
            .drain(..)
            .for_each(|t| ix.phase_starts.push(t));
        for t in self.alerts.drain(..) {
            ix.alerts.push(t);
            ix.alert_marks.push(t);
        }
        for s in self.closed.drain(..) {
            ix.spans.push(&s);
        }
        if let Some(why) = ix.spans.failed() {
            let w = format!("closed phase spans are kept in memory ({why})");
            if !ix.warnings.contains(&w) {
                ix.warnings.push(w);
            }
        }
        ix.hi = self.hi;
        ix.abrupt = self.abrupt;
        ix.records = self.records;
    }
}

/// The second stage: the reducer over every record in placed order.
fn reduce(
    src: &Arc<Source>,
    th: Thresholds,
    late: &LateList,
    has_events: bool,
    shared: &Mutex<Indexed>,
    stop: &AtomicBool,
    dropper: &Dropper,
) {
    let mut pass = Pass {
        // Its series are never shown (a snapshot leaves them out): those of a streamed pass.
        model: Model::with_limits(th, crate::series::Limits::streaming()),
        fx: Effects::new(),
        hi: 0,
        has_events,
        phase_starts: Vec::new(),
        alerts: Vec::new(),
        abrupt: false,
        records: 0,
        closed: Vec::new(),
    };
    let mut placer = Placer::new(Some(late));
    lock(shared).snapshot(Snap {
        part: 0,
        placer: placer.state(),
        hi: 0,
        model: Arc::new(pass.model.light(shown_limits(), LIGHT_READINGS, LIGHT_LOG)),
    });
    // One thread decodes ahead while this one reduces.
    let mut ahead = super::Ahead::start(src, 0, src.parts.len(), 1, dropper);
    for i in 0..src.parts.len() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let decoded = ahead.as_mut().and_then(|a| a.take(i));
        let recs = match decoded.unwrap_or_else(|| src.records(i)) {
            Ok(r) => r,
            Err(why) => {
                lock(shared).warnings.push(why);
                Arc::new(Vec::new())
            }
        };
        for r in recs.iter() {
            // With the late list, feeding never fails.
            let _ = placer.feed_ref(r, &mut |r| pass.step(r));
        }
        dropper.free(recs);
        if i + 1 == src.parts.len() {
            placer.finish(&mut |r| pass.step(&r));
        }
        let every = lock(shared).every;
        // None after the last part: a cursor from there would place the last late records
        // again.
        let snap = ((i + 1) % every == 0 && i + 1 < src.parts.len()).then(|| Snap {
            part: i + 1,
            placer: placer.state(),
            hi: pass.hi,
            model: Arc::new(pass.model.light(shown_limits(), LIGHT_READINGS, LIGHT_LOG)),
        });
        let mut ix = lock(shared);
        pass.publish(&mut ix);
        ix.reduced = i + 1;
        if let Some(s) = snap {
            ix.snapshot(s);
        }
    }
    let mut ix = lock(shared);
    pass.publish(&mut ix);
    ix.done = true;
}
