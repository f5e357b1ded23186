//! The label values the metrics use, each from a bounded set (the module contract's "no
//! unbounded label values"): the known phases plus `other`, prover states, alert levels,
//! proof results, GPU indices, and the prover's own words cut to [`MAX_LABEL_CHARS`].

use provetop_shared::protocol::{ProverState, KNOWN_PHASES};
use provetop_shared::{AlertLevel, Phase};

use super::MAX_LABEL_CHARS;

/// Phase label values: the phases this build knows by name ([`KNOWN_PHASES`], in its order),
/// then `other` for every other phase.
pub(super) const PHASES: usize = KNOWN_PHASES.len() + 1;

/// The phase label index of `p`: its place in [`KNOWN_PHASES`], else `other`'s.
pub(super) fn phase_index(p: &Phase) -> usize {
    KNOWN_PHASES
        .iter()
        .position(|k| k == p)
        .unwrap_or(KNOWN_PHASES.len())
}

/// The phase label value of index `i`.
pub(super) fn phase_name(i: usize) -> &'static str {
    KNOWN_PHASES.get(i).map_or("other", Phase::as_str)
}

/// The prover's run states, in label order.
pub(super) const PROVER_STATES: [ProverState; 4] = [
    ProverState::Idle,
    ProverState::Proving,
    ProverState::Paused,
    ProverState::Stopping,
];

/// Alert levels, in label order (indexed by `AlertLevel as usize`).
pub(super) const LEVELS: [AlertLevel; 3] = [AlertLevel::Info, AlertLevel::Warn, AlertLevel::Crit];

/// Proof results as labels.
#[derive(Debug, Clone, Copy)]
pub(super) enum ProofResult {
    Ok,
    Failed,
    Cancelled,
}

/// [`ProofResult`] label values, indexed by `ProofResult as usize`.
pub(super) const RESULTS: [&str; 3] = ["ok", "failed", "cancelled"];

/// A label value from the prover's words: at most [`MAX_LABEL_CHARS`] characters.
pub(super) fn cut(s: &str) -> String {
    s.chars().take(MAX_LABEL_CHARS).collect()
}

/// The label names of every per-GPU series.
pub(super) const GPU_KEYS: [&str; 2] = ["gpu", "device"];

/// `gpu` and `device` label values of a GPU index.
pub(super) fn gpu_labels(index: u32) -> [String; 2] {
    [index.to_string(), format!("nvidia{index}")]
}
