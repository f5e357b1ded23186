//! Every phase span a session closed, in closing order, compact: what a replay's light
//! snapshots leave out ([`super::Spans::light`]) and a seek's model takes back for the window
//! it shows ([`super::Spans::fill`]).
//!
//! Contract: entry `i` is the `i`-th span [`super::Spans`] finished (its SRS loads included),
//! as it was then, without the memory seen while it was open (a span taken back carries empty
//! [`super::Stats`]: nothing draws a closed span's). About 40 bytes a span where a
//! [`PhaseSpan`] held by a model costs several hundred.

use std::collections::HashMap;

use provetop_shared::Phase;

use super::span::PhaseSpan;

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

/// The closed spans of a session, compact, in closing order.
#[derive(Debug, Default)]
pub struct SpanArchive {
    entries: Vec<Entry>,
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

    /// Span `i`'s end.
    pub fn end(&self, i: usize) -> u64 {
        self.entries[i].end
    }

    /// Whether span `i` was read from log lines.
    pub fn derived(&self, i: usize) -> bool {
        self.entries[i].phase & DERIVED != 0
    }

    /// Span `i` as it closed, without its memory stats.
    pub fn span(&self, i: usize) -> PhaseSpan {
        let e = &self.entries[i];
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

    /// Bytes held, nearly.
    pub fn bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.phases.len() * 2 * std::mem::size_of::<Phase>()
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
        assert_eq!(a.span(0), s);
        assert_eq!(a.span(1), t);
        assert_eq!((a.len(), a.end(1), a.derived(1)), (2, 400, true));
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }
}
