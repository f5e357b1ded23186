//! The prover ⇄ monitor protocol: newline-delimited JSON.
//!
//! Prover → monitor: one [`EventMsg`] per line (`{"ts":…,"type":"…",…}`); the first one is
//! `hello`, which carries [`PROTOCOL_VERSION`]. Monitor → prover: one [`ControlMsg`] per line
//! on the prover's stdin. Every message carries `ts`, nanoseconds on the system-wide
//! monotonic clock ([`crate::clock::mono_ns`]).
//!
//! Compatibility rules: unknown fields are ignored (a newer minor version may add them); an
//! unknown message `type` or a newer *major* version in `hello` is a clear error
//! ([`ProtocolError`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Protocol version spoken by this build, `"MAJOR.MINOR"` (1.1 added `cancelled` and
/// `requeued_as` to `proof_finished`).
pub const PROTOCOL_VERSION: &str = "1.1";

/// Major part of [`PROTOCOL_VERSION`]; a peer with a higher major is refused.
pub const PROTOCOL_MAJOR: u32 = 1;

/// Serde: a `false` flag is left out of the line (older peers never see it).
fn is_false(b: &bool) -> bool {
    !*b
}

/// Which proving backend a prover runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// bellperson's CPU prover.
    Cpu,
    /// bellperson's native GPU prover with ec-gpu-gen CUDA kernels.
    Cuda,
    /// bellperson's `cuda-supraseal` prover (supraseal-c2 / sppark).
    Supraseal,
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Supraseal => "supraseal",
        })
    }
}

/// How a prover batches its work. Written as `single`, `batch:N`, `sps`, `pipelined:D`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum BatchMode {
    /// One sector: all partitions synthesized in parallel, then proved.
    Single,
    /// N sectors' circuits synthesized together and proved in one batch call.
    Batch(u32),
    /// Sequential partition synthesis: one partition synthesized and proved at a time.
    Sps,
    /// Synthesis overlaps proving, at most D units in flight.
    Pipelined(u32),
}

impl BatchMode {
    /// Sectors one proof holds in this mode (`batch:N` proves N in one call).
    pub fn sectors_per_proof(self) -> u32 {
        match self {
            BatchMode::Batch(n) => n.max(1),
            _ => 1,
        }
    }
}

impl fmt::Display for BatchMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchMode::Single => f.write_str("single"),
            BatchMode::Batch(n) => write!(f, "batch:{n}"),
            BatchMode::Sps => f.write_str("sps"),
            BatchMode::Pipelined(d) => write!(f, "pipelined:{d}"),
        }
    }
}

impl FromStr for BatchMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let num = |a: Option<&str>, default: u32| -> Result<u32, String> {
            match a {
                None => Ok(default),
                Some(a) => match a.parse::<u32>() {
                    Ok(n) if n >= 1 => Ok(n),
                    _ => Err(format!(
                        "bad count {a:?} in batch mode {s:?} (want an integer ≥ 1)"
                    )),
                },
            }
        };
        match name {
            "single" if arg.is_none() => Ok(BatchMode::Single),
            "sps" if arg.is_none() => Ok(BatchMode::Sps),
            "batch" => Ok(BatchMode::Batch(num(arg, 2)?)),
            "pipelined" => Ok(BatchMode::Pipelined(num(arg, 2)?)),
            _ => Err(format!(
                "unknown batch mode {s:?} (want single, batch:N, sps or pipelined:D)"
            )),
        }
    }
}

impl TryFrom<String> for BatchMode {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<BatchMode> for String {
    fn from(m: BatchMode) -> String {
        m.to_string()
    }
}

/// A step of proving. Known steps have variants; anything else survives as `Other`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Phase {
    /// SRS (Groth16 parameters) generation.
    SrsGenerate,
    /// SRS read from the disk cache.
    SrsLoad,
    /// Circuit synthesis (witness + constraint evaluation), per partition.
    Synthesis,
    /// The whole bellperson prove call (everything after synthesis).
    Prove,
    /// GPU kernel/program set-up.
    GpuSetup,
    /// Computing h: the FFTs/NTTs ("get h").
    FftH,
    /// Multiexp over the h query.
    MsmH,
    /// Multiexp over the l query.
    MsmL,
    /// Multiexps over the a and b_g1 queries.
    MsmAB1,
    /// Multiexp over the b_g2 query.
    MsmB2,
    /// Verifying the finished proof.
    Verify,
    /// A phase this build does not know by name.
    Other(String),
}

impl Phase {
    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            Phase::SrsGenerate => "srs_generate",
            Phase::SrsLoad => "srs_load",
            Phase::Synthesis => "synthesis",
            Phase::Prove => "prove",
            Phase::GpuSetup => "gpu_setup",
            Phase::FftH => "fft_h",
            Phase::MsmH => "msm_h",
            Phase::MsmL => "msm_l",
            Phase::MsmAB1 => "msm_a_b1",
            Phase::MsmB2 => "msm_b2",
            Phase::Verify => "verify",
            Phase::Other(s) => s,
        }
    }
}

impl From<String> for Phase {
    fn from(s: String) -> Phase {
        match s.as_str() {
            "srs_generate" => Phase::SrsGenerate,
            "srs_load" => Phase::SrsLoad,
            "synthesis" => Phase::Synthesis,
            "prove" => Phase::Prove,
            "gpu_setup" => Phase::GpuSetup,
            "fft_h" => Phase::FftH,
            "msm_h" => Phase::MsmH,
            "msm_l" => Phase::MsmL,
            "msm_a_b1" => Phase::MsmAB1,
            "msm_b2" => Phase::MsmB2,
            "verify" => Phase::Verify,
            _ => Phase::Other(s),
        }
    }
}

impl From<Phase> for String {
    fn from(p: Phase) -> String {
        p.as_str().to_string()
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the SRS came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SrsSource {
    /// Generated now (first run for this circuit shape).
    Generated,
    /// Read from the on-disk cache.
    Disk,
    /// Already resident in memory (no load at all).
    Memory,
}

/// A GPU as the prover sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// Index of the device (CUDA ordinal).
    pub index: u32,
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Compute capability, e.g. "9.0".
    #[serde(default)]
    pub compute_capability: Option<String>,
    /// Device memory in bytes.
    #[serde(default)]
    pub memory_bytes: Option<u64>,
}

/// The circuit/workload configuration a prover runs with (reported in `hello`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProverConfig {
    /// Partitions per sector.
    pub partitions: u32,
    /// Constraints per partition (as bellperson counts them).
    pub constraints: u64,
    /// Circuit kind, e.g. "sha256-merkle".
    pub circuit: String,
    /// Batch mode at start.
    pub mode: BatchMode,
    /// Worker threads used for synthesis.
    #[serde(default)]
    pub threads: Option<u32>,
}

/// Time spent in one phase of a finished proof.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseTime {
    /// The phase.
    pub phase: Phase,
    /// Seconds, summed over partitions (wall time where partitions overlap is in `wall_s`).
    pub duration_s: f64,
}

/// Prover → monitor message body. The `type` field names the variant (snake_case).
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
    /// A proof started.
    ProofStarted {
        /// Proof id.
        proof_id: u64,
        /// Mode it runs in.
        mode: BatchMode,
        /// Sectors.
        sectors: u32,
        /// Partitions per sector.
        partitions: u32,
        /// Total constraints of the job.
        constraints: u64,
    },
    /// A phase of a proof started.
    PhaseStarted {
        /// Proof id.
        proof_id: u64,
        /// Phase.
        phase: Phase,
        /// Partition index, where the phase is per partition.
        #[serde(default)]
        partition: Option<u32>,
    },
    /// A phase of a proof ended.
    PhaseEnded {
        /// Proof id.
        proof_id: u64,
        /// Phase.
        phase: Phase,
        /// Partition index, where the phase is per partition.
        #[serde(default)]
        partition: Option<u32>,
        /// Measured seconds.
        duration_s: f64,
    },
    /// A proof finished (successfully or not).
    ProofFinished {
        /// Proof id.
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

/// Prover run state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProverState {
    /// Waiting for work.
    Idle,
    /// Working on a proof.
    Proving,
    /// Paused by the operator: no new proof starts.
    Paused,
    /// Shutting down.
    Stopping,
}

/// An event with its timestamp: one line of the prover's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventMsg {
    /// Monotonic nanoseconds.
    pub ts: u64,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

/// Monitor → prover message body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Control {
    /// Queue `count` more proofs.
    Prove {
        /// How many proofs.
        count: u32,
    },
    /// Switch batch mode at the next safe boundary.
    SetMode {
        /// The new mode.
        mode: BatchMode,
    },
    /// Start no new proof until resumed (the one in flight finishes).
    Pause,
    /// Undo `pause`.
    Resume,
    /// Exit after the current proof (or abort it when `abort`), then say bye.
    Shutdown {
        /// Abort the proof in flight instead of finishing it.
        #[serde(default)]
        abort: bool,
    },
}

/// A control message with its timestamp: one line on the prover's stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlMsg {
    /// Monotonic nanoseconds.
    pub ts: u64,
    /// The control.
    #[serde(flatten)]
    pub control: Control,
}

/// Why a protocol line was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtocolError {
    /// Not JSON, or not an object.
    #[error("not a JSON object: {0}")]
    Json(String),
    /// No `type` field.
    #[error("message has no \"type\" field")]
    MissingType,
    /// A `type` this build does not know.
    #[error("unknown message type {0:?}")]
    UnknownType(String),
    /// Fields of a known type are wrong.
    #[error("bad {kind:?} message: {detail}")]
    BadFields {
        /// The message type.
        kind: String,
        /// serde's description.
        detail: String,
    },
    /// The peer speaks a newer major version.
    #[error("peer speaks protocol {peer}, this build speaks {ours} (major version too new)")]
    NewerMajor {
        /// Peer's version.
        peer: String,
        /// Ours.
        ours: &'static str,
    },
    /// The line is longer than the reader accepts.
    #[error("line of {0} bytes exceeds the limit")]
    TooLong(usize),
}

const EVENT_TYPES: &[&str] = &[
    "hello",
    "srs_loading",
    "srs_progress",
    "srs_ready",
    "proof_queued",
    "proof_started",
    "phase_started",
    "phase_ended",
    "proof_finished",
    "mode_changed",
    "mode_refused",
    "memory_report",
    "state",
    "log",
    "error",
    "bye",
];

const CONTROL_TYPES: &[&str] = &["prove", "set_mode", "pause", "resume", "shutdown"];

fn parse_tagged<T: serde::de::DeserializeOwned>(
    line: &str,
    known: &[&str],
) -> Result<(T, String), ProtocolError> {
    let value: serde_json::Value =
        serde_json::from_str(line.trim_end()).map_err(|e| ProtocolError::Json(e.to_string()))?;
    let obj = value
        .as_object()
        .ok_or_else(|| ProtocolError::Json("not an object".into()))?;
    let kind = obj
        .get("type")
        .and_then(|t| t.as_str())
        .ok_or(ProtocolError::MissingType)?
        .to_string();
    if !known.contains(&kind.as_str()) {
        return Err(ProtocolError::UnknownType(kind));
    }
    let msg = serde_json::from_value(value).map_err(|e| ProtocolError::BadFields {
        kind: kind.clone(),
        detail: e.to_string(),
    })?;
    Ok((msg, kind))
}

/// Parse one prover output line. A `hello` of a newer major version is an error.
pub fn parse_event(line: &str) -> Result<EventMsg, ProtocolError> {
    let (msg, _) = parse_tagged::<EventMsg>(line, EVENT_TYPES)?;
    if let Event::Hello { protocol, .. } = &msg.event {
        check_version(protocol)?;
    }
    Ok(msg)
}

/// Parse one control line.
pub fn parse_control(line: &str) -> Result<ControlMsg, ProtocolError> {
    parse_tagged::<ControlMsg>(line, CONTROL_TYPES).map(|(m, _)| m)
}

/// Accept any version with our major (or older); refuse a newer major.
pub fn check_version(peer: &str) -> Result<(), ProtocolError> {
    let major = peer
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok())
        .ok_or_else(|| ProtocolError::BadFields {
            kind: "hello".into(),
            detail: format!("protocol version {peer:?} is not MAJOR.MINOR"),
        })?;
    if major > PROTOCOL_MAJOR {
        return Err(ProtocolError::NewerMajor {
            peer: peer.to_string(),
            ours: PROTOCOL_VERSION,
        });
    }
    Ok(())
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

impl ControlMsg {
    /// Stamp a control now.
    pub fn now(control: Control) -> Self {
        ControlMsg {
            ts: crate::clock::mono_ns(),
            control,
        }
    }

    /// One NDJSON line, without the trailing newline.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("controls always serialize")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_mode_strings() {
        for (s, m) in [
            ("single", BatchMode::Single),
            ("batch:4", BatchMode::Batch(4)),
            ("sps", BatchMode::Sps),
            ("pipelined:2", BatchMode::Pipelined(2)),
        ] {
            assert_eq!(s.parse::<BatchMode>().unwrap(), m);
            assert_eq!(m.to_string(), s);
        }
        assert!("batch:0".parse::<BatchMode>().is_err());
        assert!("turbo".parse::<BatchMode>().is_err());
        assert!("single:3".parse::<BatchMode>().is_err());
    }

    #[test]
    fn unknown_type_and_fields() {
        assert_eq!(
            parse_event(r#"{"ts":1,"type":"teleport"}"#),
            Err(ProtocolError::UnknownType("teleport".into()))
        );
        let m =
            parse_event(r#"{"ts":5,"type":"bye","reason":"done","proofs_done":2,"x":1}"#).unwrap();
        assert_eq!(m.ts, 5);
        assert!(matches!(m.event, Event::Bye { proofs_done: 2, .. }));
        assert!(matches!(
            parse_event("{not json"),
            Err(ProtocolError::Json(_))
        ));
        assert_eq!(parse_event(r#"{"ts":1}"#), Err(ProtocolError::MissingType));
    }

    #[test]
    fn newer_major_refused() {
        let line = r#"{"ts":1,"type":"hello","protocol":"2.0","prover_version":"x","pid":1,"backend":"cpu","config":{"partitions":1,"constraints":1,"circuit":"c","mode":"single"}}"#;
        assert!(matches!(
            parse_event(line),
            Err(ProtocolError::NewerMajor { .. })
        ));
        let ok = line.replace("2.0", "1.7");
        assert!(parse_event(&ok).is_ok());
    }

    #[test]
    fn phases_roundtrip_unknown() {
        let p: Phase = serde_json::from_str("\"warp_drive\"").unwrap();
        assert_eq!(p, Phase::Other("warp_drive".into()));
        assert_eq!(serde_json::to_string(&Phase::MsmB2).unwrap(), "\"msm_b2\"");
    }
}
