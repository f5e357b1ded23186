//! What the readers' tables take from the phase spans, folded span by span: per phase its
//! spans, the time it was open and the memory seen (classify's prover-phase table and its
//! utilisation columns), and per closed span what compare's phase figures read. A few dozen
//! bytes a span where the spans themselves are a few hundred: a streamed store keeps this,
//! not the spans.

use std::collections::HashMap;

use provetop_shared::Phase;

use super::cover::Cover;
use crate::model::{PhaseSpan, Stats};
use provetop_shared::spill::{u64_at, Fixed, Spill};

/// One phase's spans, folded.
#[derive(Debug)]
pub struct PhaseRow {
    /// The phase.
    pub phase: Phase,
    /// The earliest start of its spans.
    pub first_start: u64,
    /// Spans.
    pub spans: u64,
    /// The time its spans covered: their (start, end), an open one's end the store's end,
    /// merged where they overlap or touch, in order. A phase's partitions overlap, so this
    /// is about one interval a proof, not one a span; past a few hundred, in a file.
    pub intervals: Cover,
    /// RSS, pinned and GPU memory seen while one was open.
    pub rss: Stats,
    pub pinned: Stats,
    pub gpu: Stats,
}

/// A span that closed, as compare reads it.
#[derive(Debug, Clone, Copy)]
pub struct ClosedSpan {
    pub proof_id: u64,
    /// Its proof's start (`u64::MAX` where the proof was not known): with the id, where the
    /// proof sorts in [`super::proofs::ProofList`].
    pub proof_start: u64,
    /// Its phase's index in [`SpanDigest::rows`].
    pub row: u32,
    pub start: u64,
    /// Seconds: the prover's measure, else end minus start.
    pub duration_s: f64,
    /// The highest RSS seen while it was open (0 without a reading).
    pub rss_max: u64,
}

impl Fixed for ClosedSpan {
    const SIZE: usize = 44;
    fn put(&self, out: &mut Vec<u8>) {
        for v in [
            self.proof_id,
            self.proof_start,
            self.start,
            self.duration_s.to_bits(),
            self.rss_max,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.row.to_le_bytes());
    }
    fn take(b: &[u8]) -> Self {
        ClosedSpan {
            proof_id: u64_at(b, 0),
            proof_start: u64_at(b, 1),
            start: u64_at(b, 2),
            duration_s: f64::from_bits(u64_at(b, 3)),
            rss_max: u64_at(b, 4),
            row: u32::from_le_bytes(b[40..44].try_into().expect("4 bytes")),
        }
    }
}

/// The spans folded so far.
#[derive(Debug, Default)]
pub struct SpanDigest {
    /// Per phase, in the order its first span came.
    pub rows: Vec<PhaseRow>,
    index: HashMap<Phase, usize>,
    /// Closed spans, in the order they came (closing order); none with `skip_closed`. Past a
    /// block they are in a temporary file ([`Spill`]): compare reads them in passes.
    pub closed: Spill<ClosedSpan>,
    /// Keep no [`ClosedSpan`] (a reader without compare's phase figures).
    pub skip_closed: bool,
    /// Spans folded.
    pub count: usize,
    /// Whether every span was read from log lines.
    pub all_derived: bool,
    /// The longest phase name, as shown (characters).
    pub widest: usize,
    /// Why a phase's covered time could not be read back from its file (its figures are
    /// then short: the readers fail with this).
    pub failed: Option<String>,
}

impl SpanDigest {
    /// Fold a span; `end` is where an open one ends, `proof_start` its proof's start.
    pub fn add(&mut self, s: &PhaseSpan, end: u64, proof_start: Option<u64>) {
        let i = match self.index.get(&s.phase) {
            Some(&i) => i,
            None => {
                self.index.insert(s.phase.clone(), self.rows.len());
                self.widest = self
                    .widest
                    .max(crate::text::inert(s.phase.as_str()).chars().count());
                self.rows.push(PhaseRow {
                    phase: s.phase.clone(),
                    first_start: s.start,
                    spans: 0,
                    intervals: Cover::default(),
                    rss: Stats::default(),
                    pinned: Stats::default(),
                    gpu: Stats::default(),
                });
                self.rows.len() - 1
            }
        };
        let row = &mut self.rows[i];
        row.first_start = row.first_start.min(s.start);
        row.spans += 1;
        if let Err(e) = row.intervals.add((s.start, s.end_or(end))) {
            self.failed.get_or_insert_with(|| e.to_string());
        }
        row.rss.merge(&s.rss);
        row.pinned.merge(&s.pinned);
        row.gpu.merge(&s.gpu);
        self.all_derived = (self.count == 0 || self.all_derived) && s.derived;
        self.count += 1;
        if let Some(e) = s.end.filter(|_| !self.skip_closed) {
            self.closed.push(ClosedSpan {
                proof_id: s.proof_id,
                proof_start: proof_start.unwrap_or(u64::MAX),
                row: i as u32,
                start: s.start,
                // `+ 0.0`: a -0.0 is 0 (compare orders durations by their bits).
                duration_s: s
                    .duration_s
                    .filter(|d| d.is_finite() && *d >= 0.0)
                    .unwrap_or(e.saturating_sub(s.start) as f64 / 1e9)
                    + 0.0,
                rss_max: s.rss.max().unwrap_or(0),
            });
        }
    }
}
