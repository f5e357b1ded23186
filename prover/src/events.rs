//! The event emitter is provetop-emit's [`Emitter`], the one any Rust prover uses: one NDJSON
//! line per event, flushed at once, `ts` in order along the stream from every thread (the run
//! loop, the control reader, bellperson's worker threads through the log bridge), quiet after
//! a broken pipe or `bye`.

pub use provetop_emit::Emitter;
