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
//!
//! * [`vocab`]: the words events use (backends, batch modes, phases, SRS sources, states).
//! * [`event`]: prover → monitor events; [`control`]: monitor → prover controls.
//! * [`parse`]: reading a line of either, and the version check.

mod control;
mod event;
mod parse;
#[cfg(test)]
mod tests;
mod vocab;

pub use control::{Control, ControlMsg};
pub use event::{Event, EventMsg};
pub use parse::{check_version, parse_control, parse_event, ProtocolError};
pub use vocab::{
    Backend, BatchMode, GpuInfo, Phase, PhaseTime, ProverConfig, ProverState, SrsSource,
    KNOWN_PHASES,
};

/// Protocol version spoken by this build, `"MAJOR.MINOR"` (1.1 added `cancelled` and
/// `requeued_as` to `proof_finished`).
pub const PROTOCOL_VERSION: &str = "1.1";

/// Major part of [`PROTOCOL_VERSION`]; a peer with a higher major is refused.
pub const PROTOCOL_MAJOR: u32 = 1;
