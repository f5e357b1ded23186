//! provetop's prover: a real Groth16 prover (bellperson 0.27 + blstrs, BLS12-381) on a
//! synthetic "PoRep-shaped" circuit, speaking the provetop event protocol.
//!
//! * [`circuit`], [`mimc`], [`sector`]: the partition circuit (Merkle openings with an
//!   algebraic hash and boolean decompositions), exact constraint counts. `cs`: the crate's
//!   own constraint systems (shape counter, parameter assembly) without namespaces.
//! * [`srs`]: Groth16 parameters per circuit shape: generation with progress, the checksummed
//!   on-disk cache, residency.
//! * [`backend`]: the seam between "parameters resident in memory" + "prove these circuits"
//!   and the proving engine (CPU by default; `cuda` / `supraseal` features plug in here).
//! * [`timed_params`], [`logbridge`], [`phases`]: measured phase events (synthesis per
//!   partition, FFT, MSMs, prove, verify).
//! * [`events`]: the NDJSON event emitter. [`heap`]: live heap accounting.
//! * [`modes`]: how a proof is cut into proving calls per batch mode. [`job`]: running one proof.
//! * [`daemon`]: the run loop, control messages, signals. [`cli`]: the command line.

pub mod backend;
pub mod circuit;
pub mod cli;
mod cs;
pub mod daemon;
pub mod events;
pub mod gpu;
pub mod heap;
pub mod job;
pub mod logbridge;
pub mod mimc;
pub mod modes;
pub mod phases;
pub mod sector;
pub mod srs;
pub mod timed_params;
