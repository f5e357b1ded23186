//! The words of the protocol: backends, batch modes, phases, SRS sources, prover states, GPU
//! and workload descriptions. Each has one wire spelling, and `Display`/`FromStr` agree with it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

/// Every phase this build knows by name, in the order of [`Phase`]'s variants: the one list
/// that readers of the wire name and consumers that enumerate phases (metric labels, the
/// timeline's legend) go through. Any other name is [`Phase::Other`].
pub static KNOWN_PHASES: [Phase; 11] = [
    Phase::SrsGenerate,
    Phase::SrsLoad,
    Phase::Synthesis,
    Phase::Prove,
    Phase::GpuSetup,
    Phase::FftH,
    Phase::MsmH,
    Phase::MsmL,
    Phase::MsmAB1,
    Phase::MsmB2,
    Phase::Verify,
];

impl Phase {
    /// Whether it is one of the multiexps (`msm_*`), the steps of `prove` after the FFT.
    pub fn is_multiexp(&self) -> bool {
        matches!(
            self,
            Phase::MsmH | Phase::MsmL | Phase::MsmAB1 | Phase::MsmB2
        )
    }

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
    /// The known phase of that wire name ([`KNOWN_PHASES`]), else [`Phase::Other`].
    fn from(s: String) -> Phase {
        match KNOWN_PHASES.iter().find(|k| k.as_str() == s) {
            Some(known) => known.clone(),
            None => Phase::Other(s),
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
    /// Index of the device: NVML's (PCI bus order), which is also the CUDA ordinal where
    /// `CUDA_DEVICE_ORDER=PCI_BUS_ID` (the bundled prover sets it) and nothing is hidden.
    pub index: u32,
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Compute capability, e.g. "9.0".
    #[serde(default)]
    pub compute_capability: Option<String>,
    /// Device memory in bytes.
    #[serde(default)]
    pub memory_bytes: Option<u64>,
    /// NVML's UUID ("GPU-…"), the name that survives a renumbering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
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
    pub phase: Phase,
    /// Seconds, summed over partitions (wall time where partitions overlap is in `wall_s`).
    pub duration_s: f64,
}

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
