//! An append-only sequence that keeps only its newest items in memory and the rest in an
//! unnamed temporary file: what a reader must keep per chunk, span or proof (the chunk heads
//! and the timeline's parts, replay's closed spans, phase starts and alert times, classify's
//! peaks, covered time and segments, compare's proofs, spans and selection) in memory that does
//! not grow with the session.
//!
//! Contract: item `i` is the `i`-th pushed, until [`Spill::replace`] or [`Spill::truncate`]
//! change the sequence. Memory: at most one block ([`BLOCK_BYTES`] of encoded items) not yet
//! written and one block read back, whatever the length. Items go to the file a block at a
//! time, in one positioned write; the file is created (in `TMPDIR`, unlinked from the start,
//! so no crash leaves it behind; where `TMPDIR` is a tmpfs it is memory again, outside the
//! process's RSS) when the first block fills. Where the file cannot be
//! created or written (no `TMPDIR`, a full disk) the items stay in memory, as if there were
//! no file, and [`Spill::failed`] says why once: a reader degrades to holding what it held
//! before spilling existed, never loses an item. A read of the file that fails is an
//! `io::Error` for the caller to say.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use crate::nth::{Nth, Rank};

/// Bytes of encoded items written or read back at a time (small: the tests' sessions of an
/// hour or a few already spill).
pub const BLOCK_BYTES: usize = 8 << 10;

/// An item of a fixed encoded size.
pub trait Fixed: Copy {
    /// Its encoded bytes.
    const SIZE: usize;
    /// Append its `SIZE` bytes to `out`.
    fn put(&self, out: &mut Vec<u8>);
    /// The item of `b` (`SIZE` bytes, as [`Fixed::put`] wrote them).
    fn take(b: &[u8]) -> Self;
}

/// The `n`-th little-endian u64 of `b`.
pub fn u64_at(b: &[u8], n: usize) -> u64 {
    u64::from_le_bytes(b[n * 8..n * 8 + 8].try_into().expect("8 bytes"))
}

impl Fixed for u64 {
    const SIZE: usize = 8;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn take(b: &[u8]) -> Self {
        u64_at(b, 0)
    }
}

impl Fixed for u32 {
    const SIZE: usize = 4;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn take(b: &[u8]) -> Self {
        u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
    }
}

impl Fixed for (u64, u64) {
    const SIZE: usize = 16;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0.to_le_bytes());
        out.extend_from_slice(&self.1.to_le_bytes());
    }
    fn take(b: &[u8]) -> Self {
        (u64_at(b, 0), u64_at(b, 1))
    }
}

/// The sequence.
pub struct Spill<T: Fixed> {
    /// Items `0..on_disk`, at `i * SIZE`.
    file: Option<File>,
    on_disk: usize,
    /// Items `on_disk..`.
    tail: Vec<T>,
    /// Why the file could not take a block; from then on every item stays in `tail`.
    failed: Option<String>,
    /// The block read back last: its first index and its items.
    cache: Mutex<Option<(usize, Vec<T>)>>,
}

impl<T: Fixed> Default for Spill<T> {
    fn default() -> Self {
        Spill {
            file: None,
            on_disk: 0,
            tail: Vec::new(),
            failed: None,
            cache: Mutex::new(None),
        }
    }
}

impl<T: Fixed> std::fmt::Debug for Spill<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("len", &self.len())
            .field("on_disk", &self.on_disk)
            .field("failed", &self.failed)
            .finish()
    }
}

impl<T: Fixed> Spill<T> {
    /// Items a block holds.
    pub fn block() -> usize {
        (BLOCK_BYTES / T::SIZE).max(1)
    }

    /// Items held.
    pub fn len(&self) -> usize {
        self.on_disk + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Why items stay in memory: the temporary file could not be created or written.
    pub fn failed(&self) -> Option<&str> {
        self.failed.as_deref()
    }

    /// Items in the file (the rest are in memory).
    pub fn on_disk(&self) -> usize {
        self.on_disk
    }

    /// Append `v`.
    pub fn push(&mut self, v: T) {
        self.tail.push(v);
        if self.tail.len() >= Self::block() && self.failed.is_none() {
            self.flush();
        }
    }

    /// Write the items in memory to the file (all of them, or none where it fails).
    fn flush(&mut self) {
        let mut buf = Vec::with_capacity(self.tail.len() * T::SIZE);
        self.tail.iter().for_each(|v| v.put(&mut buf));
        let file = match self.file.take() {
            Some(f) => Ok(f),
            None => tempfile::tempfile(),
        };
        let wrote = file.and_then(|f| {
            f.write_all_at(&buf, (self.on_disk * T::SIZE) as u64)?;
            Ok(f)
        });
        match wrote {
            Ok(f) => {
                self.file = Some(f);
                self.on_disk += self.tail.len();
                self.tail.clear();
            }
            Err(e) => self.failed = Some(format!("the temporary file: {e}")),
        }
    }

    /// The file's items `lo..hi` (`hi <= on_disk`), in one read.
    fn read_disk(&self, lo: usize, hi: usize) -> io::Result<Vec<T>> {
        let file = self.file.as_ref().expect("items on disk have a file");
        let mut buf = vec![0u8; (hi - lo) * T::SIZE];
        file.read_exact_at(&mut buf, (lo * T::SIZE) as u64)?;
        Ok(buf.chunks_exact(T::SIZE).map(T::take).collect())
    }

    /// Item `i` (`i < len`); reads (and keeps) its block where it is in the file.
    pub fn get(&self, i: usize) -> io::Result<T> {
        if i >= self.on_disk {
            return Ok(self.tail[i - self.on_disk]);
        }
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, items)) = cache.as_ref() {
            if (*at..*at + items.len()).contains(&i) {
                return Ok(items[i - at]);
            }
        }
        let b = Self::block();
        let lo = i / b * b;
        let items = self.read_disk(lo, (lo + b).min(self.on_disk))?;
        let v = items[i - lo];
        *cache = Some((lo, items));
        Ok(v)
    }

    /// The first item for which `at` holds (`at` false then true along the items), by
    /// bisection: a few reads of the file. Lookups that come nearly in order (a pass's keys)
    /// cost a search in memory: the items in memory and the block last read narrow it first.
    pub fn first_where(&self, at: impl Fn(&T) -> bool) -> io::Result<usize> {
        let (mut lo, mut hi) = (0, self.len());
        if let Some(first) = self.tail.first() {
            if !at(first) {
                return Ok(self.on_disk + self.tail.partition_point(|x| !at(x)));
            }
            hi = self.on_disk;
        }
        if let Some((b, items)) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|(b, items)| b + items.len() <= hi && !items.is_empty())
        {
            match (at(&items[0]), at(&items[items.len() - 1])) {
                (true, _) => hi = *b,
                (false, false) => lo = b + items.len(),
                (false, true) => return Ok(b + items.partition_point(|x| !at(x))),
            }
        }
        while lo < hi {
            let mid = (lo + hi) / 2;
            if at(&self.get(mid)?) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(lo)
    }

    /// The last item.
    pub fn last(&self) -> io::Result<Option<T>> {
        match self.len() {
            0 => Ok(None),
            n => self.get(n - 1).map(Some),
        }
    }

    /// Items `lo..hi` in order, a block at a time, to `f`.
    pub fn each_in(&self, lo: usize, hi: usize, f: &mut dyn FnMut(usize, T)) -> io::Result<()> {
        let hi = hi.min(self.len());
        let mut i = lo;
        while i < hi.min(self.on_disk) {
            let to = (i + Self::block()).min(hi.min(self.on_disk));
            for (k, v) in self.read_disk(i, to)?.into_iter().enumerate() {
                f(i + k, v);
            }
            i = to;
        }
        for (k, v) in self.tail[i.saturating_sub(self.on_disk)..hi - self.on_disk.min(hi)]
            .iter()
            .enumerate()
        {
            f(i + k, *v);
        }
        Ok(())
    }

    /// Every item, in order, in memory (tests; a reader walks them instead).
    pub fn to_vec(&self) -> io::Result<Vec<T>> {
        self.iter().collect()
    }

    /// Every item in order, to `f`.
    pub fn each(&self, f: &mut dyn FnMut(T)) -> io::Result<()> {
        self.each_in(0, self.len(), &mut |_, v| f(v))
    }

    /// Keep items `0..n` only.
    pub fn truncate(&mut self, n: usize) -> io::Result<()> {
        if n >= self.on_disk {
            self.tail.truncate(n - self.on_disk);
            return Ok(());
        }
        // The items past `n` are dropped; those in memory move back behind it.
        self.tail.clear();
        self.on_disk = n;
        *self.cache.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }

    /// Replace items `lo..hi` (`lo <= hi <= len`; `lo == hi` inserts) by `v`: the items
    /// after them move, a block at a time (rare: a late interval that reaches back over
    /// merged ones).
    pub fn replace(&mut self, lo: usize, hi: usize, v: T) -> io::Result<()> {
        let n = self.len();
        let disk_end = self.on_disk;
        *self.cache.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
        if lo >= disk_end {
            self.tail.splice(lo - disk_end..hi - disk_end, [v]);
        } else if lo == hi {
            // Insert: the file's last item moves to the front of the memory's, the others
            // from `lo` up by one, from the end.
            let last = self.read_disk(disk_end - 1, disk_end)?[0];
            let mut to = disk_end - 1;
            while to > lo {
                let from = to.saturating_sub(Self::block()).max(lo);
                let items = self.read_disk(from, to)?;
                self.write_at(from + 1, &items)?;
                to = from;
            }
            self.write_at(lo, &[v])?;
            self.tail.insert(0, last);
        } else {
            // The file's items past `hi` move down in place; those in memory after `hi` stay
            // after them.
            self.write_at(lo, &[v])?;
            let (mut write, mut read) = (lo + 1, hi);
            while read < disk_end {
                let to = (read + Self::block()).min(disk_end);
                let items = self.read_disk(read, to)?;
                self.write_at(write, &items)?;
                write += items.len();
                read = to;
            }
            self.on_disk = write;
            self.tail.drain(..read - disk_end);
        }
        if self.tail.len() >= Self::block() && self.failed.is_none() {
            self.flush();
        }
        debug_assert_eq!(self.len(), n - (hi - lo) + 1);
        Ok(())
    }

    /// The items in order, read back a block at a time.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter {
            spill: self,
            next: 0,
            block: Vec::new(),
            block_at: 0,
        }
    }

    fn write_at(&self, i: usize, items: &[T]) -> io::Result<()> {
        let mut buf = Vec::with_capacity(items.len() * T::SIZE);
        items.iter().for_each(|v| v.put(&mut buf));
        let file = self.file.as_ref().expect("items on disk have a file");
        file.write_all_at(&buf, (i * T::SIZE) as u64)
    }

    /// The element at `rank(len)` of the values `pick` takes from the items (len: how many it
    /// took), as sorting them would place it: exact, in passes over the items
    /// ([`crate::nth`]), never holding them. `None` when it took none.
    pub fn nth(&self, rank: Rank, pick: &dyn Fn(&T) -> Option<u64>) -> io::Result<Option<u64>> {
        let mut n = Nth::new(rank);
        loop {
            self.each(&mut |x| {
                if let Some(v) = pick(&x) {
                    n.feed(v);
                }
            })?;
            if let Some(answer) = n.end_pass() {
                return Ok(answer);
            }
        }
    }

    /// Bytes held in memory, nearly.
    pub fn bytes(&self) -> usize {
        let cached = self
            .cache
            .lock()
            .map(|c| c.as_ref().map_or(0, |(_, v)| v.capacity()))
            .unwrap_or(0);
        (self.tail.capacity() + cached) * std::mem::size_of::<T>()
    }
}

impl Spill<u64> {
    /// The first of the ascending items after `t` (replay's `]`, `a`).
    pub fn next_after(&self, t: u64) -> io::Result<Option<u64>> {
        let i = self.first_where(|&x| x > t)?;
        (i < self.len()).then(|| self.get(i)).transpose()
    }

    /// The last of the ascending items before `t` (replay's `[`, `A`).
    pub fn last_before(&self, t: u64) -> io::Result<Option<u64>> {
        let i = self.first_where(|&x| x >= t)?;
        i.checked_sub(1).map(|i| self.get(i)).transpose()
    }
}

/// [`Spill::iter`]: each item, or the error of reading its block.
pub struct Iter<'a, T: Fixed> {
    spill: &'a Spill<T>,
    next: usize,
    block: Vec<T>,
    block_at: usize,
}

impl<T: Fixed> Iterator for Iter<'_, T> {
    type Item = io::Result<T>;

    fn next(&mut self) -> Option<io::Result<T>> {
        let s = self.spill;
        let i = self.next;
        if i >= s.len() {
            return None;
        }
        self.next += 1;
        if i >= s.on_disk {
            return Some(Ok(s.tail[i - s.on_disk]));
        }
        if !(self.block_at..self.block_at + self.block.len()).contains(&i) {
            let to = (i + Spill::<T>::block()).min(s.on_disk);
            match s.read_disk(i, to) {
                Ok(b) => (self.block, self.block_at) = (b, i),
                Err(e) => {
                    self.next = s.len();
                    return Some(Err(e));
                }
            }
        }
        Some(Ok(self.block[i - self.block_at]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all<T: Fixed>(s: &Spill<T>) -> Vec<T> {
        let mut v = Vec::new();
        s.each(&mut |x| v.push(x)).unwrap();
        v
    }

    #[test]
    fn items_come_back_in_order_from_the_file_and_from_memory() {
        let mut s = Spill::<(u64, u64)>::default();
        let n = Spill::<(u64, u64)>::block() * 3 + 17;
        for i in 0..n as u64 {
            s.push((i, i * 3));
        }
        assert!(s.on_disk() >= 3 * Spill::<(u64, u64)>::block());
        assert!(s.bytes() <= 2 * BLOCK_BYTES + 4096);
        let want: Vec<(u64, u64)> = (0..n as u64).map(|i| (i, i * 3)).collect();
        assert_eq!(all(&s), want);
        for i in [0, 1, n / 2, n - 18, n - 1] {
            assert_eq!(s.get(i).unwrap(), want[i]);
        }
        let mut got = Vec::new();
        s.each_in(n - 40, n - 3, &mut |i, v| got.push((i, v)))
            .unwrap();
        assert_eq!(got.len(), 37);
        assert!(got.iter().all(|&(i, v)| v == want[i]));
    }

    #[test]
    fn replacing_a_run_moves_the_rest_down_on_disk_and_in_memory() {
        let b = Spill::<u64>::block();
        let n = b * 2 + 100;
        for (lo, hi) in [
            (3, b + 5),
            (10, 20),
            (2 * b + 10, 2 * b + 50),
            (b - 1, 2 * b + 99),
        ] {
            let mut s = Spill::<u64>::default();
            let mut v: Vec<u64> = (0..n as u64).collect();
            v.iter().for_each(|&x| s.push(x));
            s.replace(lo, hi, 7_000_000).unwrap();
            v.splice(lo..hi, [7_000_000]);
            assert_eq!(all(&s), v, "replace {lo}..{hi}");
            let iterated: Vec<u64> = s.iter().map(Result::unwrap).collect();
            assert_eq!(iterated, v);
            s.push(1);
            v.push(1);
            assert_eq!(s.get(s.len() - 1).unwrap(), 1);
            assert_eq!(all(&s), v);
            s.truncate(lo / 2).unwrap();
            v.truncate(lo / 2);
            s.push(9);
            v.push(9);
            assert_eq!(all(&s), v, "truncate to {}", lo / 2);
        }
    }

    #[test]
    fn the_nth_of_the_picked_values_is_the_sorted_ones_element() {
        let mut s = Spill::<(u64, u64)>::default();
        let n = Spill::<(u64, u64)>::block() * 2 + 333;
        let mut odd = Vec::new();
        for i in 0..n as u64 {
            let v = (i * 2_654_435_761) % 1_000_003;
            s.push((i, v));
            if i % 2 == 1 {
                odd.push(v);
            }
        }
        odd.sort_unstable();
        let pick = |x: &(u64, u64)| (x.0 % 2 == 1).then_some(x.1);
        let median = s.nth(crate::nth::upper_median, &pick).unwrap();
        assert_eq!(median, Some(odd[odd.len() / 2]));
        assert_eq!(s.nth(|_| 0, &pick).unwrap(), Some(odd[0]));
        assert_eq!(s.nth(|_| 0, &|_| None).unwrap(), None);
    }

    #[test]
    fn bisection_over_the_file_and_memory_finds_what_a_slice_finds() {
        let mut s = Spill::<u64>::default();
        let v: Vec<u64> = (0..Spill::<u64>::block() as u64 * 3 + 9)
            .map(|i| i * 3)
            .collect();
        v.iter().for_each(|&x| s.push(x));
        assert!(s.on_disk() > 0);
        for t in [0, 1, 3, 500, 3071, 3072, v[v.len() - 1], v[v.len() - 1] + 1] {
            assert_eq!(
                s.first_where(|&x| x > t).unwrap(),
                v.partition_point(|&x| x <= t),
                "{t}"
            );
            let i = v.partition_point(|&x| x <= t);
            assert_eq!(s.next_after(t).unwrap(), v.get(i).copied(), "after {t}");
            let j = v.partition_point(|&x| x < t);
            let before = j.checked_sub(1).map(|j| v[j]);
            assert_eq!(s.last_before(t).unwrap(), before, "before {t}");
        }
        // Keys nearly in order (the block last read answers), backwards, and anywhere; equal
        // items across a block's edge.
        let mut d = Spill::<u64>::default();
        let w: Vec<u64> = (0..Spill::<u64>::block() as u64 * 4 + 3)
            .map(|i| i / 7 * 5)
            .collect();
        w.iter().for_each(|&x| d.push(x));
        let top = w[w.len() - 1] + 6;
        let mut rnd = provetop_testkit::xorshift::xorshift(0x9e37_79b9_7f4a_7c15);
        let keys = (0..top)
            .chain((0..top).rev())
            .chain((0..2_000).map(|_| rnd() % top));
        for t in keys {
            assert_eq!(
                d.first_where(|&y| y > t).unwrap(),
                w.partition_point(|&y| y <= t),
                "after {t}"
            );
            assert_eq!(
                d.first_where(|&y| y >= t).unwrap(),
                w.partition_point(|&y| y < t),
                "at {t}"
            );
        }
    }

    #[test]
    fn without_a_usable_temporary_directory_the_items_stay_in_memory() {
        // A child process: TMPDIR is the process's.
        if std::env::var_os("PROVETOP_SPILL_CHILD").is_none() {
            let me = std::env::current_exe().unwrap();
            let out = std::process::Command::new(me)
                .args([
                    "--exact",
                    "spill::tests::without_a_usable_temporary_directory_the_items_stay_in_memory",
                ])
                .env("PROVETOP_SPILL_CHILD", "1")
                .env("TMPDIR", "/nonexistent/provetop-spill")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
            assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
            return;
        }
        let mut s = Spill::<u64>::default();
        let n = Spill::<u64>::block() * 2 + 5;
        (0..n as u64).for_each(|i| s.push(i));
        assert!(s.failed().is_some_and(|w| w.contains("temporary file")));
        assert_eq!(s.on_disk(), 0);
        assert_eq!(all(&s), (0..n as u64).collect::<Vec<_>>());
    }
}
