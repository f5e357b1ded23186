//! Prover → monitor: one [`EventMsg`] per line, the first one `hello`.

use serde::{Deserialize, Serialize};

use super::vocab::{
    Backend, BatchMode, GpuInfo, Phase, PhaseTime, ProverConfig, ProverState, SrsSource,
};

/// Serde: a `false` flag is left out of the line (older peers never see it).
fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// First message: who is talking.
    Hello {
        /// Protocol version, "MAJOR.MINOR".
        protocol: String,
        /// Version of the prover program.
        prover_version: String,
        /// Prover process id.
        pid: u32,
        /// Proving backend.
        backend: Backend,
        /// GPUs in use (empty on CPU).
        #[serde(default)]
        gpus: Vec<GpuInfo>,
        /// Workload configuration.
        config: ProverConfig,
    },
    /// SRS loading or generation started.
    SrsLoading {
        /// Where it will come from.
        source: SrsSource,
        /// Expected size in bytes, if known.
        #[serde(default)]
        bytes: Option<u64>,
    },
    /// Progress of a long SRS generation/load.
    SrsProgress {
        /// Units done.
        done: u64,
        /// Units in all.
        total: u64,
    },
    /// SRS is resident and ready.
    SrsReady {
        /// Bytes of SRS held in memory.
        bytes: u64,
        /// Of those, bytes in pinned host memory.
        pinned_bytes: u64,
        /// Where it came from.
        source: SrsSource,
        /// Seconds the load/generation took.
        duration_s: f64,
    },
    /// A proof was accepted into the queue.
    ProofQueued {
        /// Proof id (unique per prover run).
        proof_id: u64,
        /// Mode it will run in.
        mode: BatchMode,
        /// Sectors in this proof job.
        sectors: u32,
        /// Partitions per sector.
        partitions: u32,
        /// Total constraints of the job.
        constraints: u64,
    },
    ProofStarted {
        proof_id: u64,
        /// Mode it runs in.
        mode: BatchMode,
        sectors: u32,
        /// Partitions per sector.
        partitions: u32,
        /// Total constraints of the job.
        constraints: u64,
    },
    /// A phase of a proof started.
    PhaseStarted {
        proof_id: u64,
        phase: Phase,
        /// Partition index, where the phase is per partition.
        #[serde(default)]
        partition: Option<u32>,
    },
    /// A phase of a proof ended.
    PhaseEnded {
        proof_id: u64,
        phase: Phase,
        /// Partition index, where the phase is per partition.
        #[serde(default)]
        partition: Option<u32>,
        /// Measured seconds.
        duration_s: f64,
    },
    /// A proof finished (successfully or not).
    ProofFinished {
        proof_id: u64,
        /// Whether proving succeeded.
        ok: bool,
        /// Whether every produced proof verified against the prepared verifying key.
        verified: bool,
        /// Wall seconds from start to end.
        duration_s: f64,
        /// Mode that produced it.
        mode: BatchMode,
        /// Seconds per phase.
        #[serde(default)]
        phases: Vec<PhaseTime>,
        /// Error text when `ok` is false.
        #[serde(default)]
        error: Option<String>,
        /// The proof never started (`ok` is false, `error` says why): it was still queued
        /// when the prover stopped, or a mode switch cut the queue anew. Not a failure.
        /// Since 1.1.
        #[serde(default, skip_serializing_if = "is_false")]
        cancelled: bool,
        /// Cancelled by a mode switch: the proofs that now hold its sectors (queued anew
        /// under the new mode, announced by `proof_queued`). Since 1.1.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        requeued_as: Vec<u64>,
    },
    /// The batch mode changed (at a safe boundary).
    ModeChanged {
        /// Previous mode.
        from: BatchMode,
        /// New mode.
        to: BatchMode,
    },
    /// A requested mode change was refused.
    ModeRefused {
        /// The mode asked for.
        requested: BatchMode,
        /// Why, for the operator.
        reason: String,
    },
    /// The prover's own account of memory it holds outside plain RSS accounting.
    MemoryReport {
        /// Bytes the prover pinned (cudaHostAlloc / cudaHostRegister).
        pinned_bytes: u64,
        /// Bytes the prover holds on GPUs.
        gpu_bytes: u64,
        /// Bytes of SRS resident.
        #[serde(default)]
        srs_bytes: u64,
        /// Of the GPU memory it holds, bytes in live use now, where it keeps a pool (a
        /// caching allocator, fixed arenas): NVML sees the pool, this is what is in it.
        /// Optional (a monitor that predates it ignores it); absent: not reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gpu_live_bytes: Option<u64>,
        /// The pool's size: GPU bytes reserved from the driver (what NVML's per-process
        /// figure shows). Optional (a monitor that predates it ignores it); absent: not
        /// reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gpu_reserved_bytes: Option<u64>,
    },
    /// Prover state changed (paused/resumed/idle/proving).
    State {
        /// New state.
        state: ProverState,
    },
    /// A log line from the prover (including bridged bellperson log records).
    Log {
        /// "error", "warn", "info", "debug" or "trace".
        level: String,
        /// Log target (module path).
        #[serde(default)]
        target: String,
        /// Text.
        message: String,
    },
    /// Something went wrong; `fatal` errors end the prover.
    Error {
        /// Text.
        message: String,
        /// Whether the prover is about to exit.
        #[serde(default)]
        fatal: bool,
    },
    /// Last message: the prover is exiting.
    Bye {
        /// Why it exits ("shutdown", "stdin closed", "signal", "done", …).
        reason: String,
        /// Proofs completed in this run.
        proofs_done: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventMsg {
    /// Monotonic nanoseconds (`CLOCK_MONOTONIC`); 0 asks the monitor to stamp it on arrival.
    pub ts: u64,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

impl EventMsg {
    /// Stamp an event now.
    pub fn now(event: Event) -> Self {
        EventMsg {
            ts: crate::clock::mono_ns(),
            event,
        }
    }

    /// One NDJSON line, without the trailing newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("events always serialize")
    }
}

impl Event {
    /// A `proof_finished` for a proof that never started: cancelled while queued (requeued
    /// ones included). Protocol 1.1 flags it; provetop-prover 1.0 said so only in `error`,
    /// and its recordings are still read right.
    pub fn is_cancelled_proof(&self) -> bool {
        match self {
            Event::ProofFinished {
                ok,
                error,
                cancelled,
                ..
            } => {
                *cancelled
                    || (!ok
                        && error
                            .as_deref()
                            .is_some_and(|e| e.starts_with("cancelled before it started")))
            }
            _ => false,
        }
    }

    /// The wire `type` of this event.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Hello { .. } => "hello",
            Event::SrsLoading { .. } => "srs_loading",
            Event::SrsProgress { .. } => "srs_progress",
            Event::SrsReady { .. } => "srs_ready",
            Event::ProofQueued { .. } => "proof_queued",
            Event::ProofStarted { .. } => "proof_started",
            Event::PhaseStarted { .. } => "phase_started",
            Event::PhaseEnded { .. } => "phase_ended",
            Event::ProofFinished { .. } => "proof_finished",
            Event::ModeChanged { .. } => "mode_changed",
            Event::ModeRefused { .. } => "mode_refused",
            Event::MemoryReport { .. } => "memory_report",
            Event::State { .. } => "state",
            Event::Log { .. } => "log",
            Event::Error { .. } => "error",
            Event::Bye { .. } => "bye",
        }
    }
}
