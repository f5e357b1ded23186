//! What one [`super::Model::apply`] changed, told by the reducer itself.
//!
//! Everything that indexes a record stream (the store's seek index and phase table, the
//! classify and export tables) listens to these instead of comparing the model before and
//! after a record. An effect is emitted exactly once, in the order the changes happened
//! within the record.

use provetop_shared::classify::ThresholdPhase;
use provetop_shared::protocol::ProverState;
use provetop_shared::{Alert, BatchMode, Phase};

use super::span::{PhaseSpan, ProofSpan};

/// Where a timeline span comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanSource {
    /// A phase of the prover's own (`phase_started` … `phase_ended`).
    Prover,
    /// The SRS load or generation (`srs_loading` … `srs_ready`), a timeline row of its own
    /// that is not one of the prover's phases.
    Srs,
}

/// One change.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// A span opened. `first_of_phase`: no span of that phase was open before this record
    /// (the start of a phase, for `]`/`[`, however many partitions follow).
    SpanOpened {
        source: SpanSource,
        phase: Phase,
        first_of_phase: bool,
    },
    /// A span closed, with the memory seen while it was open (also a span reconstructed from
    /// an end without a start).
    SpanClosed { source: SpanSource, span: PhaseSpan },
    /// A proof that ran finished, well or not (a cancelled one never ran: see below).
    ProofFinished(ProofSpan),
    /// A queued proof was cancelled before it started.
    ProofCancelled { proof_id: u64 },
    /// The batch mode changed.
    ModeChanged { from: BatchMode, to: BatchMode },
    /// The prover's run state changed (`state` events, and `bye`).
    StateChanged(ProverState),
    /// The SRS is resident.
    SrsReady { bytes: u64 },
    /// An alert started firing.
    AlertFired(Alert),
    /// An alert stopped firing.
    AlertCleared(Alert),
    /// The supervised child started.
    ChildStarted { pid: u32 },
    /// The supervised (or watched) process is gone.
    ChildExited { pid: u32, code: Option<i32> },
    /// RSS crossed into another threshold phase (a new run began).
    ThresholdPhaseChanged(ThresholdPhase),
}

/// The effects of one record, in order.
pub type Effects = Vec<Effect>;
