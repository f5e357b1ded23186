//! A compact session (format 2, or a rotated set of them) opened for replay without reading
//! it: records come chunk by chunk through a small cache of decoded chunks, never the whole
//! file.
//!
//! Contract:
//! * [`Timeline::open`] reads the chunks' heads (the [`Index`], from the chunk index beside
//!   each file when it has one) and the tails of the files and starts one background pass
//!   ([`indexer`]); it costs the same whatever the session's length, apart from a few dozen
//!   bytes a chunk. The first frame needs nothing more: the
//!   model at the start is the empty one.
//! * The background pass is the store's: the one [`Model`] reducer over every record in
//!   placed order ([`crate::store::place_derived`]), publishing as it goes the phase starts
//!   and alerts (`]`/`[`, `a`/`A`) and light snapshots of the model (its series left out)
//!   within [`LIGHT_BUDGET`] bytes.
//! * Parts are decoded on threads of their own ahead of the reducer, the pass's and a
//!   seek's ([`AHEAD_CHUNKS`] at most), and freed on another; a seek draws the detail before
//!   its snapshot from the samples alone.
//! * [`Timeline::model_at`] gives the model at `t` as the whole-file store has it (every
//!   record whose reach is ≤ t, applied in placed order) from the nearest light snapshot,
//!   once the pass has reached `t` (`None` before: no state is made up). Its memory series is
//!   drawn again: the chunks older than [`DETAIL_NS`] before `t` from their
//!   summaries (each chunk one min/max bucket, so no peak is lost at any zoom), the rest at
//!   full resolution. Utilisation series start at the snapshot, and its log at the
//!   snapshot's newest [`LIGHT_LOG`] entries (the newest of the store's, fewer of them).
//!   Its closed phase spans are taken back from the pass's archive for the window shown
//!   ([`Timeline::fill_spans`], before each frame), without their memory stats.
//! * [`Timeline::advance`] applies the records a playing clock passes, from a [`Cursor`].
//!
//! Format-1 files and CSVs are not read here: they are small or old, and the whole-file
//! [`crate::store::Store`] opens them.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use provetop_shared::classify::Thresholds;
use provetop_shared::session::compact::index::Index;
use provetop_shared::session::compact::{Summary, MAGIC2};
use provetop_shared::session::{parts, SessionHeader, Warning};
use provetop_shared::spill::Spill;
use provetop_shared::{Record, RecordBody};

use crate::model::Model;
use crate::series::{Limits, Point};
use crate::store::{Late, Placer};

mod decode;
mod indexer;
pub mod marks;
mod part;

use decode::{Ahead, Dropper};

pub use indexer::Indexed;
pub use part::{summary_bucket, Part};

/// Most bytes the light snapshots may hold together (estimated); beyond it every other one
/// is dropped and the spacing doubles.
pub const LIGHT_BUDGET: usize = 64 << 20;
/// Usage and kernel readings a light snapshot keeps (the newest: the process table at a
/// cursor before them reads the nearest kept).
pub const LIGHT_READINGS: usize = 8;
/// Log entries a light snapshot keeps: more than a screen shows, and what a seek's log can
/// be scrolled back through until playing on adds more. The log of a long session is most
/// of what snapshots far apart would not share.
pub const LIGHT_LOG: usize = 64;
/// Decoded chunks kept for playing and seeking.
pub const CACHE_CHUNKS: usize = 2;
/// Threads decoding a seek's parts.
pub const SEEK_DECODERS: usize = 2;
/// Parts a seek's decoders (or the pass's) may have decoded ahead of the reducer.
pub const AHEAD_CHUNKS: usize = 2;
/// How far before a seek's position the memory series is drawn at full resolution.
pub const DETAIL_NS: u64 = 10 * 60 * 1_000_000_000;
/// Most chunks decoded for that detail (a seek's cost stays bounded on dense chunks).
pub const DETAIL_CHUNKS: usize = 4;

/// What the parts are read from, shared with the background pass.
pub struct Source {
    files: Vec<(PathBuf, Index)>,
    tails: Vec<Arc<Vec<Record>>>,
    /// Every part, in timeline order: one a chunk, so in a spill.
    pub parts: Spill<Part>,
}

impl Source {
    /// The records of part `i`, each once; `Err` says why a damaged chunk cannot be read
    /// (one line naming its file and offset).
    pub fn records(&self, i: usize) -> Result<Arc<Vec<Record>>, String> {
        let p = self
            .parts
            .get(i)
            .map_err(|e| format!("the part list: {e}"))?;
        let Some(c) = p.chunk else {
            return Ok(self.tails[p.file].clone());
        };
        let (path, ix) = &self.files[p.file];
        match ix.chunk(c) {
            Ok((mut recs, _)) => {
                recs.drain(..(p.skip as usize).min(recs.len()));
                Ok(Arc::new(recs))
            }
            Err(why) => Err(format!(
                "{}: byte {}: damaged chunk ({why}); its {} records are skipped",
                path.display(),
                p.offset,
                p.count
            )),
        }
    }

    /// The samples of part `i` and their times, its other records left undecoded (none
    /// where it cannot be read: [`Source::records`] tells why).
    fn samples(&self, i: usize) -> Vec<(u64, provetop_shared::Sample)> {
        let Ok(p) = self.parts.get(i) else {
            return Vec::new();
        };
        let Some(c) = p.chunk else {
            return sampled(&self.tails[p.file]);
        };
        let skip = p.skip as usize;
        let found = self.files[p.file].1.samples(c).unwrap_or_default();
        found
            .into_iter()
            .filter(|(at, _, _)| *at >= skip)
            .map(|(_, t, s)| (t, s))
            .collect()
    }

    /// The kinds of part `i`'s records (`None` where they cannot be read).
    fn kinds(&self, i: usize) -> Option<Vec<u8>> {
        let p = self.parts.get(i).ok()?;
        match p.chunk {
            Some(c) => self.files[p.file].1.kinds(c).ok().map(|mut k| {
                k.drain(..(p.skip as usize).min(k.len()));
                k
            }),
            None => None,
        }
    }
}

/// Where playing has got to: the next record of the file to place, and what the placing
/// holds back.
#[derive(Debug, Clone, Default)]
pub struct Cursor {
    part: usize,
    off: usize,
    placer: (usize, u64),
    /// The reach of the records applied.
    hi: u64,
    /// Records placed, not applied yet (their time is ahead of the clock).
    pending: VecDeque<Record>,
    /// The late records left at the end were placed.
    finished: bool,
}

/// A seek under way ([`Timeline::begin_seek`]): the model from a snapshot, the records
/// towards the position applied a few chunks at a time, so the screen answers meanwhile.
pub struct Seeking {
    /// Where to.
    pub t: u64,
    model: Model,
    cursor: Cursor,
    from: usize,
    to: usize,
}

impl Seeking {
    /// How far it has got, in per cent.
    pub fn percent(&self) -> u32 {
        let done = self.cursor.part.saturating_sub(self.from) * 100;
        (done / self.to.saturating_sub(self.from).max(1)).min(99) as u32
    }

    /// The model at the position and the cursor after it (once [`Timeline::step_seek`] said
    /// it got there).
    pub fn into_parts(self) -> (Model, Cursor) {
        (self.model, self.cursor)
    }
}

impl Cursor {
    /// The reach of the records applied.
    pub fn hi(&self) -> u64 {
        self.hi
    }
}

/// A compact session opened for replay.
pub struct Timeline {
    path: PathBuf,
    header: SessionHeader,
    thresholds: Thresholds,
    src: Arc<Source>,
    start: u64,
    end: u64,
    shared: Arc<Mutex<Indexed>>,
    stop: Arc<AtomicBool>,
    cache: VecDeque<(usize, Arc<Vec<Record>>)>,
    /// The parts of the latest seek, decoded in order on threads of their own while this
    /// one draws and reduces (`None`: no seek yet).
    ahead: Option<Ahead>,
    dropper: Dropper,
    warnings: Vec<Warning>,
}

/// Whether `path` (or every file of its rotated set) is a compact session.
pub fn is_compact(path: &Path) -> bool {
    let files = parts::set_of(path);
    !files.is_empty()
        && files.iter().all(|f| {
            let mut b = [0u8; 8];
            std::fs::File::open(f)
                .and_then(|mut h| std::io::Read::read_exact(&mut h, &mut b))
                .is_ok()
                && &b == MAGIC2
        })
}

impl Timeline {
    /// Open the compact session `path` (or its rotated set) and start indexing it.
    pub fn open(path: &Path, thresholds: Thresholds) -> anyhow::Result<Timeline> {
        let mut files = Vec::new();
        let mut warnings = Vec::new();
        for f in parts::set_of(path) {
            let ix = Index::open(&f).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
            warnings.extend(ix.warnings.iter().cloned());
            files.push((f, ix));
        }
        let Some(header) = files.first().map(|(_, ix)| ix.header.clone()) else {
            anyhow::bail!("{}: no such session", path.display());
        };
        let (mut parts, mut tails) = (Spill::default(), Vec::new());
        let (mut start, mut end) = (u64::MAX, 0u64);
        let mut push = |parts: &mut Spill<Part>, p: Part| {
            start = start.min(p.t_min);
            end = end.max(p.t_max);
            parts.push(p);
        };
        for (fi, (_, ix)) in files.iter().enumerate() {
            let mut next_seq = 0u64;
            for (c, item) in ix.chunks.iter().enumerate() {
                let (at, h) = item.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                let end = h.first_seq.saturating_add(u64::from(h.count));
                let skip = next_seq.saturating_sub(h.first_seq).min(u64::from(h.count)) as u32;
                next_seq = next_seq.max(end);
                if skip == h.count {
                    continue;
                }
                push(
                    &mut parts,
                    Part {
                        file: fi,
                        chunk: Some(c),
                        skip,
                        count: h.count,
                        t_min: h.t_min,
                        t_max: h.t_max,
                        offset: at,
                        summary: h.summary,
                    },
                );
            }
            let mut tail = Vec::new();
            for item in ix.tail_after(next_seq)? {
                match item {
                    provetop_shared::session::FrameItem::Record(_, r) => tail.push(r),
                    provetop_shared::session::FrameItem::Warning(w) => warnings.push(w),
                }
            }
            if !tail.is_empty() {
                push(
                    &mut parts,
                    Part {
                        file: fi,
                        chunk: None,
                        skip: 0,
                        count: tail.len() as u32,
                        t_min: tail.iter().map(|r| r.t).min().unwrap_or(0),
                        t_max: tail.iter().map(|r| r.t).max().unwrap_or(0),
                        offset: ix.tail_at,
                        summary: Summary::of(&tail),
                    },
                );
            }
            tails.push(Arc::new(tail));
        }
        let start = if parts.is_empty() { 0 } else { start };
        let src = Arc::new(Source {
            files,
            tails,
            parts,
        });
        let shared = Arc::new(Mutex::new(Indexed::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let dropper = Dropper::start();
        indexer::start(
            src.clone(),
            thresholds,
            shared.clone(),
            stop.clone(),
            dropper.clone(),
        );
        Ok(Timeline {
            path: path.to_path_buf(),
            header,
            thresholds,
            src,
            start,
            end,
            shared,
            stop,
            cache: VecDeque::new(),
            ahead: None,
            dropper,
            warnings,
        })
    }

    /// The path it was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session's header.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Thresholds the reducer runs with.
    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    /// Earliest record time, ns.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Latest record time, ns.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The parts, in timeline order.
    pub fn parts(&self) -> &Spill<Part> {
        &self.src.parts
    }

    /// Damage found while opening (the background pass's is in [`Timeline::indexed`]).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Take back into `model`, from a snapshot, the closed phase spans a window from `t0`
    /// shows ([`crate::model::Spans::fill`]).
    /// An archive that cannot be read back is said once, in the pass's warnings.
    pub fn fill_spans(&self, model: &mut Model, t0: u64) {
        let mut ix = self.indexed();
        if let Err(e) = model.spans.fill(&ix.spans, t0) {
            let w = format!(
                "closed phase spans could not be read back ({e}): the window shows only the newest"
            );
            if !ix.warnings.contains(&w) {
                ix.warnings.push(w);
            }
        }
    }

    /// What the background pass has published so far.
    pub fn indexed(&self) -> MutexGuard<'_, Indexed> {
        // A pass that panicked leaves what it had published: still true.
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until the background pass has gone over everything (tests, benches).
    pub fn wait_indexed(&self) {
        while !self.indexed().done {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Part `i`'s records, through the cache; a damaged chunk is empty (the background
    /// pass, which reads every chunk, tells it).
    fn part(&mut self, i: usize) -> Arc<Vec<Record>> {
        if let Some(k) = self.cache.iter().position(|(j, _)| *j == i) {
            let hit = self.cache.remove(k).map(|(_, r)| r).unwrap_or_default();
            self.cache.push_front((i, hit.clone()));
            return hit;
        }
        let ahead = self.ahead.as_mut().and_then(|a| a.take(i));
        // A damaged chunk is empty here: the background pass, which reads every chunk,
        // tells it.
        let recs = ahead
            .unwrap_or_else(|| self.src.records(i))
            .unwrap_or_default();
        self.cache.push_front((i, recs.clone()));
        while self.cache.len() > CACHE_CHUNKS {
            if let Some((_, old)) = self.cache.pop_back() {
                self.dropper.free(old);
            }
        }
        recs
    }

    /// Apply to `model` every record placed after `c` whose reach is ≤ `t`; whether any was.
    /// Needs the late records ([`Indexed::late`]); without them nothing moves.
    pub fn advance(&mut self, c: &mut Cursor, t: u64, model: &mut Model) -> bool {
        self.advance_by(c, t, model, usize::MAX).0
    }

    /// [`Timeline::advance`] over at most `parts` parts: whether any record was applied, and
    /// whether it got to `t`.
    fn advance_by(
        &mut self,
        c: &mut Cursor,
        t: u64,
        model: &mut Model,
        parts: usize,
    ) -> (bool, bool) {
        let Some(late) = self.indexed().late.clone() else {
            return (false, false);
        };
        let (mut any, mut left) = (false, parts);
        loop {
            if let Some(r) = c.pending.front() {
                if c.hi.max(r.t) > t {
                    return (any, true);
                }
                c.hi = c.hi.max(r.t);
                if let Some(r) = c.pending.pop_front() {
                    model.apply(&r);
                }
                any = true;
                continue;
            }
            if c.part >= self.src.parts.len() {
                if c.finished {
                    return (any, true);
                }
                c.finished = true;
                Placer::resume(&late, c.placer).finish(&mut |r| c.pending.push_back(r));
                continue;
            }
            let recs = self.part(c.part);
            if c.off >= recs.len() {
                c.part += 1;
                c.off = 0;
                left = left.saturating_sub(1);
                if left == 0 {
                    return (any, false);
                }
                continue;
            }
            // The part's records up to the first placed after `t`: applied where they lie
            // (copied only when held back), the rest of the part then waits in `pending`.
            let mut p = Placer::resume(&late, c.placer);
            for rec in &recs[c.off..] {
                c.off += 1;
                // With the late list, feeding never fails.
                let _ = p.feed_ref(rec, &mut |r| {
                    if c.pending.is_empty() && c.hi.max(r.t) <= t {
                        c.hi = c.hi.max(r.t);
                        model.apply(r);
                        any = true;
                    } else {
                        c.pending.push_back(r.clone());
                    }
                });
                if !c.pending.is_empty() {
                    break;
                }
            }
            c.placer = p.state();
        }
    }

    /// The model at `t` and the cursor after it, every closed phase span it would hold
    /// taken back; `None` while the background pass has not reached `t` yet.
    pub fn model_at(&mut self, t: u64) -> Option<(Model, Cursor)> {
        let mut s = self.begin_seek(t)?;
        self.step_seek(&mut s, usize::MAX);
        self.fill_spans(&mut s.model, 0);
        Some((s.model, s.cursor))
    }

    /// A seek to `t` begun from the nearest light snapshot (its series drawn); `None` while
    /// the background pass has not reached `t` yet.
    pub fn begin_seek(&mut self, t: u64) -> Option<Seeking> {
        let (snap, ready) = {
            let ix = self.indexed();
            let k = ix.snaps.partition_point(|s| s.hi <= t).checked_sub(1)?;
            let ready = ix.done || (ix.late.is_some() && ix.hi > t);
            (ix.snaps[k].clone(), ready)
        };
        if !ready {
            return None;
        }
        let to = self.src.parts.first_where(|p| p.t_min > t).ok()?;
        // The parts to reduce are decoded meanwhile (from the first not cached: a seek near
        // the last one finds its parts there).
        let from = (snap.part..to)
            .find(|i| !self.cache.iter().any(|(j, _)| j == i))
            .unwrap_or(to);
        let end = (to + 1).min(self.src.parts.len());
        self.ahead = Ahead::start(&self.src, from, end, SEEK_DECODERS, &self.dropper);
        let mut model = (*snap.model).clone();
        self.draw_before(&mut model, snap.part, t);
        let cursor = Cursor {
            part: snap.part,
            placer: snap.placer,
            hi: snap.hi,
            ..Cursor::default()
        };
        Some(Seeking {
            t,
            model,
            cursor,
            from: snap.part,
            to,
        })
    }

    /// Apply at most `parts` parts' records of a seek; whether it got there.
    pub fn step_seek(&mut self, s: &mut Seeking, parts: usize) -> bool {
        let (cursor, model) = (&mut s.cursor, &mut s.model);
        self.advance_by(cursor, s.t, model, parts).1
    }

    /// The memory series of the parts before `upto` into `model`'s empty series, for a seek
    /// to `t`: those within [`DETAIL_NS`] before `t` (at most [`DETAIL_CHUNKS`] parts) from
    /// their samples, the older ones from their summaries. A seek far past its snapshot
    /// applies that much itself and decodes none here.
    fn draw_before(&mut self, model: &mut Model, upto: usize, t: u64) {
        let src = self.src.clone();
        let from = t.saturating_sub(DETAIL_NS);
        // A part list that cannot be read back draws no summaries (the samples still come).
        let detail = src
            .parts
            .first_where(|p| p.t_max >= from)
            .unwrap_or(0)
            .min(upto)
            .max(upto.saturating_sub(DETAIL_CHUNKS));
        let _ = src.parts.each_in(0, detail, &mut |_, p| {
            if let Some(b) = summary_bucket(&p) {
                model.series.push_bucket(b);
            }
        });
        for i in detail..upto {
            // Only the samples are needed: decoded alone unless the part is at hand.
            let cached = self.cache.iter().find(|(j, _)| *j == i);
            let samples = match cached {
                Some((_, recs)) => sampled(recs),
                None => src.samples(i),
            };
            for (t, s) in &samples {
                model.series.push(Point::from_sample(*t, s));
            }
        }
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The samples among `recs` and their times.
fn sampled(recs: &[Record]) -> Vec<(u64, provetop_shared::Sample)> {
    recs.iter()
        .filter_map(|r| match &r.body {
            RecordBody::Sample(s) => Some((r.t, s.clone())),
            _ => None,
        })
        .collect()
}

/// Limits of the series a seek draws: a live model's.
pub fn shown_limits() -> Limits {
    Limits::default()
}

/// The late records, shared.
pub type LateList = Arc<Vec<Late>>;
