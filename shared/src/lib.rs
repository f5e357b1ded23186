//! provetop's contracts, shared by the monitor (`provetop`) and the prover (`provetop-prover`).
//!
//! * [`protocol`]: prover → monitor [`Event`]s and monitor → prover [`Control`]s, newline
//!   delimited JSON, versioned by the first `hello` event.
//! * [`record`]: the one stream of timestamped [`Record`]s that live mode produces and
//!   replay, classify and export consume.
//! * [`session`]: the on-disk session file (writer and a reader tolerant of a cut-off tail),
//!   and the plain `timestamp,rss_kb` CSV of ad-hoc samplers.
//! * [`alerts`]: threshold rules and the engine that folds records into firing/cleared
//!   alerts, like [`forecast`] a pure fold (the screen and the supervisor both run it).
//! * [`classify`]: the threshold phase classifier operators used to run with awk.
//! * [`forecast`]: the memory forecast (`predicted_free`), a fold over records that the alert
//!   engine and the screen's model both keep.
//! * [`metric`]: the one table of what is measured (name, unit, sample reading, CSV column).
//! * [`units`] and [`clock`]: byte/duration formatting and parsing, the shared monotonic clock.
//!
//! No I/O policy and no UI live here.

pub mod alerts;
pub mod classify;
pub mod clock;
pub mod forecast;
pub mod limit;
pub mod metric;
pub mod nth;
pub mod nvml_calls;
pub mod nvtx_origin;
pub mod protocol;
pub mod record;
pub mod session;
pub mod slowdown;
pub mod spill;
pub mod units;

pub use protocol::{
    Backend, BatchMode, Control, ControlMsg, Event, EventMsg, Phase, ProtocolError, SrsSource,
    PROTOCOL_VERSION,
};
pub use record::{
    Alert, AlertLevel, AlertState, Binding, CgroupReading, Derived, GpuDetail, Kernel, Mark,
    MemEvents, MemStat, NvmlCalls, NvtxOrigin, OutputLine, OutputSource, ProcUsage, Psi, PsiLine,
    PsiResource, Record, RecordBody, Sample, Usage,
};
