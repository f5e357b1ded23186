//! What the sampler keeps of the kernel's view between ticks (`kernel.rs` reads it): the
//! open readers of the root's cgroup, its chain's limits and pressure, the watcher thread,
//! and what is pending (OOM kills counted but not named yet).

use std::time::Instant;

use provetop_shared::record::MemEvents;

use super::counter_marks::CounterMarks;
use super::kernel_watch::KernelWatch;
use crate::cgroup::{CgroupReader, Limits};
use crate::procfile::KeptOpen;
use crate::psi::PsiFiles;

/// The sampler's kernel readers for the current root.
#[derive(Default)]
pub struct KernelState {
    /// The root these readers are of (0: none yet, or a watched cgroup's readers).
    pub(super) root: u32,
    /// The readers were opened (a watched cgroup's have root 0 like no readers at all).
    pub(super) adopted: bool,
    /// The root's `/proc/PID/cgroup`, to see it move.
    pub(super) pid_cgroup: Option<KeptOpen>,
    pub(super) pid_cgroup_text: Vec<u8>,
    pub(super) cg: Option<CgroupReader>,
    pub(super) limits: Option<Limits>,
    /// The cgroup limit that binds, as of the last reading: (chain member, limit).
    pub(super) bound: Option<(usize, u64)>,
    /// The counters at the last look.
    pub(super) events: Option<MemEvents>,
    /// Which of the counters' moves are marked (the charge counters paced).
    pub(super) counter_marks: CounterMarks,
    pub(super) host_psi: Option<PsiFiles>,
    pub(super) cg_psi: Option<PsiFiles>,
    pub(super) watch: Option<KernelWatch>,
    /// The kernel log is followed: a counted OOM kill waits for its name.
    pub(super) kmsg: bool,
    /// The kernel notifies the counters' moves (the watcher sets `events_moved`): they are
    /// not read at every sample.
    pub(super) notified: bool,
    pub(super) next: Option<Instant>,
    /// Full readings taken.
    pub(super) readings: u64,
    /// OOM kills the counter showed and the log has not named yet, since when.
    pub(super) unnamed: Option<(u64, Instant)>,
    /// Kills the log named in the cgroup before its counter was seen to move.
    pub(super) named: Vec<Instant>,
    /// Processes of the tree that left it lately (an OOM victim is gone by the time its
    /// name is read).
    pub(super) gone: Vec<u32>,
    /// What was said unavailable (said once, whatever cgroup comes next).
    pub(super) said: Vec<String>,
    /// Whether the cgroup's removal was said.
    pub(super) removed_said: bool,
}
