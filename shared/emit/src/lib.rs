//! Speak provetop's prover protocol from a Rust prover in a line or two.
//!
//! provetop (`provetop run -- your-prover …`) passes its child a pipe and names it in
//! `$PROVETOP_EVENTS_FD`; the child writes newline-delimited JSON events to it (the protocol:
//! `docs/protocol.md`; the types: [`provetop_shared::protocol`]). This crate writes them:
//!
//! * [`Emitter`]: the plain API (`hello`, `proof_started`/`proof_finished`,
//!   `phase_started`/`phase_ended`, `memory_report`, any [`Event`]), thread-safe, one flushed
//!   line per event.
//! * [`layer::PhaseLayer`] (feature `tracing`): a `tracing_subscriber::Layer` that turns spans
//!   into phase events, their names mapped onto the protocol's phases or kept as they are:
//!   `tracing_subscriber::registry().with(provetop_emit::layer()).init()`.
//! * [`logger::Bridge`] (feature `log`): a `log::Log` that writes log records as `log` events
//!   and hands every record on to the logger the prover already had.
//!
//! Without `$PROVETOP_EVENTS_FD` (the prover runs on its own), or with `PROVETOP_EVENTS=off`,
//! [`from_env`] gives a disabled emitter and everything above is a no-op.
//!
//! ```
//! use provetop_emit::Phase;
//! use tracing_subscriber::prelude::*;
//!
//! // Spans named proof, synthesis, prove, verify, … become protocol events.
//! tracing_subscriber::registry().with(provetop_emit::layer()).init();
//! {
//!     let _proof = tracing::info_span!("proof", proof_id = 1u64).entered();
//!     let _synthesis = tracing::info_span!("synthesis").entered();
//! }
//! // Or by hand.
//! let events = provetop_emit::from_env();
//! events.phase_started(2, Phase::Prove, None);
//! events.phase_ended(2, Phase::Prove, None, std::time::Duration::from_millis(5));
//! ```

mod emitter;
#[cfg(feature = "tracing")]
pub mod layer;
#[cfg(feature = "log")]
pub mod logger;

pub use emitter::Emitter;
pub use provetop_shared::protocol::{
    Backend, BatchMode, Event, EventMsg, Phase, ProverConfig, PROTOCOL_VERSION,
};

/// The variable provetop names its events pipe in.
pub const EVENTS_FD_VAR: &str = "PROVETOP_EVENTS_FD";
/// Set to `off` to keep a prover quiet even where provetop passed a pipe.
pub const EVENTS_SWITCH_VAR: &str = "PROVETOP_EVENTS";

/// Whether `PROVETOP_EVENTS=off` asks for no events at all (any case, spaces ignored).
pub fn switched_off() -> bool {
    std::env::var(EVENTS_SWITCH_VAR).is_ok_and(|v| v.trim().eq_ignore_ascii_case("off"))
}

/// Where the environment says events go: the fd in `$PROVETOP_EVENTS_FD`, or nowhere (a
/// disabled emitter) when it is absent or `PROVETOP_EVENTS=off`. A value that is not an open
/// descriptor is said once on stderr and gives a disabled emitter: a prover never fails for
/// want of a monitor.
pub fn from_env() -> Emitter {
    if switched_off() {
        return Emitter::disabled();
    }
    let Some(raw) = std::env::var_os(EVENTS_FD_VAR) else {
        return Emitter::disabled();
    };
    let text = raw.to_string_lossy();
    match text.trim().parse::<i32>() {
        Ok(fd) => Emitter::to_fd(fd).unwrap_or_else(|e| {
            eprintln!("provetop-emit: {EVENTS_FD_VAR}={text}: {e}; no events are written");
            Emitter::disabled()
        }),
        Err(_) => {
            eprintln!("provetop-emit: {EVENTS_FD_VAR}={text} is not a file descriptor number; no events are written");
            Emitter::disabled()
        }
    }
}

/// A [`layer::PhaseLayer`] writing to [`from_env`], with the default name mapping.
#[cfg(feature = "tracing")]
pub fn layer() -> layer::PhaseLayer {
    layer::PhaseLayer::new(from_env())
}
