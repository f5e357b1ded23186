//! Batch modes: how a proof's sectors × partitions are cut into bellperson proving calls
//! ("units"), how many units are in flight at once, and what that costs in memory.
//!
//! | mode          | unit                          | units in flight |
//! |---------------|-------------------------------|-----------------|
//! | `single`      | one sector (its P partitions) | 1               |
//! | `batch:N`     | up to N sectors (N·P)         | 1               |
//! | `sps`         | one partition                 | 1               |
//! | `pipelined:D` | one sector (its P partitions) | up to D proofs  |
//!
//! Inside a unit bellperson synthesizes its circuits in parallel (rayon) and proves them in
//! one batch call. `pipelined:D` starts the next queued proof as soon as the previous one has
//! finished synthesis, so the next sector's synthesis (on the CPU cores) overlaps this
//! sector's proving (on the GPU), with at most D sectors' assignments alive. The overlap has
//! to be across sectors: bellperson proves a sector's partitions in one call after all of them
//! are synthesized, so within one sector there is nothing to overlap. `batch:N` also decides
//! how many sectors a queued proof has.

use provetop_shared::protocol::BatchMode;

/// One circuit of a unit: which sector of the proof, which partition of the sector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// Index of the sector within the proof.
    pub sector: usize,
    /// Partition within the sector.
    pub partition: u32,
}

impl Part {
    /// Partition label unique within the proof (`sector · P + partition`), used in events.
    pub fn label(&self, partitions: u32) -> u32 {
        self.sector as u32 * partitions + self.partition
    }
}

/// One bellperson proving call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// Its circuits.
    pub parts: Vec<Part>,
}

/// Proofs that may be in flight at once.
pub fn in_flight(mode: BatchMode) -> usize {
    match mode {
        BatchMode::Pipelined(d) => d.max(1) as usize,
        _ => 1,
    }
}

/// Cut a proof of `sectors` sectors × `partitions` partitions into units.
pub fn plan(mode: BatchMode, sectors: usize, partitions: u32) -> Vec<Unit> {
    let all = |s: usize| {
        (0..partitions).map(move |p| Part {
            sector: s,
            partition: p,
        })
    };
    match mode {
        BatchMode::Single | BatchMode::Pipelined(_) => (0..sectors)
            .map(|s| Unit {
                parts: all(s).collect(),
            })
            .collect(),
        BatchMode::Batch(n) => (0..sectors)
            .collect::<Vec<_>>()
            .chunks(n.max(1) as usize)
            .map(|ss| Unit {
                parts: ss.iter().flat_map(|&s| all(s)).collect(),
            })
            .collect(),
        BatchMode::Sps => (0..sectors)
            .flat_map(all)
            .map(|p| Unit { parts: vec![p] })
            .collect(),
    }
}

/// Constraints whose assignments are alive at the peak of a proof of `sectors` sectors in
/// `mode` (the working set scales with this; `pipelined:D` counts the D proofs in flight).
pub fn live_constraints(mode: BatchMode, sectors: u32, partitions: u32, constraints: u64) -> u64 {
    let per_partition = constraints;
    match mode {
        BatchMode::Single => partitions as u64 * per_partition,
        BatchMode::Batch(n) => n.min(sectors.max(1)) as u64 * partitions as u64 * per_partition,
        BatchMode::Sps => per_partition,
        BatchMode::Pipelined(d) => d.max(1) as u64 * partitions as u64 * per_partition,
    }
}

/// Working-set bytes per live constraint assumed before any proof has been measured
/// (bellperson keeps a, b, c and the witness, 32 B each; FFT domains and multiexp buffers
/// come on top). Measured values replace it after the first proof.
pub const PRIOR_BYTES_PER_CONSTRAINT: f64 = 400.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        assert_eq!(plan(BatchMode::Single, 2, 3).len(), 2);
        assert_eq!(plan(BatchMode::Single, 2, 3)[1].parts.len(), 3);
        let b = plan(BatchMode::Batch(2), 3, 2);
        assert_eq!(b.iter().map(|u| u.parts.len()).collect::<Vec<_>>(), [4, 2]);
        assert_eq!(plan(BatchMode::Sps, 2, 3).len(), 6);
        assert_eq!(plan(BatchMode::Pipelined(2), 1, 4).len(), 1);
        assert_eq!(plan(BatchMode::Pipelined(2), 1, 4)[0].parts.len(), 4);
        let labels: Vec<u32> = plan(BatchMode::Sps, 2, 3)
            .iter()
            .map(|u| u.parts[0].label(3))
            .collect();
        assert_eq!(labels, [0, 1, 2, 3, 4, 5]);
        assert_eq!(live_constraints(BatchMode::Sps, 1, 4, 100), 100);
        assert_eq!(live_constraints(BatchMode::Single, 1, 4, 100), 400);
        assert_eq!(live_constraints(BatchMode::Batch(3), 3, 4, 100), 1200);
        assert_eq!(live_constraints(BatchMode::Pipelined(2), 1, 4, 100), 800);
        assert_eq!(BatchMode::Batch(3).sectors_per_proof(), 3);
        assert_eq!(in_flight(BatchMode::Pipelined(3)), 3);
    }
}
