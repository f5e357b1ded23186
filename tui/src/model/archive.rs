//! Every phase span a session closed, in closing order, compact: what a replay's light
//! snapshots leave out ([`super::Spans::light`]) and a seek's model takes back for the window
//! it shows ([`super::Spans::fill`]).
//!
//! Contract: entry `i` is the `i`-th span [`super::Spans`] finished (its SRS loads included),
//! as it was then, without the memory seen while it was open (a span taken back carries empty
//! [`super::Stats`]: nothing draws a closed span's). 40 bytes a span, kept in a [`Spill`]: the
//! newest block in memory, the rest in a temporary file, so a replay of any length holds the
//! same (a [`PhaseSpan`] held by a model costs several hundred).

use std::collections::HashMap;
use std::io;

use provetop_shared::Phase;

use super::span::PhaseSpan;
use provetop_shared::spill::{u64_at, Fixed, Spill};

/// One closed span, its phase an index into the archive's table.
#[derive(Debug, Clone, Copy)]
struct Entry {
    proof_id: u64,
    start: u64,
    end: u64,
    /// The prover's measure, when it sent one (`DURATION`).
    duration_s: f64,
    partition: u32,
    /// The phase's index (the low 28 bits) and the flags below (the high 4).
    phase: u32,
}

const PARTITION: u32 = 1 << 28;
const DURATION: u32 = 2 << 28;
const DERIVED: u32 = 4 << 28;
const FAILED: u32 = 8 << 28;
/// The phase index's bits (names past 2^28 distinct ones share the last index).
const PHASE: u32 = PARTITION - 1;

impl Fixed for Entry {
    const SIZE: usize = 40;
    fn put(&self, out: &mut Vec<u8>) {
        for v in [
            self.proof_id,
            self.start,
            self.end,
            self.duration_s.to_bits(),
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.partition.to_le_bytes());
        out.extend_from_slice(&self.phase.to_le_bytes());
    }
    fn take(b: &[u8]) -> Self {
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        Entry {
            proof_id: u64_at(b, 0),
            start: u64_at(b, 1),
            end: u64_at(b, 2),
            duration_s: f64::from_bits(u64_at(b, 3)),
            partition: u32_at(32),
            phase: u32_at(36),
        }
    }
}

/// The closed spans of a session, compact, in closing order.
#[derive(Debug, Default)]
pub struct SpanArchive {
    entries: Spill<Entry>,
    phases: Vec<Phase>,
    index: HashMap<Phase, u32>,
}

impl SpanArchive {
    /// Keep `s`, a span that has just closed.
    pub fn push(&mut self, s: &PhaseSpan) {
        let phase = match self.index.get(&s.phase) {
            Some(&i) => i,
            None if self.phases.len() > PHASE as usize => PHASE,
            None => {
                let i = self.phases.len() as u32;
                self.phases.push(s.phase.clone());
                self.index.insert(s.phase.clone(), i);
                i
            }
        };
        let flag = |on: bool, f: u32| if on { f } else { 0 };
        self.entries.push(Entry {
            proof_id: s.proof_id,
            start: s.start,
            end: s.end_or(s.start),
            duration_s: s.duration_s.unwrap_or(0.0),
            partition: s.partition.unwrap_or(0),
            phase: phase
                | flag(s.partition.is_some(), PARTITION)
                | flag(s.duration_s.is_some(), DURATION)
                | flag(s.derived, DERIVED)
                | flag(s.failed, FAILED),
        });
    }

    /// Spans kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Walking back from span `hi` (exclusive): the spans that end at `from` or later, until
    /// one ends before it or `most` are taken; returns where the walk stopped and the spans
    /// taken, each with its index and whether it was read from log lines, in closing order.
    /// Reads a block of the archive at a time.
    pub fn back(
        &self,
        hi: usize,
        from: u64,
        most: usize,
    ) -> io::Result<(usize, Vec<(usize, PhaseSpan)>)> {
        let mut lo = hi.min(self.len());
        let mut taken = Vec::new();
        let mut block = Vec::new();
        'walk: while lo > 0 && taken.len() < most {
            let a = lo.saturating_sub(Spill::<Entry>::block());
            block.clear();
            self.entries.each_in(a, lo, &mut |_, e| block.push(e))?;
            if block.is_empty() {
                break;
            }
            for e in block.iter().rev() {
                if e.end < from || taken.len() >= most {
                    break 'walk;
                }
                lo -= 1;
                taken.push((lo, self.span_of(e)));
            }
        }
        taken.reverse();
        Ok((lo, taken))
    }

    /// An entry as the span it was, without its memory stats.
    fn span_of(&self, e: &Entry) -> PhaseSpan {
        let on = |f: u32| e.phase & f != 0;
        let mut s = PhaseSpan::open(
            e.proof_id,
            self.phases[(e.phase & PHASE) as usize].clone(),
            on(PARTITION).then_some(e.partition),
            e.start,
        );
        s.end = Some(e.end);
        s.duration_s = on(DURATION).then_some(e.duration_s);
        s.derived = on(DERIVED);
        s.failed = on(FAILED);
        s
    }

    /// Spans in the temporary file (the rest are in memory).
    pub fn on_disk(&self) -> usize {
        self.entries.on_disk()
    }

    /// Why the archive stays in memory (its temporary file could not be written).
    pub fn failed(&self) -> Option<&str> {
        self.entries.failed()
    }

    /// Bytes held, nearly.
    pub fn bytes(&self) -> usize {
        self.entries.bytes() + self.phases.len() * 2 * std::mem::size_of::<Phase>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_kept_comes_back_as_it_closed_without_its_memory() {
        let mut a = SpanArchive::default();
        let mut s = PhaseSpan::open(7, Phase::Other("odd".into()), Some(3), 100);
        s.end = Some(250);
        s.duration_s = Some(0.15);
        s.failed = true;
        s.rss.add(5);
        a.push(&s);
        let mut t = PhaseSpan::open(8, Phase::Synthesis, None, 300);
        t.end = Some(400);
        t.derived = true;
        a.push(&t);
        s.rss = Default::default();
        assert_eq!(a.back(2, 0, usize::MAX).unwrap(), (0, vec![(0, s), (1, t)]));
        assert_eq!(a.len(), 2);
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }

    #[test]
    fn walking_back_takes_the_spans_that_end_in_the_window_from_memory_and_the_file() {
        let mut a = SpanArchive::default();
        let n = Spill::<Entry>::block() * 3 + 10;
        for i in 0..n as u64 {
            let mut s = PhaseSpan::open(i, Phase::Synthesis, None, i * 10);
            s.end = Some(i * 10 + 5);
            s.duration_s = Some(i as f64);
            a.push(&s);
        }
        // Every span from the one that ends at or after `from`, newest first, up to `most`.
        let half = n / 2;
        let from = (n - half) as u64 * 10;
        let (lo, taken) = a.back(n, from, usize::MAX).unwrap();
        assert_eq!(lo, n - half);
        assert_eq!(taken.len(), half);
        for (i, s) in &taken {
            assert_eq!(s.proof_id, *i as u64);
            assert_eq!(s.end, Some(*i as u64 * 10 + 5));
            assert_eq!(s.duration_s, Some(*i as f64));
        }
        let (lo, taken) = a.back(n - 5, 0, 100).unwrap();
        assert_eq!((lo, taken.len()), (n - 105, 100));
        assert_eq!(taken.last().unwrap().0, n - 6);
        assert_eq!(a.back(n, u64::MAX, 10).unwrap().1.len(), 0);
        assert!(a.bytes() < 3 * provetop_shared::spill::BLOCK_BYTES);
    }
}
