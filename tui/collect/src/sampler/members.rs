//! The processes of a cgroup: the sampled tree of `watch --cgroup` and `watch --unit`.
//!
//! A cgroup's members are the pids in its `cgroup.procs` and in those of every cgroup below
//! it (a service's workers may sit in sub-cgroups). They come and go without a process being
//! created (a pid written to `cgroup.procs` moves in; a service restarts), so the sampler
//! reads them again at its walk cadence rather than when a new pid appears on the host. The
//! same files exist in the v1 hierarchies and in v2, so one reader serves both.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Deepest cgroup nesting read below the watched one (systemd nests a few levels; a deeper
/// tree is a loop of bind mounts, not a service).
const MAX_DEPTH: usize = 32;

/// The members of one cgroup directory and its descendants.
#[derive(Debug, Clone)]
pub struct CgroupMembers {
    dir: PathBuf,
}

impl CgroupMembers {
    /// The members of the cgroup at `dir` (a directory of a mounted cgroup hierarchy).
    pub fn new(dir: impl Into<PathBuf>) -> CgroupMembers {
        CgroupMembers { dir: dir.into() }
    }

    /// The directory watched.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every member now, sorted, each once (a pid may show in a parent and a child cgroup
    /// while it moves); `None` once the cgroup itself is gone (removed: its `cgroup.procs`
    /// no longer exists). A sub-cgroup removed mid-read is skipped: its processes are gone
    /// or moved to a cgroup read anyway.
    pub fn read(&self) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        match fs::read_to_string(self.dir.join("cgroup.procs")) {
            Ok(s) => parse_into(&s, &mut out),
            Err(e) if e.kind() == ErrorKind::NotFound => return None,
            // Unreadable but present (a race with its removal, or permissions): no members
            // this time; the next read tells.
            Err(_) => {}
        }
        below(&self.dir, 0, &mut out);
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// Whether the cgroup still exists.
    pub fn exists(&self) -> bool {
        self.dir.join("cgroup.procs").exists()
    }
}

/// The memory cgroup at `dir`, for its usage and limit: v1 where the directory has the
/// legacy controller's files, v2 where it has `memory.current`; `None` where it has neither
/// (a v1 hierarchy of another controller, or a v2 cgroup without the memory controller).
pub fn mem_cgroup(dir: &Path) -> Option<crate::cgroup::MemCgroup> {
    use crate::cgroup::{MemCgroup, Version};
    let version = if dir.join("memory.usage_in_bytes").exists() {
        Version::V1
    } else if dir.join("memory.current").exists() {
        Version::V2
    } else {
        return None;
    };
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = crate::cgroup::resolve::mount_of(dir, &mountinfo)?;
    Some(MemCgroup {
        dir: dir.to_path_buf(),
        mount,
        version,
    })
}

/// The members of every cgroup below `dir`.
fn below(dir: &Path, depth: usize, out: &mut Vec<u32>) {
    if depth >= MAX_DEPTH {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let sub = e.path();
        if let Ok(s) = fs::read_to_string(sub.join("cgroup.procs")) {
            parse_into(&s, out);
        }
        below(&sub, depth + 1, out);
    }
}

fn parse_into(text: &str, out: &mut Vec<u32>) {
    out.extend(
        text.split_ascii_whitespace()
            .filter_map(|w| w.parse::<u32>().ok()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_read_from_the_cgroup_and_every_cgroup_below_it_each_once() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("cgroup.procs"), "12\n7\n").unwrap();
        fs::create_dir_all(d.path().join("a/b")).unwrap();
        fs::write(d.path().join("a/cgroup.procs"), "").unwrap();
        fs::write(d.path().join("a/b/cgroup.procs"), "40\n7\n").unwrap();
        fs::write(d.path().join("memory.stat"), "cache 0\n").unwrap();
        let m = CgroupMembers::new(d.path());
        assert_eq!(m.read(), Some(vec![7, 12, 40]));
        assert!(m.exists());
    }

    #[test]
    fn a_removed_cgroup_reads_as_none() {
        let d = tempfile::tempdir().unwrap();
        let m = CgroupMembers::new(d.path().join("gone"));
        assert_eq!(m.read(), None);
        assert!(!m.exists());
    }
}
