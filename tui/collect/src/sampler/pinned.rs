//! Pinned host memory: the two threads that follow it.
//!
//! * `provetop-maps` reads the mapping table ([`maps`](super::maps)) of every process of the
//!   tree whose file or shmem pages moved (the sampler sees RssFile + RssShmem change in the
//!   status it reads every sample, and wakes it), after an smaps pass that taught it new
//!   estimates, and of
//!   every process every [`MAPS_FLOOR`] whatever happened. CUDA pinned host memory is always
//!   resident file or shmem pages, so between two reads the status file vouches for the last
//!   one: the pinned series stands at the sample rate, at a cost that grows with the number of
//!   mappings and not with the RSS, and anonymous memory coming and going (a prover's
//!   synthesis) costs no read at all. Its reads are spaced so they use at most [`MAPS_DUTY`] of
//!   a core, the floor excepted.
//! * `provetop-smaps` is the cross-check: a full smaps pass (it walks the page tables, about
//!   15 ms per GiB of RSS) measures every candidate mapping's Rss, which the mapping table's
//!   estimate learns from ([`Learned`](super::maps::Learned)), and compares the two on the
//!   same mappings: a disagreement beyond 2 % (and 1 MiB) is said in a note, and so is the
//!   agreement that ends it. A pass starts only once its [`SmapsBudget`] has earned what the
//!   pass will cost (the tree's RSS at the last pass's rate), so from the session's start it
//!   uses at most `smaps_duty` of a core, the first pass at a large RSS included; it never
//!   runs on a thread that keeps a schedule. While the tables show no candidate mapping in
//!   any process of the tree (a host without a GPU, a prover before CUDA starts) a pass would
//!   measure nothing, so none is made: the maps thread wakes it when one appears. When the
//!   table meets a device mapping it cannot classify (pagemap unreadable), one pass may borrow three quarters of its cost, so it
//!   comes four times sooner: the one pass that classifies it. A mapping that appears or
//!   vanishes between the smaps pass and the table read that follows it, or a process that
//!   exits meanwhile, makes that pass's comparison void (not a disagreement).
//!
//! What counts: the Rss of `/dev/nvidiactl`/`/dev/nvidiaN` mappings that hold host memory,
//! plus that of shared `/dev/zero` mappings in a process that has NVIDIA mappings (driver 580
//! puts large `cudaHostAlloc` allocations there, inside RssShmem); `/dev/nvidia-uvm` managed
//! memory is pageable and left out. The sampler adds VmLck (mlocked memory) less what smaps
//! found locked inside those mappings, so nothing counts twice.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use provetop_shared::units::fmt_bytes;

use super::maps::{parse_line, Kind, Learned, Mapping, MapsError, PidMaps, Reading};
use super::shared::{Candidates, PidPinned};
use super::{park_until, Shared, SMAPS_MIN_INTERVAL};
use crate::procfile::leading_u64;

/// Share of one core the mapping-table reads may use (the once-a-second floor excepted).
pub const MAPS_DUTY: f64 = 0.002;
/// Every process's table is read at least this often, whatever its status shows: the one
/// change the status cannot vouch against is pinned pages replaced by as many other file or
/// shmem pages between two samples.
pub const MAPS_FLOOR: Duration = Duration::from_secs(5);
/// A disagreement between the table and smaps is said beyond this share of the truth…
const CHECK_TOLERANCE: f64 = 0.02;
/// …and beyond this many bytes.
const CHECK_SLACK: u64 = 1 << 20;
/// While the smaps pass waits for its budget, it looks at the tree's RSS again this often.
const SMAPS_RECHECK: Duration = Duration::from_secs(10);
/// Before the first sample, it looks for the tree's RSS this often.
const SMAPS_UNSIZED_WAIT: Duration = Duration::from_millis(100);
/// Void comparisons in a row after which the missing cross-check is said.
const VOID_SAID: u32 = 3;

/// One smaps text's candidate mappings with their Rss and Locked (bytes), into `out`; returns
/// their summed Rss (the truth the table's estimate is checked against).
pub fn smaps_pinned(smaps: &[u8], out: &mut Vec<(Mapping, u64, u64)>) -> u64 {
    out.clear();
    let mut nvidia = false;
    let mut cur: Option<usize> = None;
    for line in smaps.split(|&b| b == b'\n') {
        if let Some(v) = line.strip_prefix(b"Rss:") {
            if let Some(i) = cur {
                out[i].1 = leading_u64(v) * 1024;
            }
        } else if let Some(v) = line.strip_prefix(b"Locked:") {
            if let Some(i) = cur {
                out[i].2 = leading_u64(v) * 1024;
            }
        } else if is_mapping_header(line) {
            cur = None;
            if let Some(m) = parse_line(line) {
                match m.kind {
                    Kind::Other => {}
                    Kind::Uvm => nvidia = true,
                    Kind::Device | Kind::SharedZero => {
                        nvidia |= m.kind == Kind::Device;
                        out.push((m, 0, 0));
                        cur = Some(out.len() - 1);
                    }
                }
            }
        }
    }
    if !nvidia {
        out.retain(|(m, _, _)| m.kind != Kind::SharedZero);
    }
    out.iter().map(|(_, rss, _)| rss).sum()
}

/// Pinned bytes of one smaps text (the Rss of its candidate mappings).
pub fn pinned_rss(smaps: &[u8]) -> u64 {
    smaps_pinned(smaps, &mut Vec::new())
}

/// Mapping lines look like `7f12a000-7f12b000 rw-s 00000000 00:05 123  /dev/nvidiactl`;
/// field lines like `Rss:   4 kB` (whose names may also start with hex letters).
fn is_mapping_header(line: &[u8]) -> bool {
    let first = line.split(|&b| b == b' ').next().unwrap_or(&[]);
    !first.is_empty()
        && !first.ends_with(b":")
        && first.contains(&b'-')
        && first.iter().all(|b| b.is_ascii_hexdigit() || *b == b'-')
}

/// Read `/proc/PID/smaps` into `buf` and sum its pinned Rss (`pinned_rss`).
pub fn read_pinned(pid: u32, buf: &mut Vec<u8>) -> io::Result<u64> {
    read_smaps(pid, buf)?;
    Ok(pinned_rss(buf))
}

fn read_smaps(pid: u32, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    File::open(format!("/proc/{pid}/smaps"))?.read_to_end(buf)?;
    Ok(())
}

/// What an smaps pass costs before anything was measured: about 15 ms per GiB of RSS (passes
/// at tens of GiB: docs/measurements.md#pinned-memory-from-the-mapping-table).
const SMAPS_NS_PER_BYTE: f64 = 15e6 / (1u64 << 30) as f64;

/// The smaps passes' budget. Credit is earned at `duty` of wall time and spent by each pass's
/// measured cost, and a pass starts only once the credit covers what it will cost (the RSS it
/// will walk at the last pass's rate per byte): from the session's start, passes never use
/// more than `duty` of a core, one long pass at a large RSS included. Resting *after* a pass
/// would let the first pass at a large RSS (the longest) come at once. Credit is kept no larger
/// than the next pass needs, so a long quiet stretch never buys a burst of passes.
#[derive(Debug, Clone)]
pub struct SmapsBudget {
    duty: f64,
    /// Seconds of pass time earned and not spent (negative after a borrowed pass).
    credit: f64,
    earned_to: Instant,
    ns_per_byte: f64,
    last_end: Option<Instant>,
}

impl SmapsBudget {
    pub fn new(duty: f64, now: Instant) -> Self {
        SmapsBudget {
            duty: duty.max(1e-6),
            credit: 0.0,
            earned_to: now,
            ns_per_byte: SMAPS_NS_PER_BYTE,
            last_end: None,
        }
    }

    /// What a pass over `rss` bytes is expected to cost.
    pub fn predict(&self, rss: u64) -> Duration {
        Duration::from_secs_f64(rss as f64 * self.ns_per_byte / 1e9)
    }

    /// How long until a pass over `rss` bytes may start (zero: now). `urgent` (a mapping
    /// waits to be classified) lets one pass borrow three quarters of its cost: that pass
    /// comes at four times the duty's pace, and the debt is paid before the next.
    pub fn wait(&mut self, now: Instant, rss: u64, urgent: bool) -> Duration {
        self.credit += self.duty * now.saturating_duration_since(self.earned_to).as_secs_f64();
        self.earned_to = self.earned_to.max(now);
        let need = self.predict(rss).as_secs_f64();
        self.credit = self.credit.min(need);
        let need = if urgent { need / 4.0 } else { need };
        let earn = Duration::from_secs_f64(((need - self.credit) / self.duty).max(0.0));
        let gap = self.last_end.map_or(Duration::ZERO, |t| {
            (t + SMAPS_MIN_INTERVAL).saturating_duration_since(now)
        });
        earn.max(gap)
    }

    /// A pass over `rss` bytes took `cost` and ended at `end`.
    pub fn spent(&mut self, cost: Duration, rss: u64, end: Instant) {
        self.credit -= cost.as_secs_f64();
        // The rate is learned from passes large enough to be dominated by the page walk.
        if rss >= 256 << 20 {
            self.ns_per_byte = cost.as_nanos() as f64 / rss as f64;
        }
        self.last_end = Some(end);
    }
}

/// The outcome of one cross-check of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Within tolerance.
    Agree { bytes: u64 },
    /// The table's estimate and smaps differ beyond tolerance.
    Disagree { table: u64, smaps: u64 },
    /// The mappings changed between the two reads, or the process went: no verdict.
    Void,
}

/// Compare the table's estimate with the smaps truth on the same mappings.
pub fn cross_check(
    table: &[Mapping],
    estimate: u64,
    smaps: &[(Mapping, u64, u64)],
    truth: u64,
) -> Check {
    // Uvm mappings are in the table's candidates but never in smaps' list: compare the rest.
    let same = table
        .iter()
        .filter(|m| matches!(m.kind, Kind::Device | Kind::SharedZero))
        .map(|m| (m.start, m.end))
        .eq(smaps.iter().map(|(m, _, _)| (m.start, m.end)));
    if !same {
        return Check::Void;
    }
    let diff = estimate.abs_diff(truth);
    if diff > CHECK_SLACK && diff as f64 > CHECK_TOLERANCE * truth as f64 {
        Check::Disagree {
            table: estimate,
            smaps: truth,
        }
    } else {
        Check::Agree { bytes: truth }
    }
}

/// The `provetop-smaps` thread: once its [`SmapsBudget`] covers a pass over the tree's RSS,
/// a full smaps pass over the tree, each process's estimate checked against it.
pub(super) fn smaps_loop(s: &Shared, duty: f64) {
    let mut budget = SmapsBudget::new(duty, Instant::now());
    let mut buf = Vec::with_capacity(1 << 20);
    let mut found = Vec::new();
    let mut gen = 0;
    let mut tables: HashMap<u32, PidMaps> = HashMap::new();
    let mut learned: HashMap<u32, Learned> = HashMap::new();
    let mut disagreeing: HashMap<u32, bool> = HashMap::new();
    let mut unreadable: Vec<u32> = Vec::new();
    // Passes in a row whose comparison was void, per process (said once at VOID_SAID).
    let mut voids: HashMap<u32, u32> = HashMap::new();
    loop {
        let Some(rss) = wait_for_budget(s, &mut budget) else {
            return;
        };
        let (g, pids) = s.tree_snapshot();
        if g != gen {
            gen = g;
            tables.clear();
            learned.clear();
            disagreeing.clear();
            unreadable.clear();
            voids.clear();
        }
        tables.retain(|p, _| pids.contains(p));
        learned.retain(|p, _| pids.contains(p));
        let mut taught: Vec<u32> = Vec::new();
        let t0 = Instant::now();
        for &pid in &pids {
            if let Err(e) = read_smaps(pid, &mut buf) {
                if !gone(&e) && !unreadable.contains(&pid) {
                    unreadable.push(pid);
                    s.note(format!(
                        "pinned memory of pid {pid} is not cross-checked: /proc/{pid}/smaps: {e}"
                    ));
                }
                continue;
            }
            let truth = smaps_pinned(&buf, &mut found);
            let l = learned.entry(pid).or_default();
            let table = match tables.entry(pid) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => match PidMaps::open(pid) {
                    Ok(t) => v.insert(t),
                    Err(_) => continue,
                },
            };
            // The table read right after the pass; a process gone meanwhile (its smaps may
            // have been cut short) teaches nothing.
            let check = match table.read(Some(l)) {
                Ok(r) => cross_check(table.candidates(), r.pinned, &found, truth),
                Err(MapsError::Gone) => continue,
                Err(_) => Check::Void,
            };
            let before = l.clone();
            l.update(&found);
            if *l != before {
                taught.push(pid);
            }
            let v = voids.entry(pid).or_default();
            if check == Check::Void {
                *v += 1;
                if *v == VOID_SAID {
                    s.note(format!(
                        "pinned memory of pid {pid} is not cross-checked: the mapping table and smaps listed different mappings {VOID_SAID} passes in a row"
                    ));
                }
            } else {
                *v = 0;
            }
            let was = disagreeing.get(&pid).copied().unwrap_or(false);
            match check {
                Check::Disagree { table, smaps } if !was => {
                    disagreeing.insert(pid, true);
                    s.note(format!(
                        "pinned memory of pid {pid}: the mapping table says {}, smaps {} (cross-check)",
                        fmt_bytes(table),
                        fmt_bytes(smaps)
                    ));
                }
                Check::Agree { bytes } if was => {
                    disagreeing.insert(pid, false);
                    s.note(format!(
                        "pinned memory of pid {pid}: the mapping table and smaps agree again ({})",
                        fmt_bytes(bytes)
                    ));
                }
                _ => {}
            }
            let mut ls = s.learned.lock().unwrap_or_else(|e| e.into_inner());
            if ls.gen != gen {
                ls.gen = gen;
                ls.pids.clear();
            }
            ls.pids.insert(pid, Arc::new(l.clone()));
        }
        // The table's estimates learned from this pass: read them again with it.
        if !taught.is_empty() {
            s.mark_maps(&taught);
        }
        let end = Instant::now();
        s.smaps_passes.fetch_add(1, Ordering::Relaxed);
        budget.spent(end - t0, rss, end);
        // A big read buffer is only needed while the target is big.
        if buf.capacity() > 64 << 20 {
            buf = Vec::with_capacity(1 << 20);
        }
    }
}

/// Wait until `budget` covers a pass over the tree's RSS, looking again as the RSS moves and
/// when a mapping waits to be classified; returns that RSS (`None`: stop).
fn wait_for_budget(s: &Shared, budget: &mut SmapsBudget) -> Option<u64> {
    loop {
        if s.stop.load(Ordering::Acquire) {
            return None;
        }
        let now = Instant::now();
        let rss = s.tree_rss.load(Ordering::Acquire);
        if rss == u64::MAX {
            // No sample yet: the size of the first pass is not known.
            park_until(now + SMAPS_UNSIZED_WAIT);
            continue;
        }
        let urgent = s.smaps_urgent.load(Ordering::Acquire);
        // A tree without CUDA mappings has nothing to measure: wait for the tables to show
        // one (the maps thread wakes this one then), the budget earning meanwhile.
        if s.no_candidates() && !urgent {
            park_until(now + SMAPS_RECHECK);
            continue;
        }
        let wait = budget.wait(now, rss, urgent);
        if wait.is_zero() {
            s.smaps_urgent.store(false, Ordering::Release);
            return Some(rss);
        }
        park_until(now + wait.min(SMAPS_RECHECK));
    }
}

fn gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(nix::errno::Errno::ESRCH as i32)
}

/// The `provetop-maps` thread: read the table of every process the sampler marked (its file
/// or shmem pages moved) or the smaps pass taught, and of all of them every [`MAPS_FLOOR`];
/// publish each process's reading, timed from when it began.
pub(super) fn maps_loop(s: &Shared, hz: f64) {
    let min_gap = Duration::from_secs_f64(1.0 / hz);
    let mut tables: HashMap<u32, PidMaps> = HashMap::new();
    let mut noted: HashMap<u32, String> = HashMap::new();
    let mut gen = 0;
    let mut last_full: Option<Instant> = None;
    let mut next_allowed = Instant::now();
    let mut todo: Vec<u32> = Vec::new();
    let mut results: Vec<(u32, Option<Reading>, Instant)> = Vec::new();
    loop {
        // Wait for a marked process or the floor, never sooner than the duty allows.
        loop {
            if s.stop.load(Ordering::Acquire) {
                return;
            }
            let now = Instant::now();
            let due = last_full.map_or(now, |t| t + MAPS_FLOOR);
            let dirty = !s
                .maps_dirty
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty();
            if now >= next_allowed && (now >= due || dirty) {
                break;
            }
            park_until(if now < next_allowed {
                next_allowed
            } else {
                due
            });
        }
        let t0 = Instant::now();
        let (g, pids) = s.tree_snapshot();
        if g != gen {
            gen = g;
            tables.clear();
            noted.clear();
        }
        let full = last_full.is_none_or(|t| t0 >= t + MAPS_FLOOR);
        todo.clear();
        {
            let mut d = s.maps_dirty.lock().unwrap_or_else(|e| e.into_inner());
            if full {
                d.clear();
                todo.extend_from_slice(&pids);
            } else {
                todo.extend(d.drain(..).filter(|p| pids.contains(p)));
                todo.sort_unstable();
                todo.dedup();
            }
        }
        if full {
            last_full = Some(t0);
            tables.retain(|p, _| pids.contains(p));
        }
        let learned: Vec<Option<Arc<Learned>>> = {
            let ls = s.learned.lock().unwrap_or_else(|e| e.into_inner());
            todo.iter()
                .map(|p| (ls.gen == gen).then(|| ls.pids.get(p).cloned()).flatten())
                .collect()
        };
        results.clear();
        let mut gone_pids: Vec<u32> = Vec::new();
        for (&pid, l) in todo.iter().zip(&learned) {
            // A reading answers what was asked before it began.
            let began = Instant::now();
            let table = match tables.entry(pid) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => match PidMaps::open(pid) {
                    Ok(t) => v.insert(t),
                    Err(e) if gone(&e) => {
                        gone_pids.push(pid);
                        continue;
                    }
                    Err(e) => {
                        unknown(s, &mut noted, pid, &format!("/proc/{pid}/maps: {e}"));
                        results.push((pid, None, began));
                        continue;
                    }
                },
            };
            match table.read(l.as_deref()) {
                Ok(r) => {
                    noted.remove(&pid);
                    results.push((pid, Some(r), began));
                }
                Err(MapsError::Gone) => {
                    tables.remove(&pid);
                    gone_pids.push(pid);
                }
                Err(e) => {
                    if matches!(e, MapsError::Unclassified { .. }) {
                        s.smaps_urgent.store(true, Ordering::Release);
                        if let Some(t) = &*s.smaps_thread.lock().unwrap_or_else(|e| e.into_inner())
                        {
                            t.unpark();
                        }
                    }
                    unknown(s, &mut noted, pid, &e.to_string());
                    results.push((pid, None, began));
                }
            }
        }
        {
            let mut st = s.pinned.lock().unwrap_or_else(|e| e.into_inner());
            if st.gen != gen {
                st.gen = gen;
                st.pids.clear();
            }
            for &(pid, reading, at) in &results {
                st.pids.insert(pid, PidPinned { reading, at });
            }
            for pid in &gone_pids {
                st.pids.remove(pid);
            }
            if full {
                st.pids.retain(|p, _| pids.contains(p));
            }
        }
        s.set_candidates(candidates_in(&tables, &pids, &noted));
        let cost = t0.elapsed();
        let space = Duration::from_secs_f64(cost.as_secs_f64() / MAPS_DUTY)
            .max(min_gap)
            .min(MAPS_FLOOR);
        next_allowed = t0 + space;
    }
}

/// What the tables read so far say of the tree `pids`: some process has a candidate
/// mapping, or every process's table was read (and none is unknown, `noted`) without one.
fn candidates_in(
    tables: &HashMap<u32, PidMaps>,
    pids: &[u32],
    noted: &HashMap<u32, String>,
) -> Candidates {
    if tables.values().any(|t| !t.candidates().is_empty()) {
        Candidates::Some
    } else if noted.is_empty() && pids.iter().all(|p| tables.contains_key(p)) {
        Candidates::None
    } else {
        Candidates::Unknown
    }
}

/// Say once (per reason) why a process's pinned memory is unknown.
fn unknown(s: &Shared, noted: &mut HashMap<u32, String>, pid: u32, why: &str) {
    if noted.get(&pid).map(String::as_str) != Some(why) {
        noted.insert(pid, why.to_string());
        s.note(format!("pinned memory of pid {pid} is unknown: {why}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &[u8] = b"\
55d0c0000000-55d0c0021000 r--p 00000000 08:01 123   /usr/bin/x
Rss:                 100 kB
AnonHugePages:         0 kB
7f0000000000-7f0000400000 rw-s 00000000 00:05 999   /dev/nvidiactl
Size:               4096 kB
Rss:                4096 kB
Pss:                4096 kB
VmFlags: rd wr sh mr mw me ms
7f1000000000-7f1000100000 rw-s 00000000 00:05 998   /dev/nvidia0
Rss:                1024 kB
7f2000000000-7f2000100000 rw-p 00000000 00:00 0 
Rss:                 512 kB
7f3000000000-7f3000100000 rw-s 00000000 00:05 1   /dev/shm/x (deleted)
Rss:                 256 kB
";

    #[test]
    fn sums_only_nvidia_mappings() {
        let mut found = Vec::new();
        assert_eq!(smaps_pinned(SMAPS, &mut found), (4096 + 1024) * 1024);
        assert_eq!(found.len(), 2);
        assert_eq!(pinned_rss(SMAPS), (4096 + 1024) * 1024);
    }

    // Lines from a SupraSeal prover on the H200 (driver 580.159.04): its 35,012,608-byte pinned
    // SRS is the first /dev/zero mapping; the prover reported exactly that many bytes.
    const SUPRASEAL: &[u8] = b"\
200800000-204000000 rw-s 00000000 00:06 5   /dev/nvidiactl
Rss:               57344 kB
VmFlags: rd wr sh mr mw me ms de dd mm
7f70e4000000-7f70e6164000 rw-s 00000000 00:01 1040   /dev/zero
Rss:               34192 kB
VmFlags: rd wr sh mr mw me ms
7f70e6800000-7f70e7041000 rw-s 00000000 00:01 1041   /dev/zero (deleted)
Rss:                8452 kB
7f70a0000000-7f70a1507000 rw-p 00000000 00:00 0 
Rss:               20088 kB
7f70f0000000-7f70f0100000 rw-p 00000000 00:01 1042   /dev/zero
Rss:                1024 kB
";

    #[test]
    fn shared_anonymous_mappings_of_a_cuda_process_are_pinned() {
        assert_eq!(pinned_rss(SUPRASEAL), (57344 + 34192 + 8452) * 1024);
        // Without NVIDIA mappings shared anonymous memory is somebody else's.
        let no_cuda: Vec<u8> = SUPRASEAL
            .split(|&b| b == b'\n')
            .skip(3)
            .flat_map(|l| l.iter().copied().chain([b'\n']))
            .collect();
        assert_eq!(pinned_rss(&no_cuda), 0);
    }

    #[test]
    fn field_names_with_hex_letters_are_not_headers() {
        assert!(!is_mapping_header(b"AnonHugePages:         0 kB"));
        assert!(!is_mapping_header(b"FilePmdMapped:         0 kB"));
        assert!(is_mapping_header(
            b"7f2000000000-7f2000100000 rw-p 00000000 00:00 0 "
        ));
    }

    #[test]
    fn own_smaps_reads() {
        let mut buf = Vec::new();
        assert_eq!(read_pinned(std::process::id(), &mut buf).unwrap(), 0);
        assert!(!buf.is_empty());
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_first_pass_waits_until_its_predicted_cost_is_earned() {
        let t0 = Instant::now();
        let mut b = SmapsBudget::new(0.01, t0);
        // 1 GiB at 15 ms/GiB is 15 ms of pass: 1.5 s of wall time at 1 %.
        let w = b.wait(t0, GIB, false);
        assert!((w.as_secs_f64() - 1.5).abs() < 1e-6, "{w:?}");
        assert_eq!(b.wait(t0 + w, GIB, false), Duration::ZERO);
    }

    #[test]
    fn a_one_second_pass_at_61_gib_is_paid_for_before_the_next_starts() {
        let t0 = Instant::now();
        let mut b = SmapsBudget::new(0.001, t0);
        let rss = 61 * GIB;
        let first = b.wait(t0, rss, false);
        // 61 GiB × 15 ms/GiB = 0.915 s of pass, at 0.1 %: 915 s before it may start.
        assert!((first.as_secs_f64() - 915.0).abs() < 1e-3, "{first:?}");
        let start = t0 + first;
        assert_eq!(b.wait(start, rss, false), Duration::ZERO);
        // It took a full second: the rate is learned, and the next waits until the overrun
        // (85 ms) and its own second are earned (the pass's own second earned 1 ms).
        let end = start + Duration::from_secs(1);
        b.spent(Duration::from_secs(1), rss, end);
        assert_eq!(b.predict(rss), Duration::from_secs(1));
        let next = b.wait(end, rss, false);
        assert!((next.as_secs_f64() - 1084.0).abs() < 1e-3, "{next:?}");
    }

    #[test]
    fn a_long_quiet_stretch_buys_no_burst_of_passes() {
        let t0 = Instant::now();
        let mut b = SmapsBudget::new(0.01, t0);
        // An hour at a small RSS earns 36 s of credit, but the credit is capped at one pass.
        let later = t0 + Duration::from_secs(3600);
        assert_eq!(b.wait(later, GIB, false), Duration::ZERO);
        let cost = b.predict(GIB);
        b.spent(cost, GIB, later + cost);
        // The next waits for its whole cost to be earned from the first's start: 1.5 s at 1 %.
        let w = b.wait(later + cost + SMAPS_MIN_INTERVAL, GIB, false);
        let gap = (cost + SMAPS_MIN_INTERVAL + w).as_secs_f64();
        assert!((gap - 1.5).abs() < 1e-6, "next {gap} s after the first");
    }

    #[test]
    fn an_urgent_pass_borrows_and_the_debt_is_repaid_before_the_next() {
        let t0 = Instant::now();
        let mut b = SmapsBudget::new(0.01, t0);
        let urgent = b.wait(t0, 4 * GIB, true);
        let calm = SmapsBudget::new(0.01, t0).wait(t0, 4 * GIB, false);
        assert!((urgent.as_secs_f64() * 4.0 - calm.as_secs_f64()).abs() < 1e-6);
        let start = t0 + urgent;
        assert_eq!(b.wait(start, 4 * GIB, true), Duration::ZERO);
        let cost = b.predict(4 * GIB);
        b.spent(cost, 4 * GIB, start + cost);
        // The next pass, calm, waits for the whole debt plus its own cost: in all, both passes
        // keep to the duty from the start.
        let next = b.wait(start + cost, 4 * GIB, false);
        let total = (start + cost + next).duration_since(t0).as_secs_f64();
        assert!(
            total * 0.01 >= 2.0 * cost.as_secs_f64() - 1e-6,
            "{total} s for two passes"
        );
    }

    #[test]
    fn passes_never_come_closer_than_the_minimum_interval() {
        let t0 = Instant::now();
        let mut b = SmapsBudget::new(1.0, t0);
        let start = t0 + b.wait(t0, 1 << 20, false);
        assert_eq!(b.wait(start, 1 << 20, false), Duration::ZERO);
        b.spent(Duration::from_micros(50), 1 << 20, start);
        // At full duty the credit is there long before the interval is over.
        assert_eq!(b.wait(start, 1 << 20, false), SMAPS_MIN_INTERVAL);
    }

    #[test]
    fn small_passes_do_not_teach_the_rate() {
        let t0 = Instant::now();
        let mut b = SmapsBudget::new(0.01, t0);
        // A 5 ms pass over 1 MiB is the read's fixed cost, not 5 s/GiB.
        b.spent(Duration::from_millis(5), 1 << 20, t0);
        assert_eq!(b.predict(GIB), SmapsBudget::new(0.01, t0).predict(GIB));
    }
}
