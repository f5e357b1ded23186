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
