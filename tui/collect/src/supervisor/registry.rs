//! Process groups of every live child, for killing them from a panic hook or signal handler.
//!
//! A fixed table of atomics: registering never allocates, and [`kill_all_children`] takes no
//! lock, so it is safe to call from a panic hook (even one raised while the supervisor held a
//! lock) and only makes async-signal-safe system calls.

use std::sync::atomic::{AtomicI32, Ordering};

use crate::procfile::{read_stat, StatFields};

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

/// Provetop's own helper processes (alert hooks): its direct children that are not orphans
/// of a supervised child's tree.
static HELPERS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn helpers() -> std::sync::MutexGuard<'static, Vec<u32>> {
    HELPERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Start a helper process of provetop's own (an alert hook) with `spawn`, remembered as
/// such (under the lock the tree walk takes, so it is never mistaken for an orphan).
pub fn spawn_helper(
    spawn: impl FnOnce() -> std::io::Result<std::process::Child>,
) -> std::io::Result<std::process::Child> {
    let mut h = helpers();
    let c = spawn()?;
    h.push(c.id());
    Ok(c)
}

/// Start a supervised child with `spawn` and register its process group (`pid` of the
/// child, which leads its own group) before the tree walk's lock is let go. A child that a
/// walk of another supervisor in this process could see unregistered, between its start
/// and its registration, was taken for an orphan of that tree and killed with it on stop:
/// one in about twenty runs of the supervisor tests, while two supervisors started and
/// stopped side by side.
pub fn spawn_child<C>(
    spawn: impl FnOnce() -> std::io::Result<C>,
    pid: impl FnOnce(&C) -> Option<u32>,
) -> std::io::Result<(C, Registered)> {
    let _walks = helpers();
    let c = spawn()?;
    let pgid = pid(&c).map_or(0, |p| p as i32);
    let registered = if pgid > 0 && register(pgid) { pgid } else { 0 };
    Ok((c, Registered(registered)))
}

/// A process group registered by [`spawn_child`]: unregistered when this is dropped (a
/// child launched but never run), unless [`Registered::keep`] hands it to the run, which
/// unregisters it once the child is reaped.
#[derive(Debug)]
pub struct Registered(i32);

impl Registered {
    pub fn keep(mut self) -> i32 {
        std::mem::replace(&mut self.0, 0)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if self.0 > 0 {
            unregister(self.0);
        }
    }
}

/// A helper was reaped.
pub fn helper_ended(pid: u32) {
    helpers().retain(|&p| p != pid);
}

/// Provetop's direct children that are neither a supervised child (`root` or another
/// registered one) nor a helper, and not in provetop's own process group (every supervised
/// tree runs outside it; a plain child of a program embedding the supervisor stays in it):
/// orphans reparented to provetop, the subreaper.
pub(super) fn orphans(root: u32) -> Vec<u32> {
    let h = helpers();
    let me = std::process::id();
    let my_group = nix::unistd::getpgrp().as_raw();
    crate::sampler::tree::children(me)
        .into_iter()
        .filter(|&p| {
            p != root
                && !h.contains(&p)
                && pgid_of(p).is_some_and(|g| g != my_group)
                && !PGIDS.iter().any(|s| s.load(Ordering::Acquire) == p as i32)
        })
        .collect()
}

/// Whether `pid` belongs to another supervised child than `root`: it is one, or is in
/// one's process group (a child started by another supervisor in this process).
pub(super) fn foreign(pid: u32, root: u32) -> bool {
    let other = |g: i32| g != root as i32 && PGIDS.iter().any(|s| s.load(Ordering::Acquire) == g);
    other(pid as i32) || pgid_of(pid).is_some_and(other)
}

/// Make provetop a child subreaper (once): a descendant of a supervised child whose parent
/// dies is reparented to provetop instead of init, so it stays in reach (it can be found
/// by its parent pid, killed and reaped). Returns whether that holds.
pub fn become_subreaper() -> bool {
    static DONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DONE.get_or_init(|| nix::sys::prctl::set_child_subreaper(true).is_ok())
}

/// The process group of `pid`.
fn pgid_of(pid: u32) -> Option<i32> {
    StatFields::parse(read_stat(pid)?.as_bytes())?.num(5)
}

/// The start time of `pid` (clock ticks since boot).
pub(super) fn start_of(pid: u32) -> Option<u64> {
    stat_of(pid).map(|(_, s, _)| s)
}

/// Parent pid and start time (clock ticks since boot: with the pid, a process's identity
/// across pid reuse) from `/proc/PID/stat`.
pub(super) fn stat_of(pid: u32) -> Option<(u32, u64, char)> {
    let s = read_stat(pid)?;
    let f = StatFields::parse(s.as_bytes())?;
    Some((f.num(4)?, f.num(22)?, f.state()?))
}

#[cfg(test)]
mod tests {
    use super::super::tree::Tree;
    use super::*;

    fn sleeper() -> std::io::Result<std::process::Child> {
        use std::os::unix::process::CommandExt;
        std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
    }

    #[test]
    fn a_child_being_started_is_never_taken_for_another_trees_orphan() {
        become_subreaper();
        let (mut other, other_reg) = spawn_child(sleeper, |c| Some(c.id())).unwrap();
        let other_pid = other.id();
        let mut walk = None;
        let (mut child, reg) = spawn_child(
            || {
                let c = sleeper()?;
                // Another supervisor's walk, while this child runs in its own group and is
                // not registered yet: it must wait for the registration.
                let w = std::thread::spawn(move || {
                    let mut t = Tree::default();
                    t.note(other_pid);
                    t.seen
                });
                std::thread::sleep(std::time::Duration::from_millis(200));
                walk = Some((w.is_finished(), w));
                Ok(c)
            },
            |c| Some(c.id()),
        )
        .unwrap();
        let (finished_early, w) = walk.unwrap();
        let seen = w.join().unwrap();
        for c in [&mut child, &mut other] {
            c.kill().unwrap();
            c.wait().unwrap();
        }
        assert!(!finished_early, "the walk ran before the registration");
        assert!(
            !seen.contains_key(&child.id()),
            "child {} was noted in {other_pid}'s tree: {seen:?}",
            child.id()
        );
        drop((reg, other_reg));
        assert!(!PGIDS
            .iter()
            .any(|s| [child.id(), other_pid].contains(&(s.load(Ordering::Acquire) as u32))));
    }
}
