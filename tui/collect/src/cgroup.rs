//! The memory cgroup of a process: usage, limit and the OOM-kill counter.
//!
//! cgroup v2 (`memory.current`, `memory.max`, `memory.events: oom_kill`) is the target; the
//! v1 memory controller (`memory.usage_in_bytes`, `memory.limit_in_bytes`,
//! `memory.oom_control: oom_kill`) is read where a host still runs it, so
//! limits and OOM kills are seen on both.

use std::fs;
use std::path::{Path, PathBuf};

use crate::procfile::KeptOpen;

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
    pub version: Version,
}

/// Above this a v1 limit means "no limit" (the kernel writes PAGE_COUNTER_MAX rounded).
const V1_UNLIMITED: u64 = 1 << 60;

impl MemCgroup {
    /// The memory cgroup of `pid`, if a memory controller is mounted and readable.
    pub fn of_pid(pid: u32) -> Option<MemCgroup> {
        let cg = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let mounts = fs::read_to_string(format!("/proc/{pid}/mountinfo"))
            .or_else(|_| fs::read_to_string("/proc/self/mountinfo"))
            .ok()?;
        resolve(&cg, &mounts)
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
fn read_number(f: &mut Option<KeptOpen>) -> Option<u64> {
    let text = f.as_mut()?.read().ok()?;
    std::str::from_utf8(text).ok()?.trim().parse().ok()
}

fn read_u64(p: &Path) -> Option<u64> {
    fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// Resolve a `/proc/PID/cgroup` text against a `mountinfo` text.
pub fn resolve(cgroup: &str, mountinfo: &str) -> Option<MemCgroup> {
    // v1 memory controller wins when present: on hybrid hosts the unified hierarchy has no
    // memory controller.
    let mut v2_path = None;
    let mut v1_path = None;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_id, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        if ctrls.is_empty() {
            v2_path = Some(path.to_string());
        } else if ctrls.split(',').any(|c| c == "memory") {
            v1_path = Some(path.to_string());
        }
    }
    let mut v2_mount = None;
    let mut v1_mount = None;
    for line in mountinfo.lines() {
        // id parent major:minor root mountpoint options [optional...] - fstype source superopts
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 5 || r.is_empty() {
            continue;
        }
        let (root, mnt) = (l[3], l[4]);
        match r[0] {
            "cgroup2" => v2_mount = Some((root.to_string(), mnt.to_string())),
            "cgroup"
                if r.get(2)
                    .is_some_and(|o| o.split(',').any(|c| c == "memory")) =>
            {
                v1_mount = Some((root.to_string(), mnt.to_string()))
            }
            _ => {}
        }
    }
    let join = |(root, mnt): (String, String), path: String, v| {
        // Inside a cgroup namespace the mount's root is "/" and paths are relative to it;
        // outside one, strip the mount's root from the process's path.
        let rel = path
            .strip_prefix(root.as_str())
            .unwrap_or(&path)
            .trim_start_matches('/')
            .to_string();
        let dir = Path::new(&mnt).join(rel);
        dir.is_dir().then_some(MemCgroup { dir, version: v })
    };
    if let (Some(m), Some(p)) = (v1_mount, v1_path) {
        if let Some(c) = join(m, p, Version::V1) {
            return Some(c);
        }
    }
    if let (Some(m), Some(p)) = (v2_mount, v2_path) {
        let c = join(m, p, Version::V2)?;
        // The unified root and hybrid unified mounts have no memory controller files.
        if c.dir.join("memory.current").exists() {
            return Some(c);
        }
    }
    None
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
