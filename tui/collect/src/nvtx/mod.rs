//! Phases from any NVTX-instrumented program: provetop's injection library
//! (`libprovetop_nvtx.so`, crate `provetop-nvtx`) inside the child, and its lines read back
//! here.
//!
//! `provetop run` hands the child the library in `NVTX_INJECTION64_PATH` and a pipe in
//! `PROVETOP_NVTX_FD` ([`FD`]) unless told not to ([`Injection`]); a program's first NVTX call
//! loads it. Its lines (docs/nvtx.md) become records through a [`Tracker`]:
//!
//! * a range (push/pop on one thread, start/end on any) is a phase, `Derived` with grammar
//!   `nvtx` and its [`provetop_shared::NvtxOrigin`] (name as given, pid, thread, domain,
//!   category, depth); its phase is the name as given, or the protocol phase the table maps
//!   it to ([`PhaseMap`]); the ranges of one thread and domain are one scope (proof id from
//!   [`SCOPE_BASE`] up), so nested ranges nest and threads do not collide;
//! * a marker is a note mark; drops, unbalanced pops and refused strings are counted marks;
//! * times are the library's `CLOCK_MONOTONIC` stamps taken at the call, kept where plausible
//!   (not before the run, not after arrival);
//! * at the child's end ([`Tracker::finish`]) a range still open is named in a warning; the
//!   child's exit then closes its phase, failed, like any phase the child leaves open.
//!
//! Bounded: the library records at most its rate; here ranges are admitted whole at most
//! [`RATE`] a second (a burst of [`BURST`]), and at most [`MAX_OPEN`] are open at once.

pub mod library;
pub mod tracker;

use provetop_shared::Phase;

pub use library::{find_library, library_problem, LIBRARY};
pub use tracker::Tracker;

/// The fd number the child finds the NVTX pipe on (the events pipe is 3).
pub const FD: i32 = 4;
/// The variable naming it.
pub const FD_VAR: &str = "PROVETOP_NVTX_FD";
/// NVTX's own variable: the injection library's path.
pub const INJECTION_VAR: &str = "NVTX_INJECTION64_PATH";
/// Proof ids of NVTX scopes start here (far above the ids log grammars count from 1).
pub const SCOPE_BASE: u64 = 1 << 40;
/// Range boundaries admitted per second, sustained, and in one burst (each range is two).
pub const RATE: u64 = 40_000;
pub const BURST: u64 = 1 << 18;
/// Most ranges open at once (past it new ones are counted as dropped).
pub const MAX_OPEN: usize = 1 << 16;
/// Most scopes (threads × domains) remembered.
pub const MAX_SCOPES: usize = 1 << 14;

/// The user's table: an NVTX range named `name` is the protocol phase `phase` (config file
/// `[[nvtx_phase]]`). Names no entry names keep their own name (a name that is a protocol
/// phase's, `prove` say, is that phase already).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseMap {
    entries: Vec<(String, Phase)>,
}

impl PhaseMap {
    pub fn new(entries: Vec<(String, Phase)>) -> PhaseMap {
        PhaseMap { entries }
    }

    /// The phase a range named `name` is.
    pub fn phase(&self, name: &str) -> Phase {
        match self.entries.iter().find(|(n, _)| n == name) {
            Some((_, p)) => p.clone(),
            None => Phase::from(name.to_string()),
        }
    }
}

/// What `provetop run` does about NVTX for its child.
#[derive(Debug, Clone, PartialEq)]
pub enum Injection {
    /// Inject this library, reading ranges with this table.
    Library {
        path: std::path::PathBuf,
        phases: PhaseMap,
    },
    /// No injection, and why (said once in the session: a missing library, `--no-nvtx`,
    /// a user's own `NVTX_INJECTION64_PATH`).
    Off { why: Option<String> },
}

impl Default for Injection {
    fn default() -> Self {
        Injection::Off { why: None }
    }
}
