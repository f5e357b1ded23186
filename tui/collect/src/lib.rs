//! provetop's collection layer: everything that produces [`provetop_shared::Record`]s in live
//! mode, and the recorder that writes them.
//!
//! * [`sampler`]: a dedicated OS thread that samples memory of a process tree (procfs,
//!   `clear_refs` interval peaks, smaps pinned memory, NVML) and hands samples to the app
//!   through a lock-free ring buffer.
//! * [`supervisor`]: runs the prover (or any command) in its own process group, reads its
//!   protocol events from fd 3, forwards controls to its stdin, reports how it ended,
//!   restarts it on failure.
//! * [`loglines`]: phases from what provers print: the line grammars (env_logger,
//!   fil_logger, GOLOG, journald, bellperson, rust-fil-proofs, cuzk, tracing, ark-std, the
//!   user's rules) that turn a child's output lines into derived phase events.
//! * [`alerts`]: threshold rules, the TOML config file, the engine that turns records into
//!   firing/cleared [`provetop_shared::Alert`]s, and the shell-free alert hook.
//! * [`lines`]: the one line splitter, capped, of the event pipe, the child's output and a
//!   followed log.
//! * [`channel`]: the records channel from the supervisor to the pipeline, whose sender says
//!   when to wake the receiver (not for every event).
//! * [`recorder`]: appends records to a session file, flushing at least once a second and
//!   surviving a full disk.

pub mod alerts;
pub mod cgroup;
pub mod channel;
pub mod lines;
pub mod loglines;
pub mod procfile;
pub mod procstatus;
pub mod recorder;
pub mod sampler;
pub mod supervisor;
pub mod xdg;

pub use supervisor::kill_all_children;
