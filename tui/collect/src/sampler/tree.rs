//! Finding the descendants of a process.
//!
//! Where the kernel has `CONFIG_PROC_CHILDREN`, `/proc/PID/task/TID/children` lists each
//! thread's children and the walk touches only the tree itself (the machines of
//! docs/measurements.md#machines have it). Elsewhere the walk reads the parent pid of every
//! process in `/proc`; the sampler's own walks use a [`ParentCache`] instead, which reads
//! the parent of a process once, when it first appears in `/proc`, and again only for the
//! processes of the tree (a tree member's parent can change when its parent exits; an
//! outsider's only to a reaper outside the tree). Either way the sampler runs it at a rate
//! bounded by its measured cost, and samples the known tree every tick.

use std::collections::HashMap;
use std::fs;
use std::time::{Duration, Instant};

/// Whether a tree walk is due: the newest pid on the host (`/proc/loadavg`'s last field, the
/// file kept open) moved since the last walk it allowed, or a backstop passed. While that pid
/// holds, no process or thread was created anywhere, so no tree has a new member. Used by the
/// sampler's walks and the supervisor's tree notes alike.
#[derive(Debug, Default)]
pub struct WalkGate {
    /// Opened at the first question (`Some(None)`: it cannot be, then every walk is due).
    loadavg: Option<Option<crate::procfile::KeptOpen>>,
    /// The newest pid at the last walk allowed, and when that was.
    walked: Option<(Option<u64>, Instant)>,
}

impl WalkGate {
    /// Whether to walk now: when `force`, when the newest pid moved or cannot be read, or
    /// when the last walk was `backstop` ago or longer. A yes counts as a walk from now on.
    pub fn due(&mut self, backstop: Duration, force: bool) -> bool {
        let now = Instant::now();
        let newest = self.newest_pid();
        let quiet = matches!(self.walked, Some((before, at))
            if newest.is_some() && newest == before && now < at + backstop);
        if quiet && !force {
            return false;
        }
        self.walked = Some((newest, now));
        true
    }

    fn newest_pid(&mut self) -> Option<u64> {
        let file = self
            .loadavg
            .get_or_insert_with(|| crate::procfile::KeptOpen::open("/proc/loadavg", 128).ok());
        let text = file.as_mut()?.read().ok()?;
        let last = text
            .split(|b| b.is_ascii_whitespace())
            .rfind(|f| !f.is_empty())?;
        std::str::from_utf8(last).ok()?.parse().ok()
    }
}

/// Whether this kernel provides `/proc/PID/task/TID/children`.
pub fn has_children_files() -> bool {
    let me = std::process::id();
    fs::metadata(format!("/proc/{me}/task/{me}/children")).is_ok()
}

/// `root` and all its descendants, root first then breadth first. Empty when `root` is gone.
pub fn descendants(root: u32, children_files: bool) -> Vec<u32> {
    if fs::metadata(format!("/proc/{root}")).is_err() {
        return Vec::new();
    }
    if children_files {
        walk(root, children_of)
    } else {
        let map = parent_map();
        walk(root, |p| map.get(&p).cloned().unwrap_or_default())
    }
}

/// The direct children of `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    if has_children_files() {
        children_of(pid)
    } else {
        parent_map().remove(&pid).unwrap_or_default()
    }
}

/// Every live process among `roots` and all their descendants, each once (one scan of
/// `/proc` at most, however many roots).
pub fn descendants_of_all(roots: &[u32], children_files: bool) -> Vec<u32> {
    let live: Vec<u32> = roots
        .iter()
        .copied()
        .filter(|r| fs::metadata(format!("/proc/{r}")).is_ok())
        .collect();
    if live.is_empty() {
        return Vec::new();
    }
    let map = (!children_files).then(parent_map);
    let mut out: Vec<u32> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in live {
        if seen.contains(&r) {
            continue;
        }
        let tree = match &map {
            Some(m) => walk(r, |p| m.get(&p).cloned().unwrap_or_default()),
            None => walk(r, children_of),
        };
        for p in tree {
            if seen.insert(p) {
                out.push(p);
            }
        }
    }
    out
}

fn walk(root: u32, mut kids: impl FnMut(u32) -> Vec<u32>) -> Vec<u32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        for c in kids(out[i]) {
            // A pid cannot be its own ancestor, but a recycled pid read mid-walk could loop.
            if !out.contains(&c) {
                out.push(c);
            }
        }
        i += 1;
    }
    out
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let mut p = t.path();
        p.push("children");
        if let Ok(s) = fs::read_to_string(&p) {
            out.extend(
                s.split_ascii_whitespace()
                    .filter_map(|w| w.parse::<u32>().ok()),
            );
        }
    }
    out
}

/// The parent of every process in `/proc`, each read once (see the module docs).
#[derive(Debug, Default)]
pub struct ParentCache {
    parent: HashMap<u32, u32>,
    seen: Vec<u32>,
    buf: Vec<u8>,
}

impl ParentCache {
    /// `root` and all its descendants, root first then breadth first (as [`descendants`]).
    /// `tree` is the tree of the walk before, whose parents are read again.
    pub fn descendants(&mut self, root: u32, tree: &[u32]) -> Vec<u32> {
        if fs::metadata(format!("/proc/{root}")).is_err() {
            return Vec::new();
        }
        let Ok(dir) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        self.seen.clear();
        for e in dir.flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) {
                self.seen.push(pid);
            }
        }
        self.seen.sort_unstable();
        let seen = &self.seen;
        self.parent.retain(|p, _| seen.binary_search(p).is_ok());
        for &pid in &self.seen {
            let known = self.parent.contains_key(&pid);
            if !known || tree.contains(&pid) {
                self.buf.clear();
                match read_ppid(pid, &mut self.buf) {
                    Some(ppid) => {
                        self.parent.insert(pid, ppid);
                    }
                    None => {
                        self.parent.remove(&pid);
                    }
                }
            }
        }
        let mut kids: HashMap<u32, Vec<u32>> = HashMap::new();
        for (&pid, &ppid) in &self.parent {
            kids.entry(ppid).or_default().push(pid);
        }
        for v in kids.values_mut() {
            v.sort_unstable();
        }
        walk(root, |p| kids.get(&p).cloned().unwrap_or_default())
    }
}

/// parent pid → child pids, for every process in /proc.
fn parent_map() -> HashMap<u32, Vec<u32>> {
    let mut map: HashMap<u32, Vec<u32>> = HashMap::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return map;
    };
    let mut buf = Vec::with_capacity(512);
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        buf.clear();
        if let Some(ppid) = read_ppid(pid, &mut buf) {
            map.entry(ppid).or_default().push(pid);
        }
    }
    map
}

/// The parent pid from `/proc/PID/stat` (field 4, after the parenthesized command name,
/// which may itself contain spaces and parentheses).
fn read_ppid(pid: u32, buf: &mut Vec<u8>) -> Option<u32> {
    use std::io::Read;
    let mut f = fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    f.read_to_end(buf).ok()?;
    crate::procfile::StatFields::parse(buf)?.num(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_own_child_both_ways() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        let scan = descendants(me, false);
        assert_eq!(scan[0], me);
        assert!(scan.contains(&child.id()), "{scan:?}");
        if has_children_files() {
            let walked = descendants(me, true);
            assert!(walked.contains(&child.id()), "{walked:?}");
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn the_parent_cache_finds_a_child_born_after_its_first_walk_and_forgets_it_gone() {
        let me = std::process::id();
        let mut cache = ParentCache::default();
        let first = cache.descendants(me, &[]);
        assert_eq!(first[0], me);
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let second = cache.descendants(me, &first);
        assert!(second.contains(&child.id()), "{second:?}");
        child.kill().unwrap();
        child.wait().unwrap();
        let third = cache.descendants(me, &second);
        assert!(!third.contains(&child.id()), "{third:?}");
    }

    #[test]
    fn missing_root_is_empty() {
        assert!(descendants(u32::MAX - 1, false).is_empty());
    }
}
