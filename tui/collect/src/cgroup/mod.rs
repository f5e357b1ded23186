//! The memory cgroup of a process, as the kernel enforces and accounts it.
//!
//! cgroup v2 (`memory.current`, `memory.max`, `memory.events`, …) is the target; the v1
//! memory controller (`memory.usage_in_bytes`, `memory.limit_in_bytes`,
//! `memory.oom_control`, …) is read where a host still runs it, so limits, accounting and
//! OOM kills are seen on both. The parts: `resolve` finds the cgroup of a pid (v1, v2,
//! hybrid hosts); `accounting` parses `memory.stat` and the event counters; `limits` reads
//! the limits of a cgroup and of each ancestor and finds the one that binds; `reader` keeps a
//! cgroup's files open and reads each at the rate it changes; `peak` is v2's per-file
//! `memory.peak` reset.

use std::fs;
use std::path::{Path, PathBuf};

use crate::procfile::KeptOpen;

pub mod accounting;
pub mod limits;
pub mod peak;
pub mod reader;
pub mod resolve;

pub use limits::{Limits, Room};
pub use reader::CgroupReader;
pub use resolve::resolve;

/// Which cgroup hierarchy a [`MemCgroup`] lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// Unified hierarchy.
    V2,
    /// Legacy memory controller.
    V1,
}

/// A memory cgroup directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemCgroup {
    /// Directory in the cgroup filesystem.
    pub dir: PathBuf,
    /// Where its hierarchy is mounted (the hierarchy's root, as this process sees it).
    pub mount: PathBuf,
    pub version: Version,
}

/// Above this a v1 limit means "no limit" (the kernel writes PAGE_COUNTER_MAX rounded).
pub(crate) const V1_UNLIMITED: u64 = 1 << 60;

impl MemCgroup {
    /// The memory cgroup of `pid`, if a memory controller is mounted and readable.
    pub fn of_pid(pid: u32) -> Option<MemCgroup> {
        let cg = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let mounts = fs::read_to_string(format!("/proc/{pid}/mountinfo"))
            .or_else(|_| fs::read_to_string("/proc/self/mountinfo"))
            .ok()?;
        resolve(&cg, &mounts)
    }

    /// Its path in its hierarchy: `/system.slice/curio.service`, `/` for the root.
    pub fn path(&self) -> String {
        resolve::hierarchy_path(&self.mount, &self.dir)
    }

    /// Its last path component, as an operator names it ("curio.service"); `/` for the root.
    pub fn name(&self) -> String {
        match self.dir.strip_prefix(&self.mount) {
            Ok(rel) if !rel.as_os_str().is_empty() => self
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "/".into()),
            _ => "/".into(),
        }
    }

    /// This cgroup and each of its ancestors below the hierarchy's root (whose limits are
    /// the host's), nearest first.
    pub fn chain(&self) -> Vec<MemCgroup> {
        let mut out = Vec::new();
        let mut dir = self.dir.as_path();
        while dir != self.mount && dir.starts_with(&self.mount) {
            out.push(MemCgroup {
                dir: dir.to_path_buf(),
                mount: self.mount.clone(),
                version: self.version,
            });
            match dir.parent() {
                Some(p) => dir = p,
                None => break,
            }
        }
        out
    }

    /// The hierarchy's file name for a v2 name (`memory.max` → v1 `memory.limit_in_bytes`);
    /// `None` where v1 has no such file.
    pub fn file(&self, v2: &'static str) -> Option<&'static str> {
        match self.version {
            Version::V2 => Some(v2),
            Version::V1 => Some(match v2 {
                "memory.current" => "memory.usage_in_bytes",
                "memory.max" => "memory.limit_in_bytes",
                "memory.stat" => "memory.stat",
                "memory.events" => "memory.oom_control",
                _ => return None,
            }),
        }
    }

    /// Limit in bytes; `None` when unlimited.
    pub fn max(&self) -> Option<u64> {
        match self.version {
            Version::V2 => {
                let s = fs::read_to_string(self.dir.join("memory.max")).ok()?;
                s.trim().parse().ok()
            }
            Version::V1 => {
                read_u64(&self.dir.join("memory.limit_in_bytes")).filter(|&v| v < V1_UNLIMITED)
            }
        }
    }

    /// The cumulative OOM-kill counter of this cgroup (hierarchical on v2).
    pub fn oom_kills(&self) -> Option<u64> {
        let f = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        let s = fs::read_to_string(self.dir.join(f)).ok()?;
        s.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse().ok())
    }
}

/// `memory.current`/`memory.max` (or their v1 names) kept open for cheap re-reads. The limit
/// is a setting, not a reading: it is read again once a second ([`MAX_EVERY`]). The usage is
/// read every time while there is a limit (the room to it is what time-to-OOM needs); without
/// one it bounds nothing and is read with the limit, once a second: each file a sample reads
/// is a cold read after the thread's sleep, a visible share of the sampler's cost
/// (docs/measurements.md#what-a-sample-costs).
#[derive(Debug)]
pub struct UsageReader {
    current: Option<KeptOpen>,
    max: Option<KeptOpen>,
    version: Version,
    /// The limit last read, and when.
    max_read: Option<(std::time::Instant, Option<u64>)>,
}

/// How long a limit read stays in use.
pub const MAX_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl UsageReader {
    /// Open the usage and limit files of `cg`.
    pub fn open(cg: &MemCgroup) -> UsageReader {
        let (c, m) = match cg.version {
            Version::V2 => ("memory.current", "memory.max"),
            Version::V1 => ("memory.usage_in_bytes", "memory.limit_in_bytes"),
        };
        UsageReader {
            current: KeptOpen::open(cg.dir.join(c), 64).ok(),
            max: KeptOpen::open(cg.dir.join(m), 64).ok(),
            version: cg.version,
            max_read: None,
        }
    }

    /// (usage, limit) in bytes; the limit is `None` when unlimited, and then the usage is
    /// `None` except at the once-a-second read of the limit.
    pub fn read(&mut self) -> (Option<u64>, Option<u64>) {
        let now = std::time::Instant::now();
        let (max, fresh) = match self.max_read {
            Some((at, max)) if now.duration_since(at) < MAX_EVERY => (max, false),
            _ => {
                let max = read_number(&mut self.max)
                    .filter(|&v| self.version == Version::V2 || v < V1_UNLIMITED);
                self.max_read = Some((now, max));
                (max, true)
            }
        };
        let cur = if max.is_some() || fresh {
            read_number(&mut self.current)
        } else {
            None
        };
        (cur, max)
    }
}

/// The number a cgroup file holds; `None` for "max" (v2's "no limit") or when unreadable.
pub(crate) fn read_number(f: &mut Option<KeptOpen>) -> Option<u64> {
    let text = f.as_mut()?.read().ok()?;
    std::str::from_utf8(text).ok()?.trim().parse().ok()
}

fn read_u64(p: &Path) -> Option<u64> {
    fs::read_to_string(p).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cgroup_resolves_when_a_memory_controller_exists() {
        if let Some(c) = MemCgroup::of_pid(std::process::id()) {
            assert!(
                UsageReader::open(&c).read().0.is_some(),
                "{c:?} has no usage"
            );
            assert!(c.oom_kills().is_some(), "{c:?} has no oom_kill counter");
        }
    }

    #[test]
    fn a_cgroups_chain_runs_up_to_below_the_hierarchys_root() {
        let c = MemCgroup {
            dir: PathBuf::from("/sys/fs/cgroup/system.slice/curio.service"),
            mount: PathBuf::from("/sys/fs/cgroup"),
            version: Version::V2,
        };
        assert_eq!(c.path(), "/system.slice/curio.service");
        assert_eq!(c.name(), "curio.service");
        let chain: Vec<String> = c.chain().iter().map(|c| c.path()).collect();
        assert_eq!(chain, ["/system.slice/curio.service", "/system.slice"]);
    }

    #[test]
    fn picks_v2_path_under_mount() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("job");
        fs::create_dir(&sub).unwrap();
        fs::write(sub.join("memory.current"), "123\n").unwrap();
        fs::write(sub.join("memory.max"), "max\n").unwrap();
        fs::write(sub.join("memory.events"), "low 0\noom 1\noom_kill 2\n").unwrap();
        let mi = format!(
            "41 31 0:38 / {} rw,relatime - cgroup2 cgroup2 rw\n",
            dir.path().display()
        );
        let c = resolve("0::/job\n", &mi).unwrap();
        assert_eq!(c.version, Version::V2);
        assert_eq!(c.max(), None);
        assert_eq!(c.oom_kills(), Some(2));
        let mut r = UsageReader::open(&c);
        assert_eq!(r.read(), (Some(123), None));
        fs::write(sub.join("memory.max"), "4096\n").unwrap();
        fs::write(sub.join("memory.current"), "456\n").unwrap();
        // Unlimited: the usage only with the limit, once a second.
        assert_eq!(r.read(), (None, None));
        std::thread::sleep(MAX_EVERY);
        assert_eq!(r.read(), (Some(456), Some(4096)));
        // Limited: the usage every read.
        fs::write(sub.join("memory.current"), "789\n").unwrap();
        assert_eq!(r.read(), (Some(789), Some(4096)));
    }
}
