//! CUDA pinned host memory from the mapping table (`/proc/PID/maps`): at the sample rate, at a
//! cost that grows with the number of mappings and not with the RSS.
//!
//! Pinned host memory is resident by construction (the driver pins every page when it
//! allocates), so a mapping that holds it counts with its whole size, and the mapping table,
//! which the kernel prints without walking a single page table, says which mappings there
//! are. The mappings that can hold it:
//!
//! * shared mappings of `/dev/zero` (`rw-s … /dev/zero`): what `cudaHostAlloc` creates for a
//!   large allocation on driver 580 (SupraSeal's SRS: docs/gpu.md#supraseal-srs-residency),
//!   counted only in a process
//!   that has NVIDIA mappings at all (elsewhere shared anonymous memory is not CUDA's);
//! * mappings of `/dev/nvidiactl` and `/dev/nvidiaN`: small pinned allocations and the
//!   driver's own host buffers, but also device memory and MMIO (registers, BAR windows) that
//!   occupy no host memory at all. Which one a mapping is, is told once per mapping from its
//!   first page in `/proc/PID/pagemap` (one 8-byte read: host pages are present, MMIO pages
//!   are not);
//! * `/dev/nvidia-uvm` mappings are managed (pageable) memory and never counted.
//!
//! A full smaps pass (`pinned.rs`, under its duty budget) measures every such mapping's Rss:
//! a mapping it found resident to a different extent twice in a row, or whose first page could
//! not be probed, takes the measured value ([`Learned`]). A reading never guesses: a mapping
//! whose kind is not known yet makes the process's reading unknown, and a process that is gone
//! reads as [`MapsError::Gone`].

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::procfile::KeptOpenLong;

/// What a mapping can hold, from its path and permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `/dev/nvidiactl` or `/dev/nvidiaN`: host memory or device memory/MMIO.
    Device,
    /// `/dev/nvidia-uvm*`: managed memory (pageable, not pinned).
    Uvm,
    /// A shared `/dev/zero` mapping (pinned in a CUDA process).
    SharedZero,
    /// Anything else (never pinned by CUDA).
    Other,
}

/// One mapping of the table that may hold CUDA memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub kind: Kind,
}

impl Mapping {
    /// Bytes it spans.
    pub fn size(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    fn key(&self) -> (u64, u64) {
        (self.start, self.end)
    }
}

/// A mapping header line (`7f12a000-7f12b000 rw-s 00000000 00:05 123   /dev/nvidiactl`, as in
/// maps and smaps): its range and kind. `None` for a line that is not one (smaps field lines,
/// a line cut short).
pub fn parse_line(line: &[u8]) -> Option<Mapping> {
    let dash = line.iter().position(|&b| b == b'-')?;
    let sp = line.iter().position(|&b| b == b' ')?;
    if dash == 0 || dash > sp {
        return None;
    }
    let start = hex(&line[..dash])?;
    let end = hex(&line[dash + 1..sp])?;
    let rest = &line[sp + 1..];
    let perms = rest.get(..4)?;
    let kind = match path(rest) {
        Some(p) if p.starts_with(b"/dev/nvidia-uvm") => Kind::Uvm,
        Some(p) if p.starts_with(b"/dev/nvidia") => Kind::Device,
        Some(p) if (p == b"/dev/zero" || p == b"/dev/zero (deleted)") && perms[3] == b's' => {
            Kind::SharedZero
        }
        _ => Kind::Other,
    };
    Some(Mapping { start, end, kind })
}

fn hex(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    s.iter().try_fold(0u64, |n, &b| {
        let d = (b as char).to_digit(16)?;
        Some(n << 4 | u64::from(d))
    })
}

/// The path field (the 5th after the range), if any. `rest` starts at the permissions.
fn path(rest: &[u8]) -> Option<&[u8]> {
    let mut r = rest;
    // permissions, offset, device, inode: four fields, each followed by spaces.
    for _ in 0..4 {
        let sp = r.iter().position(|&b| b == b' ')?;
        r = &r[sp..];
        let next = r.iter().position(|&b| b != b' ')?;
        r = &r[next..];
    }
    (!r.is_empty()).then_some(r)
}

/// The mappings of a maps (or smaps) text that may hold CUDA memory, into `out`; whether the
/// process has any NVIDIA mapping (without one, shared `/dev/zero` is not CUDA's and is left
/// out). Lines without `/dev/` are skipped after one search.
pub fn candidates(text: &[u8], out: &mut Vec<Mapping>) -> bool {
    out.clear();
    let mut nvidia = false;
    let finder = memchr::memmem::Finder::new(b" /dev/");
    for line in text.split(|&b| b == b'\n') {
        if finder.find(line).is_none() {
            continue;
        }
        if let Some(m) = parse_line(line) {
            match m.kind {
                Kind::Other => {}
                Kind::Device | Kind::Uvm => {
                    nvidia = true;
                    out.push(m);
                }
                Kind::SharedZero => out.push(m),
            }
        }
    }
    if !nvidia {
        out.retain(|m| m.kind != Kind::SharedZero);
    }
    nvidia
}

/// What the last smaps passes measured of one mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    /// Rss, bytes.
    pub rss: u64,
    /// Locked (mlocked), bytes: also in VmLck, so not counted twice.
    pub locked: u64,
    /// The pass before measured the same Rss (the mapping was not being filled meanwhile).
    pub stable: bool,
}

/// What the smaps passes measured of one process's candidate mappings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Learned {
    pub maps: HashMap<(u64, u64), Measured>,
}

impl Learned {
    /// Fold in one pass's measurements (mappings gone since are forgotten).
    pub fn update(&mut self, pass: &[(Mapping, u64, u64)]) {
        let mut next = HashMap::with_capacity(pass.len());
        for &(m, rss, locked) in pass {
            let stable = self.maps.get(&m.key()).is_some_and(|old| old.rss == rss);
            next.insert(
                m.key(),
                Measured {
                    rss,
                    locked,
                    stable,
                },
            );
        }
        self.maps = next;
    }
}

/// One process's pinned memory as its mapping table shows it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// CUDA pinned host memory, bytes.
    pub pinned: u64,
    /// Of it, what smaps found mlocked too (subtract from VmLck so nothing counts twice).
    pub locked_overlap: u64,
    /// Mappings in the table.
    pub mappings: u32,
}

/// Why a process has no reading.
#[derive(Debug)]
pub enum MapsError {
    /// The process is gone (exited, or its address space is being torn down).
    Gone,
    /// A mapping's kind is not known yet: its first page could not be probed and no smaps
    /// pass has measured it.
    Unclassified { mappings: u32 },
    /// The mapping table cannot be read (permission, …).
    Io(io::Error),
}

impl std::fmt::Display for MapsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MapsError::Gone => write!(f, "the process is gone"),
            MapsError::Unclassified { mappings } => write!(
                f,
                "{mappings} NVIDIA mapping(s) not classified yet (pagemap unreadable, no smaps pass yet)"
            ),
            MapsError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Follows one process's mapping table (kept open: it also pins the process's identity).
pub struct PidMaps {
    pid: u32,
    maps: KeptOpenLong,
    pagemap: Option<io::Result<File>>,
    page: u64,
    /// Device-file mappings probed: whether each holds host memory (None: probe failed).
    probed: HashMap<(u64, u64), Option<bool>>,
    cands: Vec<Mapping>,
}

impl PidMaps {
    /// Open `pid`'s mapping table.
    pub fn open(pid: u32) -> io::Result<PidMaps> {
        Ok(PidMaps {
            pid,
            maps: KeptOpenLong::open(format!("/proc/{pid}/maps"))?,
            pagemap: None,
            page: page_size(),
            probed: HashMap::new(),
            cands: Vec::new(),
        })
    }

    /// The candidate mappings of the last table read.
    pub fn candidates(&self) -> &[Mapping] {
        &self.cands
    }

    /// Read the table and estimate the pinned memory; `learned` is what smaps measured.
    pub fn read(&mut self, learned: Option<&Learned>) -> Result<Reading, MapsError> {
        let text = match self.maps.read() {
            Ok(t) => t,
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ESRCH as i32) => {
                return Err(MapsError::Gone)
            }
            Err(e) => return Err(MapsError::Io(e)),
        };
        // Every live process maps something (its own program); an empty table is one whose
        // address space is already gone.
        if text.is_empty() {
            return Err(MapsError::Gone);
        }
        let mappings = memchr::memchr_iter(b'\n', text).count() as u32;
        let mut cands = std::mem::take(&mut self.cands);
        candidates(text, &mut cands);
        let r = self.estimate(&cands, learned, mappings);
        // Probes of mappings gone from the table are forgotten (an address range can be
        // mapped again by something else).
        if self.probed.len() > cands.len() {
            self.probed
                .retain(|k, _| cands.iter().any(|m| m.key() == *k));
        }
        self.cands = cands;
        r
    }

    fn estimate(
        &mut self,
        cands: &[Mapping],
        learned: Option<&Learned>,
        mappings: u32,
    ) -> Result<Reading, MapsError> {
        let (pinned, locked_overlap) = estimate(cands, learned, |m| self.probe(m))
            .map_err(|n| MapsError::Unclassified { mappings: n })?;
        Ok(Reading {
            pinned,
            locked_overlap,
            mappings,
        })
    }

    /// Whether a device-file mapping holds host memory: its first page is present in
    /// pagemap (bit 63). Probed once per mapping.
    fn probe(&mut self, m: &Mapping) -> Option<bool> {
        if let Some(&known) = self.probed.get(&m.key()) {
            return known;
        }
        let pid = self.pid;
        let file = self
            .pagemap
            .get_or_insert_with(|| File::open(format!("/proc/{pid}/pagemap")));
        let known = match file {
            Ok(f) => {
                let mut entry = [0u8; 8];
                match f.read_exact_at(&mut entry, m.start / self.page * 8) {
                    Ok(()) => Some(u64::from_le_bytes(entry) >> 63 == 1),
                    Err(_) => None,
                }
            }
            Err(_) => None,
        };
        self.probed.insert(m.key(), known);
        known
    }
}

/// The pinned bytes of `cands` and, of them, what smaps found mlocked: shared `/dev/zero` by
/// its size, a device-file mapping by its size when `probe` finds its first page present (host
/// memory) and not at all when it does not (device memory, MMIO), managed memory never; a
/// mapping that two smaps passes in a row measured alike takes the measured Rss, as does one
/// that cannot be probed. `Err(n)`: `n` mappings could neither be probed nor were measured.
pub fn estimate(
    cands: &[Mapping],
    learned: Option<&Learned>,
    mut probe: impl FnMut(&Mapping) -> Option<bool>,
) -> Result<(u64, u64), u32> {
    let (mut pinned, mut overlap) = (0u64, 0u64);
    let mut unclassified = 0u32;
    for m in cands {
        let measured = learned.and_then(|l| l.maps.get(&m.key()));
        if let Some(x) = measured {
            overlap += x.locked.min(x.rss);
        }
        pinned += match m.kind {
            Kind::Uvm | Kind::Other => 0,
            Kind::SharedZero => match measured {
                Some(x) if x.stable => x.rss,
                _ => m.size(),
            },
            Kind::Device => match measured {
                Some(x) if x.stable => x.rss,
                _ => match (probe(m), measured) {
                    (Some(true), _) => m.size(),
                    (Some(false), _) => 0,
                    (None, Some(x)) => x.rss,
                    (None, None) => {
                        unclassified += 1;
                        0
                    }
                },
            },
        };
    }
    if unclassified > 0 {
        return Err(unclassified);
    }
    Ok((pinned, overlap))
}

fn page_size() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .map_or(4096, |p| p as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn a_header_line_gives_its_range_and_kind() {
        let m =
            parse_line(b"7f70e4000000-7f70e6164000 rw-s 00000000 00:01 1040   /dev/zero").unwrap();
        assert_eq!(
            (m.start, m.end, m.kind),
            (0x7f70e4000000, 0x7f70e6164000, Kind::SharedZero)
        );
        let private = parse_line(b"7f70f0000000-7f70f0100000 rw-p 00000000 00:01 1042   /dev/zero");
        assert_eq!(private.unwrap().kind, Kind::Other);
        let ctl = parse_line(b"200800000-204000000 rw-s 00000000 00:06 5   /dev/nvidiactl");
        assert_eq!(ctl.unwrap().kind, Kind::Device);
        let uvm = parse_line(b"205000000-305000000 rw-s 00000000 00:06 7   /dev/nvidia-uvm");
        assert_eq!(uvm.unwrap().kind, Kind::Uvm);
        assert_eq!(
            parse_line(b"7f2000000000-7f2000100000 rw-p 00000000 00:00 0 ")
                .unwrap()
                .kind,
            Kind::Other
        );
        assert_eq!(parse_line(b"AnonHugePages:         0 kB"), None);
        assert_eq!(parse_line(b"7f2000000000-7f20"), None);
    }

    #[test]
    fn shared_dev_zero_counts_only_beside_an_nvidia_mapping() {
        let mut out = Vec::new();
        let text = b"7f70e4000000-7f70e6164000 rw-s 00000000 00:01 1040   /dev/zero\n";
        assert!(!candidates(text, &mut out));
        assert!(out.is_empty());
        let mut cuda = b"200800000-204000000 rw-s 00000000 00:06 5   /dev/nvidiactl\n".to_vec();
        cuda.extend_from_slice(text);
        assert!(candidates(&cuda, &mut out));
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn learned_rss_is_stable_only_when_two_passes_agree() {
        let m = Mapping {
            start: 0,
            end: GIB,
            kind: Kind::SharedZero,
        };
        let mut l = Learned::default();
        l.update(&[(m, GIB / 2, 0)]);
        assert!(!l.maps[&(0, GIB)].stable);
        l.update(&[(m, GIB / 2, 0)]);
        assert!(l.maps[&(0, GIB)].stable);
        l.update(&[(m, GIB, 0)]);
        assert!(!l.maps[&(0, GIB)].stable);
        l.update(&[]);
        assert!(l.maps.is_empty());
    }

    #[test]
    fn hex_ranges_longer_than_64_bits_are_refused() {
        assert_eq!(hex(b"ffffffffffffffff"), Some(u64::MAX));
        assert_eq!(hex(b"10000000000000000"), None);
        assert_eq!(hex(b"12g4"), None);
    }
}
