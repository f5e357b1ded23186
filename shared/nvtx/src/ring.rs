//! One ring per thread that calls NVTX: the thread writes its events into fixed slots, the
//! writer thread reads them out. Single producer, single consumer, no lock and no
//! allocation on the program's path; a full ring refuses (the caller counts the drop).
//!
//! Contract: only the owning thread calls [`Ring::push`] and writes the producer counters;
//! only the writer calls [`Ring::drain`]. `head` (producer) and `tail` (consumer) only grow;
//! a slot between them is written before `head` is published (Release) and read after it is
//! seen (Acquire), and handed back by publishing `tail` after it was read.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};

/// Slots per thread.
pub const SLOTS: usize = 1024;
/// Bytes of a range's text kept inline (a registered string is kept by reference instead).
pub const NAME_MAX: usize = 72;

/// What a slot records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Push,
    Pop,
    Start,
    End,
    Mark,
}

/// Where a slot's name is.
#[derive(Debug, Clone, Copy)]
pub enum Name {
    /// Copied: the first `len` bytes of the slot's buffer.
    Inline(u8),
    /// A registered string (lives as long as the process: [`crate::names`]).
    Registered(&'static str),
}

/// One event.
#[derive(Clone, Copy)]
pub struct Slot {
    pub kind: Kind,
    /// Monotonic ns.
    pub ts: u64,
    /// Domain id (0: NVTX's default domain).
    pub domain: u32,
    pub category: u32,
    /// Push/pop: the nesting level; start/end: the range id.
    pub arg: u64,
    pub name: Name,
    pub text: [u8; NAME_MAX],
}

impl Slot {
    pub fn new(kind: Kind, ts: u64, domain: u32, arg: u64) -> Slot {
        Slot {
            kind,
            ts,
            domain,
            category: 0,
            arg,
            name: Name::Inline(0),
            text: [0; NAME_MAX],
        }
    }

    /// Copy `bytes` in, cut at [`NAME_MAX`] (on a character boundary where it is UTF-8).
    pub fn set_text(&mut self, bytes: &[u8]) {
        let mut n = bytes.len().min(NAME_MAX);
        while n > 0 && n < bytes.len() && (bytes[n] & 0xC0) == 0x80 {
            n -= 1;
        }
        self.text[..n].copy_from_slice(&bytes[..n]);
        self.name = Name::Inline(n as u8);
    }

    /// The name's bytes.
    pub fn name_bytes(&self) -> &[u8] {
        match self.name {
            Name::Inline(n) => &self.text[..n as usize],
            Name::Registered(s) => s.as_bytes(),
        }
    }
}

/// A thread's ring and counters.
pub struct Ring {
    slots: Box<[UnsafeCell<MaybeUninit<Slot>>]>,
    head: AtomicUsize,
    tail: AtomicUsize,
    /// The kernel's id of the owning thread.
    pub tid: u32,
    /// Ranges and markers this thread may still record before the writer refills it.
    pub budget: AtomicI64,
    /// Ranges and markers not recorded (full ring, spent budget), by the owner.
    pub dropped: AtomicU64,
    /// The thread ended: the writer drains what is left and forgets the ring.
    pub ended: AtomicBool,
}

// SAFETY: the slots are shared under the SPSC protocol of the module doc: a slot is written
// only by the producer while it lies outside [tail, head), and read only by the consumer
// while inside; the Release/Acquire pairs on head and tail order those accesses.
unsafe impl Sync for Ring {}
// SAFETY: as above; the ring owns plain data (slots hold `&'static str` at most).
unsafe impl Send for Ring {}

impl Ring {
    pub fn new(tid: u32, budget: i64) -> Ring {
        Ring {
            slots: (0..SLOTS)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            tid,
            budget: AtomicI64::new(budget),
            dropped: AtomicU64::new(0),
            ended: AtomicBool::new(false),
        }
    }

    /// Producer: append `slot` if, after it, `reserve` slots are still free; false when not.
    pub fn push(&self, slot: &Slot, reserve: usize) -> bool {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if head - tail + 1 + reserve > SLOTS {
            return false;
        }
        let cell = &self.slots[head % SLOTS];
        // SAFETY: the slot at `head` lies outside [tail, head): the consumer does not read it
        // until `head` is published below, and only this (owning) thread writes slots.
        unsafe { (*cell.get()).write(*slot) };
        self.head.store(head + 1, Ordering::Release);
        true
    }

    /// Producer: whether one more slot fits with `reserve` still free after it.
    pub fn has_room(&self, reserve: usize) -> bool {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        head - tail + 1 + reserve <= SLOTS
    }

    /// Producer: take one unit of budget; false (nothing taken) when it is spent.
    pub fn take_budget(&self) -> bool {
        if self.budget.load(Ordering::Relaxed) <= 0 {
            return false;
        }
        self.budget.fetch_sub(1, Ordering::Relaxed);
        true
    }

    /// Producer: count one event not recorded.
    pub fn count_drop(&self) {
        // Only the owner writes it: a plain add, no read-modify-write contention.
        let n = self.dropped.load(Ordering::Relaxed);
        self.dropped.store(n + 1, Ordering::Relaxed);
    }

    /// Consumer: hand every slot published so far to `f`, oldest first; how many.
    pub fn drain(&self, mut f: impl FnMut(&Slot)) -> usize {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        for i in tail..head {
            // SAFETY: slots in [tail, head) were written and published (Acquire above) and
            // are not written again until `tail` moves past them.
            let slot = unsafe { (*self.slots[i % SLOTS].get()).assume_init_ref() };
            f(slot);
        }
        self.tail.store(head, Ordering::Release);
        head - tail
    }

    /// Consumer: top the budget up by `add`, to at most `cap`.
    pub fn refill(&self, add: i64, cap: i64) {
        let b = self.budget.load(Ordering::Relaxed);
        let target = (b.max(0) + add).min(cap);
        if target > b {
            self.budget.fetch_add(target - b, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_ring_refuses_and_keeps_the_reserve_free() {
        let r = Ring::new(1, 0);
        let s = Slot::new(Kind::Push, 1, 0, 0);
        let mut n = 0;
        while r.push(&s, 10) {
            n += 1;
        }
        assert_eq!(n, SLOTS - 10);
        // The reserve is still there for what must not be lost.
        for _ in 0..10 {
            assert!(r.push(&s, 0));
        }
        assert!(!r.push(&s, 0));
        assert_eq!(r.drain(|_| {}), SLOTS);
        assert!(r.push(&s, 0));
    }

    #[test]
    fn slots_come_out_in_order_across_threads() {
        let r = std::sync::Arc::new(Ring::new(1, 0));
        let w = r.clone();
        let producer = std::thread::spawn(move || {
            let mut i = 0u64;
            while i < 100_000 {
                if w.push(&Slot::new(Kind::Mark, i, 0, i), 0) {
                    i += 1;
                }
            }
        });
        let mut next = 0u64;
        while next < 100_000 {
            r.drain(|s| {
                assert_eq!(s.arg, next);
                next += 1;
            });
        }
        producer.join().unwrap();
    }

    #[test]
    fn a_long_name_is_cut_on_a_character_boundary() {
        let mut s = Slot::new(Kind::Push, 0, 0, 0);
        let name = "é".repeat(NAME_MAX);
        s.set_text(name.as_bytes());
        let got = std::str::from_utf8(s.name_bytes()).unwrap();
        assert!(got.len() <= NAME_MAX && got.chars().all(|c| c == 'é'));
    }
}
