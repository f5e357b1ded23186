//! Where a process's memory cgroup is: its `/proc/PID/cgroup` line for the memory controller
//! (v1) or the unified hierarchy (v2), joined to the mount of that hierarchy from
//! `mountinfo`.
//!
//! On a hybrid host both exist and the v1 memory controller wins: the unified hierarchy then
//! has no memory controller (its directories have no `memory.current`).

use std::path::{Path, PathBuf};

use super::{MemCgroup, Version};

/// A hierarchy the process is in: its version, the mount's root and mount point, and the
/// process's path in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub version: Version,
    /// The mount's root within the hierarchy (not `/` when the mount is of a subtree, as in a
    /// container without its own cgroup namespace).
    pub root: String,
    pub mount: PathBuf,
    /// The process's path as `/proc/PID/cgroup` gives it.
    pub path: String,
}

impl Candidate {
    /// The cgroup's directory: the path below the mount's root, under the mount point.
    pub fn dir(&self) -> PathBuf {
        // Inside a cgroup namespace the mount's root is "/" and paths are relative to it;
        // outside one, strip the mount's root from the process's path.
        let rel = self
            .path
            .strip_prefix(self.root.as_str())
            .unwrap_or(&self.path)
            .trim_start_matches('/');
        self.mount.join(rel)
    }
}

/// The memory hierarchies of a `/proc/PID/cgroup` text found mounted in a `mountinfo` text,
/// v1's memory controller first. Nothing is looked up on disk.
pub fn candidates(cgroup: &str, mountinfo: &str) -> Vec<Candidate> {
    let mut v2_path = None;
    let mut v1_path = None;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
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
        let m = (unescape(l[3]), PathBuf::from(unescape(l[4])));
        match r[0] {
            "cgroup2" => v2_mount = Some(m),
            "cgroup"
                if r.get(2)
                    .is_some_and(|o| o.split(',').any(|c| c == "memory")) =>
            {
                v1_mount = Some(m)
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (version, mount, path) in [
        (Version::V1, v1_mount, v1_path),
        (Version::V2, v2_mount, v2_path),
    ] {
        if let (Some((root, mount)), Some(path)) = (mount, path) {
            out.push(Candidate {
                version,
                root,
                mount,
                path,
            });
        }
    }
    out
}

/// mountinfo escapes space, tab, newline and backslash as octal (`\040`).
fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Resolve a `/proc/PID/cgroup` text against a `mountinfo` text: the first candidate whose
/// directory exists and, for v2, has the memory controller's files.
pub fn resolve(cgroup: &str, mountinfo: &str) -> Option<MemCgroup> {
    candidates(cgroup, mountinfo).into_iter().find_map(|c| {
        let dir = c.dir();
        let ok = dir.is_dir()
            && match c.version {
                Version::V1 => true,
                // The unified root and hybrid unified mounts have no memory controller files.
                Version::V2 => dir.join("memory.current").exists(),
            };
        ok.then(|| MemCgroup {
            dir,
            mount: c.mount.clone(),
            version: c.version,
        })
    })
}

/// The mount point of the cgroup hierarchy `dir` is in, from a `mountinfo` text: the longest
/// `cgroup` or `cgroup2` mount point that `dir` is at or below.
pub fn mount_of(dir: &Path, mountinfo: &str) -> Option<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let fstype = right.split(' ').next()?;
            if fstype != "cgroup" && fstype != "cgroup2" {
                return None;
            }
            let mnt = PathBuf::from(unescape(left.split(' ').nth(4)?));
            dir.starts_with(&mnt).then_some(mnt)
        })
        .max_by_key(|m| m.as_os_str().len())
}

/// `dir`'s path within the hierarchy mounted at `mount` ("/" for the root).
pub fn hierarchy_path(mount: &Path, dir: &Path) -> String {
    match dir.strip_prefix(mount) {
        Ok(rel) if rel.as_os_str().is_empty() => "/".to_string(),
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => dir.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This VM's text: a hybrid host (v1 controllers, an empty unified hierarchy under
    /// `unified`, a named systemd hierarchy).
    const HYBRID_CGROUP: &str = "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n4:memory:/process_api/c576f51bb4bbcea547156b20ca532c08\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n";
    const HYBRID_MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn a_hybrid_host_offers_the_v1_memory_controller_first_and_the_unified_root_second() {
        let c = candidates(HYBRID_CGROUP, HYBRID_MOUNTINFO);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(c[0].version, Version::V1);
        assert_eq!(
            c[0].dir(),
            Path::new("/sys/fs/cgroup/memory/process_api/c576f51bb4bbcea547156b20ca532c08")
        );
        assert_eq!(c[1].version, Version::V2);
        assert_eq!(c[1].dir(), Path::new("/sys/fs/cgroup/unified"));
    }

    #[test]
    fn a_v2_host_in_a_systemd_service_resolves_under_the_unified_mount() {
        let cg = "0::/system.slice/curio.service\n";
        let mi = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
        let c = candidates(cg, mi);
        assert_eq!(c.len(), 1);
        assert_eq!(
            c[0].dir(),
            Path::new("/sys/fs/cgroup/system.slice/curio.service")
        );
    }

    #[test]
    fn a_container_mount_of_a_subtree_strips_the_mounts_root() {
        let cg = "0::/kubepods/pod1/ctr\n";
        let mi = "500 400 0:26 /kubepods/pod1 /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n";
        assert_eq!(candidates(cg, mi)[0].dir(), Path::new("/sys/fs/cgroup/ctr"));
    }

    #[test]
    fn escaped_mount_points_are_unescaped() {
        assert_eq!(unescape(r"/mnt/a\040b"), "/mnt/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn a_directory_is_in_the_hierarchy_of_the_longest_cgroup_mount_above_it() {
        let mi = "30 25 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n\
                  35 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
                  36 30 0:32 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mount_of(
                Path::new("/sys/fs/cgroup/memory/system.slice/x.service"),
                mi
            ),
            Some(PathBuf::from("/sys/fs/cgroup/memory"))
        );
        assert_eq!(
            mount_of(Path::new("/sys/fs/cgroup/unified/a"), mi),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(mount_of(Path::new("/tmp/a"), mi), None);
    }

    #[test]
    fn hierarchy_paths_are_rooted_at_the_mount() {
        let m = Path::new("/sys/fs/cgroup/memory");
        assert_eq!(hierarchy_path(m, m), "/");
        assert_eq!(hierarchy_path(m, &m.join("a/b")), "/a/b");
    }
}
