//! Process groups of every live child, for killing them from a panic hook or signal handler.
//!
//! A fixed table of atomics: registering never allocates, and [`kill_all_children`] takes no
//! lock, so it is safe to call from a panic hook (even one raised while the supervisor held a
//! lock) and only makes async-signal-safe system calls.

use std::sync::atomic::{AtomicI32, Ordering};

const SLOTS: usize = 64;
static PGIDS: [AtomicI32; SLOTS] = [const { AtomicI32::new(0) }; SLOTS];

/// Remember a child's process group. Returns false if the table is full (the child is still
/// covered by its parent-death signal and the handle's drop).
pub fn register(pgid: i32) -> bool {
    PGIDS.iter().any(|s| {
        s.compare_exchange(0, pgid, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    })
}

/// Forget a child's process group (after it has been reaped).
pub fn unregister(pgid: i32) {
    for s in &PGIDS {
        let _ = s.compare_exchange(pgid, 0, Ordering::AcqRel, Ordering::Acquire);
    }
}

/// SIGKILL every supervised child's process group. For panic hooks and fatal-signal paths of
/// the app; the normal path is [`super::SupervisorHandle::stop`].
pub fn kill_all_children() {
    for s in &PGIDS {
        let pgid = s.load(Ordering::Acquire);
        if pgid > 0 {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}
