//! provetop's test support (not published): what the tests and benchmarks of the workspace
//! share, kept out of the product crates.
//!
//! - [`fixtures`]: deterministic session files (the demo proof, a long recording), the seed's
//!   CSV and awk script, golden files.
//! - [`synth`]: endless synthetic prover sessions for snapshots, replay and benchmarks.
//! - [`bins`]: the binaries under test (`provetop`, the bundled prover, `provetop-memhog`,
//!   built on first use) and running `provetop` to completion.
//! - [`tmux`]: a private tmux server to drive and read the screen.
//! - [`system`]: the system programs a test needs, or one SKIPPED line naming the package
//!   (a failure under `PROVETOP_REQUIRE_SYSTEM_TOOLS=1`, as CI runs).
//! - [`faults`]: headless runs of `provetop` and reading their sessions back.
//! - [`procs`]: process facts from /proc, signals, waiting, a limited memory cgroup.
//! - [`keys`]: scripted key presses for the screen's event loop.
//! - [`screen`]: the text of a screen drawn into ratatui's `TestBackend`.
//! - [`xorshift`]: deterministic pseudo-random numbers for proptests and generators.
//!
//! Of the workspace it depends on `provetop-shared` only, so every crate can dev-depend on it.

pub mod bins;
pub mod faults;
pub mod fixtures;
pub mod flight;
pub mod keys;
pub mod procs;
pub mod screen;
pub mod synth;
pub mod system;
pub mod tmux;
pub mod xorshift;
