//! The usage reading: where the tree's cores, threads, faults and storage I/O go, per process
//! and for the tree, and the host's load, as one [`Usage`] record at `usage_hz`.
//!
//! It runs inside the sampler's tick (every tick whose usage deadline has passed), after the
//! status files were read, and takes from that tick what it already has: each process's
//! memory parts, parent, thread count and main-thread context switches (status), its pinned
//! memory (the maps thread's latest reading), its GPU memory (the GPU thread's latest). It
//! reads per process `stat` (CPU time, major faults), `io` and `comm`, kept open, plus the
//! `schedstat` (or, without it, the `status`) of each thread other than the main one (the
//! kernel counts context switches per thread: the process's own status file shows the main
//! thread's only).
//!
//! Contract:
//! * Rates are the change since the previous reading of the same pid over the interval
//!   between the two readings; a pid first seen has no rates (`None`) in that reading, and
//!   the tree's rates are the sums over the processes that have them (`None` when none
//!   has). CPU a process used in the interval it first appears in, or after the last reading
//!   before it exits, is not counted.
//! * A process whose `/proc/PID/io` cannot be read (another user's) has `None` I/O rates and
//!   makes the tree's `None`: an unknown is never shown as zero.
//! * A process that exits between the status read and these reads drops out of the reading.
//! * Threads that exit between two readings take their last interval's context switches
//!   with them; threads born in the interval count all of theirs. A process of several
//!   threads has its threads' switches read at most every [`CTX_PERIOD`] (their cost follows
//!   the thread count: on a 70-thread prover they were most of a reading), its rate over
//!   that longer interval carried by the readings between; `task/` is listed again only when
//!   the thread count moved or a followed thread stopped answering.

use std::collections::HashMap;
use std::fs;

use provetop_shared::record::{GpuDetail, ProcUsage, Usage};

use super::hoststat::HostStat;
use super::procstat::{Io, ProcFiles};
use crate::procfile::KeptOpen;
use crate::procstatus::{parse_status, MemStatus};

/// Longest a multi-threaded process's context-switch rate is carried before its threads are
/// read again.
pub const CTX_PERIOD: std::time::Duration = std::time::Duration::from_secs(2);

/// What the tick already knows of one process of the tree.
#[derive(Debug, Clone, Copy)]
pub struct TickProc {
    pub pid: u32,
    pub status: MemStatus,
    /// Its pinned host memory (`None`: unknown or stale).
    pub pinned: Option<u64>,
}

/// Counters of one process at one reading.
#[derive(Debug, Clone, Copy)]
struct Counters {
    cpu_ticks: u64,
    majflt: u64,
    io: Option<Io>,
}

/// One followed thread other than the main one: its count's file and its last count (a thread
/// born since the previous reading starts from 0: all its switches are in the interval).
#[derive(Debug)]
struct Task {
    file: KeptOpen,
    /// `file` is the thread's `status`, not its `schedstat`.
    status: bool,
    ctx: Option<u64>,
    /// Listed in the latest reading of `task/`.
    seen: bool,
}

impl Task {
    /// Read its count again: the switches since the last read (`None` when either count is
    /// unknown), the new count becoming the baseline. `Err`: the thread is gone.
    fn advance(&mut self) -> std::io::Result<Option<u64>> {
        let status = self.status;
        let text = self.file.read()?;
        let now = if status {
            parse_status(text).ctx_switches
        } else {
            schedstat_switches(text)
        };
        let since = now.zip(self.ctx).map(|(n, b)| n.saturating_sub(b));
        self.ctx = now;
        Ok(since)
    }
}

#[derive(Debug)]
struct Tracked {
    files: ProcFiles,
    prev: Option<Counters>,
    ctx: CtxState,
}

/// The usage reader's state between readings.
#[derive(Debug)]
pub struct UsageReader {
    clk_tck: f64,
    host: Option<HostStat>,
    procs: HashMap<u32, Tracked>,
    last_t: Option<u64>,
}

impl Default for UsageReader {
    fn default() -> Self {
        Self::new()
    }
}

impl UsageReader {
    pub fn new() -> Self {
        UsageReader {
            clk_tck: crate::procfile::clk_tck(),
            host: HostStat::open().ok(),
            procs: HashMap::new(),
            last_t: None,
        }
    }

    /// Forget every process (a new root: nothing of the old tree is compared with the new).
    pub fn clear(&mut self) {
        self.procs.clear();
        self.last_t = None;
    }

    /// One reading at `t` (CLOCK_MONOTONIC ns) of the processes `tree` (root first), with
    /// each process's GPU memory `(pid, gpu index, bytes)` and the GPUs' details.
    pub fn read(
        &mut self,
        t: u64,
        tree: &[TickProc],
        gpu_mem: &[(u32, u32, u64)],
        gpus: Vec<GpuDetail>,
    ) -> Usage {
        let interval_ns = self.last_t.map_or(0, |l| t.saturating_sub(l));
        let secs = interval_ns as f64 / 1e9;
        let rate =
            |now: u64, before: u64| (secs > 0.0).then(|| now.saturating_sub(before) as f64 / secs);
        let (host_cores, host_ncpu) = match &mut self.host {
            Some(h) => h.read(),
            None => (None, 0),
        };
        self.procs
            .retain(|pid, _| tree.iter().any(|p| p.pid == *pid));
        let mut u = Usage {
            interval_ns,
            host_cores,
            host_ncpu,
            gpus,
            ..Usage::default()
        };
        let mut sums = Sums::default();
        for tp in tree {
            let tr = match self.procs.entry(tp.pid) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => match ProcFiles::open(tp.pid) {
                    Ok(files) => v.insert(Tracked {
                        files,
                        prev: None,
                        ctx: CtxState::default(),
                    }),
                    Err(_) => continue,
                },
            };
            let (Ok(stat), Ok(io), Ok(command)) = (tr.files.stat(), tr.files.io(), tr.files.comm())
            else {
                // Gone since the status read.
                self.procs.remove(&tp.pid);
                continue;
            };
            let ctx = ctx_rate(tp.pid, tp.status.ctx_switches, stat.threads, t, &mut tr.ctx);
            let now = Counters {
                cpu_ticks: stat.cpu_ticks,
                majflt: stat.majflt,
                io,
            };
            let prev = tr.prev.replace(now);
            let mut row = ProcUsage {
                pid: tp.pid,
                ppid: tp.status.ppid,
                command,
                rss: tp.status.rss,
                anon: tp.status.anon,
                file: tp.status.file,
                shmem: tp.status.shmem,
                pinned: tp.pinned,
                threads: stat.threads,
                gpu_mem: gpu_mem
                    .iter()
                    .filter(|(p, _, _)| *p == tp.pid)
                    .map(|&(_, i, b)| (i, b))
                    .collect(),
                ..ProcUsage::default()
            };
            if let Some(p) = prev {
                row.cores = rate(now.cpu_ticks, p.cpu_ticks).map(|x| x / self.clk_tck);
                row.major_faults = rate(now.majflt, p.majflt);
                let io_rates = now.io.zip(p.io).and_then(|(a, b)| {
                    Some((
                        rate(a.read_bytes, b.read_bytes)?,
                        rate(a.write_bytes, b.write_bytes)?,
                    ))
                });
                (row.read_bps, row.write_bps) = io_rates.unzip();
                sums.add(&row, ctx);
            }
            sums.io_unknown |= now.io.is_none();
            u.threads += row.threads;
            u.procs.push(row);
        }
        if sums.n > 0 {
            u.cores = Some(sums.cores);
            u.major_faults = sums.major_faults;
            u.ctx_switches = sums.ctx;
            if !sums.io_unknown {
                u.read_bps = sums.read;
                u.write_bps = sums.write;
            }
        }
        self.last_t = Some(t);
        u
    }
}

/// The tree's rates, summed over the processes that have them.
#[derive(Default)]
struct Sums {
    n: u32,
    cores: f64,
    major_faults: Option<f64>,
    ctx: Option<f64>,
    read: Option<f64>,
    write: Option<f64>,
    /// A process's I/O (this reading or the one before) is unknown.
    io_unknown: bool,
    ctx_unknown: bool,
}

impl Sums {
    fn add(&mut self, row: &ProcUsage, ctx: Option<f64>) {
        let add = |sum: &mut Option<f64>, x: Option<f64>| {
            if let Some(x) = x {
                *sum = Some(sum.unwrap_or(0.0) + x);
            }
        };
        self.n += 1;
        self.cores += row.cores.unwrap_or(0.0);
        add(&mut self.major_faults, row.major_faults);
        match ctx {
            Some(c) if !self.ctx_unknown => add(&mut self.ctx, Some(c)),
            _ => {
                self.ctx_unknown = true;
                self.ctx = None;
            }
        }
        match (row.read_bps, row.write_bps) {
            (Some(r), Some(w)) => {
                add(&mut self.read, Some(r));
                add(&mut self.write, Some(w));
            }
            _ => self.io_unknown = true,
        }
    }
}

/// Context switches of a process's threads, as the kernel counts them (per thread).
#[derive(Debug, Default)]
struct CtxState {
    /// The main thread's count when the threads were last read.
    main: Option<u64>,
    tasks: HashMap<u32, Task>,
    /// When the threads were last read (CLOCK_MONOTONIC ns), and the switches per second
    /// over the interval that ended then.
    read_t: Option<u64>,
    rate: Option<f64>,
}

/// The process's context switches per second: over the interval since its threads were last
/// read, or, while that was less than [`CTX_PERIOD`] ago and gave a rate, that rate again
/// (a single-threaded process is read every time: its count is the tick's status read).
fn ctx_rate(pid: u32, main: Option<u64>, threads: u32, t: u64, st: &mut CtxState) -> Option<f64> {
    if let (Some(at), Some(r)) = (st.read_t, st.rate) {
        if threads > 1 && t.saturating_sub(at) < CTX_PERIOD.as_nanos() as u64 {
            return Some(r);
        }
    }
    let interval = st.read_t.map(|at| t.saturating_sub(at));
    let delta = ctx_delta(pid, main, threads, st);
    st.read_t = Some(t);
    st.rate = delta
        .zip(interval.filter(|&ns| ns > 0))
        .map(|(d, ns)| d as f64 * 1e9 / ns as f64);
    st.rate
}

/// The process's context switches since its threads were last read: its main thread's (`main`,
/// from the tick's status read) plus, per other thread, the change since the reading before
/// (all of a thread's count when it was born since). `None` on the first reading and while
/// the main thread's count is unknown.
fn ctx_delta(pid: u32, main: Option<u64>, threads: u32, st: &mut CtxState) -> Option<u64> {
    let first = st.main.is_none();
    let mut delta = main.zip(st.main).and_then(|(n, b)| n.checked_sub(b));
    st.main = main;
    if threads <= 1 {
        st.tasks.clear();
        return delta;
    }
    // The same number of threads as followed, and each still answers: the same threads (a
    // thread that replaced one that exited would leave the exited one's file unreadable), so
    // `task/` is not listed again (on a 70-thread prover the listing costs more than the
    // reads).
    if st.tasks.len() + 1 == threads as usize && !first {
        let (sum, whole) = reread_tasks(&mut st.tasks);
        if let Some(d) = &mut delta {
            *d = d.saturating_add(sum);
        }
        if whole {
            return delta;
        }
    }
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return None;
    };
    for t in st.tasks.values_mut() {
        t.seen = false;
    }
    for e in dir.flatten() {
        let Some(tid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if tid == pid {
            continue;
        }
        let task = match st.tasks.entry(tid) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                // At the first reading every thread's count is its baseline; later, a
                // thread not listed before was born since.
                let ctx = (!first).then_some(0);
                let dir = format!("/proc/{pid}/task/{tid}");
                match KeptOpen::open(format!("{dir}/schedstat"), 128) {
                    Ok(file) => v.insert(Task {
                        file,
                        status: false,
                        ctx,
                        seen: false,
                    }),
                    Err(_) => match KeptOpen::open(format!("{dir}/status"), 2048) {
                        Ok(file) => v.insert(Task {
                            file,
                            status: true,
                            ctx,
                            seen: false,
                        }),
                        // Exited while listed.
                        Err(_) => continue,
                    },
                }
            }
        };
        let Ok(since) = task.advance() else {
            continue;
        };
        task.seen = true;
        if let (Some(d), Some(i)) = (&mut delta, since) {
            *d = d.saturating_add(i);
        }
    }
    st.tasks.retain(|_, t| t.seen);
    delta
}

/// Re-read every followed thread: their summed switches since the last reading, and whether
/// every one answered (if not, the caller lists `task/` again; the counts read here are the
/// new baselines, so nothing is counted twice).
fn reread_tasks(tasks: &mut HashMap<u32, Task>) -> (u64, bool) {
    let mut sum = 0u64;
    let mut whole = true;
    for task in tasks.values_mut() {
        match task.advance() {
            Ok(Some(i)) => sum = sum.saturating_add(i),
            _ => whole = false,
        }
    }
    (sum, whole)
}

/// A thread's context switches from its `schedstat` ("run ns, wait ns, timeslices"): each
/// timeslice begins with the thread switched in, so their count is its switches (voluntary
/// and not) to within the one it is in now. Five times cheaper for the kernel to write than
/// the thread's `status`.
fn schedstat_switches(text: &[u8]) -> Option<u64> {
    let f = text
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
        .nth(2)?;
    std::str::from_utf8(f).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::process::Command;
    use std::time::Duration;

    use provetop_shared::clock::mono_ns;

    use super::*;
    use crate::procstatus::read_status;

    fn tick(pids: &[u32]) -> Vec<TickProc> {
        pids.iter()
            .filter_map(|&pid| {
                Some(TickProc {
                    pid,
                    status: read_status(pid).ok()?,
                    pinned: Some(4096),
                })
            })
            .collect()
    }

    #[test]
    fn a_pid_first_seen_has_no_rates_and_the_next_reading_has_them() {
        let me = std::process::id();
        let mut r = UsageReader::new();
        let first = r.read(mono_ns(), &tick(&[me]), &[(me, 1, 512)], Vec::new());
        assert_eq!(first.interval_ns, 0);
        assert_eq!(first.procs.len(), 1);
        let p = &first.procs[0];
        assert_eq!(
            (p.pid, p.pinned, p.gpu_mem.as_slice()),
            (me, Some(4096), &[(1, 512)][..])
        );
        assert_eq!((p.cores, p.major_faults, p.read_bps), (None, None, None));
        assert_eq!(
            (first.cores, first.ctx_switches, first.read_bps),
            (None, None, None)
        );
        assert!(first.threads >= 1 && first.host_ncpu >= 1);
        // Burn some CPU so the second reading has something to see.
        let end = std::time::Instant::now() + Duration::from_millis(200);
        while std::time::Instant::now() < end {
            std::hint::black_box(0u64);
        }
        let second = r.read(mono_ns(), &tick(&[me]), &[], Vec::new());
        assert!(second.interval_ns >= 200_000_000, "{}", second.interval_ns);
        let cores = second.cores.expect("a rate on the second reading");
        assert!(cores > 0.3, "{cores}");
        assert_eq!(second.procs[0].cores, Some(cores));
        assert!(second.read_bps.is_some() && second.write_bps.is_some());
        assert!(second.host_cores.is_some());
    }

    #[test]
    fn a_threads_switches_are_the_third_field_of_its_schedstat() {
        assert_eq!(schedstat_switches(b"123456 7890 42\n"), Some(42));
        assert_eq!(schedstat_switches(b"123456 7890\n"), None);
        assert_eq!(schedstat_switches(b""), None);
    }

    #[test]
    fn context_switches_of_every_thread_count_not_only_the_main_threads() {
        let me = std::process::id();
        let mut r = UsageReader::new();
        // A thread born after the first reading: all its switches are in the interval.
        r.read(mono_ns(), &tick(&[me]), &[], Vec::new());
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            for _ in 0..300 {
                std::thread::sleep(Duration::from_micros(200));
            }
            // Stay alive until the reading is taken.
            let _ = wait.recv();
        });
        std::thread::sleep(Duration::from_millis(400));
        let u = r.read(mono_ns(), &tick(&[me]), &[], Vec::new());
        drop(go);
        t.join().unwrap();
        let secs = u.interval_ns as f64 / 1e9;
        let switches = u.ctx_switches.expect("known") * secs;
        assert!(switches >= 300.0, "{switches} switches in {secs} s");
    }

    #[test]
    fn a_many_threaded_processs_switch_rate_is_carried_until_its_threads_are_due_again() {
        let me = std::process::id();
        // Another thread of this process, so it counts as many-threaded.
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let _ = wait.recv();
        });
        let threads = 2;
        let main = || read_status(me).unwrap().ctx_switches;
        let mut st = CtxState::default();
        let t0 = mono_ns();
        assert_eq!(
            ctx_rate(me, main(), threads, t0, &mut st),
            None,
            "a baseline"
        );
        std::thread::sleep(Duration::from_millis(20));
        let t1 = mono_ns();
        let r1 = ctx_rate(me, main(), threads, t1, &mut st).expect("a rate after the baseline");
        for _ in 0..50 {
            std::thread::sleep(Duration::from_micros(200));
        }
        let soon = t1 + CTX_PERIOD.as_nanos() as u64 / 2;
        assert_eq!(
            ctx_rate(me, main(), threads, soon, &mut st),
            Some(r1),
            "within the period: the last rate, the threads not read"
        );
        let later = t1 + CTX_PERIOD.as_nanos() as u64;
        let r2 = ctx_rate(me, main(), threads, later, &mut st).expect("read again");
        let switches = r2 * CTX_PERIOD.as_secs_f64();
        assert!(
            switches >= 50.0,
            "the 50 sleeps since the last read are counted: {switches}"
        );
        drop(stop);
        t.join().unwrap();
    }

    #[test]
    fn followed_threads_are_reread_until_one_stops_answering() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            for _ in 0..50 {
                std::thread::sleep(Duration::from_micros(200));
            }
            let _ = wait.recv();
        });
        let tid = rx.recv().unwrap();
        let me = std::process::id();
        let mut file = KeptOpen::open(format!("/proc/{me}/task/{tid}/schedstat"), 128).unwrap();
        let base = schedstat_switches(file.read().unwrap());
        let mut tasks = HashMap::from([(
            tid,
            Task {
                file,
                status: false,
                ctx: base,
                seen: true,
            },
        )]);
        std::thread::sleep(Duration::from_millis(100));
        let (sum, whole) = reread_tasks(&mut tasks);
        assert!(whole && sum >= 40, "{sum} switches, whole {whole}");
        drop(stop);
        t.join().unwrap();
        // Exited: its kept-open file no longer answers, so the caller lists `task/` again.
        let (sum, whole) = reread_tasks(&mut tasks);
        assert_eq!((sum, whole), (0, false));
    }

    #[test]
    fn a_process_that_exits_between_readings_drops_out_and_the_others_keep_their_rates() {
        let me = std::process::id();
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let kid = child.id();
        let mut r = UsageReader::new();
        let both = r.read(mono_ns(), &tick(&[me, kid]), &[], Vec::new());
        let pids: Vec<u32> = both.procs.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [me, kid], "root first, in the tree's order");
        assert_eq!(both.procs[1].command, "sleep");
        // Its status was read this tick, then it exited before the usage files were.
        let stale = tick(&[me, kid]);
        child.kill().unwrap();
        child.wait().unwrap();
        let u = r.read(mono_ns(), &stale, &[], Vec::new());
        let pids: Vec<u32> = u.procs.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [me]);
        assert!(u.cores.is_some());
    }

    #[test]
    fn one_process_with_unknown_io_makes_the_trees_io_unknown_not_zero() {
        let me = std::process::id();
        let mut r = UsageReader::new();
        r.read(mono_ns(), &tick(&[me]), &[], Vec::new());
        if let Some(t) = r.procs.get_mut(&me) {
            t.files.deny_io();
        }
        let u = r.read(mono_ns(), &tick(&[me]), &[], Vec::new());
        assert_eq!((u.procs[0].read_bps, u.procs[0].write_bps), (None, None));
        assert_eq!((u.read_bps, u.write_bps), (None, None));
        assert!(u.cores.is_some(), "the rest is still known");
    }
}
