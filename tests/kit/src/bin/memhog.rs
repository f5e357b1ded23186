//! `provetop-memhog`: a test helper that holds known amounts of memory of each kind.
//!
//! It exists so the sampler's readings can be checked against ground truth: anonymous memory
//! (RssAnon), shared memory through a memfd (RssShmem), mlocked memory (VmLck), short spikes
//! (the interval peak), and allocations in a grandchild (process-tree sums).

use std::ffi::c_void;
use std::io::{BufRead, Write};
use std::num::NonZeroUsize;
use std::os::fd::OwnedFd;
use std::process::ExitCode;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use clap::Parser;
use nix::errno::Errno;
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::mman::{self, MapFlags, MmapAdvise, ProtFlags};
use nix::time::{clock_gettime, ClockId};

const MIB: usize = 1 << 20;
const PAGE: usize = 4096;
const HUGE: usize = 2 * MIB;

/// Allocate and touch known amounts of memory, for testing provetop's sampler.
///
/// Sizes are MiB. Start-up allocations (--anon, --shm, --lock) happen in the process at the
/// bottom of the --depth chain, which then prints "ready PID" on stdout. With --stdin it then
/// takes commands, one per line, and answers each with a line:
///
///   anon MIB          allocate and touch anonymous memory        → "ok"
///   shm MIB           memfd (POSIX shared memory) mapped shared, touched → "ok"
///   lock MIB          anonymous memory locked with mlock          → "ok"
///   spike MIB MS      hold MIB more for MS ms, then free it       → "spike FULL_NS RELEASE_NS"
///   mapfile PATH      map the whole file PATH shared and touch it → "ok"
///   free              release everything allocated so far         → "ok"
///   exit              exit 0
///
/// FULL_NS is when the spike's last page was touched, RELEASE_NS when freeing began
/// (CLOCK_MONOTONIC ns). Spikes use transparent huge pages where the kernel allows, so
/// 512 MiB fills in tens of ms and the spike is short. With --spike, the same spike repeats
/// every --every-ms ms (--count times; 0 = until killed) and each is reported on stdout.
/// Without --stdin the process sleeps until killed.
#[derive(Parser, Debug)]
#[command(name = "provetop-memhog", verbatim_doc_comment)]
struct Args {
    /// Anonymous memory to allocate and touch at start.
    #[arg(long, default_value_t = 0)]
    anon: usize,
    /// Shared memory (memfd, mapped shared and touched) at start.
    #[arg(long, default_value_t = 0)]
    shm: usize,
    /// mlocked anonymous memory at start.
    #[arg(long, default_value_t = 0)]
    lock: usize,
    /// Do the allocations in a descendant this many levels down (child, grandchild, …); the
    /// processes above only wait for it.
    #[arg(long, default_value_t = 0)]
    depth: u32,
    /// Periodic spike size.
    #[arg(long, default_value_t = 0)]
    spike: usize,
    /// How long each periodic spike is held.
    #[arg(long, default_value_t = 20)]
    hold_ms: u64,
    /// Time from the start of one periodic spike to the next.
    #[arg(long, default_value_t = 250)]
    every_ms: u64,
    /// Number of periodic spikes (0 = forever).
    #[arg(long, default_value_t = 0)]
    count: u32,
    /// Take commands from stdin after the start-up allocations.
    #[arg(long)]
    stdin: bool,
    /// Ignore SIGTERM (to test the supervisor's SIGKILL after the grace period).
    #[arg(long)]
    ignore_term: bool,
}

/// One mapping this process holds.
struct Region {
    ptr: NonNull<c_void>,
    len: usize,
    _fd: Option<OwnedFd>,
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe a mapping this program created and nothing else refers to.
        let _ = unsafe { mman::munmap(self.ptr, self.len) };
    }
}

fn now_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

fn touch(ptr: *mut u8, len: usize, step: usize) {
    let mut off = 0;
    while off < len {
        // SAFETY: off < len and the mapping is readable and writable for len bytes.
        unsafe { ptr.add(off).write_volatile(1) };
        off += step;
    }
}

/// `len` as mmap takes it; a zero length is EINVAL, as mmap itself answers.
fn nonzero(len: usize) -> nix::Result<NonZeroUsize> {
    NonZeroUsize::new(len).ok_or(Errno::EINVAL)
}

fn map_anon(len: usize) -> nix::Result<NonNull<c_void>> {
    // SAFETY: a fresh private anonymous mapping aliases nothing.
    unsafe {
        mman::mmap_anonymous(
            None,
            nonzero(len)?,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE,
        )
    }
}

/// Touch every page of a new mapping and hold it.
fn hold(ptr: NonNull<c_void>, len: usize, fd: Option<OwnedFd>) -> Region {
    touch(ptr.as_ptr().cast(), len, PAGE);
    Region { ptr, len, _fd: fd }
}

fn anon(mib: usize) -> nix::Result<Region> {
    let len = mib * MIB;
    Ok(hold(map_anon(len)?, len, None))
}

fn locked(mib: usize) -> nix::Result<Region> {
    let len = mib * MIB;
    let ptr = map_anon(len)?;
    // SAFETY: the range is a mapping we own.
    unsafe { mman::mlock(ptr, len)? };
    Ok(hold(ptr, len, None))
}

fn shm(mib: usize) -> nix::Result<Region> {
    let len = mib * MIB;
    let fd = memfd_create(c"provetop-memhog", MemFdCreateFlag::MFD_CLOEXEC)?;
    nix::unistd::ftruncate(&fd, len as i64)?;
    shared(fd, len)
}

/// Map `len` bytes of `fd` shared, touch them and hold them.
fn shared(fd: OwnedFd, len: usize) -> nix::Result<Region> {
    // SAFETY: a fresh shared mapping of a file this program opened (a memfd of its own, or a
    // file it maps for a test); it is unmapped when the region is dropped.
    let ptr = unsafe {
        mman::mmap(
            None,
            nonzero(len)?,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_SHARED,
            &fd,
            0,
        )?
    };
    Ok(hold(ptr, len, Some(fd)))
}

/// Map the file at `path` shared (a stand-in for a device node's mapping: the pinned-memory
/// readers classify mappings by path) and touch every page.
fn mapfile(path: &str) -> nix::Result<Region> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)))?;
    let len = f.metadata().map_err(|_| Errno::EIO)?.len() as usize;
    shared(OwnedFd::from(f), len)
}

/// Allocate MIB with huge pages where possible, hold it `hold`, free it.
/// Returns (FULL_NS, RELEASE_NS).
fn spike(mib: usize, hold: Duration) -> nix::Result<(u64, u64)> {
    let len = mib * MIB;
    // Over-allocate by one huge page so a 2 MiB aligned range fits.
    let raw = map_anon(len + HUGE)?;
    let aligned = raw.map_addr(|a| {
        a.get()
            .checked_next_multiple_of(HUGE)
            .and_then(NonZeroUsize::new)
            .expect("the aligned start lies inside the mapping")
    });
    // SAFETY: [aligned, aligned+len) lies inside the mapping.
    unsafe {
        let _ = mman::madvise(aligned, len, MmapAdvise::MADV_HUGEPAGE);
    }
    touch(aligned.as_ptr().cast(), len, PAGE);
    let full = now_ns();
    std::thread::sleep(hold);
    let release = now_ns();
    // SAFETY: the whole mapping is ours.
    unsafe { mman::munmap(raw, len + HUGE)? };
    Ok((full, release))
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() -> ExitCode {
    let args = Args::parse();
    // A test helper must never outlive the test that started it.
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
    if args.ignore_term {
        // SAFETY: SIG_IGN installs no handler code.
        let _ = unsafe {
            nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGTERM,
                nix::sys::signal::SigHandler::SigIgn,
            )
        };
    }
    if args.depth > 0 {
        let exe = match std::env::current_exe() {
            Ok(e) => e,
            Err(e) => {
                eprintln!("provetop-memhog: cannot find own executable: {e}");
                return ExitCode::from(2);
            }
        };
        let mut child_args: Vec<String> = Vec::new();
        let mut it = std::env::args().skip(1);
        while let Some(a) = it.next() {
            if a == "--depth" {
                it.next();
            } else if !a.starts_with("--depth=") {
                child_args.push(a);
            }
        }
        let mut cmd = std::process::Command::new(exe);
        cmd.args(child_args)
            .arg(format!("--depth={}", args.depth - 1));
        return match cmd.status() {
            Ok(st) => ExitCode::from(st.code().unwrap_or(1) as u8),
            Err(e) => {
                eprintln!("provetop-memhog: cannot start child: {e}");
                ExitCode::from(2)
            }
        };
    }
    let mut held: Vec<Region> = Vec::new();
    let startup = [
        (args.anon, anon as fn(usize) -> nix::Result<Region>, "anon"),
        (args.shm, shm, "shm"),
        (args.lock, locked, "lock"),
    ];
    for (mib, f, what) in startup {
        if mib > 0 {
            match f(mib) {
                Ok(r) => held.push(r),
                Err(e) => {
                    eprintln!("provetop-memhog: {what} {mib} MiB failed: {e}");
                    return ExitCode::from(3);
                }
            }
        }
    }
    say(&format!("ready {}", std::process::id()));
    if args.spike > 0 {
        let start = Instant::now();
        let mut k = 0u32;
        while args.count == 0 || k < args.count {
            match spike(args.spike, Duration::from_millis(args.hold_ms)) {
                Ok((a, b)) => say(&format!("spike {a} {b}")),
                Err(e) => {
                    eprintln!("provetop-memhog: spike failed: {e}");
                    return ExitCode::from(3);
                }
            }
            k += 1;
            let next = start + Duration::from_millis(args.every_ms) * k;
            if let Some(d) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(d);
            }
        }
        say("done");
    }
    if !args.stdin {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let w: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| w.get(i).and_then(|s| s.parse::<usize>().ok());
        let res: Result<String, String> = match (w.first().copied(), num(1), num(2)) {
            (Some("anon"), Some(n), _) => anon(n).map(|r| held.push(r)).map(|_| "ok".into()),
            (Some("shm"), Some(n), _) => shm(n).map(|r| held.push(r)).map(|_| "ok".into()),
            (Some("lock"), Some(n), _) => locked(n).map(|r| held.push(r)).map(|_| "ok".into()),
            (Some("spike"), Some(n), Some(ms)) => {
                spike(n, Duration::from_millis(ms as u64)).map(|(a, b)| format!("spike {a} {b}"))
            }
            (Some("mapfile"), _, _) if w.len() == 2 => {
                mapfile(w[1]).map(|r| held.push(r)).map(|_| "ok".into())
            }
            (Some("free"), _, _) => {
                held.clear();
                Ok("ok".into())
            }
            (Some("exit"), _, _) => return ExitCode::SUCCESS,
            _ => Err(Errno::EINVAL),
        }
        .map_err(|e| format!("error {line:?}: {e}"));
        match res {
            Ok(s) => say(&s),
            Err(e) => say(&e),
        }
    }
    ExitCode::SUCCESS
}
