//! provetop's collection layer: everything that produces [`provetop_shared::Record`]s in live
//! mode, and nothing that consumes them (alerts, the config file and the recorder live on the
//! consumers' side): a record flows from here to `provetop` and never comes back.
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
//! * [`hook`]: the shell-free alert hook (`--on-alert`): the alerts themselves are judged by
//!   [`provetop_shared::alerts`], a fold over the records produced here.
//! * [`lines`]: the one line splitter, capped, of the event pipe, the child's output and a
//!   followed log.
//! * [`channel`]: the records channel from the supervisor to the pipeline, whose sender says
//!   when to wake the receiver (not for every event).

pub mod cgroup;
pub mod channel;
pub mod hook;
pub mod kmsg;
pub mod lines;
pub mod loglines;
pub mod nvtx;
pub mod procfile;
pub mod procstatus;
pub mod psi;
pub mod sampler;
pub mod supervisor;
pub mod xdg;

pub use supervisor::kill_all_children;
