//! A memory cgroup's accounting kept open and read at the rate each file changes: the caller
//! takes a full [`CgroupReading`] (breakdown, limits it is given, swap, counters) at the
//! kernel cadence, the event counters alone whenever they may have moved, and the interval
//! peak (v2, Linux 6.12+) at every sample.
//!
//! A file the cgroup lacks (swap accounting off, an older kernel) leaves its fields `None`;
//! [`CgroupReader::open`] lists those once. A cgroup removed while read shows as
//! [`CgroupReader::removed`].

use provetop_shared::record::{CgroupReading, MemEvents};

use super::accounting::{parse_events_v1, parse_events_v2, parse_stat};
use super::peak::PeakReset;
use super::{read_number, MemCgroup, Room, Version, V1_UNLIMITED};
use crate::procfile::KeptOpen;

/// The open files of one memory cgroup.
#[derive(Debug)]
pub struct CgroupReader {
    cg: MemCgroup,
    path: String,
    current: Option<KeptOpen>,
    stat: Option<KeptOpen>,
    events: Option<KeptOpen>,
    failcnt: Option<KeptOpen>,
    /// v1 `memory.memsw.failcnt`: where memory and swap share a limit, the charges that hit
    /// it count here, not in `memory.failcnt`.
    memsw_failcnt: Option<KeptOpen>,
    low: Option<KeptOpen>,
    min: Option<KeptOpen>,
    soft: Option<KeptOpen>,
    swap: Option<KeptOpen>,
    swap_max: Option<KeptOpen>,
    kmem: Option<KeptOpen>,
    peak: Option<PeakReset>,
    /// The highest interval peak taken since the last full reading.
    peak_since: Option<u64>,
}

impl CgroupReader {
    /// Open `cg`'s files. The second value names what is unavailable here, one line each
    /// (to be said once): missing files, and why the interval peak is unavailable.
    pub fn open(cg: &MemCgroup) -> (CgroupReader, Vec<String>) {
        let mut missing = Vec::new();
        let mut open = |f: &str, size: usize| match KeptOpen::open(cg.dir.join(f), size) {
            Ok(k) => Some(k),
            Err(e) => {
                missing.push(format!("{f} ({e})"));
                None
            }
        };
        let v2 = cg.version == Version::V2;
        let r = CgroupReader {
            cg: cg.clone(),
            path: cg.path(),
            current: open(cg.file("memory.current").unwrap_or_default(), 64),
            stat: open("memory.stat", 4096),
            events: open(cg.file("memory.events").unwrap_or_default(), 256),
            failcnt: if v2 { None } else { open("memory.failcnt", 64) },
            memsw_failcnt: if v2 {
                None
            } else {
                KeptOpen::open(cg.dir.join("memory.memsw.failcnt"), 64).ok()
            },
            low: if v2 { open("memory.low", 64) } else { None },
            min: if v2 { open("memory.min", 64) } else { None },
            soft: if v2 {
                None
            } else {
                open("memory.soft_limit_in_bytes", 64)
            },
            swap: open(
                if v2 {
                    "memory.swap.current"
                } else {
                    "memory.memsw.usage_in_bytes"
                },
                64,
            ),
            swap_max: open(
                if v2 {
                    "memory.swap.max"
                } else {
                    "memory.memsw.limit_in_bytes"
                },
                64,
            ),
            kmem: if v2 {
                None
            } else {
                open("memory.kmem.usage_in_bytes", 64)
            },
            peak: None,
            peak_since: None,
        };
        let mut unavailable = Vec::new();
        if !missing.is_empty() {
            unavailable.push(format!(
                "cgroup {}: cannot read {}: those readings are unavailable",
                r.path,
                missing.join(", ")
            ));
        }
        let mut r = r;
        match PeakReset::open(&cg.dir) {
            Ok(p) => r.peak = Some(p),
            Err(why) => unavailable.push(format!(
                "no interval peak from the kernel's memory.peak: {why}"
            )),
        }
        (r, unavailable)
    }

    /// The cgroup read.
    pub fn cgroup(&self) -> &MemCgroup {
        &self.cg
    }

    /// Its path in its hierarchy.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether its directory is gone (the cgroup was removed).
    pub fn removed(&self) -> bool {
        !self.cg.dir.is_dir()
    }

    /// Whether the kernel gives an interval peak here.
    pub fn has_peak(&self) -> bool {
        self.peak.is_some()
    }

    /// The usage, read now.
    pub fn current(&mut self) -> Option<u64> {
        read_number(&mut self.current)
    }

    /// The highest usage since the last call (and a reset of provetop's own watermark);
    /// `None` where unavailable or unreadable (then unavailable from here on).
    pub fn interval_peak(&mut self) -> Option<u64> {
        let v = self.peak.as_mut()?.take();
        match v {
            Ok(v) => {
                self.peak_since = Some(self.peak_since.map_or(v, |p| p.max(v)));
                Some(v)
            }
            Err(_) => {
                self.peak = None;
                None
            }
        }
    }

    /// The event counters, read now (v1: `failcnt` only when `failcnt`, it moves at every
    /// charge that hits the limit and matters only at the kernel cadence; it is
    /// `memory.failcnt` plus `memory.memsw.failcnt` where swap is accounted, as a charge
    /// fails on whichever limit it meets first).
    pub fn events(&mut self, failcnt: bool) -> Option<MemEvents> {
        // Read at every sample on v1: parsed where it lies, no copy.
        let f = if failcnt && self.cg.version == Version::V1 {
            let memsw = read_number(&mut self.memsw_failcnt).unwrap_or(0);
            read_number(&mut self.failcnt).map(|n| n + memsw)
        } else {
            None
        };
        let text = std::str::from_utf8(self.events.as_mut()?.read().ok()?).ok()?;
        Some(match self.cg.version {
            Version::V2 => parse_events_v2(text),
            Version::V1 => {
                let mut e = parse_events_v1(text, None);
                e.failcnt = f;
                e
            }
        })
    }

    /// A full reading; `rooms` are the chain's limits just read (the cgroup's own are member
    /// 0's) and `events` its counters just read.
    pub fn reading(&mut self, rooms: &[Room], events: Option<MemEvents>) -> CgroupReading {
        let v2 = self.cg.version == Version::V2;
        let own = |file: &str| {
            rooms
                .iter()
                .find(|r| r.member == 0 && r.file == file)
                .map(|r| r.limit)
        };
        let limit = |f: &mut Option<KeptOpen>| {
            read_number(f).filter(|&n| n > 0 && (v2 || n < V1_UNLIMITED))
        };
        let current = self.current();
        let stat = self
            .stat
            .as_mut()
            .and_then(|f| f.read().ok())
            .map(|t| parse_stat(&String::from_utf8_lossy(t), self.cg.version))
            .unwrap_or_default();
        let max = own(super::limits::max_file(self.cg.version));
        let (swap, swap_max, kernel) = if v2 {
            (
                read_number(&mut self.swap),
                limit(&mut self.swap_max),
                stat.kernel,
            )
        } else {
            // memsw counts memory and swap together.
            let memsw = read_number(&mut self.swap);
            let memsw_max = limit(&mut self.swap_max);
            (
                memsw.zip(current).map(|(s, c)| s.saturating_sub(c)),
                memsw_max.zip(max).map(|(s, m)| s.saturating_sub(m)),
                read_number(&mut self.kmem),
            )
        };
        let mut stat = stat;
        stat.kernel = kernel;
        CgroupReading {
            path: self.path.clone(),
            version: if v2 { 2 } else { 1 },
            current,
            peak: self.peak_since.take(),
            max,
            high: own("memory.high"),
            low: limit(&mut self.low),
            min: limit(&mut self.min),
            soft: limit(&mut self.soft),
            swap,
            swap_max,
            stat,
            events: events.unwrap_or_default(),
        }
    }
}
