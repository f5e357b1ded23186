//! The limits that apply to a cgroup: its own `memory.max` and `memory.high` (v1
//! `memory.limit_in_bytes`) and each ancestor's, with the usage each is counted against, so
//! the one with the least room can be named ("curio.service memory.max").
//!
//! Every file is kept open. A limit is a setting and is read at the kernel cadence; the usage
//! of the limit that binds is read by the caller at every sample ([`Limits::used`]).

use crate::procfile::KeptOpen;

use super::{MemCgroup, Version, V1_UNLIMITED};

/// One limit and the usage counted against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// Which cgroup of the chain (0: the tree's own).
    pub member: usize,
    /// The cgroup's path in its hierarchy.
    pub path: String,
    /// As an operator names it: "curio.service memory.max".
    pub name: String,
    /// The limit's file: "memory.max", "memory.high", "memory.limit_in_bytes".
    pub file: &'static str,
    /// The limit, bytes.
    pub limit: u64,
    /// The cgroup's usage, bytes.
    pub used: u64,
}

impl Room {
    /// Bytes left before the limit.
    pub fn room(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

/// The limit files of one cgroup of the chain.
#[derive(Debug)]
struct Member {
    path: String,
    name: String,
    version: Version,
    max: Option<KeptOpen>,
    high: Option<KeptOpen>,
    current: Option<KeptOpen>,
}

/// The limits of a cgroup and of its ancestors, kept open.
#[derive(Debug)]
pub struct Limits {
    members: Vec<Member>,
}

/// What reading one limit file gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    Unlimited,
    Bytes(u64),
    Unreadable,
}

impl Limits {
    /// Open the limit and usage files of `cg` and of each of its ancestors.
    pub fn open(cg: &MemCgroup) -> Limits {
        let members = cg
            .chain()
            .into_iter()
            .map(|c| {
                let open = |f: &str| KeptOpen::open(c.dir.join(f), 64).ok();
                let (max, high, current) = match c.version {
                    Version::V2 => (
                        open("memory.max"),
                        open("memory.high"),
                        open("memory.current"),
                    ),
                    Version::V1 => (
                        open("memory.limit_in_bytes"),
                        None,
                        open("memory.usage_in_bytes"),
                    ),
                };
                Member {
                    path: c.path(),
                    name: c.name(),
                    version: c.version,
                    max,
                    high,
                    current,
                }
            })
            .collect();
        Limits { members }
    }

    /// Every limit that applies now, with the usage it counts; a file that cannot be read
    /// gives nothing (the caller says so: [`Limits::unreadable`]).
    pub fn read(&mut self) -> Vec<Room> {
        let mut out = Vec::new();
        for (i, m) in self.members.iter_mut().enumerate() {
            let max = read_limit(&mut m.max, m.version);
            let high = read_limit(&mut m.high, m.version);
            if !matches!(max, Limit::Bytes(_)) && !matches!(high, Limit::Bytes(_)) {
                continue;
            }
            let Some(used) = super::read_number(&mut m.current) else {
                continue;
            };
            for (f, l) in [(max_file(m.version), max), ("memory.high", high)] {
                if let Limit::Bytes(limit) = l {
                    out.push(Room {
                        member: i,
                        path: m.path.clone(),
                        name: format!("{} {f}", m.name),
                        file: f,
                        limit,
                        used,
                    });
                }
            }
        }
        out
    }

    /// The usage of member `i`, read now.
    pub fn used(&mut self, i: usize) -> Option<u64> {
        super::read_number(&mut self.members.get_mut(i)?.current)
    }

    /// The limit files that could not be opened or read ("/a/b memory.high"): those limits
    /// are unknown, not absent.
    pub fn unreadable(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        for m in &mut self.members {
            if read_limit(&mut m.max, m.version) == Limit::Unreadable {
                out.push(format!("{} {}", m.path, max_file(m.version)));
            }
            if m.version == Version::V2 && read_limit(&mut m.high, m.version) == Limit::Unreadable {
                out.push(format!("{} memory.high", m.path));
            }
        }
        out
    }
}

/// The file of a hierarchy's hard limit.
pub fn max_file(v: Version) -> &'static str {
    match v {
        Version::V2 => "memory.max",
        Version::V1 => "memory.limit_in_bytes",
    }
}

/// The least room among `rooms`.
pub fn tightest(rooms: &[Room]) -> Option<&Room> {
    rooms.iter().min_by_key(|r| (r.room(), r.limit))
}

fn read_limit(f: &mut Option<KeptOpen>, v: Version) -> Limit {
    let Some(f) = f.as_mut() else {
        return Limit::Unreadable;
    };
    let Ok(text) = f.read() else {
        return Limit::Unreadable;
    };
    let t = String::from_utf8_lossy(text);
    let t = t.trim();
    if t == "max" {
        return Limit::Unlimited;
    }
    match t.parse::<u64>() {
        Ok(n) if v == Version::V1 && n >= V1_UNLIMITED => Limit::Unlimited,
        Ok(n) => Limit::Bytes(n),
        Err(_) => Limit::Unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn the_tightest_limit_up_a_v2_chain_is_the_one_with_least_room_named_by_its_cgroup() {
        let root = tempfile::tempdir().unwrap();
        let slice = root.path().join("system.slice");
        let svc = slice.join("curio.service");
        fs::create_dir_all(&svc).unwrap();
        let w = |d: &std::path::Path, f: &str, v: &str| fs::write(d.join(f), v).unwrap();
        w(&slice, "memory.max", "1000\n");
        w(&slice, "memory.high", "max\n");
        w(&slice, "memory.current", "900\n");
        w(&svc, "memory.max", "max\n");
        w(&svc, "memory.high", "800\n");
        w(&svc, "memory.current", "500\n");
        let cg = MemCgroup {
            dir: svc.clone(),
            mount: root.path().to_path_buf(),
            version: Version::V2,
        };
        let mut l = Limits::open(&cg);
        let rooms = l.read();
        let names: Vec<&str> = rooms.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["curio.service memory.high", "system.slice memory.max"]
        );
        let t = tightest(&rooms).unwrap();
        assert_eq!(
            (t.name.as_str(), t.room()),
            ("system.slice memory.max", 100)
        );
        w(&slice, "memory.current", "100\n");
        let rooms = l.read();
        assert_eq!(tightest(&rooms).unwrap().name, "curio.service memory.high");
        assert_eq!(l.used(1), Some(100));
        assert!(l.unreadable().is_empty());
    }
}
