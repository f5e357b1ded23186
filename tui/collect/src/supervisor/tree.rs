//! Every process seen in a supervised child's tree, remembered by pid and start time so
//! that stop kills the whole tree (and the guard, told of each, kills it if provetop dies).
//!
//! Contract: a walk ([`Tree::note`]) finds the child's descendants, the orphans reparented to
//! provetop (the subreaper) and the children of every remembered process still alive; a pid
//! reused by another process is never taken for the one remembered, and a process of another
//! supervised child is never taken for one of this tree.

use super::registry::{foreign, orphans, stat_of};

/// Every process seen in a supervised child's tree (the tree the sampler samples), by pid
/// and start time: what is killed on stop, even a descendant that left the child's process
/// group (`setsid`, `setpgid`) or was orphaned (reparented to provetop, the subreaper).
#[derive(Debug, Default)]
pub struct Tree {
    pub(super) seen: std::collections::HashMap<u32, u64>,
    /// Whether a pid was created on the host since the last walk of [`Self::note_if_new`].
    walks: crate::sampler::tree::WalkGate,
}

/// Longest [`Tree::note_if_new`] goes without walking.
const NOTE_MAX_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

impl Tree {
    /// [`Self::note`], unless no process or thread was created on the host since the last
    /// walk (then no descendant can be new) and it was less than [`NOTE_MAX_INTERVAL`] ago.
    /// The walk lists every thread's children of the tree: walked every second regardless, it
    /// is most of what the supervisor's threads do on a many-threaded prover
    /// (docs/measurements.md#history).
    pub fn note_if_new(&mut self, root: u32) {
        if self.walks.due(NOTE_MAX_INTERVAL, false) {
            self.note(root);
        }
    }

    /// Remember `root`'s descendants now, and those of every remembered one still alive
    /// (an orphan's own children). Forgets the dead.
    pub fn note(&mut self, root: u32) {
        let children_files = crate::sampler::tree::has_children_files();
        let mut roots: Vec<u32> = vec![root];
        roots.extend(orphans(root));
        // Only those still the process remembered: a reused pid's children are not ours.
        roots.extend(
            self.seen
                .iter()
                .filter(|(&p, &start)| stat_of(p).is_some_and(|(_, s, _)| s == start))
                .map(|(&p, _)| p),
        );
        let found: Vec<u32> = crate::sampler::tree::descendants_of_all(&roots, children_files)
            .into_iter()
            .filter(|&p| p != root && !foreign(p, root))
            .collect();
        let mut seen = std::collections::HashMap::new();
        for p in found {
            if let Some((_, start, _)) = stat_of(p) {
                // A remembered pid now used by another process is not ours.
                match self.seen.get(&p) {
                    Some(s) if *s != start => {}
                    Some(_) => {
                        seen.insert(p, start);
                    }
                    None => {
                        // New in the tree: the guard kills it too if provetop dies.
                        super::guard::remember(p, start);
                        seen.insert(p, start);
                    }
                }
            }
        }
        self.seen = seen;
    }

    /// Send `sig` to every remembered process that is still the one remembered (after
    /// [`Self::note`]); returns how many were signalled.
    pub fn signal(&mut self, root: u32, sig: nix::sys::signal::Signal) -> usize {
        self.note(root);
        let mut n = 0;
        for (&p, &start) in &self.seen {
            if stat_of(p).is_some_and(|(_, s, _)| s == start)
                && !foreign(p, root)
                && nix::sys::signal::kill(nix::unistd::Pid::from_raw(p as i32), sig).is_ok()
            {
                n += 1;
            }
        }
        n
    }

    /// Reap the remembered processes that were reparented to provetop and have ended (never
    /// the supervised child itself, which its own waiter reaps).
    pub fn reap(&mut self) {
        let me = std::process::id();
        self.seen.retain(|&p, &mut start| match stat_of(p) {
            Some((ppid, s, state)) if ppid == me && s == start && state == 'Z' => {
                let _ = nix::sys::wait::waitpid(
                    nix::unistd::Pid::from_raw(p as i32),
                    Some(nix::sys::wait::WaitPidFlag::WNOHANG),
                );
                false
            }
            Some((_, s, _)) => s == start,
            None => false,
        });
    }

    /// SIGKILL the whole remembered tree and reap what was reparented to provetop, waiting
    /// up to `wait` for the kernel to finish them.
    pub fn kill(&mut self, root: u32, wait: std::time::Duration) {
        use nix::sys::signal::Signal;
        let end = std::time::Instant::now() + wait;
        // Twice: a process forking while it is killed leaves a child the first pass missed.
        for _ in 0..2 {
            self.signal(root, Signal::SIGKILL);
        }
        loop {
            self.reap();
            let me = std::process::id();
            let left = self.seen.iter().any(|(&p, &start)| {
                stat_of(p).is_some_and(|(ppid, s, st)| s == start && (st != 'Z' || ppid == me))
            });
            if !left || std::time::Instant::now() >= end {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::registry::start_of;
    use super::*;

    #[test]
    fn a_child_born_since_the_last_walk_is_noted_at_once_and_its_end_forgotten() {
        let me = std::process::id();
        let mut tree = Tree::default();
        tree.note_if_new(me);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        // Its pid is the host's newest (or older than a newer one): the walk is due.
        tree.note_if_new(me);
        assert_eq!(
            tree.seen.get(&pid).copied(),
            start_of(pid),
            "{:?}",
            tree.seen
        );
        child.kill().unwrap();
        child.wait().unwrap();
        tree.note(me);
        assert!(!tree.seen.contains_key(&pid), "{:?}", tree.seen);
    }
}
