//! A service as the target: `watch --cgroup DIR` and `watch --unit NAME`.
//!
//! A cgroup is named by its directory in a mounted hierarchy (`/sys/fs/cgroup/…`, v1 or v2)
//! or by its path from a hierarchy's root (`/system.slice/curio.service`, as systemd and
//! `/proc/PID/cgroup` write it), which is looked up in the v1 memory hierarchy first (where
//! a hybrid host keeps its memory accounting), then in the v2 one, then in systemd's own
//! v1 hierarchy (members, no memory files). A unit is resolved to its cgroup by systemd
//! where it runs (`systemctl show -p ControlGroup`), else by the layouts systemd gives
//! units: `system.slice/NAME` and a user's `user@UID.service` below `user.slice`. Where
//! journald runs, the unit's journal is its log ([`journal_command`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Unit types systemd knows: a name without one of these suffixes is a service.
const UNIT_SUFFIXES: &[&str] = &[
    ".service",
    ".scope",
    ".slice",
    ".socket",
    ".mount",
    ".target",
    ".timer",
    ".path",
    ".swap",
    ".automount",
    ".device",
];

/// Test seam: `journalctl --namespace NS` instead of the default journal, for tests that run
/// their own `systemd-journald NS` (no journald runs on CI). Also the way to follow a unit
/// that logs to a journal namespace (`LogNamespace=`).
pub const JOURNAL_NAMESPACE_ENV: &str = "PROVETOP_JOURNAL_NAMESPACE";

/// A cgroup found: its directory, and the name the session gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    /// Its directory in a mounted hierarchy (has `cgroup.procs`).
    pub dir: PathBuf,
    /// Its path from the hierarchy's root (`/system.slice/curio.service`).
    pub name: String,
}

/// The cgroup hierarchies mounted here, as `(kind, mount point)`, in the order a path
/// relative to their roots is looked up in.
fn hierarchies() -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    hierarchies_in(&text)
}

/// [`hierarchies`] of a `mountinfo` text: the v1 memory controller, the v2 hierarchy, then
/// systemd's named v1 hierarchy.
fn hierarchies_in(mountinfo: &str) -> Vec<PathBuf> {
    let (mut memory, mut unified, mut systemd) = (None, None, None);
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        let (Some(mnt), Some(fstype)) = (l.get(4), r.first()) else {
            continue;
        };
        let opts = r.get(2).copied().unwrap_or("");
        let has = |o: &str| opts.split(',').any(|x| x == o);
        let slot = match *fstype {
            "cgroup2" => &mut unified,
            "cgroup" if has("memory") => &mut memory,
            "cgroup" if has("name=systemd") => &mut systemd,
            _ => continue,
        };
        slot.get_or_insert_with(|| PathBuf::from(mnt));
    }
    [memory, unified, systemd].into_iter().flatten().collect()
}

/// The cgroup `arg` names (`--cgroup`'s value): a directory of a mounted hierarchy, or a
/// path from a hierarchy's root. Errors are one line naming `arg` and what was wrong.
pub fn cgroup(arg: &str) -> anyhow::Result<Cgroup> {
    let roots = hierarchies();
    if arg.trim().is_empty() {
        anyhow::bail!(
            "--cgroup: empty path (give a cgroup directory, e.g. /system.slice/curio.service)"
        );
    }
    let p = Path::new(arg);
    let in_mount = roots.iter().find(|r| p.starts_with(r));
    if p.is_dir() || in_mount.is_some() {
        if !p.is_dir() {
            anyhow::bail!("--cgroup {arg}: no such cgroup directory");
        }
        if !p.join("cgroup.procs").is_file() {
            anyhow::bail!("--cgroup {arg}: not a cgroup directory (it has no cgroup.procs)");
        }
        let dir = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let name = name_in(&dir, &roots);
        return Ok(Cgroup { dir, name });
    }
    let rel = arg.trim_start_matches('/');
    if roots.is_empty() {
        anyhow::bail!("--cgroup {arg}: no cgroup hierarchy is mounted here");
    }
    for r in &roots {
        let dir = r.join(rel);
        if dir.join("cgroup.procs").is_file() {
            return Ok(Cgroup {
                dir,
                name: format!("/{rel}"),
            });
        }
    }
    let looked: Vec<String> = roots
        .iter()
        .map(|r| r.join(rel).display().to_string())
        .collect();
    anyhow::bail!(
        "--cgroup {arg}: no such cgroup (looked in {})",
        looked.join(", ")
    )
}

/// `dir`'s path from the root of the hierarchy it is in (itself where it is in none).
fn name_in(dir: &Path, roots: &[PathBuf]) -> String {
    roots
        .iter()
        .find_map(|r| dir.strip_prefix(r).ok())
        .map(|rel| format!("/{}", rel.display()))
        .unwrap_or_else(|| dir.display().to_string())
}

/// A unit's full name: `.service` added where `name` has no unit type.
pub fn unit_name(name: &str) -> String {
    if UNIT_SUFFIXES.iter().any(|s| name.ends_with(s)) {
        name.to_string()
    } else {
        format!("{name}.service")
    }
}

/// Whether systemd is the init system here (its own test: `sd_booted`).
pub fn systemd_runs() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// The cgroup of unit `unit` (a full name, [`unit_name`]): systemd's answer where it runs,
/// else the first of the layouts systemd gives units that exists.
pub fn unit_cgroup(unit: &str) -> anyhow::Result<Cgroup> {
    if unit.contains('/') || unit.trim().is_empty() {
        anyhow::bail!("--unit {unit:?}: not a unit name");
    }
    if systemd_runs() {
        let out = Command::new("systemctl")
            .args(["show", "-p", "ControlGroup", "--value", "--", unit])
            .output()
            .map_err(|e| anyhow::anyhow!("--unit {unit}: cannot run systemctl: {e}"))?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            anyhow::bail!("--unit {unit}: systemctl show failed: {}", err.trim());
        }
        if path.is_empty() {
            anyhow::bail!("--unit {unit}: systemd gives it no cgroup (not loaded, or not running)");
        }
        return cgroup(&path).map_err(|e| anyhow::anyhow!("--unit {unit}: {e:#}"));
    }
    let roots = hierarchies();
    let mut looked = Vec::new();
    for r in &roots {
        for dir in layouts(r, unit) {
            if dir.join("cgroup.procs").is_file() {
                let name = name_in(&dir, &roots);
                return Ok(Cgroup { dir, name });
            }
            looked.push(dir.display().to_string());
        }
    }
    if roots.is_empty() {
        anyhow::bail!("--unit {unit}: systemd is not running and no cgroup hierarchy is mounted");
    }
    anyhow::bail!(
        "--unit {unit}: systemd is not running here and no cgroup of that name exists (looked in {})",
        looked.join(", ")
    )
}

/// Where systemd puts unit `unit`'s cgroup below hierarchy root `root`: a system unit, a
/// slice at the root, each user manager's units and apps.
fn layouts(root: &Path, unit: &str) -> Vec<PathBuf> {
    let mut v = vec![root.join("system.slice").join(unit), root.join(unit)];
    let users = std::fs::read_dir(root.join("user.slice"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("user-"));
    for u in users {
        let managers = std::fs::read_dir(u.path())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("user@"));
        for m in managers {
            v.push(m.path().join(unit));
            v.push(m.path().join("app.slice").join(unit));
        }
    }
    v
}

/// The command that follows `unit`'s journal from now on, one message a line, as the
/// service wrote it (`-o cat`: no prefix, so the line grammars read it as they read a
/// supervised child's output); `None` where journald does not run (said by the caller).
pub fn journal_command(unit: &str) -> Option<Vec<String>> {
    let ns = std::env::var(JOURNAL_NAMESPACE_ENV)
        .ok()
        .filter(|s| !s.is_empty());
    let socket = match &ns {
        Some(n) => format!("/run/systemd/journal.{n}/socket"),
        None => "/run/systemd/journal/socket".to_string(),
    };
    if !Path::new(&socket).exists() {
        return None;
    }
    let mut v: Vec<String> = vec!["journalctl".into()];
    if let Some(n) = ns {
        v.push(format!("--namespace={n}"));
    }
    v.extend(
        ["--follow", "--lines=0", "--output=cat", "--unit"]
            .iter()
            .map(|s| s.to_string()),
    );
    v.push(unit.to_string());
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_without_a_unit_type_is_a_service() {
        assert_eq!(unit_name("curio"), "curio.service");
        assert_eq!(unit_name("curio.service"), "curio.service");
        assert_eq!(unit_name("prove.scope"), "prove.scope");
        assert_eq!(unit_name("lotus-worker@2"), "lotus-worker@2.service");
    }

    #[test]
    fn hierarchies_are_memory_then_unified_then_systemds() {
        let mi = "\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
";
        assert_eq!(
            hierarchies_in(mi),
            ["memory", "unified", "systemd"].map(|h| PathBuf::from(format!("/sys/fs/cgroup/{h}")))
        );
        assert_eq!(
            hierarchies_in("30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
            [PathBuf::from("/sys/fs/cgroup")]
        );
    }

    #[test]
    fn a_directory_that_is_not_a_cgroup_is_refused_in_one_line() {
        let d = tempfile::tempdir().unwrap();
        let arg = d.path().display().to_string();
        let e = cgroup(&arg).unwrap_err().to_string();
        assert!(e.contains("not a cgroup directory"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = cgroup("/no/such/provetop-cgroup").unwrap_err().to_string();
        assert!(e.contains("no such cgroup"), "{e}");
    }
}
