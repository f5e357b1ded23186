//! The memory forecast behind `predicted_free`: will the proof now running fit?
//!
//! A proof's peak is predicted from the proofs before it of the same shape (batch mode,
//! sectors, partitions, constraints): the highest peak RSS of the tree over the last
//! [`KEPT`] that finished well. What it still needs is that peak minus the RSS now; what it can
//! get is MemAvailable, or the cgroup's room when that is less. `predicted_free` is the
//! difference: below zero, the proof is expected to run out of memory before it gets there.
//! The first proof of a shape has no forecast.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::protocol::{BatchMode, Event};
use crate::units::fmt_bytes;
use crate::{Mark, Record, RecordBody, Sample};

/// Finished proofs kept per shape.
pub const KEPT: usize = 3;

/// What makes two proofs comparable in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Shape {
    mode: BatchMode,
    sectors: u32,
    partitions: u32,
    constraints: u64,
}

/// A proof in flight: its shape and the tree's peak RSS since it started.
#[derive(Debug, Clone)]
struct InFlight {
    shape: Shape,
    peak: u64,
}

/// Peaks of finished proofs per shape, and the proofs in flight.
#[derive(Debug, Clone, Default)]
pub struct Forecast {
    inflight: BTreeMap<u64, InFlight>,
    history: HashMap<Shape, VecDeque<u64>>,
}

impl Forecast {
    /// Follow one record of the stream (the alert engine and the screen's model both do).
    pub fn observe(&mut self, rec: &Record) {
        match &rec.body {
            RecordBody::Sample(s) => self.sample(s),
            RecordBody::Event(e) => self.event(e),
            RecordBody::Mark(Mark::ChildExited { .. } | Mark::ChildStarted { .. }) => self.reset(),
            _ => {}
        }
    }

    /// Follow the prover's events.
    pub fn event(&mut self, e: &Event) {
        match e {
            Event::ProofStarted {
                proof_id,
                mode,
                sectors,
                partitions,
                constraints,
            } => {
                let shape = Shape {
                    mode: *mode,
                    sectors: *sectors,
                    partitions: *partitions,
                    constraints: *constraints,
                };
                self.inflight.insert(*proof_id, InFlight { shape, peak: 0 });
            }
            Event::ProofFinished { proof_id, ok, .. } => {
                if let Some(p) = self.inflight.remove(proof_id) {
                    if *ok && p.peak > 0 {
                        let h = self.history.entry(p.shape).or_default();
                        h.push_back(p.peak);
                        if h.len() > KEPT {
                            h.pop_front();
                        }
                    }
                }
            }
            Event::Bye { .. } => self.inflight.clear(),
            _ => {}
        }
    }

    /// The child ended or a new one started: nothing is in flight (what was learnt stays).
    pub fn reset(&mut self) {
        self.inflight.clear();
    }

    /// Follow the tree's memory: every proof in flight sees the tree's peak (overlapping
    /// proofs share it, as the screen's per-proof peaks do).
    pub fn sample(&mut self, s: &Sample) {
        let now = s.peak.unwrap_or(0).max(s.rss);
        for p in self.inflight.values_mut() {
            p.peak = p.peak.max(now);
        }
    }

    /// `predicted_free` at this sample, bytes (negative: short by that much), with what it
    /// rests on; `None` without a proof in flight whose shape has finished before, or without
    /// MemAvailable.
    pub fn predicted_free(&self, s: &Sample) -> Option<(f64, String)> {
        let (id, mode, peak) = self
            .inflight
            .iter()
            .filter_map(|(id, p)| {
                let h = self.history.get(&p.shape)?;
                Some((*id, p.shape.mode, *h.iter().max()?))
            })
            .max_by_key(|(_, _, peak)| *peak)?;
        let mut room = s.mem_available?;
        if let (Some(max), Some(cur)) = (s.cgroup_max, s.cgroup_current) {
            room = room.min(max.saturating_sub(cur));
        }
        let need = peak.saturating_sub(s.rss);
        let free = room as f64 - need as f64;
        let what = format!(
            "proof {id} predicted to peak at {} like the last {mode} proofs; needs {} more, {} free",
            fmt_bytes(peak),
            fmt_bytes(need),
            fmt_bytes(room)
        );
        Some((free, what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::GIB;

    /// A proof of one sector, 10 × 2^20, started.
    fn started(id: u64, mode: BatchMode) -> Event {
        Event::ProofStarted {
            proof_id: id,
            mode,
            sectors: 1,
            partitions: 10,
            constraints: 1 << 20,
        }
    }

    /// A proof finished, verified when `ok`.
    fn finished(id: u64, ok: bool) -> Event {
        Event::ProofFinished {
            proof_id: id,
            ok,
            verified: ok,
            duration_s: 1.0,
            mode: BatchMode::Single,
            phases: vec![],
            error: None,
            cancelled: false,
            requeued_as: vec![],
        }
    }

    fn sample(rss: u64, peak: u64, avail: u64) -> Sample {
        Sample {
            rss,
            peak: Some(peak),
            mem_available: Some(avail),
            ..Sample::default()
        }
    }

    #[test]
    fn predicts_from_the_last_proofs_of_the_same_shape() {
        let mut f = Forecast::default();
        f.event(&started(1, BatchMode::Single));
        // No proof of this shape has finished yet: no forecast.
        assert!(f.predicted_free(&sample(GIB, GIB, 10 * GIB)).is_none());
        f.sample(&sample(2 * GIB, 5 * GIB, 10 * GIB));
        f.sample(&sample(3 * GIB, 3 * GIB, 10 * GIB));
        f.event(&finished(1, true));
        // Proof 2, same shape, at 1 GiB with 3 GiB available: it will need 4 GiB more.
        f.event(&started(2, BatchMode::Single));
        let (free, what) = f.predicted_free(&sample(GIB, GIB, 3 * GIB)).unwrap();
        assert_eq!(free, -(GIB as f64));
        assert!(
            what.contains("proof 2") && what.contains("5.0 GiB"),
            "{what}"
        );
        // Past its peak, it needs nothing more.
        let (free, _) = f.predicted_free(&sample(6 * GIB, 6 * GIB, GIB)).unwrap();
        assert_eq!(free, GIB as f64);
        // A cgroup with less room than MemAvailable is the limit.
        let mut s = sample(GIB, GIB, 30 * GIB);
        s.cgroup_max = Some(8 * GIB);
        s.cgroup_current = Some(2 * GIB);
        assert_eq!(f.predicted_free(&s).unwrap().0, 2.0 * GIB as f64);
        // Another mode has no history yet.
        f.event(&finished(2, false));
        f.event(&started(3, BatchMode::Batch(2)));
        assert!(f.predicted_free(&sample(GIB, GIB, GIB)).is_none());
    }

    #[test]
    fn failed_proofs_teach_nothing_and_the_last_few_count() {
        let mut f = Forecast::default();
        f.event(&started(1, BatchMode::Single));
        f.sample(&sample(9 * GIB, 9 * GIB, 0));
        f.event(&finished(1, false));
        f.event(&started(2, BatchMode::Single));
        assert!(f.predicted_free(&sample(0, 0, GIB)).is_none());
        // Peaks 8, 2, 2, 2: after three more, the 8 GiB one has aged out.
        for (id, peak) in [(2, 8), (3, 2), (4, 2), (5, 2)] {
            if id > 2 {
                f.event(&started(id, BatchMode::Single));
            }
            f.sample(&sample(peak * GIB, peak * GIB, 0));
            f.event(&finished(id, true));
        }
        f.event(&started(6, BatchMode::Single));
        let (free, _) = f.predicted_free(&sample(0, 0, 10 * GIB)).unwrap();
        assert_eq!(free, 8.0 * GIB as f64);
    }
}
