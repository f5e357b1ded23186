//! The memory sampler: a dedicated OS thread that samples a process tree on a fixed schedule.
//!
//! Every tick (default 20 Hz, absolute deadlines so the rate never drifts) it re-reads the
//! open `/proc/PID/status` of every process in the tree (VmRSS, RssAnon/File/Shmem, VmSwap,
//! VmLck, VmPin, VmHWM and VmSize), sums them, adds system and cgroup memory, attaches the
//! latest pinned-memory and GPU readings, and pushes a [`Sample`](provetop_shared::Sample)
//! into a lock-free SPSC ring that the app drains. Slow or blocking work runs on helper
//! threads so the schedule holds:
//!
//! * `provetop-peak` resets VmHWM after each sample that shows it above the RSS (`clear_refs`
//!   may block on the target's mmap lock; where the two are equal a reset changes nothing),
//!   so each sample's `peak` is the true maximum of its interval.
//! * `provetop-maps` follows CUDA pinned host memory in the mapping table (`maps.rs`): woken
//!   when a process's file or shmem pages moved, and every few seconds; its cost follows the
//!   number of mappings, not the RSS (`pinned.rs`).
//! * `provetop-smaps` cross-checks it with full smaps passes, each started once the budget has
//!   earned its predicted cost, so it uses at most `smaps_duty` of a core.
//! * `provetop-gpu` reads NVML at `gpu_hz` (memory and utilisation for every sample, each
//!   process's GPU memory for the usage readings; the slow-moving details every 2 s), and the
//!   utilisation twice per NVML sample period between, so a reading's is the mean of every
//!   period since the last (`gpu.rs`).
//!
//! * `provetop-kernel` waits in one `poll` on what the kernel announces: the kernel log
//!   (OOM victims named), the cgroup's event counters (v2 `memory.events`, v1 an OOM
//!   eventfd) and PSI memory stall triggers (`kernel_watch.rs`).
//!
//! Twice a second, and at once when an event counter moved, the tick also takes a kernel
//! reading (`kernel.rs`): the root's memory cgroup (usage, limits, `memory.stat`, counters,
//! v2's per-file interval peak), the limits of its ancestors and the host's MemAvailable
//! (the one with least room binds, and names the sample's `cgroup_current`/`cgroup_max`),
//! and pressure, pushed as a [`RecordBody::Kernel`](provetop_shared::RecordBody::Kernel),
//! with a mark for every counter that moved and every OOM kill in the tree or its cgroup.
//!
//! At `usage_hz` (default 2 Hz) the tick also takes a usage reading (`usage.rs`): CPU time,
//! threads, faults, context switches and storage I/O per process of the tree, the host's
//! load and the GPU details, pushed as a
//! [`RecordBody::Usage`](provetop_shared::RecordBody::Usage) right after its sample. It reuses
//! the tick's status readings and runs on the sampler thread, inside its budget.
//!
//! A sample's `pinned` is the tree's CUDA pinned host memory plus its VmLck (less what smaps
//! found locked inside CUDA's mappings): `None` while any process's reading is unknown
//! (unreadable table, unclassified mapping, not read yet) or stale (`readings.rs`).
//!
//! The tree itself is re-discovered at a rate bounded by the walk's measured cost: a root
//! and its descendants, or the members of a cgroup (`members.rs`, for `watch --cgroup`).
//!
//! The parts: `shared.rs` the state the threads share, `handle.rs` the app's end (start,
//! drain, stop), `tick.rs` the schedule and the tick, `readings.rs` what the tick takes from
//! the helpers' pinned and GPU readings.

mod config;
mod counter_marks;
mod gpu;
mod gpu_health;
mod handle;
pub mod hoststat;
mod kernel;
mod kernel_state;
mod kernel_watch;
pub mod maps;
pub mod members;
pub mod nvml_cost;
mod peak;
mod pinned;
pub mod procstat;
mod readings;
mod shared;
pub mod system;
mod tick;
pub mod tree;
pub mod usage;

use std::thread;
use std::time::{Duration, Instant};

pub use config::{
    Bounds, SamplerConfig, DEFAULT_GPU_HZ, DEFAULT_HZ, DEFAULT_SMAPS_DUTY, DEFAULT_USAGE_HZ,
    GPU_HZ_BOUNDS, HZ_BOUNDS, SMAPS_DUTY_BOUNDS, USAGE_HZ_BOUNDS,
};
pub use handle::{spawn, spawn_cgroup, SamplerHandle};
pub use peak::{ResetReport, SamplingClaim};
pub use pinned::{cross_check, read_pinned, smaps_pinned, Check, MAPS_DUTY, MAPS_FLOOR};
use shared::{GpuState, Shared};
pub use tick::TickReport;

/// The sampler's own thread (the front ends let its panic reach the pipeline, which stops
/// the session in order).
pub const THREAD_NAME: &str = "provetop-sampler";
/// Samples the ring holds before the sampler starts dropping (about 200 s at 20 Hz).
pub const RING_CAPACITY: usize = 4096;
/// Share of one core the process-tree walk may use.
const TREE_DUTY: f64 = 0.0005;
/// Shortest time between two tree walks: a new descendant is found within this.
const TREE_MIN_INTERVAL: Duration = Duration::from_millis(250);
/// Longest rest after a walk, whatever it cost.
const TREE_MAX_INTERVAL: Duration = Duration::from_secs(2);
/// Longest time without a walk while no pid was created on the host and no member's parent
/// changed (the status read each tick shows it): nothing can have joined or left the tree
/// then, so this is only a backstop. (A walk opens every thread's `children` file, so on a
/// many-threaded prover a frequent walk is most of the sampler's system calls:
/// docs/measurements.md#history.)
const TREE_BACKSTOP: Duration = Duration::from_secs(30);
/// Smaps passes never run more often than this.
const SMAPS_MIN_INTERVAL: Duration = Duration::from_secs(1);
/// A process's pinned reading older than this (its table read is stuck behind the target's
/// mmap lock) makes the sample's pinned unknown.
pub const PINNED_STALE: Duration = Duration::from_secs(3);

/// Sleep until `deadline` or until unparked by stop/set_root.
fn park_until(deadline: Instant) {
    let now = Instant::now();
    if deadline > now {
        thread::park_timeout(deadline - now);
    }
}
