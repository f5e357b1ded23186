//! Live heap accounting: a global allocator that counts bytes in use and their peak.
//!
//! The prover uses it to measure the working set of each proof (peak heap above the resident
//! SRS) without reading `VmHWM`: a monitor resets `VmHWM` through `clear_refs` at its own pace,
//! so the prover cannot rely on it. Each thread batches its net change and adds it to the
//! shared counters once it passes [`BATCH`] bytes: with a shared atomic touched on every
//! allocation, partitions synthesizing at once (millions of small allocations each) spend
//! most of their time fighting over that cache line, and run no faster in parallel than one
//! after another (docs/gpu.md#the-monitor-synthesis-page-locking). Readings are thus
//! exact to within `BATCH` per thread. A binary opts in with
//! `#[global_allocator] static A: provetop_prover::heap::CountingAlloc = CountingAlloc;`.
//! Without it every query returns 0 and [`counting`] is false.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};

// Signed: one thread's frees may reach the totals before another thread's allocations.
static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Net bytes a thread allocates or frees before it updates the shared counters.
pub const BATCH: i64 = 1 << 20;

thread_local! {
    // const-initialized, no destructor: usable inside the allocator without allocating.
    static PENDING: Cell<i64> = const { Cell::new(0) };
}

/// The counting allocator (wraps the system allocator).
pub struct CountingAlloc;

fn apply(delta: i64) {
    let now = LIVE.fetch_add(delta, Relaxed) + delta;
    if delta > 0 {
        PEAK.fetch_max(now, Relaxed);
    }
}

fn note(delta: i64) {
    let flush = PENDING.try_with(|p| {
        let v = p.get() + delta;
        if v.abs() >= BATCH {
            p.set(0);
            Some(v)
        } else {
            p.set(v);
            None
        }
    });
    match flush {
        Ok(None) => {}
        Ok(Some(v)) => apply(v),
        // The thread's locals are gone (it is exiting): count directly.
        Err(_) => apply(delta),
    }
}

fn grow(n: usize) {
    note(n as i64);
}

fn shrink(n: usize) {
    note(-(n as i64));
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so all of
// GlobalAlloc's contracts are System's; the counters are plain atomics and never allocate.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract (see the impl comment).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) };
        shrink(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grow(new_size - layout.size());
            } else {
                shrink(layout.size() - new_size);
            }
        }
        p
    }
}

/// Mark counting as active (call once from a binary that installed [`CountingAlloc`]).
pub fn activate() {
    ACTIVE.store(true, Relaxed);
}

/// Whether this process counts its heap.
pub fn counting() -> bool {
    ACTIVE.load(Relaxed)
}

/// Heap bytes in use now (to within [`BATCH`] per thread).
pub fn live() -> u64 {
    LIVE.load(Relaxed).max(0) as u64
}

/// Peak heap bytes since the last [`reset_peak`] (to within [`BATCH`] per thread).
pub fn peak() -> u64 {
    PEAK.load(Relaxed).max(0) as u64
}

/// Start a new peak window at the current level.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

/// Resident set size of this process (`VmRSS`), in bytes, when readable.
pub fn vm_rss() -> Option<u64> {
    status_kb(None, "VmRSS:").map(|k| k * 1024)
}

/// A `kB` field (`key` with its colon, e.g. `"VmRSS:"`) of `/proc/PID/status`; `None` for
/// this process.
pub fn status_kb(pid: Option<u32>, key: &str) -> Option<u64> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/status"),
        None => "/proc/self/status".to_string(),
    };
    let s = std::fs::read_to_string(path).ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Give freed heap back to the kernel (glibc keeps it otherwise): between proofs a prover's
/// RSS then falls back to its resident floor (SRS plus caches), the floor of the field's
/// memory wave, instead of staying at the last proof's peak. Returns whether memory was
/// released. A no-op outside glibc.
pub fn release_free_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only walks glibc's own arenas under their locks; it takes no
        // pointers from us and is safe to call from any thread at any time.
        unsafe { libc::malloc_trim(0) != 0 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}
