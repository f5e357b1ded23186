//! bellperson 0.26/0.27's own lines (`src/groth16/prover/{native,supraseal}.rs`, the GPU
//! kernels of `src/gpu/locks.rs` and ec-gpu-gen):
//!
//! | line | meaning |
//! | --- | --- |
//! | `Bellperson 0.27.0 is being used!`, `… with SupraSeal is being used!` | a proof starts; its synthesis begins |
//! | `synthesis time: 1.607111608s` | synthesis ends (it began that long ago) |
//! | `starting proof timer` | proving starts |
//! | debug `get h` | the FFTs of h start (they end at `multiexp h`) |
//! | debug `multiexp h`, `multiexp l`, `multiexp a b_g1`, `multiexp b_g2` | an MSM starts (GPU builds: they run one after another on the calling thread) |
//! | debug `get a b_g1`, `get b_g2`, `proofs` | the MSM before them is over |
//! | `prover time: 58.771336807s` | proving ends |
//! | `GPU FFT kernel instantiated!`, `GPU Multiexp kernel instantiated!` | a GPU build |
//! | `GPU Multiexp failed! Falling back to CPU... Error: …`, `Cannot instantiate GPU … kernel!` | a warning |
//!
//! `get l` and `get_a b_g1 b_g2` are logged on bellperson's worker threads, in no fixed
//! order with the calling thread's lines, so they bound nothing; `get h` is logged as the
//! FFT scope opens (on a worker, at once), the only line that says the FFTs began: without
//! debug lines there is no `fft_h` phase (rather than one as long as the proving).

use super::duration::parse_secs;
use super::envelope::Envelope;
use super::Hit;

/// What a bellperson line says.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A proof starts (the version line); `supraseal` for the SupraSeal prover.
    Begin { supraseal: bool },
    /// Synthesis of the batch took this long and is over.
    Synthesized { secs: f64 },
    /// "starting proof timer".
    ProveStart,
    /// "get h": the FFTs of h begin.
    FftStart,
    /// "multiexp h|l|a b_g1|b_g2": that MSM starts.
    Multiexp(provetop_shared::Phase),
    /// A line after an MSM on the calling thread: the MSM is over.
    StepOver,
    /// "prover time: …".
    Proved { secs: Option<f64> },
    /// A GPU kernel was made: this is a GPU build.
    Gpu,
    /// A GPU problem (the text of the line).
    GpuWarning(String),
}

/// Read a bellperson line.
pub fn read(e: &Envelope<'_>, out: &mut Vec<Hit>) -> bool {
    if !e.target_is(&["bellperson", "ec_gpu"]) {
        return false;
    }
    use provetop_shared::Phase;
    let m = e.msg.trim();
    let line = match m {
        "starting proof timer" => Line::ProveStart,
        "get h" => Line::FftStart,
        "multiexp h" => Line::Multiexp(Phase::MsmH),
        "multiexp l" => Line::Multiexp(Phase::MsmL),
        "multiexp a b_g1" => Line::Multiexp(Phase::MsmAB1),
        "multiexp b_g2" => Line::Multiexp(Phase::MsmB2),
        "get a b_g1" | "get b_g2" | "proofs" => Line::StepOver,
        _ => {
            if let Some(d) = m.strip_prefix("synthesis time: ") {
                match parse_secs(d) {
                    Some(secs) => Line::Synthesized { secs },
                    None => return false,
                }
            } else if let Some(d) = m.strip_prefix("prover time: ") {
                Line::Proved {
                    secs: parse_secs(d),
                }
            } else if m.starts_with("Bellperson ") && m.ends_with(" is being used!") {
                Line::Begin {
                    supraseal: m.contains("with SupraSeal"),
                }
            } else if m.starts_with("GPU ") && m.ends_with(" kernel instantiated!") {
                Line::Gpu
            } else if m.contains("Falling back to CPU") || m.starts_with("Cannot instantiate GPU") {
                Line::GpuWarning(m.to_string())
            } else {
                return false;
            }
        }
    };
    out.push(Hit::Bellperson(line));
    true
}
