//! `--mem-budget`: the memory model learnt from finished proofs, and the peak it predicts for
//! a mode before a switch to it is allowed.
//!
//! Contract: the predicted peak is of RSS: the resident floor (the RSS at idle, SRS loaded)
//! plus bytes per live constraint times the constraints the mode keeps alive at once (what a
//! proof adds to the resident set is the heap it allocates above its start). Bytes per constraint is the largest measured
//! over proofs that proved and verified with a counted heap (each such proof logs its
//! measurement on `provetop_prover::heap`), or [`modes::PRIOR_BYTES_PER_CONSTRAINT`] before
//! the first. A switch is refused when the prediction exceeds the budget; the reason says
//! which basis it used.

use provetop_shared::protocol::{BatchMode, Event};
use provetop_shared::units::fmt_bytes;

use crate::events::Emitter;
use crate::job::{Outcome, ProofSpec, Workload};
use crate::modes;

/// Measured memory cost of earlier proofs.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct MemModel {
    /// Largest measured working-set bytes per live constraint.
    bytes_per_constraint: Option<f64>,
    /// Proofs that contributed to it (a refusal quotes the count).
    proofs: u32,
}

impl MemModel {
    /// Predicted peak RSS of a proof of `w` in `mode`: the resident `floor` and what it adds,
    /// the bytes per constraint it assumes, and whether that figure was measured.
    fn predict(&self, floor: u64, w: &Workload, mode: BatchMode) -> (u64, f64, bool) {
        let live = modes::live_constraints(
            mode,
            mode.sectors_per_proof(),
            w.partitions,
            w.layout.constraints,
        );
        let (bpc, measured) = match self.bytes_per_constraint {
            Some(b) => (b, true),
            None => (modes::PRIOR_BYTES_PER_CONSTRAINT, false),
        };
        (floor + (bpc * live as f64) as u64, bpc, measured)
    }

    /// Why a switch to `mode` is refused, if `budget` refuses it: its predicted peak RSS over
    /// the budget, or over `reach` (what this process can reach before the limit that binds
    /// it, and that limit's name) where that is less.
    pub(super) fn over_budget(
        &self,
        budget: Option<u64>,
        reach: Option<(u64, String)>,
        floor: u64,
        w: &Workload,
        mode: BatchMode,
    ) -> Option<String> {
        let budget = budget?;
        let (peak, bpc, measured) = self.predict(floor, w, mode);
        let (cap, what) = match reach {
            Some((r, name)) if r < budget => (
                r,
                format!(
                    "what this process can reach before {name}, {} (--mem-budget {})",
                    fmt_bytes(r),
                    fmt_bytes(budget)
                ),
            ),
            _ => (budget, format!("--mem-budget {}", fmt_bytes(budget))),
        };
        if peak <= cap {
            return None;
        }
        let basis = if measured {
            format!(
                "{bpc:.0} B/constraint measured over {} proof(s)",
                self.proofs
            )
        } else {
            format!("{bpc:.0} B/constraint assumed (no proof measured yet)")
        };
        Some(format!(
            "predicted peak RSS {} exceeds {what} ({basis}, resident floor {})",
            fmt_bytes(peak),
            fmt_bytes(floor),
        ))
    }

    /// Learn from a proof of `w` that ended (its measurement logged on `emitter`).
    /// `overlap`: most proofs alive at once while it ran.
    pub(super) fn measure(
        &mut self,
        emitter: &Emitter,
        w: &Workload,
        spec: &ProofSpec,
        mode: BatchMode,
        out: &Outcome,
        overlap: usize,
    ) {
        // Pipelined proofs that did not overlap held one sector, not D.
        let live = match mode {
            BatchMode::Pipelined(_) => overlap.max(1) as u64 * spec.constraints(w),
            _ => out.live_constraints,
        };
        if out.ok && out.verified {
            if let Some(ws) = out.working_set {
                let bpc = ws as f64 / live.max(1) as f64;
                emitter.emit(Event::Log {
                    level: "info".into(),
                    target: "provetop_prover::heap".into(),
                    message: format!(
                        "proof {}: working set {ws} B ({}; {bpc:.0} B per live constraint, {} live in {mode})",
                        spec.proof_id,
                        fmt_bytes(ws),
                        live
                    ),
                });
                self.bytes_per_constraint =
                    Some(self.bytes_per_constraint.map_or(bpc, |b| b.max(bpc)));
                self.proofs += 1;
            }
        }
    }
}
