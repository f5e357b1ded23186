//! The calling thread's side: its ring, its range stacks (one per domain), and the rules that
//! keep what reaches provetop well formed however much is dropped:
//!
//! * a range is recorded whole or not at all: a push is admitted only while the ring has room
//!   for it, for its pop and for the pops of every recorded range still open on the thread
//!   (so a pop never finds the ring full), and a pop is sent only for a recorded push;
//! * a pop with nothing open (an unbalanced pop) is counted and sends nothing;
//! * ranges and markers spend the thread's budget (refilled by the writer at a bounded rate);
//!   what finds it spent or the ring full is counted as dropped, never waited for.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::ring::{Kind, Ring, Slot};
use crate::writer;

/// Deepest nesting followed per thread and domain; deeper pushes are counted, not recorded.
pub const MAX_DEPTH: usize = 1 << 16;

/// Pops with no range open.
pub static UNBALANCED: AtomicU64 = AtomicU64::new(0);
/// Ends of recorded ranges that found the ending thread's ring full (provetop closes such a
/// range when the child exits).
pub static LOST_ENDS: AtomicU64 = AtomicU64::new(0);
/// Events on threads that are ending (their thread-local state is gone).
pub static ORPHANED: AtomicU64 = AtomicU64::new(0);

#[derive(Default)]
struct Stack {
    /// Whether each open range was recorded, innermost last.
    recorded: Vec<bool>,
    /// Pushes past [`MAX_DEPTH`] still open.
    overflow: usize,
}

struct Local {
    ring: Arc<Ring>,
    stacks: Vec<(u32, Stack)>,
    /// Recorded ranges open on this thread, in all domains: the pops the ring keeps room for.
    recorded_open: usize,
    /// Ids for start/end ranges: unique per thread, the thread id in the high bits.
    next_range: u64,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.ring.ended.store(true, Ordering::Release);
    }
}

/// The stack of `domain` among `stacks` (created on first use).
fn stack_of(stacks: &mut Vec<(u32, Stack)>, domain: u32) -> &mut Stack {
    let i = match stacks.iter().position(|(d, _)| *d == domain) {
        Some(i) => i,
        None => {
            stacks.push((domain, Stack::default()));
            stacks.len() - 1
        }
    };
    &mut stacks[i].1
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// The kernel's id of the calling thread.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// Run `f` on this thread's state (created on first use); `None` while the thread is ending
/// or on a nested call.
fn with<R>(f: impl FnOnce(&mut Local) -> R) -> Option<R> {
    LOCAL
        .try_with(|cell| {
            let mut guard = cell.try_borrow_mut().ok()?;
            if guard.is_none() {
                let tid = gettid();
                let ring = writer::register(tid);
                *guard = Some(Local {
                    ring,
                    stacks: Vec::new(),
                    recorded_open: 0,
                    next_range: (tid as u64) << 31,
                });
            }
            guard.as_mut().map(f)
        })
        .ok()
        .flatten()
}

/// A range pushed in `domain` (stamped `now()` only when it is recorded); `fill` names the
/// slot. The level it was pushed at. A dropped push costs no clock read and no copy.
pub fn push(now: fn() -> u64, domain: u32, fill: impl FnOnce(&mut Slot)) -> i32 {
    let got = with(|l| {
        let reserve = l.recorded_open + 1;
        let Local { ring, stacks, .. } = l;
        let st = stack_of(stacks, domain);
        let depth = st.recorded.len() + st.overflow;
        if st.recorded.len() >= MAX_DEPTH {
            st.overflow += 1;
            ring.count_drop();
            return depth as i32;
        }
        let recorded = ring.has_room(reserve) && ring.take_budget() && {
            let mut slot = Slot::new(Kind::Push, now(), domain, depth as u64);
            fill(&mut slot);
            ring.push(&slot, reserve)
        };
        st.recorded.push(recorded);
        if recorded {
            l.recorded_open += 1;
        } else {
            ring.count_drop();
        }
        depth as i32
    });
    got.unwrap_or_else(|| {
        ORPHANED.fetch_add(1, Ordering::Relaxed);
        -1
    })
}

/// The innermost range of `domain` popped (stamped `now()` when its push was recorded); the
/// level it had, or -1 when none was open.
pub fn pop(now: fn() -> u64, domain: u32) -> i32 {
    let got = with(|l| {
        let Local { ring, stacks, .. } = l;
        let st = stack_of(stacks, domain);
        if st.overflow > 0 {
            st.overflow -= 1;
            return (st.recorded.len() + st.overflow) as i32;
        }
        let Some(recorded) = st.recorded.pop() else {
            UNBALANCED.fetch_add(1, Ordering::Relaxed);
            return -1;
        };
        let depth = st.recorded.len();
        if recorded {
            // Room was kept for it when the push was admitted, so this does not fail.
            if !ring.push(&Slot::new(Kind::Pop, now(), domain, depth as u64), 0) {
                LOST_ENDS.fetch_add(1, Ordering::Relaxed);
            }
            l.recorded_open -= 1;
        }
        depth as i32
    });
    got.unwrap_or(-1)
}

/// A start/end range started (stamped `now()` when recorded): its id (0 never), odd when
/// it was recorded.
pub fn start(now: fn() -> u64, domain: u32, fill: impl FnOnce(&mut Slot)) -> u64 {
    let got = with(|l| {
        l.next_range += 1;
        let id = l.next_range;
        let ring = &l.ring;
        let recorded = ring.has_room(l.recorded_open) && ring.take_budget() && {
            let mut slot = Slot::new(Kind::Start, now(), domain, id);
            fill(&mut slot);
            ring.push(&slot, l.recorded_open)
        };
        if !recorded {
            ring.count_drop();
        }
        (id << 1) | recorded as u64
    });
    got.unwrap_or_else(|| {
        ORPHANED.fetch_add(1, Ordering::Relaxed);
        0
    })
}

/// The range `handle` (from [`start`], on any thread) ended, stamped `now()`.
pub fn end(now: fn() -> u64, domain: u32, handle: u64) {
    if handle & 1 == 0 {
        return;
    }
    let sent = with(|l| {
        let slot = Slot::new(Kind::End, now(), domain, handle >> 1);
        l.ring.push(&slot, l.recorded_open)
    });
    if sent != Some(true) {
        LOST_ENDS.fetch_add(1, Ordering::Relaxed);
    }
}

/// A marker (stamped `now()` when recorded).
pub fn mark(now: fn() -> u64, domain: u32, fill: impl FnOnce(&mut Slot)) {
    let got = with(|l| {
        let ring = &l.ring;
        let recorded = ring.has_room(l.recorded_open) && ring.take_budget() && {
            let mut slot = Slot::new(Kind::Mark, now(), domain, 0);
            fill(&mut slot);
            ring.push(&slot, l.recorded_open)
        };
        if !recorded {
            ring.count_drop();
        }
    });
    if got.is_none() {
        ORPHANED.fetch_add(1, Ordering::Relaxed);
    }
}
