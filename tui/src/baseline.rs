//! A baseline drawn into the replay and live screens (`--baseline FILE`): its RSS and peak
//! envelope as a dim second line on the chart, its value and the difference in the cursor
//! box, its phases as dim timeline rows, all on the shown session's time axis.
//!
//! The baseline is one recording reduced once (the store's reader, the model); what changes
//! is how its clock maps onto the shown one, the [`Align`]ment:
//! * replay: one offset, the two sessions' starts, first proofs, or proof N of each put
//!   together (the `b` key cycles through them);
//! * live: each proof of the running prover is put together with the baseline's proof of
//!   the same number (its last one once the live session has more), so every proof is
//!   tracked against the baseline from its own start.

use std::path::Path;
use std::sync::Arc;

use provetop_shared::classify::Thresholds;

use crate::model::{Model, PhaseSpan};
use crate::series::{Bucket, Reading};
use crate::store::Store;

/// How the baseline's clock is put onto the shown session's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Both sessions' first records.
    Start,
    /// Proof N (0-based) of each, in start order (0: the first proof).
    Proof(usize),
    /// Live: each proof with the baseline's proof of the same number.
    EachProof,
}

/// The baseline recording, reduced.
#[derive(Debug)]
struct Recording {
    /// File name shown.
    name: String,
    /// Every record applied.
    model: Model,
    start: u64,
    end: u64,
    /// Starts of its proofs that finished well, ascending.
    proof_starts: Vec<u64>,
}

/// A baseline for the screen: the recording and the alignment in use.
#[derive(Debug, Clone)]
pub struct Baseline {
    rec: Arc<Recording>,
    pub align: Align,
    /// Replay: the shown session's start and proof starts (live reads its model instead).
    shown_start: u64,
    shown_proofs: Vec<u64>,
}

/// A stretch of the shown clock `[from, to)` and the baseline time of its instants:
/// `t + off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub from: u64,
    pub to: u64,
    pub off: i128,
}

impl Segment {
    /// The baseline time of shown time `t` (None before the baseline's clock starts).
    pub fn map(&self, t: u64) -> Option<u64> {
        u64::try_from(t as i128 + self.off).ok()
    }

    /// The shown time of baseline time `b` (clamped at 0).
    pub fn unmap(&self, b: u64) -> u64 {
        u64::try_from(b as i128 - self.off).unwrap_or(0)
    }
}

/// The starts of `store`'s finished proofs, in order (those before a failed read of their
/// file, said once).
fn proof_starts(store: &Store) -> Vec<u64> {
    let mut v: Vec<u64> = Vec::new();
    for p in store.finished_proofs().iter() {
        match p {
            Ok(p) => v.push(p.start),
            Err(e) => {
                crate::say!(
                    "provetop: warning: {}: its proofs past the {}th could not be read back ({e}): they cannot be aligned",
                    store.path().display(),
                    v.len()
                );
                break;
            }
        }
    }
    v
}

impl Baseline {
    /// Open the baseline file (one line naming the file and the cause when it cannot be read).
    pub fn open(path: &Path, thresholds: Thresholds) -> anyhow::Result<Baseline> {
        let store =
            Store::scan(path, thresholds).map_err(|e| anyhow::anyhow!("--baseline: {e}"))?;
        store.report_warnings();
        Ok(Self::from_store(&store))
    }

    /// A baseline from an opened store, aligned at the starts.
    pub fn from_store(store: &Store) -> Baseline {
        let name = store
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let model = store.model_at_index(store.records().len());
        Baseline {
            rec: Arc::new(Recording {
                name,
                model,
                start: store.start(),
                end: store.end(),
                proof_starts: proof_starts(store),
            }),
            align: Align::Start,
            shown_start: 0,
            shown_proofs: Vec::new(),
        }
    }

    /// For replay over `shown`: aligned at `align` (the starts when `align` names a proof
    /// one of them lacks).
    pub fn for_replay(mut self, shown: &Store, align: Align) -> Baseline {
        self.shown_start = shown.start();
        self.shown_proofs = proof_starts(shown);
        self.align = match align {
            Align::Proof(k) if k < self.proofs_in_both() => align,
            _ => Align::Start,
        };
        self
    }

    /// For replay of a session whose proofs are not listed (read chunk by chunk): aligned
    /// at the start.
    pub fn for_replay_from(mut self, start: u64) -> Baseline {
        self.shown_start = start;
        self.align = Align::Start;
        self
    }

    /// For the live screen: each proof with the baseline's proof of the same number.
    pub fn for_live(mut self, origin: u64) -> Baseline {
        self.shown_start = origin;
        self.align = Align::EachProof;
        self
    }

    /// The baseline's file name.
    pub fn name(&self) -> &str {
        &self.rec.name
    }

    /// The baseline reduced (its series, spans, proofs).
    pub fn model(&self) -> &Model {
        &self.rec.model
    }

    fn proofs_in_both(&self) -> usize {
        self.rec.proof_starts.len().min(self.shown_proofs.len())
    }

    /// The next alignment (replay: start → proof 1 → … → proof N of both → start); says
    /// which for the footer.
    pub fn cycle(&mut self) -> String {
        self.align = match self.align {
            Align::Start if self.proofs_in_both() > 0 => Align::Proof(0),
            Align::Proof(k) if k + 1 < self.proofs_in_both() => Align::Proof(k + 1),
            Align::EachProof => Align::EachProof,
            _ => Align::Start,
        };
        let mut text = format!("baseline aligned at {}", self.align_text());
        if self.proofs_in_both() == 0 && self.align == Align::Start {
            text.push_str(" (no proof in both sessions to align at)");
        }
        text
    }

    /// The alignment in words: "start", "proof 1", "each proof".
    pub fn align_text(&self) -> String {
        match self.align {
            Align::Start => "start".into(),
            Align::Proof(k) => format!("proof {}", k + 1),
            Align::EachProof => "each proof".into(),
        }
    }

    /// How the shown window `[t0, t1]` maps onto the baseline, in order. `shown` is the
    /// shown session's model (live: its proofs give the segments).
    pub fn segments(&self, shown: &Model, t0: u64, t1: u64) -> Vec<Segment> {
        let base = &self.rec;
        let whole = |off: i128| {
            vec![Segment {
                from: t0,
                to: t1,
                off,
            }]
        };
        match self.align {
            Align::Start => whole(base.start as i128 - self.shown_start as i128),
            Align::Proof(k) => match (base.proof_starts.get(k), self.shown_proofs.get(k)) {
                (Some(b), Some(s)) => whole(*b as i128 - *s as i128),
                _ => whole(base.start as i128 - self.shown_start as i128),
            },
            Align::EachProof => {
                let mut starts: Vec<u64> = shown
                    .proofs
                    .finished
                    .iter()
                    .chain(shown.proofs.running.iter())
                    .map(|p| p.start)
                    .collect();
                starts.sort_unstable();
                let start_off = base.start as i128 - self.shown_start as i128;
                if base.proof_starts.is_empty() {
                    return whole(start_off);
                }
                let mut out = Vec::new();
                // Before the first proof: the sessions' starts together.
                let first = starts.first().copied().unwrap_or(u64::MAX);
                if t0 < first {
                    out.push(Segment {
                        from: t0,
                        to: first.min(t1),
                        off: start_off,
                    });
                }
                for (k, s) in starts.iter().enumerate() {
                    let next = starts.get(k + 1).copied().unwrap_or(u64::MAX);
                    if next <= t0 || *s >= t1 {
                        continue;
                    }
                    let j = k.min(base.proof_starts.len() - 1);
                    out.push(Segment {
                        from: (*s).max(t0),
                        to: next.min(t1),
                        off: base.proof_starts[j] as i128 - *s as i128,
                    });
                }
                out
            }
        }
    }

    /// The segment holding shown time `t`.
    pub fn segment_at(&self, shown: &Model, t: u64) -> Option<Segment> {
        self.segments(shown, t, t.saturating_add(1))
            .into_iter()
            .find(|s| s.from <= t && t < s.to.max(s.from + 1))
    }

    /// The baseline's reading at shown time `t` (None outside its recording).
    pub fn value_at(&self, shown: &Model, t: u64) -> Option<Reading> {
        let b = self.segment_at(shown, t)?.map(t)?;
        if b < self.rec.start || b > self.rec.end {
            return None;
        }
        self.rec.model.value_at(b)
    }

    /// The window `[t0, t1)` in `cols` columns of the baseline's series (empty columns
    /// where it has no samples), on the shown clock.
    pub fn columns(&self, shown: &Model, t0: u64, t1: u64, cols: usize) -> Vec<Bucket> {
        let span = t1.saturating_sub(t0).max(1) as u128;
        let col_of = |t: u64| -> usize {
            ((t.saturating_sub(t0) as u128 * cols as u128) / span).min(cols as u128) as usize
        };
        let mut out: Vec<Bucket> = Vec::with_capacity(cols);
        for seg in self.segments(shown, t0, t1) {
            let (c0, c1) = (col_of(seg.from), col_of(seg.to));
            // Columns before this segment (a gap) stay empty.
            if out.len() < c0 {
                let gap = c0 - out.len();
                out.extend(self.rec.model.columns(0, 0, gap));
            }
            let n = c1.saturating_sub(out.len());
            if n == 0 {
                continue;
            }
            let from = t0 + ((out.len() as u128 * span) / cols as u128) as u64;
            let (Some(b0), Some(b1)) = (seg.map(from), seg.map(seg.to)) else {
                out.extend(self.rec.model.columns(0, 0, n));
                continue;
            };
            out.extend(self.rec.model.columns(b0, b1, n));
        }
        if out.len() < cols {
            let rest = cols - out.len();
            out.extend(self.rec.model.columns(0, 0, rest));
        }
        out.truncate(cols);
        out
    }

    /// The baseline's phase spans over the shown window, moved onto the shown clock and cut
    /// to their segment.
    pub fn spans_in(&self, shown: &Model, t0: u64, t1: u64) -> Vec<PhaseSpan> {
        let mut out = Vec::new();
        let end = self.rec.model.now();
        for seg in self.segments(shown, t0, t1) {
            let (Some(b0), Some(b1)) = (seg.map(seg.from), seg.map(seg.to)) else {
                continue;
            };
            for s in self.rec.model.spans_in(b0, b1) {
                let mut m = s.clone();
                m.start = seg.unmap(s.start.max(b0));
                m.end = Some(seg.unmap(s.end_or(end).min(b1)));
                out.push(m);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use provetop_shared::session::{Loaded, SessionHeader, SourceKind};
    use provetop_shared::{BatchMode, Event, Record, RecordBody, Sample};

    const S: u64 = 1_000_000_000;

    fn proof(t: u64, id: u64, done: u64) -> [Record; 2] {
        [
            Record::new(
                t,
                RecordBody::Event(Event::ProofStarted {
                    proof_id: id,
                    mode: BatchMode::Single,
                    sectors: 1,
                    partitions: 1,
                    constraints: 1,
                }),
            ),
            Record::new(
                done,
                RecordBody::Event(Event::ProofFinished {
                    proof_id: id,
                    ok: true,
                    verified: true,
                    duration_s: (done - t) as f64 / S as f64,
                    mode: BatchMode::Single,
                    phases: vec![],
                    error: None,
                    cancelled: false,
                    requeued_as: vec![],
                }),
            ),
        ]
    }

    /// A baseline with samples every second from 0 to 60 s and proofs at 10 s and 30 s.
    fn baseline() -> Baseline {
        let mut records: Vec<Record> = (0..=60)
            .map(|i| {
                Record::new(
                    i * S,
                    RecordBody::Sample(Sample {
                        rss: (1000 + i) << 20,
                        ..Sample::default()
                    }),
                )
            })
            .collect();
        records.extend(proof(10 * S, 1, 20 * S));
        records.extend(proof(30 * S, 2, 40 * S));
        records.sort_by_key(|r| r.t);
        let loaded = Loaded {
            header: SessionHeader::now(vec![], 1.0),
            records,
            warnings: vec![],
            kind: SourceKind::Session,
        };
        let store = Store::from_loaded(Path::new("base.ptop"), loaded, Thresholds::default());
        Baseline::from_store(&store)
    }

    #[test]
    fn live_each_proof_is_aligned_with_the_baselines_proof_of_the_same_number() {
        let b = baseline().for_live(1000 * S);
        let mut live = Model::new(Thresholds::default());
        for (t, id) in [(1100, 7), (1200, 8), (1300, 9)] {
            for r in proof(t * S, id, (t + 50) * S) {
                live.apply(&r);
            }
        }
        let segs = b.segments(&live, 1000 * S, 1400 * S);
        // Before the first proof the starts; then proof 1 ↔ 1, 2 ↔ 2, and 3 ↔ the last (2).
        let offs: Vec<(u64, i128)> = segs.iter().map(|s| (s.from / S, s.off)).collect();
        let off = |shown: u64, base: u64| base as i128 * S as i128 - shown as i128 * S as i128;
        assert_eq!(
            offs,
            vec![
                (1000, off(1000, 0)),
                (1100, off(1100, 10)),
                (1200, off(1200, 30)),
                (1300, off(1300, 30))
            ]
        );
        // 5 s into the second live proof reads the baseline 5 s into its second proof.
        let r = b.value_at(&live, 1205 * S).unwrap();
        assert_eq!(
            r.range(crate::series::Metric::Rss),
            Some((1035 << 20, 1035 << 20))
        );
        // Past the baseline's end: nothing (not a zero).
        assert_eq!(b.value_at(&live, 1399 * S), None);
    }

    #[test]
    fn replay_alignment_falls_back_to_the_starts_without_a_proof_in_both() {
        let b = baseline();
        let loaded = Loaded {
            header: SessionHeader::now(vec![], 1.0),
            records: vec![Record::new(5 * S, RecordBody::Sample(Sample::default()))],
            warnings: vec![],
            kind: SourceKind::Csv,
        };
        let shown = Store::from_loaded(Path::new("x.csv"), loaded, Thresholds::default());
        let mut b = b.for_replay(&shown, Align::Proof(1));
        assert_eq!(b.align, Align::Start);
        assert_eq!(
            b.cycle(),
            "baseline aligned at start (no proof in both sessions to align at)"
        );
    }

    #[test]
    fn a_segment_maps_both_ways() {
        let s = Segment {
            from: 0,
            to: 100,
            off: -40,
        };
        assert_eq!(s.map(50), Some(10));
        assert_eq!(s.map(10), None);
        assert_eq!(s.unmap(10), 50);
    }
}
