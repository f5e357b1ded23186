//! The one clock every record is stamped with.
//!
//! `CLOCK_MONOTONIC` is system-wide on Linux, so the prover and the monitor (separate
//! processes) stamp their messages on the same time axis without any handshake, and a wall
//! clock step (NTP) never reorders a recording.

use rustix::time::{clock_gettime, ClockId};

/// Nanoseconds on the system-wide monotonic clock.
pub fn mono_ns() -> u64 {
    let ts = clock_gettime(ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds since the Unix epoch (wall clock), used only to anchor a session in real time.
pub fn wall_ns() -> u64 {
    let ts = clock_gettime(ClockId::Realtime);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Seconds between two monotonic stamps, as `f64` (negative if `b` is before `a`).
pub fn secs_between(a: u64, b: u64) -> f64 {
    (b as i128 - a as i128) as f64 / 1e9
}
