//! The proof queue: how sectors become queued proofs.
//!
//! Contract: sectors are numbered run-wide, proofs are numbered from 1, both in the order they
//! are queued. Sectors are cut into proofs when they are queued, under the effective mode of
//! that moment (a pending switch counts), one `proof_queued` per proof. When a switch takes
//! effect, what is still queued is cut again for the new mode (`requeue_for` says why).

use provetop_shared::protocol::{BatchMode, Event};

use super::state::{Ctl, Shared};
use super::LOG_TARGET;
use crate::job::ProofSpec;

/// Most sectors that may wait in the queue (a `prove` beyond it is refused).
pub const MAX_QUEUED_SECTORS: u64 = 100_000;

impl Shared {
    /// Queue the next `count` sectors.
    pub(super) fn queue_sectors(&self, c: &mut Ctl, count: u32) {
        let first = c.next_sector;
        c.next_sector += count as u64;
        self.queue_range(c, first, count);
    }

    /// Queue sectors `first..first + count` as proofs of the effective mode's size; returns
    /// their ids.
    fn queue_range(&self, c: &mut Ctl, first: u64, count: u32) -> Vec<u64> {
        let mode = Self::effective_mode(c);
        let per = mode.sectors_per_proof();
        let mut ids = Vec::new();
        let mut next_sector = first;
        let mut left = count;
        while left > 0 {
            let n = left.min(per);
            left -= n;
            let spec = ProofSpec {
                proof_id: c.next_proof,
                first_sector: next_sector,
                sectors: n,
            };
            ids.push(spec.proof_id);
            c.next_proof += 1;
            next_sector += n as u64;
            self.emitter.emit(Event::ProofQueued {
                proof_id: spec.proof_id,
                mode,
                sectors: n,
                partitions: self.workload.partitions,
                constraints: spec.constraints(&self.workload),
            });
            c.queue.push_back(spec);
        }
        self.cv.notify_all();
        ids
    }

    /// When a switch takes effect (nothing in flight), what is still queued is cut again for
    /// the new mode: its proofs are cancelled, naming the proofs that now hold their sectors,
    /// and the same sectors are queued anew, in order. Otherwise `batch:N` would go on proving
    /// one sector a call until the old queue drains, and `single` would prove batches.
    pub(super) fn requeue_for(&self, c: &mut Ctl, mode: BatchMode) {
        let per = mode.sectors_per_proof();
        let last = c.queue.len().saturating_sub(1);
        let cut_right = c
            .queue
            .iter()
            .enumerate()
            .all(|(i, s)| s.sectors == per || (i == last && s.sectors < per));
        if cut_right {
            return;
        }
        let old: Vec<ProofSpec> = c.queue.drain(..).collect();
        // Runs of consecutive sectors (the queue is one run unless ids were ever reordered).
        let mut runs: Vec<(u64, u32, Vec<u64>)> = Vec::new();
        for s in &old {
            match runs.last_mut() {
                Some((first, n, ids)) if *first + *n as u64 == s.first_sector => {
                    *n += s.sectors;
                    ids.push(s.proof_id);
                }
                _ => runs.push((s.first_sector, s.sectors, vec![s.proof_id])),
            }
        }
        for (first, n, old_ids) in runs {
            let new_ids = self.queue_range(c, first, n);
            let new: Vec<(u64, u64, u64)> = c
                .queue
                .iter()
                .filter(|s| new_ids.contains(&s.proof_id))
                .map(|s| {
                    (
                        s.proof_id,
                        s.first_sector,
                        s.first_sector + s.sectors as u64,
                    )
                })
                .collect();
            for o in old.iter().filter(|o| old_ids.contains(&o.proof_id)) {
                let (from, to) = (o.first_sector, o.first_sector + o.sectors as u64);
                // The new proofs that hold this one's sectors.
                let requeued_as = new
                    .iter()
                    .filter(|(_, a, b)| *a < to && from < *b)
                    .map(|(id, _, _)| *id)
                    .collect();
                self.emitter.emit(Event::ProofFinished {
                    proof_id: o.proof_id,
                    ok: false,
                    verified: false,
                    duration_s: 0.0,
                    mode,
                    phases: Vec::new(),
                    error: Some(format!("requeued under {mode}")),
                    cancelled: true,
                    requeued_as,
                });
            }
            self.emitter.emit(Event::Log {
                level: "info".into(),
                target: LOG_TARGET.into(),
                message: format!(
                    "requeued {n} sector{} under {mode}: {} proof{} became {}",
                    if n == 1 { "" } else { "s" },
                    old_ids.len(),
                    if old_ids.len() == 1 { "" } else { "s" },
                    new_ids.len()
                ),
            });
        }
    }
}
